"""The threads requests are prepared on: two pools, so one large request
cannot queue everyone's.

Preparing a request (its body's JSON, the field checks, the chat template,
tokenizing) and the tokenizer routes' calls run here, never on the event
loop. A body of more than HEAVY_BODY_BYTES goes to a pool of one thread of
its own: 24 prompts of 330K characters then tokenize there while a small
chat request is prepared at once on the light pool. Each pool takes half
the cores at most, so the scheduler thread keeps a core while prompts are
tokenized (Hugging Face tokenizers releases the GIL while it encodes).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Callable

from lse.runtime.openai.body import dumps, parse_json_object

HEAVY_BODY_BYTES = 64 * 1024


class PreparePools(Executor):
    """Also an Executor itself (its light pool), for callers that take any."""

    def __init__(self) -> None:
        workers = max(1, min(4, (os.cpu_count() or 2) // 2))
        self.light = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lse-prepare")
        self.heavy = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lse-prepare-large")

    def for_size(self, body_bytes: int) -> Executor:
        """The pool a body of ``body_bytes`` is prepared on."""
        return self.heavy if body_bytes > HEAVY_BODY_BYTES else self.light

    def submit(self, fn, /, *args, **kwargs):
        return self.light.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        for pool in (self.light, self.heavy):
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def tokenizer_reply(call: Callable[[Any, dict[str, Any]], dict[str, Any]], engine: Any, data: bytes) -> bytes:
    """A tokenizer route's reply as JSON bytes, from its body's bytes: the
    parse, the call and the serialization (a million ids) all on the pool."""
    return dumps(call(engine, parse_json_object(data)))
