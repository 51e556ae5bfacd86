"""What a wheel carries: the files lse-compile reads at compile time must be
in pyproject.toml's package-data, or a non-editable install (the README's
serve command, `pip install .`) cannot build the CPU kernels. A header left
out once made every compile of a fresh install fail in `cc`."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from lse.api import webui
from lse.compiler import cpu_kernel_build as cpu_kernels

ROOT = Path(__file__).resolve().parents[2]


def _shipped(package: str, relative: str) -> bool:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = data.get("package-data", {}).get(package, [])
    excluded = data.get("exclude-package-data", {}).get(package, [])
    return any(fnmatch(relative, g) for g in globs) and not any(fnmatch(relative, g) for g in excluded)


def test_every_cpu_kernel_source_and_header_ships():
    kernel_dir = cpu_kernels.SOURCE.parent
    files = sorted(p for p in kernel_dir.iterdir() if p.suffix in (".c", ".h"))
    assert {p.name for p in files} >= {s.name for s in cpu_kernels.OBJECTS.values()}
    missing = [p.name for p in files if not _shipped("lse.compiler", f"{kernel_dir.name}/{p.name}")]
    assert missing == []


def test_every_local_include_of_a_kernel_is_beside_it():
    kernel_dir = cpu_kernels.SOURCE.parent
    for source in cpu_kernels.OBJECTS.values():
        for name in re.findall(r'#include "([^"]+)"', source.read_text()):
            assert (kernel_dir / name).is_file(), f"{source.name} includes {name}"
            assert _shipped("lse.compiler", f"{kernel_dir.name}/{name}"), name


def test_every_file_of_the_chat_page_ships():
    web_dir = ROOT / "api" / "web"
    files = sorted(p.name for p in web_dir.iterdir() if p.is_file())
    assert "index.html" in files
    assert [n for n in files if not _shipped("lse.api", f"web/{n}")] == []
    assert set(webui.shipped_files()) == set(files)  # and every shipped file is one the server serves
