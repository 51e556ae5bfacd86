"""The CPU kernels' layout of block weights: 16 rows interleaved.

lse_qmv.c's matvecs and lse_gemm.c's panels read every block format
(weights.BLOCK_FORMATS) as groups of ROWS = 16 weight rows. Per group and
block b: a run of 16 bytes for each byte j of a row's block (4-bit: 16 runs
of a 32-value block, values 2j and 2j + 1, low nibble first; 8-bit: one run
a value, 32 a block), holding that byte of the group's 16 rows (Q6_K: a run
of 64 bytes for each of a row's three 32-bit words, pack_q6), so one vector holds one value of 16 rows and x's value is a
broadcast; then, in their own tensors, the group's 16 scales d (and offsets
m) of block b side by side. Rows past the matrix's last are zero (weights
0), so every group is whole.

lse-compile writes the layout once per model, into a shared store
(``shared_layout``, layout_store: keyed by the model's parameter files and the matrices,
not by the artifact), and links it beside each artifact's modules
(LAYOUT_FILE: the same bytes as the imported weights, and their scales, plus
at most 15 zero rows a matrix), for every block matrix a matmul or the
lm_head reads: another slot count, context or kv dtype of the same model
adds modules only. The modules read only these, so the imported copies are
not resident (an 8-bit embedding table shared with the lm_head: only the
rows of the tokens seen). As parameters (scope "model", like the model's
own): ``<name>.qi`` (groups, blocks * 16 * bytes a block) int8, ``<name>.di``
and ``<name>.mi`` (groups, blocks * 16) in the scales' type.

The K-quants (K_SUPER) keep their scales at the file's widths rather than the
import's f32 products: ``di`` holds per group and block 16 * ks int8
sub-block scales (Q4_K/Q5_K: the 16 rows' sc, then their mn; Q6_K: sc), and
``mi`` per group and 256 values 16 * ks f16 super-block scales (d, then
-dmin; Q6_K: d). The import's f32 products are factored back into those
(factor_scales), exactly, so the kernels' f32 product of the two is the
import's scale bit for bit. Q6_K's values keep their 6 bits (pack_q6: 12
bytes a row's block of 16 rather than the import's 16 int8, as three 32-bit
words interleaved word by word: layout_q).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from lse.compiler import layout_native
from lse.compiler.layout_store import shared_file
from lse.compiler.safetensors_writer import write_aligned_safetensors
from lse.compiler.weights import BLOCK_FORMATS, FOUR_BIT, TensorInfo, block_arrays, gguf_row_runs, stored_spec

LAYOUT_FILE = "cpu-kernel-weights.safetensors"
PARTS_FILE = "block-parts.safetensors"  # parts of matrices read in place from a GGUF, where a module reads them
ROWS = 16
PARTS = {"q": "qi", "d": "di", "m": "mi"}  # an imported part -> its interleaved parameter's suffix
_NP = {"F16": np.float16, "F32": np.float32, "I8": np.int8}
Weights = dict[str, tuple[tuple[int, ...], str]]
K_SUPER = {"q4_k": 2, "q5_k": 2, "q6_k": 1}  # K-quant -> super-block scales per 256 values (d [, -dmin])
SUPER_VALUES = 256
# Candidate sub-block scales of a super-block's largest product, likeliest
# first (llama.cpp's quantizers scale the largest to 63 or 127), then the rest.
_SUB_CANDIDATES = (63, 127, *range(126, 63, -1), *range(62, 0, -1), -128, 128)


def _whole_groups(a: np.ndarray) -> np.ndarray:
    """``a``'s rows, zero rows after them to a multiple of ROWS."""
    pad = -len(a) % ROWS
    return np.concatenate([a, np.zeros((pad, *a.shape[1:]), a.dtype)]) if pad else a


def interleave_q(q: np.ndarray, unit: int = 1) -> np.ndarray:
    """q (N, blocks, bytes): each block's bytes (4-bit: two values a byte;
    8-bit: one; Q6_K: pack_q6's three words) → (G, blocks * 16 * bytes) int8,
    G = ceil(N / 16): per group and block, run j is unit j (``unit`` bytes:
    1, or Q6_K's 4) of the group's 16 rows, row by row."""
    n, nb, nbytes = q.shape
    g = -(-n // ROWS)
    out = _whole_groups(q.view(np.uint8)).reshape(g, ROWS, nb, nbytes // unit, unit).transpose(0, 2, 3, 1, 4)
    return out.reshape(g, nb * nbytes * ROWS).view(np.int8)


def layout_q(fmt: str, q: np.ndarray) -> np.ndarray:
    """A matrix's q as the kernels read it: lse-import's (N, blocks, bytes a
    block) interleaved (interleave_q), Q6_K's int8 values packed to 6 bits
    first (pack_q6) and interleaved by 32-bit word."""
    if fmt == "q6_k":
        return interleave_q(pack_q6(q.view(np.int8)), unit=Q6_WORD)
    return interleave_q(q)


def interleave_scales(s: np.ndarray) -> np.ndarray:
    """Per-block scales (N, blocks) → (G, blocks * 16): a group's 16 of a block side by side."""
    n, nb = s.shape
    g = -(-n // ROWS)
    return np.ascontiguousarray(_whole_groups(s).reshape(g, ROWS, nb).transpose(0, 2, 1).reshape(g, nb * ROWS))


def factor_scales(p: np.ndarray, per: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-block f32 scales p (N, S), each an f16 super-block scale times an
    integer sub-block scale, ``per`` blocks a super-block, → (f16 (N, S / per),
    int8 (N, S)) whose f32 product is p exactly. Raises ValueError where no
    such pair exists (not a K-quant's products)."""
    n, s = p.shape
    blk = np.ascontiguousarray(p, np.float32).reshape(-1, per)
    sup, sub = np.zeros(len(blk), np.float16), np.zeros(blk.shape, np.int8)
    top = blk[np.arange(len(blk)), np.abs(blk).argmax(1)]
    todo = np.flatnonzero(top != 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for c in _SUB_CANDIDATES:
            if not len(todo):
                break
            t = (top[todo] / np.float32(c)).astype(np.float16)
            t32 = t.astype(np.float32)[:, None]
            qv = np.rint(blk[todo] / t32)
            good = np.all((qv >= -128) & (qv <= 127) & (qv * t32 == blk[todo]), axis=1)
            sup[todo[good]], sub[todo[good]] = t[good], qv[good]
            todo = todo[~good]
    if len(todo):
        raise ValueError(f"{len(todo)} super-blocks' scales are not an f16 times int8 sub-block scales")
    return sup.reshape(n, s // per), sub.reshape(n, s)


def _per_super(fmt: str) -> int:
    """A K-quant's blocks a super-block: 256 values in blocks of 16 (q6_k) or 32."""
    return SUPER_VALUES // (16 if fmt == "q6_k" else 32)


def k_scale_parts(fmt: str, d: np.ndarray, m: np.ndarray | None,
                  factored: list[tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A K-quant's interleaved (di, mi) from the import's f32 d (and m) (N, S),
    or from ``factored``, the file's own (f16 super-block, int8 sub-block)
    scales whose products they are (reader.Blocks.factors): no search."""
    if factored is None:
        factored = [factor_scales(a, _per_super(fmt)) for a in ([d] if K_SUPER[fmt] == 1 else [d, m])]

    def side_by_side(arrays: list[np.ndarray]) -> np.ndarray:  # per group and block: 16 of each in turn
        inter = [interleave_scales(a) for a in arrays]
        g = inter[0].shape[0]
        return np.stack([a.reshape(g, -1, ROWS) for a in inter], axis=2).reshape(g, -1)
    return side_by_side([sub for _, sub in factored]), side_by_side([sup for sup, _ in factored])


# Q6_K's fields (pack_q6): per word A, B, C, (value, lowest bit) of each
# 6-bit u; value 15 is split over the three words' spare pairs. A value's
# field sits at bit 0, 6 or 12 (one and), at the top (one shift), or at 18 or
# 24 (a shift and an and), so the kernel takes a word of 16 rows with no
# widening (lse_qmv.c, v_q6).
Q6_WORD = 4
Q6_FIELDS = (((0, 0), (1, 6), (2, 12), (12, 18), (3, 26)),
             ((4, 0), (5, 6), (6, 12), (13, 18), (7, 26)),
             ((8, 0), (9, 6), (10, 12), (14, 18), (11, 24)))
Q6_SPLIT = (24, 24, 30)  # where each word holds 2 bits of value 15 (its bits 0-1, 2-3, 4-5)


def pack_q6(q: np.ndarray) -> np.ndarray:
    """Q6_K's values (N, blocks, 16) int8 in -32..31 → (N, blocks, 12) bytes:
    u = q + 32 in three little-endian 32-bit words A, B, C (Q6_FIELDS,
    Q6_SPLIT): 6.0 bits a value, as the file's."""
    n, nb, _ = q.shape
    u = (q.reshape(-1, 16).view(np.uint8) + np.uint8(32)).view("<u4")  # (blocks, 4): values 4r..4r + 3 a word
    return np.ascontiguousarray(q6_words(np.ascontiguousarray(u.T)).T).view(np.uint8).reshape(n, nb, 12)


def q6_words(lanes: np.ndarray) -> np.ndarray:
    """Q6_K's u in byte lanes (4, blocks) uint32 (row r: values 4r .. 4r + 3
    of each block, byte i value 4r + i) → (3, blocks) words A, B, C: each
    field of Q6_FIELDS moved from its lane with one shift and one and, four
    values of a word at a time; value 15's bit pairs (Q6_SPLIT) from lane 3's top byte."""
    u0, u1, u2, u3 = lanes

    def low(w: np.ndarray, top: int) -> np.ndarray:  # w's bytes 0-2 at bits 0, 6, 12; u3's byte `top` at 18
        return (w & 0x3F) | ((w >> 2) & 0xFC0) | ((w >> 4) & 0x3F000) | (((u3 >> (8 * top)) & 0x3F) << 18)
    a = low(u0, 0) | ((u0 << 2) & 0xFC000000) | (u3 & 0x03000000)  # value 3 at 26, value 15's bits 0-1 at 24
    b = low(u1, 1) | ((u1 << 2) & 0xFC000000) | ((u3 >> 2) & 0x03000000)  # value 7 at 26, bits 2-3 at 24
    c = low(u2, 2) | (u2 & 0x3F000000) | ((u3 << 2) & 0xC0000000)  # value 11 at 24, bits 4-5 at 30
    return np.stack([a, b, c])


def interleave_q6_words(words: np.ndarray) -> np.ndarray:
    """Q6_K's words (3, N, blocks) (q6_words) → layout_q's qi: per group and
    block, word A of the 16 rows, then B, then C (interleave_q by words)."""
    _, n, nb = words.shape
    g = -(-n // ROWS)
    whole = np.zeros((3, g * ROWS, nb), "<u4")
    whole[:, :n] = words
    return np.ascontiguousarray(whole.reshape(3, g, ROWS, nb).transpose(1, 3, 0, 2)).reshape(g, -1).view(np.int8)


def layout_block_bytes(weights: Weights, name: str) -> int:
    """Bytes of q a row's block in the layout: the import's, Q6_K's packed to 12."""
    return 12 if weights[name][1] == "q6_k" else blocks(weights, name)[1]


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
        nb, nbytes = blocks(weights, name)[0], layout_block_bytes(weights, name)
        specs[f"{name}.qi"] = ((g, nb * ROWS * nbytes), "I8")
        ks = K_SUPER.get(weights[name][1])
        if ks:  # int8 sub-block scales a block, f16 super-block scales per 256 values
            specs[f"{name}.di"] = ((g, nb * ROWS * ks), "I8")
            specs[f"{name}.mi"] = ((g, nb // _per_super(weights[name][1]) * ROWS * ks), "F16")
            continue
        for part in "dm":
            if f"{name}.{part}" in weights:
                specs[f"{name}.{PARTS[part]}"] = ((g, nb * ROWS), weights[f"{name}.{part}"][1])
    return specs


def interleavable(weights: Weights, name: str) -> bool:
    """A block matrix: every block format's kernels take the layout."""
    shape, fmt = weights[name]
    return fmt in BLOCK_FORMATS and len(shape) == 2


def write_layout(tensors: dict[str, TensorInfo], weights: Weights, names: list[str], path: Path,
                 kernels: Path | None = None) -> int:
    """Write the interleaved parameters of ``names`` to ``path``; its bytes.
    A GGUF's matrices read in place are made and written a run of row groups
    at a time (_Streamed), in C where layout_native builds it (its library
    kept in ``kernels``, the kernels' store); an import's stored parts are
    read whole, once a matrix (weights.block_arrays), and dropped once its
    last is written."""
    specs = layout_weights(weights, names)
    load = _by_matrix(lambda name: _matrix_layout(weights[name][1], tensors[name], kernels))
    write_aligned_safetensors(path, {n: (shape, _NP[dt]) for n, (shape, dt) in specs.items()}, load)
    return path.stat().st_size


def _matrix_layout(fmt: str, t: TensorInfo, kernels: Path | None) -> dict[str, np.ndarray] | _Streamed:
    """A matrix's layout parameters by suffix: a GGUF's read in place run by
    run (_Streamed), an import's stored parts whole."""
    if t.gguf is None:
        return _interleaved(fmt, block_arrays(t))
    rows = ROWS * max(1, RUN_BYTES // (ROWS * (t.nbytes // t.shape[0])))
    native = layout_native.runner(fmt, kernels)  # the same bytes, made in C where it is built
    if native:
        return _Streamed(gguf_row_runs(t, rows, native))
    return _Streamed((lambda run=run: _interleaved(fmt, run()) for run in gguf_row_runs(t, rows)))


# Bytes of the GGUF a run of _Streamed reads: a few row groups, so each
# run's temporaries stay near the cores' caches (1 MiB: the fastest of 256 KiB
# to 4 MiB at 1B on the 2-core Xeon, docs/performance.md).
RUN_BYTES = 1 << 20
WORKERS = max(1, min(8, len(os.sched_getaffinity(0))))  # threads making runs: the cores this process may use


class _Streamed:
    """A matrix's layout made from runs of row groups as it is written: qi an
    iterator of each run's groups, made (``runs``: a call a run giving its
    qi, di[, mi]) as the writer asks for them on up to WORKERS threads
    (numpy's loops and ctypes' calls release the GIL), a few runs ahead; the
    scales (qi's 16th or less), kept from those runs, whole after it."""

    def __init__(self, runs: Iterator[Callable[[], dict[str, np.ndarray]]]) -> None:
        self.runs, self.scales = runs, {}

    def __getitem__(self, suffix: str) -> np.ndarray | Iterator[np.ndarray]:
        if suffix == "qi":
            return self._qi()
        return np.concatenate(self.scales.pop(suffix))  # qi is written first (layout_weights' order)

    def _qi(self) -> Iterator[np.ndarray]:
        with ThreadPoolExecutor(WORKERS) as pool:
            ahead: deque[Future] = deque()
            for run in self.runs:
                ahead.append(pool.submit(run))
                if len(ahead) > 2 * WORKERS:
                    yield self._keep(ahead.popleft().result())
            while ahead:
                yield self._keep(ahead.popleft().result())

    def _keep(self, out: dict[str, np.ndarray]) -> np.ndarray:
        """A run's qi; its scales kept, in order."""
        for suffix, a in out.items():
            if suffix != "qi":
                self.scales.setdefault(suffix, []).append(a)
        return out["qi"]


def _by_matrix(arrays: Callable[[str], dict[str, np.ndarray]]) -> Callable[[str], np.ndarray]:
    """write_aligned_safetensors' load of ``<matrix>.<suffix>`` names: each
    matrix's ``arrays`` made once, when its first is written, and dropped at
    the next matrix's (the names come matrix by matrix)."""
    current: dict[str, dict[str, np.ndarray]] = {}

    def load(stored: str) -> np.ndarray:
        name, suffix = stored.rsplit(".", 1)
        if name not in current:
            current.clear()
            current[name] = arrays(name)
        return current[name][suffix]
    return load


def _interleaved(fmt: str, parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A matrix's layout parameters by suffix (qi, di, [mi]) from its parts
    (Q6_K's may hold its values as "lanes", reader.layout_parts: packed as they are)."""
    if "lanes" in parts:
        rows = len(parts["factors"][0][0])
        out = {"qi": interleave_q6_words(q6_words(parts["lanes"]).reshape(3, rows, -1))}
    else:
        out = {"qi": layout_q(fmt, parts["q"])}
    if fmt in K_SUPER:
        out["di"], out["mi"] = k_scale_parts(fmt, parts.get("d"), parts.get("m"), parts.get("factors"))
        return out
    return {**out, **{PARTS[p]: interleave_scales(parts[p]) for p in "dm" if p in parts}}


def _files(tensors: dict[str, TensorInfo], names: list[str]) -> list[str]:
    """The parameter files the matrices ``names`` are read from."""
    return sorted({str(p.file) for n in names for p in tensors[n].parts.values()})


def shared_layout(tensors: dict[str, TensorInfo], weights: Weights, names: list[str], path: Path,
                  store: Path | None, kernels: Path | None = None) -> tuple[int, str]:
    """The layout of ``names`` at ``path``: written once into ``store`` (None:
    written at ``path`` alone) and hard-linked from there, so every artifact
    of a model shares one copy on disk (layout_store.shared_file). Returns
    (its bytes, what happened: "written", "reused" or "written here")."""
    return shared_file(_files(tensors, names), names, "", LAYOUT_FILE, path, store,
                       lambda out: write_layout(tensors, weights, names, out, kernels))


def shared_parts(tensors: dict[str, TensorInfo], names: list[str], path: Path,
                 store: Path | None) -> tuple[int, str]:
    """The block parts ``names`` (``<matrix>.q``, ``.d``, ``.m``) of matrices
    read in place from a GGUF, as lse-import would store them, at ``path``:
    shared per model as shared_layout's file is."""
    matrices = sorted({n.rpartition(".")[0] for n in names})

    def write(out: Path) -> None:
        specs = {n: stored_spec(tensors[n.rpartition(".")[0]].parts[n.rpartition(".")[2]]) for n in names}
        write_aligned_safetensors(out, specs, _by_matrix(lambda matrix: block_arrays(tensors[matrix])))
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
    return shared_file(_files(tensors, matrices), matrices, "-parts-" + digest, PARTS_FILE, path, store, write)
