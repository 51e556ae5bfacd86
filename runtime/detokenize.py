"""Incremental detokenization: token ids in, complete text out.

A byte-level BPE token can hold part of a UTF-8 character (an emoji is often
two to four tokens), and a SentencePiece-style decoder changes a token's text
by what precedes it (the leading-space marker). So each step decodes a short
window of recent ids twice, with and without the new ones, and emits the
difference; the window restarts after every emitted piece, which keeps each
step O(1) in the length of the reply. This is the prefix-offset scheme of
vLLM's `detokenize_incrementally` and Hugging Face's `TextStreamer`.
"""

from __future__ import annotations

from collections.abc import Callable

# What a decoder yields for a byte sequence that is not (yet) valid UTF-8.
REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """``decode_fn`` decodes a list of ids the way the whole reply would be
    decoded (e.g. ``tokenizer.decode``, with its own special-token policy)."""

    def __init__(self, decode_fn: Callable[[list[int]], str]) -> None:
        self._decode = decode_fn
        self._ids: list[int] = []
        # ids[prefix:read] were emitted already and give the next step its
        # context; ids[read:] are not emitted yet.
        self._prefix = 0
        self._read = 0
        self._prefix_text = ""

    def feed(self, token_id: int) -> str:
        """The text that ``token_id`` completes; "" while the decoded tail is
        an unfinished UTF-8 character (it ends in U+FFFD)."""
        self._ids.append(token_id)
        text = self._decode(self._ids[self._prefix:])
        if len(text) <= len(self._prefix_text) or text.endswith(REPLACEMENT):
            return ""
        return self._advance(text)

    def flush(self) -> str:
        """At the end of the reply: whatever is still held back, U+FFFD
        included if the model ended inside a character."""
        if self._read == len(self._ids):
            return ""
        text = self._decode(self._ids[self._prefix:])
        return self._advance(text) if len(text) > len(self._prefix_text) else ""

    def _advance(self, text: str) -> str:
        new = text[len(self._prefix_text):]
        self._prefix, self._read = self._read, len(self._ids)
        self._prefix_text = self._decode(self._ids[self._prefix:self._read])
        return new
