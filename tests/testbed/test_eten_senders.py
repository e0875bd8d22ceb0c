"""Per-packet ETEN senders over the real emulator and gateway (endhosts/bpf/eten.bpf.c).

The ETEN report's uncongested error-prone GEO hop, shortened: MSS 536, a receive window of 20
segments, 320 ms one way, uniform bit errors at 1e-5 on the forward link (about 4.5 % of the
576-byte packets), so every loss is corruption. The reference NewReno halves its window on each;
BETEN (the st edge's notices) and Oracle (the emulator's direct writes) keep it.
"""

import statistics
from pathlib import Path
from typing import Any

from side_by_side import run_side_by_side

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed.runner import run_one
from satlab.testbed.schemes import AVAILABLE_CC, CGROUP_ROOT, pin_dir

# Two seeds of 10 s keep wide margins (3 runs: goodput BETEN/NewReno 2.10-2.13 against the 1.3
# asked, Oracle/BETEN 0.99-1.00 against 0.9; late ssthresh 1000 and 41-43 against NewReno's 2.5-3;
# 10 corruption decisions against 2 congestion ones, the same sums in every run) at 93-122 s
# instead of 253 s for three seeds of 15 s.
DURATION_S = 10
SEEDS = (1, 2)
# Each flow stops at DURATION_S (traffic stop_s): otherwise, its writing done, the sender waits
# for its send buffer to drain through the 20-segment window at 640 ms RTT, which never ends
# within the runner's grace (STOP_GRACE_S, 5 s) and its SIGTERM wait: 23.5 s per run instead of
# 15.5 s, the flow doing meanwhile what its first DURATION_S measured (with the drain, 2 runs:
# BETEN/NewReno 2.44-2.47, 18-19 corruption decisions against 2-3).


def scenario(seed: int) -> dict[str, Any]:
    return {
        "name": "eten",
        "seed": seed,
        "duration_s": DURATION_S,
        "sample_period_ms": 100,
        "hosts": {
            "mtu_bytes": 576,
            "settings": {"window_clamp_bytes": 20 * 536, "timestamps": False},
        },
        "link": {
            "forward": {
                "kind": "fixed",
                "rate_bps": 10e6,
                "delay_ms": 320,
                "queue": {"limit_packets": 50},
                "bit_errors": {"model": "uniform", "ber": 1e-5},
            },
            "return": {"kind": "fixed", "rate_bps": 10e6, "delay_ms": 320},
        },
        "traffic": [{"kind": "bulk_tcp", "duration_s": DURATION_S, "stop_s": DURATION_S}],
        "configurations": [
            {
                "name": n,
                "transport": {"congestion_control": cc},
                "gateway": {"eten": {"enabled": True}},
            }
            for n, cc in (("newreno", "sl_newreno"), ("beten", "sl_beten"), ("oracle", "sl_oracle"))
        ],
    }


def late_ssthresh(res: dict[str, Any]) -> float:
    """Median sampled ssthresh (packets, "infinite" capped at 1000) over the run's second half.
    NewReno's halves on every loss; a scheme that keeps its window keeps it. (cwnd itself is no
    measure here: with the window clamped by the receiver the kernel decays an unused cwnd.)"""
    half = DURATION_S / 2
    return statistics.median(
        min(s["ssthresh"], 1000) for s in res["timeseries"]["tcp"] if s["t"] >= half
    )


def test_eten_keeps_the_window_and_beats_newreno(emulator_bin: Path) -> None:
    goodput: dict[str, list[float]] = {"newreno": [], "beten": [], "oracle": []}
    ssthresh: dict[str, list[float]] = {"newreno": [], "beten": [], "oracle": []}
    stats: dict[str, dict[str, int]] = {}
    scenarios = [parse_scenario(scenario(seed)) for seed in SEEDS]
    runs = [(sc, spec) for sc in scenarios for spec in expand_runs(sc)]
    for (_, spec), res in zip(runs, run_side_by_side(runs), strict=True):
        name = spec.configuration.name
        goodput[name].append(res["flows"][0]["goodput_bps"] or 0.0)
        ssthresh[name].append(late_ssthresh(res))
        st = res["endhosts"]["srv1"][spec.configuration.transport.congestion_control]
        for k, v in st.get("stats", {}).items():
            stats.setdefault(name, {}).setdefault(k, 0)
            stats[name][k] += v
    mean = {k: statistics.mean(v) for k, v in goodput.items()}
    report = f"goodput {mean}, late ssthresh {ssthresh}, counters {stats}"

    # Notices arrived, passed validation and decided losses.
    assert stats["beten"]["accepted"] > 0 and stats["beten"]["loss_corruption"] > 0, report
    assert stats["oracle"]["loss_corruption"] > 0, report
    for name in ("beten", "oracle"):
        for reason in ("malformed", "bad_mac", "no_mac", "unknown_flow", "out_of_window"):
            assert stats[name][reason] == 0, report
    # Most losses keep the window: decided as corruption, and ssthresh stays up while NewReno's
    # halves (compared per seed: the same channel).
    for name in ("beten", "oracle"):
        assert stats[name]["loss_corruption"] > 2 * stats[name]["loss_congestion"], report
        for kept, halved in zip(ssthresh[name], ssthresh["newreno"], strict=True):
            assert kept > 1.5 * halved, report
    # The report's ordering, Oracle >= BETEN > NewReno (10 % allowed for run-to-run noise on
    # the Oracle/BETEN comparison, which the same channel per seed makes small but not zero).
    assert mean["beten"] > 1.3 * mean["newreno"], report
    assert mean["oracle"] >= 0.9 * mean["beten"], report


def test_ceten_runs_end_to_end_and_leaves_nothing(emulator_bin: Path) -> None:
    """CETEN through both edges: the sender writes the option, the gateways stamp the link
    estimates, the receiver reflects them, the sender's losses are drawn against them."""
    sc_dict = scenario(1)
    sc_dict["duration_s"] = 10
    sc_dict["traffic"] = [{"kind": "bulk_tcp", "duration_s": 10}]
    sc_dict["configurations"] = [
        {
            "name": "ceten",
            "transport": {"congestion_control": "sl_ceten"},
            "gateway": {"ceten": {"enabled": True}},
        }
    ]
    sc = parse_scenario(sc_dict)
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    sender = res["endhosts"]["srv1"]["sl_ceten"]
    receiver = res["endhosts"]["cli1"]["sl_ceten"]
    report = f"sender {sender}, receiver {receiver}, gateways {res['gateway']}"
    assert sender["stats"]["options_written"] > 100, report
    assert receiver["stats"]["options_parsed"] > 100, report  # stamped data segments
    assert sender["stats"]["options_parsed"] > 50, report  # ACKs with reflected values
    assert res["gateway"]["gw"]["counters"]["ceten_stamped"] > 0, report
    losses = sender["stats"]["loss_corruption"] + sender["stats"]["loss_congestion"]
    assert losses > 0 and sender["stats"]["loss_no_estimate"] <= 1, report

    # Nothing of the run stays in the kernel: instances, pins, cgroups.
    available = AVAILABLE_CC.read_text().split()
    assert sender["cc"] not in available and receiver["cc"] not in available
    assert not pin_dir(res["testbed_id"]).exists()
    assert not list(CGROUP_ROOT.glob(f"{res['testbed_id']}-*"))
