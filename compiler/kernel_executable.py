"""The executable that declares the hand-written llvm-cpu kernels to IREE
(emitted once a module, emit_module.py): an export per kernel entry, each a
function that binds its buffers and calls the C function the objects
(cpu_kernel_build.OBJECTS) define. The C signatures are the kernels' own
(lse_blocks.h's LSE_BLOCK_ARGS, lse_attn.c, lse_norm.c, lse_gemm.c's embed)."""

from __future__ import annotations

from lse.compiler.cpu_kernel_build import EMBEDS, GEMMS, KERNELS, OBJECTS, SIBLINGS, amx


def _export(name: str) -> str:
    return f"""    stream.executable.export public @{name} workgroups(%nwg: index) -> (index, index, index) {{
      %c1 = arith.constant 1 : index
      stream.return %nwg, %c1, %c1 : index, index, index
    }}"""


def _entry(export: str, c_name: str, bindings: list[tuple[str, str, str]], params: list[str], sizes: list[str],
           call: list[str]) -> tuple[str, str]:
    """One export and its function: each (name, element type, element count)
    binding %<name>b becomes a memref, then its base pointer and offset for the
    C function, which gets them in order, then the index values ``call`` and
    the workgroup id. ``params`` are the dispatch's index operands (%<name>);
    ``sizes`` the lines that compute element counts from them."""
    ptr_types = "".join(f"memref<{e}>, index, " for _, e, _ in bindings)
    c_types = ptr_types + ", ".join(["index"] * (len(call) + 1))
    c_args = ", ".join([f"%{n}base, %{n}off" for n, _, _ in bindings] + call + ["%wg"])
    signature = ", ".join([f"%{n}b: !stream.binding" for n, _, _ in bindings] + [f"%{p}: index" for p in params])
    lines = ["%c0 = arith.constant 0 : index", "%wg = stream.dispatch.workgroup.id[0] : index", *sizes]
    lines += [f"%{n}m = stream.binding.subspan %{n}b[%c0] : !stream.binding -> memref<?x{e}>{{{c}}}"
              for n, e, c in bindings]
    lines += [f"%{n}base, %{n}off, %{n}s, %{n}st = iree_codegen.extract_strided_metadata %{n}m : "
              f"memref<?x{e}> -> memref<{e}>, index, index, index" for n, e, _ in bindings]
    lines += [f"func.call @{c_name}({c_args}) : ({c_types}) -> ()", "return"]
    body = "\n".join(f"        {line}" for line in lines)
    return _export(export), (f"      func.func private @{c_name}({c_types})\n"
                             f"          attributes {{hal.import.static, llvm.bareptr = true}}\n"
                             f"      func.func @{export}({signature}) {{\n{body}\n      }}")


# x split for the AMX GEMM (lse_split_x): per tile of 16 rows and 32 values,
# three 16 x 32 bf16 tiles (as i16) and 16 sums.
_SPLIT_SIZES = ["%c16s = arith.constant 16 : index", "%c15s = arith.constant 15 : index",
                "%rt = arith.addi %r, %c15s : index", "%tiles = arith.divui %rt, %c16s : index",
                "%c32s = arith.constant 32 : index", "%steps = arith.divui %k, %c32s : index",
                "%ts = arith.muli %tiles, %steps : index", "%c1536 = arith.constant 1536 : index",
                "%xtn = arith.muli %ts, %c1536 : index", "%xsn = arith.muli %ts, %c16s : index"]
_SPLIT_BINDINGS = [("xt", "i16", "%xtn"), ("xs", "f32", "%xsn")]


def _split_entry() -> tuple[str, str]:
    """lse_split_x (lse_gemm.c, the AMX build): x → xt, xs; rows, k, tiles a workgroup."""
    return _entry("split_x", "lse_split_x", [("x", "f32", "%xn"), *_SPLIT_BINDINGS], ["r", "k", "per"],
                  ["%xn = arith.muli %r, %k : index", *_SPLIT_SIZES], ["%r", "%k", "%per"])


def _matmul_entry(export: str, has_m: bool, scale: str = "f16", block: int = 32, ks: int = 0,
                  parts: int = 1, split: bool = False) -> tuple[str, str]:
    """A matvec or GEMM export (lse_qmv.c, lse_gemm.c): x, then q, d, [m] of
    each of ``parts`` matrices, then each one's y; rows, each matrix's rows
    (columns of y), k, tile. With several parts it is lse_<stem>_matvec<parts>:
    the rows of all of them in sequence, ``tile`` a workgroup. ``scale`` is d's
    (and m's) element type, ``block`` the values per scale; a K-quant (``ks``
    > 0) has ks int8 d a block and ks f16 m per 256 values. ``split``: x split
    for the AMX GEMM follows x (the AMX build's GEMMs)."""
    ids = range(1, parts + 1)
    bindings = [("x", "f32", "%xn"), *(_SPLIT_BINDINGS if split else [])]
    for i in ids:
        bindings += [(f"q{i}", "i8", f"%qn{i}"), (f"d{i}", scale, f"%dn{i}"),
                     *([(f"m{i}", "f16" if ks else scale, f"%mn{i}" if ks else f"%dn{i}")] if has_m else [])]
    bindings += [(f"y{i}", "f32", f"%yn{i}") for i in ids]
    sizes = ["%xn = arith.muli %r, %k : index", f"%cb = arith.constant {block} : index",
             "%kb = arith.divui %k, %cb : index", "%c15 = arith.constant 15 : index",
             "%c16 = arith.constant 16 : index"]
    if ks:  # d: ks a block; m: ks per 256 values
        sizes += [f"%cks = arith.constant {ks} : index", "%kbs = arith.muli %kb, %cks : index",
                  "%c256 = arith.constant 256 : index", "%ksb = arith.divui %k, %c256 : index",
                  "%kms = arith.muli %ksb, %cks : index"]
    if split:
        sizes += _SPLIT_SIZES
    for i in ids:  # q and the scales: whole interleaved groups of 16 rows (kernel_layout.py)
        sizes += [f"%nu{i} = arith.addi %n{i}, %c15 : index", f"%ng{i} = arith.divui %nu{i}, %c16 : index",
                  f"%np{i} = arith.muli %ng{i}, %c16 : index", f"%yn{i} = arith.muli %r, %n{i} : index",
                  f"%qn{i} = arith.muli %np{i}, %qk : index",
                  f"%dn{i} = arith.muli %np{i}, {'%kbs' if ks else '%kb'} : index"]
        if ks:
            sizes.append(f"%mn{i} = arith.muli %np{i}, %kms : index")
    ns = [f"n{i}" for i in ids]
    name = export if parts == 1 else f"{export}{parts}"
    return _entry(name, f"lse_{name}", bindings, ["r", *ns, "k", "tile", "qk"], sizes,
                  ["%r", *[f"%{n}" for n in ns], "%k", "%tile"])


def _embed_entry(export: str, has_m: bool, scale: str = "f16", block: int = 32, ks: int = 0) -> tuple[str, str]:
    """lse_<stem>_embed (lse_gemm.c): token ids t, the table's interleaved q,
    d, [m] (sized as _matmul_entry's), y; then rows, table rows, k, rows a workgroup."""
    bindings = [("t", "i64", "%r"), ("q", "i8", "%qn"), ("d", scale, "%dn"),
                *([("m", "f16" if ks else scale, "%mn" if ks else "%dn")] if has_m else []), ("y", "f32", "%yn")]
    sizes = [f"%cb = arith.constant {block} : index", "%kb = arith.divui %k, %cb : index",
             "%c15 = arith.constant 15 : index", "%c16 = arith.constant 16 : index",
             "%nu = arith.addi %n, %c15 : index", "%ng = arith.divui %nu, %c16 : index",
             "%np = arith.muli %ng, %c16 : index", "%yn = arith.muli %r, %k : index", "%qn = arith.muli %np, %qk : index",
             *([f"%cks = arith.constant {ks} : index", "%kbs = arith.muli %kb, %cks : index",
                "%dn = arith.muli %np, %kbs : index", "%c256 = arith.constant 256 : index",
                "%ksb = arith.divui %k, %c256 : index", "%kms = arith.muli %ksb, %cks : index",
                "%mn = arith.muli %np, %kms : index"] if ks else ["%dn = arith.muli %np, %kb : index"])]
    return _entry(export, f"lse_{export}", bindings, ["r", "n", "k", "per", "qk"], sizes, ["%r", "%n", "%k", "%per"])


def _attention_entries() -> list[tuple[str, str]]:
    """attend_write_f16: q, the step's K and V rows, the whole cache,
    positions, each row's slot, the rows' RoPE cos and sin tables (applied to
    q and K where the rope operand is 1) → partial records, after writing K and V into
    the cache, which it returns (tied: updated in place); attend_merge: partial
    records → y; attend_rows_f16: a prompt's q, the cache, positions → y;
    kv_write_f16: a prompt's K and V rows into the cache at their positions
    (tied, in place), `per` rows a workgroup (lse_attn.c). The two attention
    entries take the layer's sliding window w (0: a full layer), then, with
    kv_write_f16, its ring's first row and rows (rr = 0: not a ring; `layer`
    is its slab, kv_layout.py)."""
    q_size = ["%qn = arith.muli %rows, %qc : index"]
    write = _entry("attend_write_f16", "lse_attend_write_f16",
                   [("q", "f32", "%qn"), ("k", "f32", "%kn"), ("v", "f32", "%kn"), ("c", "f16", "%cn"),
                    ("p", "i64", "%rows"), ("sl", "i64", "%rows"), ("cs", "f32", "%tn"), ("sn", "f32", "%tn"),
                    ("o", "f32", "%on")],
                   ["rows", "qc", "kc", "cn", "on", "layer", "p", "t", "kv", "g", "d", "s", "hg", "rope", "w", "rb",
                    "rr"],
                   q_size + ["%kn = arith.muli %rows, %kc : index", "%tn = arith.muli %rows, %d : index"],
                   ["%rows", "%layer", "%p", "%t", "%kv", "%g", "%d", "%s", "%hg", "%rope", "%w", "%rb", "%rr"])
    merge = _entry("attend_merge", "lse_attend_merge", [("o", "f32", "%on"), ("y", "f32", "%yn")],
                   ["on", "yn", "kv", "g", "d", "s"], [], ["%kv", "%g", "%d", "%s"])
    rows = _entry("attend_rows_f16", "lse_attend_rows_f16",
                  [("q", "f32", "%qn"), ("c", "f16", "%cn"), ("p", "i64", "%rows"), ("y", "f32", "%qn")],
                  ["rows", "qc", "cn", "layer", "slot", "p", "t", "kv", "g", "d", "br", "w", "rb", "rr"], q_size,
                  ["%rows", "%layer", "%slot", "%p", "%t", "%kv", "%g", "%d", "%br", "%w", "%rb", "%rr"])
    kv_write = _entry("kv_write_f16", "lse_kv_write_f16",
                      [("k", "f32", "%kn"), ("v", "f32", "%kn"), ("c", "f16", "%cn"), ("p", "i64", "%rows")],
                      ["rows", "kc", "cn", "layer", "slot", "p", "t", "kv", "d", "rb", "rr", "per"],
                      ["%kn = arith.muli %rows, %kc : index"],
                      ["%rows", "%layer", "%slot", "%p", "%t", "%kv", "%d", "%rb", "%rr", "%per"])
    return [write, merge, rows, kv_write]


def _norm_entries() -> list[tuple[str, str]]:
    """rms_norm: x, w → y; add_rms_norm: a, b, w → a + b, y (lse_norm.c).
    Then rows, width, eps as its f32 bits, rows per workgroup."""
    params, call = ["rows", "c", "eps", "per"], ["%rows", "%c", "%eps", "%per"]
    size = ["%xn = arith.muli %rows, %c : index"]
    norm = _entry("rms_norm", "lse_rms_norm", [("x", "f32", "%xn"), ("w", "f32", "%c"), ("y", "f32", "%xn")],
                  params, size, call)
    add = _entry("add_rms_norm", "lse_add_rms_norm",
                 [("a", "f32", "%xn"), ("b", "f32", "%xn"), ("w", "f32", "%c"), ("s", "f32", "%xn"),
                  ("y", "f32", "%xn")], params, size, call)
    return [add, norm]


def executable() -> str:
    """The module-level executable holding every kernel entry (emitted once)."""
    # formats sharing a layout share an export (q5_0 is q8_0's): each declared once
    split = amx()
    specs = {spec[0]: spec for spec in [*KERNELS.values(), *GEMMS.values()]}
    entries = [_matmul_entry(*spec, split=split and spec[0].endswith("_gemm")) for spec in specs.values()]
    entries += [_split_entry()] if split else []
    entries += [_matmul_entry(*spec, parts=parts) for spec in {s[0]: s for s in KERNELS.values()}.values()
                for parts in SIBLINGS]
    entries += [_embed_entry(*spec) for spec in {s[0]: s for s in EMBEDS.values()}.values()]
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
