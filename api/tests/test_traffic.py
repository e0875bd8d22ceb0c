"""The traffic generator over real loopback sockets: exact byte counts and completions."""

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from satlab.traffic import object_sizes

TOL_S = 0.1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gen(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "satlab.traffic", *args], stdout=subprocess.PIPE, text=True
    )


def _report(gen: subprocess.Popen[str]) -> Any:
    """What a generator printed when it ended."""
    return json.loads(gen.communicate(timeout=30)[0])


@contextlib.contextmanager
def _sink() -> Iterator[tuple[list[str], dict[str, Any]]]:
    """A sink on a free loopback port for the duration of the block. Yields the senders'
    destination arguments, and the dict the sink's report fills once the block has ended (the
    sink stopped with SIGTERM)."""
    port = _free_port()
    sink = _gen("sink", "--port", str(port))
    got: dict[str, Any] = {}
    try:
        time.sleep(0.5)
        yield ["--dst", "127.0.0.1", "--port", str(port)], got
    finally:
        sink.send_signal(signal.SIGTERM)
    got.update(json.loads(sink.communicate(timeout=10)[0]))


def test_bulk_bytes_arrive_exactly_over_parallel_connections() -> None:
    with _sink() as (dst, got):
        out = _report(_gen("bulk", *dst, "--bytes", "3000001", "--parallel", "3"))
        assert all(c["complete"] for c in out["connections"])
        assert sum(c["bytes_sent"] for c in out["connections"]) == 3000001
    assert sum(c["bytes"] for c in got["connections"]) == 3000001
    assert all(c["t_eof"] is not None for c in got["connections"])


def test_udp_sequence_lets_the_sink_count_losses() -> None:
    with _sink() as (dst, got):
        out = _report(_gen("udp", *dst, "--rate", "2e6", "--size", "1000", "--duration", "0.5"))
        time.sleep(0.2)
    assert 100 <= out["packets_sent"] <= 130  # 2 Mbit/s of 1000-byte packets for 0.5 s = 125
    assert got["udp"]["packets"] == out["packets_sent"]
    assert got["udp"]["max_seq"] == out["packets_sent"] - 1


def test_object_sizes_follow_the_requested_mean() -> None:
    for dist in ("exponential", "pareto"):
        sizes = object_sizes(20000, dist, 10000, 2.5, seed=3)
        assert abs(sum(sizes) / len(sizes) - 10000) < 800, dist
    assert object_sizes(5, "exponential", 100, 1.2, seed=1) == object_sizes(
        5, "exponential", 100, 1.2, seed=1
    )


def test_senders_start_and_stop_at_their_times() -> None:
    """Absolute CLOCK_MONOTONIC start and stop times, whenever the process started. On loopback
    a byte takes microseconds, so the sink sees each flow within a few ms of its times (TOL_S
    allows for a loaded machine's scheduling)."""
    with _sink() as (common, got):
        # Late enough for three interpreters to be up even on a heavily loaded machine (2 s
        # seen at a load of 15 on 2 cores); a sender up late would start late.
        t0 = time.monotonic() + 4
        bulk = _gen(
            "bulk",
            *common,
            "--duration",
            "5",
            "--start-at",
            repr(t0 + 1),
            "--stop-at",
            repr(t0 + 2),
        )
        # A byte count far beyond what loopback carries in 1.5 s: the stop time comes first.
        cut = _gen(
            "bulk",
            *common,
            "--bytes",
            str(1 << 40),
            "--parallel",
            "2",
            "--start-at",
            repr(t0 + 0.5),
            "--stop-at",
            repr(t0 + 1.5),
        )
        udp = _gen(
            "udp", *common, "--rate", "1e6", "--start-at", repr(t0 + 0.5), "--stop-at", repr(t0 + 1)
        )
        outs = [_report(p) for p in (bulk, cut, udp)]
    bulk_out, cut_out, udp_out = outs
    (conn,) = bulk_out["connections"]
    assert abs(conn["t_start"] - (t0 + 1)) < TOL_S and abs(bulk_out["t_stop"] - (t0 + 2)) < TOL_S
    assert not conn["complete"]  # a duration flow stopped before its duration is not whole
    assert not any(c["complete"] for c in cut_out["connections"])
    assert abs(cut_out["t_stop"] - (t0 + 1.5)) < TOL_S
    by_port = {int(c["peer"].rsplit(":", 1)[1]): c for c in got["connections"]}
    seen = by_port[conn["local_port"]]
    assert abs(seen["t_first"] - (t0 + 1)) < TOL_S and abs(seen["t_last"] - (t0 + 2)) < TOL_S
    assert 0 < seen["bytes"] <= conn["bytes_sent"]  # what was still queued at the reset is not
    assert (
        abs(udp_out["t_start"] - (t0 + 0.5)) < TOL_S and abs(udp_out["t_stop"] - (t0 + 1)) < TOL_S
    )
    assert abs(got["udp"]["t_first"] - (t0 + 0.5)) < TOL_S
    assert abs(got["udp"]["t_last"] - (t0 + 1)) < TOL_S
    assert 51 <= udp_out["packets_sent"] <= 54  # 1 Mbit/s of 1200-byte packets for 0.5 s: 52.1
