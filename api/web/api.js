// The server's API as the page uses it: every call relative to the page's
// own address (so a reverse proxy's prefix works), with the API key when
// one is set. Errors carry the server's envelope ({"error": {...}}).

import { sseData } from "./sse.js";

export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.error = error;
    this.code = error.code || null;
  }
}

async function failure(response) {
  let error = { message: `HTTP ${response.status} ${response.statusText}` };
  try {
    const body = await response.json();
    if (body && body.error) error = body.error;
  } catch {
    // not the JSON envelope (a proxy's page): keep the status line
  }
  return new ApiError(response.status, error);
}

export class Api {
  constructor(getKey) {
    this.getKey = getKey;
  }

  headers(json) {
    const headers = {};
    if (json) headers["content-type"] = "application/json";
    const key = this.getKey();
    if (key) headers.authorization = "Bearer " + key;
    return headers;
  }

  async get(path) {
    const response = await fetch(path, { headers: this.headers(false) });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  async models() {
    return (await this.get("v1/models")).data;
  }

  // Yields each parsed chunk of a streamed chat completion; ends at [DONE].
  async *chat(body, signal) {
    const response = await fetch("v1/chat/completions", {
      method: "POST", headers: this.headers(true), body: JSON.stringify(body), signal,
    });
    if (!response.ok) throw await failure(response);
    for await (const data of sseData(response.body)) {
      if (data === "[DONE]") return;
      yield JSON.parse(data);
    }
  }
}
