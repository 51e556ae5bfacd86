"""Rows of several models behind one server (issue #40, docs/api.md "Several
models", docs/operating.md "Several models"): the request's `model` picks the
model, unknown names are 404 model_not_found, a model that fails to load
answers 500 model_load_failed alone, /v1/models lists each model's status.

The kit's scenarios drive one served model (its facts come from one
model_info), so these rows are checked by tests/e2e/test_models_openai.py (a
server of two fixtures and a broken one, the openai SDK) and
tests/unit/test_api_models.py (every route over fake engines); what LSE chose
sits in SETTLED, beside each row."""

from __future__ import annotations

from lse.spec.rows import API_DOC, Cite, ErrorCode, Rule

SEVERAL = Cite(API_DOC, "Routes > Several models")
ERRORS = Cite(API_DOC, "Errors")
E2E = ("needs a server of several models (lse-server A B ...), which the kit's one-model scenarios do not "
       "drive; tests/e2e/test_models_openai.py checks it with the openai SDK")


def rule(id_, cite, text, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, manual=E2E, **kw)


def error(id_, status, type_, code, when) -> ErrorCode:
    return ErrorCode(id=id_, cite=ERRORS, status=status, type=type_, code=code, when=when,
                     text=f"HTTP {status} {type_} {code}: {when}", manual=E2E)


ROWS = (
    rule("models.select", SEVERAL, "with several models, the body's model picks the model on every route with "
         "a body (chat, completions, messages, responses, tokenize, detokenize); a reply's tokens are the ones "
         "a single-model server of that model gives"),
    rule("models.default", SEVERAL, "with several models, a request without model gets --default-model, else "
         "the first model"),
    rule("models.single", SEVERAL, "with one model, any model name is accepted and echoed, as a single-model "
         "server answers (req.model)"),
    rule("models.list", SEVERAL, "with several models, /v1/models lists every model with status (loaded, "
         "loading, unloaded, failed with status_reason), context_length, thinking and generation_defaults"),
    rule("models.load_wait", SEVERAL, "a request for a model not loaded waits for its load (a stream gets its "
         "headers and keep-alive comments), its timeout counting the load; concurrent requests share one load"),
    error("models.not_found", 404, "invalid_request_error", "model_not_found",
          "with several models, a request's model that names none of them; param model, models the names "
          "(Anthropic's envelope, not_found_error, on /v1/messages)"),
    error("models.load_failed", 500, "server_error", "model_load_failed",
          "the requested model failed to import, compile or open; the message has the reason, the other "
          "models serve on"),
    error("models.busy", 503, "unavailable_error", "model_busy",
          "POST /v1/lse/models/{name}/unload of a model serving requests, with Retry-After"),
)

SETTLED = {
    "models.select": "the body's model, as Ollama and llama-server's router mode choose; routes without a body "
                     "(tokenizer_info, model_info) answer for the default model",
    "models.default": "a missing model is not an error: OpenAI requires the field but llama-server and Ollama "
                      "clients often leave it out, and a one-model server has always accepted that",
    "models.single": "one model keeps today's behaviour exactly (clients send 'gpt-4o' to local servers); the "
                     "404 only applies where a name must choose",
    "models.list": "unloaded models are listed (clients pick from the list and loading is lazy); their "
                   "context_length, thinking and generation_defaults are null until they have loaded once, "
                   "since reading them needs the model imported",
    "models.load_wait": "the request waits rather than getting 503, as Ollama's requests do; when every loaded "
                        "model is busy and the bounds allow no other, the load waits for an idle one (a queue, "
                        "not a 503, as for a slot)",
    "models.not_found": "OpenAI's code for another model id, with the names in models so a client can say which "
                        "exist (llama-server's router mode lists them too)",
    "models.load_failed": "500 (the server's fault, not the request's) with a code of its own, so a client can "
                          "tell a broken model from a failed generation; it stays failed until a refresh",
    "models.busy": "an unload never cuts running replies; 503 with Retry-After, the status every client treats "
                   "as 'try again later'",
}
