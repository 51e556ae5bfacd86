"""The /v1/embeddings body, checked: ``input`` as prompts of token ids.

``input`` is a string, an array of strings, an array of token ids (one
prompt) or an array of arrays of token ids (OpenAI's four forms). Strings
are tokenized with the tokenizer's special tokens (``add_special_tokens``:
its post-processor adds BOS or EOS where the model's tokenizer says so, as
llama-server and sentence-transformers do); id arrays are used as given.

Errors (400 ``invalid_request_error``, ``param`` naming the field): an empty
string, an empty array or an empty id array; a mixed array; ids outside the
vocabulary; more than MAX_INPUTS inputs; ``encoding_format`` other than
float or base64; ``dimensions`` not an integer in 1..hidden size. An input
longer than the context is the ``context_full`` 400 (before a character of
a long string is tokenized, as the completion routes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lse.runtime.bounds import check_prompt_chars, check_unicode
from lse.runtime.chat.special import encode_ids
from lse.runtime.errors import LseError, invalid
from lse.runtime.limits import MAXIMUM_CONTEXT_LENGTH
from lse.runtime.openai.replies import lse_context

# OpenAI's cap on one request's inputs.
MAX_INPUTS = 2048
ENCODINGS = ("float", "base64")


@dataclass(frozen=True)
class EmbeddingBody:
    prompts: list[list[int]]
    encoding_format: str
    dimensions: int | None
    model: str | None


def parse_body(body: Any, tokenizer, vocab: int, hidden: int, context_length: int,
               chars_per_token: int) -> EmbeddingBody:
    if not isinstance(body, dict):
        raise LseError("invalid_request", "the request body must be a JSON object")
    check_unicode(body)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise invalid("model", f"model must be a string; got {_kind(model)}")
    encoding = body.get("encoding_format")
    encoding = "float" if encoding is None else encoding
    if encoding not in ENCODINGS:
        raise invalid("encoding_format", f"encoding_format must be 'float' or 'base64'; got {encoding!r}")
    dimensions = body.get("dimensions")
    if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)
                                   or not 1 <= dimensions <= hidden):
        raise invalid("dimensions", f"dimensions must be an integer from 1 to {hidden} (this model's embedding "
                      f"size); got {dimensions!r}")
    inputs = _inputs(body.get("input"))
    prompts = []
    for i, item in enumerate(inputs):
        where = "input" if len(inputs) == 1 else f"input[{i}]"
        if isinstance(item, str):
            check_prompt_chars(len(item), context_length, chars_per_token, where)
            ids = encode_ids(tokenizer, item)
        else:
            bad = [t for t in item if not 0 <= t < vocab]
            if bad:
                raise invalid(where, f"token id {bad[0]} is outside the vocabulary (0..{vocab - 1})")
            ids = list(item)
        if len(ids) > context_length:
            raise LseError("context_full", f"{where} is {len(ids)} tokens, and the context holds {context_length} "
                           f"({MAXIMUM_CONTEXT_LENGTH} {context_length} tokens); shorten it", param=where,
                           extra={"lse_context": lse_context(len(ids), context_length)})
        if not ids:
            raise invalid(where, f"{where} has no tokens")
        prompts.append(ids)
    return EmbeddingBody(prompts, encoding, dimensions, model)


def _inputs(value: Any) -> list[str | list[int]]:
    """The inputs of ``input``, each a string or a list of ids; 400 for any other shape."""
    if isinstance(value, str):
        items: list = [value]
    elif _ids(value):
        items = [value]
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        items = value
    elif isinstance(value, list) and value and all(v == [] or _ids(v) for v in value):
        items = value
    elif isinstance(value, list) and not value:
        raise invalid("input", "input must not be empty")
    else:
        raise invalid("input", "input must be a string, an array of strings, an array of token ids or an array "
                      f"of arrays of token ids; got {_kind(value)}")
    if len(items) > MAX_INPUTS:
        raise invalid("input", f"input holds {len(items)} inputs; at most {MAX_INPUTS} are taken in one request")
    for i, item in enumerate(items):
        if len(item) == 0:
            where = "input" if len(items) == 1 else f"input[{i}]"
            raise invalid(where, f"{where} is empty" if isinstance(item, str) else f"{where} has no token ids")
    return items


def _ids(value: Any) -> bool:
    """A non-empty array of integers (no booleans)."""
    return isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool)
                                                            for t in value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
