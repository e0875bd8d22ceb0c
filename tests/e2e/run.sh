#!/usr/bin/env bash
# Browser end-to-end tests of the web UI against the real service: PostgreSQL (a scratch
# database), the API serving the freshly built UI on a free port, a real worker running real
# testbeds (root: network namespaces, target/release/satlab-emulator), and Debian's chromium
# driven by playwright-core (never a downloaded browser).
#
#   tests/e2e/run.sh            # build the UI, start everything, run tests/e2e/*.spec.mjs
#   tests/e2e/run.sh tests/e2e/tokens.spec.mjs ...  # only these, each alone, in this order
#   E2E_KEEP=1 tests/e2e/run.sh # leave the scratch database for inspection
#
# Each spec file is one user journey and makes what it needs through the API (fixture.mjs), so
# any one passes alone and in any order: with this environment exported,
#   node --test tests/e2e/<one>.spec.mjs
#
# Everything started here is stopped by PID on exit, failure or Ctrl-C. Screenshots of each main
# page go to tests/e2e/screenshots/ (gitignored); logs to tests/e2e/screenshots/logs/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
E2E="$ROOT/tests/e2e"
VENV="$ROOT/.venv"
OUT="$E2E/screenshots"
LOGS="$OUT/logs"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
mkdir -p "$LOGS"
rm -f "$OUT"/*.png

[ "$(id -u)" = 0 ] || { echo "e2e: the worker builds network namespaces: run as root" >&2; exit 2; }
[ -x "$ROOT/target/release/satlab-emulator" ] || { echo "e2e: build the emulator first (cargo build --release)" >&2; exit 2; }
if [ ! -x "$CHROMIUM" ]; then
  echo "==> installing Debian's chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

pids=()
DB=""
SOCK=""
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "$DB" ] && [ -z "${E2E_KEEP:-}" ]; then
    "$ROOT/scripts/pg.sh" drop-db "$DB" >/dev/null 2>&1 || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "==> PostgreSQL"
"$ROOT/scripts/pg.sh" start
BASE_URL="$("$ROOT/scripts/pg.sh" url)"
SOCK="${BASE_URL##*host=}"
DB="satlab_e2e_$$"
"$ROOT/scripts/pg.sh" create-db "$DB" >/dev/null
export DATABASE_URL="postgresql+psycopg://satlab@/$DB?host=$SOCK"
"$VENV/bin/satlab" migrate >"$LOGS/migrate.log" 2>&1

echo "==> tokens"
token() { "$VENV/bin/satlab" token create --role "$1" --name "e2e-$1" | tail -1; }
export E2E_ADMIN_TOKEN="$(token admin)"
export E2E_VIEWER_TOKEN="$(token viewer)"

echo "==> building the UI"
(cd "$ROOT/web" && npm run -s build >"$LOGS/build.log" 2>&1) || { tail -20 "$LOGS/build.log"; exit 1; }

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export E2E_BASE="http://127.0.0.1:$PORT"
# a heartbeat every second makes the live charts move during 4-second runs
export SATLAB_HEARTBEAT_PERIOD_S=1
export SATLAB_WEB_DIST="$ROOT/web/dist"

echo "==> API on $E2E_BASE"
# As in `make run`: the API as the unprivileged service user, the worker as root.
(cd "$ROOT/api" && exec setpriv --reuid=satlab --regid=satlab --init-groups "$VENV/bin/uvicorn" satlab.app:app --host 127.0.0.1 --port "$PORT" --log-level warning) >"$LOGS/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do
  curl -fs "$E2E_BASE/api/health" >/dev/null && break
  kill -0 "${pids[-1]}" 2>/dev/null || { tail -20 "$LOGS/api.log"; exit 1; }
  sleep 0.1
done
curl -fs "$E2E_BASE/api/health" >/dev/null || { echo "the API did not come up"; tail -20 "$LOGS/api.log"; exit 1; }

echo "==> worker"
"$VENV/bin/satlab" worker >"$LOGS/worker.log" 2>&1 &
pids+=($!)
sleep 1
kill -0 "${pids[-1]}" 2>/dev/null || { tail -20 "$LOGS/worker.log"; exit 1; }

echo "==> specs"
export E2E_OUT="$OUT" E2E_CHROMIUM="$CHROMIUM"
if [ "$#" -eq 0 ]; then
  node --test --test-concurrency=1 --test-reporter=spec "$E2E"/*.spec.mjs
else
  # each given spec alone (its own `node --test`), in the order given
  fail=0
  for spec in "$@"; do
    echo "--> $spec"
    node --test --test-reporter=spec "$spec" || fail=1
  done
  exit "$fail"
fi
