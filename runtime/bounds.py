"""What one request may cost, refused before the work it would cause.

A request is read whole (``--max-body-bytes``, 413) and then checked here,
before a template is rendered or a character tokenized:

- Text must be valid Unicode: JSON's ``\\ud800`` escapes decode to lone
  surrogates, which can't be encoded as UTF-8 (by the tokenizer, or in the
  reply's echo). 400 naming the field.
- Characters before tokenizing: a prompt longer than
  ``context_length × chars_per_token`` characters can never fit the context
  (no token stands for more characters than the vocabulary's longest entry),
  so it gets the documented ``context_full`` 400 without being tokenized.
  ``tokens_used`` there is a lower bound.
- Sequences per request: ``n × prompts`` above ``--queue-size`` could never
  be admitted, even on an idle server, so it is a 400 naming ``prompt`` (too
  many prompts) or ``n``, not a 503 that a retry can't cure.
"""

from __future__ import annotations

from typing import Any

from lse.runtime.errors import LseError, invalid
from lse.runtime.limits import MAXIMUM_CONTEXT_LENGTH
from lse.runtime.openai.replies import lse_context


def check_unicode(body: dict[str, Any]) -> None:
    """400 naming the field whose text (or key) holds a lone surrogate."""
    for key, value in body.items():
        _check_value(value, key if isinstance(key, str) and _valid(key) else "body", key)


def _check_value(value: Any, path: str, key: Any = None) -> None:
    if isinstance(key, str) and not _valid(key):
        raise invalid(path, f"a key in {path} is not valid Unicode (a lone surrogate escape such as \\ud800)")
    if isinstance(value, str):
        if not _valid(value):
            raise invalid(path, f"{path} is not valid Unicode: it holds a lone surrogate "
                                f"(\\u{ord(_first_surrogate(value)):04x}); send UTF-8 text")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, item in value.items():
            _check_value(item, f"{path}.{k}" if isinstance(k, str) and _valid(k) else path, k)


def _valid(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_surrogate(text: str) -> str:
    return next(c for c in text if "\ud800" <= c <= "\udfff")


def check_prompt_chars(chars: int, context_length: int, chars_per_token: int, param: str) -> None:
    """``context_full`` for a prompt too long to fit whatever its tokens."""
    limit = context_length * chars_per_token
    if chars > limit:
        at_least = -(-chars // chars_per_token)
        raise LseError(
            "context_full",
            f"the prompt is {chars} characters, at least {at_least} tokens, and the context holds "
            f"{context_length} ({MAXIMUM_CONTEXT_LENGTH} {context_length} tokens); compact or shorten the conversation",
            param=param,
            extra={"lse_context": lse_context(at_least, context_length)},
        )


def check_sequences(prompts: int, n: int, queue_size: int) -> None:
    """400 for a request of more sequences than the queue could ever hold."""
    if prompts > queue_size:
        raise invalid("prompt", f"prompt holds {prompts} prompts; this server queues at most {queue_size} "
                                "sequences (lse-server --queue-size), so it could never be admitted")
    if prompts * n > queue_size:
        raise invalid("n", f"n × prompts is {n} × {prompts} = {prompts * n} sequences; this server queues at "
                           f"most {queue_size} (lse-server --queue-size), so it could never be admitted")
