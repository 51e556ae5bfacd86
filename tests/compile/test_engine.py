"""The engine over compiled fixtures, through the in-process API: endings,
limits, context full both ways, prefix reuse, n choices, stream = fold."""

from __future__ import annotations

import pytest

from lse.runtime.api import lse_close, lse_open, lse_request
from lse.runtime.reference import ReferenceModel
from lse.fixtures.make_fixtures import fixture_dir, scripted_fixture_dir


@pytest.fixture(scope="module")
def llama():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96})
    yield engine
    lse_close(engine)


@pytest.fixture(scope="module")
def stop_script():
    engine = lse_open({"model": str(scripted_fixture_dir("stop")), "kv_len": 64})
    yield engine
    lse_close(engine)


def chat(engine, content="hi there", **fields):
    return lse_request(engine, {"messages": [{"role": "user", "content": content}], **fields}).result()


def test_greedy_reply_is_the_reference_forward_pass(llama):
    status, body = chat(llama, temperature=0, max_tokens=12)
    assert status == 200
    ids = llama.tokenizer.encode(llama.template.render([{"role": "user", "content": "hi there"}]),
                                 add_special_tokens=False).ids
    ref = ReferenceModel.from_dir(llama.model_dir)
    want = []
    for _ in range(12):
        token = int(ref.forward(ids + want)[-1].argmax())
        if token in llama.eos_ids:
            break
        want.append(token)
    assert body["choices"][0]["message"]["content"] == llama.tokenizer.decode(want, skip_special_tokens=False)


@pytest.mark.parametrize("fields, text, finish, stop_reason", [
    ({}, "Hello STOP world", "stop", "stop_token"),
    ({"stop": ["STOP"]}, "Hello ", "stop", "stop_sequence"),
    ({"stop": "TOP w"}, "Hello S", "stop", "stop_sequence"),
    ({"max_tokens": 2}, "Hello STOP", "length", "max_tokens"),
])
def test_endings(stop_script, fields, text, finish, stop_reason):
    status, body = chat(stop_script, temperature=0, **fields)
    assert status == 200
    choice = body["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"], choice["stop_reason"]) == (text, finish, stop_reason)


def test_stop_string_never_leaks_into_the_stream(stop_script):
    handle = lse_request(stop_script, {"messages": [{"role": "user", "content": "hi"}], "stream": True,
                                       "temperature": 0, "stop": ["STOP"]})
    pieces = [c["delta"].get("content", "") for ev in handle.events() if ev["type"] == "chunk"
              for c in ev["data"]["choices"] if "delta" in c]
    assert "".join(pieces) == "Hello "


def test_context_full_reply_keeps_its_text(stop_script):
    prompt = len(stop_script.tokenizer.encode(
        stop_script.template.render([{"role": "user", "content": "hi"}]), add_special_tokens=False).ids)
    engine = lse_open({"model": str(scripted_fixture_dir("stop")), "kv_len": prompt + 2})
    try:
        status, body = chat(engine, "hi", temperature=0)
    finally:
        lse_close(engine)
    assert status == 200
    choice = body["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"], choice["stop_reason"]) == \
        ("Hello STOP", "length", "context_full")
    assert body["lse_context"] == {"tokens_used": prompt + 2, "context_length": prompt + 2, "tokens_remaining": 0}


def test_prompt_that_fills_the_context_is_refused_before_work(llama):
    status, body = chat(llama, "word " * 200)
    assert status == 400
    err = body["error"]
    assert (err["type"], err["code"], err["param"]) == ("invalid_request_error", "context_full", "messages")
    used = err["lse_context"]["tokens_used"]
    assert err["message"] == (f"the prompt is {used} tokens and the context holds 96 "
                              "(this model's maximum context length is 96 tokens); compact or shorten the conversation")
    assert err["lse_context"] == {"tokens_used": used, "context_length": 96, "tokens_remaining": 0}


def test_second_identical_prompt_reuses_the_slot_cache(llama):
    _, first = chat(llama, "reuse me", temperature=0, max_tokens=3)
    _, second = chat(llama, "reuse me", temperature=0, max_tokens=3)
    prompt = first["usage"]["prompt_tokens"]
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == prompt - 1
    assert second["choices"][0]["message"] == first["choices"][0]["message"]
    _, other = chat(llama, "something else entirely", temperature=0, max_tokens=3)
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] < prompt - 1


def test_a_system_prompt_in_a_running_slot_is_copied_to_the_next_request():
    """Two slots: while one request generates, another with the same system
    prompt lands in the other slot and takes the shared prefix from the
    running one (copy_kv on the device); its greedy reply is the one a fresh
    engine gives the same messages."""
    system = {"role": "system", "content": "Answer in one short sentence."}
    ask = {"messages": [system, {"role": "user", "content": "name a colour"}], "temperature": 0, "max_tokens": 6}
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96, "parallel": 2})
    try:
        running = lse_request(engine, {"messages": [system, {"role": "user", "content": "count"}],
                                       "temperature": 0, "max_tokens": 20, "ignore_eos": True, "stream": True})
        events = running.events()
        # the first request holds its slot, generating (past the role chunk, sent before admission)
        next(e for e in events if e["type"] == "chunk" and e["data"]["choices"][0]["delta"].get("content"))
        status, body = lse_request(engine, ask).result()
        list(events)
    finally:
        lse_close(engine)
    fresh = lse_open({"model": str(fixture_dir("llama")), "kv_len": 96})
    try:
        _, want = lse_request(fresh, ask).result()
    finally:
        lse_close(fresh)
    assert status == 200
    prompt_tokens = body["usage"]["prompt_tokens"]
    shared = body["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert 10 < shared < prompt_tokens - 1  # the system prompt's turn, not the user's
    assert body["choices"][0]["message"] == want["choices"][0]["message"]
    assert want["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_stream_folds_into_the_non_streamed_reply(llama):
    body = {"messages": [{"role": "user", "content": "fold"}], "seed": 7, "temperature": 1.0, "max_tokens": 10}
    _, whole = lse_request(llama, body).result()
    events = list(lse_request(llama, {**body, "stream": True}).events())
    assert [e["type"] for e in events][-1] == "done"
    text = "".join(c["delta"].get("content", "") for e in events if e["type"] == "chunk"
                   for c in e["data"]["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    assert events[-1]["data"]["choices"] == whole["choices"]


def test_n_choices_are_independent_and_seeded(llama):
    body = {"messages": [{"role": "user", "content": "n"}], "seed": 3, "n": 3, "max_tokens": 8}
    _, a = lse_request(llama, body).result()
    _, b = lse_request(llama, body).result()
    assert [c["index"] for c in a["choices"]] == [0, 1, 2]
    assert a["choices"] == b["choices"]
    texts = {c["message"]["content"] for c in a["choices"]}
    assert len(texts) > 1
    _, one = lse_request(llama, {**body, "n": 1}).result()
    assert one["choices"][0] == a["choices"][0]


def test_completions_scoring_mode_reports_prompt_logprobs(llama):
    ids = [5, 17, 200, 3]
    status, body = lse_request(llama, {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 1},
                               "completions").result()
    assert status == 200
    lp = body["choices"][0]["logprobs"]
    ref = ReferenceModel.from_dir(llama.model_dir).forward(ids)
    import numpy as np

    want = [float(ref[i] [ids[i + 1]] - np.log(np.exp(ref[i] - ref[i].max()).sum()) - ref[i].max())
            for i in range(3)]
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert "".join(lp["tokens"]) == body["choices"][0]["text"]
    assert lp["text_offset"] == [sum(len(t) for t in lp["tokens"][:i]) for i in range(len(ids))]
    np.testing.assert_allclose(lp["token_logprobs"][1:], want, atol=1e-4)
    assert body["usage"]["completion_tokens"] == 0


def test_a_prompt_at_max_length_gets_a_reply_of_zero_tokens():
    """generation_config.json max_length 40 bounds prompt + reply: a prompt of
    40 or more tokens gets 0 reply tokens (it used to sample one first), 39 gets 1."""
    from lse.runtime.api import lse_close, lse_open, lse_request
    from lse.fixtures.make_fixtures import fixture_dir

    engine = lse_open({"model": str(fixture_dir("gen_max_length")), "kv_len": 128})
    try:
        for prompt_len, reply in ((40, 0), (45, 0), (39, 1)):
            status, body = lse_request(engine, {"prompt": list(range(5, 5 + prompt_len)), "temperature": 0},
                                       "completions").result()
            assert status == 200, body
            choice = body["choices"][0]
            assert body["usage"]["completion_tokens"] == reply, (prompt_len, body["usage"])
            assert (choice["finish_reason"], choice["stop_reason"]) in {("length", "max_tokens"),
                                                                      ("stop", "stop_token")}
            assert body["lse_context"]["tokens_used"] == prompt_len + reply
    finally:
        lse_close(engine)


def test_stop_token_ids_and_ignore_eos_against_the_reference(llama):
    """vLLM's ending fields on the compiled engine: the reference's greedy
    tokens, cut at a stop_token_ids id (counted, not shown), or run past
    every end-of-turn token to max_tokens under ignore_eos."""
    ids = llama.tokenizer.encode(llama.template.render([{"role": "user", "content": "hi there"}]),
                                 add_special_tokens=False).ids
    ref = ReferenceModel.from_dir(llama.model_dir)
    greedy = []
    for _ in range(10):
        greedy.append(int(ref.forward(ids + greedy)[-1].argmax()))
    shown = [t for t in greedy if t not in llama.eos_ids]

    def text(tokens):
        return llama.tokenizer.decode(tokens, skip_special_tokens=False)

    status, body = chat(llama, temperature=0, max_tokens=10, ignore_eos=True)
    assert status == 200 and body["usage"]["completion_tokens"] == 10
    assert (body["choices"][0]["message"]["content"], body["choices"][0]["stop_reason"]) == (text(shown), "max_tokens")

    cut = next(i for i, t in enumerate(greedy) if t not in llama.eos_ids and i >= 2)
    status, body = chat(llama, temperature=0, max_tokens=10, ignore_eos=True, stop_token_ids=[greedy[cut]])
    assert status == 200 and body["usage"]["completion_tokens"] == greedy.index(greedy[cut]) + 1
    first = greedy[:greedy.index(greedy[cut])]
    assert body["choices"][0]["message"]["content"] == text([t for t in first if t not in llama.eos_ids])
    assert (body["choices"][0]["finish_reason"], body["choices"][0]["stop_reason"]) == ("stop", "stop_token")


def test_min_tokens_holds_the_end_of_turn_back(stop_script):
    status, plain = chat(stop_script, temperature=0)
    ended = plain["usage"]["completion_tokens"]  # "Hello STOP world" and its end-of-turn token
    status, body = chat(stop_script, temperature=0, min_tokens=ended + 1, max_tokens=ended + 3)
    assert status == 200 and body["usage"]["completion_tokens"] >= ended + 1
    assert body["choices"][0]["message"]["content"].startswith("Hello STOP world")
