"""Where LSE keeps what it makes: imported models, compiled artifacts."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$LSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/lse``, else ``~/.cache/lse``.

    Not created here; whoever writes into it creates what it needs.
    """
    if os.environ.get("LSE_CACHE_DIR"):
        return Path(os.environ["LSE_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "lse"
    return Path.home() / ".cache" / "lse"
