"""The compose smoke test's client: through the reverse proxy, with a token, over plain REST
(docs/api.md), it uploads a rain-fade trace, imports a small scenario, submits it, waits for every
run to finish and checks the results are there and plausible. Exits non-zero with the reason.

    python3 tests/compose/check_experiment.py URL TOKEN [--timeout S]
Standard library only (runs with any python3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any

# Two configurations over the same 8 s of GEO link with a 6 dB fade in the middle: small enough
# for CI, enough to see ACM move and the two congestion controls differ.
TRACE = "# smoke fade: 6 dB from 3 s to 5 s (tick = 100 ms)\n0 0\n30 0\n35 6\n50 6\n55 0\n"
SCENARIO = """\
version: 1
name: compose-smoke
description: Docker Compose smoke test (tests/compose/smoke.sh)
seed: 11
duration_s: 8
repetitions: 1
sample_period_ms: 100
link:
  forward:
    delay_ms: 250
    symbol_rate_baud: 2.0e6
    acm: {refresh_ms: 100, margin_db: 0.5}
    downlink:
      attenuation: {type: file, file: traces/compose-smoke-fade.txt}
    queue: {limit_packets: 1000, limit_bytes: 1500000}
  return:
    delay_ms: 250
    kind: fixed
    rate_bps: 2.0e6
hosts:
  # route metrics, set by each box's agent on its default route as on namespaces (far above this
  # link's BDP: they change nothing here but must be accepted and applied)
  # sack off: the withholding receiver's dupACKs must not carry SACK blocks
  settings: {window_clamp_bytes: 4000000, initial_cwnd_packets: 10, sack: false}
traffic:
  - kind: bulk_tcp
    direction: download
    duration_s: 8
configurations:
  - name: cubic
    transport: {congestion_control: cubic}
  - name: reno-withhold  # satlab-withhold (NFQUEUE) in the cli1 box, the flow's receiver
    transport: {congestion_control: reno}
    receiver: {withhold: {}}
  - name: cubic-gateway  # the edge gateway spliced into the gw and st boxes by their agents
    transport: {congestion_control: cubic}
    gateway: {egress: {aqm: {kind: red}}, ceten: {enabled: true}}
  - name: cubic-pep  # satlab-pep at both edge boxes (nftables TPROXY in the containers)
    transport: {congestion_control: cubic}
    pep: {edges: both}
"""
CONFIGURATIONS = ("cubic", "reno-withhold", "cubic-gateway", "cubic-pep")
# 2 Msym/s carries at most about 2e6 x 4.5 bit (32APSK 9/10) = 9 Mbit/s; over a 500 ms RTT in 8 s
# a bulk TCP flow gets well under that but far more than nothing.
GOODPUT_MIN_BPS, GOODPUT_MAX_BPS = 50e3, 9.5e6


class Fail(Exception):
    pass


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url.rstrip("/"), token

    def call(self, method: str, path: str, body: bytes | None = None, ctype: str = "") -> Any:
        return json.loads(self.raw(method, path, body, ctype) or b"null")

    def raw(self, method: str, path: str, body: bytes | None = None, ctype: str = "") -> bytes:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                data: bytes = r.read()
                return data
        except urllib.error.HTTPError as e:
            raise Fail(
                f"{method} {path}: {e.code} {e.read().decode(errors='replace')[:500]}"
            ) from e


def watch_live(api: Api, run_id: int, live: dict[str, Any]) -> None:
    """Once each while runs go: the run's emulator in the live metrics, and a live control
    request (a delay the link already has: the runs' results stay as they are)."""
    if "metrics" not in live:
        text = api.raw("GET", "/api/metrics/runs").decode()
        if f'satlab_emulator_uptime_seconds{{run_id="{run_id}"' in text:
            live["metrics"] = run_id
    if (live.get("control") or {}).get("status_code") != 200:  # again while the emulator starts
        body = json.dumps({"direction": "forward", "delay_ms": 250}).encode()
        try:
            live["control"] = api.call(
                "POST", f"/api/runs/{run_id}/control", body, "application/json"
            )
            live["control_run"] = run_id
        except Fail as exc:
            if "409" not in str(exc):  # 409: the run is between states (not started, ending)
                raise


def check(api: Api, timeout_s: float) -> None:
    api.call(
        "POST",
        "/api/files?name=traces/compose-smoke-fade.txt&kind=attenuation",
        TRACE.encode(),
        "application/octet-stream",
    )
    sc = api.call("POST", "/api/scenarios/import", SCENARIO.encode(), "application/yaml")
    body = json.dumps({"scenario_id": sc["id"]}).encode()
    exp = api.call("POST", "/api/experiments", body, "application/json")["experiment"]
    print(f"    experiment {exp['id']} submitted", flush=True)
    deadline = time.monotonic() + timeout_s
    live: dict[str, Any] = {}
    while True:
        exp = api.call("GET", f"/api/experiments/{exp['id']}")
        states = [r["state"] for r in exp["runs"]]
        if all(s in ("succeeded", "failed", "cancelled") for s in states):
            break
        if time.monotonic() > deadline:
            raise Fail(f"experiment {exp['id']} not finished after {timeout_s:.0f} s: {states}")
        running = [r["id"] for r in exp["runs"] if r["state"] == "running"]
        if running:
            watch_live(api, running[0], live)
        time.sleep(1)
    # The worker reaches the container boxes' programs through their agents while a run goes:
    # the run's link metrics for a Prometheus server, and a live control request to its emulator.
    if not live.get("metrics"):
        raise Fail("GET /api/metrics/runs never showed a running run's emulator")
    if live.get("control", {}).get("status_code") != 200:
        raise Fail(f"live control of a running run's emulator: {live.get('control')}")
    print(f"    live: metrics of run {live['metrics']}, control of run {live['control_run']}")
    for r in exp["runs"]:
        if r["state"] != "succeeded":
            detail = api.call("GET", f"/api/runs/{r['id']}")
            raise Fail(f"run {r['id']} ({r['configuration']}) {r['state']}: {detail.get('error')}")
        doc = api.call("GET", f"/api/runs/{r['id']}/result")
        flow = doc["flows"][0]
        gp = flow.get("goodput_bps")
        if not (isinstance(gp, (int, float)) and GOODPUT_MIN_BPS < gp < GOODPUT_MAX_BPS):
            raise Fail(
                f"run {r['id']}: goodput_bps {gp} outside {GOODPUT_MIN_BPS}..{GOODPUT_MAX_BPS}; "
                f"flow {flow}; hosts {doc.get('hosts')}; link {doc.get('link_events')}"
            )
        if not flow.get("bytes_received", 0) > 0:
            raise Fail(f"run {r['id']}: no bytes received")
        series = {s["name"]: s for s in api.call("GET", f"/api/runs/{r['id']}/series")}
        modcod = series.get("link.forward.modcod")
        if not modcod or modcod["points"] < 10:
            raise Fail(f"run {r['id']}: no link telemetry (series: {sorted(series)[:10]})")
        if r["configuration"] == "cubic-gateway":
            gw = (doc.get("gateway") or {}).get("gw") or {}
            sent = (gw.get("counters") or {}).get("egress_tx_frames", 0)
            if not (gw.get("telemetry_connected") and sent > 100):
                raise Fail(f"run {r['id']}: the gw edge's gateway carried nothing: {gw}")
        if r["configuration"] == "cubic-pep":
            peps = doc.get("pep") or {}
            counters = {e: (x or {}).get("counters") or {} for e, x in peps.items()}
            accepted = {e: c.get("accepted") for e, c in counters.items()}
            if set(accepted) != {"gw", "st"} or not all(accepted.values()):
                raise Fail(f"run {r['id']}: the PEPs relayed no connection: {accepted}")
        if r["configuration"] == "reno-withhold":
            counters = (doc.get("receivers") or {}).get("cli1")
            if not counters:
                raise Fail(f"run {r['id']}: no withholding receiver counters from cli1: {counters}")
        cwnd = [n for n in series if n.startswith("tcp.") and n.endswith(".cwnd")]
        if not cwnd:
            raise Fail(f"run {r['id']}: no TCP_INFO samples (series: {sorted(series)[:10]})")
        print(
            f"    run {r['id']} {r['configuration']}: goodput {gp / 1e6:.2f} Mbit/s, "
            f"{flow['bytes_received']} bytes, {modcod['points']} MODCOD samples",
            flush=True,
        )
    rows = api.call("GET", f"/api/experiments/{exp['id']}/results")
    rows = rows.get("rows", rows) if isinstance(rows, dict) else rows
    means = {row["configuration"]: row["metrics"]["goodput_bps"]["mean"] for row in rows}
    if set(means) != set(CONFIGURATIONS) or any(m is None for m in means.values()):
        raise Fail(f"results: goodput means per configuration missing: {means}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for the experiment")
    args = ap.parse_args()
    try:
        check(Api(args.url, args.token), args.timeout)
    except Fail as exc:
        print(f"    FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
