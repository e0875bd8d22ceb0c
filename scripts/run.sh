#!/usr/bin/env bash
# Starts the service in the foreground: the API with the built web UI. PostgreSQL is already up
# (make run starts it first). Ctrl-C stops the service; `make stop` stops PostgreSQL too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export DATABASE_URL="${DATABASE_URL:-$("$ROOT/scripts/pg.sh" url)}"
HOST="${SATLAB_HOST:-127.0.0.1}"
PORT="${SATLAB_PORT:-8700}"
echo "==> SatLab is starting: open http://$HOST:$PORT (API docs at /docs); Ctrl-C to stop"
cd "$ROOT/api"
exec "$VENV/bin/uvicorn" satlab.app:app --host "$HOST" --port "$PORT"
