"""Yang's reordering-robust receiver (endhosts/withhold) over the real emulator.

Yang's 50 ms set, shortened (Yang 2001, section 5.1): 1.5 Mbit/s, MSS 536, a 25 ms forward path and,
with probability 0.5 per packet, a second one 25 ms longer; one un-reordered 50 ms return path.
The sender is the thesis's baseline: Reno without SACK, RACK, TLP or dynamic dupthresh, and
without timestamps (no undo). No loss is configured and the receive window (64 segments) fits in
the 200-packet queue, so every fast retransmit is spurious; the receiver counts the fully
duplicate segments it gets (TcpExt.DelayedACKLost), as Yang did.
"""

from pathlib import Path
from typing import Any

import pytest
from side_by_side import run_side_by_side

from satlab.scenario import ScenarioError, expand_runs, parse_scenario

DURATION_S = 12
SEEDS = (1, 2)


def scenario(seed: int, extra_delay_ms: float) -> dict[str, Any]:
    forward: dict[str, Any] = {
        "kind": "fixed",
        "rate_bps": 1.5e6,
        "delay_ms": 25,
        "queue": {"limit_packets": 200},
    }
    if extra_delay_ms:
        forward["reorder"] = {"probability": 0.5, "extra_delay_ms": extra_delay_ms}
    return {
        "name": "yang",
        "seed": seed,
        "duration_s": DURATION_S,
        "hosts": {
            "mtu_bytes": 576,
            "settings": {
                "sack": False,
                "timestamps": False,
                "rack": False,
                "tlp": False,
                "reordering_packets": 3,
                "max_reordering_packets": 3,
                "window_clamp_bytes": 64 * 536,
            },
        },
        "link": {
            "forward": forward,
            "return": {"kind": "fixed", "rate_bps": 1.5e6, "delay_ms": 50},
        },
        "traffic": [{"kind": "bulk_tcp", "duration_s": DURATION_S}],
        "configurations": [
            {"name": "stock", "transport": {"congestion_control": "reno"}},
            {
                "name": "withhold",
                "transport": {"congestion_control": "reno"},
                "receiver": {"withhold": {"rtt_ms": 75}},
            },
        ],
    }


def measure(extra_delay_ms: float, seeds: tuple[int, ...] = SEEDS) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    scenarios = [parse_scenario(scenario(seed, extra_delay_ms)) for seed in seeds]
    runs = [(sc, spec) for sc in scenarios for spec in expand_runs(sc)]
    for (_, spec), res in zip(runs, run_side_by_side(runs), strict=True):
        m = out.setdefault(spec.configuration.name, {"spurious": 0, "recoveries": 0, "bps": []})
        m["spurious"] += res["hosts"]["cli1"]["TcpExt.DelayedACKLost"]
        m["recoveries"] += res["hosts"]["srv1"]["TcpExt.TCPRenoRecovery"]
        m["bps"].append(res["flows"][0]["goodput_bps"] or 0.0)
        if "receivers" in res:
            for k, v in res["receivers"]["cli1"].items():
                if isinstance(v, int):
                    m[k] = m.get(k, 0) + v
    return out


def test_withholding_cuts_spurious_fast_retransmits(emulator_bin: Path) -> None:
    m = measure(25)
    report = f"two paths 25/50 ms, p = 0.5: {m}"
    # The stock receiver lets the reordering trigger fast retransmits (none is needed).
    assert m["stock"]["spurious"] >= 10, report
    assert m["stock"]["recoveries"] >= 10, report
    # Withholding hides most of them: a large factor fewer (the thesis: 72-96 % fewer).
    assert m["withhold"]["spurious"] * 4 <= m["stock"]["spurious"], report
    assert m["withhold"]["recoveries"] * 4 <= m["stock"]["recoveries"], report
    # ...because it learned the strides and held dupACKs, then let them out as partial ACKs.
    assert m["withhold"]["strides_recorded"] > 0, report
    assert m["withhold"]["dupacks_held"] > 0, report
    assert m["withhold"]["released_seq"] > 0, report
    # Throughput does not suffer from it.
    assert sum(m["withhold"]["bps"]) >= sum(m["stock"]["bps"]), report


def test_withholding_costs_little_without_reordering(emulator_bin: Path) -> None:
    # One seed: with one path and no loss nothing random is left for a second seed to vary.
    m = measure(0, SEEDS[:1])
    report = f"one 25 ms path: {m}"
    assert m["withhold"]["dupacks"] == 0, report
    assert m["withhold"]["spurious"] == 0 and m["stock"]["spurious"] == 0, report
    assert sum(m["withhold"]["bps"]) >= 0.95 * sum(m["stock"]["bps"]), report


def test_settings_are_validated_with_the_field_named() -> None:
    sc = scenario(1, 25)
    sc["hosts"]["settings"]["sack"] = True
    with pytest.raises(ScenarioError, match=r"configurations.1.receiver.withhold: needs hosts"):
        parse_scenario(sc)
    sc = scenario(1, 25)
    sc["hosts"]["settings"]["max_reordering_packets"] = 2
    with pytest.raises(ScenarioError, match="max_reordering_packets: 2 must be at least"):
        parse_scenario(sc)
    sc = scenario(1, 25)
    sc["configurations"][1]["receiver"]["withhold"]["immediate_dupacks"] = 3
    with pytest.raises(ScenarioError, match="withhold.immediate_dupacks: Input should be less"):
        parse_scenario(sc)
