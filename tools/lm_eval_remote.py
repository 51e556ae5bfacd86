"""lm-evaluation-harness against a running lse-server, tokenizing remotely.

    python -m lse.tools.lm_eval_remote --url http://127.0.0.1:8080 [--lm-eval PATH] [--model NAME]

Writes a tiny multiple-choice task of its own (six questions, a local JSON
file: no dataset download) and runs lm-eval's ``local-completions`` model
with ``tokenizer_backend=remote``: lm-eval reads /tokenizer_info, tokenizes
with /tokenize, sends the token ids as prompts to /v1/completions and scores
each choice from the echoed prompt logprobs (``echo``, ``logprobs: 1``,
``max_tokens: 1``). lm-eval is not an LSE dependency (it pulls datasets,
evaluate, scikit-learn...): install it in its own environment
(``python -m venv /tmp/lm-eval && /tmp/lm-eval/bin/pip install lm-eval``) and
pass ``--lm-eval /tmp/lm-eval/bin/lm_eval``. The Hugging Face hub is kept
offline (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

import httpx

TASK = "lse_tiny_mc"
QUESTIONS = [
    ("The capital of France is", [" Paris", " Berlin", " Madrid", " Rome"], 0),
    ("Two plus two equals", [" seven", " four", " nine", " one"], 1),
    ("The sky on a clear day is", [" green", " red", " blue", " black"], 2),
    ("Water freezes at zero degrees", [" Celsius", " Kelvin", " Fahrenheit", " Rankine"], 0),
    ("The opposite of hot is", [" loud", " cold", " tall", " fast"], 1),
    ("A week has seven", [" apples", " rivers", " days", " wheels"], 2),
]
TASK_YAML = f"""task: {TASK}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {{data}}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def write_task(folder: Path) -> None:
    data = folder / f"{TASK}.jsonl"
    data.write_text("".join(json.dumps({"question": q, "choices": c, "answer": a}) + "\n" for q, c, a in QUESTIONS))
    (folder / f"{TASK}.yaml").write_text(TASK_YAML.replace("{data}", str(data)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--lm-eval", default="lm_eval", help="the lm_eval command (its own venv's)")
    parser.add_argument("--model", help="the model name sent (default: the served id from /v1/models)")
    args = parser.parse_args(argv)
    url = args.url.rstrip("/")
    model = args.model or httpx.get(f"{url}/v1/models", timeout=30).json()["data"][0]["id"]
    with tempfile.TemporaryDirectory(prefix="lse-lm-eval-") as tmp:
        folder = Path(tmp)
        write_task(folder)
        model_args = (f"model={model},base_url={url}/v1/completions,tokenizer_backend=remote,"
                      "tokenized_requests=True,num_concurrent=1,max_retries=1")
        cmd = [args.lm_eval, "--model", "local-completions", "--model_args", model_args, "--tasks", TASK,
               "--include_path", str(folder), "--output_path", str(folder / "out")]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        print("$", " ".join(cmd), flush=True)
        return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
