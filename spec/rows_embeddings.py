"""Rows of POST /v1/embeddings (docs/api.md, "Embeddings"): its request
fields, reply, pooling and errors. scenarios_embeddings checks them over
HTTP on a server started with --embeddings (``needs`` embeddings) and the
501 on one without (``no_embeddings``); the facts' probe (facts.py) tells
them apart. The rows no HTTP client can see name their test (``manual``):
the vector against the numpy reference and the pooling choice
(tests/unit/test_embeddings.py), the window a request's inputs take through
the queue, the timeout and the full queue, and the replies read by the SDK's own types in strict mode.
LSE's choices where OpenAI's documents are silent are in SETTLED."""

from __future__ import annotations

from lse.spec.rows import API_DOC, Cite, ErrorCode, Rule

EMBEDDINGS = Cite(API_DOC, "Embeddings")
E2E = "tests/e2e/test_embeddings_openai.py"
UNIT = "tests/unit/test_embeddings.py"
LIVE = ("embeddings",)


def rule(id_: str, text: str, test: str | None = None) -> Rule:
    if test is None:
        return Rule(id=f"embeddings.{id_}", cite=EMBEDDINGS, text=text, needs=LIVE)
    return Rule(id=f"embeddings.{id_}", cite=EMBEDDINGS, text=text, manual=f"checked by {test}")


def bad(id_: str, when: str, param: str, code: str | None = None, status: int = 400,
        etype: str = "invalid_request_error", needs: tuple[str, ...] = LIVE) -> ErrorCode:
    return ErrorCode(id=f"embeddings.err.{id_}", cite=EMBEDDINGS, status=status, type=etype, code=code,
                     when=f"/v1/embeddings: {when}; param {param}",
                     text=f"HTTP {status} {etype} {code}: /v1/embeddings {when} (param {param})", needs=needs)


ROWS = (
    rule("input.string", "input: a string embeds one input, tokenized with the tokenizer's special tokens "
         "(its ids from /tokenize with add_special give the same vector)"),
    rule("input.strings", "input: an array of strings embeds each, the reply's data in input order (each "
         "input's vector as when embedded alone)"),
    rule("input.ids", "input: an array of token ids is one input, used as given; an array of arrays is several"),
    rule("encoding.float", "encoding_format float (the default): each embedding a JSON array of numbers, "
         "L2-normalised, of the model's hidden size"),
    rule("encoding.base64", "encoding_format base64: the embedding's little-endian float32 bytes, base64"),
    rule("dimensions", "dimensions N (1 to the hidden size): the first N values, L2-normalised again, for any "
         "model (no check that it was trained for truncation)"),
    rule("model", "model: accepted and echoed back in the reply's model"),
    rule("user", "user: accepted and ignored (the same vector as without it)"),
    rule("reply", "the reply: exactly {object list, data [{object embedding, index, embedding}], model, usage "
         "{prompt_tokens, total_tokens}}, both counts the inputs' tokens"),
    rule("openapi", "/openapi.json lists POST /v1/embeddings exactly when the server serves it (--embeddings)"),
    rule("sdk_types", "every reply (float and base64, one input and several) and error fits the openai SDK's own "
         "types (CreateEmbeddingResponse, ErrorObject) in strict mode", f"{UNIT} (test_replies_fit_the_sdk_types) "
         f"and {E2E}"),
    rule("vector", "each embedding is the pooled final RMSNorm output of the input's rows, L2-normalised: equal "
         "to the numpy reference's", UNIT),
    rule("pooling", "pooling: --pooling, else the model's files (1_Pooling/config.json, config.json "
         "pooling_type), else last; mean and last over several prefill chunks", UNIT),
    rule("scheduling", "more inputs than the engine has slots are all embedded, in order; afterwards no slot is "
         "busy and nothing is queued (/v1/lse/status)"),
    rule("timeout", "past --request-timeout-secs the reply is 408 request_timeout and the inputs not yet embedded "
         "leave the slots and the queue", f"{UNIT} (test_a_timeout_withdraws_the_inputs_not_yet_embedded)"),
    rule("overloaded", "a first window that does not fit the free slots and --queue-size is 503 server_overloaded, "
         "nothing of the request queued", f"{UNIT} (test_a_window_that_does_not_fit_is_503_overloaded)"),
    rule("window", "a request's inputs enter the queue a window of as many as there are slots at a time, the "
         "window counted against --queue-size, each finished input letting the next in",
         f"{UNIT} (test_the_window_counts_against_the_queue)"),
    bad("empty", "input missing, \"\", [] or an empty element", "input or input[i]"),
    bad("shape", "input of another shape (a number, mixed strings and ids, booleans)", "input"),
    bad("vocab", "a token id outside the vocabulary", "input or input[i]"),
    bad("too_many", "more than 2048 inputs", "input"),
    bad("context", "an input longer than the context", "input or input[i]", code="context_full"),
    bad("encoding", "encoding_format other than float or base64", "encoding_format"),
    bad("dimensions", "dimensions below 1 or above the hidden size, or not an integer", "dimensions"),
    bad("disabled", "the server was started without --embeddings (the message names the flag)", "null",
        code="embeddings_disabled", status=501, etype="not_supported_error", needs=("no_embeddings",)),
)

SETTLED = {
    "embeddings.pooling": "OpenAI's documents say nothing of pooling. Decoder embedding models (Qwen3-Embedding) "
                          "pool the last token, so last is the default; --pooling overrides the model's files, "
                          "as llama-server's --pooling overrides the GGUF's pooling_type",
    "embeddings.input.string": "strings get the tokenizer's special tokens (BOS/EOS as its post-processor says), "
                               "as llama-server and sentence-transformers tokenize",
    "embeddings.err.too_many": "2048 inputs a request, OpenAI's cap",
    "embeddings.err.disabled": "llama-server answers 501 not_supported_error without --embeddings; LSE's code "
                               "embeddings_disabled names the cause and the message the flag",
    "embeddings.vector": "the issue asked for an embeddings entry point compiled into the artifact only when "
                         "embeddings are enabled; LSE pools prefill's existing hidden output (the final RMSNorm's "
                         "rows, lm_head's input) instead: no new entry and zero compile cost, so --embeddings never "
                         "recompiles and one cached artifact serves servers with and without it",
    "embeddings.scheduling": "'one prefill batch where the slots allow': the window's inputs are admitted to the free "
                             "slots together and prefilled back to back, one call each (prefill takes one slot), "
                             "with no decode step between them while nothing generates; a multi-slot prefill entry "
                             "is not built (docs/api.md § Embeddings, Batches, has the measurements)",
    "embeddings.dimensions": "OpenAI truncates Matryoshka models; LSE truncates any model and renormalises (no "
                             "check that the model was trained for it: its files do not say; vLLM refuses such "
                             "models, llama-server ignores the field), and refuses N above the hidden size (400 "
                             "dimensions)",
}
