"""``lse-config``: the compiler and linker flags for a program using LSE's C API.

    cc app.c $(lse-config --cflags --libs)

The flags name this installation's lse.h and liblse.so, with an rpath to the
library, so the program runs without LD_LIBRARY_PATH.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import lse.capi

HERE = Path(lse.capi.__file__).resolve().parent
LIBRARY = HERE / "liblse.so"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lse-config", description="Print what a C compiler needs to build against LSE's C API (lse.h).",
        epilog="Build a program with: cc app.c $(lse-config --cflags --libs)")
    p.add_argument("--cflags", action="store_true", help="the include flag for lse.h")
    p.add_argument("--libs", action="store_true", help="the flags that link liblse.so, with an rpath to it")
    p.add_argument("--includedir", action="store_true", help="the directory holding lse.h")
    p.add_argument("--libdir", action="store_true", help="the directory holding liblse.so")
    p.add_argument("--version", action="store_true", help="LSE's, IREE's and Python's versions")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        # Imported only here: the runtime takes a second to import, and
        # build scripts call lse-config --cflags --libs often.
        from lse.runtime.api import version_text

        print(version_text("lse-config"))
        return 0
    if not (args.cflags or args.libs or args.includedir or args.libdir):
        parser.print_help()
        return 1
    if args.libs and not LIBRARY.is_file():
        print(f"lse-config: {LIBRARY} is missing; reinstall LSE (pip install .) to build it", file=sys.stderr)
        return 1
    words = []
    if args.cflags:
        words.append(f"-I{HERE}")
    if args.libs:
        words += [f"-L{HERE}", f"-Wl,-rpath,{HERE}", "-llse"]
    if args.includedir:
        words.append(str(HERE))
    if args.libdir:
        words.append(str(HERE))
    print(" ".join(words))
    return 0


if __name__ == "__main__":
    sys.exit(main())
