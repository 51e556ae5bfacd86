"""Sampling defaults from the model's own files (docs/spec/lse-api.md "Sampling
defaults"). For each field the first source that sets it wins:
generation_config.json, then config.json's embedded ``generation_config``
object, then config.json's top-level fields, then LSE's neutral defaults.
``lse-server --temperature`` overrides the temperature default, and
``do_sample: false`` in the model's files makes it 0 (greedy). There is no
per-model or per-family table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GENERATION_CONFIG = "generation_config.json"
CONFIG = "config.json"
SERVER_OPTION = "server_option"
LSE_DEFAULT = "lse_default"

# Field -> (LSE's neutral default, type). Neutral means plain sampling from
# the model's distribution with no limit.
NEUTRAL: dict[str, tuple[float | int | None, type]] = {
    "temperature": (1.0, float),
    "top_k": (0, int),
    "top_p": (1.0, float),
    "min_p": (0.0, float),
    "repetition_penalty": (1.0, float),
    "presence_penalty": (0.0, float),
    "max_new_tokens": (None, int),
    "max_length": (None, int),
}


@dataclass(frozen=True)
class GenerationDefaults:
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    repetition_penalty: float
    presence_penalty: float
    max_new_tokens: int | None
    max_length: int | None
    sources: dict[str, str]  # field -> where its value came from

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in NEUTRAL}
        out["sources"] = {name: self.sources[name] for name in NEUTRAL}
        return out

    def neutral_note(self, max_tokens_cap: int = 0) -> str | None:
        """One startup line when the reply's temperature or length comes from
        nowhere but LSE's neutral defaults (plain sampling at 1.0, no token
        limit: a small model rambles for minutes), naming the options that
        set them; None when the model's files or the options set both."""
        unset = []
        if self.sources["temperature"] == LSE_DEFAULT:
            unset.append(("temperature", "temperature 1.0", "--temperature"))
        if self.sources["max_new_tokens"] == LSE_DEFAULT and self.max_length is None and max_tokens_cap <= 0:
            unset.append(("max_new_tokens", "no token limit but the context", "--max-tokens"))
        if not unset:
            return None
        names = " or ".join(name for name, _, _ in unset)
        effects = " and ".join(effect for _, effect, _ in unset)
        options = " and ".join(option for _, _, option in unset)
        return (f"lse: NOTE: the model's files set no {names}: a request that leaves them out gets LSE's neutral "
                f"defaults ({effects}); set them with {options}")

    def log_line(self) -> str:
        parts = ", ".join(f"{name}={json.dumps(getattr(self, name))} ({self.sources[name]})"
                          for name in NEUTRAL)
        return f"lse: generation defaults: {parts}"


def _coerce(value: Any, kind: type) -> float | int | bool | None:
    """A file's value as the field's type, or None when it has another type
    (a model file's odd value is skipped rather than trusted)."""
    if kind is bool:
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if kind is int:
        return int(value) if float(value).is_integer() else None
    return float(value)


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _model_layers(model_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """The model's files in precedence order, each with its source name."""
    config = _read(model_dir / CONFIG)
    embedded = config.get("generation_config")
    return [
        (GENERATION_CONFIG, _read(model_dir / GENERATION_CONFIG)),
        (CONFIG, embedded if isinstance(embedded, dict) else {}),
        (CONFIG, config),
    ]


def _first(layers: list[tuple[str, dict[str, Any]]], name: str, kind: type) -> tuple[Any, str] | None:
    for source, values in layers:
        value = _coerce(values.get(name), kind)
        if value is not None:
            return value, source
    return None


def generation_defaults(model_dir: str | Path, server_temperature: float | None = None, *,
                        server_options: Mapping[str, float | int] | None = None) -> GenerationDefaults:
    """The defaults a request's absent fields get. ``server_temperature`` is
    ``--temperature``; ``server_options`` carries the ``lse`` command line's
    other overrides (``top_k``, ``top_p``, ...), also reported as server_option."""
    layers = _model_layers(Path(model_dir))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, (neutral, kind) in NEUTRAL.items():
        found = _first(layers, name, kind)
        values[name], sources[name] = found if found is not None else (neutral, LSE_DEFAULT)
    do_sample = _first(layers, "do_sample", bool)
    if do_sample is not None and do_sample[0] is False:
        values["temperature"], sources["temperature"] = 0.0, do_sample[1]
    overrides = {k: v for k, v in (server_options or {}).items() if v is not None}
    if server_temperature is not None:
        overrides["temperature"] = server_temperature
    for name, value in overrides.items():
        if name not in NEUTRAL:
            raise ValueError(f"unknown generation default {name!r}")
        coerced = _coerce(value, NEUTRAL[name][1])
        if coerced is None:
            raise ValueError(f"server option {name} must be a number, got {value!r}")
        values[name], sources[name] = coerced, SERVER_OPTION
    return GenerationDefaults(**values, sources=sources)
