"""Special tokens stay out of a reply's text (issue #44), as llama-server and
vLLM (skip_special_tokens) leave them out: a control token the model
generates (``<|im_start|>``, ``<|endoftext|>`` where it is no stop token) is
counted in usage and listed in logprobs, but is not content. The template's
think and tool-call markers are kept: the output parser reads them, and where
it is not asked to split them out they stay in content as the model wrote
them."""

from __future__ import annotations

import pytest
from test_special_tokens import engine_for
from tokenizers import Tokenizer

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.runtime.prepare import prepare_request
from lse.fixtures.make_fixtures import fixture_dir


def reply_text(name: str, pieces: list[str]) -> str:
    """What a reply's detokenizer makes of ``pieces``, each text or a special token."""
    engine = engine_for(name)
    seqs, *_ = prepare_request(engine, {"messages": [{"role": "user", "content": "hi"}]}, "chat.completions")
    detok = seqs[0].detok
    ids = []
    for piece in pieces:
        special = engine.prompts.specials.get(piece)
        ids += [special] if special is not None else engine.prompts.encode_text(piece, add_special_tokens=False)
    return "".join(detok.feed(i) for i in ids) + detok.flush()


@pytest.mark.parametrize("name,pieces,text", [
    ("qwen38_like", ["Hi", "<|im_start|>", " there", "<|endoftext|>"], "Hi there"),
    ("qwen38_like", ["<think>", "a", "</think>", "b"], "<think>a</think>b"),  # its template's think markers
    ("smollm_like", ["a", "<think>", "b"], "ab"),  # special here, and no marker of this template
    ("smollm_like", ["<|im_end|>", "x", "<|im_start|>"], "x"),
])
def test_special_tokens_are_not_text_but_the_templates_markers_are(name, pieces, text):
    assert reply_text(name, pieces) == text


@pytest.fixture(scope="module")
def llama():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "pool": ["cpu:0"]})
    yield engine
    lse_close(engine)


@pytest.mark.parametrize("endpoint,body", [
    ("chat.completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ("completions", {"prompt": "hello"}),
])
def test_a_generated_control_token_is_counted_but_not_content(llama, endpoint, body):
    im_start = Tokenizer.from_file(str(fixture_dir("llama") / "tokenizer.json")).token_to_id("<|im_start|>")
    # logit_bias 100 leaves only that token: a control token, and no stop token of this model
    request = {**body, "max_tokens": 3, "logit_bias": {str(im_start): 100}, "logprobs": True}
    if endpoint == "completions":
        request["logprobs"] = 1
    events = list(lse_request(llama, request, endpoint).events())
    done = events[-1]
    assert done["type"] == "done", done
    choice = done["data"]["choices"][0]
    text = choice["message"]["content"] if endpoint == "chat.completions" else choice["text"]
    assert text == ""
    assert done["data"]["usage"]["completion_tokens"] == 3
    tokens = ([e["token"] for e in choice["logprobs"]["content"]] if endpoint == "chat.completions"
              else choice["logprobs"]["tokens"])
    assert tokens == ["<|im_start|>"] * 3  # logprobs still name the token generated
