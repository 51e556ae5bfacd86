"""POST /v1/embeddings over the engine: the body (body.py), pooling and the
vector's encodings (pooling.py), the prefill-only sequences the scheduler
runs (job.py) and the reply (service.py)."""
