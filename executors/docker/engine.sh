#!/usr/bin/env bash
# A private Docker engine for codeagent's DockerExecutor: install (Debian's docker.io), start, stop.
# Carried in the package so that an installed wheel can start one: `codeagent docker setup
# --start-engine` runs it (and then builds the worker image from this Python, offline);
# scripts/docker-engine.sh runs it for a checkout. Needs root (or sudo): it installs a package and
# runs dockerd. Idempotent.
#
#   engine.sh          make sure the engine is up (installing docker.io when dockerd is missing)
#   engine.sh --stop   stop the engine this script started
#
# The engine is a private dockerd (own socket, data root and exec root) started with
# --iptables=false --bridge=none: it never rewrites the host's firewall, and containers get only
# loopback. Every diagnostic goes to stderr. Override the places with CODEAGENT_DOCKER_SOCK,
# _ROOT, _EXEC_ROOT, _LOG (the socket's default is executors.docker.image.PROJECT_ENGINE_SOCKET,
# which the library finds without DOCKER_HOST).
set -euo pipefail

SOCK=${CODEAGENT_DOCKER_SOCK:-/run/codeagent-docker.sock}
DATA_ROOT=${CODEAGENT_DOCKER_ROOT:-/var/lib/codeagent-docker}
EXEC_ROOT=${CODEAGENT_DOCKER_EXEC_ROOT:-/run/codeagent-docker}
LOG=${CODEAGENT_DOCKER_LOG:-/var/log/codeagent-dockerd.log}
PIDFILE="$EXEC_ROOT.pid"
export DOCKER_HOST="unix://$SOCK"

mode=up
case "${1:-}" in
  --stop) mode=stop ;;
  "") ;;
  -h|--help) sed -n '2,16p' "$0" >&2; exit 0 ;;
  *) echo "docker-engine: unknown option $1 (use --stop or nothing)" >&2; exit 2 ;;
esac

say() { echo "docker-engine: $*" >&2; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { say "needs root: run it as root (installs docker.io, starts dockerd)"; exit 1; }
  SUDO=sudo
fi

# Does the engine answer on its socket? A raw HTTP ping: needs no docker CLI, no SDK.
engine_up() {
  "${CODEAGENT_PYTHON:-python3}" - "$SOCK" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
data = b""
while chunk := s.recv(4096):
    data += chunk
sys.exit(0 if data.startswith(b"HTTP/1.") and b" 200 " in data.split(b"\r\n", 1)[0] else 1)
EOF
}

# The pid of our dockerd if it is running (a killed one may linger as a zombie: not running).
daemon_pid() {
  local pid state
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] || return 1
  state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] && echo "$pid"
}

if [ "$mode" = stop ]; then
  if pid=$(daemon_pid); then
    $SUDO kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "stopped dockerd (pid $pid)"
  else
    say "no dockerd of ours is running"
  fi
  exit 0
fi

fail() {
  say "FAILED: $*"
  exit 1
}

t_all=$(now)

# 1. The engine binary (Debian's docker.io brings dockerd, containerd, runc, docker-init).
if ! command -v dockerd >/dev/null 2>&1; then
  t=$(now)
  command -v apt-get >/dev/null 2>&1 || fail "dockerd is missing and there is no apt-get to install Debian's docker.io: install Docker Engine (https://docs.docker.com/engine/install/), start it, and set DOCKER_HOST if its socket is not /var/run/docker.sock"
  say "dockerd missing: installing Debian's docker.io"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || fail "apt-get update"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io >&2 || fail "apt-get install docker.io"
  command -v dockerd >/dev/null 2>&1 || fail "docker.io installed but no dockerd on PATH"
  say "install: $(took "$t")"
fi

# 2. The daemon, private to this project.
if engine_up; then
  say "engine: already up at $DOCKER_HOST"
else
  t=$(now)
  if pid=$(daemon_pid); then
    say "dockerd (pid $pid) runs but does not answer yet: waiting"
  else
    $SUDO mkdir -p "$DATA_ROOT" "$EXEC_ROOT" "$(dirname "$LOG")"
    $SUDO rm -f "$PIDFILE" "$SOCK"
    # setsid + nohup: the daemon outlives this script and the shell that sourced it.
    $SUDO setsid nohup dockerd \
      --host="unix://$SOCK" \
      --data-root="$DATA_ROOT" \
      --exec-root="$EXEC_ROOT" \
      --pidfile="$PIDFILE" \
      --iptables=false --ip-masq=false --bridge=none \
      --log-level=warn \
      >>"$LOG" 2>&1 </dev/null &
  fi
  give_up=$(( $(date +%s) + 30 ))
  until engine_up; do
    [ "$(date +%s)" -lt "$give_up" ] || break
    sleep 0.1
  done
  if ! engine_up; then
    say "dockerd did not answer within 30 s; last lines of $LOG:"
    tail -n 20 "$LOG" >&2 || true
    fail "engine start"
  fi
  say "start: $(took "$t") (socket $SOCK, data root $DATA_ROOT, log $LOG)"
fi

say "engine up in $(took "$t_all") at $DOCKER_HOST"
