"""Per-conversation settings in chromium against qwen38_like: the model's own
thinking levels (default marked) switching the reasoning block on and off,
generation_defaults shown with their sources, the system prompt and a JSON
schema reaching the request."""

from __future__ import annotations

import json

import httpx
from page_helpers import open_settings, replies, send_and_capture

LEVELS = ["none", "xhigh (default)", "medium", "low"]


def options(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector + " option", "os => os.map(o => o.textContent)")


def test_settings_show_the_models_levels_and_defaults_with_their_sources(open_page, thinking_server):
    w = open_page(thinking_server)
    w.open()
    page = w.page
    open_settings(page)
    model = httpx.get(thinking_server + "/v1/models", timeout=10).json()["data"][0]
    assert options(page, "#set-model") == [model["id"]]
    assert options(page, "#set-level") == LEVELS
    assert page.eval_on_selector("#set-level", "s => s.selectedOptions[0].textContent") == "xhigh (default)"
    hints = {f: page.inner_text(f"#set-{f}-hint") for f in ("temperature", "top_p", "top_k", "min_p", "max_tokens")}
    assert hints == {"temperature": "default 1 (the model's generation_config.json)",
                     "top_p": "default 0.95 (the model's generation_config.json)",
                     "top_k": "default 20 (the model's generation_config.json)",
                     "min_p": "default 0 (LSE's neutral default)",
                     "max_tokens": "default up to the context (LSE's neutral default)"}
    assert page.get_attribute("#set-top_k", "placeholder") == "20"
    assert page.inner_text("#set-model-hint") == f"context {model['context_length']} tokens"


def test_the_thinking_level_switches_the_reasoning_block(open_page, thinking_server):
    w = open_page(thinking_server)
    w.open()
    page = w.page
    open_settings(page)
    page.fill("#set-temperature", "0")
    page.fill("#set-max_tokens", "40")
    page.select_option("#set-level", label="none")
    body, _ = send_and_capture(page, "Hello")
    assert body["reasoning_effort"] == "none" and body["max_tokens"] == 40
    [off] = replies(page)
    assert off["reasoning"] is None and off["content"]

    page.select_option("#set-level", label="xhigh (default)")
    body, chunks = send_and_capture(page, "Hello again")
    assert "reasoning_effort" not in body  # the default level: the request names none
    on = replies(page)[1]
    expected = httpx.post(thinking_server + "/v1/chat/completions", timeout=60, json={
        k: v for k, v in body.items() if k not in ("stream", "stream_options")}).json()["choices"][0]["message"]
    assert expected["reasoning_content"]
    stored = page.evaluate("JSON.parse(localStorage.getItem('lse.conversations'))[0].messages[3]")
    assert (stored["reasoning"], stored["content"]) == (expected["reasoning_content"], expected["content"] or "")
    assert on["reasoning"] and on["reasoning_open"] is False  # shown apart from the answer, collapsed
    summary = page.locator("article.msg.assistant").nth(1).locator("details.reasoning summary")
    assert summary.inner_text().startswith("Reasoning (")
    summary.click()
    assert replies(page)[1]["reasoning_open"] is True

    page.select_option("#set-level", label="low")
    body, _ = send_and_capture(page, "Once more")
    assert body["reasoning_effort"] == "low"
    page.reload()  # the level is the conversation's own: kept across a reload
    page.wait_for_selector("html[data-ready=true]")
    open_settings(page)
    assert page.eval_on_selector("#set-level", "s => s.selectedOptions[0].textContent") == "low"


def test_system_prompt_and_schema_reach_the_request(open_page, thinking_server):
    w = open_page(thinking_server)
    w.open()
    page = w.page
    open_settings(page)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    page.fill("#set-system", "Answer in JSON.")
    page.fill("#set-schema", json.dumps(schema))
    page.select_option("#set-level", label="none")
    page.fill("#set-temperature", "0")
    page.fill("#set-max_tokens", "200")
    body, _ = send_and_capture(page, "A number, please")
    assert body["messages"] == [{"role": "system", "content": "Answer in JSON."},
                                {"role": "user", "content": "A number, please"}]
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "output", "schema": schema, "strict": True}}
    stored = page.evaluate("JSON.parse(localStorage.getItem('lse.conversations'))[0].messages[1]")
    assert set(json.loads(stored["content"])) == {"n"}  # the reply kept to the schema
    page.fill("#set-schema", "{not json")
    page.fill("#prompt", "Again")
    page.press("#prompt", "Enter")
    assert page.inner_text("#context-note").startswith("Not sent: the JSON schema does not parse")
    assert page.input_value("#prompt") == "Again" and len(replies(page)) == 1
