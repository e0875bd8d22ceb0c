#!/usr/bin/env bash
# Emulator benchmark (make bench-emulator): builds the release binaries, then runs
# tests/bench/emulator_bench.py as root (it builds the traffic generator, tests/integration/loadgen.py).
# Arguments pass through (--quick, --only a,b, --json FILE).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="$ROOT/.venv/bin/python"
[ "$(id -u)" -eq 0 ] || { echo "bench-emulator needs root (network namespaces)" >&2; exit 1; }
for tool in ethtool ip gcc nft taskset; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install ethtool iproute2 gcc nftables util-linux)" >&2; exit 1; }
done
(cd "$ROOT" && cargo build --release --quiet -p satlab-emulator -p naive-forwarder)
exec "$PY" "$HERE/emulator_bench.py" "$@"
