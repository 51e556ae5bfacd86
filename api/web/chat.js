// One conversation turn: the request body from the conversation and its
// settings, and the reply's message filled in chunk by chunk.

const NUMBERS = { temperature: parseFloat, top_p: parseFloat, top_k: (v) => parseInt(v, 10),
                  min_p: parseFloat, max_tokens: (v) => parseInt(v, 10) };

export class InputError extends Error {}

// The messages sent: the system prompt, then every finished turn. Reasoning
// is not sent back (chat templates drop it from earlier turns anyway).
export function requestBody(conversation, model) {
  const s = conversation.settings;
  const messages = [];
  if (s.system.trim()) messages.push({ role: "system", content: s.system });
  for (const m of conversation.messages) {
    if (m.role === "user" || (m.role === "assistant" && m.content)) messages.push({ role: m.role, content: m.content });
  }
  const body = { model: model ? model.id : s.model || undefined, messages, stream: true,
                 stream_options: { include_usage: true } };
  if (s.level) body.reasoning_effort = s.level;
  for (const [field, parse] of Object.entries(NUMBERS)) {
    const text = String(s[field]).trim();
    if (text === "") continue;
    const value = parse(text);
    if (!Number.isFinite(value)) throw new InputError(`${field} must be a number, got "${text}"`);
    body[field] = value;
  }
  if (s.schema.trim()) {
    let schema;
    try {
      schema = JSON.parse(s.schema);
    } catch (err) {
      throw new InputError(`the JSON schema does not parse: ${err.message}`);
    }
    body.response_format = { type: "json_schema", json_schema: { name: "output", schema, strict: true } };
  }
  return body;
}

export function newReply() {
  return { role: "assistant", content: "", reasoning: "", stats: {}, finish: null, error: null, stopped: false,
           streaming: true };
}

// Folds one chunk into the reply. usage may come on the chunk that carries
// finish_reason or on a last chunk of its own with "choices": [] (OpenAI's
// include_usage shape); both are read.
export function applyChunk(reply, chunk) {
  if (chunk.error) {
    reply.error = chunk.error;
    return;
  }
  for (const choice of chunk.choices || []) {
    if (choice.index !== 0) continue;
    const delta = choice.delta || {};
    if (delta.reasoning_content) reply.reasoning += delta.reasoning_content;
    if (delta.content) reply.content += delta.content;
    if (choice.finish_reason) reply.finish = { reason: choice.finish_reason, stop: choice.stop_reason || null };
  }
  for (const key of ["usage", "lse_context", "timings", "lse_warnings"]) {
    if (chunk[key] != null) reply.stats[key] = chunk[key];
  }
}

// Streams the reply to ``body`` into ``reply``, calling ``update`` after each chunk.
export async function streamReply(api, body, reply, update, signal) {
  try {
    for await (const chunk of api.chat(body, signal)) {
      applyChunk(reply, chunk);
      update();
    }
  } catch (err) {
    if (err.name === "AbortError") reply.stopped = true;
    else reply.error = err.error || { message: String(err.message || err) };
    if (err.error && err.error.lse_context) reply.stats.lse_context = err.error.lse_context;
    if (err.status) reply.error.status = err.status;
  } finally {
    reply.streaming = false;
    update();
  }
}

// The context in use after the conversation's latest reply that reports it.
export function contextOf(conversation, model) {
  for (let i = conversation.messages.length - 1; i >= 0; i -= 1) {
    const ctx = conversation.messages[i].stats && conversation.messages[i].stats.lse_context;
    if (ctx) return ctx;
  }
  return model ? { tokens_used: 0, context_length: model.context_length, tokens_remaining: model.context_length }
    : null;
}

export function isContextFull(reply) {
  return (reply.finish && reply.finish.stop === "context_full") || (reply.error && reply.error.code === "context_full");
}
