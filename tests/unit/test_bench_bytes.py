"""Bytes of weights a decode token reads (tools/bench_bytes.py): the GGUF's
bytes from ggml's block sizes, the CPU kernels' layout from kernel_layout's
own parameter shapes, at the 1B shape of issue 37's scale files."""

from __future__ import annotations

import pytest

from lse.tools import bench_bytes

pytestmark = pytest.mark.unit

ONE_B = bench_bytes.SHAPES["1b"]
# per layer: q, o (2048 x 2048), k, v (512 x 2048), gate, up (8192 x 2048), down (2048 x 8192)
Q4K_VALUES = 16 * (2 * 2048 * 2048 + 512 * 2048 + 2 * 8192 * 2048)
Q6K_VALUES = 16 * (512 * 2048 + 2048 * 8192) + 49152 * 2048  # attn_v, ffn_down, the tied output


def test_q4_k_m_layout_reads_the_files_widths():
    """Q4_K: packed nibbles, int8 sc and mn a 32-value block, f16 d and
    -dmin per 256 (4.625 bits against the file's 4.5); Q6_K: 6-bit values,
    int8 sc a 16-value block, f16 d per 256, the file's own 6.5625 bits."""
    got = bench_bytes.bytes_per_token(ONE_B, bench_bytes.MIXES["q4_k_m"])
    assert list(got) == ["q4_k", "q6_k", "total"]
    assert got["q4_k"] == {"values": Q4K_VALUES, "gguf": Q4K_VALUES * 144 // 256,
                           "layout": Q4K_VALUES // 2 + Q4K_VALUES // 32 * 2 + Q4K_VALUES // 256 * 4}
    assert got["q6_k"] == {"values": Q6K_VALUES, "gguf": Q6K_VALUES * 210 // 256,
                           "layout": Q6K_VALUES * 210 // 256}  # the file's bytes
    assert got["total"]["gguf"] == 703_463_424 and got["total"]["layout"] == 714_211_328


def test_q4_0_and_q8_0_layouts_hold_the_files_bytes():
    q4 = bench_bytes.bytes_per_token(ONE_B, bench_bytes.MIXES["q4_0"])
    assert q4["q4_0"]["layout"] == q4["q4_0"]["gguf"] == q4["q4_0"]["values"] * 18 // 32
    q8 = bench_bytes.bytes_per_token(ONE_B, bench_bytes.MIXES["q8_0"])
    assert list(q8) == ["q8_0", "total"] and q8["total"]["layout"] == q8["total"]["gguf"] == 1_140_850_688


def test_a_partial_group_of_rows_is_read_whole():
    """37 rows are 3 groups of 16: the layout holds 48 rows' bytes."""
    assert bench_bytes.layout_bytes("q8_0", 37, 64) == 48 * 2 * (32 + 2)


def test_the_table_prints_one_line_a_format(capsys):
    assert bench_bytes.main(["--scale", "1b", "--mix", "q4_k_m"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "| 1b | q4_k_m | total | 1074 M | 703.5 | 5.24 | 714.2 | 5.32 | 1.015 |"


def test_an_imported_models_block_matrices_count_at_the_layouts_size(tmp_path):
    """The bench's LSE rows (bench_lse.lse_bytes_per_token) read layout_sizes:
    a Q6_K matrix at its layout's bytes (20 rows as 32: 6-bit values, int8
    sc a 16-value block, an f16 d per 256), a float tensor as stored."""
    from lse.compiler.weights import TensorInfo

    f = tmp_path / "w.safetensors"
    q6 = TensorInfo("w", f, "q6_k", (20, 256), 0, 20 * 210, parts={})
    norm = TensorInfo("n", f, "F32", (256,), 0, 1024)
    assert bench_bytes.layout_sizes({"w": q6, "n": norm}) == {"w": 32 * 256 * 6 // 8 + 32 * 16 + 32 * 2, "n": 1024}
