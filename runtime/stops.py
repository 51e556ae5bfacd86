"""Stop strings over streamed text.

A stop string can arrive split across tokens ("<|e" then "nd|>"), so text
that could be the start of one is held back until the next chunk settles it;
nothing of a stop string ever reaches the client. The result does not depend
on how the text was chunked: the reply ends at the first position where some
stop string is complete (and, of stops completing there, at the one that
starts earliest), which is what a character-by-character feed would see.
"""

from __future__ import annotations


class StopMatcher:
    """Feed decoded text in; get back the text that is safe to emit."""

    def __init__(self, stops: list[str]) -> None:
        if any(not isinstance(s, str) or s == "" for s in stops):
            raise ValueError("stop strings must be non-empty strings")
        self._stops = list(dict.fromkeys(stops))
        self._longest = max((len(s) for s in self._stops), default=0)
        self._held = ""
        self._stopped = False
        self.matched: str | None = None  # the stop string that ended the text, once one did

    @property
    def stopped(self) -> bool:
        return self._stopped

    def feed(self, text: str, match: bool = True) -> tuple[str, bool]:
        """(text to emit now, whether a stop string completed). The emitted
        text excludes the stop string and everything after it; once stopped,
        further feeds emit nothing. ``match=False`` (a reply shorter than its
        min_tokens) emits the text with the held text, matching nothing."""
        if self._stopped:
            return "", True
        buf = self._held + text
        if not match:
            self._held = ""
            return buf, False
        found = self._first_stop(buf)
        if found is not None:
            cut, self.matched = found
            self._held = ""
            self._stopped = True
            return buf[:cut], True
        hold = self._partial_suffix(buf)
        self._held = buf[len(buf) - hold:]
        return buf[:len(buf) - hold], False

    def flush(self) -> str:
        """The held-back text, at the end of the reply (no stop followed)."""
        out, self._held = self._held, ""
        return out

    def _first_stop(self, buf: str) -> tuple[int, str] | None:
        """Start and text of the stop string that completes first in ``buf``:
        the smallest end position, then the earliest start. The held text holds
        no complete stop, so any match ends in the newly fed text."""
        best: tuple[int, int, str] | None = None
        for s in self._stops:
            start = buf.find(s)
            if start >= 0 and (best is None or (start + len(s), start) < best[:2]):
                best = (start + len(s), start, s)
        return None if best is None else (best[1], best[2])

    def _partial_suffix(self, buf: str) -> int:
        """Length of the longest suffix of ``buf`` that is a proper prefix of
        some stop string: text that a later chunk could turn into a stop."""
        for n in range(min(len(buf), self._longest - 1), 0, -1):
            tail = buf[len(buf) - n:]
            if any(s.startswith(tail) for s in self._stops):
                return n
        return 0
