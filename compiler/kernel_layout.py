"""The CPU kernels' layout of block weights: 16 rows interleaved.

lse_qmv.c's matvecs and lse_gemm.c's panels read every block format
(weights.BLOCK_FORMATS) as groups of ROWS = 16 weight rows. Per group and
block b: a run of 16 bytes for each byte j of a row's block (4-bit: 16 runs
of a 32-value block, values 2j and 2j + 1, low nibble first; 8-bit: one run
a value, 32 or 16 (q6_k) a block), holding that byte of the group's 16
rows, so one vector holds one value of 16 rows and x's value is a
broadcast; then, in their own tensors, the group's 16 scales d (and offsets
m) of block b side by side. Rows past the matrix's last are zero (weights
0), so every group is whole.

lse-compile writes the layout once per model, into a shared store
(``shared_layout``: keyed by the model's parameter files and the matrices,
not by the artifact), and links it beside each artifact's modules
(LAYOUT_FILE: the same bytes as the imported weights, and their scales, plus
at most 15 zero rows a matrix), for every block matrix a matmul or the
lm_head reads: another slot count, context or kv dtype of the same model
adds modules only. The modules read only these, so the imported copies are
not resident (an 8-bit embedding table shared with the lm_head: only the
rows of the tokens seen). As parameters (scope "model", like the model's
own): ``<name>.qi`` (groups, blocks * 16 * bytes a block) int8, ``<name>.di``
and ``<name>.mi`` (groups, blocks * 16) in the scales' type.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from lse.compiler.weights import BLOCK_FORMATS, FOUR_BIT, TensorInfo, write_aligned_safetensors

LAYOUT_FILE = "cpu-kernel-weights.safetensors"
ROWS = 16
PARTS = {"q": "qi", "d": "di", "m": "mi"}  # an imported part -> its interleaved parameter's suffix
_NP = {"F16": np.float16, "F32": np.float32, "I8": np.int8}
Weights = dict[str, tuple[tuple[int, ...], str]]


def _whole_groups(a: np.ndarray) -> np.ndarray:
    """``a``'s rows, zero rows after them to a multiple of ROWS."""
    pad = -len(a) % ROWS
    return np.concatenate([a, np.zeros((pad, *a.shape[1:]), a.dtype)]) if pad else a


def interleave_q(q: np.ndarray) -> np.ndarray:
    """q (N, blocks, bytes): each block's bytes (4-bit: two values a byte;
    8-bit: one) → (G, blocks * 16 * bytes) int8, G = ceil(N / 16): per group
    and block, run j is byte j of the group's 16 rows."""
    n, nb, nbytes = q.shape
    g = -(-n // ROWS)
    out = _whole_groups(q.view(np.uint8)).reshape(g, ROWS, nb, nbytes).transpose(0, 2, 3, 1)
    return out.reshape(g, nb * nbytes * ROWS).view(np.int8)


def interleave_scales(s: np.ndarray) -> np.ndarray:
    """Per-block scales (N, blocks) → (G, blocks * 16): a group's 16 of a block side by side."""
    n, nb = s.shape
    g = -(-n // ROWS)
    return np.ascontiguousarray(_whole_groups(s).reshape(g, ROWS, nb).transpose(0, 2, 1).reshape(g, nb * ROWS))


def blocks(weights: Weights, name: str) -> tuple[int, int]:
    """(blocks a row, bytes of q a block) of a block matrix, from its q part (N, S, B values)."""
    _, s, b = weights[f"{name}.q"][0]
    return s, b // 2 if weights[name][1] in FOUR_BIT else b


def stored_names(name: str, weights: dict) -> list[str]:
    """The interleaved parameters of ``name`` present in ``weights``."""
    return [f"{name}.{s}" for s in PARTS.values() if f"{name}.{s}" in weights]


def layout_weights(weights: Weights, names: list[str]) -> Weights:
    """(shape, stored dtype) of every interleaved parameter of ``names``
    (block matrices), from the compile's weights: each block matrix
    (shape, format) and its parts."""
    specs = {}
    for name in names:
        g = -(-weights[name][0][0] // ROWS)
        nb, nbytes = blocks(weights, name)
        specs[f"{name}.qi"] = ((g, nb * ROWS * nbytes), "I8")
        for part in "dm":
            if f"{name}.{part}" in weights:
                specs[f"{name}.{PARTS[part]}"] = ((g, nb * ROWS), weights[f"{name}.{part}"][1])
    return specs


def interleavable(weights: Weights, name: str) -> bool:
    """A block matrix: every block format's kernels take the layout."""
    shape, fmt = weights[name]
    return fmt in BLOCK_FORMATS and len(shape) == 2


def write_layout(tensors: dict[str, TensorInfo], weights: Weights, names: list[str], path: Path) -> int:
    """Write the interleaved parameters of ``names`` to ``path``; its bytes."""
    specs = layout_weights(weights, names)

    def part(info: TensorInfo, shape: tuple[int, ...], dtype) -> np.ndarray:
        return np.fromfile(info.file, dtype, int(np.prod(shape)), offset=info.offset).reshape(shape)

    def load(stored: str) -> np.ndarray:
        name, suffix = stored.rsplit(".", 1)
        t = tensors[name]
        n, (nb, nbytes) = t.shape[0], blocks(weights, name)
        if suffix == "qi":
            return interleave_q(part(t.parts["q"], (n, nb, nbytes), np.uint8))
        info = t.parts[suffix[0]]  # "di" -> "d", "mi" -> "m"
        return interleave_scales(part(info, (n, nb), _NP[info.dtype]))

    write_aligned_safetensors(path, {n: (shape, _NP[dt]) for n, (shape, dt) in specs.items()}, load)
    return path.stat().st_size


def layout_key(tensors: dict[str, TensorInfo], names: list[str]) -> str:
    """What a layout file's bytes depend on: the parameter files it is read
    from (path, size, modification time), the matrices, and this module."""
    files = sorted({str(p.file) for n in names for p in tensors[n].parts.values()})
    payload = {"files": [(f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in files], "names": sorted(names),
               "source": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def shared_layout(tensors: dict[str, TensorInfo], weights: Weights, names: list[str], path: Path,
                  store: Path | None) -> tuple[int, str]:
    """The layout of ``names`` at ``path``: written once into ``store`` (None:
    written at ``path`` alone) and hard-linked from there, so every artifact
    of a model shares one copy on disk (copied where a link can't be made,
    e.g. across file systems). Returns (its bytes, what happened: "written",
    "reused" or "written here")."""
    if store is None:
        return write_layout(tensors, weights, names, path), "written here"
    shared = store / layout_key(tensors, names) / LAYOUT_FILE
    how = "reused"
    if not shared.is_file():
        shared.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".layout.", dir=shared.parent)
        os.close(fd)
        try:
            write_layout(tensors, weights, names, Path(tmp))
            os.replace(tmp, shared)  # atomic: a reader never sees half a file
        finally:
            Path(tmp).unlink(missing_ok=True)
        how = "written"
    path.unlink(missing_ok=True)
    try:
        os.link(shared, path)
    except OSError:
        shutil.copyfile(shared, path)
    return path.stat().st_size, how
