"""The kernels' layout of a GGUF read in place, made run by run straight from
the file's block bytes (kernel_layout._Streamed, reader.layout_parts), is
byte for byte the layout made from each matrix's whole parts as lse-import
stores them (weights.block_arrays): for every block format LSE keeps, odd
row counts (a last group of 5 rows), rows permuted over heads, and runs of
one row group each as well as whole matrices, with the runs made in C
(cpu_kernels/lse_layout.c) and in numpy. The file's bytes are also
pinned to those the whole-matrix writer gave before the streamed one
existed (git 3183849)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import gguf
import numpy as np
import pytest

from lse.compiler import kernel_layout, layout_native
from lse.compiler.safetensors_writer import write_aligned_safetensors
from lse.compiler.weights import block_arrays, gguf_tensors

Q = gguf.GGMLQuantizationType
FORMATS = (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q6_K)
# The f16 scales of each format's blocks (d, and m or dmin) at these byte offsets; random bytes elsewhere.
SCALES = {Q.Q4_0: (0,), Q.Q4_1: (0, 2), Q.Q5_0: (0,), Q.Q5_1: (0, 2), Q.Q8_0: (0,), Q.Q4_K: (0, 2),
          Q.Q5_K: (0, 2), Q.Q6_K: (208,)}
# sha256 of the layout file (both heads cases) the whole-matrix writer of git 3183849 wrote for _fixture
PINNED = "f9c1c2b3afc489d25eaf113ce9c21f39f9dcf5433f2ca3c2f67660b33984cb74"


def _fixture(path: Path) -> dict:
    """A seeded GGUF of random blocks, one matrix a format at 37 rows and
    one at 36 rows permuted over 3 heads; the import's references to it."""
    rng = np.random.default_rng(37)
    writer = gguf.GGUFWriter(path, arch="llama")
    refs = {}
    for qtype in FORMATS:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        k = 2 * 256 if block == 256 else 3 * 32
        for rows, heads in ((37, 0), (36, 3)):
            raw = rng.integers(0, 256, (rows * k // block, size), dtype=np.uint8)
            for at in SCALES[qtype]:
                raw[:, at:at + 2] = np.float16(rng.uniform(-1e-2, 1e-2, len(raw))).view(np.uint8).reshape(-1, 2)
            name = f"{qtype.name.lower()}_{rows}"
            writer.add_tensor(name, raw.reshape(rows, -1), raw_dtype=qtype)
            refs[f"w.{name}"] = [name, heads]
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    st = path.stat()
    return {"file": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "tensors": refs}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def matrices(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, list[str]]:
    tensors = {t.name: t for t in gguf_tensors(_fixture(tmp_path_factory.mktemp("gguf") / "blocks.gguf"))}
    weights = {n: (t.shape, t.dtype) for n, t in tensors.items()}
    weights.update({p.name: (p.shape, p.dtype) for t in tensors.values() for p in t.parts.values()})
    return tensors, weights, sorted(tensors)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("run_bytes", [1, kernel_layout.RUN_BYTES])
def test_streamed_layout_is_the_whole_matrix_layouts_bytes(matrices, tmp_path, monkeypatch, run_bytes, native):
    """native: the formats lse_layout.c takes made in C (layout_native), else all in numpy."""
    tensors, weights, names = matrices
    assert {weights[n][1] for n in names} == {q.name.lower() for q in FORMATS}
    monkeypatch.setattr(kernel_layout, "RUN_BYTES", run_bytes)  # 1: a run is one group of 16 rows
    monkeypatch.setenv("LSE_LAYOUT_NATIVE", "1" if native else "0")
    if native and shutil.which("cc") is None:
        pytest.skip("no C compiler to build lse_layout.c")
    made_in_c = {f for f in layout_native.FORMATS if layout_native.runner(f)}
    assert made_in_c == (set(layout_native.FORMATS) if native else set())
    streamed = tmp_path / "streamed.safetensors"
    kernel_layout.write_layout(tensors, weights, names, streamed)

    whole = tmp_path / "whole.safetensors"  # each matrix's parts whole, as lse-import stores them
    specs = kernel_layout.layout_weights(weights, names)
    load = kernel_layout._by_matrix(lambda n: kernel_layout._interleaved(weights[n][1], block_arrays(tensors[n])))
    write_aligned_safetensors(whole, {n: (s, kernel_layout._NP[dt]) for n, (s, dt) in specs.items()}, load)
    assert streamed.read_bytes() == whole.read_bytes()
    assert _digest(streamed) == PINNED


def test_a_run_of_the_wrong_rows_is_refused(tmp_path):
    """write_aligned_safetensors checks a tensor written in runs: their rows add up to its shape's."""
    def load(name: str):
        return iter([np.zeros((16, 4), np.int8), np.zeros((3, 4), np.int8)])
    with pytest.raises(ValueError, match="19 rows written, 32 declared"):
        write_aligned_safetensors(tmp_path / "x.safetensors", {"a": ((32, 4), np.int8)}, load)
