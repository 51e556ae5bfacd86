"""Screenshots of the page (light, dark, phone width) into docs/web-ui/, and
its weight and time to interactive as the browser's Performance API reports
them (docs/web-ui/measured.json, quoted by docs/web-ui.md).

The conversation shown is one stored sample turn (Markdown: a list, a code
block, a table) put into localStorage as an export would be, then one live
turn on the scripted_reasoning fixture, whose reply, reasoning block and
figures come from the server."""

from __future__ import annotations

import json

from page_helpers import replies, send_and_capture

from lse.api.webui import shipped_files

SAMPLE = {
    "id": "sample", "title": "Reading a file in Python", "created": 1, "updated": 1,
    "settings": {"model": "", "level": "", "temperature": "", "top_p": "", "top_k": "", "min_p": "",
                 "max_tokens": "", "system": "", "schema": ""},
    "messages": [
        {"role": "user", "content": "How do I read a text file line by line in Python?"},
        {"role": "assistant", "reasoning": "", "stats": {}, "finish": None, "error": None, "stopped": False,
         "streaming": False, "content": (
             "Open it with a `with` block, so the file is **closed** even on an error:\n\n"
             "```python\nwith open(\"notes.txt\", encoding=\"utf-8\") as f:\n    for line in f:\n"
             "        print(line.rstrip(\"\\n\"))\n```\n\n"
             "- iterating over `f` reads one line at a time\n- `encoding` avoids the platform's default\n\n"
             "| call | returns |\n|---|---|\n| `f.read()` | the whole text |\n| `f.readlines()` | a list of lines |")},
    ],
}

MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const resources = performance.getEntriesByType('resource').filter(r => !r.name.includes('/v1/'));
  const files = [nav, ...resources];
  return {
    files: files.length,
    transfer_bytes: files.reduce((n, r) => n + r.transferSize, 0),
    body_bytes: files.reduce((n, r) => n + r.encodedBodySize, 0),
    dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd),
    load_ms: Math.round(nav.loadEventEnd),
    interactive_ms: Math.round(performance.getEntriesByName('lse-interactive')[0].startTime),
  };
}"""


def seed(page, base_url: str) -> None:
    page.goto(base_url + "/")
    page.wait_for_selector("html[data-ready=true]")
    page.evaluate("s => { localStorage.setItem('lse.conversations', JSON.stringify([s]));"
                  " localStorage.setItem('lse.current', 'sample'); }", SAMPLE)
    page.reload()
    page.wait_for_selector("html[data-ready=true]")


def test_light_dark_and_phone_screenshots(open_page, scripted_server, docs_dir):
    for name, options in [("light", {"color_scheme": "light", "viewport": {"width": 1280, "height": 800}}),
                          ("dark", {"color_scheme": "dark", "viewport": {"width": 1280, "height": 800}}),
                          ("phone", {"color_scheme": "light", "viewport": {"width": 390, "height": 844},
                                     "device_scale_factor": 1, "is_mobile": True, "has_touch": True})]:
        w = open_page(scripted_server, **options)
        page = w.page
        seed(page, scripted_server)
        send_and_capture(page, "Thanks! Anything to watch out for?")
        shown = replies(page)
        assert shown[1]["content"] == "Done" and shown[1]["reasoning"] == "abc"
        if name != "phone":
            page.click("#toggle-settings")
            page.locator("details.reasoning summary").click()
        else:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, width  # nothing wider than the phone
            assert page.is_visible("#toggle-sidebar")
            assert page.eval_on_selector("#sidebar", "s => s.getBoundingClientRect().right") <= 0  # a drawer
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(13, 17, 23)" if name == "dark" else "rgb(255, 255, 255)")
        page.screenshot(path=str(docs_dir / f"{name}.png"))


def test_page_weight_and_time_to_interactive(open_page, scripted_server, docs_dir):
    w = open_page(scripted_server)
    w.open()
    figures = w.page.evaluate(MEASURE)
    assert figures["files"] == len(shipped_files())  # each shipped file once (index.html included), nothing else
    assert figures["body_bytes"] < 64 * 1024, figures  # the budget docs/web-ui.md states
    (docs_dir / "measured.json").write_text(json.dumps(figures, indent=1) + "\n")
    print("\nweb UI figures:", figures)


def test_a_code_blocks_copy_button_copies_the_code_alone(open_page, scripted_server):
    w = open_page(scripted_server, permissions=["clipboard-read", "clipboard-write"])
    seed(w.page, scripted_server)
    w.page.click("article.msg.assistant button[data-action=copy-code]")
    assert w.page.evaluate("navigator.clipboard.readText()") == (
        'with open("notes.txt", encoding="utf-8") as f:\n    for line in f:\n        print(line.rstrip("\\n"))')
    assert w.page.inner_text("article.msg.assistant button[data-action=copy-code]") == "Copied"
