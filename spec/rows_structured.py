"""Rows of structured output and the smaller surface around it: JSON replies
(response_format), forced and forbidden tool calls, logit_bias, one model by
id, and the tokenizer routes. The documents list response_format and
logit_bias among the lean server's gaps and say tool_choice is not enforced
there; LSE's issues build them, so each row carries a SETTLED note."""

from __future__ import annotations

from lse.spec.rows import OPENAI_API, Cite, ErrorCode, Rule

GAPS = Cite(OPENAI_API, "Not supported yet")
TOOLS = Cite(OPENAI_API, "Tool calling")
MODELS = Cite(OPENAI_API, "GET /v1/models")
SURFACE = Cite(OPENAI_API, "OpenAI-compatible API")


def rule(id_, cite, text, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, **kw)


ROWS = (
    rule("structured.json_object", GAPS, "response_format json_object: a reply that ends with finish_reason stop "
         "parses as a JSON object, streamed or not, on both endpoints"),
    rule("structured.json_schema", GAPS, "response_format json_schema: a reply that ends with finish_reason stop "
         "matches the schema (nested objects, enums, required keys, bounded arrays); with n > 1 each choice does"),
    rule("structured.logit_bias_ban", GAPS, "logit_bias -100 on the greedy reply's first token changes the reply"),
    rule("structured.logit_bias_force", GAPS, "logit_bias 100 on one token makes every sampled token that one"),
    rule("tools.forced", TOOLS, "tool_choice required (or a named function): the reply is calls to the offered "
         "tools (that function), finish_reason tool_calls, arguments a JSON object matching the parameters",
         needs=("tool_markers",)),
    rule("tools.none", TOOLS, "tool_choice none: the reply has no tool_calls", needs=("tool_markers",)),
    rule("surface.model_by_id", MODELS, "GET /v1/models/{id} answers the list's entry for the served id"),
    ErrorCode(id="err.model_not_found", cite=MODELS, status=404, type="invalid_request_error",
              code="model_not_found", when="GET /v1/models/{id} for an id the server does not serve; param model",
              text="HTTP 404 invalid_request_error model_not_found: another model id"),
    rule("surface.tokenizer_routes", SURFACE, "POST /tokenize {content, add_special} -> {tokens}, POST /detokenize "
         "{tokens} -> {content}, GET /tokenizer_info -> eos_token and eos_token_id (llama-server shapes; vLLM's "
         "prompt / add_special_tokens spellings too); the key applies as on /v1"),
)

SETTLED = {
    "structured.json_object": "response_format is enforced, not ignored: a grammar compiled once per schema "
                              "masks every step; only a length ending can leave the JSON unfinished",
    "surface.model_by_id": "OpenAI's route; another id is OpenAI's 404 model_not_found (type "
                           "invalid_request_error, param model); an id holding '/' is matched percent-decoded",
    "surface.tokenizer_routes": "llama-server's routes and shapes (the documents name none); vLLM's spellings are "
                                "accepted and /detokenize also answers prompt, because lm-evaluation-harness' "
                                "remote tokenizer speaks vLLM's; special-token text is parsed as special tokens; "
                                "add_special defaults to false",
}
