"""Habits CI keeps (/work/shared/style.md, "Hygiene"): ruff's pyflakes and
bugbear rules, ARCHITECTURE.md's import rules, and the size budget."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# package folder -> its name under lse (pyproject.toml's package-dir)
PACKAGES = {"api": "lse.api", "capi": "lse.capi", "runtime": "lse.runtime", "compiler": "lse.compiler",
            "spec": "lse.spec", "tools": "lse.tools", "bench": "lse.bench", "fixtures": "lse.fixtures", "cluster": "lse.cluster"}
# the product: what lse-server, lse, lse-compile, lse-spec, lse-cluster and liblse.so run
PRODUCT = ("compiler", "runtime", "api", "capi", "cluster", "spec")


def sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders or tuple(PACKAGES) for p in (ROOT / f).rglob("*.py"))


# ---- ruff --------------------------------------------------------------------

def test_ruff() -> None:
    """pyflakes (F) and bugbear (B), as pyproject.toml's [tool.ruff] selects."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    run = subprocess.run([ruff, "check", "--output-format", "concise", str(ROOT)], capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


# ---- ARCHITECTURE.md's "Who may import whom" -----------------------------------

def lse_imports(path: Path) -> set[str]:
    """Every lse module ``path`` imports, function-level imports included
    (relative imports resolved against its package)."""
    package = PACKAGES[path.relative_to(ROOT).parts[0]]
    rel = path.relative_to(ROOT).parts[1:-1]
    here = ".".join([package, *rel])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("lse."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("lse."):
                out.update(f"{module}.{a.name}" for a in node.names)
    return out


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# The compiler modules the runtime uses (ARCHITECTURE.md lists them with what for); a new one is a
# decision to write down there, not an import to add quietly.
RUNTIME_USES_COMPILER = (
    "lse.compiler.manifest", "lse.compiler.config", "lse.compiler.graph", "lse.compiler.weights",
    "lse.compiler.cache", "lse.compiler.pipeline", "lse.compiler.targets", "lse.compiler.gguf.importer",
    "lse.compiler.emit_mlir", "lse.compiler.emit_verify", "lse.compiler.iree_compile", "lse.compiler.cpu_kernel_build",
    "lse.compiler.kv_layout",
)

# (folder, the lse modules it may import besides its own, exceptions by file)
RULES = [
    ("api", ("lse.runtime",), {}),
    ("capi", ("lse.runtime.api",), {}),
    ("runtime", RUNTIME_USES_COMPILER, {}),
    ("compiler", (), {}),
    ("spec", ("lse.compiler.iree_compile",), {}),
    # Ray stays optional: nothing of LSE's product imports lse.cluster (test_nothing_imports_cluster)
    ("cluster", ("lse.api.app", "lse.api.cli", "lse.runtime.api", "lse.runtime.errors"), {}),
]


@pytest.mark.parametrize("folder, allowed, exceptions", RULES, ids=[r[0] for r in RULES])
def test_import_rules(folder: str, allowed: tuple[str, ...], exceptions: dict[str, tuple[str, ...]]) -> None:
    own = PACKAGES[folder]
    broken = []
    for path in sources(folder):
        rel = str(path.relative_to(ROOT))
        ok = (own, *allowed, *exceptions.get(rel, ()))
        broken += [f"{rel} imports {name}" for name in sorted(lse_imports(path))
                   if not any(_within(name, prefix) for prefix in ok)]
    assert not broken, "ARCHITECTURE.md's import rules:\n" + "\n".join(broken)


def test_product_never_imports_tools() -> None:
    """lse.tools (golden data, the device check), lse.bench (benchmarks) and lse.fixtures (the
    fixture writers) are leaves: no product module imports them."""
    broken = [f"{p.relative_to(ROOT)} imports {n}" for p in sources(*PRODUCT) for n in sorted(lse_imports(p))
              if any(_within(n, leaf) for leaf in ("lse.tools", "lse.bench", "lse.fixtures"))]
    assert not broken, "\n".join(broken)


def test_nothing_imports_cluster() -> None:
    others = [f for f in PRODUCT if f != "cluster"]
    assert not [p for p in sources(*others) if any(_within(n, "lse.cluster") for n in lse_imports(p))]


def test_runtime_never_imports_api() -> None:
    assert not [p for p in sources("runtime", "compiler") if any(_within(n, "lse.api") for n in lse_imports(p))]


# ---- import cycles -------------------------------------------------------------
# No cycle among any imports, function-level ones included, over every package:
# a piece two modules share lives in a module both import (ARCHITECTURE.md).


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return ".".join([PACKAGES[parts[0]], *parts[1:-1], *([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])])


def import_graph() -> dict[str, set[str]]:
    """Each module's lse imports, function-level and TYPE_CHECKING ones included."""
    files = {module_name(p): p for p in sources()}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        here = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        stmts = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        out: set[str] = set()
        for node in stmts:
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
                continue
            base = node.module or ""
            if node.level:
                base = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1] + [base] * bool(base))
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names)
        graph[mod] = {t for t in out if t in files and t != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = {stack.pop()}
            while v not in comp:
                comp.add(stack.pop())
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles (each one strongly connected component): {found}"


# ---- the size budget ---------------------------------------------------------
# style.md: files under ~400 lines, functions under ~60, over the packages
# (tests are not counted). Offenders are printed (pytest -rP shows them); the
# test fails past a hard cap, on an offender not in the list below, or on a
# listed one that grew, so the list can only shrink.
FILE_BUDGET, FUNCTION_BUDGET = 400, 60
FILE_CAP, FUNCTION_CAP = 600, 150
KNOWN_OFFENDERS = {  # over budget when the check came in (under the caps); shrink, never grow
    "compiler/gguf/importer.py:write_weights": 61,
}


def offenders() -> dict[str, int]:
    out: dict[str, int] = {}
    for path in sources():
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        lines = text.count("\n")
        if lines > FILE_BUDGET:
            out[rel] = lines
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_BUDGET:
                    out[f"{rel}:{node.name}"] = n
    return out


def test_size_budget() -> None:
    found = offenders()
    for name, n in sorted(found.items()):
        print(f"over budget: {name}: {n} lines")
    over_cap = {k: n for k, n in found.items() if n > (FUNCTION_CAP if ":" in k else FILE_CAP)}
    new = sorted(k for k, n in found.items() if n > KNOWN_OFFENDERS.get(k, FUNCTION_BUDGET if ":" in k else FILE_BUDGET))
    assert not over_cap, f"past the hard cap ({FILE_CAP} lines a file, {FUNCTION_CAP} a function): {over_cap}"
    assert not new, f"new or grown past the budget ({FILE_BUDGET} lines a file, {FUNCTION_BUDGET} a function): {new}"


# ---- packaging ---------------------------------------------------------------

def test_every_package_folder_ships_in_a_wheel() -> None:
    """A folder with an __init__.py under a package folder is a package a
    wheel must carry: pyproject.toml lists it in `packages` and `package-dir`
    (an editable install finds an unlisted one, `pip install .` drops it)."""
    import tomllib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    want = {}
    for folder, name in PACKAGES.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            want[".".join([name, *rel.parts[1:]])] = rel.as_posix()
    assert sorted(tool["packages"]) == sorted(want)
    assert tool["package-dir"] == want
