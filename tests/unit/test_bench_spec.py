"""lse.bench.bench_spec's summary and report (the measuring runs in the lead's bench)."""

from __future__ import annotations

from lse.bench.bench_spec import COPY_SET, FREE_SET, build_parser, report, summarize


def _row(off, on, drafted, accepted, same=True, off_repeats=True, ngram_repeats=True):
    return {"off_tok_s": off, "ngram_tok_s": on, "ngram_drafted": drafted, "ngram_accepted": accepted,
            "same_tokens": same, "off_repeats": off_repeats, "ngram_repeats": ngram_repeats}


def test_summary_is_medians_ratio_and_acceptance() -> None:
    s = summarize([_row(10.0, 20.0, 10, 8), _row(10.0, 15.0, 10, 2, same=False, off_repeats=False),
                   _row(12.0, 12.0, 0, 0)])
    assert (s["off_tok_s"], s["ngram_tok_s"], s["ratio"]) == (10.0, 15.0, 1.5)
    assert (s["drafted"], s["accepted"], s["acceptance"]) == (20, 10, 0.5)
    assert (s["same_tokens"], s["replies"], s["off_repeats"], s["ngram_repeats"]) == (2, 3, 2, 3)
    text = report({"sets": {"copy": s, "free": summarize([_row(None, None, 0, 0)])}})
    assert text.splitlines()[1].split() == ["copy", "10.0", "15.0", "1.50", "0.50", "2/3", "2/3"]
    assert text.splitlines()[2].split() == ["free", "-", "-", "-", "-", "1/1", "1/1"]
    assert len(text.splitlines()) == 3  # no verification ran: no cost line
    costed = report({"sets": {"copy": s}, "verify_cost": 1.478})
    assert costed.splitlines()[-1] == "a verification cost 1.48 decode steps at the end (the engine's measure)"


def test_the_sets_are_the_issues() -> None:
    assert list(COPY_SET) == ["rewrite", "bugfix", "quote", "json", "tool_call"]
    assert list(FREE_SET) == ["story", "chat"]
    assert COPY_SET["bugfix"]["messages"][0]["content"].count("\n") >= 40  # a 40-line function
    args = build_parser().parse_args(["--runs", "1", "--only", "rewrite"])
    assert (args.runs, args.only, args.temperature) == (1, ["rewrite"], 0.0)
