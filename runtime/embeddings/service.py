"""POST /v1/embeddings' reply for a body, over one engine.

``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
"model", "usage": {"prompt_tokens", "total_tokens"}}``, OpenAI's shape. The
engine serves embeddings only when opened with ``embeddings: true``
(lse-server ``--embeddings``); otherwise every request is the 501
``embeddings_disabled``, as llama-server answers without ``--embeddings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from lse.runtime.embeddings.body import parse_body
from lse.runtime.embeddings.job import EmbedJob
from lse.runtime.embeddings.pooling import encode, normalize
from lse.runtime.errors import LseError

if TYPE_CHECKING:
    from lse.runtime.engine import Engine


def embed(engine: "Engine", body: Any, timeout: float | None = None,
          started: Callable[[EmbedJob], None] | None = None) -> dict[str, Any]:
    """The reply for ``body`` (blocking); a refused body or a failed run raises its LseError,
    and 408 after ``timeout`` seconds. ``started`` is told the job once it is queued (to cancel it)."""
    if engine.pooling is None:
        raise LseError("embeddings_disabled", "this server does not serve embeddings; start it with --embeddings "
                       "(lse_open: \"embeddings\": true)")
    parsed = parse_body(body, engine.tokenizer, engine.cfg.vocab_size, engine.cfg.hidden_size, engine.kv_len,
                        engine.prompts.chars_per_token)
    job = EmbedJob(engine, parsed.prompts, engine.pooling)
    job.start(engine.config.queue_size)
    if started is not None:
        started(job)
    rows = job.wait(timeout)
    tokens = sum(len(p) for p in parsed.prompts)
    data = [{"object": "embedding", "index": i, "embedding": encode(normalize(row, parsed.dimensions),
                                                                     parsed.encoding_format)}
            for i, row in enumerate(rows)]
    return {"object": "list", "data": data, "model": parsed.model or engine.model_id,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
