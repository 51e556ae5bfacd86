"""How much the "lse" loggers say: ``--log-level`` where a command has it,
else ``LSE_LOG_LEVEL`` (debug, info, warning, error), else the command's own
default. At debug the engine also logs the detail behind its one-line
summaries (each device backend that is not present, and why)."""

from __future__ import annotations

import logging
import os

LOG_LEVELS = ("debug", "info", "warning", "error")


def lse_log_level(flag: str | None, default: str) -> int:
    """The level for the "lse" loggers: the flag, else $LSE_LOG_LEVEL, else
    ``default``; an unknown LSE_LOG_LEVEL is ignored (a typo must not stop a server)."""
    env = os.environ.get("LSE_LOG_LEVEL", "").strip().lower()
    name = flag or (env if env in LOG_LEVELS else default)
    return getattr(logging, name.upper())


def configure(level: int) -> None:
    """Bare messages on stderr, the lines the spec quotes whole (lse-api.md,
    CPU fallback); ``level`` applies to LSE's loggers, not to the libraries'."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("lse").setLevel(level)
