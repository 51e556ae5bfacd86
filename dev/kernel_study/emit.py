"""MLIR emitters for the decode-matvec variants (one function per variant kind).

Each emitter returns (globals, body_lines, result_ssa) for y = x @ W^T with x: tensor<RxKxf32>.
Weights are `util.global` parameters `#stream.parameter.named<"model"::key>`.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

FMT = {  # parameter layout per variant: (keys, dtypes) -> see study.make_params
    "u8": "q:u8[N,NB,32], d:f16[N,NB], m:f16[N,NB]",
    "i4": "q:i4[N,NB,32] (byte j = lane 2j | lane 2j+1 << 4), d:f16[N,NB], m:f16[N,NB]",
    "gguf": "raw GGUF Q4_1 blocks i8[N, NB*20]",
}


def _glob(name, key, ty):
    return f'util.global private @{name} = #stream.parameter.named<"model"::"{key}"> : {ty}'


def mv_dequant_contract(p, key, x, R, K, N, qty="i8"):
    """V1 baseline: dequant generic -> contraction generic (n par, b red, l red)."""
    NB = K // 32
    qt = f"tensor<{N}x{NB}x32x{qty}>"
    g = [_glob(f"{p}_q", f"{key}.q", qt), _glob(f"{p}_d", f"{key}.d", f"tensor<{N}x{NB}xf16>"),
         _glob(f"{p}_m", f"{key}.m", f"tensor<{N}x{NB}xf16>")]
    b = f"""
    %{p}q = util.global.load @{p}_q : {qt}
    %{p}d = util.global.load @{p}_d : tensor<{N}x{NB}xf16>
    %{p}m = util.global.load @{p}_m : tensor<{N}x{NB}xf16>
    %{p}e = tensor.empty() : tensor<{N}x{NB}x32xf32>
    %{p}w = linalg.generic {{indexing_maps = [affine_map<(n,b,l)->(n,b,l)>, affine_map<(n,b,l)->(n,b)>, affine_map<(n,b,l)->(n,b)>, affine_map<(n,b,l)->(n,b,l)>],
        iterator_types = ["parallel","parallel","parallel"]}} ins(%{p}q, %{p}d, %{p}m : {qt}, tensor<{N}x{NB}xf16>, tensor<{N}x{NB}xf16>) outs(%{p}e : tensor<{N}x{NB}x32xf32>) {{
      ^bb0(%qi: {qty}, %di: f16, %mi: f16, %o: f32):
        %qf = arith.uitofp %qi : {qty} to f32
        %df = arith.extf %di : f16 to f32
        %mf = arith.extf %mi : f16 to f32
        %t = arith.mulf %qf, %df : f32
        %w = arith.addf %t, %mf : f32
        linalg.yield %w : f32
    }} -> tensor<{N}x{NB}x32xf32>
    %{p}xe = tensor.expand_shape %{x} [[0],[1,2]] output_shape [{R},{NB},32] : tensor<{R}x{K}xf32> into tensor<{R}x{NB}x32xf32>
    %{p}z = arith.constant 0.0 : f32
    %{p}ye = tensor.empty() : tensor<{R}x{N}xf32>
    %{p}yf = linalg.fill ins(%{p}z : f32) outs(%{p}ye : tensor<{R}x{N}xf32>) -> tensor<{R}x{N}xf32>
    %{p}y = linalg.generic {{indexing_maps = [affine_map<(r,n,b,l)->(r,b,l)>, affine_map<(r,n,b,l)->(n,b,l)>, affine_map<(r,n,b,l)->(r,n)>],
        iterator_types = ["parallel","parallel","reduction","reduction"]}} ins(%{p}xe, %{p}w : tensor<{R}x{NB}x32xf32>, tensor<{N}x{NB}x32xf32>) outs(%{p}yf : tensor<{R}x{N}xf32>) {{
      ^bb0(%a: f32, %c: f32, %o: f32):
        %t = arith.mulf %a, %c : f32
        %s = arith.addf %o, %t : f32
        linalg.yield %s : f32
    }} -> tensor<{R}x{N}xf32>"""
    return g, b, f"%{p}y"


def mv_perlane(p, key, x, R, K, N, qty="i8", mterm="fold"):
    """V2/V3: per-lane accumulation acc[r,n,l] over blocks b (reduction), then one reduction over l.

    mterm="fold": w = q*d + m in the body.  mterm="xs": acc += d*q*x, y = sum_l acc + sum_b m*xs[b]."""
    NB = K // 32
    qt = f"tensor<{N}x{NB}x32x{qty}>"
    g = [_glob(f"{p}_q", f"{key}.q", qt), _glob(f"{p}_d", f"{key}.d", f"tensor<{N}x{NB}xf16>"),
         _glob(f"{p}_m", f"{key}.m", f"tensor<{N}x{NB}xf16>")]
    b = f"""
    %{p}q = util.global.load @{p}_q : {qt}
    %{p}d = util.global.load @{p}_d : tensor<{N}x{NB}xf16>
    %{p}m = util.global.load @{p}_m : tensor<{N}x{NB}xf16>
    %{p}xe = tensor.expand_shape %{x} [[0],[1,2]] output_shape [{R},{NB},32] : tensor<{R}x{K}xf32> into tensor<{R}x{NB}x32xf32>
    %{p}z = arith.constant 0.0 : f32
    %{p}ae = tensor.empty() : tensor<{R}x{N}x32xf32>
    %{p}af = linalg.fill ins(%{p}z : f32) outs(%{p}ae : tensor<{R}x{N}x32xf32>) -> tensor<{R}x{N}x32xf32>"""
    if mterm == "fold":
        b += f"""
    %{p}acc = linalg.generic {{indexing_maps = [affine_map<(r,n,l,b)->(r,b,l)>, affine_map<(r,n,l,b)->(n,b,l)>, affine_map<(r,n,l,b)->(n,b)>, affine_map<(r,n,l,b)->(n,b)>, affine_map<(r,n,l,b)->(r,n,l)>],
        iterator_types = ["parallel","parallel","parallel","reduction"]}} ins(%{p}xe, %{p}q, %{p}d, %{p}m : tensor<{R}x{NB}x32xf32>, {qt}, tensor<{N}x{NB}xf16>, tensor<{N}x{NB}xf16>) outs(%{p}af : tensor<{R}x{N}x32xf32>) {{
      ^bb0(%a: f32, %qi: {qty}, %di: f16, %mi: f16, %o: f32):
        %qf = arith.uitofp %qi : {qty} to f32
        %df = arith.extf %di : f16 to f32
        %mf = arith.extf %mi : f16 to f32
        %w = arith.mulf %qf, %df : f32
        %w2 = arith.addf %w, %mf : f32
        %t = arith.mulf %a, %w2 : f32
        %s = arith.addf %o, %t : f32
        linalg.yield %s : f32
    }} -> tensor<{R}x{N}x32xf32>
    %{p}ye = tensor.empty() : tensor<{R}x{N}xf32>
    %{p}yi = linalg.fill ins(%{p}z : f32) outs(%{p}ye : tensor<{R}x{N}xf32>) -> tensor<{R}x{N}xf32>"""
    else:
        b += f"""
    %{p}acc = linalg.generic {{indexing_maps = [affine_map<(r,n,l,b)->(r,b,l)>, affine_map<(r,n,l,b)->(n,b,l)>, affine_map<(r,n,l,b)->(n,b)>, affine_map<(r,n,l,b)->(r,n,l)>],
        iterator_types = ["parallel","parallel","parallel","reduction"]}} ins(%{p}xe, %{p}q, %{p}d : tensor<{R}x{NB}x32xf32>, {qt}, tensor<{N}x{NB}xf16>) outs(%{p}af : tensor<{R}x{N}x32xf32>) {{
      ^bb0(%a: f32, %qi: {qty}, %di: f16, %o: f32):
        %qf = arith.uitofp %qi : {qty} to f32
        %df = arith.extf %di : f16 to f32
        %t = arith.mulf %a, %qf : f32
        %s = arith.mulf %t, %df : f32
        %s2 = arith.addf %o, %s : f32
        linalg.yield %s2 : f32
    }} -> tensor<{R}x{N}x32xf32>
    %{p}xse = tensor.empty() : tensor<{R}x{NB}xf32>
    %{p}xsf = linalg.fill ins(%{p}z : f32) outs(%{p}xse : tensor<{R}x{NB}xf32>) -> tensor<{R}x{NB}xf32>
    %{p}xs = linalg.generic {{indexing_maps = [affine_map<(r,b,l)->(r,b,l)>, affine_map<(r,b,l)->(r,b)>], iterator_types = ["parallel","parallel","reduction"]}}
        ins(%{p}xe : tensor<{R}x{NB}x32xf32>) outs(%{p}xsf : tensor<{R}x{NB}xf32>) {{
      ^bb0(%a: f32, %o: f32):
        %s = arith.addf %o, %a : f32
        linalg.yield %s : f32
    }} -> tensor<{R}x{NB}xf32>
    %{p}ye = tensor.empty() : tensor<{R}x{N}xf32>
    %{p}yz = linalg.fill ins(%{p}z : f32) outs(%{p}ye : tensor<{R}x{N}xf32>) -> tensor<{R}x{N}xf32>
    %{p}yi = linalg.generic {{indexing_maps = [affine_map<(r,n,b)->(r,b)>, affine_map<(r,n,b)->(n,b)>, affine_map<(r,n,b)->(r,n)>], iterator_types = ["parallel","parallel","reduction"]}}
        ins(%{p}xs, %{p}m : tensor<{R}x{NB}xf32>, tensor<{N}x{NB}xf16>) outs(%{p}yz : tensor<{R}x{N}xf32>) {{
      ^bb0(%a: f32, %mi: f16, %o: f32):
        %mf = arith.extf %mi : f16 to f32
        %t = arith.mulf %a, %mf : f32
        %s = arith.addf %o, %t : f32
        linalg.yield %s : f32
    }} -> tensor<{R}x{N}xf32>"""
    b += f"""
    %{p}y = linalg.generic {{indexing_maps = [affine_map<(r,n,l)->(r,n,l)>, affine_map<(r,n,l)->(r,n)>], iterator_types = ["parallel","parallel","reduction"]}}
        ins(%{p}acc : tensor<{R}x{N}x32xf32>) outs(%{p}yi : tensor<{R}x{N}xf32>) {{
      ^bb0(%a: f32, %o: f32):
        %s = arith.addf %o, %a : f32
        linalg.yield %s : f32
    }} -> tensor<{R}x{N}xf32>"""
    return g, b, f"%{p}y"


# ---------------------------------------------------------------- custom dispatch (C microkernel)
# The executable is emitted once per module; every matvec is a flow.dispatch to it.
CUSTOM_EXECUTABLE = (HERE / "qmv_dispatch.mlir").read_text()


def workgroups_for(N: int, R: int) -> int:
    """Workgroup count: rows per workgroup a multiple of 4, ~8 workgroups per core (2 cores)."""
    target = 16
    tile = -(-N // target)
    tile = -(-tile // 4) * 4
    return tile


def mv_custom(p, key, x, R, K, N, fmt="q4_1", tile=None):
    NB = K // 32
    bpb = {"q4_1": 20, "q8_0": 34}[fmt]
    wt = f"tensor<{N}x{NB * bpb}xi8>"
    tile = tile or workgroups_for(N, R)
    nwg = -(-N // tile)
    g = [_glob(f"{p}_w", f"{key}.gguf", wt)]
    b = f"""
    %{p}w = util.global.load @{p}_w : {wt}
    %{p}nwg = arith.constant {nwg} : index
    %{p}R = arith.constant {R} : index
    %{p}N = arith.constant {N} : index
    %{p}K = arith.constant {K} : index
    %{p}T = arith.constant {tile} : index
    %{p}y = flow.dispatch @lse_qmv::@{fmt}_matvec[%{p}nwg](%{x}, %{p}w, %{p}R, %{p}N, %{p}K, %{p}T)
        : (tensor<{R}x{K}xf32>, {wt}, index, index, index, index) -> tensor<{R}x{N}xf32>"""
    return g, b, f"%{p}y"


EMITTERS = {
    # name: (emitter, param format, needs custom executable)
    "v1_dequant_contract_u8": (lambda *a: mv_dequant_contract(*a, qty="i8"), "u8", False),
    "v1_dequant_contract_i4": (lambda *a: mv_dequant_contract(*a, qty="i4"), "i4", False),
    "v2_perlane_fold_u8": (lambda *a: mv_perlane(*a, qty="i8", mterm="fold"), "u8", False),
    "v2_perlane_xs_u8": (lambda *a: mv_perlane(*a, qty="i8", mterm="xs"), "u8", False),
    "v3_perlane_xs_i4": (lambda *a: mv_perlane(*a, qty="i4", mterm="xs"), "i4", False),
    "v4_custom_c_q4_1": (lambda *a: mv_custom(*a, fmt="q4_1"), "gguf", True),
    "v4a_custom_c_q4_1_unpackA": (lambda *a: mv_custom(*a, fmt="q4_1"), "gguf", "lse_qmv_a.o"),
}


def module(variant: str, funcs: list[tuple[str, str]], globals_: list[str]) -> str:
    """funcs: (name, full func text). Adds the custom executable when the variant needs it."""
    _, _, custom = EMITTERS[variant]
    out = ["module @m {"]
    out += ["  " + g for g in dict.fromkeys(globals_)]
    if custom:
        out.append(CUSTOM_EXECUTABLE if custom is True else CUSTOM_EXECUTABLE.replace('"lse_qmv.o"', f'"{custom}"'))
    out += [f for _, f in funcs]
    out.append("}")
    return "\n".join(out)
