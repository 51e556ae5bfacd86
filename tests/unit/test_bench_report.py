"""The pure parts of lse.bench.bench: aggregation, ratios against targets,
the bandwidth-limit arithmetic and the report. No timings are measured or asserted."""

from __future__ import annotations

import pytest

from lse.bench import bench_report as br


def _row(key: str, **samples) -> dict:
    return {"key": key, "label": key, "weights": "f32", "path": "p", "status": "ok", "samples": samples,
            "weight_bytes_per_token": 525_000_000, "reply": "Paris."}


@pytest.mark.parametrize("values, expected", [
    ([3.0, 1.0, 2.0], br.Stat(2.0, 1.0, 3.0, 3)),
    ([4.0, 1.0, 2.0, 3.0], br.Stat(2.5, 1.0, 4.0, 4)),
    ([5.0, None, float("nan"), 7.0], br.Stat(6.0, 5.0, 7.0, 2)),  # gaps and nan are left out
    ([2.0], br.Stat(2.0, 2.0, 2.0, 1)),
])
def test_summarize_median_and_min_max(values, expected):
    assert br.summarize(values) == expected


def test_summarize_nothing_measured_is_none():
    assert br.summarize([]) is None
    assert br.summarize([None, None]) is None


def test_paired_ratios_keep_rounds_where_both_were_measured():
    assert br.paired_ratios([10.0, None, 30.0, 8.0], [5.0, 4.0, 10.0, 0.0]) == [2.0, 3.0]


def test_ratio_stat_is_oriented_so_more_is_better_for_lse():
    rows = {"lse-engine": _row("lse-engine", decode=[20.0, 30.0], ttft=[0.5, 0.4]),
            "llamacpp-f32": _row("llamacpp-f32", decode=[40.0, 30.0], ttft=[0.25, 0.8])}
    assert br.ratio_stat(rows, "decode", "lse-engine", "llamacpp-f32") == br.Stat(0.75, 0.5, 1.0, 2)
    # TTFT: lower is better, so the ratio is peer / LSE
    ttft = br.ratio_stat(rows, "ttft", "lse-engine", "llamacpp-f32", higher_is_better=False)
    assert ttft == br.Stat(1.25, 0.5, 2.0, 2)
    assert br.ratio_stat(rows, "decode", "lse-engine", "transformers") is None


@pytest.mark.parametrize("median, goal, expected", [
    (1.2, 1.0, "met"),
    (1.0, 1.0, "met"),
    (0.5, 1.0, "short by 50% (needs 2.00× more)"),
    (0.8, 1.0, "short by 20% (needs 1.25× more)"),
    (1.19, 1.2, "short by 0.8% (needs 1.008× more)"),
    (0.95, 1.0, "short by 5.0% (needs 1.053× more)"),
])
def test_verdict_names_the_gap(median, goal, expected):
    assert br.verdict(br.Stat(median, median, median, 1), goal) == expected


def test_verdict_when_a_side_is_missing():
    assert br.verdict(None, 1.0) == "not measured"


def test_targets_are_the_issues_against_llamacpp_on_the_same_q4_1_file():
    tgts = br.targets((128, 512, 2048))
    assert [(t.metric, t.goal) for t in tgts] == [("decode", 1.2), ("prefill_512", 2.0), ("prefill_2048", 2.0),
                                                  ("ttft", 2.0)]
    assert {(t.lse, t.peer) for t in tgts if t.metric != "ttft"} == {("lse-engine", "llamacpp-q4_1")}
    assert (tgts[-1].lse, tgts[-1].peer) == ("lse-http-stream", "llamacpp-q4_1")  # #12: through HTTP, streamed


@pytest.mark.parametrize("stat, text", [
    (br.Stat(0.6612, 0.6, 0.7049, 5), "0.66× (0.60–0.70)"),
    (None, "—"),
])
def test_fmt_ratio(stat, text):
    assert br.fmt_ratio(stat) == text


@pytest.mark.parametrize("stat, unit, text", [
    (br.Stat(180.4, 170.0, 191.2, 5), "", "180 (170–191)"),
    (br.Stat(27.34, 26.01, 28.9, 5), "", "27.3 (26.0–28.9)"),
    (br.Stat(0.213, 0.2, 0.25, 5), "s", "0.21 s (0.20–0.25)"),
    (br.Stat(19.8, 19.8, 19.8, 1), "GB/s", "19.8 GB/s"),
    (None, "", "—"),
])
def test_fmt_stat(stat, unit, text):
    assert br.fmt_stat(stat, unit) == text


def test_weight_bytes_per_token_counts_a_tied_embedding_as_the_output_matrix():
    sizes = {"emb": 100, "layer": 50, "norm": 2}
    assert br.weight_bytes_per_token(sizes, "emb", tied=True) == 152
    # untied: the table is only gathered, one row per token; lm_head is among the sizes
    assert br.weight_bytes_per_token({**sizes, "lm_head": 100}, "emb", tied=False) == 152


def test_bandwidth_limit_matches_the_baseline_note():
    # baselines.md: ~20 GB/s and SmolLM2-135M in f32 (538 MB) → about 37–38 tok/s
    assert br.bandwidth_limit(538_060_032, 20.0) == pytest.approx(37.17, abs=0.01)
    assert br.bandwidth_limit(1_000_000_000, 10.0) == pytest.approx(10.0)


def test_limit_cell_is_decode_as_a_share_of_the_limit():
    row = _row("x", decode=[8.0, 10.0, 12.0])
    assert br.limit_cell(row, 21.0) == "25% of 40"  # limit 21e9 / 5.25e8 = 40 tok/s
    assert br.limit_cell(_row("y"), 20.0) == "—"


def _result() -> dict:
    rows = {"lse-engine": _row("lse-engine", prefill_128=[90.0, 100.0], decode=[9.0, 11.0], ttft=[0.4, 0.5]),
            "lse-http-stream": _row("lse-http-stream", ttft=[0.4, 0.5]),
            "llamacpp-q4_1": _row("llamacpp-q4_1", prefill_128=[180.0, 200.0], decode=[27.0, 22.0], ttft=[0.2, 0.2]),
            "transformers": {**_row("transformers"), "status": "missing: No module named 'torch'"}}
    return {"started": "2026-01-01 00:00:00 UTC", "settings": {"runs": 2, "prefill_sizes": [128], "decode_tokens": 128,
                                                                  "streams": [1, 4]},
            "machine": {"cpu": "AMD EPYC", "cores": 2, "threads": 2, "memory_bytes": 24 * 2**30,
                        "bandwidth": {"read_gbs": [19.0, 21.0, 20.0], "copy_gbs": [15.0]},
                        "load": {"start": [1.0, 1, 1]}},
            "versions": {"lse": "0.1.0"}, "model": {"name": "SmolLM2"}, "rows": rows,
            "concurrency": {"1": {"status": "ok", "startup_s": 3.0, "vm_hwm_bytes": 900 * 2**20,
                                  "streams": {"1": [10.0, 11.0], "4": [10.5, 10.0]}}},
            "compile": {"status": "ok", "seconds": 95.0, "artifact_bytes": 800_000, "weights_bytes": 538_000_000},
            "notes": ["a note"]}


def test_render_markdown_shows_ratios_targets_and_missing_peers():
    md = br.render_markdown(_result())
    assert "memory bandwidth 21.0 GB/s read (best of 3; median 20.0)" in md
    assert br.bandwidth_gbs(_result()) == 21.0  # the best sample: load only lowers one
    assert ("| decode tok/s (128 greedy): lse-engine f32 (p) / llamacpp-q4_1 f32 (p) | 0.42× (0.33–0.50) | ≥ 1.20× "
            "| short by 65%") in md
    assert "| TTFT chat (s): lse-http-stream f32 (p) / llamacpp-q4_1 f32 (p) | 0.45× (0.40–0.50) | ≥ 2.00× |" in md
    assert "**missing: No module named 'torch'**" in md
    assert "| 1 | 10.5 (10.0–11.0) | 10.2 (10.0–10.5) | 3.0 s | 900.0 MiB |" in md
    assert "| lse-compile --no-cache (llvm-cpu, 1 slot) | 95.0 s |" in md
    assert "- a note" in md
    assert "| transformers f32 (p) |" not in md  # no reply from a missing peer


def test_memory_table_reports_the_rss_ratio_against_the_goal():
    mem = {"n_ctx": 4096, "lse": {"status": "ok", "rss": 300 * 2**20},
           "llamacpp-q4_1": {"status": "ok", "rss": 250 * 2**20}}
    text = "\n".join(br.memory_table(mem))
    assert "| lse | 300.0 MiB |" in text and "| llamacpp-q4_1 | 250.0 MiB |" in text
    assert "1.20× (target ≤ 1.50×: met)" in text
    mem["lse"]["rss"] = 400 * 2**20
    assert "1.60× (target ≤ 1.50×: not met)" in "\n".join(br.memory_table(mem))
    assert br.memory_table(None) == ["Not measured in this run."]


def test_the_default_server_row_names_its_slots_and_the_target():
    result = _result()
    result["concurrency"]["auto"] = {
        "status": "ok", "startup_s": 2.0, "vm_hwm_bytes": 300 * 2**20, "slots": 8,
        "streams": {"1": [60.0, 62.0, 64.0], "4": [150.0], "8": [180.0, 175.0, 185.0]},
        "beside": {"prompt_tokens": 2048, "ttft_alone_s": 5.2, "ttft_beside_s": 6.1, "gap_before_p50_s": 0.015,
                   "gap_during_p50_s": 0.31, "gap_during_p99_s": 0.42, "gap_during_max_s": 0.45, "gaps_during": 17}}
    result["settings"]["streams"] = [1, 4, 8]
    md = br.render_markdown(result)
    assert "| auto (8 slots, the default) | 62.0 (60.0–64.0) | 150 | 180 (175–185) | 2.0 s | 300.0 MiB |" in md
    assert "Default options: 8 streams give 2.90× one stream's aggregate (target ≥ 4×: not met)." in md
    assert "| 2048-token prompt to its first token, alone | 5200 ms |" in md
    assert "| the stream's gaps while it is prefilled (17): median / p99 / max | 310 ms / 420 ms / 450 ms |" in md
    result["concurrency"]["auto"]["streams"]["8"] = [250.0]
    assert "4.03× one stream's aggregate (target ≥ 4×: met)" in br.render_markdown(result)
    result["concurrency"]["auto"]["beside"] = {"status": "failed: the stream ended"}
    assert "Long prompt beside a running stream: failed: the stream ended" in br.render_markdown(result)


def test_llamacpp_batched_sequences_get_a_row_and_the_8_stream_ratio():
    result = _result()
    result["settings"]["streams"] = [1, 4, 8]
    result["concurrency"]["auto"] = {"status": "ok", "startup_s": 2.0, "slots": 8,
                                     "streams": {"1": [140.0], "4": [380.0], "8": [400.0, 410.0, 420.0]}}
    result["peer_streams"] = {"status": "ok", "streams": {"1": [80.0], "4": [120.0], "8": [160.0, 164.0, 170.0]}}
    md = br.render_markdown(result)
    assert "| llama.cpp Q4_1, N sequences in one batch (in-process) | 80.0 | 120 | 164 (160–170) | — | — |" in md
    assert "8 streams against llama.cpp's 8 sequences in one batch: 2.50× (410 against 164 tok/s;" in md
    result["peer_streams"] = {"status": "missing: No module named 'llama_cpp'"}
    md = br.render_markdown(result)
    assert "| llama.cpp Q4_1, N sequences in one batch (in-process) | **missing: No module named 'llama_cpp'** |" in md
    assert "sequences in one batch:" not in md


class _FakeRunner:
    """Records each call; fails every call in `fail_round` (1-based)."""

    def __init__(self, key: str, log: list, fail_round: int | None = None):
        self.key, self.log, self.fail_round, self.round = key, log, fail_round, 1

    def _call(self, what: str):
        self.log.append((self.key, what))
        if self.round == self.fail_round:
            raise RuntimeError("down")

    def prefill(self, ids):
        self._call("prefill")
        return 0.5

    def decode(self, ids, n):
        self._call("decode")
        return n, 1.0

    def chat(self, messages, max_tokens):
        self._call("chat")
        return 0.1, "Paris."


def test_rounds_take_every_engines_decode_back_to_back(monkeypatch):
    """A round measures each engine's prefills and chat, then every engine's
    decode back to back (an LSE/peer decode ratio compares moments seconds
    apart), the engines in an order rotating by round; the chats stay apart
    (two runners share a server and its prefix cache). A failure leaves None
    for that engine's round."""
    from lse.bench import bench, bench_machine

    monkeypatch.setattr(bench_machine, "measure_bandwidth", lambda threads, repeats=1: {"read": [1.0]})
    monkeypatch.setattr(bench_machine, "load", lambda: [0.0, 0.0, 0.0])
    log: list = []
    runners = [_FakeRunner("a", log), _FakeRunner("b", log, fail_round=2)]
    rows = {r.key: {"samples": {}, "errors": []} for r in runners}
    s = bench.Settings(runs=2, prefill_sizes=(4,), decode_tokens=3, streams=(1,), parallel=("1",),
                       concurrency_runs=1, compile=False, threads=2, quick=True)
    prompts = type("P", (), {"raw": lambda self, n: [1] * n, "count": [1, 2]})()
    result = {"machine": {"bandwidth": {"read": []}, "load": {}}}

    def next_round():
        for r in runners:
            r.round += 1

    bench.run_rounds(runners, rows, prompts, s, result, next_round)
    assert log[:6] == [("a", "prefill"), ("a", "chat"), ("b", "prefill"), ("b", "chat"),
                       ("a", "decode"), ("b", "decode")]
    assert log[6:] == [("b", "prefill"), ("a", "prefill"), ("a", "chat"), ("a", "decode")]  # b failed round 2
    assert rows["a"]["samples"]["decode"] == [2.0, 2.0] and rows["b"]["samples"]["decode"] == [2.0, None]
    assert rows["b"]["samples"]["prefill_4"] == [8.0, None] and rows["b"]["errors"][0].startswith("round 2:")
