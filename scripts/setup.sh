#!/usr/bin/env bash
# Installs everything the project needs on a Debian 12 machine, idempotently, and builds it.
# Each step prints its duration; a second run only checks and is fast.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Debian packages: the database, the eBPF toolchain, traffic and capture tools, Python's venv;
# Docker (docker.io 20.10 with BuildKit built in), Compose (docker-compose 1.29: Debian 12 has no
# Compose v2) and mmdebstrap (the base image: scripts/base-image.sh) for the compose deployment;
# GNU Radio 3.10 (gr-dtv, gr-channels) for the DVB-S2 waveform calibration (emulator/phy);
# Prometheus for the live-monitoring test and the Compose monitoring profile.
APT_PACKAGES=(
  postgresql clang llvm libbpf-dev bpftool iproute2 iptables nftables ethtool
  iperf3 iputils-ping tcpdump tshark curl procps chromium python3-venv python3-dev build-essential pkg-config
  docker.io docker-compose mmdebstrap acl
  gnuradio prometheus
  libzmq3-dev
)

apt_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "    all ${#APT_PACKAGES[@]} Debian packages present"
    return 0
  fi
  echo "    installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# dockerd for the compose deployment and its smoke test. Where systemd runs, its docker.service;
# otherwise started here, leaving the host's firewall and IP forwarding as they are (no iptables
# rules, no docker0 bridge): image builds use the host's network (docker/build.sh) and the
# deployment's networks need no NAT (docker-compose.yml). Log: /var/log/satlab-dockerd.log.
docker_daemon() {
  if /usr/bin/docker info >/dev/null 2>&1; then
    echo "    dockerd $(/usr/bin/docker info -f '{{.ServerVersion}}') running"
    return 0
  fi
  if [ -d /run/systemd/system ]; then
    systemctl start docker
  else
    setsid dockerd --iptables=false --ip-forward=false --bridge=none \
      >>/var/log/satlab-dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 60); do
    /usr/bin/docker info >/dev/null 2>&1 && { echo "    dockerd started"; return 0; }
    sleep 0.5
  done
  echo "    dockerd did not start: see /var/log/satlab-dockerd.log"; return 1
}

# Rust comes from rustup where the machine has it; Debian's cargo is the fallback.
rust_toolchain() {
  if command -v cargo >/dev/null 2>&1; then
    cargo --version
  else
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q cargo rustc rustfmt rust-clippy
  fi
}

# cargo-fuzz (tests/fuzz/run.sh, `make fuzz` and the fuzz stage of `make test`), from crates.io;
# installed once into ~/.cargo/bin. It runs on the stable toolchain (RUSTC_BOOTSTRAP=1, run.sh).
cargo_fuzz() {
  if cargo fuzz --version >/dev/null 2>&1; then
    echo "    $(cargo fuzz --version)"
  else
    cargo install --locked --quiet cargo-fuzz
  fi
}

node_toolchain() {
  if command -v npm >/dev/null 2>&1; then
    echo "    node $(node --version), npm $(npm --version)"
  else
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
  fi
}

# The venv is always made from Debian's /usr/bin/python3, whichever python3 is first on PATH.
python_venv() {
  [ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
  if stamp_changed "$VENV/.satlab-stamp" "$ROOT/api/pyproject.toml"; then
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -e "$ROOT/api[dev]"
    stamp_write "$VENV/.satlab-stamp" "$ROOT/api/pyproject.toml"
  else
    echo "    venv up to date"
  fi
}

web_deps() {
  if stamp_changed "$ROOT/web/node_modules/.satlab-stamp" "$ROOT/web/package-lock.json"; then
    (cd "$ROOT/web" && npm ci --no-audit --no-fund)
    stamp_write "$ROOT/web/node_modules/.satlab-stamp" "$ROOT/web/package-lock.json"
  else
    echo "    node_modules up to date"
  fi
}

step "Debian packages" apt_packages
step "Docker daemon" docker_daemon
step "Rust toolchain" rust_toolchain
step "cargo-fuzz" cargo_fuzz
step "Node toolchain" node_toolchain
step "Python venv (.venv)" python_venv
step "Web dependencies (npm ci)" web_deps
step "Rust build (cargo build --release)" cargo build --release --workspace --quiet
step "eBPF programs (endhosts)" make -s -C "$ROOT/endhosts"
# The UI is rebuilt only when a source is newer than the last build.
web_build() {
  local out="$ROOT/web/dist/index.html"
  if [ -f "$out" ] && [ -z "$(find "$ROOT/web/src" "$ROOT/web/index.html" "$ROOT/web/package-lock.json" \
       "$ROOT/web/vite.config.ts" -newer "$out" -print -quit 2>/dev/null)" ]; then
    echo "    web/dist up to date"
  else
    (cd "$ROOT/web" && npm run -s build >/dev/null)
  fi
}
step "Web UI build" web_build
service_user() { ensure_service_user && grant_service_user_traverse; }
step "Service user ($SERVICE_USER: runs the API, owns the database role)" service_user
