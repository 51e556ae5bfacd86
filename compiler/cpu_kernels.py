"""Hand-written llvm-cpu kernels: matmuls over block-format weights and
attention over an f16 KV cache, for decode and for prompts.

IREE's code generation fuses a block format's dequantization into a one-row
matvec but splits it for several rows into a dequant dispatch that writes the
whole f32 matrix on every call, then an f32 matmul (shared/notes/iree-lowbit.md;
tools/kernel_study measured 148 ms per token at 4 rows, against 17 ms for a
kernel that unpacks each block once for every row). So decode's matvecs over
q4_1, q8_0 and q5_0 weights call ``cpu_kernels/lse_qmv.c``, and a prompt's
matmuls over every block format ``cpu_kernels/lse_gemm.c`` (f32 panels widened
once per call, a 6 x 16 register microkernel: with the attention and norm
kernels, a 512-token chunk of the default model 1.19 instead of 2.27 s, 37
tokens 91 instead of 167 ms), each through an IREE custom dispatch. RMSNorm
(with the residual add before it) calls ``cpu_kernels/lse_norm.c``.
Attention on an f16 cache calls ``cpu_kernels/lse_attn.c``:
for decode's few rows it reads each row's own slot up to its own position and
splits the positions across workgroups, where IREE's generic form made a lone
decode row one reduction per head (1000 positions: 12.6 against 15.6 ms per
step); for a prompt it takes blocks of 16 rows, each row stopping at its own
position, where the generic form masked the whole window (30 layers, 512 rows
at 1536: 0.70 against 2.7 s).
The objects are built here with the system C compiler for x86-64-v3 (AVX2,
FMA, F16C) and linked into the module by iree-compile
(``hal.executable.objects``; IREE's samples/custom_dispatch/cpu/embedded).
Where there is no C compiler, the CPU lacks those features, or
LSE_CPU_KERNELS=0 is set, the generic forms are emitted instead: slower, same
numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_qmv.c"
ATTENTION_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_attn.c"
GEMM_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_gemm.c"
NORM_SOURCE = Path(__file__).parent / "cpu_kernels" / "lse_norm.c"
OBJECTS = {"lse_qmv.o": SOURCE, "lse_attn.o": ATTENTION_SOURCE, "lse_gemm.o": GEMM_SOURCE, "lse_norm.o": NORM_SOURCE}
NORM_ROWS = 8  # rows per workgroup of lse_rms_norm
CFLAGS = ("-O3", "-march=x86-64-v3", "-ffreestanding", "-fno-builtin", "-fPIC", "-nostdlib", "-fno-stack-protector",
          "-fno-asynchronous-unwind-tables", "-fno-exceptions", "-fvisibility=hidden")
NEEDED_CPU_FLAGS = ("avx2", "fma", "f16c")
MAX_K = 4096  # the kernel's per-workgroup block-sum buffer (MAX_NB = 128 blocks of 32)
MAX_GROUPS = 16  # workgroups per matvec: enough to balance a few cores, few enough to keep each one long

# format → (export, whether the block has an offset m). The stored layout is
# lse-import's (compiler/weights.py): q4_1 q as i4 pairs, q8_0 and q5_0 q as i8, f16 d (and m).
KERNELS = {"q4_1": ("u4_matvec", True), "q8_0": ("i8_matvec", False), "q5_0": ("i8_matvec", False)}
# format → the prompt GEMM's export (lse_gemm.c): the matvec's arguments, `tile`
# output columns per workgroup; (export, has m, d/m element type, values per d),
# the layout lse-import writes (tools/gguf_weights.py BLOCK_TYPES).
GEMMS = {"q4_1": ("u4_gemm", True, "f16", 32), "q8_0": ("i8_gemm", False, "f16", 32),
         "q5_0": ("i8_gemm", False, "f16", 32), "q5_1": ("q5_1_gemm", True, "f16", 32),
         "q4_0": ("q4_0_gemm", False, "f16", 32), "q4_k": ("q4_k_gemm", True, "f32", 32),
         "q5_k": ("q5_k_gemm", True, "f32", 32), "q6_k": ("q6_k_gemm", False, "f32", 16)}
GEMM_PANEL, GEMM_MAX_PANELS = 16, 4  # lse_gemm.c's NR and MAX_PANELS


def kernels_available() -> str | None:
    """Why the kernels can't be built here, or None when they can."""
    if os.environ.get("LSE_CPU_KERNELS") == "0":
        return "LSE_CPU_KERNELS=0"
    cpuinfo = Path("/proc/cpuinfo")
    flags = set()
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    missing = [f for f in NEEDED_CPU_FLAGS if f not in flags]
    if missing:
        return f"the CPU lacks {', '.join(missing)}"
    if shutil.which("cc") is None:
        return "no C compiler (cc) on PATH"
    return None


def build_object(out_dir: Path) -> list[Path]:
    """Compile the kernels into ``out_dir`` (iree-compile links the objects)."""
    outs = []
    for obj, source in OBJECTS.items():
        out = out_dir / obj
        subprocess.run(["cc", *CFLAGS, "-c", str(source), "-o", str(out)], check=True, capture_output=True, text=True)
        outs.append(out)
    return outs


def supports(fmt: str, k: int) -> bool:
    return fmt in KERNELS and k % 32 == 0 and k <= MAX_K


def gemm_supports(fmt: str, k: int) -> bool:
    return fmt in GEMMS and k % 32 == 0


def gemm_tile(n: int) -> tuple[int, int]:
    """(output columns per workgroup, workgroups) for the prompt GEMM: up to 4
    panels of 16 (each row block of x then serves 64 columns: 80 against 61
    GFLOP/s for one panel, one thread, 512 rows), fewer where that would
    leave under 12 workgroups to share among the cores."""
    panels = GEMM_MAX_PANELS
    while panels > 1 and -(-n // (panels * GEMM_PANEL)) < 12:
        panels //= 2
    cols = panels * GEMM_PANEL
    return cols, -(-n // cols)


def norm_supports(weight_dtype: str, group: int, width: int) -> bool:
    """lse_rms_norm: an f32 weight, one group over the whole row, 8-wide."""
    return weight_dtype == "f32" and group == width and width % 8 == 0


def attention_supports(kv_dtype: str, head_dim: int, groups: int) -> bool:
    """The attention kernel's limits (lse_attn.c: MAX_D, MAX_G; 8-wide rows)."""
    return kv_dtype == "f16" and head_dim % 8 == 0 and 8 <= head_dim <= 256 and groups <= 16


def tile_rows(n: int) -> tuple[int, int]:
    """(rows per workgroup, a multiple of 4; workgroups) for an N-row matvec."""
    per_group = -(-n // MAX_GROUPS)
    tile = max(4, -(-per_group // 4) * 4)
    return tile, -(-n // tile)


def _export(name: str) -> str:
    return f"""    stream.executable.export public @{name} workgroups(%nwg: index) -> (index, index, index) {{
      %c1 = arith.constant 1 : index
      stream.return %nwg, %c1, %c1 : index, index, index
    }}"""


def _pointers(bindings: list[tuple[str, str, str]]) -> str:
    """Each (name, element type, element count) binding %<name>b as a memref,
    then its base pointer and offset (%<name>base, %<name>off) for the C call."""
    subspans = "".join(f"        %{n}m = stream.binding.subspan %{n}b[%c0] : !stream.binding -> "
                       f"memref<?x{e}>{{{c}}}\n" for n, e, c in bindings)
    metadata = "".join(f"        %{n}base, %{n}off, %{n}s, %{n}st = iree_codegen.extract_strided_metadata %{n}m : "
                       f"memref<?x{e}> -> memref<{e}>, index, index, index\n" for n, e, _ in bindings)
    return subspans + metadata


def _entry(export: str, has_m: bool, scale: str = "f16", block: int = 32) -> tuple[str, str]:
    """One export, and its functions: bindings → base pointers and offsets →
    the C call. ``scale`` is d's (and m's) element type, ``block`` the values
    per scale."""
    c_name = f"lse_{export}"
    m_arg = ", %mb: !stream.binding" if has_m else ""
    m_call, m_ty = (" %mbase, %moff,", f" memref<{scale}>, index,") if has_m else ("", "")
    pointers = _pointers([("x", "f32", "%xn"), ("q", "i8", "%qn"), ("d", scale, "%dn"),
                          *([("m", scale, "%dn")] if has_m else []), ("y", "f32", "%yn")])
    return _export(export), f"""      func.func private @{c_name}(memref<f32>, index, memref<i8>, index, memref<{scale}>, index,{m_ty}
                                  memref<f32>, index, index, index, index, index, index)
          attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @{export}(%xb: !stream.binding, %qb: !stream.binding, %db: !stream.binding{m_arg},
                          %yb: !stream.binding, %r: index, %n: index, %k: index, %tile: index, %qk: index) {{
        %c0 = arith.constant 0 : index
        %cb = arith.constant {block} : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %xn = arith.muli %r, %k : index
        %yn = arith.muli %r, %n : index
        %qn = arith.muli %n, %qk : index
        %kb = arith.divui %k, %cb : index
        %dn = arith.muli %n, %kb : index
{pointers}        func.call @{c_name}(%xbase, %xoff, %qbase, %qoff, %dbase, %doff,{m_call} %ybase, %yoff, %r, %n, %k, %tile, %wg)
            : (memref<f32>, index, memref<i8>, index, memref<{scale}>, index,{m_ty} memref<f32>, index, index, index,
               index, index, index) -> ()
        return
      }}"""


def attention_splits(rows: int, kv_heads: int) -> int:
    """Splits of the positions per (row, KV head): enough workgroups for a
    lone decode row to use a few cores (lse_attend_merge joins them)."""
    return max(1, min(8, -(-8 // (rows * kv_heads))))


def attention_block_rows(groups: int, head_dim: int) -> int:
    """Query rows per workgroup of lse_attend_rows_f16 (its MAX_QV_D and
    MAX_S bound rows * groups * head_dim and rows * groups * 8): 16 measured
    8% faster than 8 for SmolLM2's prefill, 512 rows at 1536-2047."""
    return max(1, min(16, 8192 // (groups * head_dim), 512 // groups))


def _attention_entries() -> list[tuple[str, str]]:
    """attend_f16: q, the whole cache, positions → partial records;
    attend_merge: partial records → y. The C calls get base pointers and
    offsets, then the sizes (lse_attn.c)."""
    attend_idx = ", ".join(["index"] * 11)  # rows, layer, slot0, step, p, t, kv, g, d, splits, wg
    attend = f"""      func.func private @lse_attend_f16(memref<f32>, index, memref<f16>, index, memref<i64>, index, memref<f32>,
                                        index, {attend_idx}) attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @attend_f16(%qb: !stream.binding, %cb: !stream.binding, %pb: !stream.binding, %ob: !stream.binding,
                            %rows: index, %qc: index, %cn: index, %on: index, %layer: index, %slot0: index,
                            %step: index, %p: index, %t: index, %kv: index, %g: index, %d: index, %s: index) {{
        %c0 = arith.constant 0 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %qn = arith.muli %rows, %qc : index
{_pointers([("q", "f32", "%qn"), ("c", "f16", "%cn"), ("p", "i64", "%rows"), ("o", "f32", "%on")])}        func.call @lse_attend_f16(%qbase, %qoff, %cbase, %coff, %pbase, %poff, %obase, %ooff, %rows, %layer, %slot0,
                                  %step, %p, %t, %kv, %g, %d, %s, %wg)
            : (memref<f32>, index, memref<f16>, index, memref<i64>, index, memref<f32>, index, {attend_idx}) -> ()
        return
      }}"""
    merge_idx = ", ".join(["index"] * 5)  # kv, g, d, splits, wg
    merge = f"""      func.func private @lse_attend_merge(memref<f32>, index, memref<f32>, index, {merge_idx})
          attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @attend_merge(%ob: !stream.binding, %yb: !stream.binding, %on: index, %yn: index, %kv: index,
                              %g: index, %d: index, %s: index) {{
        %c0 = arith.constant 0 : index
        %wg = stream.dispatch.workgroup.id[0] : index
{_pointers([("o", "f32", "%on"), ("y", "f32", "%yn")])}        func.call @lse_attend_merge(%obase, %ooff, %ybase, %yoff, %kv, %g, %d, %s, %wg)
            : (memref<f32>, index, memref<f32>, index, {merge_idx}) -> ()
        return
      }}"""
    rows_idx = ", ".join(["index"] * 10)  # rows, layer, slot, p, t, kv, g, d, br, wg
    rows = f"""      func.func private @lse_attend_rows_f16(memref<f32>, index, memref<f16>, index, memref<i64>, index,
                                             memref<f32>, index, {rows_idx}) attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @attend_rows_f16(%qb: !stream.binding, %cb: !stream.binding, %pb: !stream.binding, %yb: !stream.binding,
                                 %rows: index, %qc: index, %cn: index, %layer: index, %slot: index, %p: index,
                                 %t: index, %kv: index, %g: index, %d: index, %br: index) {{
        %c0 = arith.constant 0 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %qn = arith.muli %rows, %qc : index
{_pointers([("q", "f32", "%qn"), ("c", "f16", "%cn"), ("p", "i64", "%rows"), ("y", "f32", "%qn")])}        func.call @lse_attend_rows_f16(%qbase, %qoff, %cbase, %coff, %pbase, %poff, %ybase, %yoff, %rows, %layer,
                                       %slot, %p, %t, %kv, %g, %d, %br, %wg)
            : (memref<f32>, index, memref<f16>, index, memref<i64>, index, memref<f32>, index, {rows_idx}) -> ()
        return
      }}"""
    return [(_export("attend_f16"), attend), (_export("attend_merge"), merge), (_export("attend_rows_f16"), rows)]


def _norm_entries() -> list[tuple[str, str]]:
    """rms_norm: x, w → y; add_rms_norm: a, b, w → a + b, y. Then rows,
    width, eps as its f32 bits, rows per workgroup."""
    idx = ", ".join(["index"] * 5)  # rows, c, eps bits, per, wg
    add = f"""      func.func private @lse_add_rms_norm(memref<f32>, index, memref<f32>, index, memref<f32>, index,
                                          memref<f32>, index, memref<f32>, index, {idx})
          attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @add_rms_norm(%ab: !stream.binding, %bb: !stream.binding, %wb: !stream.binding, %sb: !stream.binding,
                              %yb: !stream.binding, %rows: index, %c: index, %eps: index, %per: index) {{
        %c0 = arith.constant 0 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %xn = arith.muli %rows, %c : index
{_pointers([("a", "f32", "%xn"), ("b", "f32", "%xn"), ("w", "f32", "%c"), ("s", "f32", "%xn"), ("y", "f32", "%xn")])}        func.call @lse_add_rms_norm(%abase, %aoff, %bbase, %boff, %wbase, %woff, %sbase, %soff, %ybase, %yoff, %rows,
                                    %c, %eps, %per, %wg)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, memref<f32>, index, memref<f32>, index,
               {idx}) -> ()
        return
      }}"""
    return [(_export("add_rms_norm"), add), (_export("rms_norm"), f"""      func.func private @lse_rms_norm(memref<f32>, index, memref<f32>, index, memref<f32>, index, {idx})
          attributes {{hal.import.static, llvm.bareptr = true}}
      func.func @rms_norm(%xb: !stream.binding, %wb: !stream.binding, %yb: !stream.binding, %rows: index, %c: index,
                          %eps: index, %per: index) {{
        %c0 = arith.constant 0 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %xn = arith.muli %rows, %c : index
{_pointers([("x", "f32", "%xn"), ("w", "f32", "%c"), ("y", "f32", "%xn")])}        func.call @lse_rms_norm(%xbase, %xoff, %wbase, %woff, %ybase, %yoff, %rows, %c, %eps, %per, %wg)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, {idx}) -> ()
        return
      }}""")]


def executable() -> str:
    """The module-level executable holding every kernel entry (emitted once)."""
    # formats sharing a layout share an export (q5_0 is q8_0's): each declared once
    entries = [_entry(export, has_m) for export, has_m in dict(KERNELS.values()).items()]
    entries += [_entry(*spec) for spec in {spec[0]: spec for spec in GEMMS.values()}.values()]
    entries += _attention_entries() + _norm_entries()
    exports = "\n".join(head for head, _ in entries)
    funcs = "\n".join(body for _, body in entries)
    objects = ", ".join(f'#hal.executable.object<{{path = "{o}"}}>' for o in OBJECTS)
    return f"""  stream.executable private @lse_kernels attributes {{
    hal.executable.objects = #hal.executable.objects<{{
      #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64"> = [{objects}]
    }}>
  }} {{
{exports}
    builtin.module {{
{funcs}
    }}
  }}"""
