#!/bin/sh
# The device tier in one command, from the checkout's root or anywhere:
#   tools/device_check.sh [compile|run] [--out DIR] ...   (docs/device-check.md)
# Runs `python -m lse.tools.device_check` with the checkout's .venv where it
# was carried, else $PYTHON or python3. Where `lse` is not installed for that
# interpreter (a bare device machine), a temporary directory of links maps
# lse.<package> onto the checkout's folders, as pyproject's package-dir does.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-}
if [ -z "$py" ] && [ -x "$root/.venv/bin/python" ]; then py="$root/.venv/bin/python"; fi
py=${py:-python3}
if ! "$py" -c "import lse.tools.device_check" 2>/dev/null; then
  shim=$(mktemp -d)
  mkdir "$shim/lse"
  for d in compiler runtime api spec tools fixtures capi cluster; do ln -s "$root/$d" "$shim/lse/$d"; done
  PYTHONPATH="$shim${PYTHONPATH:+:$PYTHONPATH}"
  export PYTHONPATH
fi
cd "$root"
exec "$py" -m lse.tools.device_check "$@"
