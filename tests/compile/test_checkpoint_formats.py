"""Weights in bf16 and f16, and sharded checkpoints with an index, compile
and match the reference (which widens the same stored values to f32)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from lse.runtime.reference import ReferenceModel
from lse.fixtures.make_fixtures import fixture_dir

PROMPT = [5, 17, 200, 3, 99]


def _copy_model(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, dst / f.name)
    return load_file(str(src / "model.safetensors"))


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even f32 -> bf16, as raw uint16 (numpy has no bf16)."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _write_bf16(tensors: dict, path) -> None:
    """safetensors.numpy can't write BF16: write the header ourselves."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = _bf16_bits(a).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 64)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_weights(tmp_path, dtype, open_backend, no_fallback):
    tensors = _copy_model(fixture_dir("llama"), tmp_path / dtype)
    if dtype == "f16":
        save_file({k: v.astype(np.float16) for k, v in tensors.items()}, str(tmp_path / dtype / "model.safetensors"))
    else:
        _write_bf16(tensors, tmp_path / dtype / "model.safetensors")
    backend = open_backend(tmp_path / dtype)
    logits, _ = backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, no_fallback)
    ref = ReferenceModel.from_dir(tmp_path / dtype).forward(PROMPT)[-1]
    np.testing.assert_allclose(logits, ref, atol=1e-4)


def test_sharded_checkpoint_with_index(tmp_path, open_backend, no_fallback):
    model = tmp_path / "sharded"
    tensors = _copy_model(fixture_dir("llama"), model)
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for file, part in shards.items():
        save_file({n: tensors[n] for n in part}, str(model / file))
        weight_map.update({n: file for n in part})
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    backend = open_backend(model)
    logits, _ = backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, no_fallback)
    ref = ReferenceModel.from_dir(fixture_dir("llama")).forward(PROMPT)[-1]
    np.testing.assert_allclose(logits, ref, atol=1e-4)
