"""Markdown tables from out/results.json: python dev/kernel_study/report.py"""
from __future__ import annotations

import json
import sys
from pathlib import Path

PER_TOKEN = {(576, 576): 60, (576, 192): 60, (576, 1536): 60, (1536, 576): 30, (576, 49152): 1}


def render(meta, res):
    out = [f"load: before {tuple(round(v, 2) for v in meta['load_before'])}, after {tuple(round(v, 2) for v in meta['load_after'])}; `{meta['uptime']}`", ""]
    variants = list(dict.fromkeys(r["variant"] for r in res))
    Rs = sorted({r["R"] for r in res})
    shapes = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]
    for R in Rs:
        out.append(f"### rows R = {R}: µs per matmul min / median (weight GB/s at min), max rel err")
        out.append("| variant | " + " | ".join(f"{K}→{N}" for K, N in shapes) + " | Σ token (per-shape sum, min/med ms) | token module (ms min/med) | max rel err |")
        out.append("|---" * (len(shapes) + 4) + "|")
        for v in variants:
            cells, smin, smed, ok, errs = [], 0.0, 0.0, True, []
            for K, N in shapes:
                r = next((r for r in res if r["variant"] == v and r["R"] == R and r["K"] == K and r["N"] == N), None)
                if r is None:
                    cells.append("—"); ok = False; continue
                cells.append(f"{r['us_per_mv_min']:.1f} / {r['us_per_mv_med']:.1f} ({r['gbs_min']:.1f})")
                smin += PER_TOKEN[(K, N)] * r["us_per_mv_min"]; smed += PER_TOKEN[(K, N)] * r["us_per_mv_med"]
                errs.append(r["max_rel_err"])
            t = next((r for r in res if r["variant"] == v and r["R"] == R and r["kind"] == "token"), None)
            tok = f"{t['call_us_min'] / 1e3:.2f} / {t['call_us_med'] / 1e3:.2f} ({t['gbs_min']:.1f} GB/s)" if t else "—"
            if t:
                errs.append(t["max_rel_err"])
            out.append(f"| {v} | " + " | ".join(cells) + f" | {(f'{smin / 1e3:.2f} / {smed / 1e3:.2f}') if ok else '—'} | {tok} | {max(errs) if errs else float('nan'):.1e} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    d = json.loads((Path(__file__).resolve().parent / (sys.argv[1] if len(sys.argv) > 1 else "out/results.json")).read_text())
    print(render(d["meta"], d["results"]))
