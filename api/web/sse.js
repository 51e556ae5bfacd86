// Server-sent events from a fetch body (WHATWG HTML, "Server-sent events"):
// events end at a blank line, `data:` lines join with "\n", lines starting
// with ":" are comments (LSE's `: queued` keepalive). EventSource can't POST,
// so the page reads the same stream any OpenAI client reads.

export async function* sseData(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end;
      while ((end = lineEnd(buffer)) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer[end] === "\r" && buffer[end + 1] === "\n" ? end + 2 : end + 1);
        if (line === "") {
          if (data.length) yield data.join("\n");
          data = [];
        } else if (line.startsWith("data:")) {
          data.push(line.slice(line[5] === " " ? 6 : 5));
        }
      }
      if (done) break;
    }
    if (data.length) yield data.join("\n");
  } finally {
    reader.releaseLock();
  }
}

function lineEnd(text) {
  const n = text.indexOf("\n");
  const r = text.indexOf("\r");
  if (r >= 0 && (n < 0 || r < n) && r + 1 < text.length) return r;
  return n;
}
