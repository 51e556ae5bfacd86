"""The C example's documented build writes its binary where git ignores it
(#44: ``cc ... -o stream_chat`` left a binary in the checkout)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# README.md's snippet is the lead's to edit; it joins this list with it.
FILES = ["docs/c-api.md", "examples/stream_chat.c"]
BUILD = re.compile(r"\bcc\s+examples/stream_chat\.c\s+-o\s+(\S+)")


def _ignored_dirs() -> set[str]:
    """The checkout-root directories .gitignore names (``/build/``)."""
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return {m.group(1) for line in lines if (m := re.fullmatch(r"/([\w.-]+)/", line.strip()))}


@pytest.mark.parametrize("name", FILES)
def test_the_c_example_is_built_into_an_ignored_directory(name: str) -> None:
    text = (ROOT / name).read_text()
    outputs = BUILD.findall(text)
    assert outputs, f"{name} has no build command of the C example"
    for out in outputs:
        top, _, rest = out.partition("/")
        assert rest and top in _ignored_dirs(), f"{name}: the binary {out} lands in the checkout"
        assert f"mkdir -p {top}" in text, f"{name}: {top}/ is not created before the build"
        assert f"./{out}" in text, f"{name}: the run command does not name {out}"
