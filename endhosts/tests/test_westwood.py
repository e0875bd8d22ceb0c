"""Kernel tests of sl_westwood, TCP Westwood+ (bpf/westwood.bpf.c).

Nothing is mocked: the program is built with make, loaded through the verifier and
registered with bpftool, and carries real TCP transfers: over loopback in a fresh
namespace, and across the project's emulator (a 20 Mbit/s link with 20 ms each way) between
two namespaces, where the bandwidth-delay product is large enough for the estimate to
matter. The kernel's own tcp_westwood cannot be the reference here: this kernel is built
without it and without module support (CONFIG_TCP_CONG_WESTWOOD and CONFIG_MODULES unset),
so the loss response (after fast recovery, and after a retransmission timeout) is
checked against its formula, computed from what the sender's tcp_info measured, and
against sl_newreno on the same loss pattern.
"""

from __future__ import annotations

import gzip
import math
import os
import platform
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ca_harness import (
    assert_recovers_from_periodic_loss,
    assert_registered_once,
    available_congestion_controls,
    drop_all_segments,
    drop_segments,
    dropped_segments,
    registered,
    run,
    struct_ops_maps,
    transfer,
)
from emulated_link import LinkedHosts, emulated_path, transfer_across

CA_NAME = "sl_westwood"  # tcp_congestion_ops.name, and the struct_ops map's name
PORT = 5001

# The path and the loss pattern of the loss-response test. Its BDP is 20 Mbit/s x 40 ms
# = 66 full-size segments (72 as Westwood counts: its rtt_min is rounded up to jiffies).
LINK_RATE_BPS = 20e6
ONE_WAY_DELAY_MS = 20.0
# Data segments dropped at the receiver, by arrival number (from 0): the first ends slow
# start early (cwnd about 48); the second comes after about 2.5 s of congestion
# avoidance, when the window has just passed the BDP and the queue is still short: a
# random loss, where the estimate (about the BDP) and Reno's halving (about 38) part.
LOSSES = [40, 3000]
SIZE = 6_000_000  # about 4 s on this path
SAMPLE_MS = 5.0

# Tolerances. The estimate against the formula: 15 % (measured within 3 %; the rest is
# room for sampling on a loaded machine). The scenario is distinguishing when the formula
# and the halving differ by more than 25 %.
ESTIMATE_TOLERANCE = 0.15
DISTINGUISHING = 0.25

TCP_CA_RECOVERY = 3  # enum tcp_ca_state
TCP_CA_LOSS = 4


@pytest.fixture
def westwood(built: Path) -> Iterator[int]:
    with registered(built / "westwood.bpf.o", CA_NAME) as map_id:
        yield map_id


# Tests take `westwood` before `netns`, so the namespace goes first at teardown.


def test_registers_and_is_available(westwood: int) -> None:
    assert_registered_once(CA_NAME, westwood)


def test_transfer_with_periodic_loss_is_byte_exact(westwood: int, netns: str) -> None:
    assert_recovers_from_periodic_loss(netns, PORT, CA_NAME)


def test_unregisters_and_leaves_nothing(built: Path, netns: str) -> None:
    before = set(struct_ops_maps(CA_NAME))
    with registered(built / "westwood.bpf.o", CA_NAME) as map_id:
        result = transfer(netns, 1 << 20, PORT, cc=CA_NAME)
        assert result["intact"]
    assert CA_NAME not in available_congestion_controls()
    # Unregistered and no socket left using it: the kernel frees the map (after an RCU
    # grace period), so bpftool no longer lists it in any state.
    deadline = time.monotonic() + 10
    while map_id in struct_ops_maps(CA_NAME) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(struct_ops_maps(CA_NAME)) <= before


# --- the loss response ---------------------------------------------------------------


def kernel_hz() -> int:
    """CONFIG_HZ of the running kernel: Westwood+ counts time in jiffies."""
    for config in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        if config.exists():
            text = (
                gzip.decompress(config.read_bytes()).decode()
                if config.suffix == ".gz"
                else config.read_text()
            )
            match = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
            if match:
                return int(match.group(1))
    raise AssertionError("CONFIG_HZ: no kernel configuration at /proc/config.gz or /boot")


def last_episode(samples: list[dict[str, Any]], state: int) -> tuple[dict, list[dict], dict]:
    """The samples just before, during and just after the last episode in ca_state `state`
    (TCP_CA_RECOVERY: fast recovery; TCP_CA_LOSS: after a retransmission timeout)."""
    during = [i for i, s in enumerate(samples) if s["ca_state"] == state]
    assert during, f"no episode in ca_state {state} was sampled"
    last = [during[-1]]
    while last[0] - 1 in during:
        last.insert(0, last[0] - 1)
    assert last[0] > 0 and last[-1] + 1 < len(samples), "recovery at the edge of the samples"
    return samples[last[0] - 1], [samples[i] for i in last], samples[last[-1] + 1]


def acked_at(samples: list[dict[str, Any]], t: float) -> float:
    """tcpi_bytes_acked at time t, interpolated between samples."""
    for a, b in zip(samples, samples[1:], strict=False):
        if a["t"] <= t <= b["t"]:
            return a["bytes_acked"] + (b["bytes_acked"] - a["bytes_acked"]) * (t - a["t"]) / (
                b["t"] - a["t"]
            )
    raise AssertionError(f"no samples around t={t:.3f} s")


def westwood_expected(
    samples: list[dict[str, Any]], at: dict[str, Any], end: float
) -> dict[str, float]:
    """ssthresh = max(bw_est * rtt_min / mss, 2) from the sender's own measurements.

    rtt_min: tcpi_min_rtt, rounded up to jiffies as Westwood+ does. bw_est: Westwood+
    samples the ACKed bytes once per window of max(RTT, 50 ms) (closed by the first ACK
    after it, so one jiffy more) and filters twice with gain 1/8; each stage delays the
    sample stream by 7 windows on average, so the estimate follows the mean delivery rate
    over the last 2 x 14 windows, which is what is measured here (tcpi_bytes_acked, up to
    `end`, the last ACK the estimate saw). `at` is the sample that gives RTTs and MSS.
    """
    hz = kernel_hz()
    rtt_min_j = math.ceil(at["min_rtt"] * hz / 1e6)
    window_j = max(math.ceil(at["rtt"] * hz / 1e6), hz // 20) + 1
    span = 28 * window_j / hz
    rate = (acked_at(samples, end) - acked_at(samples, end - span)) / span  # bytes/s
    return {
        "rate_mbps": rate * 8 / 1e6,
        "rtt_min_jiffies": rtt_min_j,
        "span_s": span,
        "ssthresh": max(rate / hz * rtt_min_j / at["snd_mss"], 2),
    }


def run_on_link(
    built: Path,
    link: LinkedHosts,
    cc: str,
    size: int = SIZE,
    blackout: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One transfer with the LOSSES pattern, and optionally a blackout (start s, length s
    after the transfer is launched) in which every data segment is dropped."""
    with registered(built / f"{cc.removeprefix('sl_')}.bpf.o", cc):
        drop_segments(link.receiver, PORT, LOSSES)
        timer = None
        if blackout:
            timer = threading.Timer(blackout[0], drop_all_for, (link.receiver, blackout[1]))
            timer.start()
        try:
            result = transfer_across(link, size, PORT, cc, sample_ms=SAMPLE_MS)
        finally:
            if timer:  # a transfer that failed early does not wait for its outage
                timer.cancel()
                timer.join()
        if not blackout:
            assert dropped_segments(link.receiver) == len(LOSSES)
    assert result["congestion_control"] == cc
    assert result["received"] == size
    assert result["intact"]
    return result


def drop_all_for(netns: str, seconds: float) -> None:
    """Drops every data segment to PORT on arrival for `seconds` (a link outage)."""
    drop_all_segments(netns, PORT, "satlab_blackout", priority=-10)
    time.sleep(seconds)
    run("ip", "netns", "exec", netns, "nft", "delete", "table", "inet", "satlab_blackout")


def test_ssthresh_after_loss_is_the_bandwidth_estimate(built: Path) -> None:
    with emulated_path(f"w-{os.getpid()}-ww", LINK_RATE_BPS, ONE_WAY_DELAY_MS) as link:
        ww = run_on_link(built, link, CA_NAME)
        nr = run_on_link(built, link, "sl_newreno")

    # sl_westwood: recovery starts with Reno's halving (the kernel module's .ssthresh is
    # tcp_reno_ssthresh); when it ends, ssthresh and cwnd become the estimate.
    before, during, after = last_episode(ww["samples"], TCP_CA_RECOVERY)
    halving = max(before["snd_cwnd"] // 2, 2)
    expected = westwood_expected(ww["samples"], after, after["t"])
    e = expected["ssthresh"]
    print(
        f"\nsl_westwood: cwnd {before['snd_cwnd']} before the loss, ssthresh "
        f"{during[0]['snd_ssthresh']} in recovery, {after['snd_ssthresh']} after "
        f"(cwnd {after['snd_cwnd']}); expected {e:.1f} from "
        f"{expected['rate_mbps']:.2f} Mbit/s over {expected['span_s']:.2f} s x "
        f"{expected['rtt_min_jiffies']} jiffies (min RTT {after['min_rtt']} us)"
    )
    assert abs(during[0]["snd_ssthresh"] - halving) <= 2
    assert abs(e - halving) > DISTINGUISHING * e, "this loss does not tell the two apart"
    assert abs(after["snd_ssthresh"] - e) <= ESTIMATE_TOLERANCE * e
    assert after["snd_ssthresh"] <= after["snd_cwnd"] <= after["snd_ssthresh"] + 2
    assert ww["tcp_info"]["snd_ssthresh"] == after["snd_ssthresh"]  # no loss after it

    # sl_newreno on the same path and the same losses: the halving stays.
    nr_before, nr_during, nr_after = last_episode(nr["samples"], TCP_CA_RECOVERY)
    nr_halving = max(nr_before["snd_cwnd"] // 2, 2)
    print(
        f"sl_newreno: cwnd {nr_before['snd_cwnd']} before the loss, ssthresh "
        f"{nr_during[0]['snd_ssthresh']} in recovery, {nr_after['snd_ssthresh']} after"
    )
    assert abs(nr_after["snd_ssthresh"] - nr_halving) <= 2
    assert nr_after["snd_ssthresh"] == nr_during[0]["snd_ssthresh"]
    assert abs(e - nr_halving) > DISTINGUISHING * e
    assert abs(after["snd_ssthresh"] - nr_after["snd_ssthresh"]) > ESTIMATE_TOLERANCE * e


# The timeout test: the same path and losses, and 4 s into the transfer (after the second
# loss's recovery, which ends about 3.2 s in for sl_westwood and 2.6 s for sl_newreno; a
# timeout inside a recovery does not reduce ssthresh again) a 0.35 s outage: it
# swallows the window in flight and the tail-loss probe (sent 2 RTT after the last
# segment), so only the retransmission timeout (at least 200 ms) recovers.
BLACKOUT = (4.0, 0.35)
BLACKOUT_SIZE = 8_000_000


def test_ssthresh_after_timeout_is_the_bandwidth_estimate(built: Path) -> None:
    with emulated_path(f"w-{os.getpid()}-wt", LINK_RATE_BPS, ONE_WAY_DELAY_MS) as link:
        ww = run_on_link(built, link, CA_NAME, BLACKOUT_SIZE, BLACKOUT)
        nr = run_on_link(built, link, "sl_newreno", BLACKOUT_SIZE, BLACKOUT)

    # sl_westwood (CA_EVENT_LOSS): ssthresh is the estimate as it stood at the last ACK
    # before the outage (no ACK, no sample); cwnd restarts from 1 (the kernel's part).
    before, during, _ = last_episode(ww["samples"], TCP_CA_LOSS)
    assert before["ca_state"] < TCP_CA_RECOVERY, "the outage overlapped a fast recovery"
    last_ack = max(
        (s for s in ww["samples"] if s["t"] <= during[0]["t"]), key=lambda s: s["bytes_acked"]
    )
    last_ack = min(
        (s for s in ww["samples"] if s["bytes_acked"] == last_ack["bytes_acked"]),
        key=lambda s: s["t"],
    )
    expected = westwood_expected(ww["samples"], before, last_ack["t"])
    e = expected["ssthresh"]
    halving = max(before["snd_cwnd"] // 2, 2)
    print(
        f"\nsl_westwood: cwnd {before['snd_cwnd']} before the timeout, ssthresh "
        f"{during[0]['snd_ssthresh']} and cwnd {during[0]['snd_cwnd']} after it; expected "
        f"{e:.1f} from {expected['rate_mbps']:.2f} Mbit/s over {expected['span_s']:.2f} s x "
        f"{expected['rtt_min_jiffies']} jiffies"
    )
    assert abs(e - halving) > DISTINGUISHING * e, "this timeout does not tell the two apart"
    assert abs(during[0]["snd_ssthresh"] - e) <= ESTIMATE_TOLERANCE * e
    assert min(s["snd_cwnd"] for s in during) == 1

    # sl_newreno: half the window it had when the timeout fired.
    nr_before, nr_during, _ = last_episode(nr["samples"], TCP_CA_LOSS)
    assert nr_before["ca_state"] < TCP_CA_RECOVERY, "the outage overlapped a fast recovery"
    print(
        f"sl_newreno: cwnd {nr_before['snd_cwnd']} before the timeout, ssthresh "
        f"{nr_during[0]['snd_ssthresh']} after it"
    )
    assert abs(nr_during[0]["snd_ssthresh"] - max(nr_before["snd_cwnd"] // 2, 2)) <= 2
    assert abs(during[0]["snd_ssthresh"] - nr_during[0]["snd_ssthresh"]) > ESTIMATE_TOLERANCE * e
