"""A compose deployment's OpenSAND link (docker/opensand/compose.yml): through the reverse proxy,
scenarios/opensand-cross-validation.yaml trimmed to a few seconds of clear sky runs as a queued
experiment on both link backends, the built-in emulator and OpenSAND 8's entities in the emu box
(`link.backend: opensand`, satlab.agent.opensandbox). Checks that the OpenSAND run carried the
traffic at OpenSAND's clear-sky MODCOD and the link's delay, with its entities' CPU time and its
configuration and probes as artifacts, and prints both runs side by side. Exits non-zero with the
reason; the run fails naming the missing binary when the emu box has no OpenSAND.

    python3 tests/compose/check_opensand.py URL TOKEN [--timeout S]
(README.md, "Docker Compose", says how to bring the deployment up with OpenSAND.) Standard
library only (runs with any python3).
"""

from __future__ import annotations

from typing import Any

from check_experiment import Api, Fail
from parity import check_command

DELAY_MS = 250
# Clear sky 20 dB up and down under OpenSAND's ACM rule, margin 0 (tests/testbed/
# test_opensand_backend.py): 32APSK 9/10.
CLEAR_SKY_MODCOD = 28
SCENARIO = f"""\
version: 1
name: compose-opensand
description: scenarios/opensand-cross-validation.yaml in clear sky, 6 s (check_opensand.py)
seed: 11
duration_s: 6
sample_period_ms: 200
link:
  forward:
    delay_ms: {DELAY_MS}
    symbol_rate_baud: 10.0e6
    roll_off: 0.35
    pilots: false
    gse_label_bytes: 6
    acm: {{mode: acm, refresh_ms: 1000, margin_db: 0}}
    uplink: {{clear_sky_db: 20}}
    downlink: {{clear_sky_db: 20}}
    queue: {{limit_packets: 1000}}
  return:
    delay_ms: {DELAY_MS}
    kind: rcs2
    symbol_rate_baud: 4.0e6
    acm: {{mode: acm, refresh_ms: 1000, margin_db: 0}}
traffic:
  - {{kind: bulk_tcp, direction: download, duration_s: 6}}
  - {{kind: udp_cbr, direction: download, rate_bps: 2.0e6, packet_bytes: 1200}}
sweep:
  path: link.backend
  values: [satlab, opensand]
configurations:
  - name: cubic
"""


def bucket_values(api: Api, run_id: int, prefix: str, suffix: str, key: str) -> list[float]:
    """`key` (min, max) of every bucket of the run's series named prefix...suffix."""
    series = f"/api/runs/{run_id}/series"
    return [
        b[key]
        for n in [s["name"] for s in api.call("GET", series)]
        if n.startswith(prefix) and n.endswith(suffix)
        for b in api.call("GET", f"{series}/{n}")["buckets"]
        if b.get(key) is not None
    ]


def check_opensand_run(api: Api, doc: dict[str, Any]) -> None:
    run = f"run {doc['run_id']} (opensand)"
    modcods = bucket_values(api, doc["run_id"], "link.forward.modcod", "", "max")
    if not modcods or modcods[-1] != CLEAR_SKY_MODCOD:
        raise Fail(f"{run}: forward MODCODs {modcods[-5:]}, not ending at {CLEAR_SKY_MODCOD}")
    entities = (doc.get("opensand") or {}).get("entities", {})
    ran = all(e.get("user_s", 0) > 0 for e in entities.values())
    if set(entities) != {"gw", "sat", "st"} or not ran:
        raise Fail(f"{run}: the entities' CPU times: {entities}")
    if set(doc.get("artifacts") or {}) != {"opensand.config.zip", "opensand.probes.zip"}:
        raise Fail(f"{run}: artifacts {doc.get('artifacts')}")


def check_run(api: Api, doc: dict[str, Any]) -> None:
    """Each backend's run carried both flows at the link's delay; the OpenSAND one as above.
    Prints the run's line of the side-by-side table."""
    backend = doc["inputs"]["link"].get("backend", "satlab")
    tcp, udp = doc["flows"][0], doc["flows"][1]
    if not tcp.get("bytes_received", 0) > 0 or not udp.get("packets_received", 0) > 0:
        raise Fail(f"run {doc['run_id']} ({backend}): a flow carried nothing: {tcp} {udp}")
    rtt = min(bucket_values(api, doc["run_id"], "tcp.", ".srtt_us", "min") or [0]) / 1e3
    if not 2 * DELAY_MS <= rtt <= 2 * DELAY_MS + 150:
        raise Fail(f"run {doc['run_id']} ({backend}): smallest RTT {rtt:.0f} ms")
    if backend == "opensand":
        check_opensand_run(api, doc)
    entities = (doc.get("opensand") or {}).get("entities", {}).values()
    cpu = sum(e["user_s"] + e["system_s"] for e in entities)
    print(
        f"    {backend:8s} goodput {tcp['goodput_bps'] / 1e6:5.2f} Mbit/s, UDP "
        f"{udp['packets_received']}/{udp.get('packets_sent')} packets, min RTT {rtt:.0f} ms"
        + (f", entities' CPU {cpu:.2f} s" if cpu else ""),
        flush=True,
    )


if __name__ == "__main__":
    check_command(__doc__.splitlines()[0], SCENARIO, check_run, timeout_s=180.0)
