"""What the browser tests do on the chat page, by the page's own controls."""

from __future__ import annotations

import json
from typing import Any

DONE = """() => document.getElementById('stop').hidden && !document.querySelector('article[aria-busy="true"]')"""

# Records the text length of the last reply at each DOM change, so a test can
# see a streamed reply grow (and not just appear whole). The page draws once
# per animation frame, and smollm_like streams a whole reply within a frame or
# two on a fast machine, with its events often in one network read; so the
# chat stream reaches the page one event every 25 ms, a 40 tok/s model's pace.
WATCH_GROWTH = """() => {
  window.__lengths = [];
  new MutationObserver(() => {
    const replies = document.querySelectorAll('article.msg.assistant .content');
    const last = replies[replies.length - 1];
    if (last) window.__lengths.push(last.textContent.length);
  }).observe(document.getElementById('log'), {childList: true, subtree: true, characterData: true});
  const realFetch = window.fetch;
  window.fetch = async (url, init) => {
    const response = await realFetch(url, init);
    if (!String(url).endsWith('chat/completions') || !response.ok) return response;
    const reader = response.body.getReader();
    const decoder = new TextDecoder(), encoder = new TextEncoder();
    let pending = '';
    const paced = new ReadableStream({async pull(out) {
      for (;;) {
        const cut = pending.indexOf('\\n\\n');
        if (cut >= 0) {
          await new Promise((r) => setTimeout(r, 25));
          out.enqueue(encoder.encode(pending.slice(0, cut + 2)));
          pending = pending.slice(cut + 2);
          return;
        }
        const {done, value} = await reader.read();
        if (done) { if (pending) out.enqueue(encoder.encode(pending)); out.close(); return; }
        pending += decoder.decode(value, {stream: true});
      }
    }});
    return new Response(paced, {status: response.status, headers: response.headers});
  };
}"""


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def wait_done(page: Any, timeout: float = 120_000) -> None:
    page.wait_for_function(DONE, timeout=timeout)


def send_and_capture(page: Any, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Sends ``text``, waits for the reply to end; (the request body, the stream's chunks)."""
    with page.expect_response(lambda r: r.url.endswith("/v1/chat/completions"), timeout=120_000) as info:
        send(page, text)
    response = info.value
    wait_done(page)
    body = json.loads(response.request.post_data)
    return body, sse_chunks(response.body().decode("utf-8")) if response.status == 200 else []


def sse_chunks(text: str) -> list[dict[str, Any]]:
    frames = [b.removeprefix("data: ") for b in text.split("\n\n") if b.startswith("data: ")]
    assert frames[-1] == "[DONE]", frames[-3:]
    return [json.loads(f) for f in frames[:-1]]


def final_extras(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """usage, lse_context and timings from whichever chunks carry them."""
    found: dict[str, Any] = {}
    for c in chunks:
        for key in ("usage", "lse_context", "timings", "lse_warnings"):
            if c.get(key) is not None:
                found[key] = c[key]
    return found


def replies(page: Any) -> list[dict[str, Any]]:
    """Each assistant message as shown: its text, meta line, reasoning and warnings."""
    return page.eval_on_selector_all("article.msg.assistant", """nodes => nodes.map(n => ({
        content: n.querySelector('.content').textContent,
        meta: (n.querySelector('.meta') || {}).textContent || '',
        reasoning: n.querySelector('details.reasoning .reasoning-body') ?
                   n.querySelector('details.reasoning .reasoning-body').textContent : null,
        reasoning_open: n.querySelector('details.reasoning') ? n.querySelector('details.reasoning').open : null,
        errors: [...n.querySelectorAll('.error')].map(e => e.textContent),
        warnings: [...n.querySelectorAll('.warning')].map(e => e.textContent)}))""")


def context_meter(page: Any) -> tuple[int, int, str]:
    """(tokens used, context length, classes) as the context bar reports them."""
    return page.eval_on_selector("#context", """m => [Number(m.getAttribute('aria-valuenow')),
        Number(m.getAttribute('aria-valuemax')), m.className]""")


def open_settings(page: Any) -> None:
    if page.is_hidden("#settings"):
        page.click("#toggle-settings")
