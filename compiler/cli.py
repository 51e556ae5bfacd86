"""lse-compile MODEL -o ARTIFACT_DIR [--target T ...] [--dump-dir D] [--no-cpu-fallback]

MODEL is a model directory or a GGUF file; a GGUF file is imported once into
the cache with its block formats kept (the command imports lse.compiler.gguf.importer;
the compiler library itself reads only model directories)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lse.compiler.cache import compiled_artifact, link_tree
from lse.compiler.config import ModelConfigError
from lse.compiler.iree_compile import VersionAction
from lse.compiler.manifest import MANIFEST_NAME
from lse.compiler.partition_by_capability import PartitionError
from lse.compiler.kv_layout import DEFAULT_SLACK
from lse.compiler.pipeline import CompileError, CompileOptions, compile_model
from lse.compiler.targets import TARGETS, TargetError, parse_no_kernel
from lse.compiler.weights import WeightError, default_kv_dtype
from lse.compiler.gguf.tokenizer import TokenizerImportError
from lse.compiler.gguf.importer import GGUFError, ensure_imported


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lse-compile",
                                description="Compile a Hugging Face layout model or a GGUF file with IREE.")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("model_dir", type=Path, metavar="MODEL.gguf | MODEL_DIR",
                   help="a GGUF file (imported once into the cache, block formats kept) or a Hugging Face model "
                        "directory")
    p.add_argument("-o", "--output", type=Path, required=True, help="artifact directory to write")
    p.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable; default llvm-cpu")
    p.add_argument("--slots", type=int, default=1, help="KV-cache slots = decode batch (default 1)")
    p.add_argument("--kv-dtype", choices=("auto", "f32", "f16"), default="auto",
                   help="KV cache element type (default auto: f16 for block-format weights, else f32)")
    p.add_argument("--kv-len", type=int, metavar="TOKENS",
                   help="fix the context (KV cache positions) in the modules: decode's command buffers are then "
                        "recorded once, not at every step; the server serves that context (default: any)")
    p.add_argument("--kv-slack", type=int, default=DEFAULT_SLACK, metavar="ROWS",
                   help="rows a sliding layer's ring keeps beyond its window; the server's prefill chunks then "
                        f"take at most ROWS + 1 rows (default {DEFAULT_SLACK}; compiler/kv_layout.py)")
    p.add_argument("--dump-dir", type=Path, help="write every intermediate and the iree-compile command lines")
    p.add_argument("--no-cpu-fallback", action="store_true", help="fail instead of planning host groups")
    p.add_argument("--no-kernel", action="append", default=[], metavar="[TARGET:]OP",
                   help="declare that TARGET (default: every target) has no kernel for OP")
    p.add_argument("--no-cache", action="store_true", help="compile even if the cache holds this artifact")
    p.add_argument("--speculative", choices=("off", "ngram"), default="off",
                   help="ngram: also compile the verify entry a server started with --speculative ngram checks "
                        "its drafts with (default off, as the server's)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.model_dir.is_file() and args.model_dir.suffix.lower() == ".gguf":
            args.model_dir = ensure_imported(args.model_dir)
        options = CompileOptions(
            targets=tuple(args.target or ["llvm-cpu"]), slots=args.slots,
            kv_dtype=default_kv_dtype(args.model_dir) if args.kv_dtype == "auto" else args.kv_dtype,
            no_kernel=parse_no_kernel(args.no_kernel),
            no_cpu_fallback=args.no_cpu_fallback, dump_dir=args.dump_dir, kv_len=args.kv_len,
            kv_slack=args.kv_slack, speculative=args.speculative != "off")
        if args.no_cache or args.dump_dir:
            compile_model(args.model_dir, args.output, options)
        else:
            cached, manifest = compiled_artifact(args.model_dir, options)
            if cached.resolve() != args.output.resolve():
                link_tree(cached, args.output)
                (args.output / MANIFEST_NAME).unlink()  # a file of its own, not the cache's, rewritten
                manifest.write(args.output)  # bound to this model's directory
    except (ModelConfigError, WeightError, TargetError, PartitionError, CompileError, GGUFError,
            TokenizerImportError, OSError) as e:
        print(f"lse-compile: error: {e}", file=sys.stderr)
        return 1
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
