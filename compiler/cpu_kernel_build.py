"""Hand-written llvm-cpu kernels: matmuls over block-format weights and
attention over an f16 KV cache, for decode and for prompts.

IREE's code generation fuses a block format's dequantization into a one-row
matvec but splits it for several rows into a dequant dispatch that writes the
whole f32 matrix on every call, then an f32 matmul (shared/notes/iree-lowbit.md;
dev/kernel_study), where a kernel unpacks each block once for every row.
So decode's matvecs over every block format LSE keeps call
``cpu_kernels/lse_qmv.c``, and a prompt's matmuls over every block format
``cpu_kernels/lse_gemm.c`` (f32 panels widened once per call, a 6 x 16
register microkernel, 6 x 64 in AVX-512's registers on x86-64-v4), each
through an IREE custom dispatch. RMSNorm
(with the residual add before it) calls ``cpu_kernels/lse_norm.c``.
Attention on an f16 cache calls ``cpu_kernels/lse_attn.c``:
for decode's few rows it reads each row's own slot up to its own position and
splits the positions across workgroups, where IREE's generic form makes a lone
decode row one reduction per head; for a prompt it takes blocks of 16 rows,
each row stopping at its own position, where the generic form masks the whole
window. docs/kernels.md says how each kernel works and what it gains.
The objects are built here with the system C compiler for x86-64-v3 (AVX2,
FMA, F16C) and linked into the module by iree-compile
(``hal.executable.objects``; IREE's samples/custom_dispatch/cpu/embedded).
Where there is no C compiler, the CPU lacks those features, or
LSE_CPU_KERNELS=0 is set, the generic forms are emitted instead: slower, same
numbers.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from lse.compiler.kernel_layout import K_SUPER, ROWS

SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_qmv.c"
ATTENTION_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_attn.c"
GEMM_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_gemm.c"
NORM_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_norm.c"
# Every executable links them all: lse_gemm.o calls lse_qmv.o's exports for a prompt of few rows.
OBJECTS = {"lse_qmv.o": SOURCE, "lse_attn.o": ATTENTION_SOURCE, "lse_gemm.o": GEMM_SOURCE, "lse_norm.o": NORM_SOURCE}
NORM_ROWS = 8  # rows per workgroup of lse_rms_norm
KV_WRITE_ROWS = 64  # a prompt's K and V rows per workgroup of lse_kv_write_f16
BASE_CFLAGS = ("-O3", "-ffreestanding", "-fno-builtin", "-fPIC", "-nostdlib", "-fno-stack-protector",
               "-fno-asynchronous-unwind-tables", "-fno-exceptions", "-fvisibility=hidden")
NEEDED_CPU_FLAGS = ("avx2", "fma", "f16c")
# x86-64-v4's AVX-512 on top: the matvecs keep 256-bit vectors, and gain 32
# registers rather than 16 (an 8-row q4_1 matvec keeps two accumulators a row
# and the block's weights in registers, faster than v3's loop: docs/kernels.md);
# the prompt GEMM's microkernel takes 512-bit vectors (the same bits as v3's).
# isa() is in the artifact cache key (compiler/cache.py), so it picks either.
V4_CPU_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
# The prompt GEMM on AMX-BF16 (cpu_kernels/lse_gemm_amx.h) where the CPU has
# the tiles and AVX-512's bf16 conversions; the kernel asks the OS for the
# tiles itself and runs the f32 GEMM where that is refused.
AMX_CPU_FLAGS = ("amx_tile", "amx_bf16", "avx512_bf16")
AMX_CFLAGS = ("-mamx-tile", "-mamx-bf16", "-mavx512bf16", "-DLSE_AMX=1")
# The matvecs on integer dot products (cpu_kernels/lse_qmv_dots.h) where the
# CPU has VNNI and VBMI beside AVX-512: x split per block into three 7-bit
# parts, 1.1-1.9x the FMA loop a core (docs/kernels.md).
DOTS_CPU_FLAGS = ("avx512_vnni", "avx512vbmi")
DOTS_CFLAGS = ("-mavx512vnni", "-mavx512vbmi", "-DLSE_INT_DOTS=1")
MAX_BLOCKS = 2048  # blocks a row: the matvec's block-sum buffer (lse_qmv.c's XS_FLOATS)
MAX_GROUPS = 16  # workgroups per matvec at most

# weights.BLOCK_FORMATS → (export stem, has an m binding, d element type, values
# per d, K-quant super-block scales per 256 values): 4-bit q as i4 pairs (q4_0,
# q4_1, q4_k), the rest as int8, as lse-import writes them (compiler/gguf/reader.py
# BLOCK_TYPES), which the kernels read in lse-compile's interleaved layout
# (kernel_layout.py). The K-quants' d is their int8 sub-block scales (ks a
# block), m their f16 super-block scales (ks per 256 values: kernel_layout.K_SUPER). cpu_kernels/lse_blocks.h lists the same
# formats; lse_qmv.c exports lse_<stem>_matvec (decode), lse_gemm.c
# lse_<stem>_gemm (a prompt's rows), each with the other's arguments.
FORMAT_EXPORTS = {"q4_1": ("u4", True, "f16", 32), "q8_0": ("i8", False, "f16", 32), "q5_0": ("i8", False, "f16", 32),
                  "q5_1": ("q5_1", True, "f16", 32), "q4_0": ("q4_0", False, "f16", 32),
                  "q4_k": ("q4_k", True, "i8", 32, 2), "q5_k": ("q5_k", True, "i8", 32, 2),
                  "q6_k": ("q6_k", True, "i8", 16, 1)}
KERNELS = {fmt: (f"{stem}_matvec", *rest) for fmt, (stem, *rest) in FORMAT_EXPORTS.items()}
# lse_<stem>_matvec2 / _matvec3: two or three matrices over the same x in one dispatch
SIBLINGS = (2, 3)
GEMMS = {fmt: (f"{stem}_gemm", *rest) for fmt, (stem, *rest) in FORMAT_EXPORTS.items()}
# lse_<stem>_embed (lse_gemm.c): an embedding table's rows by token id, from the same layout
EMBEDS = {fmt: (f"{stem}_embed", *rest) for fmt, (stem, *rest) in FORMAT_EXPORTS.items()}
EMBED_ROWS = 16  # token rows per workgroup of lse_<stem>_embed
GEMM_PANEL, GEMM_MAX_PANELS = 16, 4  # lse_gemm.c's NR and MAX_PANELS
SPLIT_TILES = 4  # tiles of 16 rows a workgroup of lse_split_x
AMX_PANELS = 8  # panels per workgroup of the AMX build: x's split serves 128 columns (lse_gemm_amx.h's AMX_GROUPS: 16 at most)
GEMM_FEW_ROWS = 16  # lse_gemm.c's FEW_ROWS: a prompt of at most this many rows runs the matvec


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """This CPU's flags, read once a process (emitting a model asks per matmul)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def v4_capable() -> bool:
    return all(f in _cpu_flags() for f in V4_CPU_FLAGS)


def isa() -> str:
    """The x86-64 level the kernels are built for: v4 where this CPU has
    AVX-512 (LSE_KERNEL_ISA=v3 keeps v3, for comparison), else v3."""
    return "v4" if os.environ.get("LSE_KERNEL_ISA", "v4") == "v4" and v4_capable() else "v3"


def amx() -> bool:
    """Whether the prompt GEMM is built with its AMX-BF16 form: on v4, where
    the CPU has AMX (LSE_KERNEL_AMX=0 builds without, for comparison). In the
    artifact cache key (compiler/cache.py)."""
    return (os.environ.get("LSE_KERNEL_AMX", "1") != "0" and isa() == "v4"
            and all(f in _cpu_flags() for f in AMX_CPU_FLAGS))


def int_dots() -> bool:
    """Whether the matvecs take integer dot products: on v4, where the
    CPU has DOTS_CPU_FLAGS (LSE_KERNEL_DOTS=0 builds the FMA loop, for
    comparison). In the artifact cache key (compiler/cache.py)."""
    return (os.environ.get("LSE_KERNEL_DOTS", "1") != "0" and isa() == "v4"
            and all(f in _cpu_flags() for f in DOTS_CPU_FLAGS))


# lse_qmv.c's 4- and 6-bit lanes: "denormal" (the lane's bits read as the
# denormal I * 2^-149, no conversion) or "convert" (I converted to f32), the
# same sums either way. LSE_KERNEL_LANES chooses; by default slow_denormals.
LANES = ("denormal", "convert")
SLOW_DENORMALS = 4.0  # a multiply on denormal operands this many times slower than on normal ones


@functools.lru_cache(maxsize=1)
def slow_denormals() -> bool:
    """Whether this CPU's multiplies take a microcode assist on a denormal
    operand, measured: most Intel cores do (35x slower on this project's
    Xeon), AMD's Zen cores run them at full speed. numpy's f32 multiply of
    denormals u * 2^-149 by x * 2^100 (products normal, as the kernel's are)
    against the same with normal u; the best of 15 calls each."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(1 << 15) * 2.0**100).astype(np.float32)
    u = (np.arange(x.size, dtype=np.uint32) % 15 + 1)
    operands = {"normal": u.astype(np.float32), "denormal": u.view(np.float32)}
    out = np.empty_like(x)
    best = {}
    for name, a in operands.items():
        times = []
        for _ in range(15):
            t0 = time.perf_counter()
            np.multiply(a, x, out=out)
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
    return best["denormal"] > SLOW_DENORMALS * best["normal"]


def lanes() -> str:
    """How the kernels take 4- and 6-bit values on this CPU: LSE_KERNEL_LANES
    (denormal or convert), else "convert" where denormals are slow here."""
    env = os.environ.get("LSE_KERNEL_LANES")
    if env in LANES:
        return env
    return "convert" if slow_denormals() else "denormal"


def cflags(level: str | None = None, lane: str | None = None, dots: bool | None = None) -> tuple[str, ...]:
    convert = ("-DLSE_CONVERT_LANES=1",) if (lane or lanes()) == "convert" else ()
    level = level or isa()
    ints = DOTS_CFLAGS if level == "v4" and (int_dots() if dots is None else dots) else ()
    return (*BASE_CFLAGS, f"-march=x86-64-{level}", *convert, *ints)


def kernels_available() -> str | None:
    """Why the kernels can't be built here, or None when they can."""
    if os.environ.get("LSE_CPU_KERNELS") == "0":
        return "LSE_CPU_KERNELS=0"
    flags = _cpu_flags()
    missing = [f for f in NEEDED_CPU_FLAGS if f not in flags]
    if missing:
        return f"the CPU lacks {', '.join(missing)}"
    if shutil.which("cc") is None:
        return "no C compiler (cc) on PATH"
    return None


def object_flags() -> dict[str, tuple[str, ...]]:
    """Each object's C compiler flags (kernel_objects keys its store by them):
    the prompt GEMM's with its AMX form where amx()."""
    gemm = AMX_CFLAGS if amx() else ()
    return {obj: (*cflags(), *(gemm if obj == "lse_gemm.o" else ())) for obj in OBJECTS}


def compile_objects(out_dir: Path) -> list[Path]:
    """Compile the kernels into ``out_dir``, side by side (kernel_objects.build_object keeps them once per machine)."""
    jobs = {obj: subprocess.Popen(["cc", *flags, "-c", str(OBJECTS[obj]), "-o", str(out_dir / obj)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for obj, flags in object_flags().items()}
    said = [(job, job.communicate()[0]) for job in jobs.values()]  # every one waited for, then the first error
    for job, output in said:
        if job.returncode:
            raise subprocess.CalledProcessError(job.returncode, job.args, output)
    return [out_dir / obj for obj in jobs]


def _whole_rows(fmt: str, k: int) -> bool:
    """k in whole blocks: 32 values, 256 for a K-quant's super-blocks."""
    return k % (256 if fmt in K_SUPER else 32) == 0


def supports(fmt: str, k: int) -> bool:
    return fmt in KERNELS and _whole_rows(fmt, k) and k // KERNELS[fmt][3] <= MAX_BLOCKS


def gemm_supports(fmt: str, k: int) -> bool:
    return fmt in GEMMS and _whole_rows(fmt, k)


def gemm_tile(n: int) -> tuple[int, int]:
    """(output columns per workgroup, workgroups) for the prompt GEMM: up to 4
    panels of 16 (each row block of x then serves 64 columns: 80 against 61
    GFLOP/s for one panel, one thread, 512 rows), fewer where that would
    leave under 12 workgroups to share among the cores. The AMX build: up to
    AMX_PANELS (x is split once a workgroup: docs/kernels.md), fewer where
    that would leave under 2 workgroups a core; its f32 form takes 4 at a time."""
    panels, least = (AMX_PANELS, 2 * matvec_groups()) if amx() else (GEMM_MAX_PANELS, 12)
    while panels > 1 and -(-n // (panels * GEMM_PANEL)) < least:
        panels //= 2
    cols = panels * GEMM_PANEL
    return cols, -(-n // cols)


def norm_supports(weight_dtype: str, group: int, width: int) -> bool:
    """lse_rms_norm: an f32 weight, one group over the whole row, 8-wide."""
    return weight_dtype == "f32" and group == width and width % 8 == 0


def attention_supports(kv_dtype: str, head_dim: int, groups: int) -> bool:
    """The attention kernel's limits (lse_attn.c: MAX_D, MAX_G; 8-wide rows)."""
    return kv_dtype == "f16" and head_dim % 8 == 0 and 8 <= head_dim <= 256 and groups <= 16


def attention_ropes(head_dim: int) -> bool:
    """lse_attend_write_f16 applies decode's RoPE to q and K itself (rope8:
    each half of a head whole vectors of 8)."""
    return head_dim % 16 == 0


def matvec_groups() -> int:
    """Workgroups per decode matvec: one per core this process may run on
    (IREE's local-task starts a worker per core), at most MAX_GROUPS. Each
    workgroup then reads one long run of weight rows, as llama.cpp splits a
    matvec among its threads, rather than many short runs (docs/kernels.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_GROUPS, cores))


def tile_rows(n: int) -> tuple[int, int]:
    """(rows per workgroup, whole interleaved groups of ROWS; workgroups) for an N-row matvec."""
    per_group = -(-n // matvec_groups())
    tile = max(ROWS, -(-per_group // ROWS) * ROWS)
    return tile, -(-n // tile)


def attention_heads(kv_heads: int, groups: int, head_dim: int) -> int:
    """KV heads per workgroup of lse_attend_write_f16: the most that divide kv and
    fit its buffers (MAX_ACC: heads * groups * head_dim <= 4096; KF: a chunk
    of at least 8 positions, heads * head_dim <= 1024). One suffices for every
    head size the kernel takes (head_dim <= 256, groups <= 16)."""
    fits = [h for h in range(1, kv_heads + 1)
            if kv_heads % h == 0 and h * groups * head_dim <= 4096 and h * head_dim <= 1024]
    return max(fits, default=1)


def attention_splits(rows: int, head_groups: int) -> int:
    """Splits of the positions per (row, group of KV heads): enough
    workgroups for a lone decode row to use a few cores (lse_attend_merge
    joins them)."""
    return max(1, min(8, -(-8 // (rows * head_groups))))


def attention_block_rows(groups: int, head_dim: int) -> int:
    """Query rows per workgroup of lse_attend_rows_f16 (its MAX_QV_D and
    MAX_S bound rows * groups * head_dim and rows * groups * 8): 16 where
    they fit, faster than 8 (docs/kernels.md)."""
    return max(1, min(16, 8192 // (groups * head_dim), 512 // groups))
