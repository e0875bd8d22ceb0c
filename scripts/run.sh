#!/usr/bin/env bash
# `make run`: the whole service on this machine, with the quickstart comparison running.
# PostgreSQL is already up (make run starts it first). This script migrates the database, imports
# the repository's scenarios into the service's library (satlab library sync), starts
# the API (which serves the web UI; as the unprivileged user satlab) and the workers (root; one, or
# SATLAB_WORKERS=N (1-8) to run N runs side by side, each on its own testbed), makes
# a local admin token the first time (kept in .data/local-admin-token, mode 600, and printed), and
# submits scenarios/quickstart.yaml once (an idempotency key makes later `make run`s find the same
# experiment).
# Ctrl-C stops the API and the workers; `make stop` stops PostgreSQL too.
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
WORKERS="${SATLAB_WORKERS:-1}"
if ! [[ "$WORKERS" =~ ^[1-8]$ ]]; then
  echo "SATLAB_WORKERS: '$WORKERS' is not a whole number from 1 to 8" >&2
  exit 2
fi

API_PID=""
# Per worker slot i (1..WORKERS): its PID, when it started, and the wait before its next restart.
declare -A WORKER_PID WORKER_STARTED BACKOFF
stop_all() {
  for pid in $API_PID "${WORKER_PID[@]}"; do kill "$pid" 2>/dev/null || true; done
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

# Worker i logs to .data/logs/worker.log (the first) or worker-i.log.
worker_log() { if [ "$1" = 1 ]; then echo "$LOGS/worker.log"; else echo "$LOGS/worker-$1.log"; fi; }
start_worker() {
  local i=$1 log
  log=$(worker_log "$i")
  "$SATLAB" worker >>"$log" 2>&1 &
  WORKER_PID[$i]=$!
  WORKER_STARTED[$i]=$SECONDS
  BACKOFF[$i]=${BACKOFF[$i]:-2}
  sleep 1
  kill -0 "${WORKER_PID[$i]}" 2>/dev/null || { tail -5 "$log"; return 1; }
}
start_workers() { for i in $(seq "$WORKERS"); do start_worker "$i" || return 1; done; }
step "Workers: $WORKERS (log .data/logs/worker.log$([ "$WORKERS" = 1 ] || echo ", worker-N.log"))" \
  start_workers

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
    Ctrl-C stops the API and the workers.
EOF
# Supervise: the API is the service, so its exit ends `make run`; a worker that dies is started
# again (the janitors re-queue the run it held), waiting longer after each quick death (2, 4, ...,
# 60 s) so a worker that cannot start does not spin.
while :; do
  wait -n "$API_PID" "${WORKER_PID[@]}" || true
  if ! kill -0 "$API_PID" 2>/dev/null; then
    echo "the API exited; see $LOGS/api.log" >&2
    exit 1
  fi
  for i in $(seq "$WORKERS"); do
    kill -0 "${WORKER_PID[$i]}" 2>/dev/null && continue
    if [ $((SECONDS - WORKER_STARTED[$i])) -ge 60 ]; then BACKOFF[$i]=2; fi
    echo "==> worker $i exited (log $(worker_log "$i")); starting another in ${BACKOFF[$i]}s" >&2
    sleep "${BACKOFF[$i]}"
    start_worker "$i" || true
    BACKOFF[$i]=$((BACKOFF[$i] * 2 > 60 ? 60 : BACKOFF[$i] * 2))
  done
done
