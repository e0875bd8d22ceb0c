"""A bulk download over a 600 ms RTT, 20 Mbit/s link reaches 90 % of the link rate sooner through
the PEP (split at both edges; the satellite leg CUBIC too, with a 100-packet initial window and
BDP-sized buffers) than end to end with CUBIC. Both times are printed (pytest -s); the test
asserts their order only, never a timing figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pepnet import PepNet, link

from satlab.scenario import PepSettings

ROOT = Path(__file__).resolve().parents[2]
RATE_BPS = 20e6
GEO = link(RATE_BPS, 600)
BYTES = 20_000_000  # 8 s at the link rate: well past the ramp of both
WINDOW_S = 1.0


def time_to_90_percent(marks: list[list[float]]) -> float | None:
    """First time the goodput over the last WINDOW_S reaches 90 % of the link rate, from the
    client's (time, bytes received) marks, counted from the connect() call."""
    for t, total in marks:
        if t < WINDOW_S:
            continue
        before = max(
            (m for m in marks if m[0] <= t - WINDOW_S), default=[0.0, 0], key=lambda m: m[0]
        )
        if 8 * (total - before[1]) / (t - before[0]) >= 0.9 * RATE_BPS:
            return float(t)
    return None


def _download(pep: PepSettings | None) -> dict[str, Any]:
    with PepNet(GEO, pep) as n:
        n.serve("srv1", 7000, f"source:{BYTES}")
        out = n.run("cli1", "get", n.addr("srv1"), 7000, timeout=90)
        assert out["n"] == BYTES
        return out


def test_the_pep_reaches_90_percent_of_the_link_sooner_than_end_to_end_cubic() -> None:
    e2e = time_to_90_percent(_download(None)["marks"])
    pep = PepSettings(
        edges="both", congestion_control="cubic", initial_window_packets=100, buffer_bytes=4 << 20
    )
    split = time_to_90_percent(_download(pep)["marks"])
    print(
        f"\ntime to 90 % of {RATE_BPS / 1e6:g} Mbit/s over 600 ms RTT:"
        f" end-to-end cubic {e2e} s, PEP {split} s"
    )
    assert split is not None, "the PEP never reached 90 % of the link rate"
    assert e2e is None or split < e2e


def test_a_scenario_run_with_the_pep_records_its_counters() -> None:
    from satlab.scenario import expand_runs, load_scenario
    from satlab.testbed import topology
    from satlab.testbed.runner import run_one

    sc = load_scenario(ROOT / "scenarios/pep-vs-e2e.yaml")
    runs = [r for r in expand_runs(sc) if r.configuration.pep is not None]
    sc = sc.model_copy(update={"duration_s": 5.0})
    res = run_one(sc, runs[0])
    assert res["status"] == "ok", res.get("error")
    for edge in ("gw", "st"):
        rec = res["pep"][edge]
        assert rec["edge"] == edge and rec["counters"]["accepted"] >= 1
        assert rec["connections"] or rec["counters"]["active"] >= 1
    assert res["pep"]["gw"]["counters"]["bytes_client_to_server"] > 1_000_000  # the download
    assert not topology.project_namespaces(res["testbed_id"])


def test_the_pep_works_with_the_gateway_bump_at_the_same_edges() -> None:
    from satlab.scenario import expand_runs, parse_scenario
    from satlab.testbed.runner import run_one

    sc = parse_scenario(
        {
            "name": "pep-gw",
            "duration_s": 8,
            "link": link(20e6, 100),
            "traffic": [{"kind": "bulk_tcp", "bytes": 2_000_000}],
            "configurations": [{"name": "gw-pep", "gateway": {}, "pep": {"edges": "both"}}],
        }
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    assert res["flows"][0]["complete"] and res["flows"][0]["bytes_received"] == 2_000_000
    for edge in ("gw", "st"):
        c = res["pep"][edge]["counters"]
        assert c["accepted"] == 1 and c["closed"] == 1, (edge, c)
        assert res["gateway"][edge]["counters"]["egress_tx_frames"] > 100


def test_a_beten_satellite_leg_takes_the_far_edges_notices() -> None:
    """PEP + an ETEN-aware satellite leg: sl_beten runs on the gw edge's PEP sockets, and its
    notice parser sits on the edge's satellite-side interface (sat0; an end host's is eth0), so
    the st edge's notices for corrupted segments reach the PEP (once refused: no eth0 at gw)."""
    from satlab.scenario import expand_runs, parse_scenario
    from satlab.testbed.runner import run_one

    sc = parse_scenario(
        {
            "name": "pep-beten",
            "duration_s": 8,
            "hosts": {"settings": {"timestamps": False}},
            "link": link(10e6, 520, corrupt_ber=2e-6),
            "traffic": [{"kind": "bulk_tcp", "duration_s": 8}],
            "configurations": [
                {
                    "name": "pep-beten",
                    "gateway": {"eten": {"enabled": True}},
                    "pep": {"edges": "both", "congestion_control": "sl_beten"},
                }
            ],
        }
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    notices = res["gateway"]["st"]["counters"]["eten_notices"]
    beten = res["endhosts"]["gw"]["sl_beten"]["stats"]
    assert notices > 0 and beten["accepted"] > 0 and beten["loss_corruption"] > 0, (notices, beten)
