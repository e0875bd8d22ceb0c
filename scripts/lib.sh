# Shared helpers for the project's scripts: step timing and paths. Sourced, not run.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
export PATH="$HOME/.cargo/bin:$PATH"

# step NAME CMD... : runs CMD, prints how long it took, and stops the script on failure.
step() {
  local name="$1"; shift
  local t0=$SECONDS
  printf '==> %s\n' "$name"
  if "$@"; then
    printf '    done: %s (%ds)\n' "$name" $((SECONDS - t0))
  else
    local rc=$?
    printf '    FAILED: %s (exit %d after %ds)\n' "$name" "$rc" $((SECONDS - t0)) >&2
    exit "$rc"
  fi
}

# stamp_changed STAMPFILE FILE... : true when the files' content differs from what the stamp recorded.
stamp_changed() {
  local stamp="$1"; shift
  local sum
  sum="$(cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1)"
  [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]
}
stamp_write() {
  local stamp="$1"; shift
  cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1 >"$stamp"
}

# The unprivileged account the API runs as (and whose name is the database role): nothing that
# answers HTTP runs as root. Only the worker, which builds testbeds, needs root.
SERVICE_USER=satlab

# ensure_service_user: the system account and its group (no home, no login shell).
ensure_service_user() {
  id -u "$SERVICE_USER" >/dev/null 2>&1 && return 0
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "$SERVICE_USER"
  echo "    created system user $SERVICE_USER"
}

# grant_service_user_traverse: the service reads the checkout (its code, the venv, web/dist). A
# checkout under a private directory (a home of mode 700) gets an ACL letting the service user
# traverse (not list) each such ancestor; nothing else changes.
grant_service_user_traverse() {
  local dir="$ROOT"
  while [ "$dir" != "/" ]; do
    if ! runuser -u "$SERVICE_USER" -- test -x "$dir" 2>/dev/null; then
      setfacl -m "u:$SERVICE_USER:x" "$dir"
      echo "    $SERVICE_USER may traverse $dir (ACL)"
    fi
    dir="$(dirname "$dir")"
  done
}
