"""Every request example in README.md and docs/ sends the fields it relies on
(#44): a token limit and a temperature. Without them a model whose files set
no sampling defaults samples at 1.0 up to the end of the context, and a
newcomer's first request answers nonsense for minutes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# A code block that makes a generation request: an HTTP route or an SDK / in-process call.
REQUEST = re.compile(r"/v1/(chat/)?completions|/v1/responses|/v1/messages\b|lse_request\(|"
                     r"\.(chat\.)?completions\.create\(|\.responses\.create\(|\.messages\.create\(")
LIMIT = re.compile(r"max_tokens|max_completion_tokens|max_output_tokens|max_new_tokens")


def _request_blocks(text: str) -> list[tuple[int, str]]:
    blocks = []
    for m in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S):
        if REQUEST.search(m.group(1)):
            blocks.append((text[:m.start()].count("\n") + 1, m.group(1)))
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_request_example_sends_a_limit_and_a_temperature(page: Path) -> None:
    missing = [f"line {line}: {'' if LIMIT.search(block) else 'a token limit '}"
               f"{'' if 'temperature' in block else 'temperature'}"
               for line, block in _request_blocks(page.read_text(encoding="utf-8"))
               if not (LIMIT.search(block) and "temperature" in block)]
    assert missing == []


def test_the_readme_has_request_examples() -> None:
    assert len(_request_blocks((ROOT / "README.md").read_text(encoding="utf-8"))) >= 3


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_that_opens_an_engine_closes_it(page: Path) -> None:
    """An engine left open warns of leaked device buffers at exit (#44: 106 lines)."""
    blocks = [(line, b) for line, b in _request_blocks(page.read_text(encoding="utf-8")) if "lse_open(" in b]
    assert [line for line, b in blocks if "lse_close(" not in b] == []
