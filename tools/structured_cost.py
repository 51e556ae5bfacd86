"""What constrained decoding costs per token: a small measurement, not a benchmark.

    python -m lse.tools.structured_cost --url http://127.0.0.1:8080 [--api-key K] [--tokens 128] [--runs 3]
    python -m lse.tools.structured_cost --tokenizer path/to/tokenizer.json

With ``--url``: the same server, in the same run, decodes ``--tokens`` tokens
of /v1/completions greedily, alternately without and with a json_schema
response_format (an array of records with enums, integers and short
strings), and prints decode tokens/s from each reply's ``timings`` (llama-server's
``predicted_per_second``) and the per-token difference in milliseconds.

With ``--tokenizer``: in-process, the mask step alone (``Constraint.allowed``
then ``advance``) over the tokens of a JSON text, per token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import httpx
import numpy as np

SCHEMA = {"type": "object", "properties": {"items": {"type": "array", "items": {
    "type": "object", "properties": {
        "kind": {"enum": ["fruit", "tool", "animal", "colour"]},
        "count": {"type": "integer", "minimum": 0, "maximum": 999},
        "name": {"type": "string", "maxLength": 24}},
    "required": ["kind", "count", "name"], "additionalProperties": False}}},
    "required": ["items"], "additionalProperties": False}
PROMPT = "Here is a list of things in JSON:"


def server_rates(url: str, key: str | None, tokens: int, runs: int) -> dict[str, list[float]]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    rates: dict[str, list[float]] = {"free": [], "schema": []}
    with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
        for _ in range(runs):
            for kind in ("free", "schema"):
                body = {"prompt": PROMPT, "max_tokens": tokens, "temperature": 0}
                if kind == "schema":
                    body["response_format"] = {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}}
                reply = client.post("/v1/completions", json=body).json()
                timings = reply["timings"]
                if timings.get("predicted_per_second"):
                    rates[kind].append(timings["predicted_per_second"])
    return rates


def mask_step_ms(tokenizer_json: str) -> tuple[float, float, int]:
    """(median, mean) ms of one allowed() + advance() over a JSON reply's tokens, and the token count."""
    from tokenizers import Tokenizer

    from lse.runtime.structured import Grammars, json_grammar

    tok = Tokenizer.from_file(tokenizer_json)
    grammars = Grammars(tok, frozenset({tok.token_to_id("<|im_end|>") or 0}), tok.get_vocab_size())
    grammar = json_grammar(SCHEMA)
    t0 = time.perf_counter()
    constraint = grammars.constraint(grammar)  # the first compile builds the llguidance tokenizer too
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    grammars.constraint(grammar)
    cached = time.perf_counter() - t0
    text = json.dumps({"items": [{"kind": "fruit", "count": 12, "name": "apple"},
                                 {"kind": "tool", "count": 3, "name": "hammer and nails"}] * 4})
    times = []
    for t in tok.encode(text).ids:
        t0 = time.perf_counter()
        allowed = constraint.allowed()
        assert allowed[t]
        constraint.advance(t)
        times.append((time.perf_counter() - t0) * 1000)
    print(f"first constraint (tokenizer + compile) {build * 1000:.1f} ms; a cached one {cached * 1000:.2f} ms")
    return statistics.median(times), float(np.mean(times)), len(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url")
    parser.add_argument("--api-key")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokenizer")
    args = parser.parse_args(argv)
    if args.tokenizer:
        median, mean, n = mask_step_ms(args.tokenizer)
        print(f"mask step over {n} tokens: median {median:.3f} ms, mean {mean:.3f} ms per token")
    if args.url:
        rates = server_rates(args.url, args.api_key, args.tokens, args.runs)
        free, schema = statistics.median(rates["free"]), statistics.median(rates["schema"])
        print(f"decode tok/s (median of {args.runs}): free {free:.1f}, json_schema {schema:.1f} "
              f"({(schema / free - 1) * 100:+.1f}%); per token {1000 / schema - 1000 / free:+.3f} ms")
        print(f"runs: free {[round(r, 1) for r in rates['free']]}, schema {[round(r, 1) for r in rates['schema']]}")
    if not (args.url or args.tokenizer):
        parser.error("give --url, --tokenizer or both")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
