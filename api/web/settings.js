// The settings panel of the open conversation: model, thinking level,
// sampling fields (blank: the model's default, shown with its source),
// system prompt and an optional JSON schema for structured output.

const SAMPLING = [
  { field: "temperature", label: "Temperature", step: "0.05", min: "0", defaultKey: "temperature" },
  { field: "top_p", label: "Top-p", step: "0.01", min: "0", max: "1", defaultKey: "top_p" },
  { field: "top_k", label: "Top-k", step: "1", min: "-1", defaultKey: "top_k" },
  { field: "min_p", label: "Min-p", step: "0.01", min: "0", max: "1", defaultKey: "min_p" },
  { field: "max_tokens", label: "Max tokens", step: "1", min: "1", defaultKey: "max_new_tokens" },
];

const SOURCES = { "generation_config.json": "the model's generation_config.json", "config.json": "the model's config.json",
                  server_option: "a server option", lse_default: "LSE's neutral default" };

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function field(id, label, control, hint) {
  const wrap = el("div", { className: "field" });
  wrap.append(el("label", { htmlFor: id, textContent: label }), control);
  if (hint) {
    const note = el("small", { id: id + "-hint", className: "hint", textContent: hint });
    control.setAttribute("aria-describedby", note.id);
    wrap.append(note);
  }
  return wrap;
}

export function defaultText(model, key) {
  const defaults = (model && model.generation_defaults) || {};
  const value = defaults[key];
  const source = (defaults.sources || {})[key];
  const shown = value == null ? (key === "max_new_tokens" ? "up to the context" : "none") : String(value);
  return source ? `default ${shown} (${SOURCES[source] || source})` : `default ${shown}`;
}

export function levelLabel(level) {
  return level.default ? `${level.id} (default)` : level.id;
}

// Fills ``root`` with the form for ``conversation``; ``changed`` is called after each edit.
export function renderSettings(root, conversation, models, changed) {
  const s = conversation.settings;
  const model = models.find((m) => m.id === s.model) || models[0] || null;
  root.replaceChildren();
  const bind = (control, key) => {
    control.value = s[key];
    control.addEventListener(control.tagName === "SELECT" ? "change" : "input", () => {
      s[key] = control.value;
      changed(key);
    });
    return control;
  };

  const modelSelect = el("select", { id: "set-model" });
  for (const m of models) modelSelect.append(el("option", { value: m.id, textContent: m.id }));
  modelSelect.value = model ? model.id : "";
  modelSelect.addEventListener("change", () => {
    s.model = modelSelect.value;
    changed("model");
  });
  const ctx = model ? `context ${model.context_length} tokens` : "";
  root.append(field("set-model", "Model", modelSelect, ctx));

  const thinking = model && model.thinking;
  const levelSelect = el("select", { id: "set-level" });
  if (thinking && thinking.supported) {
    for (const level of thinking.levels) {
      levelSelect.append(el("option", { value: level.default ? "" : level.id, textContent: levelLabel(level) }));
    }
    root.append(field("set-level", "Thinking level", bind(levelSelect, "level"),
                      "the levels this model's chat template defines"));
  } else {
    levelSelect.append(el("option", { value: "", textContent: "none (this model does not think)" }));
    levelSelect.disabled = true;
    root.append(field("set-level", "Thinking level", levelSelect));
  }

  for (const spec of SAMPLING) {
    const input = el("input", { id: "set-" + spec.field, type: "number", step: spec.step, min: spec.min,
                                inputMode: "decimal" });
    if (spec.max) input.max = spec.max;
    const defaults = (model && model.generation_defaults) || {};
    input.placeholder = defaults[spec.defaultKey] == null ? "" : String(defaults[spec.defaultKey]);
    root.append(field(input.id, spec.label, bind(input, spec.field), defaultText(model, spec.defaultKey)));
  }

  const system = el("textarea", { id: "set-system", rows: 4, placeholder: "none" });
  root.append(field("set-system", "System prompt", bind(system, "system")));
  const schema = el("textarea", { id: "set-schema", rows: 4, spellcheck: false,
                                  placeholder: '{"type": "object", "properties": {...}}' });
  root.append(field("set-schema", "Structured output (JSON schema)", bind(schema, "schema"),
                    "optional: the reply is constrained to this schema"));
  const reset = el("button", { type: "button", id: "reset-settings", textContent: "Reset to the model's defaults" });
  reset.addEventListener("click", () => {
    Object.assign(s, { level: "", temperature: "", top_p: "", top_k: "", min_p: "", max_tokens: "" });
    changed("reset");
    renderSettings(root, conversation, models, changed);
  });
  root.append(reset);
}
