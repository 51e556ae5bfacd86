"""lse-import on Q8_0 and F16 tensors, not only the shipped Q4_1: the
packaged GGUF is rewritten with its tensors re-encoded (token embedding as
Q8_0, every other matrix as F16, norms F32), imported, and each imported
tensor compared with the source values it was encoded from, within the
encoding's own error."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
from lse.compiler.config import load_config
from lse.compiler.weights import load_array, read_tensors
from lse.compiler.gguf.importer import default_gguf_path, import_gguf

Q8 = gguf.GGMLQuantizationType.Q8_0
F16 = gguf.GGMLQuantizationType.F16


def _encoding(name: str, arr: np.ndarray) -> gguf.GGMLQuantizationType | None:
    if arr.ndim < 2:
        return None  # norms stay f32
    return Q8 if name == "token_embd.weight" else F16


@pytest.fixture(scope="module")
def reencoded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """The rewritten GGUF, and each tensor's f32 source values by GGUF name."""
    reader = gguf.GGUFReader(default_gguf_path())
    path = tmp_path_factory.mktemp("gguf") / "requant.gguf"
    writer = gguf.GGUFWriter(path, arch=reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), field.types[0], sub)
    sources = {}
    for t in reader.tensors:
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        arr = arr.reshape(tuple(reversed([int(x) for x in t.shape])))
        sources[t.name] = arr
        kind = _encoding(t.name, arr)
        if kind is None:
            writer.add_tensor(t.name, arr)
        elif kind == F16:
            writer.add_tensor(t.name, arr.astype(np.float16))
        else:
            writer.add_tensor(t.name, gguf.quants.quantize(arr, kind), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, sources


def test_q8_0_and_f16_tensors_import_within_their_encoding_error(reencoded, tmp_path):
    path, sources = reencoded
    out = import_gguf(path, tmp_path / "model", log=lambda message: None)
    assert load_config(out).num_hidden_layers == 30
    infos = read_tensors(out)
    # Formats are kept: Q8_0 as blocks, F16 as F16, norms as F32.
    assert [infos[n].dtype for n in ("model.embed_tokens.weight", "model.layers.7.mlp.down_proj.weight",
                                     "model.layers.7.input_layernorm.weight")] == ["q8_0", "F16", "F32"]
    tensors = {n: load_array(t) for n, t in infos.items()}
    emb, src = tensors["model.embed_tokens.weight"], sources["token_embd.weight"]
    # Q8_0: blocks of 32 with one f16 scale (max |x| / 127): error at most half a step
    step = np.abs(src.reshape(-1, 32)).max(axis=1, keepdims=True) / 127
    assert (np.abs(emb.reshape(-1, 32) - src.reshape(-1, 32)) <= step * 0.51 + 1e-6).all()
    down, src = tensors["model.layers.7.mlp.down_proj.weight"], sources["blk.7.ffn_down.weight"]
    np.testing.assert_allclose(down, src.astype(np.float16).astype(np.float32), rtol=0, atol=0)
    norm = tensors["model.layers.7.input_layernorm.weight"]
    np.testing.assert_array_equal(norm, sources["blk.7.attn_norm.weight"])
