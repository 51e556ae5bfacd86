"""cpu_kernel_build's choices, without building anything: the x86-64 level
and the lane kind the kernels are built for (the CPU's flags, the measured
denormal cost, the LSE_KERNEL_* overrides), and how the matvec and the
prompt GEMM split a matrix's rows among workgroups."""

from __future__ import annotations

import pytest

from lse.compiler import cpu_kernel_build as cpu_kernels


@pytest.mark.parametrize("amx", ["0", "1"])
def test_prompt_gemm_tiles_cover_every_column(monkeypatch, amx):
    """Whole panels, at most the build's panels a workgroup (the AMX build's
    AMX_PANELS, inside lse_gemm_amx.h's AMX_GROUPS), every column in one."""
    monkeypatch.setenv("LSE_KERNEL_AMX", amx)
    most = cpu_kernels.AMX_PANELS if cpu_kernels.amx() else cpu_kernels.GEMM_MAX_PANELS
    assert cpu_kernels.AMX_PANELS <= 16
    for n in (1, 13, 192, 576, 1536, 49152):
        cols, groups = cpu_kernels.gemm_tile(n)
        assert cols % cpu_kernels.GEMM_PANEL == 0 and cols <= cpu_kernels.GEMM_PANEL * most
        assert (groups - 1) * cols < n <= groups * cols


@pytest.mark.parametrize("flags, env, want", [
    ({"avx2", "fma", "f16c"}, None, "v3"),
    ({"avx2", "fma", "f16c", *cpu_kernels.V4_CPU_FLAGS}, None, "v4"),
    ({"avx2", "fma", "f16c", *cpu_kernels.V4_CPU_FLAGS}, "v3", "v3"),
    ({"avx2", "fma", "f16c", "avx512f"}, None, "v3"),  # AVX-512F alone is not x86-64-v4
])
def test_kernels_build_for_v4_only_where_the_cpu_has_it(monkeypatch, flags, env, want):
    monkeypatch.setattr(cpu_kernels, "_cpu_flags", lambda: set(flags))
    if env:
        monkeypatch.setenv("LSE_KERNEL_ISA", env)
    else:
        monkeypatch.delenv("LSE_KERNEL_ISA", raising=False)
    assert cpu_kernels.isa() == want
    assert f"-march=x86-64-{want}" in cpu_kernels.cflags()


@pytest.mark.parametrize("cores", [1, 2, 3, 8, 64])
def test_matvec_tiles_one_run_of_rows_per_core(monkeypatch, cores):
    """A decode matvec has a workgroup per core this process may use (at
    most MAX_GROUPS), each a run of whole 4-row tiles, together every row."""
    monkeypatch.setattr(cpu_kernels.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    for n in (1, 13, 192, 576, 1536, 49152):
        tile, groups = cpu_kernels.tile_rows(n)
        assert tile % 4 == 0 and groups <= min(cores, cpu_kernels.MAX_GROUPS)
        assert (groups - 1) * tile < n <= groups * tile
    assert cpu_kernels.tile_rows(49152) == (-(-49152 // min(cores, cpu_kernels.MAX_GROUPS)), min(cores, 16))


@pytest.mark.parametrize("env, slow, want", [("denormal", True, "denormal"), ("convert", False, "convert"),
                                             (None, True, "convert"), (None, False, "denormal")])
def test_lanes_follow_the_measured_cpu_unless_chosen(monkeypatch, env, slow, want):
    monkeypatch.setattr(cpu_kernels, "slow_denormals", lambda: slow)
    if env:
        monkeypatch.setenv("LSE_KERNEL_LANES", env)
    else:
        monkeypatch.delenv("LSE_KERNEL_LANES", raising=False)
    assert cpu_kernels.lanes() == want
    assert ("-DLSE_CONVERT_LANES=1" in cpu_kernels.cflags()) == (want == "convert")
