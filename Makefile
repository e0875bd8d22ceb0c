# The single entry point. `make run` and `make test` set up everything they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

help:  ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

setup:  ## Install what is missing (apt, venv, npm, cargo) and build everything; idempotent
	@scripts/setup.sh

db:  setup ## Start the project's own PostgreSQL (reused if running)
	@scripts/pg.sh start

run: db  ## Set up, start PostgreSQL and the service (API + web UI on http://127.0.0.1:8700)
	@scripts/run.sh

test: db  ## Set up, then run every test tier; ends with a summary line
	@scripts/test.sh

bench-emulator: setup  ## Emulator benchmark: throughput ratio, delay error, rate accuracy, memory, CPU
	@tests/bench/run-emulator-bench.sh

bench-gateway: setup  ## Gateway benchmark: TCP throughput with the gateway in the path vs the emulator alone
	@.venv/bin/python tests/bench/gateway_bench.py

bench-beam: setup  ## Forward beam: model throughput, CPU per Gbit/s and peak RSS for 1, 16, 64 and 1000 terminals (crates/linkmodel/examples/beam_speed.rs); return beam: DAMA request-to-grant lag and first-packet delay for 100 and 1000 terminals (return_beam_speed.rs); the emulator binary on namespaces, 1 vs 100 terminals at 99 % of a 500 Msym/s carrier, 5 minutes of RSS, 1000 terminals' start (tests/bench/beam_bench.py; root, about 10 min)
	@cargo run --release -q -p linkmodel --example beam_speed
	@cargo run --release -q -p linkmodel --example return_beam_speed
	@.venv/bin/python tests/bench/beam_bench.py --rain

bench-pep: setup  ## Split-TCP PEP: relayed throughput, CPU per Gbit/s, connection set-up rate (PEPSAL_BIN: side by side)
	@.venv/bin/python tests/bench/pep_bench.py

bench-api: db  ## API latency: list/result/comparison p50/p99 with 10,000 runs, 100 clients, beside the 50 ms p99 target (root)
	@DATABASE_URL=$$(scripts/pg.sh url) .venv/bin/python tests/bench/api_bench.py

smoke-scenarios: setup  ## One short run of every configuration of every scenario in scenarios/ on this machine's testbed (root; about 25 min)
	@.venv/bin/python tests/bench/scenario_smoke.py

bench-reproduce-parallel: setup  ## Reproduction runs side by side vs one at a time: one scenario twice (default ipern-fig18-acm, 3 at a time), goodput per point with 95 % CIs, the ratio and the wall times (tests/bench/reproduce_parallel.py; root, idle machine, about 12 min)
	@.venv/bin/python tests/bench/reproduce_parallel.py

bench-setup: setup  ## Set-up time per testbed backend: a container box's start, testbed open/close on namespaces and compose boxes (root, dockerd)
	@.venv/bin/python tests/bench/setup_time.py

soak: db  ## Soak: an hour of a saturated link through the gateway, then 1000 short runs drained by two workers (root; about 2 h)
	@DATABASE_URL=$$(scripts/pg.sh url) .venv/bin/python tests/bench/soak.py

fuzz: setup  ## Fuzz the Rust parsers (cargo-fuzz), N s per target (make fuzz FUZZ_SECONDS=N, default 300)
	@tests/fuzz/run.sh $${FUZZ_SECONDS:-300}

compose-smoke: setup  ## Docker Compose smoke test alone: build images, up, one experiment, down
	@tests/compose/smoke.sh

schemas: setup  ## Regenerate the emulator's contracts (JSON Schemas in api/satlab/) and the Python and TypeScript types made from them
	@scripts/schemas.sh

# Runs of a scenario side by side on their own testbeds (local path; `satlab reproduce --jobs`):
# 3 measured as giving the same goodput as 1 on this 2-core VM for the low-rate scenarios
# (make bench-reproduce-parallel); check a high-rate scenario the same way before raising it.
REPRODUCE_JOBS ?= 1

reproduce: setup  ## Every paper reproduction (full set, hours): on the service of `make run` if it answers, else locally (root; REPRODUCE_JOBS=3 runs 3 at a time); report in reports/, docs/reproductions.md
	@url=$${SATLAB_URL:-http://127.0.0.1:8700}; \
	if curl -fs "$$url/api/health" >/dev/null 2>&1; then \
	  echo "running on the service at $$url (runs side by side: start it with SATLAB_WORKERS=N)"; \
	  SATLAB_TOKEN=$${SATLAB_TOKEN:-$$(cat .data/local-admin-token)} .venv/bin/satlab reproduce --subset full --service "$$url"; \
	else \
	  echo "no service at $$url: running locally, $(REPRODUCE_JOBS) run(s) at a time"; \
	  .venv/bin/satlab reproduce --subset full --local --jobs $(REPRODUCE_JOBS); \
	fi

phy-tables: setup  ## DVB-S2 waveform calibration (GNU Radio TX, Rust receiver, min-sum LDPC): PER(Es/N0) tables of every MODCOD, normal and short frames, into crates/linkmodel/src/data/per/ (hours; resumable: run it again)
	@t0=$$SECONDS; \
	.venv/bin/satlab phy calibrate --modcod all --frame short --relative --esn0=-1.5:1.0:0.1 \
	  --frames 2000 --probe-frames 100 --stop-after-zero 1 --out crates/linkmodel/src/data/per/dvbs2-short.csv && \
	.venv/bin/satlab phy calibrate --modcod all --frame normal --relative --esn0=-0.8:0.6:0.05 \
	  --frames 2000 --probe-frames 100 --stop-after-zero 1 --out crates/linkmodel/src/data/per/dvbs2-normal.csv; \
	rc=$$?; echo "make phy-tables: $$((SECONDS - t0)) s"; exit $$rc

stop:  ## Stop the project's PostgreSQL
	@scripts/pg.sh stop

.PHONY: phy-tables help setup db run test bench-beam bench-reproduce-parallel bench-emulator bench-api bench-gateway bench-pep bench-setup smoke-scenarios soak compose-smoke fuzz schemas reproduce stop
