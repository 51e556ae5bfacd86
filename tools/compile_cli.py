"""``lse-compile``'s console script: ``--version`` here, everything else in
``lse.compiler.cli``.

compiler/cli.py is being rewritten on another branch; until it declares
``--version`` itself (``p.add_argument("--version", action="version",
version=version_text("lse-compile"))``), this thin entry point answers it.
"""

from __future__ import annotations

import sys

from lse.compiler import cli
from lse.compiler.iree_compile import version_text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if "--version" in args:
        print(version_text("lse-compile"))
        return 0
    return cli.main(args)


if __name__ == "__main__":
    sys.exit(main())
