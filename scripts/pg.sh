#!/usr/bin/env bash
# The project's own PostgreSQL cluster: made with Debian's initdb, run by pg_ctl as the `postgres`
# user, listening only on a Unix socket in its own directory, so it cannot collide with any other
# server on the machine. Reused when already running.
#   scripts/pg.sh start   make (once) and start the cluster, create the `satlab` database, print nothing else
#   scripts/pg.sh stop    stop it
#   scripts/pg.sh url     print the DATABASE_URL for it
#   scripts/pg.sh status  say whether it runs
# Set DATABASE_URL to use an external server instead; then start/stop do nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"

# The data directory lives in the project (.data/pg) when the postgres user can reach it; a checkout
# under a private home directory (mode 700) cannot be entered by postgres, so the cluster then lives
# in /var/tmp under a name derived from the checkout's path and .data/pg points to it.
pg_home() {
  mkdir -p "$ROOT/.data"
  # A Unix socket path is limited to 107 bytes, so a deep checkout also uses /var/tmp.
  if runuser -u postgres -- test -x "$ROOT/.data" 2>/dev/null && [ ${#ROOT} -lt 70 ]; then
    echo "$ROOT/.data/pg"
  else
    echo "/var/tmp/satlab-pg-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
  fi
}
HOME_DIR="$(pg_home)"
DATA="$HOME_DIR/data"
SOCK="$HOME_DIR/run"
LOG="$HOME_DIR/postgres.log"

url() { echo "postgresql+psycopg://satlab@/satlab?host=$SOCK"; }

running() { [ -f "$DATA/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

psql_admin() { psql -X -q -h "$SOCK" -U satlab -d postgres -v ON_ERROR_STOP=1 "$@"; }

start() {
  [ -n "$PGBIN" ] || { echo "PostgreSQL server binaries not found (install Debian's postgresql)" >&2; exit 1; }
  if [ ! -f "$DATA/PG_VERSION" ]; then
    mkdir -p "$HOME_DIR"
    chown postgres:postgres "$HOME_DIR"
    runuser -u postgres -- "$PGBIN/initdb" -D "$DATA" -U satlab --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    echo "    created cluster in $DATA"
  fi
  [ "$HOME_DIR" = "$ROOT/.data/pg" ] || ln -sfn "$HOME_DIR" "$ROOT/.data/pg"
  runuser -u postgres -- mkdir -p "$SOCK"
  if running; then
    echo "    PostgreSQL already running ($SOCK)"
  else
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$SOCK'" start >/dev/null
    echo "    PostgreSQL started ($SOCK, log $LOG)"
  fi
  if [ -z "$(psql_admin -tAc "select 1 from pg_database where datname='satlab'")" ]; then
    psql_admin -c "create database satlab"
  fi
}

stop() {
  if running; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    echo "    PostgreSQL stopped"
  fi
}

if [ -n "${DATABASE_URL:-}" ] && [ "${1:-}" != "url" ]; then
  echo "    DATABASE_URL is set: using the external server, not the project's cluster"
  exit 0
fi
case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "${DATABASE_URL:-$(url)}" ;;
  status) if running; then echo "running ($SOCK)"; else echo "stopped"; fi ;;
  *) echo "usage: $0 start|stop|url|status" >&2; exit 2 ;;
esac
