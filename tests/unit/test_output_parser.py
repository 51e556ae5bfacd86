"""OutputParser: reasoning, content and tool calls split out of a reply, the
same however the text is chunked, with no partial marker reaching a client."""

from __future__ import annotations

import json
import random
import re

import pytest

from lse.runtime.chat.output import OutputParser, tool_call_markers
from lse.fixtures.make_fixtures import FIXTURES_DIR

THINK = ("<think>", "</think>")
TOOL = ("<tool_call>", "</tool_call>")
WEATHER = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
WEATHER_CALL = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
TIME_CALL = {"type": "function", "function": {"name": "now", "arguments": "{}"}}


def msg(content: str | None, reasoning: str | None = None, calls: list | None = None) -> dict:
    out: dict = {"role": "assistant", "content": content}
    if reasoning is not None:
        out["reasoning_content"] = reasoning
    if calls is not None:
        out["tool_calls"] = calls
    return out


# opens_reasoning, think markers, tool markers, split_reasoning, reply text, folded message
CASES = [
    (True, THINK, None, True, "abc</think>\n\nDone", msg("Done", "abc")),
    (False, THINK, None, True, "<think>\nabc</think>\n\nDone", msg("Done", "abc")),
    (False, THINK, None, True, "  <think> x \n</think>y", msg("y", "x")),
    (False, THINK, None, True, "Hi <think>x</think>", msg("Hi <think>x</think>")),  # only at the start
    (False, THINK, None, True, "<thi", msg("<thi")),
    (False, THINK, None, True, "<this is", msg("<this is")),
    (True, THINK, None, False, "abc</think>\n\nDone", msg("abc</think>\n\nDone")),  # split off
    (False, None, None, True, "<think>a</think>b", msg("<think>a</think>b")),
    (True, THINK, None, True, "abc ", msg("", "abc")),  # cut off inside the think block
    (True, THINK, None, True, "\n\n</think>\n\nDone", msg("Done")),  # empty reasoning is omitted
    (True, THINK, TOOL, True, "<tool_call>x</tool_call></think>ok", msg("ok", "<tool_call>x</tool_call>")),
    (False, None, None, True, "  a \n b  \n", msg("  a \n b  \n")),  # content kept byte for byte
    (False, None, None, True, "", msg("")),
    (False, None, TOOL, True, WEATHER, msg(None, calls=[WEATHER_CALL])),
    (False, None, TOOL, True, "Let me check.\n" + WEATHER, msg("Let me check.", calls=[WEATHER_CALL])),
    (False, None, TOOL, True, WEATHER + "\nThen more.", msg("Then more.", calls=[WEATHER_CALL])),
    (False, None, TOOL, True, WEATHER + '\n<tool_call>{"name": "now", "arguments": {}}</tool_call>\n',
     msg(None, calls=[WEATHER_CALL, TIME_CALL])),
    (True, THINK, TOOL, True, "plan</think>\n\n" + WEATHER, msg(None, "plan", [WEATHER_CALL])),
    (False, THINK, TOOL, True, "<think>p</think>" + WEATHER, msg(None, "p", [WEATHER_CALL])),
    # malformed blocks are content, delimiters and all
    (False, None, TOOL, True, '<tool_call>\n{"name": get_weather}\n</tool_call>',
     msg('<tool_call>\n{"name": get_weather}\n</tool_call>')),
    (False, None, TOOL, True, 'x \n<tool_call>{"name": 1, "arguments": {}}</tool_call> y',
     msg('x \n<tool_call>{"name": 1, "arguments": {}}</tool_call> y')),
    (False, None, TOOL, True, '<tool_call>{"name": "f", "arguments": "{}"}</tool_call>',
     msg('<tool_call>{"name": "f", "arguments": "{}"}</tool_call>')),
    (False, None, TOOL, True, '<tool_call>{"name": "f"}</tool_call>', msg('<tool_call>{"name": "f"}</tool_call>')),
    (False, None, TOOL, True, '<tool_call>["f"]</tool_call>', msg('<tool_call>["f"]</tool_call>')),
    (False, None, TOOL, True, 'a <tool_call>{"name"', msg('a <tool_call>{"name"')),  # unterminated
    (False, None, TOOL, True, WEATHER + "<tool_call>bad</tool_call>",
     msg("<tool_call>bad</tool_call>", calls=[WEATHER_CALL])),
    (False, None, TOOL, True, "abc <tool_ca", msg("abc <tool_ca")),
    (False, None, TOOL, True, "<tools>x</tools>", msg("<tools>x</tools>")),
]


def run(case: tuple, chunks: list[str]) -> tuple[list[dict], dict]:
    opens, think, tool, split, _, _ = case
    parser = OutputParser(opens, think, tool, split, rng=random.Random(7))
    fragments = [f for c in chunks for f in parser.feed(c)] + parser.finish()
    return fragments, parser.message()


def fold(fragments: list[dict]) -> dict:
    """What a client builds from the deltas."""
    content = "".join(f.get("content", "") for f in fragments)
    reasoning = "".join(f.get("reasoning_content", "") for f in fragments)
    calls = [{k: v for k, v in c.items() if k != "index"} for f in fragments for c in f.get("tool_calls", [])]
    return msg(content if content or not calls else None, reasoning or None, calls or None)


def without_ids(message: dict) -> dict:
    calls = [{k: v for k, v in c.items() if k != "id"} for c in message.get("tool_calls", [])]
    return {**message, **({"tool_calls": calls} if calls else {})}


def chunkings(text: str) -> list[list[str]]:
    rng = random.Random(text)
    out = [[text], list(text)]
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 6)))) if len(text) > 1 else []
        bounds = [0, *cuts, len(text)]
        out.append([text[a:b] for a, b in zip(bounds, bounds[1:])])
    return out


@pytest.mark.parametrize("case", CASES, ids=[repr(c[4])[:40] for c in CASES])
def test_fold_is_the_same_for_every_chunking(case: tuple) -> None:
    expected = case[5]
    whole_fragments, whole = run(case, [case[4]])
    assert without_ids(whole) == expected
    assert fold(whole_fragments) == whole
    for chunks in chunkings(case[4]):
        fragments, message = run(case, chunks)
        assert message == whole, chunks
        assert fold(fragments) == whole, chunks


def test_no_partial_marker_is_emitted() -> None:
    parser = OutputParser(True, THINK, TOOL)
    assert parser.feed("abc </thi") == [{"reasoning_content": "abc"}]
    assert parser.feed("nk>\n\nHi <tool_") == [{"content": "Hi"}]
    assert parser.feed('call>{"name": "now", "arguments": {}}</tool') == []
    got = parser.feed("_call>")
    assert len(got) == 1 and got[0]["tool_calls"][0]["function"] == {"name": "now", "arguments": "{}"}
    assert parser.finish() == []
    assert parser.has_tool_calls


def test_tool_call_delta_shape() -> None:
    parser = OutputParser(False, None, TOOL, rng=random.Random(0))
    (delta,) = parser.feed('<tool_call>{"name": "f", "arguments": {"q": "é"}}</tool_call>')
    call = delta["tool_calls"][0]
    assert call == {"index": 0, "id": f"call_{random.Random(0).getrandbits(96):024x}", "type": "function",
                    "function": {"name": "f", "arguments": '{"q": "é"}'}}
    assert json.loads(call["function"]["arguments"]) == {"q": "é"}


def test_tool_call_ids_without_rng_are_random_hex() -> None:
    ids = []
    for _ in range(2):
        parser = OutputParser(False, None, TOOL)
        parser.feed('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
        ids.append(parser.message()["tool_calls"][0]["id"])
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids) and ids[0] != ids[1]


def test_no_tool_calls() -> None:
    parser = OutputParser(False, None, TOOL)
    parser.feed("plain")
    parser.finish()
    assert not parser.has_tool_calls


# ---------------------------------------------------------------------------
# tool_call_markers


@pytest.mark.parametrize("text, expected", [
    ((FIXTURES_DIR / "qwen38_like/template.jinja").read_text(), TOOL),
    ((FIXTURES_DIR / "scripted/template.jinja").read_text(), TOOL),  # mentions <think> before <tool_call>
    ((FIXTURES_DIR / "chatml/template.jinja").read_text(), None),
    ("{% for tool_call in message.tool_calls %}<fn>{{ tool_call.name }}</fn>{% endfor %}", ("<fn>", "</fn>")),
    ("<tools>{{ tools | tojson }}</tools>", None),
    ("<tool_call></tool_call> is the format", None),  # the tag's own name is not a variable
    ("<a>{{ message.tool_calls | tojson }}<b>{{ tool_call }}</b></a>", ("<b>", "</b>")),  # shortest span
])
def test_tool_call_markers(text: str, expected: tuple[str, str] | None) -> None:
    assert tool_call_markers(text) == expected
