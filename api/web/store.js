// Conversations live in this browser's localStorage and nowhere else: the
// server keeps no history. One key holds the list, one the open conversation.

const LIST_KEY = "lse.conversations";
const CURRENT_KEY = "lse.current";
const KEY_KEY = "lse.apiKey";

export const DEFAULT_SETTINGS = Object.freeze({
  model: "", level: "", temperature: "", top_p: "", top_k: "", min_p: "", max_tokens: "",
  system: "", schema: "",
});

function newId() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

export function newConversation() {
  const now = Date.now();
  return { id: newId(), title: "", created: now, updated: now, settings: { ...DEFAULT_SETTINGS }, messages: [] };
}

export function titleOf(conversation) {
  if (conversation.title) return conversation.title;
  const first = conversation.messages.find((m) => m.role === "user");
  if (!first) return "New chat";
  const line = first.content.trim().split("\n")[0];
  return line.length > 48 ? line.slice(0, 47) + "…" : line || "New chat";
}

export class Store {
  constructor(storage = window.localStorage) {
    this.storage = storage;
    this.conversations = this.load();
  }

  load() {
    try {
      const list = JSON.parse(this.storage.getItem(LIST_KEY) || "[]");
      if (!Array.isArray(list)) return [];
      return list.filter((c) => c && typeof c.id === "string" && Array.isArray(c.messages))
        .map((c) => ({ ...c, settings: { ...DEFAULT_SETTINGS, ...(c.settings || {}) } }));
    } catch {
      return []; // a list this page can't read is replaced on the next save
    }
  }

  save() {
    this.conversations.sort((a, b) => b.updated - a.updated);
    try {
      this.storage.setItem(LIST_KEY, JSON.stringify(this.conversations));
      return null;
    } catch (err) {
      return err; // quota exceeded: the caller says so; the conversation stays in memory
    }
  }

  get(id) {
    return this.conversations.find((c) => c.id === id) || null;
  }

  add(conversation) {
    this.conversations.unshift(conversation);
    return conversation;
  }

  remove(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    this.save();
  }

  get currentId() {
    return this.storage.getItem(CURRENT_KEY);
  }

  set currentId(id) {
    if (id) this.storage.setItem(CURRENT_KEY, id);
    else this.storage.removeItem(CURRENT_KEY);
  }

  get apiKey() {
    return this.storage.getItem(KEY_KEY) || "";
  }

  set apiKey(key) {
    if (key) this.storage.setItem(KEY_KEY, key);
    else this.storage.removeItem(KEY_KEY);
  }
}

export function download(name, value) {
  const blob = new Blob([JSON.stringify(value, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
