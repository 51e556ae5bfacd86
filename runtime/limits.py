"""How many tokens a reply may generate, and why it ends there.

docs/spec/lse-api.md, "Output limits": a request's token limit is the first of these
that is set: (1) the request's max_tokens / max_completion_tokens, (2) the
operator's cap (lse-server --max-tokens; 0 means none), (3) max_new_tokens
from generation_config.json, (4) none. generation_config.json's max_length
bounds prompt + reply for items 2 to 4. Whatever the limit, prompt + reply
never pass the context, and a reply that fills it ends with
stop_reason "context_full".

Settled here:
- max_length reaching first is a token limit like the others: stop_reason
  "max_tokens" (finish_reason "length"). A prompt at or past max_length gets
  a reply of 0 tokens that ends at once with that reason, not an error: the
  model's own limit says there is no room, and the context may still have it.
- When the token limit and the context end the reply at the same token, the
  stop_reason is "max_tokens": the reply stopped where the limit said;
  lse_context.tokens_remaining (0) still tells the client the context is full.
"""

from __future__ import annotations

from dataclasses import dataclass

from lse.runtime.errors import LseError, invalid
from lse.runtime.openai.replies import lse_context

MAX_TOKENS = "max_tokens"
CONTEXT_FULL = "context_full"
# In every context_full message: OpenAI's own wording, which clients match to
# tell a full context from another 400 (litellm's ContextWindowExceededError:
# litellm_core_utils/exception_mapping_utils.py, is_error_str_context_window_exceeded;
# LangChain and pydantic-ai go through the same text).
MAXIMUM_CONTEXT_LENGTH = "this model's maximum context length is"


@dataclass(frozen=True)
class TokenLimit:
    """``max_new``: tokens the reply may generate before it finishes;
    ``stop_reason``: what ends it there, "max_tokens" or "context_full"."""

    max_new: int
    stop_reason: str


def check_operator_cap(max_tokens: int, operator_cap: int, field: str = "max_tokens") -> None:
    """A request asking for more than the operator's cap is refused, with
    param "max_tokens" as docs/spec/lse-api.md documents (whichever spelling was sent;
    ``field`` names it in the message)."""
    if operator_cap > 0 and max_tokens > operator_cap:
        raise invalid("max_tokens", f"{field} is {max_tokens}, above this server's cap of "
                      f"{operator_cap} tokens (lse-server --max-tokens); send at most {operator_cap}")


def check_prompt_fits(prompt_tokens: int, context_length: int, param: str) -> None:
    """A prompt that leaves no room for a reply is a 400 before any work
    starts (code context_full; param "messages" or "prompt")."""
    if prompt_tokens >= context_length:
        raise LseError(
            "context_full",
            f"the prompt is {prompt_tokens} tokens and the context holds {context_length} "
            f"({MAXIMUM_CONTEXT_LENGTH} {context_length} tokens); compact or shorten the conversation",
            param=param,
            extra={"lse_context": lse_context(prompt_tokens, context_length)},
        )


def resolve_token_limit(*, request_max_tokens: int | None, operator_cap: int,
                        max_new_tokens: int | None, max_length: int | None,
                        prompt_tokens: int, context_length: int) -> TokenLimit:
    """The reply's token budget in docs/spec/lse-api.md's order, never past the context.
    Call check_prompt_fits first; a prompt that fills the context has no
    budget to resolve."""
    if prompt_tokens >= context_length:
        raise ValueError(f"prompt of {prompt_tokens} tokens fills the context of {context_length}; "
                         "check_prompt_fits refuses it first")
    limit = _token_limit(request_max_tokens, operator_cap, max_new_tokens, max_length, prompt_tokens)
    room = context_length - prompt_tokens
    if limit is not None and limit <= room:
        return TokenLimit(limit, MAX_TOKENS)
    return TokenLimit(room, CONTEXT_FULL)


def _token_limit(request_max_tokens: int | None, operator_cap: int, max_new_tokens: int | None,
                 max_length: int | None, prompt_tokens: int) -> int | None:
    """Items 1 to 4 of the order; None when nothing limits the reply."""
    if request_max_tokens is not None:
        check_operator_cap(request_max_tokens, operator_cap)
        return request_max_tokens
    if operator_cap > 0:
        limit: int | None = operator_cap
    else:
        limit = max_new_tokens
    if max_length is not None:
        by_length = max(0, max_length - prompt_tokens)
        limit = by_length if limit is None else min(limit, by_length)
    return limit
