#!/usr/bin/env bash
# `make run`: the whole service on this machine, with the quickstart comparison running.
# PostgreSQL is already up (make run starts it first). This script migrates the database, imports
# the repository's scenarios into the service's library (satlab library sync), starts
# the API (which serves the web UI; as the unprivileged user satlab) and one worker (root), makes
# a local admin token the first time (kept in .data/local-admin-token, mode 600, and printed), and
# submits scenarios/quickstart.yaml once (an idempotency key makes later `make run`s find the same
# experiment).
# Ctrl-C stops the API and the worker; `make stop` stops PostgreSQL too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export DATABASE_URL="${DATABASE_URL:-$("$ROOT/scripts/pg.sh" url)}"
HOST="${SATLAB_HOST:-127.0.0.1}"
PORT="${SATLAB_PORT:-8700}"
export SATLAB_URL="http://$HOST:$PORT"
SATLAB="$VENV/bin/satlab"
LOGS="$ROOT/.data/logs"
TOKEN_FILE="$ROOT/.data/local-admin-token"
mkdir -p "$LOGS"

API_PID=""
WORKER_PID=""
stop_all() {
  for pid in $API_PID $WORKER_PID; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

step "Database schema (alembic upgrade)" "$SATLAB" migrate
step "Scenario library (scenarios/, scenarios/reproductions/; new revisions only for changes)" \
  "$SATLAB" library sync

# The API runs as the unprivileged service user (scripts/lib.sh): it answers every request and
# needs no privilege; only the worker, which builds network namespaces, runs as root.
start_api() {
  (cd "$ROOT/api" && exec setpriv --reuid="$SERVICE_USER" --regid="$SERVICE_USER" --init-groups \
    "$VENV/bin/uvicorn" satlab.app:app --host "$HOST" --port "$PORT" --log-level warning) \
    >>"$LOGS/api.log" 2>&1 &
  API_PID=$!
  for _ in $(seq 100); do
    curl -fs "$SATLAB_URL/api/health" >/dev/null && return 0
    kill -0 "$API_PID" 2>/dev/null || { tail -5 "$LOGS/api.log"; return 1; }
    sleep 0.1
  done
  echo "    the API did not answer on $SATLAB_URL (log: $LOGS/api.log)"; return 1
}
step "API and web UI on $SATLAB_URL (log .data/logs/api.log)" start_api

start_worker() {
  "$SATLAB" worker >>"$LOGS/worker.log" 2>&1 &
  WORKER_PID=$!
  WORKER_STARTED=$SECONDS
  sleep 1
  kill -0 "$WORKER_PID" 2>/dev/null || { tail -5 "$LOGS/worker.log"; return 1; }
}
step "Worker (log .data/logs/worker.log)" start_worker

local_token() {
  if [ -s "$TOKEN_FILE" ] && curl -fs -H "Authorization: Bearer $(cat "$TOKEN_FILE")" \
       "$SATLAB_URL/api/whoami" >/dev/null; then
    echo "    reusing .data/local-admin-token"
    return 0
  fi
  (umask 077 && "$SATLAB" token create --role admin --name local-admin | tail -1 >"$TOKEN_FILE")
}
step "Local admin token" local_token
export SATLAB_TOKEN="$(cat "$TOKEN_FILE")"

step "Quickstart comparison submitted (CUBIC vs Reno vs BBR over a rain fade)" \
  "$SATLAB" submit "$ROOT/scenarios/quickstart.yaml" --idempotency-key make-run-quickstart

cat <<EOF

==> SatLab is running: open $SATLAB_URL
    Sign in with the local admin token: $SATLAB_TOKEN
    The quickstart comparison runs now (about 2 minutes); the UI shows it live.
    API docs: $SATLAB_URL/docs    CLI: SATLAB_TOKEN=... .venv/bin/satlab list
    Ctrl-C stops the API and the worker.
EOF
# Supervise: the API is the service, so its exit ends `make run`; a worker that dies is started
# again (the janitors re-queue the run it held), waiting longer after each quick death (2, 4, ...,
# 60 s) so a worker that cannot start does not spin.
backoff=2
while :; do
  wait -n "$API_PID" "$WORKER_PID" || true
  if ! kill -0 "$API_PID" 2>/dev/null; then
    echo "the API exited; see $LOGS/api.log" >&2
    exit 1
  fi
  if ! kill -0 "$WORKER_PID" 2>/dev/null; then
    if [ $((SECONDS - WORKER_STARTED)) -ge 60 ]; then backoff=2; fi
    echo "==> the worker exited (log .data/logs/worker.log); starting another in ${backoff}s" >&2
    sleep "$backoff"
    start_worker || true
    backoff=$((backoff * 2 > 60 ? 60 : backoff * 2))
  fi
done
