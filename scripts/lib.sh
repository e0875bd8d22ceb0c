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
