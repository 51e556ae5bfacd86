"""Decode-matvec kernel study: `python dev/kernel_study/study.py [--rounds 7] [--variants a,b] [--rows 1,4,8]`.

Builds per-shape modules (30 independent weight copies per function; lm_head: 1 copy), and a whole
"token" module (30 layers x 7 chained matvecs + lm_head, one invoke) for each variant, with every
weight a `util.global` `#stream.parameter.named` parameter loaded from an .irpa via ParameterIndex.
Checks every output against numpy (f64 on the dequantised weights), then times all modules
interleaved in rounds on local-task; writes out/results.json and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import emit  # noqa: E402

import iree.compiler as ic  # noqa: E402
import iree.runtime as rt  # noqa: E402

OUT = HERE / "out"
SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]  # (K, N)
PER_TOKEN = {(576, 576): 60, (576, 192): 60, (576, 1536): 60, (1536, 576): 30, (576, 49152): 1}
BASE_FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host", "--iree-opt-level=O3", "--iree-opt-const-expr-hoisting=false",
              f"--iree-hal-executable-object-search-path={HERE / 'build'}"]


# ------------------------------------------------------------------ data
class QW:
    """Random Q4_1 weights [N, K] with d, m f16 (exact), in every layout."""

    def __init__(self, rng, K, N):
        NB = K // 32
        self.K, self.N = K, N
        self.q = rng.integers(0, 16, size=(N, NB, 32), dtype=np.uint8)
        d = (rng.uniform(0.5, 1.5, size=(N, NB)) / (4.6 * np.sqrt(K))).astype(np.float16)
        self.d = d
        self.m = (-7.5 * d.astype(np.float32) * rng.uniform(0.8, 1.2, size=(N, NB))).astype(np.float16)

    def dense64(self):
        return (self.d.astype(np.float64)[..., None] * self.q + self.m.astype(np.float64)[..., None]).reshape(self.N, self.K)

    def arrays(self, fmt, key):
        if fmt == "u8":
            return {f"{key}.q": self.q, f"{key}.d": self.d.view(np.uint16), f"{key}.m": self.m.view(np.uint16)}
        if fmt == "i4":  # IREE i4 packing: element 2j in the low nibble, 2j+1 in the high nibble
            q = self.q.reshape(self.N, -1, 16, 2)
            return {f"{key}.q": (q[..., 0] | (q[..., 1] << 4)).astype(np.uint8),
                    f"{key}.d": self.d.view(np.uint16), f"{key}.m": self.m.view(np.uint16)}
        if fmt == "gguf":  # GGUF block_q4_1 {f16 d, f16 m, u8 qs[16]}: lanes 0..15 low nibbles, 16..31 high
            NB = self.K // 32
            blk = np.empty((self.N, NB, 20), np.uint8)
            blk[..., 0:2] = self.d.view(np.uint8).reshape(self.N, NB, 2)
            blk[..., 2:4] = self.m.view(np.uint8).reshape(self.N, NB, 2)
            blk[..., 4:] = self.q[..., :16] | (self.q[..., 16:] << 4)
            return {f"{key}.gguf": blk.reshape(self.N, NB * 20)}
        raise ValueError(fmt)


def weight_bytes(K, N, fmt):
    return {"u8": 1.125, "i4": 0.625, "gguf": 0.625}[fmt] * K * N


# ------------------------------------------------------------------ modules
def shape_module(variant, K, N, R, copies):
    fn, fmt, _ = emit.EMITTERS[variant]
    globs, body, res = [], [], []
    for c in range(copies):
        g, b, y = fn(f"c{c}", f"s{K}x{N}.c{c}", "x", R, K, N)
        globs += g; body.append(b); res.append(y)
    rt_ = ", ".join([f"tensor<{R}x{N}xf32>"] * copies)
    f = (f"  func.func @run(%x: tensor<{R}x{K}xf32>) -> ({rt_}) {{" + "".join(body) +
         f"\n    return {', '.join(res)} : {rt_}\n  }}")
    return emit.module(variant, [("run", f)], globs)


def token_module(variant, R, layers=30):
    """30 layers: q,k,v = mv(h); o = mv(q); g,u = mv(o); h = mv((g+u)/sqrt2) (keeps magnitudes bounded); logits = mv_lm(h). Returns logits + all k, v."""
    fn, fmt, _ = emit.EMITTERS[variant]
    globs, body, ret, rty = [], [], [], []
    h = "x"

    def mv(p, key, x, K, N):
        g, b, y = fn(p, key, x, R, K, N)
        globs.extend(g); body.append(b)
        return y[1:]

    for L in range(layers):
        q = mv(f"l{L}q", f"l{L}.q", h, 576, 576)
        k = mv(f"l{L}k", f"l{L}.k", h, 576, 192)
        v = mv(f"l{L}v", f"l{L}.v", h, 576, 192)
        o = mv(f"l{L}o", f"l{L}.o", q, 576, 576)
        g = mv(f"l{L}g", f"l{L}.g", o, 576, 1536)
        u = mv(f"l{L}u", f"l{L}.u", o, 576, 1536)
        body.append(f"""
    %l{L}gue = tensor.empty() : tensor<{R}x1536xf32>
    %l{L}gu = linalg.generic {{indexing_maps = [affine_map<(r,n)->(r,n)>, affine_map<(r,n)->(r,n)>, affine_map<(r,n)->(r,n)>], iterator_types = ["parallel","parallel"]}}
        ins(%{g}, %{u} : tensor<{R}x1536xf32>, tensor<{R}x1536xf32>) outs(%l{L}gue : tensor<{R}x1536xf32>) {{
      ^bb0(%a: f32, %b: f32, %o: f32):
        %c = arith.constant 0.70710678 : f32
        %s = arith.addf %a, %b : f32
        %t = arith.mulf %s, %c : f32
        linalg.yield %t : f32
    }} -> tensor<{R}x1536xf32>""")
        h = mv(f"l{L}d", f"l{L}.d", f"l{L}gu", 1536, 576)
        ret += [k, v]; rty += [f"tensor<{R}x192xf32>"] * 2
    lg = mv("lm", "lm_head", h, 576, 49152)
    ret = [lg] + ret; rty = [f"tensor<{R}x49152xf32>"] + rty
    f = (f"  func.func @run(%x: tensor<{R}x576xf32>) -> ({', '.join(rty)}) {{" + "".join(body) +
         f"\n    return {', '.join('%' + r for r in ret)} : {', '.join(rty)}\n  }}")
    return emit.module(variant, [("run", f)], globs)


def token_reference(W, x, layers=30):
    h = x.astype(np.float64)
    kv = []
    for L in range(layers):
        q = h @ W[f"l{L}.q"].T; k = h @ W[f"l{L}.k"].T; v = h @ W[f"l{L}.v"].T
        o = q @ W[f"l{L}.o"].T
        gu = ((o @ W[f"l{L}.g"].T) + (o @ W[f"l{L}.u"].T)) * np.float64(np.float32(0.70710678))
        h = gu @ W[f"l{L}.d"].T
        kv += [k, v]
    return [h @ W["lm_head"].T] + kv


def compile_mlir(text, path, extra=()):
    path.write_text(text)
    vmfb = path.with_suffix(".vmfb")
    t = time.time()
    ic.compile_file(str(path), output_file=str(vmfb), extra_args=BASE_FLAGS + list(extra))
    return vmfb, time.time() - t


class Loaded:
    def __init__(self, inst, dev, vmfb, irpa):
        idx = rt.ParameterIndex(); idx.load(str(irpa))
        params = rt.create_io_parameters_module(inst, idx.create_provider(scope="model"))
        self.mods = rt.load_vm_modules(params, rt.create_hal_module(inst, dev), rt.VmModule.mmap(inst, str(vmfb)),
                                       config=rt.Config(device=dev))
        self.fn = self.mods[-1].run

    def __call__(self, x):
        r = self.fn(x)
        return r if isinstance(r, (tuple, list)) else (r,)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default=",".join(emit.EMITTERS))
    ap.add_argument("--rows", default="1,4,8")
    ap.add_argument("--no-token", action="store_true")
    ap.add_argument("--no-shapes", action="store_true")
    ap.add_argument("--token-rows", default="1")
    ap.add_argument("--min-time", type=float, default=0.25, help="seconds per module per round")
    args = ap.parse_args()
    variants = args.variants.split(",")
    rows = [int(r) for r in args.rows.split(",")]
    OUT.mkdir(exist_ok=True)
    subprocess.run([str(HERE / "build_kernel.sh")], check=True)
    rng = np.random.default_rng(0)
    inst = rt.VmInstance(); dev = rt.get_device("local-task")
    load0 = os.getloadavg()

    # parameters: one irpa per (scope, fmt)
    jobs = []  # (label, kind, variant, R, K, N, loaded, x_dev, ref, wbytes, n_mv)
    shape_w = {}
    for K, N in SHAPES:
        copies = 1 if N > 4096 else 30
        shape_w[(K, N)] = [QW(rng, K, N) for _ in range(copies)]
    fmts = sorted({emit.EMITTERS[v][1] for v in variants})
    irpa = {}
    for fmt in fmts:
        arrs = {}
        for (K, N), ws in shape_w.items():
            for c, w in enumerate(ws):
                arrs.update(w.arrays(fmt, f"s{K}x{N}.c{c}"))
        irpa[("shape", fmt)] = OUT / f"shapes_{fmt}.irpa"
        rt.save_archive_file(arrs, str(irpa[("shape", fmt)]))
    compile_log = {}
    for R in ([] if args.no_shapes else rows):
        for K, N in SHAPES:
            x = rng.standard_normal((R, K)).astype(np.float32)
            ws = shape_w[(K, N)]
            refs = [x.astype(np.float64) @ w.dense64().T for w in ws]
            for v in variants:
                fmt = emit.EMITTERS[v][1]
                label = f"{v}|R{R}|{K}x{N}"
                try:
                    vmfb, ct = compile_mlir(shape_module(v, K, N, R, len(ws)), OUT / f"{v}_R{R}_{K}x{N}.mlir")
                    m = Loaded(inst, dev, vmfb, irpa[("shape", fmt)])
                    compile_log[label] = ct
                except Exception as e:  # noqa: BLE001
                    print("FAIL", label, str(e)[:2000], flush=True)
                    compile_log[label] = "FAIL: " + str(e)[:300]
                    continue
                jobs.append(dict(label=label, kind="shape", variant=v, R=R, K=K, N=N, m=m,
                                 x=rt.asdevicearray(dev, x), ref=refs, fmt=fmt,
                                 wbytes=weight_bytes(K, N, fmt) * len(ws), n_mv=len(ws)))
                print("built", label, f"{ct:.1f}s", flush=True)
    if not args.no_token:
        tw = {}
        for L in range(30):
            for nm, (K, N) in zip("qkvogud", [(576, 576), (576, 192), (576, 192), (576, 576), (576, 1536), (576, 1536), (1536, 576)]):
                tw[f"l{L}.{nm}"] = QW(rng, K, N)
        tw["lm_head"] = QW(rng, 576, 49152)
        dense = {k: w.dense64() for k, w in tw.items()}
        for fmt in fmts:
            arrs = {}
            for k, w in tw.items():
                arrs.update(w.arrays(fmt, k))
            irpa[("token", fmt)] = OUT / f"token_{fmt}.irpa"
            rt.save_archive_file(arrs, str(irpa[("token", fmt)]))
            del arrs
        tot_bytes = {fmt: sum(weight_bytes(w.K, w.N, fmt) for w in tw.values()) for fmt in fmts}
        for R in [int(r) for r in args.token_rows.split(",")]:
            x = rng.standard_normal((R, 576)).astype(np.float32)
            ref = token_reference(dense, x)
            for v in variants:
                fmt = emit.EMITTERS[v][1]
                label = f"{v}|R{R}|token"
                try:
                    vmfb, ct = compile_mlir(token_module(v, R), OUT / f"{v}_R{R}_token.mlir")
                    m = Loaded(inst, dev, vmfb, irpa[("token", fmt)])
                    compile_log[label] = ct
                except Exception as e:  # noqa: BLE001
                    print("FAIL", label, str(e)[:2000], flush=True)
                    compile_log[label] = "FAIL: " + str(e)[:300]
                    continue
                jobs.append(dict(label=label, kind="token", variant=v, R=R, K=576, N=0, m=m,
                                 x=rt.asdevicearray(dev, x), ref=ref, fmt=fmt, wbytes=tot_bytes[fmt], n_mv=211))
                print("built", label, f"{ct:.1f}s", flush=True)

    # correctness
    for j in jobs:
        outs = [np.asarray(o.to_host(), dtype=np.float64) for o in j["m"](j["x"])]
        errs = [float(np.max(np.abs(o - r))) for o, r in zip(outs, j["ref"])]
        rels = [e / float(np.max(np.abs(r))) for e, r in zip(errs, j["ref"])]
        j["max_abs_err"], j["max_rel_err"] = max(errs), max(rels)
        print(f"check {j['label']}: max abs {j['max_abs_err']:.2e} rel {j['max_rel_err']:.2e}", flush=True)

    # timing: interleaved rounds
    for j in jobs:
        j["t"] = []
        j["m"](j["x"])  # warm
    for rd in range(args.rounds):
        order = jobs if rd % 2 == 0 else jobs[::-1]
        for j in order:
            f, x = j["m"].fn, j["x"]
            t_end = time.perf_counter() + args.min_time
            n = 0
            while n < 3 or time.perf_counter() < t_end:
                t0 = time.perf_counter(); f(x); j["t"].append(time.perf_counter() - t0); n += 1
        print(f"round {rd + 1}/{args.rounds} load {os.getloadavg()}", flush=True)
    load1 = os.getloadavg()
    res = []
    for j in jobs:
        tmin, tmed = min(j["t"]) * 1e6, statistics.median(j["t"]) * 1e6
        res.append(dict(label=j["label"], kind=j["kind"], variant=j["variant"], R=j["R"], K=j["K"], N=j["N"],
                        fmt=j["fmt"], n_mv=j["n_mv"], call_us_min=tmin, call_us_med=tmed,
                        us_per_mv_min=tmin / j["n_mv"], us_per_mv_med=tmed / j["n_mv"],
                        gbs_min=j["wbytes"] / (tmin * 1e-6) / 1e9, gbs_med=j["wbytes"] / (tmed * 1e-6) / 1e9,
                        max_abs_err=j["max_abs_err"], max_rel_err=j["max_rel_err"], samples=len(j["t"])))
    meta = dict(load_before=load0, load_after=load1, uptime=subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
                flags=BASE_FLAGS, compile_s=compile_log, rounds=args.rounds)
    (OUT / "results.json").write_text(json.dumps(dict(meta=meta, results=res), indent=1))
    import report
    print(report.render(meta, res))


if __name__ == "__main__":
    main()
