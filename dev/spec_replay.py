"""The most speculation can give a set of replies, at a given cost of a
verification: greedy replies to bench_spec's requests are recorded once (an
engine without speculation), then the shipped proposer and back-off
(``runtime/speculative.Draft``, verify4's 3 proposals a step) are replayed
over them. A greedy step accepts a proposal exactly while it equals the
recorded reply, so the replay's tokens per unit of time are the engine's
at that cost, less its Python overhead. It separates what the proposer
misses from what a verification costs: the copy set's median at cost 1.0
is the ceiling of any kernel speed-up.

    python dev/spec_replay.py --record /tmp/replies.json [--model M] [--max-tokens 160]
    python dev/spec_replay.py /tmp/replies.json --cost 1.0 --cost 1.45 --cost 1.8 --best-match
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from lse.runtime.speculative import K_MAX, Draft


def record(path: str, model: str | None, max_tokens: int) -> None:
    from lse.bench.bench_spec import SETS
    from lse.runtime import api

    engine = api.lse_open({"model": model, "threads": 2, "parallel": 1, "speculative": "off"})
    out = {}
    try:
        for set_name, requests in SETS.items():
            for name, body in requests.items():
                handle = api.lse_request(engine, {**body, "max_tokens": max_tokens, "temperature": 0})
                status, reply = handle.result()
                if status != 200:
                    sys.exit(f"{name}: HTTP {status}: {reply}")
                seq = handle._request.seqs[0]
                out[name] = {"set": set_name, "prompt": list(seq.prompt_ids), "reply": list(seq.generated)}
    finally:
        api.lse_close(engine)
    with open(path, "w") as f:
        json.dump(out, f)


def _agreeing(proposal: list[int], truth: list[int]) -> int:
    """How many of ``proposal``'s tokens the reply takes: their common prefix."""
    return next((i for i, (p, t) in enumerate(zip(proposal, truth)) if p != t), min(len(proposal), len(truth)))


def replay(prompt: list[int], reply: list[int], cost: float) -> float:
    """Reply tokens per decode step's time for one recorded reply under the
    shipped proposer; its first token is prefill's."""
    draft, done, time = Draft(), [reply[0]], 0.0
    while len(done) < len(reply):
        k = min(K_MAX, len(reply) - len(done) - 1)
        proposal: list[int] = []
        if k > 0 and (draft.cool <= 0 or draft.watch(prompt, done)):
            draft.index.sync(prompt, done)
            proposal = draft.index.propose(k, draft.min_n)
        if not proposal:
            done.append(reply[len(done)])
            time += 1
            continue
        truth = reply[len(done):len(done) + len(proposal) + 1]
        taken = _agreeing(proposal, truth)
        done += truth[:taken + 1]
        draft.record(len(proposal), taken, cost)
        time += cost
    return (len(reply) - 1) / time


def best_match(prompt: list[int], reply: list[int], cost: float, min_n: int = 2) -> float:
    """The ceiling of proposals taken from the context: each step, of every
    earlier occurrence of the last ``min_n`` tokens, the one whose
    continuation the reply follows longest, verified only when the reply
    takes at least one of its tokens (a proposer that knew the reply)."""
    done, time = [reply[0]], 0.0
    while len(done) < len(reply):
        seq, k = prompt + done, min(K_MAX, len(reply) - len(done) - 1)
        truth, best = reply[len(done):len(done) + k], 0
        for j in range(min_n, len(seq)):
            if seq[j - min_n:j] == seq[-min_n:]:
                best = max(best, _agreeing(seq[j:j + k], truth))
        done += reply[len(done):len(done) + best + 1]
        time += cost if best else 1
    return (len(reply) - 1) / time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("replies", help="the recorded replies (JSON)")
    p.add_argument("--record", action="store_true", help="record the replies into the file first")
    p.add_argument("--model", default=None)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--cost", type=float, action="append", help="a verification's cost in decode steps (repeatable)")
    p.add_argument("--best-match", action="store_true", help="also the ceiling of proposals from the context")
    args = p.parse_args()
    if args.record:
        record(args.replies, args.model, args.max_tokens)
    with open(args.replies) as f:
        replies = json.load(f)
    for cost in args.cost or [1.45]:
        for label, run in [(f"cost {cost:.2f}", replay), *([("  best match", best_match)] if args.best_match else [])]:
            ratios = {name: run(r["prompt"], r["reply"], cost) for name, r in replies.items()}
            copy = [v for name, v in ratios.items() if replies[name]["set"] == "copy"]
            row = " ".join(f"{name} {v:.2f}" for name, v in ratios.items())
            print(f"{label}: {row}; copy set median {statistics.median(copy):.2f}")


if __name__ == "__main__":
    main()
