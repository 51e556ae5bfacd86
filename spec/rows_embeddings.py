"""Rows of POST /v1/embeddings (docs/api.md, "Embeddings"): its request
fields, reply, pooling and errors. No scenario module drives them over HTTP
yet: each row is ``manual``, naming the test that checks it
(tests/e2e/test_embeddings_openai.py with the openai SDK against a live
server, tests/unit/test_embeddings.py on the host interpreter against the
numpy reference). LSE's choices where OpenAI's documents are silent are in
SETTLED."""

from __future__ import annotations

from lse.spec.rows import API_DOC, Cite, ErrorCode, Rule

EMBEDDINGS = Cite(API_DOC, "Embeddings")
E2E = "tests/e2e/test_embeddings_openai.py"
UNIT = "tests/unit/test_embeddings.py"


def rule(id_: str, text: str, test: str) -> Rule:
    return Rule(id=f"embeddings.{id_}", cite=EMBEDDINGS, text=text, manual=f"checked by {test}")


def bad(id_: str, when: str, param: str, code: str | None = None, status: int = 400,
        etype: str = "invalid_request_error", test: str = UNIT) -> ErrorCode:
    return ErrorCode(id=f"embeddings.err.{id_}", cite=EMBEDDINGS, status=status, type=etype, code=code,
                     when=f"/v1/embeddings: {when}; param {param}",
                     text=f"HTTP {status} {etype} {code}: /v1/embeddings {when} (param {param})",
                     manual=f"checked by {test} (test_body_errors)" if test == UNIT else f"checked by {test}")


ROWS = (
    rule("input.string", "input: a string embeds one input, tokenized with the tokenizer's special tokens", E2E),
    rule("input.strings", "input: an array of strings embeds each, the reply's data in input order", E2E),
    rule("input.ids", "input: an array of token ids is one input, used as given; an array of arrays is several",
         E2E),
    rule("encoding.float", "encoding_format float (the default): each embedding a JSON array of numbers", E2E),
    rule("encoding.base64", "encoding_format base64: the embedding's little-endian float32 bytes, base64", E2E),
    rule("dimensions", "dimensions N: the first N values, L2-normalised again", E2E),
    rule("model", "model: accepted and echoed back in the reply's model", E2E),
    rule("reply", "the reply: object list, data [{object embedding, index, embedding}], model, "
         "usage {prompt_tokens, total_tokens} (the inputs' tokens); the openai SDK's type in strict mode", E2E),
    rule("vector", "each embedding is the pooled final RMSNorm output of the input's rows, L2-normalised: equal "
         "to the numpy reference's", UNIT),
    rule("pooling", "pooling: --pooling, else the model's files (1_Pooling/config.json, config.json "
         "pooling_type), else last; mean and last over several prefill chunks", UNIT),
    rule("scheduling", "inputs beyond the slots run a window at a time through the scheduler; none is left in "
         "a slot or the queue afterwards", UNIT),
    bad("empty", "input missing, \"\", [] or an empty element", "input or input[i]"),
    bad("shape", "input of another shape (a number, mixed strings and ids, booleans)", "input"),
    bad("vocab", "a token id outside the vocabulary", "input or input[i]"),
    bad("too_many", "more than 2048 inputs", "input"),
    bad("context", "an input longer than the context", "input or input[i]", code="context_full"),
    bad("encoding", "encoding_format other than float or base64", "encoding_format"),
    bad("dimensions", "dimensions below 1 or above the hidden size, or not an integer", "dimensions"),
    bad("disabled", "the server was started without --embeddings", "null", code="embeddings_disabled",
        status=501, etype="not_supported_error", test=E2E),
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
    "embeddings.dimensions": "OpenAI truncates Matryoshka models; LSE truncates any model and renormalises, and "
                             "refuses N above the hidden size (400 dimensions)",
}
