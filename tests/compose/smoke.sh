#!/usr/bin/env bash
# The Docker Compose smoke test (a stage of `make test`): builds the images, brings the whole
# deployment up under a project name of its own, waits until every container is healthy, submits a
# small experiment through the reverse proxy over REST with a token (check_experiment.py), waits
# for its runs and checks their results, runs the backend parity test (parity.py: the same
# scenario, with an eBPF scheme, on namespaces and on the boxes), then takes everything down. On
# success or failure it leaves no container, network or volume of its project behind (and says
# so); images stay, as the build cache of the next run.
#
#   tests/compose/smoke.sh          (root; dockerd running: scripts/setup.sh starts it)
# Settings: COMPOSE (docker-compose), DOCKER (/usr/bin/docker), SATLAB_EXTRA_CA (default: the
# host's CA bundle when it exists, for pip/cargo/npm behind a re-signing proxy: docker/build.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
export DOCKER="${DOCKER:-/usr/bin/docker}"
COMPOSE="${COMPOSE:-docker-compose}"
PROJECT="satlab-smoke-$$-$RANDOM"
HEALTH_TIMEOUT_S=180
t_start=$SECONDS

say() { printf '    [%3ds] %s\n' $((SECONDS - t_start)) "$*"; }
dc() { $COMPOSE -p "$PROJECT" -f "$ROOT/docker-compose.yml" "$@"; }

# A free /16 for the testbed's Docker networks and a free /16 for the service networks: not used
# by any existing Docker network nor by a route of this machine.
free_prefix() {  # free_prefix FIRST_OCTET LOW HIGH
  local used
  used="$("$DOCKER" network inspect $("$DOCKER" network ls -q) \
      -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' 2>/dev/null; ip -4 route show table all)"
  for ((i = $2; i <= $3; i++)); do
    grep -q "\b$1\.$i\." <<<"$used" || { echo "$1.$i"; return 0; }
  done
  echo "no free $1.$2-$3 prefix for the test's networks" >&2
  return 1
}

leftovers() {
  local label="label=com.docker.compose.project=$PROJECT"
  {
    "$DOCKER" ps -aq --filter "$label"
    "$DOCKER" network ls -q --filter "$label"
    "$DOCKER" volume ls -q --filter "$label"
  } | wc -l
}

teardown() {
  local rc=$?
  set +e
  if [ $rc -ne 0 ] && [ -n "${up:-}" ]; then
    echo "    --- container states and the last log lines (the test failed) ---"
    dc ps
    dc logs --tail 30 --no-color 2>&1 | tail -150
  fi
  dc --profile netns down -v --remove-orphans --timeout 5 >/dev/null 2>&1
  [ -z "${ns_results:-}" ] || rm -rf "$ns_results"
  local left
  left=$(leftovers)
  if [ "$left" -ne 0 ]; then
    echo "    FAILED: $left containers/networks/volumes of project $PROJECT left behind"
    rc=1
  else
    say "torn down: no container, network or volume of $PROJECT left"
  fi
  say "compose smoke test $([ $rc -eq 0 ] && echo passed || echo FAILED) (wall time $((SECONDS - t_start)) s)"
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

"$DOCKER" info >/dev/null 2>&1 || { echo "dockerd is not running (scripts/setup.sh starts it)"; exit 1; }
# A dockerd with its iptables rules on (--iptables=true, the packaged default) loads br_netfilter,
# so bridged frames go through the host's FORWARD chain, where its isolation rules for internal
# networks drop every testbed packet (10.250.x addresses are not the Docker networks' subnets):
# runs then see no traffic at all. Say so instead of failing on "goodput None".
if [ "$(sysctl -n net.bridge.bridge-nf-call-iptables 2>/dev/null)" = 1 ] &&
  iptables -S FORWARD 2>/dev/null | grep -q DOCKER; then
  echo "dockerd filters bridged traffic (iptables rules on, net.bridge.bridge-nf-call-iptables=1):"
  echo "the testbed's internal networks would drop every packet. Run dockerd with"
  echo "--iptables=false (README.md, Docker Compose)."
  exit 1
fi
if [ -z "${SATLAB_EXTRA_CA+x}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  export SATLAB_EXTRA_CA=/etc/ssl/certs/ca-certificates.crt
fi
t0=$SECONDS
"$ROOT/docker/build.sh"
say "images built ($((SECONDS - t0)) s)"

SATLAB_SUBNET_PREFIX="$(free_prefix 10 240 249)"
SATLAB_NET_PREFIX="$(free_prefix 172 20 29)"
SATLAB_HTTP_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SATLAB_DB_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export SATLAB_SUBNET_PREFIX SATLAB_NET_PREFIX SATLAB_HTTP_PORT SATLAB_DB_PASSWORD SATLAB_BIND=127.0.0.1
up=1
t0=$SECONDS
if ! out="$(dc up -d --no-build 2>&1)"; then
  echo "$out"; exit 1
fi
# Every service of the default profile up and healthy (each has a health check), or fail naming
# the others.
services=(db api worker proxy srv1 srv2 hops gw emu st cli1)
while :; do
  states="$("$DOCKER" ps -a --filter "label=com.docker.compose.project=$PROJECT" \
    --format '{{.Label "com.docker.compose.service"}}={{.Status}}')"
  unhealthy="$(grep -v '(healthy)' <<<"$states" || true)"
  for s in "${services[@]}"; do
    grep -q "^$s=" <<<"$states" || unhealthy+=$'\n'"$s=not created"
  done
  unhealthy="$(sed '/^$/d' <<<"$unhealthy")"
  [ -z "$unhealthy" ] && break
  if [ $((SECONDS - t0)) -gt $HEALTH_TIMEOUT_S ] || grep -q 'Exited' <<<"$unhealthy"; then
    echo "    not healthy after $((SECONDS - t0)) s:"; sed 's/^/      /' <<<"$unhealthy"
    exit 1
  fi
  sleep 2
done
say "up and healthy: $(wc -l <<<"$states") containers ($((SECONDS - t0)) s)"
# Each box's start: its container's start to its agent's socket (bound as the agent listens;
# tests/bench/setup_time.py splits it further). Issue 19 wants it under 3 s.
boxes_dir="$("$DOCKER" volume inspect -f '{{.Mountpoint}}' "${PROJECT}_shared")/boxes"
starts=""
for box in srv1 srv2 hops gw emu st cli1; do
  id="$("$DOCKER" ps -q --filter "label=com.docker.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=$box")"
  started="$(date -d "$("$DOCKER" inspect -f '{{.State.StartedAt}}' "$id")" +%s.%N)"
  starts+="$(awk -v a="$started" -v b="$(stat -c %.9Y "$boxes_dir/$box.sock")" \
    -v n="$box" 'BEGIN { printf " %s %.1f s", n, b - a }')"
done
say "box start (container started to agent listening):$starts"

TOKEN="$(dc exec -T api satlab token create --role admin --name compose-smoke | tail -1)"
URL="http://127.0.0.1:$SATLAB_HTTP_PORT"
curl -fsS "$URL/" | grep -qi '<div id="root"' || { echo "    the proxy does not serve the web UI"; exit 1; }
t0=$SECONDS
python3 "$ROOT/tests/compose/check_experiment.py" "$URL" "$TOKEN"
say "experiment through the proxy: results checked ($((SECONDS - t0)) s)"
t0=$SECONDS
python3 "$ROOT/tests/compose/check_hops.py" "$URL" "$TOKEN"
say "a terrestrial hop on the boxes (the hops box): results checked ($((SECONDS - t0)) s)"
t0=$SECONDS
python3 "$ROOT/tests/compose/check_terminals.py" "$URL" "$TOKEN"
say "two terminals of a beam on the boxes (terminal 2 in the st box): results checked ($((SECONDS - t0)) s)"

# Backend parity (tests/compose/parity.py): a gateway scheme with an eBPF scheme (BETEN), and a
# PEP, repeated, on a namespace testbed of this machine, then on the boxes through the proxy; the
# two agree within their confidence intervals. One after the other: they share the CPU.
PARITY="$ROOT/tests/compose/parity.yaml"
ns_results="$(mktemp -d)"  # removed by teardown
t0=$SECONDS
# (satlab's modules read the service settings when imported: the test database's URL will do)
DATABASE_URL="${DATABASE_URL:-$("$ROOT/scripts/pg.sh" url)}" \
  "$ROOT/.venv/bin/satlab" run "$PARITY" -o "$ns_results" >/dev/null
say "parity: namespace runs ($((SECONDS - t0)) s)"
t0=$SECONDS
python3 "$ROOT/tests/compose/parity.py" "$URL" "$TOKEN" "$PARITY" "$ns_results"
say "parity: container runs, compared ($((SECONDS - t0)) s)"
