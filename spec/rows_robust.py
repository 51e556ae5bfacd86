"""Rows of #44's robustness fixes: one request's failure or cost never
reaches its neighbours, bounded grammars, the tokenizer routes' bounds,
reserved template variables, the generic tool-call form, the sampling
defaults' startup note and admission. The documents are silent on each, so
each row carries a SETTLED note (docs/api-robustness.md says the same)."""

from __future__ import annotations

from lse.spec.rows import LSE_API, OPENAI_API, Cite, Rule

ERRORS = Cite(OPENAI_API, "Errors")
TOOLS = Cite(OPENAI_API, "Tool calling")
GAPS = Cite(OPENAI_API, "Not supported yet")
SURFACE = Cite(OPENAI_API, "OpenAI-compatible API")
NEUTRAL = Cite(LSE_API, "Sampling defaults > LSE's neutral defaults")
REQUEST = Cite(OPENAI_API, "POST /v1/chat/completions > Request")


def rule(id_, cite, text, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, **kw)


ROWS = (
    rule("robust.step_isolation", ERRORS, "a failure in one sequence's grammar, sampler or detokenizer ends that "
         "request alone (500 generation_failed, or in its stream); the other sequences of the step stream on, "
         "and no error text names another request's content",
         manual="needs a fault injected into one sequence of a batched step: tests/unit/test_step_isolation.py"),
    rule("robust.grammar_bounds", GAPS, "a schema whose pattern repeats more than 1000 times (counted "
         "repetitions multiplied through their nesting) or longer than 256 KiB as JSON is a 400 naming the field "
         "it came in (response_format, tools[i].function.parameters) before any work",
         manual="tests/unit/test_schema_bounds.py and the reliability battery (pattern-past-the-bound)"),
    rule("robust.schema_terminates", GAPS, "every reply a schema allows ends: an integer without bounds has at "
         "most 16 digits, a number at most 16 before the point and 10 after it, no exponent",
         manual="a mask property: tests/unit/test_schema_bounds.py walks the grammar digit by digit"),
    rule("robust.tokenizer_bounds", SURFACE, "/tokenize: a lone surrogate is a 400 naming content (or prompt); a "
         "text longer than context × the longest token's characters is the context_full 400 before tokenizing; "
         "/detokenize takes at most context_length ids (400 tokens)",
         manual="tests/unit/test_prepare_bounds.py and the reliability battery (tokenize-*, detokenize-*)"),
    rule("robust.template_kwargs_reserved", REQUEST, "chat_template_kwargs may not set messages, tools, "
         "tool_choice or add_generation_prompt: 400 invalid_request_error, param chat_template_kwargs.<key>",
         manual="tests/unit/test_prepare_bounds.py and the reliability battery (template-kwargs-reserved)"),
    rule("robust.generic_tool_calls", TOOLS, "a forced tool call (tool_choice required or a named function) on "
         "a template without tool-call markers takes the generic form: model_info.tool_call_form is generic, "
         "the reply is tool_calls with finish_reason tool_calls",
         manual="tests/unit/test_generic_tools.py and tests/e2e/test_structured_openai.py (generic form)"),
    rule("robust.neutral_defaults_note", NEUTRAL, "when temperature or the token limit come only from LSE's "
         "neutral defaults, startup says so once and names --temperature and --max-tokens; a GGUF's "
         "general.sampling.* keys reach the imported generation_config.json",
         manual="a startup log line: tests/unit/test_sampling_defaults_import.py"),
    rule("robust.admission", ERRORS, "a request is admitted while the free slots plus --queue-size hold its "
         "sequences; a full queue's 503 carries Retry-After, an estimate in seconds (also error.retry_after)",
         manual="needs a burst timed against the scheduler's admission: tests/unit/test_admission.py"),
)

SETTLED = {
    "robust.step_isolation": "as vLLM and llama-server: a per-request failure is that request's; the shared "
                             "step fails everyone only when the backend itself fails",
    "robust.grammar_bounds": "llguidance builds a counted repetition's states lazily, mid-reply; the bound "
                             "refuses what would stall a step, and minLength / maxLength stay unbounded (cheap)",
    "robust.schema_terminates": "llama.cpp's json-schema-to-grammar bounds numbers the same way (16 digits); "
                                "10 fraction digits is llguidance's finest multipleOf",
    "robust.tokenizer_bounds": "the completion routes' bounds and errors, so a client sees one behaviour",
    "robust.template_kwargs_reserved": "vLLM drops such keys silently; a 400 naming the key tells the client why "
                                       "its value is not used",
    "robust.generic_tool_calls": "llama-server's generic handler (common/chat.cpp); auto and none are unchanged",
    "robust.neutral_defaults_note": "the resolution order is the spec's; llama.cpp reads general.sampling.* as "
                                    "a model's defaults, so an imported GGUF keeps them",
    "robust.admission": "an idle server takes a burst of slots + queue as llama-server's slots do; Retry-After "
                        "from the measured rate rather than a constant, as RFC 9110 suggests",
}
