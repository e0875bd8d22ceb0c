"""Loss differentiation over the real emulator (and gateway): sl_ecnld and sl_csumld.

Short runs of the settings of scenarios/lossdiff-*.yaml (Garcia & Brunstrom 2004; the TCP-ECN
paper): bit errors on the forward link are delivered (the receiver's kernel drops the segment on its
bad checksum, so for a sender it is a loss like any other), and every sender is compared with
sl_newreno, the reference that differs from both only in not classifying losses."""

import statistics
from pathlib import Path
from typing import Any

from side_by_side import run_side_by_side

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed.schemes import AVAILABLE_CC, CGROUP_ROOT, pin_dir

DURATION_S = 15


def mean_cwnd(res: dict[str, Any]) -> float:
    """The sender's typical congestion window (packets): the median of the run's samples (a
    sample taken as a socket closes can read garbage, which a mean would follow). (Counting dips
    would not do: during any recovery the kernel's PRR lets the sampled cwnd fall with the
    packets in flight, even when the loss response keeps ssthresh.)"""
    return statistics.median(s["cwnd"] for s in res["timeseries"]["tcp"] if s.get("cwnd"))


def run_all(sc_dict: dict[str, Any]) -> list[dict[str, Any]]:
    sc = parse_scenario(sc_dict)
    return run_side_by_side([(sc, spec) for spec in expand_runs(sc)])


# --- ECN-based discriminator (TCP-ECN) ------------------------------------------------------

# 2 Mbit/s, 100 ms one way; RED/ECN at the gateway (its defaults: min_th 5, max_th 15 packets).
ECN_LINK = {
    "forward": {"kind": "fixed", "rate_bps": 2e6, "delay_ms": 100, "queue": {"limit_packets": 100}},
    "return": {"kind": "fixed", "rate_bps": 2e6, "delay_ms": 100},
}
ECN_GATEWAY = {"egress": {"aqm": {"kind": "red_ecn"}}}
PLR_3PCT_BER = 2.54e-6  # 1 - (1 - BER)^(8 * 1500) = 3 %


def test_ecnld_beats_reno_on_an_uncongested_lossy_link(emulator_bin: Path) -> None:
    """Table 5's setting: no congestion (a 32 kB receive window keeps the gateway queue empty),
    3 % packet errors past the RED gateway. No marks, so every loss is wireless: ECN-LD keeps its
    window and must clearly beat NewReno, which halves on each."""
    link = {
        **ECN_LINK,
        "forward": {**ECN_LINK["forward"], "bit_errors": {"model": "uniform", "ber": PLR_3PCT_BER}},
    }
    results = run_all(
        {
            "name": "ecnld-lossy",
            "seed": 3,
            "duration_s": DURATION_S,
            "repetitions": 2,
            "sample_period_ms": 100,
            "hosts": {"settings": {"ecn": "on", "window_clamp_bytes": 32768}},
            "link": link,
            "traffic": [{"kind": "bulk_tcp", "duration_s": DURATION_S}],
            "configurations": [
                {"name": n, "transport": {"congestion_control": cc}, "gateway": ECN_GATEWAY}
                for n, cc in (("reno", "sl_newreno"), ("ecnld", "sl_ecnld"))
            ],
        }
    )
    goodput: dict[str, list[float]] = {"reno": [], "ecnld": []}
    stats: dict[str, int] = {}
    for res in results:
        goodput[res["configuration"]].append(res["flows"][0]["goodput_bps"] or 0.0)
        if res["configuration"] == "ecnld":
            for k, v in res["endhosts"]["srv1"]["sl_ecnld"]["stats"].items():
                stats[k] = stats.get(k, 0) + v
    mean = {k: statistics.mean(v) for k, v in goodput.items()}
    report = f"goodput {mean}, ecnld counters {stats}"
    assert stats["loss_wireless"] >= 10, report
    # RED may still mark now and then (its average follows bursts): most losses are wireless
    assert stats["loss_congestion"] + stats["cwr_ece"] <= 0.2 * stats["loss_wireless"], report
    # the sign of Table 5 (+21 .. +45 % there); with this window and RTT the gap is larger
    assert mean["ecnld"] > 1.2 * mean["reno"], report


def test_ecnld_still_backs_off_under_congestion(emulator_bin: Path) -> None:
    """No bit errors, two flows filling the link: RED marks, the ECN-LD flow reads the ECEs as
    congestion and shares the link with a NewReno flow instead of taking it."""
    results = run_all(
        {
            "name": "ecnld-congested",
            "seed": 5,
            "duration_s": DURATION_S,
            "sample_period_ms": 100,
            "hosts": {"servers": 2, "settings": {"ecn": "on"}},
            "link": ECN_LINK,
            "traffic": [
                {"kind": "bulk_tcp", "server": 1, "duration_s": DURATION_S},
                {
                    "kind": "bulk_tcp",
                    "server": 2,
                    "duration_s": DURATION_S,
                    "congestion_control": "sl_newreno",
                },
            ],
            "configurations": [
                {
                    "name": "ecnld",
                    "transport": {"congestion_control": "sl_ecnld"},
                    "gateway": ECN_GATEWAY,
                }
            ],
        }
    )
    res = results[0]
    st = res["endhosts"]["srv1"]["sl_ecnld"]["stats"]
    ld, reno = (f["goodput_bps"] or 0.0 for f in res["flows"])
    marked = res["gateway"]["gw"]["counters"]["aqm_marked"]
    report = f"ecnld {ld:.0f} b/s, newreno {reno:.0f} b/s, counters {st}, marked {marked}"
    assert marked > 0 and st["acks_ece"] > 0, report
    assert st["cwr_ece"] + st["loss_congestion"] >= 3, report
    # it backs off like NewReno: no more than twice the competing NewReno flow's goodput
    assert ld < 2 * reno, report
    assert not pin_dir(res["testbed_id"]).exists()
    assert res["endhosts"]["srv1"]["sl_ecnld"]["cc"] not in AVAILABLE_CC.read_text().split()


# --- receiver checksum loss differentiation (Garcia & Brunstrom) -----------------------------


def test_csumld_notices_and_insensitivity_to_ber(emulator_bin: Path) -> None:
    """A-T2's setting, shortened: one flow, 2 Mbit/s, 50 ms one way, a 99-packet buffer and a
    64 kB receive window (no congestion), bit errors giving 0 and about 5 % packet errors. The
    receiver's notices decide the sender's losses; the LD flow keeps its window and its goodput,
    NewReno's falls."""
    link = {
        "forward": {
            "kind": "fixed",
            "rate_bps": 2e6,
            "delay_ms": 50,
            "queue": {"limit_packets": 99},
            "bit_errors": {"model": "uniform", "ber": 0.0},
        },
        "return": {"kind": "fixed", "rate_bps": 2e6, "delay_ms": 50},
    }
    results = run_all(
        {
            "name": "csumld",
            "seed": 7,
            "duration_s": DURATION_S,
            "sample_period_ms": 100,
            "hosts": {"settings": {"window_clamp_bytes": 65535, "initial_cwnd_packets": 2}},
            "link": link,
            "traffic": [{"kind": "bulk_tcp", "duration_s": DURATION_S}],
            "sweep": {"path": "forward.bit_errors.ber", "values": [0.0, 4.3e-6]},
            "configurations": [
                {"name": n, "transport": {"congestion_control": cc}}
                for n, cc in (("reno", "sl_newreno"), ("csumld", "sl_csumld"))
            ],
        }
    )
    goodput: dict[tuple[str, float], float] = {}
    cwnd: dict[str, float] = {}
    for res in results:
        name, ber = res["configuration"], res["sweep"]["value"]
        goodput[(name, ber)] = res["flows"][0]["goodput_bps"] or 0.0
        if ber:
            cwnd[name] = mean_cwnd(res)
        if name == "csumld" and ber:
            sender = res["endhosts"]["srv1"]["sl_csumld"]
            receiver = res["endhosts"]["cli1"]["sl_csumld"]
            testbed_id = res["testbed_id"]
    report = f"goodput {goodput}, mean cwnd {cwnd}, sender {sender}, receiver {receiver}"
    s, r = sender["stats"], receiver["stats"]
    # notices on the wire: written by the receiver, parsed by the sender, deciding losses
    assert r["bad_checksum"] >= 20 and r["options_written"] >= 0.8 * r["bad_checksum"], report
    assert s["options_parsed"] >= 0.9 * r["options_written"], report
    assert s["loss_corruption"] >= 5, report
    assert s["loss_congestion"] <= 0.25 * (s["loss_congestion"] + s["loss_corruption"]), report
    # keeps its window on corruption losses, and its goodput (A-T2: "practically insensitive")
    assert cwnd["csumld"] > 2 * cwnd["reno"], report
    # (measured ~0.73 over 15 s: the retransmissions themselves and the timeouts a corrupted
    # retransmission still costs; NewReno keeps ~0.19)
    assert goodput[("csumld", 4.3e-6)] >= 0.6 * goodput[("csumld", 0.0)], report
    assert goodput[("reno", 4.3e-6)] < 0.5 * goodput[("reno", 0.0)], report
    assert goodput[("csumld", 4.3e-6)] > 1.2 * goodput[("reno", 4.3e-6)], report
    # nothing of the run stays: instances, pins, cgroups
    available = AVAILABLE_CC.read_text().split()
    assert sender["cc"] not in available and receiver["cc"] not in available
    assert not pin_dir(testbed_id).exists()
    assert not list(CGROUP_ROOT.glob(f"{testbed_id}-*"))
