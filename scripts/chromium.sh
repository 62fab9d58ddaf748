#!/usr/bin/env bash
# The project's own headless browser for the page tests (tests/test_view_browser.py): Debian's
# chromium, installed when missing, checked to start. Idempotent; no browser is downloaded from
# a CDN (only Debian's package archive).
#
#   scripts/chromium.sh          make sure chromium is installed and starts headless
#   scripts/chromium.sh --env    the same, then print `export CODEAGENT_CHROMIUM=...` on stdout, so
#                                `source <(scripts/chromium.sh --env)` points the tests at it
#
# Every diagnostic goes to stderr; stdout carries only the --env line. CODEAGENT_CHROMIUM, when
# set, names the browser to use instead (nothing is installed then).
set -euo pipefail

mode=up
case "${1:-}" in
  --env) mode=env ;;
  "") ;;
  -h|--help) sed -n '2,12p' "$0" >&2; exit 0 ;;
  *) echo "chromium: unknown option $1 (use --env or nothing)" >&2; exit 2 ;;
esac

say() { echo "chromium: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

find_browser() {
  if [ -n "${CODEAGENT_CHROMIUM:-}" ]; then
    [ -x "$CODEAGENT_CHROMIUM" ] && echo "$CODEAGENT_CHROMIUM"
    return
  fi
  command -v chromium || command -v chromium-browser || true
}

browser=$(find_browser)
if [ -z "$browser" ]; then
  [ -z "${CODEAGENT_CHROMIUM:-}" ] || fail "CODEAGENT_CHROMIUM=$CODEAGENT_CHROMIUM is not an executable"
  t0=$(date +%s)
  say "not installed: installing Debian's chromium"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || fail "apt-get update"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >&2 || fail "apt-get install chromium"
  browser=$(find_browser)
  [ -n "$browser" ] || fail "chromium installed but not on PATH"
  say "installed in $(( $(date +%s) - t0 )) s"
fi

# It must start headless here (a missing shared library shows up now, not as a test timeout).
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
if ! out=$(timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --dump-dom 'data:text/html,<p>ok</p>' 2>/dev/null) || [[ "$out" != *"<p>ok</p>"* ]]; then
  fail "$browser does not render a page headless"
fi
say "$("$browser" --version 2>/dev/null || echo "$browser") ready"
if [ "$mode" = env ]; then
  echo "export CODEAGENT_CHROMIUM=$browser"
fi
