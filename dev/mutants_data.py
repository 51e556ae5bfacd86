"""The mutants of ``python dev/mutants.py``: one realistic bug each, as
data. ``original`` must occur exactly once in ``file`` (the tool refuses the
mutant otherwise, so a refactor shows up as a list of snippets to re-target);
keep snippets to the one line or expression the bug changes. ``section`` is
the spec section the bug violates; ``servers`` the servers of the kit's matrix
(``lse.spec.matrix``) whose rows cover it, tried in order until one kills it.
"""

from __future__ import annotations

from dataclasses import dataclass

LSE = "lse-api.md § "
OAI = "openai-compatible-api.md § "
OVR = "README.md § Where the two differ"

# Server names of lse.spec.matrix.SERVERS.
CAP = "smollm_like"  # 512 context, key, cap 64
DEF = "smollm_like-default"  # 4096 context, open, no cap
Q38, Q36, EFF = "qwen38_like", "qwen36_like", "effort_levels"
NOTPL, MAXNEW, MAXLEN, GREEDY = "no_template", "gen_max_new", "gen_max_length", "gen_greedy"
EMB, PREC = "gen_embedded", "defaults_precedence"
TOOL, BADTOOL, REASON = "scripted_tool_call", "scripted_bad_tool_call", "scripted_reasoning"
FB, NOFB = "llama-fallback", "llama-no-fallback"
STARTUP = "startup"  # the startup rows, run as processes
TIMEOUT = "smollm_like-timeout"  # every generation past a 1 ms --request-timeout-secs
EMBEDDINGS = "docs/api.md § Embeddings"  # LSE's own API document (the spec has no such route)


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str
    replacement: str
    section: str
    servers: tuple[str, ...]


def m(id_: str, file: str, original: str, replacement: str, section: str, *servers: str) -> Mutant:
    return Mutant(id_, file, original, replacement, section, servers)


LIMITS, RFULL, PFULL = LSE + "Output limits", LSE + "Context full > A reply that fills the context", \
    LSE + "Context full > A prompt that fills the context"
TH_MODELS, TH_REQ = LSE + "Thinking levels > /v1/models", LSE + "Thinking levels > Request fields"
DEFAULTS, NEUTRAL, SAMPLING = LSE + "Sampling defaults", LSE + "Sampling defaults > LSE's neutral defaults", \
    LSE + "Sampling defaults > Request fields"
FALLBACK, NOFALLBACK = LSE + "CPU fallback", LSE + "CPU fallback > --no-cpu-fallback"
CHAT_REQ, CHAT_RESP, STREAM = OAI + "POST /v1/chat/completions > Request", \
    OAI + "POST /v1/chat/completions > Response", OAI + "POST /v1/chat/completions > Streaming"

MUTANTS: tuple[Mutant, ...] = (
    # --- lse-api.md: Output limits ---------------------------------------------------------------
    m("limits.cap_off_by_one", "runtime/limits.py", "if operator_cap > 0 and max_tokens > operator_cap:",
      "if operator_cap > 0 and max_tokens >= operator_cap:", LIMITS, CAP),
    m("limits.cap_not_enforced", "runtime/limits.py", "if operator_cap > 0 and max_tokens > operator_cap:",
      "if False:", LIMITS, CAP),
    m("limits.cap_not_a_default", "runtime/limits.py", "limit: int | None = operator_cap",
      "limit: int | None = max_new_tokens", LIMITS, CAP),
    m("limits.cap_param_spelling", "runtime/limits.py", 'raise invalid("max_tokens", f"{field} is',
      'raise invalid(field, f"{field} is', LIMITS, CAP),
    m("limits.max_new_ignored", "runtime/limits.py", "        limit = max_new_tokens",
      "        limit = None", LIMITS, MAXNEW),
    m("limits.max_length_off_by_one", "runtime/limits.py", "by_length = max(0, max_length - prompt_tokens)",
      "by_length = max(0, max_length - prompt_tokens + 1)", LIMITS, MAXLEN),
    m("limits.max_length_bounds_request", "runtime/limits.py", "        return request_max_tokens",
      "        return request_max_tokens if max_length is None else min(request_max_tokens, "
      "max(1, max_length - prompt_tokens))", LIMITS, MAXLEN),
    m("limits.context_reason_max_tokens", "runtime/limits.py", "return TokenLimit(room, CONTEXT_FULL)",
      "return TokenLimit(room, MAX_TOKENS)", RFULL, DEF, CAP),
    m("limits.tie_is_context_full", "runtime/limits.py", "if limit is not None and limit <= room:",
      "if limit is not None and limit < room:", LIMITS, DEF, CAP),
    m("limits.no_room_for_context", "runtime/limits.py", "room = context_length - prompt_tokens",
      "room = context_length - prompt_tokens + 1", LIMITS, DEF, CAP),
    m("sequence.max_length_samples_one", "runtime/sequence.py", "if self.limit.max_new <= 0:",
      "if self.limit.max_new < 0:", LIMITS, MAXLEN),
    m("sequence.limit_off_by_one", "runtime/sequence.py", "if len(self.generated) >= self.limit.max_new:",
      "if len(self.generated) > self.limit.max_new:", LIMITS, DEF),
    m("sequence.eos_reason", "runtime/sequence.py", 'return self._end("stop", "stop_token")',
      'return self._end("stop", "max_tokens")', LIMITS, DEF, TOOL),
    m("sequence.stop_string_reason", "runtime/sequence.py", '"stop", "stop_sequence", flush=False',
      '"length", "max_tokens", flush=False', LIMITS, DEF),
    m("stops.stop_string_kept", "runtime/stops.py", "return buf[:cut], True", "return buf, True", LIMITS, DEF),
    m("request.completion_tokens_wins", "runtime/openai/request.py",
      'field = "max_tokens" if "max_tokens" in sent else "max_completion_tokens"',
      'field = "max_completion_tokens" if "max_completion_tokens" in sent else "max_tokens"', LIMITS, DEF),
    m("request.max_tokens_zero_on_chat", "runtime/openai/request.py", "if value == 0 and not scoring_allowed:",
      "if value == 0 and False:", LIMITS, DEF),
    m("request.null_limit_refused", "runtime/openai/request.py", "        if value is None:\n            continue",
      "        if value is None and name not in body:\n            continue", LIMITS, DEF),
    # --- lse-api.md: Context full ----------------------------------------------------------------
    m("limits.prompt_fits_off_by_one", "runtime/limits.py", "if prompt_tokens >= context_length:\n        raise LseError",
      "if prompt_tokens > context_length:\n        raise LseError", PFULL, DEF, CAP),
    m("limits.tokens_used_is_context", "runtime/limits.py",
      'extra={"lse_context": lse_context(prompt_tokens, context_length)}',
      'extra={"lse_context": lse_context(context_length, context_length)}', PFULL, DEF, CAP),
    m("limits.context_param_messages", "runtime/limits.py", "            param=param,",
      '            param="messages",', PFULL, DEF, CAP),
    m("state.tokens_used_reply_only", "runtime/request_state.py", "tokens_used=max(s.tokens_used for s in self.seqs),",
      "tokens_used=max(len(s.generated) for s in self.seqs),", RFULL, DEF),
    # In the wire layer's lse_context now (ReplyStream builds the reply's through it from RequestState's totals); its other
    # callers (the context_full errors of limits.py and bounds.py) report a prompt at or past the context,
    # whose tokens_remaining is 0 either way, so only the reply's changes, as before.
    m("state.remaining_off_by_one", "runtime/openai/replies.py",
      '"tokens_remaining": max(0, context_length - used)',
      '"tokens_remaining": max(0, context_length - used - 1)', RFULL, DEF),
    m("sequence.limit_finish_stop", "runtime/sequence.py", 'return deltas + self._end("length", self.limit.stop_reason)',
      'return deltas + self._end("stop", self.limit.stop_reason)', RFULL, DEF),
    # --- lse-api.md: Thinking levels -------------------------------------------------------------
    m("thinking.default_is_last", "runtime/chat/thinking.py",
      "    return info.level(info.default_level) if info.default_level else None",
      "    return info.levels[-1] if info.levels else None", LSE + "Thinking levels", Q38),
    m("thinking.false_is_default", "runtime/chat/thinking.py", 'level = info.level("none")',
      "level = info.level(info.default_level)", TH_REQ, Q38),
    m("thinking.conflict_ignored", "runtime/chat/thinking.py", "if switch is not None and switch[1] != thinks:",
      "if False:", TH_REQ, Q38),
    m("thinking.alias_reasoning_effort", "runtime/chat/thinking.py",
      '("chat_template_kwargs", "reasoning_effort"), ("reasoning", "effort"))',
      '("chat_template_kwargs", "reasoning_effort"))', TH_REQ, Q38),
    m("thinking.unsupported_code", "runtime/chat/thinking.py", 'raise _error("unsupported_reasoning_effort",',
      'raise _error("invalid_thinking",', TH_REQ, Q38),
    m("thinking.error_without_levels", "runtime/chat/thinking.py", 'extra={"levels": info.level_ids}',
      "extra=None", TH_REQ, Q38, DEF),
    m("thinking.none_refused_without_controls", "runtime/chat/thinking.py",
      'if value == "none":  # the model already doesn\'t think', 'if value == "off":', TH_REQ, DEF),
    m("thinking.completions_checks_template", "runtime/chat/thinking.py",
      "        asked = switch[1] if switch is not None else",
      "        if effort is not None and not info.level(effort[1]):\n"
      '            raise _error("unsupported_reasoning_effort", "undefined level", effort[0], info)\n'
      "        asked = switch[1] if switch is not None else", TH_REQ, DEF),
    m("thinking.default_flag_inverted", "runtime/chat/thinking.py", "default=sid == default_id,",
      "default=sid != default_id,", TH_MODELS, Q38),
    m("thinking.instruction_dropped", "runtime/chat/thinking.py", "instruction=instruction_of(p.body, baseline),",
      "instruction=None,", TH_MODELS, Q38),
    m("thinking.never_opens_reasoning", "runtime/chat/thinking.py",
      "opens_reasoning=opens_reasoning(p.generation_prompt, markers),", "opens_reasoning=False,",
      OAI + "Leave room for thinking in max_tokens", Q38),
    m("prepare.level_not_rendered", "runtime/prepare.py", 'kwargs = {**user["kwargs"], **template_kwargs_for(level)}',
      'kwargs = dict(user["kwargs"])', LSE + "Thinking levels", Q38),
    m("prepare.opens_from_default", "runtime/prepare.py",
      "opens = level.opens_reasoning if level is not None else model.thinking.opens_reasoning",
      "opens = model.thinking.opens_reasoning", OAI + "Leave room for thinking in max_tokens", Q38),
    m("template.tokenizer_config_ignored", "runtime/chat/template.py",
      'if tok_config.get("chat_template") is not None:', "if False:", LSE + "Thinking levels", Q36),
    # --- lse-api.md: Sampling defaults -----------------------------------------------------------
    m("defaults.embedded_after_top_level", "runtime/chat/defaults.py",
      '(CONFIG, embedded if isinstance(embedded, dict) else {}),\n        (CONFIG, config),',
      '(CONFIG, config),\n        (CONFIG, embedded if isinstance(embedded, dict) else {}),', DEFAULTS, PREC),
    m("defaults.config_before_generation_config", "runtime/chat/defaults.py",
      "(GENERATION_CONFIG, _read(model_dir / GENERATION_CONFIG)),\n        (CONFIG, embedded",
      "(CONFIG, embedded", DEFAULTS, PREC),
    m("defaults.source_mislabelled", "runtime/chat/defaults.py", "        (CONFIG, config),",
      "        (GENERATION_CONFIG, config),", LSE + "Sampling defaults > /v1/models", PREC),
    m("defaults.model_max_length_as_limit", "runtime/chat/defaults.py", "        (CONFIG, config),\n    ]",
      "        (CONFIG, config),\n        (GENERATION_CONFIG, {\"max_length\": _read(model_dir / "
      "\"tokenizer_config.json\").get(\"model_max_length\")}),\n    ]", LIMITS, DEF),
    m("defaults.do_sample_ignored", "runtime/chat/defaults.py", "if do_sample is not None and do_sample[0] is False:",
      "if False:", DEFAULTS, GREEDY),
    m("defaults.server_option_source", "runtime/chat/defaults.py", "values[name], sources[name] = coerced, SERVER_OPTION",
      "values[name], sources[name] = coerced, LSE_DEFAULT", DEFAULTS, EMB),
    m("defaults.neutral_top_k", "runtime/chat/defaults.py", '"top_k": (0, int),', '"top_k": (40, int),', NEUTRAL, DEF),
    m("defaults.neutral_temperature", "runtime/chat/defaults.py", '"temperature": (1.0, float),',
      '"temperature": (0.7, float),', NEUTRAL, DEF),
    m("request.defaults_override_request", "runtime/openai/request.py",
      "return getattr(defaults, name) if value is None else value", "return getattr(defaults, name)", SAMPLING, DEF),
    m("request.frequency_scaled", "runtime/openai/request.py", "repetition = 1.0 + parsed.frequency_penalty",
      "repetition = 1.0 + 2.0 * parsed.frequency_penalty", SAMPLING, DEF),
    m("request.frequency_beats_repetition", "runtime/openai/request.py",
      "if repetition is None and parsed.frequency_penalty is not None",
      "if parsed.frequency_penalty is not None", SAMPLING, DEF),
    m("sampler.presence_window_32", "runtime/sampler.py", "PENALTY_WINDOW = 64", "PENALTY_WINDOW = 32", SAMPLING, DEF),
    m("sampler.presence_window_65", "runtime/sampler.py", "PENALTY_WINDOW = 64", "PENALTY_WINDOW = 65", SAMPLING, DEF),
    m("sampler.presence_ignored", "runtime/sampler.py", "out[seen] = vals - presence_penalty", "out[seen] = vals",
      SAMPLING, DEF),
    m("sampler.top_k_minus_one", "runtime/sampler.py", "if k <= 0 or k >= logits.shape[0]:",
      "if k == 0 or k >= logits.shape[0]:", SAMPLING, DEF),
    m("sampler.min_p_loose", "runtime/sampler.py", "floor = logits.max() + np.log(min_p)",
      "floor = logits.max() + np.log(min_p) - 1.0", SAMPLING, DEF),
    m("sampler.seed_shared_by_choices", "runtime/sampler.py", "return np.random.default_rng([seed, choice_index])",
      "return np.random.default_rng(seed)", OAI + "Not supported yet", DEF),
    m("request.top_k_below_minus_one", "runtime/openai/request.py", 'top_k=_integer(body, "top_k", -1, None),',
      'top_k=_integer(body, "top_k", -2, None),', SAMPLING, DEF),
    # --- lse-api.md: CPU fallback ----------------------------------------------------------------
    m("fallback.log_first_only", "runtime/fallback.py", "if n & (n - 1) == 0:", "if n == 1:", FALLBACK, FB),
    m("fallback.warnings_dropped", "runtime/openai/reply_stream.py", 'extra["lse_warnings"] = warnings_for(t.fallbacks)',
      "pass", FALLBACK, FB),
    m("fallback.warning_count_one", "runtime/fallback.py", '{"type": "cpu_fallback", "cause": c, "count": n}',
      '{"type": "cpu_fallback", "cause": c, "count": 1}', FALLBACK, FB),
    m("fallback.total_counts_causes", "runtime/fallback.py", '"total": sum(e["count"] for e in events)',
      '"total": len(events)', FALLBACK, FB),
    m("fallback.allowed_always_true", "runtime/fallback.py", 'return {"allowed": self.allowed,',
      'return {"allowed": True,', NOFALLBACK, NOFB),
    m("fallback.refusal_code", "runtime/errors.py",
      '"cpu_fallback_disabled": (500, "server_error", "cpu_fallback_disabled"),',
      '"cpu_fallback_disabled": (500, "server_error", "generation_failed"),', NOFALLBACK, NOFB),
    m("fallback.refusal_message", "runtime/fallback.py", 'f"CPU fallback disabled: {cause}"',
      'f"CPU fallback refused: {cause}"', NOFALLBACK, NOFB),
    m("fallback.refusal_ignored", "runtime/fallback.py", "        if not self.allowed:\n            raise",
      "        if False:\n            raise", NOFALLBACK, NOFB),
    m("devices.cpu_pool_allowed", "runtime/devices.py", "        if disable_cpu_fallback:\n            raise DeviceError(f\"device {spec} is refused",
      "        if False:\n            raise DeviceError(f\"device {spec} is refused", NOFALLBACK, STARTUP),
    m("devices.no_backend_serves_anyway", "runtime/devices.py",
      "    if disable_cpu_fallback:\n        raise DeviceError(f\"no device backend came up",
      "    if False:\n        raise DeviceError(f\"no device backend came up", NOFALLBACK, STARTUP),
    m("engine.env_switch_ignored", "runtime/engine.py", 'os.environ.get("LSE_REQUIRE_DEVICE_KERNELS") == "1"',
      'os.environ.get("LSE_REQUIRE_DEVICE_KERNELS") == "true"', NOFALLBACK, STARTUP),
    m("cli.lse_exits_zero", "runtime/cli.py", '        print(f"lse: startup failed: {e}", file=sys.stderr)\n        return 1',
      '        print(f"lse: startup failed: {e}", file=sys.stderr)\n        return 0', NOFALLBACK, STARTUP),
    m("cli.binds_everywhere", "api/cli.py", 'p.add_argument("--host", default="127.0.0.1"',
      'p.add_argument("--host", default="0.0.0.0"', OAI + "Authentication", STARTUP),
    # --- docs/api.md: Embeddings (the smollm_like server runs --embeddings; -default shows the 501) ---
    m("embeddings.dimensions_not_renormalised", "runtime/embeddings/pooling.py",
      "return (v / norm if norm > 0 else v).astype(np.float32)", "return v.astype(np.float32)", EMBEDDINGS, CAP),
    m("embeddings.base64_big_endian", "runtime/embeddings/pooling.py", 'v.astype("<f4").tobytes()',
      'v.astype(">f4").tobytes()', EMBEDDINGS, CAP),
    m("embeddings.usage_first_input", "runtime/embeddings/service.py",
      "tokens = sum(len(p) for p in parsed.prompts)", "tokens = len(parsed.prompts[0])", EMBEDDINGS, CAP),
    m("embeddings.first_row_for_last", "runtime/embeddings/pooling.py", "self.value = rows[-1].copy()",
      "self.value = rows[0].copy()", EMBEDDINGS, CAP),
    m("embeddings.input_cap", "runtime/embeddings/body.py", "MAX_INPUTS = 2048", "MAX_INPUTS = 4096", EMBEDDINGS,
      CAP),
    m("embeddings.disabled_status", "runtime/errors.py",
      '"embeddings_disabled": (501, "not_supported_error", "embeddings_disabled")',
      '"embeddings_disabled": (500, "not_supported_error", "embeddings_disabled")', EMBEDDINGS, DEF),
    # --- openai-compatible-api.md: Authentication ------------------------------------------------
    m("auth.any_scheme", "api/auth.py", 'return scheme.lower() == b"bearer" and hmac.compare_digest',
      "return hmac.compare_digest", OAI + "Authentication", CAP),
    m("auth.health_needs_key", "api/app.py", "return handler in (self.health, self.openapi.docs) or (",
      "return handler in (self.openapi.docs,) or (", OAI + "Authentication", CAP),
    m("auth.error_type", "runtime/errors.py", '"unauthorized": (401, "authentication_error", "invalid_api_key"),',
      '"unauthorized": (401, "invalid_request_error", "invalid_api_key"),', OAI + "Authentication", CAP),
    # --- openai-compatible-api.md: requests and responses ----------------------------------------
    m("request.seed_negative", "runtime/openai/request.py", 'seed=_integer(body, "seed", 0, None),',
      'seed=_integer(body, "seed", -5, None),', CHAT_REQ, DEF),
    m("request.stream_options_without_stream", "runtime/openai/request.py", "    if not stream:\n        raise invalid",
      "    if False:\n        raise invalid", STREAM, DEF),
    m("template.role_tool_only", "runtime/chat/template.py", 'ROLES = ("system", "developer", "user", "assistant", "tool")',
      'ROLES = ("system", "developer", "user", "assistant", "tool", "robot")', CHAT_REQ, DEF),
    m("responses.chat_id_prefix", "runtime/openai/replies.py", '("chatcmpl-" if endpoint == CHAT else "cmpl-")',
      '("cmpl-" if endpoint == CHAT else "cmpl-")', CHAT_RESP, DEF),
    m("responses.reasoning_empty_string", "runtime/openai/replies.py",
      '        if acc.get("reasoning_content"):\n            message["reasoning_content"] = acc["reasoning_content"]',
      '        message["reasoning_content"] = acc.get("reasoning_content", "")', CHAT_RESP, DEF),
    m("responses.tool_turn_content_empty", "runtime/openai/replies.py", 'message["content"] = acc.get("content") or None',
      'message["content"] = acc.get("content", "")', OAI + "Tool calling", TOOL),
    m("sequence.tool_calls_finish", "runtime/sequence.py",
      'if finish_reason == "stop" and self.parser.has_tool_calls:',
      "if False:", OAI + "Tool calling", TOOL),
    m("prepare.tool_choice_none_parsed", "runtime/prepare.py",
      'model.tool_markers if parsed.tools and parsed.tool_choice != "none" else None',
      "model.tool_markers if parsed.tools else None", OAI + "Tool calling", TOOL),
    m("output.malformed_call_dropped", "runtime/chat/output.py",
      'self._text("content", self._tool_ws + open_ + body + close)', "pass", OAI + "Tool calling", BADTOOL),
    m("state.prompt_counted_per_choice", "runtime/request_state.py",
      "prompt_tokens=sum(len(s.prompt_ids) for s in prompts),",
      "prompt_tokens=sum(len(s.prompt_ids) for s in self.seqs),", CHAT_RESP, DEF),
    m("engine.model_not_echoed", "runtime/engine.py", "RequestState(endpoint, model or self.model_id,",
      "RequestState(endpoint, self.model_id,", CHAT_REQ, DEF),
    m("responses.chunk_object", "runtime/openai/replies.py",
      'obj = "chat.completion.chunk" if endpoint == CHAT else "text_completion"',
      'obj = "chat.completion" if endpoint == CHAT else "text_completion"', STREAM, DEF),
    m("state.no_role_delta", "runtime/openai/reply_stream.py", '{"role": "assistant", "content": ""}', '{"content": ""}',
      STREAM, DEF),
    m("state.usage_chunk_always", "runtime/openai/reply_stream.py", "            if self.include_usage:",
      "            if True:", STREAM, DEF),
    m("sse.no_done", "api/sse.py", "    return [DONE_FRAME]\n", "    return []\n", STREAM, DEF),
    m("sse.error_without_done", "api/sse.py", 'return [frame(last["data"]), DONE_FRAME]',
      'return [frame(last["data"])]', STREAM, NOFB),
    m("prepare.echo_ignored", "runtime/prepare.py", "if endpoint != CHAT and parsed.echo:", "if False:",
      OAI + "POST /v1/completions", DEF),
    m("request.logprobs_six", "runtime/openai/request.py", "MAX_COMPLETION_LOGPROBS = 5", "MAX_COMPLETION_LOGPROBS = 6",
      OAI + "POST /v1/completions", DEF),
    m("request.scoring_without_logprobs", "runtime/openai/request.py",
      'scoring_allowed = not chat and echo and body.get("logprobs") is not None',
      "scoring_allowed = not chat and echo", OVR, DEF),
    # The sampled token's alternatives (Sequence._logprob_entry) now come from sampler.token_logprobs,
    # which the echoed prompt's share: the extra one is asked for at the sampled call only, as before.
    m("sequence.top_alternatives_extra", "runtime/sequence.py",
      "lp, top = token_logprobs(logits, token, self.logprobs.top)",
      "lp, top = token_logprobs(logits, token, self.logprobs.top + 1 if self.logprobs.top else 0)",
      OAI + "OpenAI-compatible API", DEF),
    # The echoed prompt's logprobs moved from Request.add_prompt_logprobs to Sequence.score_prompt_rows.
    m("state.echo_first_logprob", "runtime/sequence.py",
      'self.pending_logprobs.append({"token": ids[0], "logprob": None,',
      'self.pending_logprobs.append({"token": ids[0], "logprob": 0.0,', OAI + "POST /v1/completions", DEF),
    m("limits.lean_context_cap", "runtime/limits.py", "        check_operator_cap(request_max_tokens, operator_cap)",
      "        check_operator_cap(request_max_tokens, operator_cap or 4096)", OVR, DEF),
    # The list is built by the wire layer now (replies.model_list, which app.py's models route calls).
    m("app.models_object", "runtime/openai/replies.py", 'return {"object": "list", "data": [entry]}',
      'return {"object": "models", "data": [entry]}', OAI + "GET /v1/models", DEF),
    m("app.any_model_id", "api/app.py", 'if wanted != entry["id"]:', "if False:", OAI + "GET /v1/models", DEF),
    m("app.health_body", "api/app.py", 'return json_response(200, {"status": "ok"})',
      'return json_response(200, {"status": "ready"})', OAI + "GET /health", DEF),
    m("errors.invalid_json_code", "runtime/errors.py", '"malformed_json": (400, "invalid_request_error", "invalid_json"),',
      '"malformed_json": (400, "invalid_request_error", None),', OAI + "Errors", DEF),
    m("errors.no_param", "runtime/errors.py", '        "param": param,\n', "", OAI + "Errors", DEF),
    m("errors.not_found_type", "runtime/errors.py", '"not_found": (404, "not_found_error", "not_found"),',
      '"not_found": (404, "invalid_request_error", "not_found"),', OAI + "Errors", DEF),
    m("errors.timeout_status", "runtime/errors.py", '"request_timeout": (408, "timeout_error", "request_timeout"),',
      '"request_timeout": (504, "timeout_error", "request_timeout"),', OAI + "Errors", TIMEOUT),
    m("sse.timeout_without_done", "api/sse.py", "return [frame(guard.timeout_error().body()), DONE_FRAME]",
      "return [frame(guard.timeout_error().body())]", STREAM, TIMEOUT),
    m("request.n_max_eight", "runtime/openai/request.py", "MAX_N = 16", "MAX_N = 8", OAI + "Not supported yet", DEF),
    m("format.logit_bias_bound", "runtime/request_format.py", "LOGIT_BIAS_BOUND = 100.0", "LOGIT_BIAS_BOUND = 200.0",
      OAI + "Not supported yet", DEF),
    m("sampler.logit_bias_ban_soft", "runtime/sampler.py", "out[ids[vals <= -100.0]] = -np.inf", "pass",
      OAI + "Not supported yet", DEF),
)
