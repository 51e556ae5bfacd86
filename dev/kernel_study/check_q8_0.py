"""Correctness check of the Q8_0 custom dispatch (GGUF block {f16 d; i8 qs[32]}) at R = 1, 3, 4, 8."""
import sys
from pathlib import Path
import numpy as np
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import emit, study
import iree.runtime as rt

rng = np.random.default_rng(1)
inst = rt.VmInstance(); dev = rt.get_device("local-task")
for K, N in [(576, 576), (1536, 576), (576, 49152)]:
    NB = K // 32
    q = rng.integers(-128, 128, size=(N, NB, 32), dtype=np.int8)
    d = (rng.uniform(0.5, 1.5, size=(N, NB)) / 1000).astype(np.float16)
    blk = np.empty((N, NB, 34), np.uint8)
    blk[..., :2] = d.view(np.uint8).reshape(N, NB, 2); blk[..., 2:] = q.view(np.uint8)
    W = (d.astype(np.float64)[..., None] * q).reshape(N, K)
    irpa = study.OUT / f"q8_{K}x{N}.irpa"; study.OUT.mkdir(exist_ok=True)
    rt.save_archive_file({"w.gguf": blk.reshape(N, -1)}, str(irpa))
    for R in [1, 3, 4, 8]:
        g, b, y = emit.mv_custom("a", "w", "x", R, K, N, fmt="q8_0")
        f = f"  func.func @run(%x: tensor<{R}x{K}xf32>) -> tensor<{R}x{N}xf32> {{{b}\n    return {y} : tensor<{R}x{N}xf32>\n  }}"
        txt = emit.module("v4_custom_c_q4_1", [("run", f)], g)
        vmfb, _ = study.compile_mlir(txt, study.OUT / f"q8_{K}x{N}_R{R}.mlir")
        m = study.Loaded(inst, dev, vmfb, irpa)
        x = rng.standard_normal((R, K)).astype(np.float32)
        out = np.asarray(m(x)[0].to_host(), np.float64); ref = x.astype(np.float64) @ W.T
        print(f"q8_0 {K}x{N} R{R}: max abs {np.max(np.abs(out - ref)):.2e} rel {np.max(np.abs(out - ref)) / np.max(np.abs(ref)):.2e}")
