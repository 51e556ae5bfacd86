"""Behaviour rows: error codes, stop reasons, output limits, context full,
thinking levels, sampling defaults, CPU fallback, auth, tool calls, and the
spec README's overrides of the lean doc (docs/spec/README.md)."""

from __future__ import annotations

from lse.spec.rows import (
    LSE_API, OPENAI_API, README, STYLE, Cite, ErrorCode, FallbackCase, LogLine, NeutralDefault, Override,
    Rule, StopReason, ThinkingModel,
)

LIMITS = Cite(LSE_API, "Output limits")
TITLE = Cite(LSE_API, "Output limits, context, thinking levels, sampling defaults and CPU fallback")
FULL = Cite(LSE_API, "Context full")
REPLY_FULL = Cite(LSE_API, "Context full > A reply that fills the context")
PROMPT_FULL = Cite(LSE_API, "Context full > A prompt that fills the context")
THINKING = Cite(LSE_API, "Thinking levels")
THINKING_MODELS = Cite(LSE_API, "Thinking levels > /v1/models")
THINKING_REQ = Cite(LSE_API, "Thinking levels > Request fields")
DEFAULTS = Cite(LSE_API, "Sampling defaults")
NEUTRAL = Cite(LSE_API, "Sampling defaults > LSE's neutral defaults")
SAMPLING_REQ = Cite(LSE_API, "Sampling defaults > Request fields")
FALLBACK = Cite(LSE_API, "CPU fallback")
NO_FALLBACK = Cite(LSE_API, "CPU fallback > --no-cpu-fallback")
ERRORS = Cite(OPENAI_API, "Errors")
AUTH = Cite(OPENAI_API, "Authentication")
TOOLS = Cite(OPENAI_API, "Tool calling")
GAPS = Cite(OPENAI_API, "Not supported yet")
OVERRIDES = Cite(README, "Where the two differ, this is how LSE behaves")
STYLE_API = Cite(STYLE, "The runtime and the API")

IN_PROCESS = "in-process API only (lse_open / lse_request / the lse CLI), not HTTP"


def rule(id_, cite, text, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, **kw)


def error(id_, cite, status, type_, code, when, **kw) -> ErrorCode:
    return ErrorCode(id=id_, cite=cite, status=status, type=type_, code=code, when=when,
                     text=f"HTTP {status} {type_} {code}: {when}", **kw)


BAD = "invalid_request_error"
ERROR_ROWS = (
    rule("err.envelope", ERRORS, 'errors use OpenAI\'s envelope {"error": {message, type, param, code}}'),
    error("err.invalid_json", ERRORS, 400, BAD, "invalid_json", "malformed body"),
    error("err.field", ERRORS, 400, BAD, None, "a field with a wrong type or value, naming it in param"),
    error("err.context_full", PROMPT_FULL, 400, BAD, "context_full",
          "prompt_tokens >= context_length; param messages or prompt; lse_context with tokens_used = prompt size "
          "(a lower bound only for a prompt refused by its characters before tokenizing)"),
    error("err.max_tokens_cap", LIMITS, 400, BAD, None, "max_tokens (or max_completion_tokens) above the "
          "operator's --max-tokens cap, param max_tokens either way; the cap itself is accepted", needs=("cap",)),
    error("err.unauthorized", ERRORS, 401, "authentication_error", "invalid_api_key",
          "missing or wrong bearer key when one is configured", needs=("auth",)),
    error("err.not_found", STYLE_API, 404, "not_found_error", "not_found", "an unknown route"),
    error("err.request_timeout", ERRORS, 408, "timeout_error", "request_timeout",
          "generation exceeded the request timeout (--request-timeout-secs); in the stream when streamed; the "
          "server serves the next request", needs=("times_out",)),
    error("err.generation_failed", ERRORS, 500, "server_error", "generation_failed",
          "generation failed; the server recovers and serves the next request",
          manual="needs a fault injected into the engine"),
    error("err.unsupported_reasoning_effort", THINKING_REQ, 400, BAD, "unsupported_reasoning_effort",
          "the level is not one the template defines; no level is aliased to another; error.levels lists ids",
          needs=("thinking",)),
    error("err.thinking_unsupported", THINKING_REQ, 400, BAD, "thinking_unsupported",
          "thinking asked of a model without controls", needs=("no_thinking",)),
    error("err.thinking_unsupported_off", THINKING_REQ, 400, BAD, "thinking_unsupported",
          "enable_thinking: false sent to a template that can't switch thinking off",
          needs=("effort_without_toggle",)),
    error("err.conflicting_thinking", THINKING_REQ, 400, BAD, "conflicting_thinking",
          "two spellings of the switch or level disagree, or the level contradicts the switch",
          needs=("toggle",)),
    error("err.invalid_thinking", THINKING_REQ, 400, BAD, "invalid_thinking", "a thinking field has the wrong type"),
    error("err.cpu_fallback_disabled", NO_FALLBACK, 500, "server_error", "cpu_fallback_disabled",
          "an operation has no device kernel under --no-cpu-fallback; message starts 'CPU fallback disabled:'; "
          "in the stream when streamed; the engine stays loaded", needs=("fallback_refused",)),
)

STOP_ROWS = tuple(
    StopReason(id=f"stop.{reason}", cite=LIMITS, stop_reason=reason, finish_reason=finish, when=when,
               text=f"{when}: finish_reason {'/'.join(finish) or '-'}, stop_reason {reason}", **kw)
    for reason, finish, when, kw in (
        ("stop_token", ("stop", "tool_calls"), "the model emits an end-of-turn token", {}),
        ("stop_sequence", ("stop",), "one of the request's stop strings", {}),
        ("max_tokens", ("length",), "a token limit", {}),
        ("context_full", ("length",), "the prompt plus the reply fill the context", {}),
        ("cancelled", (), "the client disconnected or cancelled",
         {"manual": "a cancelled HTTP client receives no reply to read it from; " + IN_PROCESS}),
    )
)

LIMIT_ROWS = (
    rule("limit.request", LIMITS, "the request's max_tokens or max_completion_tokens bounds the reply; "
         "max_tokens wins when both are sent; null means not sent"),
    rule("limit.cap", LIMITS, "without a request limit the operator's --max-tokens cap bounds the reply",
         needs=("cap",)),
    rule("limit.max_new_tokens", LIMITS, "then generation_config.json max_new_tokens", needs=("max_new_tokens",)),
    rule("limit.none", LIMITS, "LSE has no output limit of its own (not 16 on /v1/completions either)",
         needs=("no_limit",)),
    rule("limit.max_length", LIMITS, "max_length bounds prompt plus reply for items 2 to 4, not a request's "
         "max_tokens", needs=("max_length",)),
    rule("limit.context", LIMITS, "whatever the limit, prompt plus reply never exceed context_length"),
    rule("limit.model_max_length", LIMITS, "tokenizer_config.json model_max_length is not an output limit",
         needs=("model_files", "no_limit")),
)

CONTEXT_ROWS = (
    rule("context.reply_fills", REPLY_FULL, "a reply that fills the context ends with HTTP 200, keeps its "
         "text, finish_reason length and stop_reason context_full"),
    rule("context.every_response", FULL, "every completion response carries lse_context; a stream on its "
         "final chunk"),
    rule("context.completions", REPLY_FULL, "/v1/completions uses the same stop_reason and lse_context fields"),
    rule("context.no_compaction", PROMPT_FULL, "LSE does no compaction: the prompt is refused, not trimmed"),
)

THINKING_MODEL_ROWS = (
    ThinkingModel(id="thinking.table.qwen38", cite=THINKING_MODELS, model="Qwen3.8", fixture="qwen38_like",
                  source_file="chat_template.jinja", levels=("none", "xhigh", "medium", "low"),
                  default_level="xhigh", with_instruction=("xhigh", "low"), opening=("xhigh", "medium", "low"),
                  needs=("levels:none,xhigh,medium,low",),
                  text="Qwen3.8: none, xhigh, medium, low, default xhigh; no high; medium adds no instruction"),
    ThinkingModel(id="thinking.table.qwen36", cite=THINKING_MODELS, model="Qwen3.6", fixture="qwen36_like",
                  source_file="tokenizer_config.json", levels=("none", "on"), default_level="on",
                  needs=("levels:none,on",), text="Qwen3.6: none, on, default on"),
    ThinkingModel(id="thinking.table.smollm", cite=THINKING_MODELS, model="SmolLM2", fixture="smollm_like",
                  source_file=None, levels=(), default_level=None, needs=("no_thinking",),
                  text="SmolLM2, or a model with no template: no levels, supported false, default null"),
)

THINKING_RULES = (
    rule("thinking.template_file", THINKING, "the template comes from chat_template.jinja, else "
         "tokenizer_config.json chat_template (a string or the list entry named default), else "
         "chat_template.json; source names it", needs=("thinking",)),
    rule("thinking.levels_order", THINKING_MODELS, "level ids: none first (only with the toggle), then each "
         "effort value, then on (toggle without effort)"),
    rule("thinking.instruction", THINKING, "a level's instruction is placed first in the system prompt",
         needs=("instruction_levels",)),
    rule("thinking.generation_prompt", THINKING, "a level that opens reasoning starts the reply inside "
         "<think>, so with the budget spent there content is empty", needs=("thinking",)),
    rule("thinking.default", THINKING, "a request naming no level gets default_level", needs=("thinking",)),
    rule("thinking.no_hard_coding", THINKING, "no model has hard-coded strings",
         manual="a statement about the implementation; the engine's template probes are unit-tested"),
    rule("thinking.unreadable_template", THINKING, "a model whose template can't be read does not load; "
         "lse_open names the file and the construct (lse-server exits 1 with that message)", needs=("process",)),
    rule("thinking.aliases", THINKING_REQ, "thinking_level, chat_template_kwargs.reasoning_effort and "
         "reasoning.effort spell reasoning_effort; thinking and chat_template_kwargs.enable_thinking spell "
         "enable_thinking", needs=("thinking",)),
    rule("thinking.resolve.effort", THINKING_REQ, "reasoning_effort must be a level id; a switch sent "
         "beside it must agree with that level", needs=("thinking",)),
    rule("thinking.resolve.switch", THINKING_REQ, "only enable_thinking false gives none; only true gives "
         "the default when it thinks, else the first level that thinks", needs=("toggle",)),
    rule("thinking.resolve.neither", THINKING_REQ, "neither sent: default_level", needs=("thinking",)),
    rule("thinking.resolve.no_controls", THINKING_REQ, "without controls reasoning_effort none and "
         "enable_thinking false are accepted; asking to think is an error", needs=("no_thinking",)),
    rule("thinking.completions", THINKING_REQ, "on /v1/completions the prompt passes unchanged; thinking "
         "fields are checked for type and agreement, not against the template"),
    rule("thinking.room", Cite(OPENAI_API, "Leave room for thinking in max_tokens"), "max_tokens covers "
         "thinking too: spent inside <think>, the reply has content \"\" and finish_reason length; "
         "thinking false gives the whole budget to the answer", needs=("thinking",)),
)

DEFAULT_RULES = (
    rule("defaults.order", DEFAULTS, "a field left out or sent as null takes the first of: request, "
         "generation_config.json, config.json (embedded generation_config, then top level), LSE's neutral "
         "default"),
    rule("defaults.from_files", DEFAULTS, "values from the model's files are reported with their file as "
         "source", needs=("files_defaults",)),
    rule("defaults.server_option", DEFAULTS, "lse-server --temperature overrides the temperature default, "
         "source server_option", needs=("server_temperature",)),
    rule("defaults.greedy", DEFAULTS, "do_sample: false makes the default temperature 0: greedy, the seed "
         "does not matter", needs=("greedy_default",)),
    rule("defaults.no_table", DEFAULTS, "there is no per-model or per-family table",
         manual="a statement about the implementation, not observable over HTTP"),
) + tuple(
    NeutralDefault(id=f"defaults.neutral.{name}", cite=NEUTRAL, field=name, value=value,
                   text=f"{name} defaults to {value!r} (reported as lse_default)")
    for name, value in (("temperature", 1.0), ("top_k", 0), ("top_p", 1.0), ("min_p", 0.0),
                        ("repetition_penalty", 1.0), ("presence_penalty", 0.0), ("max_new_tokens", None),
                        ("max_length", None))
)

SAMPLING_RULES = (
    rule("sampling.greedy", SAMPLING_REQ, "temperature 0 or less is greedy: any seed, the same reply"),
    rule("sampling.off_values", SAMPLING_REQ, "top_k 0 and -1 both turn top-k off"),
    rule("sampling.truncation", SAMPLING_REQ, "top_k 1, top_p 0 and min_p 1 each keep only the top token"),
    rule("sampling.frequency", SAMPLING_REQ, "frequency_penalty f > 0 is repetition_penalty 1 + f; an explicit "
         "repetition_penalty wins"),
    rule("sampling.penalties_applied", SAMPLING_REQ, "repetition and presence penalties change a reply that "
         "repeats a token"),
    rule("sampling.seed", SAMPLING_REQ, "the same seed gives the same reply"),
    rule("sampling.presence_window", SAMPLING_REQ, "presence_penalty counts the tokens of the last 64: a token "
         "64 back is penalised, 65 back is not"),
    rule("sampling.order", SAMPLING_REQ, "penalties, then temperature, then top-k, top-p, min-p",
         manual="the order inside the sampler is not observable over HTTP; the sampler's unit tests check it"),
    rule("sampling.cli", SAMPLING_REQ, "lse takes --top-k, --top-p, --min-p, --presence-penalty, "
         "--repeat-penalty, --temperature", manual=IN_PROCESS),
)

FALLBACK_ROWS = (
    LogLine(id="log.cpu_fallback", cite=FALLBACK, pattern=r"lse: CPU FALLBACK \((\d+) so far for this cause\): (.+)",
            needs=("log",),
            text="the log prints the line the first time a cause occurs and again at each power of two"),
    rule("fallback.warnings", FALLBACK, "a response whose request caused a fallback carries lse_warnings"),
    rule("fallback.status", FALLBACK, "lse_status counts every cause under engine.cpu_fallback with allowed"),
    FallbackCase(id="fallback.no_backend", cite=NO_FALLBACK, case="no --pool, no device backend comes up",
                 without_option="the CPU backend runs the model; a startup warning names each declined backend",
                 with_option="startup fails: no device backend came up and CPU fallback is disabled",
                 text="no device backend", needs=("process",)),
    FallbackCase(id="fallback.cpu_pool", cite=NO_FALLBACK, case="--pool names cpu:0",
                 without_option="the CPU device is a pool member",
                 with_option="startup fails: device cpu:0 is refused", text="cpu in the pool", needs=("process",)),
    FallbackCase(id="fallback.pool_down", cite=NO_FALLBACK, case="--pool hrx:0 does not come up",
                 without_option="startup fails naming the device", with_option="the same",
                 text="pool device down", needs=("process",)),
    FallbackCase(id="fallback.missing_kernel", cite=NO_FALLBACK, case="an operation has no device kernel",
                 without_option="it runs on the CPU and is reported",
                 with_option="the request fails: HTTP 500 server_error 'CPU fallback disabled: ...'",
                 text="missing kernel", needs=("fallback_refused",)),
    rule("fallback.env", NO_FALLBACK, "LSE_REQUIRE_DEVICE_KERNELS=1 has the option's effect, the option left out",
         needs=("process",)),
    rule("fallback.exit", NO_FALLBACK, "lse exits 1 on a failed startup (lse_open returns NULL: the C API's "
         "side, tests/e2e/test_capi.py)", needs=("process",)),
)

SURFACE_ROWS = (
    rule("auth.open", AUTH, "without --api-key the API is open", needs=("open",)),
    rule("auth.bearer", AUTH, "with a key set every /v1 route requires Authorization: Bearer <key>",
         needs=("auth",)),
    rule("auth.health", AUTH, "/health is always reachable, key or not"),
    rule("surface.sdk", Cite(OPENAI_API, "OpenAI-compatible API"), "responses keep OpenAI's fields and types, "
         "so SDKs work by changing the base URL; LSE's extensions use their own names"),
    rule("surface.shared_json", TITLE, "fields outside OpenAI's schema (stop_reason, lse_context, timings, "
         "lse_warnings) are additions: the OpenAI fields keep OpenAI's names"),
    rule("surface.chat_endpoint", Cite(OPENAI_API, "POST /v1/chat/completions"),
         "POST /v1/chat/completions answers a chat completion"),
    rule("surface.no_template", THINKING_MODELS, "a model with no template (source null) has no chat: "
         "/v1/chat/completions is a 400 naming messages; /v1/completions serves it", needs=("no_template",)),
    rule("surface.wrong_method", STYLE_API, "a known route with the wrong method gets an error through the "
         "same envelope (405)"),
    rule("tools.finish", TOOLS, "a turn that calls a tool has finish_reason tool_calls, content null and "
         "tool_calls [{id, type function, function {name, arguments: a JSON string}}]", needs=("probe_tool_call",)),
    rule("tools.malformed", TOOLS, "a malformed tool call comes back as content, delimiters and all",
         needs=("probe_tool_text",)),
    rule("tools.template", TOOLS, "tool syntax comes from the model's chat template",
         manual="a statement about the implementation; the template parser's unit tests check it"),
    rule("gaps.streaming_tools", GAPS, "streamed tool calls come as tool_calls deltas that fold into the "
         "non-streamed reply (LSE's choice; README.md says the lean gap is not LSE's limit)",
         needs=("probe_tool_call",)),
    rule("reasoning.split", Cite(OPENAI_API, "POST /v1/chat/completions > Response"), "the <think> block is "
         "split out into reasoning_content: neither field keeps the think markers", needs=("probe_reasoning",)),
    rule("gaps.concurrency", GAPS, "concurrent requests are all served (queued or interleaved)"),
    rule("gaps.one_model", GAPS, "one process serves one model: /v1/models lists one"),
    rule("auth.loopback", AUTH, "the default bind address is loopback only (127.0.0.1)", needs=("process",)),
    rule("inprocess.error_event", PROMPT_FULL, "over lse_request a refused request arrives as an error event "
         "with status 400 and the same body", manual=IN_PROCESS + "; tests/compile/test_engine.py and "
         "tests/unit/test_request_json.py check it"),
    rule("gaps.multimodal", GAPS, "content is a plain string",
         manual="LSE's issues decide whether to accept content parts (README.md); no behaviour is specified"),
)

OVERRIDE_ROWS = tuple(
    Override(id=f"override.{key}", cite=OVERRIDES, topic=topic, lean=lean, lse=lse, text=f"{topic}: {lse}", **kw)
    for key, topic, lean, lse, kw in (
        ("defaults", "defaults for temperature, top_p, ...", "0.7 / unset",
         "request, generation_config.json, config.json, LSE's neutral defaults (temperature 1.0)", {}),
        ("thinking_unsupported", "thinking: true on a model without thinking controls", "ignored",
         "HTTP 400 thinking_unsupported", {"needs": ("no_thinking",)}),
        ("max_tokens_context", "max_tokens larger than the context", "HTTP 400",
         "accepted; the reply ends at context_full", {}),
        ("completions_default", "max_tokens default on /v1/completions", "16",
         "the same resolution order as chat, no limit of LSE's own", {"needs": ("no_limit",)}),
        ("max_tokens_zero", "max_tokens: 0", "scoring mode",
         "only on /v1/completions with echo and logprobs; elsewhere HTTP 400", {}),
        ("completions_penalties", "penalties on /v1/completions", "none applied",
         "the same fields and defaults as chat; no chat template", {}),
        ("penalties", "presence/frequency penalty", "ignored", "applied as specified", {}),
        ("api_key", "API key variable", "LEAN_API_KEY", "--api-key or LSE_API_KEY", {"needs": ("auth",)}),
    )
)

ROWS = (ERROR_ROWS + STOP_ROWS + LIMIT_ROWS + CONTEXT_ROWS + THINKING_MODEL_ROWS + THINKING_RULES
        + DEFAULT_RULES + SAMPLING_RULES + FALLBACK_ROWS + SURFACE_ROWS + OVERRIDE_ROWS)
