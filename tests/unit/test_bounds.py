"""What a request may cost (runtime/bounds.py): lone surrogates, characters
before tokenizing, prompts and n × prompts, each a 400 naming the field,
refused before the template or the tokenizer runs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_special_tokens import engine_for

from lse.runtime.errors import LseError
from lse.runtime.prepare import prepare_request


@pytest.fixture(scope="module")
def engine():
    return replace(engine_for("smollm_like"), queue_size=8)


@pytest.mark.parametrize("endpoint, body, param", [
    ("chat.completions", {"messages": [{"role": "user", "content": "a\ud800"}]}, "messages[0].content"),
    ("chat.completions", {"messages": [{"role": "user", "content": [{"type": "text", "text": "\udfff"}]}]},
     "messages[0].content[0].text"),
    ("chat.completions", {"model": "\ud800", "messages": [{"role": "user", "content": "a"}]}, "model"),
    ("chat.completions", {"messages": [{"role": "user", "content": "a", "name": "\ud83d"}]}, "messages[0].name"),
    ("completions", {"prompt": "\ud800x"}, "prompt"),
    ("completions", {"prompt": ["ok", "b\udc00"]}, "prompt[1]"),
    ("completions", {"prompt": "ok", "stop": ["\ud800"]}, "stop[0]"),
    ("completions", {"prompt": "ok", "\ud800": 1}, "body"),
])
def test_lone_surrogates_are_a_400_naming_the_field(engine, endpoint, body, param):
    with pytest.raises(LseError) as err:
        prepare_request(engine, body, endpoint)
    assert (err.value.status, err.value.param) == (400, param), err.value.message


def test_valid_astral_text_is_accepted(engine):
    seqs, *_ = prepare_request(engine, {"messages": [{"role": "user", "content": "emoji \U0001f600"}]},
                               "chat.completions")
    assert seqs


@pytest.mark.parametrize("endpoint, key", [("chat.completions", "messages"), ("completions", "prompt")])
def test_a_prompt_too_long_to_ever_fit_is_refused_before_tokenizing(engine, endpoint, key, monkeypatch):
    limit = engine.context_length * engine.prompts.chars_per_token
    text = "a" * (limit + 1)
    body = {"messages": [{"role": "user", "content": text}]} if key == "messages" else {"prompt": text}
    monkeypatch.setattr(engine.prompts, "text_only", None)  # tokenizing would fail the test
    with pytest.raises(LseError) as err:
        prepare_request(engine, body, endpoint)
    e = err.value
    assert (e.status, e.kind, e.param) == (400, "context_full", key)
    assert e.extra["lse_context"]["tokens_used"] > engine.context_length
    # OpenAI's phrase, which litellm matches for its ContextWindowExceededError
    assert f"(this model's maximum context length is {engine.context_length} tokens)" in e.message


@pytest.mark.parametrize("body, param", [
    ({"prompt": ["a"] * 9}, "prompt"),
    ({"prompt": ["a"] * 3, "n": 3}, "n"),
    ({"prompt": [[1, 2]] * 2, "n": 5}, "n"),
])
def test_more_sequences_than_the_queue_holds_is_a_400(engine, body, param):
    with pytest.raises(LseError) as err:
        prepare_request(engine, body, "completions")
    assert (err.value.status, err.value.param) == (400, param)


def test_chat_n_above_the_queue_is_a_400_and_at_it_is_accepted(engine):
    with pytest.raises(LseError) as err:
        prepare_request(engine, {"messages": [{"role": "user", "content": "a"}], "n": 9}, "chat.completions")
    assert (err.value.status, err.value.param) == (400, "n")
    seqs, *_ = prepare_request(engine, {"messages": [{"role": "user", "content": "a"}], "n": 8}, "chat.completions")
    assert len(seqs) == 8
