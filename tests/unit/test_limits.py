"""The token-limit order of docs/spec/lse-api.md ("Output limits") as a table, and the
context-full refusal."""

from __future__ import annotations

import pytest

from lse.runtime.errors import LseError
from lse.runtime.limits import TokenLimit, check_operator_cap, check_prompt_fits, resolve_token_limit

CTX = 512
PROMPT = 40  # leaves 472 tokens of room

# request max_tokens, operator cap, max_new_tokens, max_length, prompt -> (max_new, stop_reason)
TABLE = [
    # 4. nothing set: the context ends the reply
    (None, 0, None, None, PROMPT, 472, "context_full"),
    # 1. the request
    (100, 0, None, None, PROMPT, 100, "max_tokens"),
    (1000, 0, None, None, PROMPT, 472, "context_full"),   # past the context: accepted
    (472, 0, None, None, PROMPT, 472, "max_tokens"),      # limit and context end together
    (100, 200, None, None, PROMPT, 100, "max_tokens"),
    (200, 200, None, None, PROMPT, 200, "max_tokens"),    # at the cap is allowed
    (300, 0, 50, None, PROMPT, 300, "max_tokens"),        # the request beats max_new_tokens
    (300, 0, None, 100, PROMPT, 300, "max_tokens"),       # max_length does not bound item 1
    (0, 0, None, None, PROMPT, 0, "max_tokens"),          # scoring mode
    # 2. the operator's cap, when the request sends none
    (None, 200, None, None, PROMPT, 200, "max_tokens"),
    (None, 1000, None, None, PROMPT, 472, "context_full"),
    (None, 200, 50, None, PROMPT, 200, "max_tokens"),     # the cap beats max_new_tokens
    (None, 200, None, 100, PROMPT, 60, "max_tokens"),     # max_length: 100 - 40
    # 3. max_new_tokens
    (None, 0, 50, None, PROMPT, 50, "max_tokens"),
    (None, 0, 5000, None, PROMPT, 472, "context_full"),
    (None, 0, 50, 100, PROMPT, 50, "max_tokens"),
    (None, 0, 80, 100, PROMPT, 60, "max_tokens"),
    # max_length alone
    (None, 0, None, 100, PROMPT, 60, "max_tokens"),
    (None, 0, None, 2000, PROMPT, 472, "context_full"),
    (None, 0, None, 30, PROMPT, 0, "max_tokens"),         # the prompt is past max_length
    # one token of room
    (None, 0, None, None, 511, 1, "context_full"),
    (1, 0, None, None, 511, 1, "max_tokens"),
]


@pytest.mark.parametrize("request_max, cap, max_new_tokens, max_length, prompt, max_new, reason", TABLE)
def test_resolution_order(request_max: int | None, cap: int, max_new_tokens: int | None,
                          max_length: int | None, prompt: int, max_new: int, reason: str) -> None:
    got = resolve_token_limit(request_max_tokens=request_max, operator_cap=cap,
                              max_new_tokens=max_new_tokens, max_length=max_length,
                              prompt_tokens=prompt, context_length=CTX)
    assert got == TokenLimit(max_new, reason)


def test_request_above_the_cap_is_refused() -> None:
    with pytest.raises(LseError) as exc:
        resolve_token_limit(request_max_tokens=201, operator_cap=200, max_new_tokens=None,
                            max_length=None, prompt_tokens=PROMPT, context_length=CTX)
    assert exc.value.status == 400
    assert exc.value.body() == {"error": {
        "message": "max_tokens is 201, above this server's cap of 200 tokens "
                   "(lse-server --max-tokens); send at most 200",
        "type": "invalid_request_error", "param": "max_tokens", "code": None}}


def test_cap_error_names_max_tokens_whichever_field_was_sent() -> None:
    with pytest.raises(LseError) as exc:
        check_operator_cap(9, 8, "max_completion_tokens")
    assert exc.value.param == "max_tokens"
    assert exc.value.message.startswith("max_completion_tokens is 9, above this server's cap of 8")


@pytest.mark.parametrize("max_tokens, cap", [(10**9, 0), (8, 8), (1, 8)])
def test_within_the_cap_passes(max_tokens: int, cap: int) -> None:
    assert check_operator_cap(max_tokens, cap) is None


@pytest.mark.parametrize("prompt, ctx, param, remaining", [
    (600, 512, "messages", 0),
    (512, 512, "prompt", 0),    # exactly full: no room for a reply either
])
def test_prompt_that_fills_the_context_is_refused(prompt: int, ctx: int, param: str, remaining: int) -> None:
    with pytest.raises(LseError) as exc:
        check_prompt_fits(prompt, ctx, param)
    assert exc.value.status == 400
    assert exc.value.body() == {"error": {
        "message": f"the prompt is {prompt} tokens and the context holds {ctx} "
                   f"(this model's maximum context length is {ctx} tokens); compact or shorten the conversation",
        "type": "invalid_request_error", "code": "context_full", "param": param,
        "lse_context": {"tokens_used": prompt, "context_length": ctx, "tokens_remaining": remaining}}}


def test_prompt_with_room_passes() -> None:
    assert check_prompt_fits(511, 512, "messages") is None


def test_resolving_a_full_context_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        resolve_token_limit(request_max_tokens=None, operator_cap=0, max_new_tokens=None,
                            max_length=None, prompt_tokens=512, context_length=512)
