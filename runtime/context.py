"""What the engine knows about its model, frozen once at startup: everything
planning a request reads (lse.runtime.prepare), and nothing that changes
while the engine runs (the scheduler's slots and queue stay the engine's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tokenizers import Tokenizer

from lse.runtime.chat.defaults import GenerationDefaults
from lse.runtime.chat.special import PromptEncoder
from lse.runtime.chat.template import ChatTemplate
from lse.runtime.chat.thinking import ThinkingInfo
from lse.runtime.structured import Grammars


@dataclass(frozen=True)
class ModelContext:
    tokenizer: Tokenizer
    prompts: PromptEncoder  # the template's markers as the only special tokens
    template: ChatTemplate | None  # None: the model has no chat template
    thinking: ThinkingInfo
    tool_markers: tuple[str, str] | None  # the template's tool-call open and close markers
    defaults: GenerationDefaults
    eos_ids: frozenset[int]
    vocab_size: int
    context_length: int  # the KV cache's tokens per slot
    max_tokens_cap: int  # the operator's cap (--max-tokens), 0 = none
    queue_size: int  # sequences that may wait for a slot
    grammars: Grammars  # compiled constrained-decoding grammars, cached
    token_text: Callable[[int], str]  # one token id as text, special tokens spelled out
