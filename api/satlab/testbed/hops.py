"""Terrestrial hops of a run (a scenario's `path.terrestrial`): one satlab-emulator per hop.

The paper topologies need paths of several hops: the ETEN report (BBN TR 8333), section 2, runs
three hops of 100 ms with UDP on/off or TCP Tahoe cross traffic on the middle one; the IP-ERN paper
(Computer Networks 56, 2012), section 6, moves a second bottleneck between a drop-tail and an ERN
router. topology.py builds the routers r1..rK, an emulator box hopN per hop and the cross hosts
xNsI / xNcI at hop N's two ends; this module runs each hop's emulator and reports its counters.

Each hop is an emulator of its own (`kind: fixed` in both directions: exact one-way delay, rate,
drop-tail queue and bit errors, the same code and checks as the satellite link), not a kernel
link: this kernel has no netem, and HTB/TBF shape a rate but cannot delay.

Seeds: hop N gets its own seed, derived from the run's seed and N (hop_seed), so a hop's error
draws are independent of the satellite link's and of the other hops', and repeat with the run.
The control endpoint of each hop listens inside its own box (same port as the satellite
emulator's, each box has its own loopback); its `GET /status`, reached through the box's agent
(POST /http) on namespaces and containers alike, gives the counters at stop.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import yaml

from satlab.agent import namespaces
from satlab.agent.requests import ProcessStart
from satlab.agent.unixhttp import AgentError
from satlab.scenario import BulkTcp, RunSpec, Scenario, ShortFlows, TerrestrialHop, UdpCross
from satlab.testbed.testbed import Testbed, TestbedError

CONTROL_PORT = 8781
START_TIMEOUT_S = 10.0


class HopError(TestbedError):
    """A hop's emulator did not start, or failed during the run."""


def _hops(sc: Scenario) -> list[TerrestrialHop]:
    return sc.path.terrestrial if sc.path else []


def cross_hosts(sc: Scenario) -> list[int]:
    """What the testbed builds: the cross hosts at each end of each hop."""
    return [h.cross_hosts for h in _hops(sc)]


def ends(t: BulkTcp | ShortFlows | UdpCross) -> tuple[str, str]:
    """(server-side role, client-side role) of a traffic item: the servers and the clients, or
    for `hop: N` the cross hosts at the two ends of hop N."""
    if t.hop is None:
        return f"srv{t.server}", f"cli{t.client}"
    return namespaces.cross_host(t.hop, "s", t.server), namespaces.cross_host(t.hop, "c", t.client)


def hop_seed(seed: int, hop: int) -> int:
    """Hop `hop`'s emulator seed (a u64): a hash of the run's seed and the hop's number."""
    digest = hashlib.sha256(f"satlab-hop:{seed}:{hop}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def emulator_config(hop: TerrestrialHop, k: int, seed: int, tb: Testbed) -> dict[str, Any]:
    cfg = hop.link()
    cfg["seed"] = hop_seed(seed, k)
    cfg["ports"] = {
        "gw": {"kind": "af_packet", "interface": "gw"},  # toward the servers
        "st": {"kind": "af_packet", "interface": "st"},  # toward the satellite and the clients
    }
    cfg["control"] = {"listen": f"127.0.0.1:{CONTROL_PORT}"}
    cfg["telemetry"] = {"socket": str(tb.dir / f"hop{k}-telemetry.sock"), "events": "none"}
    return cfg


def start(tb: Testbed, sc: Scenario, spec: RunSpec) -> dict[int, int]:
    """Starts the emulator of every hop of the run's scenario (the sweep point's own, when the
    sweep varies the path); returns hop -> its seed, once each answers on its control endpoint."""
    started = {}
    for k, hop in enumerate(_hops(spec.scenario or sc), 1):
        cfg = emulator_config(hop, k, spec.seed, tb)
        path = tb.dir / f"hop{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        emulator = ProcessStart(id="emulator", kind="emulator", args=["--config", str(path)])
        tb.agent(namespaces.hop_box(k), "POST", "/processes", emulator)
        started[k] = cfg["seed"]
    deadline = time.monotonic() + START_TIMEOUT_S
    for k in started:
        while _status(tb, k) is None:
            st = tb.agent(namespaces.hop_box(k), "GET", "/processes/emulator")
            if st["state"] != "running" or time.monotonic() > deadline:
                raise HopError(
                    f"path.terrestrial.{k - 1}: hop {k}'s emulator did not start: "
                    f"{st['stderr'].strip()[-500:]}"
                )
            time.sleep(0.05)
    return started


def stop(tb: Testbed, started: dict[int, int]) -> dict[str, Any]:
    """Stops the hops' emulators; {"hops": [per hop: its seed and each direction's counters]}
    (nothing for a path without hops). A hop whose emulator failed during the run fails it."""
    if not started:
        return {}
    # Every hop's counters first, then the stops: one moment for all hops, as near as can be.
    statuses = {k: _status(tb, k) for k in started}
    records = []
    for k, seed in started.items():
        status = statuses[k]
        proc = tb.agent(namespaces.hop_box(k), "DELETE", "/processes/emulator")
        if status is None or (proc["state"] == "failed" and proc["exit_code"] not in (0, -15)):
            raise HopError(
                f"path.terrestrial.{k - 1}: hop {k}'s emulator failed during the run "
                f"(exit code {proc['exit_code']}): {proc['stderr'].strip()[-500:]}"
            )
        records.append(
            {
                "hop": k,
                "seed": seed,
                "forward": status["forward"]["counters"],
                "return": status["return"]["counters"],
            }
        )
    return {"hops": records}


def _status(tb: Testbed, k: int) -> dict[str, Any] | None:
    """Hop k's emulator status (GET /status through its box's agent, on any kind of testbed), or
    None if it does not answer."""
    relay = {"port": CONTROL_PORT, "method": "GET", "path": "/status", "timeout": 2}
    try:
        out = tb.agent(namespaces.hop_box(k), "POST", "/http", relay)
        if out["status"] != 200:
            return None
        status: dict[str, Any] = json.loads(out["body"])
        return status
    except (AgentError, json.JSONDecodeError):
        return None
