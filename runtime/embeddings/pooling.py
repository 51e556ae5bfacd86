"""Pooling: one vector for a prompt from its rows' final-normed hidden states.

The rows are the final RMSNorm's output (the graph's ``hidden``, the input
of lm_head), which every prefill returns already: no extra entry point is
compiled, so an artifact serves embeddings as it is.

``last`` is the prompt's final row (decoder embedding models such as
Qwen3-Embedding: a causal model's last row has seen every token), ``mean``
the mean of every row, ``cls`` the first row. The choice, in order: the
server's ``--pooling`` (``lse_open``'s ``pooling``), the model's files
(sentence-transformers' ``1_Pooling/config.json``; ``pooling_type`` in
config.json, where the GGUF import writes ``<arch>.pooling_type``), else
``last`` (these models are decoders). Every vector is L2-normalised;
``dimensions`` truncates, then normalises again, on any model: whether it
was trained for truncation (Matryoshka) is not checked (docs/api.md).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

POOLINGS = ("last", "mean", "cls")
DEFAULT_POOLING = "last"
# GGUF's <arch>.pooling_type (llama.cpp's enum llama_pooling_type): 1 mean, 2 cls, 3 last.
GGUF_POOLING = {1: "mean", 2: "cls", 3: "last"}
# sentence-transformers' 1_Pooling/config.json flags, in the order they are read.
_ST_FLAGS = (("pooling_mode_lasttoken", "last"), ("pooling_mode_mean_tokens", "mean"),
             ("pooling_mode_cls_token", "cls"))


def model_pooling(model_dir: Path) -> tuple[str, str] | None:
    """(pooling, where it was read) from the model's files, or None where they say nothing usable."""
    st = model_dir / "1_Pooling" / "config.json"
    if st.is_file():
        flags = json.loads(st.read_text())
        for key, name in _ST_FLAGS:
            if flags.get(key) is True:
                return name, "1_Pooling/config.json"
    config = model_dir / "config.json"
    if config.is_file():
        value = json.loads(config.read_text()).get("pooling_type")
        if value in GGUF_POOLING:
            return GGUF_POOLING[value], "config.json pooling_type (the GGUF's)"
    return None


def choose_pooling(option: str | None, model_dir: Path) -> tuple[str, str]:
    """(pooling, source): the option where given, else the model's files, else ``last``."""
    if option is not None:
        if option not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}; got {option!r}")
        return option, "--pooling"
    return model_pooling(model_dir) or (DEFAULT_POOLING, "the default for decoder models")


class Pooler:
    """Folds a prompt's rows, chunk by chunk, into one pooled row (float64)."""

    def __init__(self, pooling: str):
        self.pooling = pooling
        self.rows = 0
        self.value: np.ndarray | None = None

    def add(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, np.float64)
        if self.pooling == "mean":
            self.value = rows.sum(axis=0) if self.value is None else self.value + rows.sum(axis=0)
        elif self.pooling == "last":
            self.value = rows[-1].copy()
        elif self.value is None:  # cls: the first row
            self.value = rows[0].copy()
        self.rows += rows.shape[0]

    def result(self) -> np.ndarray:
        if self.value is None:
            raise ValueError("no rows were pooled")
        return self.value / self.rows if self.pooling == "mean" else self.value


def pool(rows: np.ndarray, pooling: str) -> np.ndarray:
    """One pooled row of (N, H) ``rows``, not normalised."""
    p = Pooler(pooling)
    p.add(rows)
    return p.result()


def normalize(vector: np.ndarray, dimensions: int | None = None) -> np.ndarray:
    """The first ``dimensions`` values (all where None), L2-normalised, as float32.
    A zero vector stays zero."""
    v = np.asarray(vector, np.float64)[:dimensions]
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype(np.float32)


def encode(vector: np.ndarray, encoding_format: str) -> list[float] | str:
    """``float``: a JSON list; ``base64``: the little-endian float32 bytes in base64 (OpenAI's)."""
    v = np.asarray(vector, np.float32)
    if encoding_format == "base64":
        return base64.b64encode(v.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in v]


def embedding_pooling(enabled: bool, option: str | None, model_dir, say) -> str | None:
    """The engine's pooling where embeddings are enabled (its startup line said), else None.
    A ``pooling`` given without ``embeddings`` is refused, as a bad value is (ValueError)."""
    if not enabled:
        if option is not None:
            raise ValueError("pooling is set but embeddings are not enabled; add --embeddings (embeddings: true)")
        return None
    pooling, source = choose_pooling(option, model_dir)
    say(f"lse: embeddings: on, {pooling} pooling (from {source}), L2-normalised")
    return pooling
