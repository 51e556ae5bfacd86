"""lse-compile's layout of 4-bit weights for the CPU kernels (kernel_layout.py):
16 rows interleaved, whole groups with zero rows after the matrix's last, and
the file it writes read back through the same header reader as the model's."""

from __future__ import annotations

import numpy as np

from lse.compiler import kernel_layout
from lse.compiler.safetensors_writer import write_aligned_safetensors
from lse.compiler.weights import read_header


def test_interleave_puts_byte_j_of_16_rows_side_by_side():
    rng = np.random.default_rng(0)
    n, nb = 37, 3  # 3 groups, the last with 5 rows and 11 zero rows
    q = rng.integers(0, 256, (n, nb, 16), dtype=np.uint8)
    qi = kernel_layout.interleave_q(q).view(np.uint8).reshape(3, nb, 16, 16)  # (group, block, byte j, row i)
    for g, b, j, i in [(0, 0, 0, 0), (1, 2, 15, 3), (2, 1, 7, 4), (0, 1, 9, 15)]:
        assert qi[g, b, j, i] == q[16 * g + i, b, j]
    assert not qi[2, :, :, 5:].any()
    s = rng.uniform(size=(n, nb)).astype(np.float16)
    si = kernel_layout.interleave_scales(s).reshape(3, nb, 16)
    assert si[1, 2, 3] == s[19, 2] and si[2, 0, 4] == s[36, 0] and not si[2, :, 5:].any()


def test_layout_file_holds_every_4bit_matrix_interleaved(tmp_path):
    """write_layout reads the imported parts from their safetensors file and
    writes (groups, blocks * 256) bytes and (groups, blocks * 16) scales."""
    rng = np.random.default_rng(1)
    n, k = 20, 64
    q = rng.integers(0, 256, (n, k // 32, 16), dtype=np.uint8)
    d = rng.uniform(size=(n, k // 32)).astype(np.float16)
    m = rng.uniform(size=(n, k // 32)).astype(np.float16)
    src = tmp_path / "model.safetensors"
    arrays = {"w.q": q, "w.d": d, "w.m": m}
    write_aligned_safetensors(src, {name: (a.shape, a.dtype) for name, a in arrays.items()}, arrays.__getitem__,
                              metadata={"lse.formats": '{"w": "q4_1"}'})
    [t] = read_header(src)
    tensors = {"w": t}
    weights = {"w": (t.shape, t.dtype), **{p.name: (p.shape, p.dtype) for p in t.parts.values()}}
    assert kernel_layout.interleavable(weights, "w")
    out = tmp_path / kernel_layout.LAYOUT_FILE
    kernel_layout.write_layout(tensors, weights, ["w"], out)
    got = {x.name: x for x in read_header(out)}
    assert {n: (x.shape, x.dtype) for n, x in got.items()} == kernel_layout.layout_weights(weights, ["w"])
    qi = np.fromfile(out, np.int8, got["w.qi"].nbytes, offset=got["w.qi"].offset).reshape(got["w.qi"].shape)
    np.testing.assert_array_equal(qi, kernel_layout.interleave_q(q))
    mi = np.fromfile(out, np.float16, got["w.mi"].nbytes // 2, offset=got["w.mi"].offset).reshape(got["w.mi"].shape)
    np.testing.assert_array_equal(mi, kernel_layout.interleave_scales(m))


def test_k_quant_scales_factor_back_to_the_files_widths_exactly():
    """The import's f32 K-quant scales (f16 d times 6-bit sc; -dmin times
    mn; Q6_K's d times int8 sc) factor back into an f16 per 256 values and
    int8 per block whose f32 product is the import's value bit for bit, also
    where no block's sc is the largest possible, and for zero super-blocks."""
    rng = np.random.default_rng(3)
    for per, lo, hi in ((8, 0, 64), (16, -128, 128), (8, 0, 8)):
        d = rng.uniform(-0.01, 0.01, (37, 4)).astype(np.float16).astype(np.float32)
        d[5, 2] = 0
        sc = rng.integers(lo, hi, (37, 4 * per)).astype(np.float32)
        p = np.repeat(d, per, axis=1) * sc
        sup, sub = kernel_layout.factor_scales(p, per)
        assert sup.dtype == np.float16 and sub.dtype == np.int8 and sup.shape == (37, 4)
        np.testing.assert_array_equal(np.repeat(sup.astype(np.float32), per, axis=1) * sub.astype(np.float32), p)


def test_k_quant_layout_is_the_files_bytes_and_a_little_more():
    """Q4_K's di holds int8 sc and mn a block (16 rows each), mi f16 d and
    -dmin per 256 values: 4.625 bits a value against the file's 4.5; Q6_K
    6-bit values, int8 sc per 16, f16 d: the file's 6.5625."""
    weights = {"w": ((4096, 2048), "q4_k"), "w.q": ((4096, 64, 32), "U4"), "w.d": ((4096, 64), "F32"),
               "w.m": ((4096, 64), "F32")}
    specs = kernel_layout.layout_weights(weights, ["w"])
    assert specs == {"w.qi": ((256, 64 * 16 * 16), "I8"), "w.di": ((256, 64 * 16 * 2), "I8"),
                     "w.mi": ((256, 8 * 16 * 2), "F16")}
    size = {"I8": 1, "F16": 2}
    bits = sum(np.prod(s) * size[t] for s, t in specs.values()) * 8 / (4096 * 2048)
    assert bits == 4.625
    q6 = {"w": ((4096, 2048), "q6_k"), "w.q": ((4096, 128, 16), "I8"), "w.d": ((4096, 128), "F32")}
    specs = kernel_layout.layout_weights(q6, ["w"])
    assert specs["w.qi"] == ((256, 128 * 16 * 12), "I8")
    assert sum(np.prod(s) * size[t] for s, t in specs.values()) * 8 / (4096 * 2048) == 6.5625  # the file's
    with np.testing.assert_raises(ValueError):
        kernel_layout.factor_scales(np.array([[0.1, 0.3]], np.float32), 2)


def test_q6_k_values_pack_to_6_bits():
    """pack_q6: u = q + 32 in three 32-bit words, each value's 6 bits where
    Q6_FIELDS puts them, value 15's split over the words' spare pairs; every
    bit used once. layout_q interleaves them word by word over 16 rows."""
    rng = np.random.default_rng(4)
    q = rng.integers(-32, 32, (21, 3, 16), dtype=np.int8)
    p = kernel_layout.pack_q6(q)
    assert p.shape == (21, 3, 12) and p.dtype == np.uint8
    u = q.astype(np.int64) + 32
    words = p.view("<u4").astype(np.int64)  # (21, 3, 3): A, B, C
    got = np.zeros_like(u)
    for k, fields in enumerate(kernel_layout.Q6_FIELDS):
        for v, bit in fields:
            got[..., v] = (words[..., k] >> bit) & 0x3F
        got[..., 15] |= ((words[..., k] >> kernel_layout.Q6_SPLIT[k]) & 3) << (2 * k)
    np.testing.assert_array_equal(got, u)
    ones = kernel_layout.pack_q6(np.full((1, 1, 16), 31, np.int8)).view("<u4")
    assert (ones == 0xFFFFFFFF).all()  # 63 everywhere: all 96 bits
    qi = kernel_layout.layout_q("q6_k", q).view(np.uint8).reshape(2, 3, 3, 16, 4)  # (group, block, word, row, byte)
    assert (qi[1, 2, 1, 4] == p[20, 2, 4:8]).all() and not qi[1, :, :, 5:].any()


def test_a_gguf_k_quants_own_factors_give_the_imports_scales_exactly():
    """Read in place, a K-quant's layout scales come from the file's own
    factors (reader.Blocks.factors: f16 d with 6-bit sc, -dmin with mn;
    Q6_K's d with its int8 scales), no search: each product equals the
    import's f32 scale bit for bit, and the layout's di/mi products equal
    those of the searched factorisation."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as Q

    from lse.compiler.gguf.reader import _blocks_of, _k_factors

    rng = np.random.default_rng(11)
    for qtype, per, scales in ((Q.Q4_K, 8, (0, 2)), (Q.Q5_K, 8, (0, 2)), (Q.Q6_K, 16, (208,))):
        rows, k = 21, 512
        block, size = GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, (rows * k // block, size), dtype=np.uint8)
        for at in scales:
            raw[:, at:at + 2] = np.float16(rng.uniform(1e-4, 1e-2, len(raw))).view(np.uint8).reshape(-1, 2)
        _, d, m = _blocks_of(raw, qtype)
        d = d.reshape(rows, -1).astype(np.float32)
        m = None if m is None else m.reshape(rows, -1).astype(np.float32)
        factors = _k_factors(raw, qtype, rows)
        for (sup, sub), want in zip(factors, [d, m] if m is not None else [d]):
            got = np.repeat(sup.astype(np.float32), per, axis=1) * sub.astype(np.float32)
            assert np.array_equal(got, want), qtype.name
        fmt = qtype.name.lower()
        fast, searched = kernel_layout.k_scale_parts(fmt, d, m, factors), kernel_layout.k_scale_parts(fmt, d, m)
        ks = kernel_layout.K_SUPER[fmt]
        assert np.array_equal(_products(*fast, ks, per), _products(*searched, ks, per)), qtype.name


def _products(di: np.ndarray, mi: np.ndarray, ks: int, per: int) -> np.ndarray:
    """Per group, block and (sc | mn) kind: the 16 rows' f32 scales a K-quant's layout gives."""
    g = di.shape[0]
    sub = di.reshape(g, -1, ks, 16).astype(np.float32)
    return sub * np.repeat(mi.reshape(g, -1, ks, 16).astype(np.float32), per, axis=1)
