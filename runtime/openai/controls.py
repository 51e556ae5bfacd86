"""The fields that decide where a reply may end, with vLLM's names and
meanings (its benchmark clients and OpenAI-compatible clients send them):

- ``ignore_eos`` (boolean, default false): the model's end-of-turn tokens do
  not end the reply; it runs to its token limit, a stop string, a
  ``stop_token_ids`` id or the context. The end-of-turn token's own text is
  never part of the content. A grammar's end (``response_format``, a forced
  tool call) still ends the reply: past it the grammar allows nothing else.
- ``min_tokens`` (integer >= 0, default 0): no end-of-turn token, no
  ``stop_token_ids`` id and no stop string ends the reply before it holds
  this many tokens (the end tokens are masked out of the first
  ``min_tokens`` draws; stop strings are matched from the ``min_tokens``-th
  token on). At most ``max_tokens`` when that is sent.
- ``stop_token_ids`` (array of token ids, default none): these ids end the
  reply as the model's end-of-turn token does (finish_reason ``stop``,
  stop_reason ``stop_token``); the id counts as a completion token and its
  text is not part of the content. Each must be below the model's vocab size
  (checked in the prepare step, which knows the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lse.runtime.errors import invalid

MAX_STOP_TOKEN_IDS = 64


@dataclass(frozen=True)
class EndControls:
    ignore_eos: bool = False
    min_tokens: int = 0
    stop_token_ids: tuple[int, ...] = ()


def end_controls(body: dict[str, Any], max_tokens: int | None) -> EndControls:
    """The three fields of ``body``, checked; ``max_tokens`` is the request's
    own limit (None when not sent)."""
    ignore_eos = body.get("ignore_eos")
    if ignore_eos is not None and not isinstance(ignore_eos, bool):
        raise invalid("ignore_eos", "ignore_eos must be a boolean")
    min_tokens = body.get("min_tokens")
    if min_tokens is not None:
        if not _is_int(min_tokens) or min_tokens < 0:
            raise invalid("min_tokens", f"min_tokens must be an integer of at least 0; got {min_tokens!r:.40}")
        if max_tokens and min_tokens > max_tokens:  # 0 is scoring mode, which generates nothing
            raise invalid("min_tokens", f"min_tokens ({min_tokens}) must not exceed max_tokens ({max_tokens})")
    ids = body.get("stop_token_ids")
    if ids is not None:
        if not isinstance(ids, list) or not all(_is_int(i) and i >= 0 for i in ids):
            raise invalid("stop_token_ids", "stop_token_ids must be an array of nonnegative integer token ids")
        if len(ids) > MAX_STOP_TOKEN_IDS:
            raise invalid("stop_token_ids", f"stop_token_ids holds at most {MAX_STOP_TOKEN_IDS} ids; got {len(ids)}")
    return EndControls(ignore_eos=bool(ignore_eos), min_tokens=min_tokens or 0,
                       stop_token_ids=tuple(sorted(set(ids or ()))))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
