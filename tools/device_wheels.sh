#!/bin/sh
# Prepares .whl/ (git-ignored) for a device machine that has Python 3.12 but
# not LSE's runtime packages and can reach no index (docs/device-check.md):
# the cp312 wheels of iree-base-runtime, gguf and llguidance, and a stand-in
# for iree.compiler, whose wheel (84 MB) is over what the device tool
# carries: it names the compiler version the bundle was made with (the
# artifacts' cache key reads it) and compiles nothing. On the device:
#   pip install --no-index --no-deps --target /tmp/site .whl/*.whl
#   cp -r .whl/stub/iree/compiler /tmp/site/iree/ && PYTHONPATH=/tmp/site tools/device_check.sh run
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
out="$root/.whl"
mkdir -p "$out/stub/iree/compiler/tools"
version() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
for pkg in iree-base-runtime gguf llguidance; do
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$out" "$pkg==$(version "$pkg")"
done
: > "$out/stub/iree/compiler/__init__.py"
: > "$out/stub/iree/compiler/tools/__init__.py"
"$py" -c "import iree.compiler.version as v; print(f'VERSION = {v.VERSION!r}  # the compiler that made the bundle')" \
  > "$out/stub/iree/compiler/version.py"
cat > "$out/stub/iree/compiler/tools/binaries.py" <<'PY'
def find_tool(name):
    raise RuntimeError(f"{name}: no IREE compiler on the device machine (the bundle carries the artifacts)")
PY
du -sh "$out"
