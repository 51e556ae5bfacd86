"""The pure half of ``lse.bench.bench``: aggregation, ratios against the
targets, the bandwidth-limit arithmetic and the markdown table.

Every figure is a ``Stat``: the median of the rounds with the min–max beside
it. A ratio between LSE and a peer is taken per round (both were measured in
the same round, minutes apart at most, so they saw the same machine load) and
then summarized the same way.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GB = 1e9  # bandwidth and bytes per token in decimal units, as STREAM reports them


@dataclass(frozen=True)
class Stat:
    median: float
    lo: float
    hi: float
    n: int

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.lo, "max": self.hi, "n": self.n}


def summarize(values: Sequence[float | None]) -> Stat | None:
    """Median and min–max of the finite values; None when there are none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return Stat(statistics.median(vals), min(vals), max(vals), len(vals))


def paired_ratios(num: Sequence[float | None], den: Sequence[float | None]) -> list[float]:
    """num[i] / den[i] for every round where both were measured."""
    return [a / b for a, b in zip(num, den) if a is not None and b is not None and b > 0]


# ---- metrics and targets ----------------------------------------------------
@dataclass(frozen=True)
class Metric:
    key: str  # key in a row's samples
    label: str  # column heading
    unit: str  # "tok/s" or "s"

    @property
    def higher_is_better(self) -> bool:
        return self.unit != "s"


def metrics(prefill_sizes: Sequence[int], decode_tokens: int) -> list[Metric]:
    out = [Metric(f"prefill_{n}", f"prefill {n} tok/s", "tok/s") for n in prefill_sizes]
    out.append(Metric("decode", f"decode tok/s ({decode_tokens} greedy)", "tok/s"))
    out.append(Metric("ttft", "TTFT chat (s)", "s"))
    return out


@dataclass(frozen=True)
class Target:
    """LSE's row ``lse`` against the peer's row ``peer`` on ``metric``: ratio ≥ ``goal``."""
    metric: str
    lse: str
    peer: str
    goal: float = 1.0


def targets(prefill_sizes: Sequence[int], lse: str = "lse-engine", peer: str = "llamacpp-q4_1",
            ttft_lse: str = "lse-http-stream") -> list[Target]:
    """The issues' targets, on this machine in the same run, against llama.cpp
    on the same Q4_1 file: decode ≥ 1.2× (#11), prefill at 512 and 2048
    tokens ≥ 2× and time to first token ≤ 0.5× through the HTTP server,
    streamed (#12; the TTFT ratio is inverted, so ≥ 2 there too)."""
    return ([Target("decode", lse, peer, 1.2)]
            + [Target(f"prefill_{n}", lse, peer, 2.0) for n in prefill_sizes if n >= 512]
            + [Target("ttft", ttft_lse, peer, 2.0)])


def ratio_stat(rows: Mapping[str, dict], metric: str, lse: str, peer: str,
               higher_is_better: bool = True) -> Stat | None:
    """Per-round LSE/peer ratios, oriented so that > 1 means LSE is better."""
    if lse not in rows or peer not in rows:
        return None
    a = rows[lse]["samples"].get(metric, [])
    b = rows[peer]["samples"].get(metric, [])
    return summarize(paired_ratios(a, b) if higher_is_better else paired_ratios(b, a))


def verdict(ratio: Stat | None, goal: float) -> str:
    if ratio is None:
        return "not measured"
    if ratio.median >= goal:
        return "met"
    short, need = (1 - ratio.median / goal) * 100, goal / ratio.median
    # a gap under 10% keeps a decimal, so a near miss never reads "short by 0%"
    return f"short by {short:.{1 if short < 10 else 0}f}% (needs {need:.{3 if need < 1.1 else 2}f}× more)"


# ---- the physical limit -------------------------------------------------------
def weight_bytes_per_token(sizes: Mapping[str, int], embedding: str, tied: bool) -> int:
    """Bytes of weights one decode step reads: every matrix once. The
    embedding table is only gathered (one row) unless it is tied to the
    output projection, where the whole table is read as lm_head."""
    total = sum(sizes.values())
    return total if tied else total - sizes.get(embedding, 0)


def bandwidth_limit(bytes_per_token: int, bandwidth_gbs: float) -> float:
    """Tokens/s a batch-1 decode can't beat: it streams every weight once per token."""
    return bandwidth_gbs * GB / bytes_per_token


# ---- formatting ---------------------------------------------------------------
def fmt_num(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_stat(s: Stat | None, unit: str = "") -> str:
    if s is None:
        return "—"
    suffix = f" {unit}" if unit else ""
    if s.n == 1:
        return f"{fmt_num(s.median)}{suffix}"
    return f"{fmt_num(s.median)}{suffix} ({fmt_num(s.lo)}–{fmt_num(s.hi)})"


def fmt_ratio(s: Stat | None) -> str:
    if s is None:
        return "—"
    return f"{s.median:.2f}× ({s.lo:.2f}–{s.hi:.2f})"


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def limit_cell(row: dict, bandwidth_gbs: float | None) -> str:
    """Decode as a share of the bandwidth limit for this row's weights."""
    decode = summarize(row["samples"].get("decode", []))
    nbytes = row.get("weight_bytes_per_token")
    if decode is None or not nbytes or not bandwidth_gbs:
        return "—"
    limit = bandwidth_limit(nbytes, bandwidth_gbs)
    return f"{decode.median / limit * 100:.0f}% of {limit:.0f}"


def main_table(rows: Mapping[str, dict], mets: Sequence[Metric], bandwidth_gbs: float | None) -> list[str]:
    head = ["engine", "weights", "path"] + [m.label for m in mets] + ["decode / bandwidth limit"]
    body = []
    for row in rows.values():
        if row["status"] != "ok":
            body.append([row["label"], row["weights"], row["path"], f"**{row['status']}**"]
                        + [""] * len(mets))
            continue
        cells = [fmt_stat(summarize(row["samples"].get(m.key, []))) for m in mets]
        body.append([row["label"], row["weights"], row["path"], *cells, limit_cell(row, bandwidth_gbs)])
    return _table(head, body)


def targets_table(rows: Mapping[str, dict], tgts: Sequence[Target], mets: Sequence[Metric]) -> list[str]:
    labels = {m.key: m.label for m in mets}
    body = []
    for t in tgts:
        r = ratio_stat(rows, t.metric, t.lse, t.peer, t.metric != "ttft")
        name = f"{labels.get(t.metric, t.metric)}: {_row_name(rows, t.lse)} / {_row_name(rows, t.peer)}"
        body.append([name, fmt_ratio(r), f"≥ {t.goal:.2f}×", verdict(r, t.goal)])
    return _table(["ratio (per round, median (min–max))", "value", "target", "verdict"], body)


def ratios_table(rows: Mapping[str, dict], mets: Sequence[Metric], lse: str = "lse-engine") -> list[str]:
    """LSE against every peer on every metric (> 1: LSE better; TTFT inverted)."""
    peers = [k for k, r in rows.items() if not k.startswith("lse") and r["status"] == "ok"]
    if not peers:
        return ["No peer was measured in this run."]
    body = []
    for m in mets:
        cells = [fmt_ratio(ratio_stat(rows, m.key, lse, p, m.higher_is_better)) for p in peers]
        body.append([m.label, *cells])
    return _table(["metric", *(_row_name(rows, p) for p in peers)], body)


def _row_name(rows: Mapping[str, dict], key: str) -> str:
    row = rows.get(key)
    return f"{row['label']} {row['weights']} ({row['path']})" if row else key


# ---- the whole report -----------------------------------------------------------
def bandwidth_gbs(result: dict) -> float | None:
    """The machine's read bandwidth: the best sample. Other work on the
    machine only ever lowers a sample, so the best is the closest to the limit."""
    s = summarize(result["machine"].get("bandwidth", {}).get("read_gbs", []))
    return s.hi if s else None


def machine_line(result: dict) -> str:
    m = result["machine"]
    bw = summarize(m.get("bandwidth", {}).get("read_gbs", []))
    cp = summarize(m.get("bandwidth", {}).get("copy_gbs", []))
    load = m.get("load", {})
    loads = ", ".join(f"{k} {' / '.join(f'{x:.2f}' for x in v)}" for k, v in load.items())
    read = f"{bw.hi:.1f} GB/s read (best of {bw.n}; median {bw.median:.1f})" if bw else "not measured"
    copy = f"{cp.hi:.1f} GB/s copy" if cp else ""
    return (f"{m['cpu']}, {m['cores']} cores ({m['threads']} threads used), {fmt_bytes(m['memory_bytes'])} RAM; "
            f"memory bandwidth {read}, {copy} (numpy, {m['threads']} threads); "
            f"load average (1/5/15 min): {loads}")


SERVER_STREAMS_GOAL = 4.0  # #12: 8 streams through lse-server's default options, over one stream's aggregate


def concurrency_table(result: dict) -> list[str]:
    conc = result.get("concurrency", {})
    streams = result["settings"]["streams"]
    body = []
    for parallel, c in conc.items():
        label = f"auto ({c['slots']} slots, the default)" if parallel == "auto" and c.get("slots") else parallel
        if c.get("status", "ok") != "ok":
            body.append([label, f"**{c['status']}**"] + [""] * (len(streams) - 1) + ["", ""])
            continue
        cells = [fmt_stat(summarize(c["streams"].get(str(s), []))) for s in streams]
        startup = f"{c['startup_s']:.1f} s" if c.get("startup_s") is not None else "—"
        hwm = fmt_bytes(c["vm_hwm_bytes"]) if c.get("vm_hwm_bytes") else "—"
        body.append([label, *cells, startup, hwm])
    peer = result.get("peer_streams")
    if peer:  # llama.cpp, N sequences in one batch (bench_peers.llamacpp_streams)
        cells = ([fmt_stat(summarize(peer["streams"].get(str(s), []))) for s in streams] if peer["status"] == "ok"
                 else [f"**{peer['status']}**"] + [""] * (len(streams) - 1))
        body.append(["llama.cpp Q4_1, N sequences in one batch (in-process)", *cells, "—", "—"])
    head = ["lse-server --parallel", *(f"{s} stream{'s' * (s > 1)} tok/s" for s in streams),
            "startup to /health 200", "peak RSS (VmHWM)"]
    return (_table(head, body) + default_streams_line(conc.get("auto"), max(streams))
            + peer_streams_line(conc.get("auto"), peer, max(streams)) + beside_table(conc.get("auto")))


def peer_streams_line(c: dict | None, peer: dict | None, n: int) -> list[str]:
    """n streams: lse-server's default options against llama.cpp's n sequences in one batch."""
    if not c or c.get("status", "ok") != "ok" or not peer or peer.get("status") != "ok":
        return []
    lse, cpp = summarize(c["streams"].get(str(n), [])), summarize(peer["streams"].get(str(n), []))
    if lse is None or cpp is None:
        return []
    return ["", f"{n} streams against llama.cpp's {n} sequences in one batch: {lse.median / cpp.median:.2f}× "
            f"({lse.median:.0f} against {cpp.median:.0f} tok/s; LSE through HTTP, llama.cpp in-process)."]


def default_streams_line(c: dict | None, n: int) -> list[str]:
    """#12's target: n streams over one stream's aggregate, lse-server's default options."""
    if not c or c.get("status", "ok") != "ok":
        return []
    many, one = summarize(c["streams"].get(str(n), [])), summarize(c["streams"].get("1", []))
    if many is None or one is None:
        return []
    ratio = many.median / one.median
    return ["", f"Default options: {n} streams give {ratio:.2f}× one stream's aggregate (target ≥ "
                f"{SERVER_STREAMS_GOAL:.0f}×: {'met' if ratio >= SERVER_STREAMS_GOAL else 'not met'})."]


def beside_table(c: dict | None) -> list[str]:
    """A long prompt arriving while another request streams (the default server)."""
    b = (c or {}).get("beside")
    if not b:
        return []
    if "status" in b:
        return ["", f"Long prompt beside a running stream: {b['status']}"]
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    rows = [[f"{b['prompt_tokens']}-token prompt to its first token, alone", ms(b["ttft_alone_s"])],
            ["the same beside a running stream", ms(b["ttft_beside_s"])],
            ["the stream's gap between tokens before it, median", ms(b["gap_before_p50_s"])],
            [f"the stream's gaps while it is prefilled ({b['gaps_during']}): median / p99 / max",
             f"{ms(b['gap_during_p50_s'])} / {ms(b['gap_during_p99_s'])} / {ms(b['gap_during_max_s'])}"]]
    return [""] + _table(["long prompt beside a running stream (default server)", "time"], rows)


def build_table(result: dict) -> list[str]:
    c = result.get("compile", {})
    if c.get("status", "ok") != "ok":
        return [f"Compile: {c.get('status')}"]
    rows = [["lse-compile --no-cache (llvm-cpu, 1 slot)", f"{c['seconds']:.1f} s"],
            ["artifact size (modules + manifest)", fmt_bytes(c["artifact_bytes"])],
            ["the kernels' interleaved block weights in it (cpu-kernel-weights.safetensors)",
             fmt_bytes(c.get("layout_bytes", 0))],
            ["the model's weights (model.safetensors, read in place where the kernels take no copy)",
             fmt_bytes(c["weights_bytes"])]]
    if result.get("engine_open_s") is not None:
        rows.append(["lse_open through the cache (in-process engine)", f"{result['engine_open_s']:.1f} s"])
    return _table(["build", "value"], rows)


def render_markdown(result: dict) -> str:
    s = result["settings"]
    mets = metrics(s["prefill_sizes"], s["decode_tokens"])
    rows = result["rows"]
    bw = bandwidth_gbs(result)
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
    rounds = f"{s['runs']} round{'s' * (s['runs'] != 1)}"
    out = [f"# LSE benchmark, {result['started']}", "",
           f"- machine: {machine_line(result)}", f"- versions: {versions}",
           f"- model: {result['model']['name']}; {rounds}, every engine in rotating order, decode of every engine back to back; "
           "cells are median (min–max) over the rounds", ""]
    out += ["## Single stream", ""] + main_table(rows, mets, bw) + [""]
    out += ["## LSE against its targets (same run, same machine)", ""]
    out += targets_table(rows, targets(s["prefill_sizes"]), mets)
    out += ["", "## LSE engine / each peer (> 1: LSE better; TTFT inverted)", ""] + ratios_table(rows, mets)
    out += ["", "## Peak memory, each engine in its own process", ""] + memory_table(result.get("memory"))
    out += ["", "## Concurrent streams through lse-server (aggregate decode)", ""] + concurrency_table(result)
    out += ["", "## Build", ""] + build_table(result)
    out += ["", "## Greedy reply to the TTFT prompt", "", *_replies(rows)]
    out += ["", "## Notes", ""] + [f"- {n}" for n in result.get("notes", [])]
    return "\n".join(out) + "\n"


RSS_GOAL = 1.5  # #11: LSE's peak RSS at most 1.5x llama.cpp's on the same file and context


def memory_table(mem: dict | None) -> list[str]:
    """Peak RSS per engine and LSE / llama.cpp against the goal."""
    if not mem:
        return ["Not measured in this run."]
    body = []
    for key in ("lse", "llamacpp-q4_1"):
        m = mem.get(key)
        if m is not None:
            body.append([key, fmt_bytes(m["rss"]) if m["status"] == "ok" else f"**{m['status']}**"])
    lse, peer = mem.get("lse", {}), mem.get("llamacpp-q4_1", {})
    if lse.get("status") == "ok" and peer.get("status") == "ok":
        ratio = lse["rss"] / peer["rss"]
        body.append(["LSE / llama.cpp", f"{ratio:.2f}× (target ≤ {RSS_GOAL:.2f}×: "
                                        f"{'met' if ratio <= RSS_GOAL else 'not met'})"])
    return _table([f"peak RSS (context {mem['n_ctx']}, 128 greedy tokens)", "bytes"], body)


def _replies(rows: Mapping[str, dict]) -> list[str]:
    body = [[f"{r['label']} {r['weights']} ({r['path']})", repr(r["reply"])] for r in rows.values()
            if r["status"] == "ok" and r.get("reply")]
    return _table(["engine", "reply"], body)


def write_chart(result: dict, path) -> None:
    """Prefill and decode tokens/s per engine: bars at the median, whiskers min–max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result["settings"]
    keys = [f"prefill_{n}" for n in s["prefill_sizes"]] + ["decode"]
    rows = [r for r in result["rows"].values() if r["status"] == "ok"]
    names = [f"{r['label']} {r['weights'].split(' ')[0]}, {r['path']}" for r in rows]
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 1.2 + 0.32 * len(rows) * len(keys)), sharex=False)
    for ax, key in zip(axes, keys):
        stats = [summarize(r["samples"].get(key, [])) for r in rows]
        med = [st.median if st else 0 for st in stats]
        err = [[st.median - st.lo if st else 0 for st in stats], [st.hi - st.median if st else 0 for st in stats]]
        colors = ["tab:blue" if r["key"].startswith("lse") else "tab:gray" for r in rows]
        ax.barh(range(len(rows)), med, xerr=err, color=colors, capsize=3)
        ax.set_yticks(range(len(rows)), names, fontsize=8)
        ax.invert_yaxis()
        greedy = f" ({s['decode_tokens']} greedy)" if key == "decode" else ""
        ax.set_title(key.replace("_", " ") + " tokens/s" + greedy, fontsize=9, loc="left")
        for i, st in enumerate(stats):
            if st:
                ax.text(st.hi, i, f" {fmt_num(st.median)}", va="center", fontsize=7)
    fig.suptitle(f"LSE benchmark, {result['started']} (median of {s['runs']}, min–max)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
