"""Compare ``tokenizers.decoders.DecodeStream`` with runtime/detokenize.py.

Cases: the golden tokenizer cases (tests/unit/data/smollm2_token_golden.json),
4k- and 16k-token replies built from them, and replies cut inside a UTF-8
character. Correct means the streamed pieces join to ``tokenizer.decode`` of
all ids and no piece but the last ends in U+FFFD. Run
``python -m lse.tools.detokenize_compare`` (needs the default GGUF).

Result (2 shared cores, tokenizers 0.23.3): both are right on the 70 golden
cases and the 4k reply; DecodeStream is wrong on all 7 cut replies and on the
16k one, which also ends inside a character (it has no flush, so held-back
bytes are lost where decode gives U+FFFD). runtime/detokenize.py 2.3-4.7
us/token, DecodeStream 0.8-1.8 us/token (two runs); a decode step takes
milliseconds, so LSE keeps runtime/detokenize.py.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream

from lse.runtime.detokenize import REPLACEMENT, IncrementalDetokenizer
from lse.compiler.gguf.tokenizer import write_tokenizer
from lse.compiler.gguf.reader import read_gguf
from lse.compiler.gguf.importer import default_gguf_path

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "unit" / "data" / "smollm2_token_golden.json"


def cases(tok: Tokenizer) -> dict[str, list[list[int]]]:
    golden = [c["ids"] for c in json.loads(GOLDEN.read_text())["cases"] if c["ids"]]
    joined = [i for ids in golden for i in ids]
    cut = []
    for ids in golden:  # the first prefix that ends inside a character
        k = next((k for k in range(1, len(ids)) if tok.decode(ids[:k], skip_special_tokens=False).endswith(
            REPLACEMENT)), None)
        if k is not None:
            cut.append(ids[:k])
    return {"golden": golden, "long": [(joined * 30)[:4000], (joined * 30)[:16000]], "cut": cut}


def main() -> None:
    out = Path(tempfile.mkdtemp())
    write_tokenizer(read_gguf(default_gguf_path()).metadata, out, model_max_length=8192)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))

    def decode(ids: list[int]) -> str:
        return tok.decode(ids, skip_special_tokens=False)

    def ours(ids: list[int]) -> list[str]:
        d = IncrementalDetokenizer(decode)
        return [d.feed(i) for i in ids] + [d.flush()]

    def stream(ids: list[int]) -> list[str]:
        s = DecodeStream(skip_special_tokens=False)
        return [s.step(tok, i) or "" for i in ids]

    groups = cases(tok)
    for name, run in (("runtime/detokenize.py", ours), ("DecodeStream", stream)):
        print(name)
        for group, items in groups.items():
            wrong = sum(1 for ids in items if _wrong(run(ids), decode(ids)))
            print(f"  {group}: {wrong} of {len(items)} wrong, {_us_per_token(run, items):.2f} us/token")


def _wrong(pieces: list[str], whole: str) -> bool:
    return "".join(pieces) != whole or any(p.endswith(REPLACEMENT) for p in pieces[:-1])


def _us_per_token(run: Callable[[list[int]], list[str]], items: list[list[int]]) -> float:
    best = min(_timed(run, items) for _ in range(3))
    return best / sum(map(len, items)) * 1e6


def _timed(run: Callable[[list[int]], list[str]], items: list[list[int]]) -> float:
    start = time.perf_counter()
    for ids in items:
        run(ids)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
