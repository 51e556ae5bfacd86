"""Speculative decoding's benchmark: ``python -m lse.bench.bench_spec``.

Two in-process engines on one model, ``--speculative off`` and ``ngram``,
answer the same requests in alternation (so a busy machine slows both
alike): a copy-heavy set (a paragraph rewritten with one change, a bug fixed
in a 40-line function, quotes from a document, JSON under a schema, a tool
call whose arguments repeat the prompt) and a free-text set (a story, chat).
Per request it records decode tok/s (the reply's ``timings``), the drafted
and accepted tokens, and whether the two replies are the same tokens; per
set the median tok/s of each engine, their ratio and the acceptance rate.
Greedy (temperature 0) unless ``--temperature``; ``--seed`` makes sampled
runs comparable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

PARAGRAPH = ("The old mill stood at the edge of the village for nearly two hundred years. Its wheel turned in "
             "the stream every spring, grinding wheat for the farms along the valley, and in winter the miller "
             "opened its loft to travellers caught by the snow. When the railway came, the mill fell quiet, but "
             "the villagers kept its roof mended and its doors painted green, and on the first Sunday of May "
             "they still gather there to bake bread in its oven.")

FUNCTION = '''def summarize_orders(orders, min_total=0.0):
    """Group orders by customer and return totals, counts and the largest order."""
    by_customer = {}
    for order in orders:
        customer = order["customer"]
        amount = float(order["amount"])
        if amount < 0:
            raise ValueError(f"negative amount in order {order['id']}")
        entry = by_customer.setdefault(customer, {"total": 0.0, "count": 0, "largest": None})
        entry["total"] += amount
        entry["count"] += 1
        largest = entry["largest"]
        if largest is None or amount > largest["amount"]:
            entry["largest"] = {"id": order["id"], "amount": amount}
    result = []
    for customer, entry in by_customer.items():
        if entry["total"] <= min_total:
            continue
        average = entry["total"] / entry["count"]
        result.append({
            "customer": customer,
            "total": round(entry["total"], 2),
            "count": entry["count"],
            "average": round(average, 2),
            "largest_order": entry["largest"]["id"],
        })
    result.sort(key=lambda row: row["total"])
    return result


def top_customers(orders, n=3):
    """The n customers with the largest totals, largest first."""
    rows = summarize_orders(orders)
    return [row["customer"] for row in rows[:n]]


def total_revenue(orders):
    """The sum of every order's amount."""
    return round(sum(float(o["amount"]) for o in orders), 2)
'''

DOCUMENT = ("Section 4. Returns. A customer may return any item within 30 days of delivery for a full refund, "
            "provided the item is unused and in its original packaging. Items marked as final sale cannot be "
            "returned. Section 5. Shipping. Orders over 50 dollars ship free within the country; other orders pay "
            "a flat fee of 6 dollars. Express shipping costs 15 dollars and arrives within two business days. "
            "Section 6. Warranty. Electronics carry a one-year warranty against defects in materials and "
            "workmanship; the warranty does not cover damage from accidents, misuse or unauthorized repair.")

PERSON_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "city": {"type": "string"}, "occupation": {"type": "string"},
    "hobbies": {"type": "array", "items": {"type": "string"}}},
    "required": ["name", "city", "occupation", "hobbies"], "additionalProperties": False}
PERSON = ("Maria Gonzalez is a marine biologist who lives in Valparaiso. In her free time she enjoys sailing, "
          "painting watercolors of the harbor and playing chess with her neighbors.")
NOTE_TOOL = {"type": "function", "function": {"name": "save_note", "description": "Save a note",
             "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                            "required": ["title", "body"]}}}


def _user(text: str, **extra) -> dict:
    return {"messages": [{"role": "user", "content": text}], **extra}


COPY_SET = {
    "rewrite": _user(f"Rewrite this paragraph exactly, changing only 'two hundred' to 'three hundred':\n\n{PARAGRAPH}"),
    "bugfix": _user("The function below sorts its result in the wrong order: top_customers should get the largest "
                    f"totals first. Fix the bug and write out the whole corrected code.\n\n```python\n{FUNCTION}```"),
    "quote": _user(f"{DOCUMENT}\n\nQuoting the document word for word, what does it say about returns and about "
                   "express shipping?"),
    "json": _user(f"Extract the person described here as JSON.\n\n{PERSON}",
                  response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA}}),
    "tool_call": _user(f"Save this paragraph as a note titled 'Mill':\n\n{PARAGRAPH}", tools=[NOTE_TOOL],
                       tool_choice={"type": "function", "function": {"name": "save_note"}}),
}
FREE_SET = {
    "story": _user("Write a short story about a lighthouse keeper who finds a message in a bottle."),
    "chat": _user("What are some good ways to get better at cooking at home? Give me a few ideas."),
}
SETS = {"copy": COPY_SET, "free": FREE_SET}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lse.bench.bench_spec", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="model (default: LSE's default model)")
    p.add_argument("--runs", type=int, default=3, help="rounds over every request (default 3)")
    p.add_argument("--max-tokens", type=int, default=160, help="tokens per reply (default 160)")
    p.add_argument("--threads", type=int, default=2, help="IREE worker threads (default 2)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    p.add_argument("--seed", type=int, default=1, help="seed of sampled runs (default 1)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="run only these requests (repeatable; names: " + ", ".join([*COPY_SET, *FREE_SET]) + ")")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    return p


def _one(api, engine, body: dict) -> dict:
    handle = api.lse_request(engine, body)
    status, reply = handle.result()
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {json.dumps(reply)[:300]}")
    t = reply["timings"]
    return {"tokens": list(handle._request.seqs[0].generated), "tok_s": t.get("predicted_per_second"),
            "drafted": t.get("draft_n", 0), "accepted": t.get("draft_n_accepted", 0)}


def measure(args: argparse.Namespace, say=print) -> dict:
    from lse.runtime import api

    engines = {mode: api.lse_open({"model": args.model, "threads": args.threads, "parallel": 1,
                                   "speculative": mode}) for mode in ("off", "ngram")}
    extra = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
    runs: dict[str, list] = {}
    first: dict[tuple[str, str], list[int]] = {}  # (mode, request) -> its round-0 tokens
    try:
        for engine in engines.values():  # warm-up: first calls load pages and record command buffers
            _one(api, engine, {**FREE_SET["chat"], **extra, "max_tokens": 8})
        for r in range(args.runs):
            for set_name, requests in SETS.items():
                for name, body in requests.items():
                    if args.only and name not in args.only:
                        continue
                    got = {mode: _one(api, e, {**body, **extra}) for mode, e in engines.items()}
                    # Each engine against its own first round: a reply that differs from the other
                    # engine's is then either speculation's doing or the engine repeating itself unevenly.
                    repeats = {f"{m}_repeats": v["tokens"] == first.setdefault((m, name), v["tokens"])
                               for m, v in got.items()}
                    row = {"set": set_name, "name": name, "round": r, "same_tokens": got["off"]["tokens"] ==
                           got["ngram"]["tokens"], **repeats, **{f"{m}_{k}": v[k] for m, v in got.items()
                                                                 for k in ("tok_s", "drafted", "accepted")},
                           "tokens": len(got["off"]["tokens"])}
                    runs.setdefault(set_name, []).append(row)
                    say(f"  {set_name}/{name} round {r}: {row['off_tok_s']} -> {row['ngram_tok_s']} tok/s, "
                        f"accepted {row['ngram_accepted']}/{row['ngram_drafted']}, same tokens: {row['same_tokens']} "
                        f"(each as its round 0: off {row['off_repeats']}, ngram {row['ngram_repeats']})")
        # the cost the back-off judged by: a verification's time over a lone decode call's
        verify_cost = api.lse_status(engines["ngram"])["engine"]["speculative"]["verify_cost"]
    finally:
        for e in engines.values():
            api.lse_close(e)
    return {"settings": vars(args) | {"out": str(args.out)}, "sets": {k: summarize(v) for k, v in runs.items()},
            "runs": runs, "verify_cost": verify_cost}


def summarize(rows: list[dict]) -> dict:
    off = [r["off_tok_s"] for r in rows if r["off_tok_s"]]
    on = [r["ngram_tok_s"] for r in rows if r["ngram_tok_s"]]
    drafted = sum(r["ngram_drafted"] for r in rows)
    accepted = sum(r["ngram_accepted"] for r in rows)
    ratios = [r["ngram_tok_s"] / r["off_tok_s"] for r in rows if r["off_tok_s"] and r["ngram_tok_s"]]
    return {"off_tok_s": statistics.median(off) if off else None, "ngram_tok_s": statistics.median(on) if on else None,
            "ratio": statistics.median(ratios) if ratios else None, "drafted": drafted, "accepted": accepted,
            "acceptance": accepted / drafted if drafted else None,
            "same_tokens": sum(r["same_tokens"] for r in rows), "replies": len(rows),
            "off_repeats": sum(r["off_repeats"] for r in rows), "ngram_repeats": sum(r["ngram_repeats"] for r in rows)}


def report(result: dict) -> str:
    lines = ["set    off tok/s  ngram tok/s  ratio  acceptance  same tokens  off/ngram as round 0"]
    for name, s in result["sets"].items():
        fmt = (lambda v, spec: "-" if v is None else format(v, spec))
        lines.append(f"{name:<6} {fmt(s['off_tok_s'], '9.1f')}  {fmt(s['ngram_tok_s'], '11.1f')}  "
                     f"{fmt(s['ratio'], '5.2f')}  {fmt(s['acceptance'], '10.2f')}  {s['same_tokens']}/{s['replies']:<10} "
                     f"{s['off_repeats']}/{s['ngram_repeats']}")
    if result.get("verify_cost") is not None:
        lines.append(f"a verification cost {result['verify_cost']:.2f} decode steps at the end (the engine's measure)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t0 = time.perf_counter()
    result = measure(args)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(report(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
