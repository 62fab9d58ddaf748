#!/usr/bin/env bash
# Create .venv and install the project with its dev, docker, data, ray, mcp, otel and bench extras; fast no-op when nothing changed.
# PYTHON (default python3) and VENV (default .venv) make another one: scripts/python-env makes
# .venv-3.12 from pyenv's 3.12 so.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
stamp=$VENV/.installed
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
t0=$(date +%s)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[dev,docker,data,ray,mcp,otel,bench]'
echo "$want" > "$stamp"
echo "bootstrap: $VENV ready in $(( $(date +%s) - t0 )) s" >&2
