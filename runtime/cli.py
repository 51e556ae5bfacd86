"""lse: one-shot or interactive chat with a model, streamed to the terminal.

    lse [MODEL_OR_ARTIFACT] [-p PROMPT] [--temperature T] [--top-k K] ...

Without -p it reads prompts interactively (the conversation is kept).
Sampling options default to the model's own values. Exit status 1 when
startup fails.
"""

from __future__ import annotations

import argparse
import sys

from lse.runtime.api import (SPECULATIVE_MODES, LseConfig, LseStartupError, VersionAction, lse_close, lse_open,
                             lse_request)
from lse.runtime.logs import configure, lse_log_level

SAMPLING = (("top_k", int, "--top-k"), ("top_p", float, "--top-p"), ("min_p", float, "--min-p"),
            ("presence_penalty", float, "--presence-penalty"), ("repetition_penalty", float, "--repeat-penalty"),
            ("temperature", float, "--temperature"))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lse", description="Chat with a model compiled by LSE.")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("model", nargs="?", metavar="MODEL.gguf | MODEL_DIR | ARTIFACT_DIR",
                   help="a GGUF file (imported once into the cache), a Hugging Face model directory or a compiled "
                        "artifact directory (default: SmolLM2-135M-Instruct)")
    p.add_argument("-p", "--prompt", help="one-shot prompt; without it, chat interactively")
    p.add_argument("-s", "--system", help="system prompt")
    for field, kind, flag in SAMPLING:
        p.add_argument(flag, dest=field, type=kind, default=None, help="default: the model's value")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--kv-len", type=int, default=None)
    p.add_argument("--no-cpu-fallback", action="store_true")
    p.add_argument("--pool", default=None, help="device, e.g. local:0 or cpu:0")
    p.add_argument("-t", "--threads", type=int, default=0,
                   help="CPU worker threads for a local device (default 0: one per physical core)")
    p.add_argument("--speculative", choices=SPECULATIVE_MODES, default="off",
                   help="ngram: draft from the conversation's own tokens, the output unchanged (default off)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the startup log (LSE_LOG_LEVEL=debug: with the detail behind its summaries)")
    return p


def _body(args: argparse.Namespace, messages: list[dict]) -> dict:
    body = {"messages": messages, "stream": True}
    for field, _, _ in SAMPLING:
        if getattr(args, field) is not None:
            body[field] = getattr(args, field)
    if args.max_tokens is not None:
        body["max_tokens"] = args.max_tokens
    if args.seed is not None:
        body["seed"] = args.seed
    return body


def _turn(engine, args, messages: list[dict]) -> str | None:
    """Stream one reply to stdout; return its text, or None after an error."""
    text = []
    for ev in lse_request(engine, _body(args, messages)).events():
        if ev["type"] == "error":
            print(f"\nlse: error {ev['status']}: {ev['data']['error']['message']}", file=sys.stderr)
            return None
        if ev["type"] == "chunk":
            for ch in ev["data"]["choices"]:
                delta = ch.get("delta", {})
                piece = delta.get("content") or delta.get("reasoning_content") or ""
                text.append(piece)
                sys.stdout.write(piece)
                sys.stdout.flush()
    sys.stdout.write("\n")
    return "".join(text)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(lse_log_level(None, "info" if args.verbose else "warning"))
    config = LseConfig(model=args.model, kv_len=args.kv_len, disable_cpu_fallback=args.no_cpu_fallback,
                       pool=[args.pool] if args.pool else None, threads=args.threads, speculative=args.speculative)
    try:
        engine = lse_open(config)
    except LseStartupError as e:
        print(f"lse: startup failed: {e}", file=sys.stderr)
        return 1
    messages = [{"role": "system", "content": args.system}] if args.system else []
    try:
        if args.prompt is not None:
            return 0 if _turn(engine, args, messages + [{"role": "user", "content": args.prompt}]) is not None else 1
        while True:
            try:
                line = input("> ")
            except EOFError:
                return 0
            if not line.strip():
                continue
            messages.append({"role": "user", "content": line})
            reply = _turn(engine, args, messages)
            if reply is None:
                messages.pop()
            else:
                messages.append({"role": "assistant", "content": reply})
    finally:
        lse_close(engine)


if __name__ == "__main__":
    sys.exit(main())
