"""The page's own modules run in chromium on inputs a live server doesn't
send on demand: usage in either stream shape, SSE framing split anywhere."""

from __future__ import annotations

FOLD = """async (chunks) => {
  const { applyChunk, newReply } = await import('./ui/chat.js');
  const reply = newReply();
  for (const c of chunks) applyChunk(reply, c);
  return reply;
}"""

USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "prompt_tokens_details": {"cached_tokens": 4}}
CTX = {"tokens_used": 7, "context_length": 64, "tokens_remaining": 57}


def chunk(delta=None, finish=None, **extra):
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish,
                                         "stop_reason": "stop_token" if finish else None}]
    return {"object": "chat.completion.chunk", "choices": choices, **extra}


def test_usage_is_read_from_the_final_chunk_or_from_its_own_chunk(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    lse_shape = [chunk({"role": "assistant"}), chunk({"reasoning_content": "hm"}), chunk({"content": "Hi"}),
                 chunk({}, "stop", usage=USAGE, lse_context=CTX, timings={"prompt_n": 1})]
    openai_shape = [*lse_shape[:3], chunk({}, "stop", lse_context=CTX, timings={"prompt_n": 1}),
                    chunk(None, usage=USAGE)]
    for chunks in (lse_shape, openai_shape):
        reply = w.page.evaluate(FOLD, chunks)
        assert (reply["content"], reply["reasoning"]) == ("Hi", "hm")
        assert reply["finish"] == {"reason": "stop", "stop": "stop_token"}
        assert reply["stats"] == {"usage": USAGE, "lse_context": CTX, "timings": {"prompt_n": 1}}


def test_an_error_in_the_stream_is_kept_on_the_reply(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    reply = w.page.evaluate(FOLD, [chunk({"content": "a"}), {"error": {"message": "boom", "code": "x"}}])
    assert (reply["content"], reply["error"]) == ("a", {"message": "boom", "code": "x"})


def test_sse_frames_split_at_any_byte_with_comments_and_crlf(open_page, chat_server):
    w = open_page(chat_server)
    w.open()
    stream = ': queued\n\ndata: {"a":"é→"}\n\ndata: {"b":\r\ndata: 2}\r\n\r\ndata:[DONE]\n\n'
    for size in (1, 2, 3, 7, 1000):  # bytes per read: splits inside UTF-8 sequences and inside CRLF
        got = w.page.evaluate("""async ([text, size]) => {
            const { sseData } = await import('./ui/sse.js');
            const bytes = new TextEncoder().encode(text);
            const body = new ReadableStream({ start(c) {
                for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size));
                c.close();
            } });
            const out = [];
            for await (const d of sseData(body)) out.push(d);
            return out;
        }""", [stream, size])
        assert got == ['{"a":"é→"}', '{"b":\n2}', "[DONE]"], size
