"""The chat page in chromium against smollm_like servers: a streamed reply
growing on screen, the context bar and context_full, stop, reload,
conversations kept in localStorage, edit/regenerate/copy, the safe Markdown
renderer, and the key prompt of a keyed server."""

from __future__ import annotations

import json
import re
import time

import httpx
from conftest import KEY
from page_helpers import (WATCH_GROWTH, context_meter, final_extras, open_settings, replies, send,
                          send_and_capture, sse_chunks, wait_done)

def greedy(page) -> None:
    open_settings(page)
    page.fill("#set-temperature", "0")
    page.click("#toggle-settings")


def test_the_startup_log_prints_the_page_url(chat_server, server_log):
    assert f"lse-server: chat page at {chat_server}/ (--no-web-ui turns it off)" in server_log(chat_server)


def test_a_streamed_reply_grows_on_screen_and_the_context_bar_follows(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    page = w.page
    assert page.title() == "New chat · LSE"
    assert context_meter(page) == [0, 256, "context"]
    greedy(page)
    page.evaluate(WATCH_GROWTH)
    body, chunks = send_and_capture(page, "Hello")
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0 and body["messages"] == [{"role": "user", "content": "Hello"}]
    [reply] = replies(page)
    stored = page.evaluate("JSON.parse(localStorage.getItem('lse.conversations'))[0].messages")
    assert stored[1]["content"] == replay(chat_server, body)["choices"][0]["message"]["content"] and reply["content"]
    lengths = page.evaluate("window.__lengths")
    assert len({n for n in lengths if 0 < n < len(reply["content"])}) >= 2, lengths  # seen part-way, twice
    extras = final_extras(chunks)  # smollm_like, --kv-len 256, greedy: the reply fills the context
    assert extras["usage"]["prompt_tokens"] + extras["usage"]["completion_tokens"] == 256
    ctx = extras["lse_context"]
    assert ctx == {"tokens_used": 256, "context_length": 256, "tokens_remaining": 0}
    # The bar: full, and context_full explained in words.
    assert context_meter(page) == [256, 256, "context full"]
    assert page.inner_text("#context-text") == "256 / 256 tokens · 0 left"
    assert "context_full" in page.inner_text("#context-note")
    timings = extras["timings"]
    assert f"prompt {timings['prompt_n']} tok" in reply["meta"]
    assert f"generation {timings['predicted_n']} tok" in reply["meta"]
    assert "0 cached" in reply["meta"] and "the context is full" in reply["meta"]
    assert any("filled the model's context" in warning for warning in reply["warnings"])


def test_a_prompt_over_the_context_gets_context_full_explained(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    w.allow_status(400)
    page = w.page
    body, chunks = send_and_capture(page, "word " * 300)
    assert chunks == []
    [reply] = replies(page)
    assert reply["errors"] and "does not fit the model's context" in reply["errors"][0]
    used, length, classes = context_meter(page)
    assert (length, classes) == (256, "context full") and used > 256  # the error's lse_context: the prompt's size


def test_the_context_bar_warns_before_it_fills(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    page = w.page
    open_settings(page)
    page.fill("#set-temperature", "0")
    page.fill("#set-max_tokens", "160")  # 51 prompt tokens + 160 of 256: over the 80 % mark, not full
    body, chunks = send_and_capture(page, "Hello")
    assert body["max_tokens"] == 160
    ctx = final_extras(chunks)["lse_context"]
    assert ctx["tokens_used"] == final_extras(chunks)["usage"]["prompt_tokens"] + 160
    assert context_meter(page) == [ctx["tokens_used"], 256, "context warn"]
    assert page.inner_text("#context-note") == (
        f"The context is nearly full: {ctx['tokens_remaining']} of 256 tokens left.")


def test_cpu_fallback_warnings_show_on_the_reply_that_caused_them(open_page, fallback_server):
    w = open_page(fallback_server)
    w.open()
    page = w.page
    greedy(page)
    open_settings(page)
    page.fill("#set-max_tokens", "3")
    _, chunks = send_and_capture(page, "Hi")
    warnings = final_extras(chunks)["lse_warnings"]
    assert len(warnings) == 2 and {w["type"] for w in warnings} == {"cpu_fallback"}  # one per layer's silu group
    [reply] = replies(page)
    assert reply["warnings"] == [f"CPU fallback: {w['cause']} ({w['count']}×): this part of the model ran on "
                                 "the CPU interpreter" for w in warnings]


def test_a_conversation_survives_a_reload_and_can_be_renamed_exported_deleted(open_page, chat_server):
    w = open_page(chat_server, accept_downloads=True)
    w.open()
    page = w.page
    greedy(page)
    send_and_capture(page, "Hello")
    shown = replies(page)[0]["content"]
    page.reload()
    page.wait_for_selector("html[data-ready=true]")
    assert page.inner_text("#conversations .open-chat") == "Hello"
    assert page.inner_text("article.msg.user .content") == "Hello"
    assert replies(page)[0]["content"] == shown
    assert context_meter(page)[0] == 256  # read back from the stored reply's lse_context
    page.click("#conversations button[data-action=rename]")
    page.fill("#conversations input.rename", "Greeting")
    page.press("#conversations input.rename", "Enter")
    page.reload()
    page.wait_for_selector("html[data-ready=true]")
    assert page.inner_text("#conversations .open-chat") == "Greeting"
    assert page.inner_text("#title") == "Greeting"
    with page.expect_download() as info:
        page.click("#conversations button[data-action=export]")
    exported = json.loads(open(info.value.path()).read())
    assert exported["title"] == "Greeting" and exported["settings"]["temperature"] == "0"
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant"]
    assert exported["messages"][1]["stats"]["lse_context"]["tokens_used"] == 256
    page.once("dialog", lambda d: d.accept())
    page.click("#conversations button[data-action=delete]")
    assert page.query_selector_all("#conversations li") == []
    page.reload()
    page.wait_for_selector("html[data-ready=true]")
    assert page.query_selector_all("#conversations li") == [] and replies(page) == []


def test_regenerate_edit_and_copy_the_last_turn(open_page, chat_server):
    w = open_page(chat_server, permissions=["clipboard-read", "clipboard-write"])
    w.open()
    page = w.page
    greedy(page)
    send_and_capture(page, "Hello")
    first = replies(page)[0]["content"]
    body, _ = send_and_capture_click(page, "article.msg.assistant button[data-action=regenerate]")
    assert body["messages"] == [{"role": "user", "content": "Hello"}]
    assert len(replies(page)) == 1 and replies(page)[0]["content"] == first  # greedy: the same reply again
    page.click("article.msg.user button[data-action=edit]")
    page.fill("#edit-text", "Hi")
    body, chunks = send_and_capture_click(page, "form.edit button[type=submit]")
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert page.inner_text("article.msg.user .content") == "Hi" and len(replies(page)) == 1
    page.click("article.msg.assistant button[data-action=copy]")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == replay(chat_server, body)["choices"][0]["message"]["content"]


def replay(base_url: str, body: dict) -> dict:
    """The server's non-streamed reply to the body the page sent (greedy: the same tokens). The oracle for
    text: Chromium's devtools hand Playwright an event stream decoded as Latin-1 (it names no charset)."""
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return httpx.post(base_url + "/v1/chat/completions", json=plain, timeout=60).json()


def send_and_capture_click(page, selector):
    with page.expect_response(lambda r: r.url.endswith("/v1/chat/completions")) as info:
        page.click(selector)
    wait_done(page)
    return json.loads(info.value.request.post_data), sse_chunks(info.value.body().decode("utf-8"))


def test_stop_cancels_a_long_reply(open_page, long_server):
    w = open_page(long_server)
    w.open()
    page = w.page
    greedy(page)
    send(page, "Hello")
    page.wait_for_function("""() => { const c = document.querySelector('article.msg.assistant .content');
                                      return c && c.textContent.length > 20; }""")
    assert page.is_visible("#stop") and page.is_hidden("#send")
    page.keyboard.press("Escape")  # Esc stops, as the Stop button does
    wait_done(page)
    [reply] = replies(page)
    assert reply["meta"] == "stopped" and reply["errors"] == []
    assert page.is_visible("#send")
    assert cancelled_count(long_server) == 1  # the server saw the request go: not a page-side pretence


def cancelled_count(base_url: str) -> float:
    """lse_requests_finished_total{outcome="cancelled"} once the engine has told its observer (a moment later)."""
    deadline = time.monotonic() + 10
    while True:
        text = httpx.get(base_url + "/metrics", timeout=10).text
        found = re.findall(r'^lse_requests_finished_total\{[^}]*outcome="cancelled"[^}]*\} (\S+)$', text, re.M)
        if found or time.monotonic() > deadline:
            return sum(float(v) for v in found)
        time.sleep(0.1)


def test_markdown_from_the_model_is_text_never_markup(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    html = w.page.evaluate("""async () => {
        const { renderMarkdown } = await import('./ui/markdown.js');
        const box = document.createElement('div');
        box.append(renderMarkdown('<img src=x onerror="window.pwned=1"> **bold** [a](javascript:alert(1)) ' +
                                  '[b](https://example.com/x) ![pic](https://example.com/p.png)\\n\\n' +
                                  '```js\\nlet x = "<b>";\\n```\\n- one\\n- two'));
        return box.innerHTML;
    }""")
    assert "<img" not in html and "&lt;img src=x" in html
    assert "<strong>bold</strong>" in html and 'href="javascript' not in html and "[a](javascript:alert(1))" in html
    assert '<a href="https://example.com/x" rel="noopener noreferrer nofollow" target="_blank">b</a>' in html
    assert ">image: pic</a>" in html  # an image is a link: the page fetches nothing from other hosts
    assert '<code data-lang="js">let x = "&lt;b&gt;";</code>' in html
    assert "<ul><li>one</li><li>two</li></ul>" in html
    assert w.page.evaluate("window.pwned") is None


def test_a_keyed_server_asks_for_the_key_once(open_page, keyed_server):
    w = open_page(keyed_server)
    w.allow_status(401)
    page = w.page
    page.goto(keyed_server + "/")
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", "wrong")
    page.press("#key-input", "Enter")
    page.wait_for_selector("#key-error:not([hidden])")
    assert page.inner_text("#key-error") == "The server refused that key."
    page.fill("#key-input", KEY)
    page.press("#key-input", "Enter")
    page.wait_for_selector("html[data-ready=true]")
    assert not page.is_visible("#key-dialog")
    body, chunks = send_and_capture(page, "Hello")
    assert context_meter(page)[0] == final_extras(chunks)["lse_context"]["tokens_used"] > 0
    page.reload()
    page.wait_for_selector("html[data-ready=true]")  # the key is kept: no prompt this time
    assert not page.is_visible("#key-dialog")
    assert page.evaluate("localStorage.getItem('lse.apiKey')") == KEY
