"""The OpenAI wire layer: what a request may say and what a reply says.

- ``body``: request bytes to a JSON object (the ``invalid_json`` 400) and
  replies to compact JSON bytes, for the server and the C API alike;
- ``request``: a body checked in one pass (thinking fields included) into a
  ``ParsedRequest``, or the documented 400;
- ``protocol``: the reply shapes, ordered like OpenAI's, LSE's extensions
  in marked blocks;
- ``replies``: every reply built: chunks, their fold, usage, lse_context,
  timings, logprobs, the /v1/models entry;
- ``reply_stream``: a request's typed events (lse.runtime.request_events)
  turned into those chunks, the fold and the error, on the reader's side.

The HTTP app (``lse.api``), the in-process API (``lse.runtime.api``) and the
C API (``lse.capi.bridge``, over the in-process API) all go through it.
"""
