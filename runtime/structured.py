"""Constrained decoding: a token mask per step from a grammar.

``response_format`` (json_object, json_schema) and a forced tool call
(``tool_choice`` "required" or a named function) become one grammar each,
written in llguidance's Lark dialect with the JSON schemas inlined
(``%json {...}``). A grammar is compiled once and kept in an LRU cache keyed by
its text; each choice of each request gets its own copy of the compiled
matcher, so n > 1 choices are constrained independently.

Library: llguidance (PyPI ``llguidance``), chosen over outlines-core and
xgrammar on this machine (SmolLM2's 49152-token byte-level BPE):
- it reads the model's tokenizer.json as is (``LLTokenizer(tokenizer.to_str())``);
  xgrammar needs torch, triton and transformers, outlines-core a hand-built
  byte vocabulary;
- a nested schema with $defs, enums and a pattern compiles in ~2 ms
  (outlines-core's index: ~280 ms), and a mask costs ~0.05 ms a token;
- it refuses what it cannot enforce ("Unimplemented keys: [uniqueItems]")
  where outlines-core silently drops uniqueItems.

JSON is written with at most one space between tokens (JSON_OPTIONS).
When the reply opens inside a think block, the grammar lets the reasoning run
free up to the template's closing marker, then constrains the answer.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from llguidance import LLMatcher, LLParserLimits, LLTokenizer

from lse.runtime.schema_bounds import GrammarError, bound_numbers, check_schema_bounds
from tokenizers import Tokenizer

# llguidance's JSON compiler options (its "x-guidance" schema key).
# At most one space between JSON tokens: bounded, so a model cannot pad a reply
# with endless blank lines, yet both {"a":1} and {"a": 1} are allowed. (With
# whitespace_flexible false, llguidance 1.9's mask leaves out tokens that
# span several JSON lexemes although it accepts them: a whole-call token of
# the scripted fixtures was never offered.)
JSON_OPTIONS = {"whitespace_pattern": "[ ]?"}
CACHE_SIZE = 64  # compiled grammars kept (LRU)
MAX_WHITESPACE = 16  # whitespace characters between a closed think block and the constrained answer
# llguidance's own resource limits (its defaults bound lexer fuel, lexer
# states, Earley items per step and grammar size), with verbose errors off:
# an error then names neither the grammar nor the parser's state, so no text
# of a schema reaches a log line or a reply that is not its own request's.
LIMITS = LLParserLimits(verbose_errors=False)

# JSON Schema keywords llguidance 1.x refuses ("Unimplemented keys"); a schema
# using one is a 400. Listed here for the docs and the error message; the
# library's own answer is what decides.
UNSUPPORTED_KEYWORDS = ("not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                        "unevaluatedProperties", "unevaluatedItems", "uniqueItems", "contains",
                        "minContains", "maxContains", "propertyNames")


class Constraint:
    """One choice's matcher: which tokens may come next, and the token taken."""

    def __init__(self, matcher: LLMatcher, tokens: int, width: int, eos: list[int]) -> None:
        self._matcher = matcher
        self._width = width  # the logits' length (config.json vocab_size)
        self._bits = np.full((tokens + 31) // 32, -1, dtype=np.int32)
        self._end = np.zeros(width, dtype=bool)
        self._end[[t for t in eos if t < width]] = True

    def allowed(self) -> np.ndarray:
        """(V,) bool: the tokens the grammar allows next (end-of-turn ids once it is complete)."""
        self._matcher.unsafe_compute_mask_ptr(self._bits.ctypes.data, self._bits.nbytes)
        bits = np.unpackbits(self._bits.view(np.uint8), bitorder="little")[:self._width].view(bool)
        if bits.shape[0] < self._width:  # logits wider than the tokenizer: padding ids are never allowed
            bits = np.concatenate([bits, np.zeros(self._width - bits.shape[0], dtype=bool)])
        # A grammar that allows nothing more (llguidance's error state, or a
        # limit it hit) ends the reply rather than failing it.
        return bits if bits.any() else self._end

    def advance(self, token: int) -> None:
        if not self._matcher.consume_token(token):
            raise RuntimeError(f"the grammar refused token {token}: {self._matcher.get_error()}")


class Grammars:
    """One engine's compiled grammars. The llguidance tokenizer is built on
    first use (~0.75 s for a 49k vocab), so models never asked for a grammar
    don't pay for it."""

    def __init__(self, tokenizer: Tokenizer, eos_ids: frozenset[int], vocab_size: int) -> None:
        self._tokenizer = tokenizer
        self._eos = sorted(eos_ids)
        self._width = vocab_size
        self._vocab = max(vocab_size, tokenizer.get_vocab_size(with_added_tokens=True))
        self._lltok: LLTokenizer | None = None
        self._cache: OrderedDict[str, LLMatcher] = OrderedDict()
        self._lock = threading.Lock()

    def constraint(self, grammar: str) -> Constraint:
        """A fresh matcher for ``grammar`` (Lark text); GrammarError if refused."""
        return Constraint(self._compiled(grammar).deep_copy(), self._vocab, self._width, self._eos)

    def check(self, grammar: str) -> None:
        self._compiled(grammar)

    def literal(self, text: str) -> str:
        """``text`` as a Lark terminal: a special token by id (llguidance never
        matches special tokens as text), anything else as a string."""
        tid = self._tokenizer.token_to_id(text)
        if tid is not None and _is_special(self._tokenizer, text):
            return f"<[{tid}]>"
        return json.dumps(text)

    def _compiled(self, grammar: str) -> LLMatcher:
        with self._lock:
            hit = self._cache.get(grammar)
            if hit is not None:
                self._cache.move_to_end(grammar)
                return hit
            if self._lltok is None:
                self._lltok = LLTokenizer(self._tokenizer.to_str(), n_vocab=self._vocab, eos_token=self._eos or None)
            lltok = self._lltok
        lark = LLMatcher.grammar_from_lark(grammar)
        failed, messages = LLMatcher.validate_grammar_with_warnings(lark, lltok, limits=LIMITS)
        if failed:
            raise GrammarError(_first_line(messages[0]))
        matcher = LLMatcher(lltok, lark, log_level=0, limits=LIMITS)
        if matcher.is_error():
            raise GrammarError(_first_line(matcher.get_error()))
        with self._lock:
            self._cache[grammar] = matcher
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return matcher


def check_schema(schema: dict[str, Any]) -> None:
    """GrammarError when llguidance refuses ``schema`` (no tokenizer needed),
    so a request is refused while its body is parsed."""
    check_schema_bounds(schema)
    _check_text(json_grammar(schema))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _check_text(grammar: str) -> None:
    failed, messages = LLMatcher.validate_grammar_with_warnings(LLMatcher.grammar_from_lark(grammar), None,
                                                                limits=LIMITS)
    if failed:
        raise GrammarError(_first_line(messages[0]))


# --- grammars, as Lark text ------------------------------------------------------

def json_grammar(schema: dict[str, Any]) -> str:
    """Any JSON the schema accepts."""
    return f"start: {_json(schema)}\n"


def tool_grammar(tools: list[dict[str, Any]], literal, markers: tuple[str, str], several: bool) -> str:
    """One call (``several``: one or more) to ``tools``, each written the way
    the template writes a call: open marker, newline, {"name", "arguments"},
    newline, close marker; calls are separated by a newline."""
    options = [{"type": "object", "properties": {"name": {"const": t["function"]["name"]},
                                                  "arguments": _parameters(t)},
                "required": ["name", "arguments"], "additionalProperties": False} for t in tools]
    call_schema = options[0] if len(options) == 1 else {"anyOf": options}
    start = 'start: call ("\\n" call)*' if several else "start: call"
    return (f"{start}\n"
            f'call: {literal(markers[0])} "\\n" {_json(call_schema)} "\\n" {literal(markers[1])}\n')


def tool_parameters_grammar(tool: dict[str, Any]) -> str:
    """One tool's arguments alone, to name the tool whose schema is refused."""
    return json_grammar(_parameters(tool))


def after_reasoning(grammar: str, close_marker: str, literal) -> str:
    """``grammar`` after free reasoning text up to ``close_marker`` and any
    whitespace: for a reply that opens inside a think block."""
    body = grammar.replace("start:", "answer:", 1)
    close = literal(close_marker)
    # A text marker ends the lazy match at its first occurrence; a special
    # token can't occur inside text at all, so the text before it is greedy.
    reasoning = f"reasoning: /(?s:.*)/ {close}" if close.startswith("<[") else \
        f"reasoning[lazy]: /(?s:.*)/ {close}"
    return f"start: reasoning WS answer\n{reasoning}\nWS: /[ \\t\\n]{{0,{MAX_WHITESPACE}}}/\n{body}"


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    params = tool["function"].get("parameters")
    return params if params is not None else {"type": "object"}


def _json(schema: dict[str, Any]) -> str:
    """The schema inlined, its numbers bounded so that every reply it allows ends."""
    return "%json " + json.dumps({**bound_numbers(schema), "x-guidance": JSON_OPTIONS})


def _first_line(message: str) -> str:
    """llguidance's message on one line, without its grammar listing
    ("   1 | start: ...") and position prefix ("at 1(8): ")."""
    kept = []
    for line in message.strip().splitlines():
        if re.match(r"\s*\d+ \|", line):
            break
        kept.append(line.strip())
    text = " ".join(part for part in kept if part) or "the grammar was refused"
    return re.sub(r"^at \d+\(\d+\): ", "", text)


def _is_special(tokenizer: Tokenizer, text: str) -> bool:
    added = tokenizer.get_added_tokens_decoder()
    return any(tok.content == text and tok.special for tok in added.values())
