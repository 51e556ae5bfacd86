// The message list: one <article> per message, rebuilt from the message's
// state (the streaming one about once a frame). Model text goes through
// renderMarkdown, which builds text nodes only.

import { isContextFull } from "./chat.js";
import { renderMarkdown } from "./markdown.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(action, label, index, aria) {
  const b = el("button", "action", label);
  b.type = "button";
  b.dataset.action = action;
  b.dataset.index = String(index);
  if (aria) b.setAttribute("aria-label", aria);
  return b;
}

const STOPS = { max_tokens: "ended at max tokens", context_full: "the context is full", stop_sequence: "stop sequence",
                cancelled: "cancelled" };

function rate(value) {
  return value == null ? "–" : `${value.toFixed(1)} tok/s`;
}

export function statsText(reply) {
  const parts = [];
  const { usage, timings } = reply.stats;
  if (timings) {
    parts.push(`prompt ${timings.prompt_n} tok, ${rate(timings.prompt_per_second)}`);
    parts.push(`generation ${timings.predicted_n} tok, ${rate(timings.predicted_per_second)}`);
  } else if (usage) {
    parts.push(`${usage.prompt_tokens} prompt + ${usage.completion_tokens} reply tokens`);
  }
  const cached = usage && usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : null;
  if (cached != null) parts.push(`${cached} cached`);
  if (reply.stopped) parts.push("stopped");
  else if (reply.finish && STOPS[reply.finish.stop]) parts.push(STOPS[reply.finish.stop]);
  return parts.join(" · ");
}

function reasoningNode(msg) {
  const details = el("details", "reasoning");
  const thinking = msg.streaming && !msg.content;
  const words = msg.reasoning.trim().split(/\s+/).length;
  details.append(el("summary", null, thinking ? "Thinking…" : `Reasoning (${words} word${words === 1 ? "" : "s"})`));
  const body = el("div", "md reasoning-body");
  body.append(renderMarkdown(msg.reasoning));
  details.append(body);
  return details;
}

function errorNode(error) {
  const box = el("div", "error");
  box.setAttribute("role", "alert");
  let text = error.message || "the request failed";
  if (error.code === "context_full") {
    text = "The conversation does not fit the model's context: " + text +
      ". LSE does not shorten conversations; start a new chat or edit the last message.";
  } else if (error.status === 401) {
    text = "The server refused the API key. " + text;
  }
  box.textContent = text;
  return box;
}

export function messageNode(msg, index, { lastUser, lastAssistant, busy }) {
  const article = el("article", "msg " + msg.role);
  article.dataset.index = String(index);
  article.setAttribute("aria-label", msg.role === "user" ? "You" : "Assistant");
  if (msg.role === "assistant" && msg.reasoning) article.append(reasoningNode(msg));
  const content = el("div", msg.role === "user" ? "content plain" : "content md");
  if (msg.role === "user") content.textContent = msg.content;
  else if (msg.content) content.append(renderMarkdown(msg.content));
  else if (msg.streaming) content.append(el("span", "pending", "…"));
  article.append(content);
  if (msg.role === "assistant") {
    if (msg.streaming) article.setAttribute("aria-busy", "true");
    const stats = statsText(msg);
    if (stats) article.append(el("div", "meta", stats));
    for (const w of (msg.stats && msg.stats.lse_warnings) || []) {
      const warn = el("div", "warning", w.type === "cpu_fallback"
        ? `CPU fallback: ${w.cause} (${w.count}×): this part of the model ran on the CPU interpreter`
        : `${w.type}: ${w.cause || JSON.stringify(w)}`);
      warn.setAttribute("role", "note");
      article.append(warn);
    }
    if (msg.error) article.append(errorNode(msg.error));
    if (isContextFull(msg) && !msg.error) {
      article.append(el("div", "warning", "The reply filled the model's context and was cut off. Start a new chat " +
        "to go on; LSE does not shorten conversations."));
    }
  }
  const actions = el("div", "actions");
  if (msg.content) actions.append(button("copy", "Copy", index, "Copy message"));
  if (!busy && index === lastAssistant) actions.append(button("regenerate", "Regenerate", index, "Regenerate reply"));
  if (!busy && index === lastUser) actions.append(button("edit", "Edit", index, "Edit and resend"));
  if (actions.childNodes.length) article.append(actions);
  return article;
}

export function editNode(msg, index) {
  const form = el("form", "edit");
  form.dataset.index = String(index);
  const label = el("label", "sr-only", "Edit your message");
  label.htmlFor = "edit-text";
  const text = el("textarea");
  text.id = "edit-text";
  text.value = msg.content;
  text.rows = Math.min(12, msg.content.split("\n").length + 1);
  const row = el("div", "row");
  const save = el("button", "primary", "Save and send");
  save.type = "submit";
  const cancel = button("cancel-edit", "Cancel", index);
  row.append(save, cancel);
  form.append(label, text, row);
  return form;
}

export function renderLog(log, conversation, busy, editing) {
  const msgs = conversation.messages;
  const lastUser = msgs.map((m) => m.role).lastIndexOf("user");
  const lastAssistant = msgs.length && msgs[msgs.length - 1].role === "assistant" ? msgs.length - 1 : -1;
  log.replaceChildren(...msgs.map((m, i) => (i === editing ? editNode(m, i)
    : messageNode(m, i, { lastUser, lastAssistant, busy }))));
  if (!msgs.length) log.append(el("p", "empty", "Send a message to start. Settings (⚙) apply to this chat only."));
}

// Replaces the node of message ``index`` (the one streaming) in place.
export function renderMessage(log, conversation, index, busy) {
  const node = log.querySelector(`article[data-index="${index}"]`);
  const fresh = messageNode(conversation.messages[index], index, { lastUser: -1, lastAssistant: -1, busy });
  if (node) {
    const open = node.querySelector("details.reasoning");
    const freshDetails = fresh.querySelector("details.reasoning");
    if (open && open.open && freshDetails) freshDetails.open = true;
    node.replaceWith(fresh);
  } else {
    log.append(fresh);
  }
}
