"""Write tests/unit/data/smollm2_token_golden.json: llama.cpp's token ids for a corpus.

    python -m lse.tools.golden_tokens [GGUF_FILE] [OUT_JSON]

llama.cpp (through ``llama-cpp-python``, the ``bench`` extra) is the
independent tokenizer: no network reaches the upstream tokenizer.json. Ids
are taken with ``add_bos=False, special=True``, so special tokens in the text
are parsed as the chat template writes them. The unit test compares the
imported tokenizer.json against this file and does not need llama_cpp.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lse.compiler.gguf.reader import read_gguf
from lse.compiler.gguf.importer import default_gguf_path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "unit" / "data" / "smollm2_token_golden.json"
CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")

CORPUS = [
    "",
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's what we've done, don't you think? I'D SAY DON'T.",
    # unicode
    "héllo wörld — naïve café, façade, Ærøskøbing",
    "日本語のテキストと中文文本，한국어 텍스트",
    "Привет, мир! Ελληνικά. עברית. العربية. हिन्दी",
    "\u00a0non-breaking\u00a0space and zero\u200bwidth and soft\u00adhyphen",
    "ﬁ ligature, Å (precomposed) vs Å (combining), ｆｕｌｌｗｉｄｔｈ",
    # emoji
    "🤖 robots 👍🏽 thumbs, 🇫🇷 flag, 👨‍👩‍👧‍👦 family",
    "emoji😀without🎉spaces and ❤️ variation selector",
    # digit runs
    "1234567890",
    "Pi is 3.14159265358979 and e is 2.71828.",
    "Call 555-0199 or +1 (800) 123-4567 before 2024-12-31T23:59:59Z",
    "1,000,000 and 1 000 000 and 10⁶ and ½ and Ⅻ and ٣٤٥ and ①②③",
    "v1.2.3-rc4 x86_64 0xDEADBEEF 1e-5",
    # whitespace runs
    "a  b   c    d     e",
    "\t\ttabs\tand\t\t\tmore",
    "\n\n\nnewlines\n\n",
    "trailing spaces   ",
    "   leading spaces",
    " \n \n\t \r\n mixed",
    "line one\r\nline two\rline three",
    " ",
    "    ",
    # code
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < 10; ++i) {\n\tprintf(\"%d\\n\", i);\n}",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "<div class=\"x\">&amp;&lt;</div> SELECT * FROM t WHERE id=42;",
    "x += y ** 2 // 3 != z; a->b; c::d; e?.f ?? g; h => i",
    # special tokens: CHAT is appended below, then every control token alone and in text
    "<|im_start|><|im_end|><|endoftext|>",
    "text<|endoftext|>more text",
    " <|im_start|> spaced <|im_end|> ",
    "<|im_start|user (not special)",
    "<filename>main.py\n<gh_stars>10\n<file_sep><repo_name>lse",
]


def special_tokens(gguf_path: Path) -> list[str]:
    """Every control token (token_type 3) of the GGUF."""
    meta = read_gguf(gguf_path).metadata
    return [t for t, ty in zip(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]) if ty == 3]


def corpus(gguf_path: Path) -> list[str]:
    specials = special_tokens(gguf_path)
    return CORPUS + [CHAT] + specials + [f"before {t} after" for t in specials]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    gguf_path = Path(args[0]) if args else default_gguf_path()
    out = Path(args[1]) if len(args) > 1 else DEFAULT_OUT
    import llama_cpp  # the bench extra; imported here so the module imports without it

    llm = llama_cpp.Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)
    cases = [{"text": text, "ids": llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)}
             for text in corpus(gguf_path)]
    source = (f"llama.cpp via llama-cpp-python {llama_cpp.__version__}: "
              "Llama(vocab_only=True).tokenize(text, add_bos=False, special=True)")
    # One case per line, so a diff of the file shows which texts changed.
    rows = ",\n".join("  " + json.dumps(case, ensure_ascii=False) for case in cases)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f'{{\n "source": {json.dumps(source)},\n "gguf": {json.dumps(gguf_path.name)},\n'
                   f' "cases": [\n{rows}\n ]\n}}\n')
    print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
