#!/usr/bin/env bash
# The project's own Docker engine, for a checkout: start it and build the worker image. Idempotent.
#
#   scripts/docker-engine.sh          make sure the engine is up and the default image exists
#   scripts/docker-engine.sh --env    the same, then print `export DOCKER_HOST=...` on stdout, so
#                                     `source <(scripts/docker-engine.sh --env)` points tools at it
#   scripts/docker-engine.sh --stop   stop the engine this script started
#
# The engine itself is executors/docker/engine.sh (carried in the package: an installed wheel does
# the same with `codeagent docker setup --start-engine`); the image is built offline from this
# checkout's Python by `codeagent docker setup`. Every diagnostic goes to stderr; stdout carries
# only the --env line.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
SOCK=${CODEAGENT_DOCKER_SOCK:-/run/codeagent-docker.sock}
export DOCKER_HOST="unix://$SOCK"
py="$here/.venv/bin/python"

case "${1:-}" in
  --stop) exec bash "$here/executors/docker/engine.sh" --stop ;;
  --env|"") ;;
  -h|--help) sed -n '2,12p' "$0" >&2; exit 0 ;;
  *) echo "docker-engine: unknown option $1 (use --env, --stop or nothing)" >&2; exit 2 ;;
esac

status=0
if [ ! -x "$py" ]; then
  echo "docker-engine: $py missing: run scripts/bootstrap.sh first" >&2
  status=1
else
  CODEAGENT_PYTHON="$py" bash "$here/executors/docker/engine.sh" || status=1
  [ "$status" != 0 ] || (cd "$here" && "$py" -m codeagent docker setup --docker-url "$DOCKER_HOST" >&2) || status=1
fi
# Under --env point DOCKER_HOST at our socket even after a failure, so the tests name it when they fail.
[ "${1:-}" = --env ] && echo "export DOCKER_HOST=$DOCKER_HOST"
exit "$status"
