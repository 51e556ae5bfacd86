"""POST /v1/embeddings through the real ``openai`` SDK, unchanged, against a
live server on the smollm_like fixture (compiled for llvm-cpu) started with
--embeddings: a string, a list of strings, token ids, float and base64 (the
SDK decodes base64 itself where it chose it), ``dimensions``; each vector equals the numpy
reference's last-row final hidden state, normalised. A server without
--embeddings answers 501 ``embeddings_disabled``. Replies are validated
against the SDK's own type in strict mode."""

from __future__ import annotations

import base64

import httpx
import numpy as np
import openai
import pytest
from openai.types import CreateEmbeddingResponse
from pydantic import TypeAdapter

KEY = "e2e-embeddings"


@pytest.fixture(scope="module")
def model_dir(fixture_model):
    return fixture_model("smollm_like")


@pytest.fixture(scope="module")
def base_url(lse_server, model_dir):
    with lse_server(model_dir, "--kv-len", "512", "--api-key", KEY, "--embeddings") as (url, _process):
        yield url


@pytest.fixture(scope="module")
def reference(model_dir):
    from lse.runtime.reference import ReferenceModel

    return ReferenceModel.from_dir(model_dir)


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(model_dir / "tokenizer.json"))


@pytest.fixture
def client(base_url):
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key=KEY, max_retries=0) as c:
        yield c


def _expected(reference, ids: list[int], dimensions: int | None = None) -> np.ndarray:
    row = reference.hidden(ids)[-1][:dimensions]
    return row / np.linalg.norm(row)


def test_string_float_and_base64(client, reference, tokenizer):
    ids = tokenizer.encode("The capital of France", add_special_tokens=True).ids
    floats = client.embeddings.create(model="any-name", input="The capital of France", encoding_format="float")
    assert floats.model == "any-name" and floats.object == "list"
    assert (floats.usage.prompt_tokens, floats.usage.total_tokens) == (len(ids), len(ids))
    np.testing.assert_allclose(floats.data[0].embedding, _expected(reference, ids), atol=1e-4)
    b64 = client.embeddings.create(model="any-name", input="The capital of France", encoding_format="base64")
    # asked for explicitly, the SDK hands the base64 text back as it came: little-endian float32
    decoded = np.frombuffer(base64.b64decode(b64.data[0].embedding), "<f4")
    np.testing.assert_array_equal(decoded, np.asarray(floats.data[0].embedding, np.float32))


def test_default_encoding_is_base64_through_the_sdk(client, reference):
    """The SDK asks for base64 when no encoding_format is given, and decodes it into floats."""
    reply = client.embeddings.create(model="m", input=[[5, 6, 7], [8, 9]])
    assert [d.index for d in reply.data] == [0, 1] and isinstance(reply.data[0].embedding, list)
    for d, ids in zip(reply.data, ([5, 6, 7], [8, 9])):
        np.testing.assert_allclose(d.embedding, _expected(reference, ids), atol=1e-4)


def test_list_of_strings_and_dimensions(client, reference, tokenizer):
    texts = ["one", "two words", "and three words"]
    reply = client.embeddings.create(model="m", input=texts, dimensions=16, encoding_format="float")
    assert len(reply.data) == 3
    for d, text in zip(reply.data, texts):
        assert len(d.embedding) == 16
        np.testing.assert_allclose(d.embedding, _expected(reference, tokenizer.encode(text).ids, 16), atol=1e-4)


def test_raw_reply_is_the_sdk_type_and_errors(base_url, model_dir):
    headers = {"authorization": f"Bearer {KEY}"}
    r = httpx.post(f"{base_url}/v1/embeddings", json={"input": [1, 2, 3], "model": "m"}, headers=headers)
    assert r.status_code == 200
    TypeAdapter(CreateEmbeddingResponse).validate_python(r.json(), strict=True)
    r = httpx.post(f"{base_url}/v1/embeddings", json={"input": "a", "dimensions": 0}, headers=headers)
    assert (r.status_code, r.json()["error"]["param"]) == (400, "dimensions")
    r = httpx.post(f"{base_url}/v1/embeddings", json={"input": "a"})
    assert (r.status_code, r.json()["error"]["code"]) == (401, "invalid_api_key")
    metrics = httpx.get(f"{base_url}/metrics", headers=headers).text
    assert 'lse_requests_finished_total{endpoint="embeddings",outcome="stop"}' in metrics
    assert 'lse_http_requests_total{endpoint="/v1/embeddings",method="POST",status="200"}' in metrics


def test_openapi_documents_the_route(base_url):
    doc = httpx.get(f"{base_url}/openapi.json", headers={"authorization": f"Bearer {KEY}"}).json()
    op = doc["paths"]["/v1/embeddings"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/EmbeddingsRequest"}
    assert set(op["responses"]) >= {"200", "400", "401", "501"}


def test_without_embeddings_is_501(lse_server, model_dir):
    with lse_server(model_dir, "--kv-len", "512") as (url, _process):
        with openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0) as c:
            with pytest.raises(openai.InternalServerError) as info:
                c.embeddings.create(model="m", input="hello")
        # the document lists what this server serves (schemathesis finds no undocumented 5xx)
        assert "/v1/embeddings" not in httpx.get(f"{url}/openapi.json").json()["paths"]
    assert info.value.status_code == 501
    assert info.value.body["code"] == "embeddings_disabled" and "--embeddings" in info.value.body["message"]
