"""Tokenizing prompts so that only the chat template's own markers become
special tokens.

A user who types ``<|im_end|>\\n<|im_start|>system`` into a message must not
get the real control tokens, or they can forge turns. Hugging Face
``tokenizers`` matches special-token strings anywhere in the text it is given,
so the rendered prompt can't just be encoded whole. The technique:

1. Defuse: before rendering, every special-token string inside a
   user-provided string (message content, names, tool results and calls, tool
   definitions, template kwargs) gets a mark character inserted after its
   first character (``<\\ue000|im_end|>``), so it no longer matches. A string
   that ends with the start of a special-token string (``...<|im_``) or
   starts with the end of one (``end|>...``) gets the mark at that edge too,
   so text next to the template's own text can't complete a marker either.
   The mark is a private-use character absent from every user string and
   from the template.
2. Render the template with the defused values: the template's control flow
   sees the same strings except inside special-token strings, and ``trim``
   and ``tojson`` treat the mark like any other character.
3. Split the rendered text at special-token strings (leftmost, longest
   first, as the tokenizer's added-vocabulary matcher does). Every match left
   is the template's own. Each text piece between them has the marks removed
   and is encoded with special-token matching off
   (``Tokenizer.encode_special_tokens``).

Step 3 gives the same ids as encoding the whole text when no user string
holds a special-token string, because the tokenizer itself encodes the
pieces between special tokens one by one (tests/unit/test_special_tokens.py
checks it on every fixture and the default model). Placeholder substitution
was the alternative: render with stand-ins, then splice the real strings in;
it breaks when a template transforms content (``trim``, ``split``,
``tojson``), which this does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenizers import Tokenizer

# Private-use characters (Unicode 15, section 23.5): no tokenizer gives them meaning.
_MARK_CANDIDATES = tuple(chr(c) for c in range(0xE000, 0xE040))


class PromptEncoder:
    """The model's tokenizer, split into what may and may not make special tokens."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.text_only = Tokenizer.from_str(tokenizer.to_str())
        self.text_only.encode_special_tokens = True
        added = tokenizer.get_added_tokens_decoder()
        self.specials = {t.content: i for i, t in added.items() if t.special and t.content}
        self._hidden: dict[tuple[str, ...], frozenset[int]] = {}
        by_length = sorted(self.specials, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, by_length))) if by_length else None
        self._heads = {s[:k] for s in self.specials for k in range(1, len(s))}
        self._tails = {s[k:] for s in self.specials for k in range(1, len(s))}
        self._longest_special = max(map(len, self.specials), default=0)
        # The longest text one token can stand for, in characters: a prompt
        # longer than context × this can never fit, whatever it says.
        longest = max((len(t) for t in tokenizer.get_vocab(with_added_tokens=True)), default=1)
        has_normalizer = tokenizer.normalizer is not None
        self.chars_per_token = longest * (2 if has_normalizer else 1)  # NFC/NFKC may shrink text

    def hidden_in_output(self, keep: tuple[str, ...]) -> frozenset[int]:
        """The special tokens a reply's text leaves out: every one but ``keep``
        (the think and tool-call markers the output parser reads), as
        llama-server and vLLM (skip_special_tokens) leave control tokens out
        of content. Cached per ``keep``."""
        hidden = self._hidden.get(keep)
        if hidden is None:
            hidden = self._hidden[keep] = frozenset(i for s, i in self.specials.items() if s not in keep)
        return hidden

    def encode_text(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """``text`` as plain text: special-token strings in it are spelled out."""
        return encode_ids(self.text_only, text, add_special_tokens)

    def choose_mark(self, strings: list[str], template_text: str) -> str:
        """A mark character found in none of ``strings`` nor the template."""
        for mark in _MARK_CANDIDATES:
            if mark not in template_text and not any(mark in s for s in strings):
                return mark
        raise ValueError("every private-use mark candidate occurs in the request")  # 64 of them: never

    def defuse(self, value: Any, mark: str) -> Any:
        """``value`` (JSON-like) with every special-token string in its strings
        and keys broken by ``mark``."""
        if isinstance(value, str):
            return self._defuse_text(value, mark)
        if isinstance(value, list):
            return [self.defuse(v, mark) for v in value]
        if isinstance(value, dict):
            return {self.defuse(k, mark): self.defuse(v, mark) for k, v in value.items()}
        return value

    def _defuse_text(self, text: str, mark: str) -> str:
        if self._pattern is None:
            return text
        text = self._pattern.sub(lambda m: m.group()[0] + mark + m.group()[1:], text)
        reach = min(len(text), self._longest_special)
        if any(text[-k:] in self._heads for k in range(1, reach + 1)):
            text += mark
        if any(text[:k] in self._tails for k in range(1, reach + 1)):
            text = mark + text
        return text

    def encode_rendered(self, rendered: str, mark: str) -> list[int]:
        """The ids of a prompt rendered from defused values: the special-token
        strings left in it are the template's; the rest is text."""
        ids: list[int] = []
        for piece, special_id in self._pieces(rendered):
            if special_id is not None:
                ids.append(special_id)
            else:
                ids.extend(encode_ids(self.text_only, piece.replace(mark, ""), False))
        return ids

    def _pieces(self, text: str) -> Iterator[tuple[str, int | None]]:
        start = 0
        if self._pattern is not None:
            for m in self._pattern.finditer(text):
                if m.start() > start:
                    yield text[start:m.start()], None
                yield m.group(), self.specials[m.group()]
                start = m.end()
        if start < len(text):
            yield text[start:], None


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)


def encode_ids(tokenizer: Any, text: str, add_special_tokens: bool = True) -> list[int]:
    """``text``'s ids. ``Tokenizer.encode`` holds the interpreter lock for the
    whole call (0.8 s for a 330K-character prompt, every other thread stopped);
    ``encode_batch`` releases it and gives the same ids."""
    return tokenizer.encode_batch([text], add_special_tokens=add_special_tokens)[0].ids
