#!/usr/bin/env bash
# Create .venv and install the project with its dev, docker, data, ray, mcp and otel extras; fast no-op when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.installed
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
t0=$(date +%s)
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev,docker,data,ray,mcp,otel]'
echo "$want" > "$stamp"
echo "bootstrap: .venv ready in $(( $(date +%s) - t0 )) s" >&2
