"""The numpy reference answers SmolLM2-135M-Instruct's capital-of-France question.

Slow-ish (an import and ~40 forward steps of a 135M model in numpy), so it
lives in the compile tier though it runs no iree-compile.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest
from tokenizers import Tokenizer

from lse.runtime.reference import ReferenceModel
from lse.compiler.gguf.importer import default_gguf_path, import_gguf

# The GGUF's ChatML template with its default system prompt, tokenized (37 ids).
PROMPT_IDS = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
              19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
# "The capital of France is Paris." then <|im_end|> (id 2).
ANSWER_IDS = [504, 3575, 282, 4649, 314, 7042, 30, 2]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_gguf(default_gguf_path(), tmp_path_factory.mktemp("smollm2"), log=lambda msg: None)


def test_reference_answers_paris(model_dir: Path) -> None:
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    prompt = jinja2.Environment().from_string(config["chat_template"]).render(
        messages=[{"role": "user", "content": "What is the capital of France?"}], add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    ids = tokenizer.encode(prompt).ids
    assert ids == PROMPT_IDS

    model = ReferenceModel.from_dir(model_dir)
    answer = model.greedy(ids, 16, eos_ids=model.config.eos_token_ids)
    assert answer == ANSWER_IDS
    assert tokenizer.decode(answer, skip_special_tokens=True).startswith("The capital of France is Paris.")

