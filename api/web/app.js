// The chat page's controller: loads the model list, keeps the open
// conversation, sends turns, streams replies and wires every control.

import { Api, ApiError } from "./api.js";
import { contextOf, InputError, isContextFull, newReply, requestBody, streamReply } from "./chat.js";
import { renderSettings } from "./settings.js";
import { download, newConversation, Store, titleOf } from "./store.js";
import { renderLog, renderMessage } from "./view.js";

const $ = (id) => document.getElementById(id);
const store = new Store();
const api = new Api(() => store.apiKey);
const state = { models: [], conversation: newConversation(), controller: null, editing: -1, frame: 0 };
const NEARLY_FULL = 0.8; // warn when this share of the context is in use

function currentModel() {
  const s = state.conversation.settings;
  return state.models.find((m) => m.id === s.model) || state.models[0] || null;
}

function announce(text) {
  $("status").textContent = text;
}

function persist() {
  if (store.save()) announce("This browser's storage is full: the conversation is not saved.");
}

// ---- the API key ----------------------------------------------------------

function askKey(message) {
  const dialog = $("key-dialog");
  $("change-key").hidden = false;
  $("key-error").hidden = !message;
  $("key-error").textContent = message || "";
  $("key-input").value = "";
  if (!dialog.open) dialog.showModal();
  return new Promise((resolve) => {
    $("key-form").addEventListener("submit", () => {
      store.apiKey = $("key-input").value.trim();
      resolve();
    }, { once: true });
  });
}

async function loadModels() {
  for (;;) {
    try {
      state.models = await api.models();
      return;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        await askKey(store.apiKey ? "The server refused that key." : "");
      } else if (err instanceof ApiError && err.status === 503) {
        announce("The model is still loading…");
        $("context-text").textContent = "model loading…";
        await new Promise((r) => setTimeout(r, 1000));
      } else {
        throw err;
      }
    }
  }
}

// ---- rendering --------------------------------------------------------------

function renderContext() {
  const ctx = contextOf(state.conversation, currentModel());
  const meter = $("context");
  const note = $("context-note");
  if (!ctx) return;
  const share = ctx.context_length ? Math.min(1, ctx.tokens_used / ctx.context_length) : 0;
  const last = state.conversation.messages[state.conversation.messages.length - 1];
  const full = ctx.tokens_remaining <= 0 || Boolean(last && last.role === "assistant" && isContextFull(last));
  $("context-fill").style.width = (share * 100).toFixed(1) + "%";
  meter.classList.toggle("warn", share >= NEARLY_FULL && !full);
  meter.classList.toggle("full", full);
  meter.setAttribute("aria-valuemax", String(ctx.context_length));
  meter.setAttribute("aria-valuenow", String(ctx.tokens_used));
  const text = `${ctx.tokens_used} / ${ctx.context_length} tokens · ${ctx.tokens_remaining} left`;
  meter.setAttribute("aria-valuetext", text);
  $("context-text").textContent = text;
  note.hidden = !(full || share >= NEARLY_FULL);
  note.className = full ? "note full" : "note warn";
  note.textContent = full
    ? `The context is full: the model holds ${ctx.context_length} tokens and this conversation uses them all ` +
      "(context_full). LSE does not shorten conversations; start a new chat or edit the last message."
    : `The context is nearly full: ${ctx.tokens_remaining} of ${ctx.context_length} tokens left.`;
}

function renderSidebar() {
  const list = $("conversations");
  list.replaceChildren();
  for (const c of store.conversations) {
    const li = document.createElement("li");
    li.dataset.id = c.id;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "open-chat";
    open.dataset.action = "open";
    open.textContent = titleOf(c);
    if (c.id === state.conversation.id) open.setAttribute("aria-current", "true");
    li.append(open);
    for (const [action, label] of [["rename", "Rename"], ["delete", "Delete"], ["export", "Export"]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "small";
      b.dataset.action = action;
      b.textContent = label;
      b.setAttribute("aria-label", `${label} “${titleOf(c)}”`);
      li.append(b);
    }
    list.append(li);
  }
}

function renderAll() {
  const conv = state.conversation;
  const title = titleOf(conv);
  $("title").textContent = title;
  document.title = `${title} · LSE`;
  renderLog($("log"), conv, busy(), state.editing);
  renderContext();
  renderSidebar();
  scrollDown(true);
}

function scrollDown(force) {
  const log = $("log");
  if (force || log.scrollHeight - log.scrollTop - log.clientHeight < 120) log.scrollTop = log.scrollHeight;
}

function scheduleRender(conv, index) {
  if (state.frame || conv !== state.conversation) return;
  state.frame = requestAnimationFrame(() => {
    state.frame = 0;
    if (conv !== state.conversation) return;
    renderMessage($("log"), conv, index, true);
    renderContext();
    scrollDown(false);
  });
}

function busy() {
  return state.controller !== null;
}

function setBusy(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  $("log").setAttribute("aria-busy", on ? "true" : "false");
}

// ---- a turn -----------------------------------------------------------------

async function generate() {
  const conv = state.conversation;
  let body;
  try {
    body = requestBody(conv, currentModel());
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    announce(err.message);
    $("context-note").hidden = false;
    $("context-note").className = "note full";
    $("context-note").textContent = "Not sent: " + err.message;
    return false;
  }
  if (!store.get(conv.id)) store.add(conv);
  store.currentId = conv.id;
  const reply = newReply();
  conv.messages.push(reply);
  conv.updated = Date.now();
  state.controller = new AbortController();
  setBusy(true);
  renderAll();
  await streamReply(api, body, reply, () => scheduleRender(conv, conv.messages.indexOf(reply)),
                    state.controller.signal);
  state.controller = null;
  if (state.frame) cancelAnimationFrame(state.frame);
  state.frame = 0;
  setBusy(false);
  conv.updated = Date.now();
  persist();
  if (conv === state.conversation) renderAll();
  announce(reply.error ? "The reply failed." : reply.stopped ? "Stopped." : "Reply finished.");
  if (reply.error && reply.error.status === 401) await askKey("The server refused that key.");
  return true;
}

async function send() {
  const text = $("prompt").value;
  if (!text.trim() || busy() || !state.models.length) return;
  state.conversation.messages.push({ role: "user", content: text });
  $("prompt").value = "";
  if (!(await generate())) {
    state.conversation.messages.pop();
    $("prompt").value = text;
  }
}

function stop() {
  if (state.controller) state.controller.abort();
}

async function copyText(text, buttonNode) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // no clipboard API (a plain-http page on another host is not a secure context)
    const area = Object.assign(document.createElement("textarea"), { value: text });
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  const label = buttonNode.textContent;
  buttonNode.textContent = "Copied";
  setTimeout(() => { buttonNode.textContent = label; }, 1500);
}

// ---- conversations ------------------------------------------------------------

function openConversation(conv) {
  state.conversation = conv;
  state.editing = -1;
  store.currentId = store.get(conv.id) ? conv.id : null;
  renderSettings($("settings-form"), conv, state.models, settingsChanged);
  renderAll();
}

function settingsChanged(key) {
  if (key === "model") renderSettings($("settings-form"), state.conversation, state.models, settingsChanged);
  if (store.get(state.conversation.id)) persist();
  renderContext();
}

function renameConversation(li, conv) {
  const input = Object.assign(document.createElement("input"), { value: titleOf(conv), className: "rename" });
  input.setAttribute("aria-label", "New name");
  li.replaceChildren(input);
  input.focus();
  input.select();
  const finish = (keep) => {
    if (keep && input.value.trim()) conv.title = input.value.trim();
    persist();
    renderAll();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") finish(true);
    if (e.key === "Escape") {
      e.stopPropagation();
      finish(false);
    }
  });
  input.addEventListener("blur", () => finish(true), { once: true });
}

function onSidebarClick(event) {
  const target = event.target.closest("button[data-action]");
  if (!target) return;
  const li = target.closest("li");
  const conv = store.get(li.dataset.id);
  if (!conv) return;
  const action = target.dataset.action;
  if (action === "open") {
    openConversation(conv);
    document.querySelector(".app").classList.remove("side-open");
    $("toggle-sidebar").setAttribute("aria-expanded", "false");
  } else if (action === "rename") {
    renameConversation(li, conv);
  } else if (action === "delete" && window.confirm(`Delete “${titleOf(conv)}”?`)) {
    store.remove(conv.id);
    if (conv === state.conversation) openConversation(store.conversations[0] || newConversation());
    else renderSidebar();
  } else if (action === "export") {
    download(`lse-chat-${conv.id}.json`, conv);
  }
}

function onLogClick(event) {
  const target = event.target.closest("button[data-action]");
  if (!target) return;
  const conv = state.conversation;
  const index = parseInt(target.dataset.index, 10);
  const action = target.dataset.action;
  if (action === "copy-code") {
    copyText(target.closest(".code").querySelector("code").textContent, target);
  } else if (action === "copy") {
    copyText(conv.messages[index].content, target);
  } else if (action === "regenerate" && !busy()) {
    conv.messages.splice(index, 1);
    generate();
  } else if (action === "edit" && !busy()) {
    state.editing = index;
    renderAll();
    $("edit-text").focus();
  } else if (action === "cancel-edit") {
    state.editing = -1;
    renderAll();
  }
}

function onEditSubmit(event) {
  event.preventDefault();
  const conv = state.conversation;
  const index = state.editing;
  const text = $("edit-text").value;
  if (index < 0 || !text.trim()) return;
  conv.messages.splice(index);
  conv.messages.push({ role: "user", content: text });
  state.editing = -1;
  generate();
}

// ---- start ------------------------------------------------------------------

function wire() {
  $("key-dialog").addEventListener("cancel", (e) => e.preventDefault()); // the page can't work without the key
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    if (busy()) stop();
    else if (state.editing >= 0) {
      state.editing = -1;
      renderAll();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", () => {
    openConversation(newConversation());
    $("prompt").focus();
  });
  $("export-all").addEventListener("click", () => download("lse-conversations.json", store.conversations));
  $("change-key").addEventListener("click", () => askKey("").then(loadModels));
  $("conversations").addEventListener("click", onSidebarClick);
  $("log").addEventListener("click", onLogClick);
  $("log").addEventListener("submit", onEditSubmit);
  const toggle = (buttonId, apply) => $(buttonId).addEventListener("click", () => {
    const on = apply();
    $(buttonId).setAttribute("aria-expanded", String(on));
  });
  toggle("toggle-sidebar", () => document.querySelector(".app").classList.toggle("side-open"));
  toggle("toggle-settings", () => {
    $("settings").hidden = !$("settings").hidden;
    return !$("settings").hidden;
  });
}

async function start() {
  wire();
  if (store.apiKey) $("change-key").hidden = false;
  await loadModels();
  const saved = store.get(store.currentId);
  openConversation(saved || newConversation());
  $("prompt").disabled = false;
  $("send").disabled = false;
  $("prompt").focus();
  performance.mark("lse-interactive");
  document.documentElement.dataset.ready = "true";
}

start().catch((err) => {
  $("context-text").textContent = "the server did not answer";
  announce(`The page could not start: ${err.message}`);
  $("context-note").hidden = false;
  $("context-note").className = "note full";
  $("context-note").textContent = `The page could not reach the server: ${err.message}`;
});
