#!/usr/bin/env bash
# The project's own PostgreSQL cluster: made with Debian's initdb, run by pg_ctl as the `postgres`
# user, listening only on a Unix socket in its own directory, so it cannot collide with any other
# server on the machine. Reused when already running.
#   scripts/pg.sh start          make (once) and start the cluster, the role and the `satlab` database
#   scripts/pg.sh stop           stop it
#   scripts/pg.sh url            print the DATABASE_URL for it (role satlab)
#   scripts/pg.sh status         say whether it runs
#   scripts/pg.sh create-db NAME a project database NAME (scratch databases of tests, benches)
#   scripts/pg.sh drop-db NAME   drop it
# Set DATABASE_URL to use an external server instead; then start/stop do nothing (and create-db
# needs SATLAB_DB_ADMIN_URL, a role that may create databases there).
#
# Who can reach the database (issue 24): the socket's directory is postgres:satlab mode 750, so
# only root, postgres and the service user reach the socket at all; every connection is
# authenticated by `peer` (the kernel says which OS user connects) through the map in
# pg_ident.conf: OS users root and satlab may log in as the role satlab, postgres and root as the
# superuser postgres. The role satlab is no superuser: it may connect to the project's databases
# and owns their `public` schema, which is where the migrations put every table; it cannot
# create databases, roles or schemas, nor read other databases.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
ROLE=satlab

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

url() { echo "postgresql+psycopg://$ROLE@/satlab?host=$SOCK"; }

running() { [ -f "$DATA/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

# psql as the superuser (peer: OS user postgres). `cd /` because postgres may not read the cwd.
# On an external server (DATABASE_URL set), SATLAB_DB_ADMIN_URL names a role there that may create
# databases, and create-db/drop-db use it instead.
psql_admin() {
  if [ -n "${EXTERNAL:-}" ]; then
    psql -X -q -v ON_ERROR_STOP=1 "${SATLAB_DB_ADMIN_URL:?set SATLAB_DB_ADMIN_URL: a role that may create databases on the external server}" "$@"
  else
    (cd / && runuser -u postgres -- psql -X -q -h "$SOCK" -d postgres -v ON_ERROR_STOP=1 "$@")
  fi
}

write_auth_config() {
  cat >"$DATA/pg_hba.conf" <<EOF
# Written by scripts/pg.sh. Unix socket only (listen_addresses is empty); peer authentication
# through the map in pg_ident.conf. No trust, no passwords.
# TYPE  DATABASE  USER  METHOD
local   all       all   peer map=satlab
EOF
  cat >"$DATA/pg_ident.conf" <<EOF
# Written by scripts/pg.sh: which OS user may log in as which role.
# MAPNAME  OS-USER          ROLE
satlab     postgres         postgres
satlab     root             postgres
satlab     root             $ROLE
satlab     $SERVICE_USER    $ROLE
EOF
  chown postgres:postgres "$DATA/pg_hba.conf" "$DATA/pg_ident.conf"
  chmod 600 "$DATA/pg_hba.conf" "$DATA/pg_ident.conf"
}

init_cluster() {
  mkdir -p "$HOME_DIR"
  chown postgres:postgres "$HOME_DIR"
  runuser -u postgres -- "$PGBIN/initdb" -D "$DATA" -U postgres --auth-local=peer \
    --auth-host=reject -E UTF8 --locale=C.UTF-8 >/dev/null
  write_auth_config
  echo "    created cluster in $DATA (peer authentication, role $ROLE without superuser)"
}

start_server() {
  # Only root, postgres and the service user's group may enter the socket's directory.
  install -d -o postgres -g "$SERVICE_USER" -m 750 "$SOCK"
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$SOCK'" start >/dev/null
}

stop_server() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; }

ensure_role() {
  psql_admin <<EOF
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
    CREATE ROLE $ROLE LOGIN;
  END IF;
END \$\$;
ALTER ROLE $ROLE NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
EOF
}

# create_db NAME: owned by postgres; the role satlab may connect, make temporary tables and owns
# the public schema (so the migrations, run as satlab, create every table there); nobody else
# may connect.
create_db() {
  local name="$1"
  [[ "$name" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || { echo "create-db: bad name $name" >&2; return 2; }
  if [ -z "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
    psql_admin -c "CREATE DATABASE $name OWNER postgres"
  fi
  psql_admin <<EOF
REVOKE ALL ON DATABASE $name FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE $name TO $ROLE;
\\connect $name
ALTER SCHEMA public OWNER TO $ROLE;
REVOKE ALL ON SCHEMA public FROM PUBLIC;
EOF
}

drop_db() {
  local name="$1"
  [[ "$name" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || { echo "drop-db: bad name $name" >&2; return 2; }
  psql_admin -c "DROP DATABASE IF EXISTS $name WITH (FORCE)"
}

# A cluster made before issue 24 used `trust` and made satlab its superuser. Its satlab database
# is dumped, the cluster is kept aside (data.trust-TIME), a new one is made and the dump restored
# with every object owned by the new non-superuser role.
upgrade_trust_cluster() {
  grep -Eq '^[^#]*[[:space:]]trust([[:space:]]|$)' "$DATA/pg_hba.conf" || return 0
  echo "    upgrading a cluster that used trust authentication (satlab was a superuser)"
  local dump="$HOME_DIR/satlab-before-peer-auth.dump" kept
  running || start_server
  if [ -n "$(psql -X -h "$SOCK" -U satlab -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'satlab'")" ]; then
    "$PGBIN/pg_dump" -h "$SOCK" -U satlab -d satlab -Fc -f "$dump"
  fi
  stop_server
  kept="$DATA.trust-$(date +%Y%m%d%H%M%S)"
  mv "$DATA" "$kept"
  init_cluster
  start_server
  ensure_role
  create_db satlab
  if [ -f "$dump" ]; then
    "$PGBIN/pg_restore" --no-owner --no-privileges --exit-on-error -h "$SOCK" -U "$ROLE" -d satlab "$dump"
    rm -f "$dump"
    echo "    restored the satlab database; the old cluster is kept in $kept (remove it when done)"
  fi
}

start() {
  [ -n "$PGBIN" ] || { echo "PostgreSQL server binaries not found (install Debian's postgresql)" >&2; exit 1; }
  ensure_service_user
  [ -f "$DATA/PG_VERSION" ] || init_cluster
  [ "$HOME_DIR" = "$ROOT/.data/pg" ] || ln -sfn "$HOME_DIR" "$ROOT/.data/pg"
  upgrade_trust_cluster
  if running; then
    install -d -o postgres -g "$SERVICE_USER" -m 750 "$SOCK"
    echo "    PostgreSQL already running ($SOCK)"
  else
    start_server
    echo "    PostgreSQL started ($SOCK, log $LOG)"
  fi
  ensure_role
  create_db satlab
}

stop() {
  if running; then
    stop_server
    echo "    PostgreSQL stopped"
  fi
}

if [ -n "${DATABASE_URL:-}" ] && [ "$HOME_DIR/run" != "$(sed -n 's/.*host=//p' <<<"$DATABASE_URL")" ]; then
  EXTERNAL=1
  ROLE="$(sed -E 's#^[a-z+]+://([^:@/]*).*#\1#' <<<"$DATABASE_URL")"  # the service's role there
  case "${1:-}" in
    url) echo "$DATABASE_URL" ;;
    create-db) create_db "${2:?create-db NAME}" ;;
    drop-db) drop_db "${2:?drop-db NAME}" ;;
    *) echo "    DATABASE_URL is set: using the external server, not the project's cluster" ;;
  esac
  exit 0
fi
case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url ;;
  status) if running; then echo "running ($SOCK)"; else echo "stopped"; fi ;;
  create-db) create_db "${2:?create-db NAME}" ;;
  drop-db) drop_db "${2:?drop-db NAME}" ;;
  *) echo "usage: $0 start|stop|url|status|create-db NAME|drop-db NAME" >&2; exit 2 ;;
esac
