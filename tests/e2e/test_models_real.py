"""Several models with real files (#40's proof): the default model's GGUF and
the Gemma 3 270M GGUF behind one lse-server on the host interpreter, under
--models-max 1. Skipped, saying so, where the Gemma file is not on this
machine ($LSE_GEMMA3_GGUF, else <cache>/gguf/gemma-3-270m-q4_k_m.gguf)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import openai
import pytest

from lse.compiler.cache import cache_dir
from lse.compiler.gguf.importer import DEFAULT_MODEL_NAME, default_gguf_path, gguf_model_name

GEMMA = Path(os.environ.get("LSE_GEMMA3_GGUF") or cache_dir() / "gguf" / "gemma-3-270m-q4_k_m.gguf")
PROMPT = "The capital of France is"


@pytest.mark.skipif(not GEMMA.is_file(), reason=f"no Gemma 3 GGUF at {GEMMA} (set LSE_GEMMA3_GGUF)")
def test_the_default_model_and_gemma3_behind_one_server(lse_server):
    with lse_server(default_gguf_path(), GEMMA, "--pool", "cpu:0", "--kv-len", "512", "--parallel", "1",
                    "--models-max", "1") as (base_url, _):
        sdk = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
        assert [m.id for m in sdk.models.list().data] == [DEFAULT_MODEL_NAME, gguf_model_name(GEMMA)]
        texts = {}
        for name in (DEFAULT_MODEL_NAME, gguf_model_name(GEMMA)):
            reply = sdk.completions.create(model=name, prompt=PROMPT, max_tokens=3, temperature=0)
            assert reply.model == name
            texts[name] = reply.choices[0].text
            rows = {r["name"]: r for r in httpx.get(f"{base_url}/v1/lse/status", timeout=30).json()["models"]}
            assert [n for n, r in rows.items() if r["status"] == "loaded"] == [name]  # --models-max 1
        assert texts[DEFAULT_MODEL_NAME] == " Paris.\n"
        assert texts[DEFAULT_MODEL_NAME] != texts[gguf_model_name(GEMMA)]
        with pytest.raises(openai.NotFoundError):
            sdk.completions.create(model="gemma", prompt=PROMPT, max_tokens=1)
