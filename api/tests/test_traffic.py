"""The traffic generator over real loopback sockets: exact byte counts and completions."""

import json
import signal
import socket
import subprocess
import sys
import time

from satlab.traffic import object_sizes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gen(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "satlab.traffic", *args], stdout=subprocess.PIPE, text=True
    )


def test_bulk_bytes_arrive_exactly_over_parallel_connections() -> None:
    port = _free_port()
    sink = _gen("sink", "--port", str(port))
    try:
        time.sleep(0.5)
        sender = _gen(
            "bulk",
            "--dst",
            "127.0.0.1",
            "--port",
            str(port),
            "--bytes",
            "3000001",
            "--parallel",
            "3",
        )
        out = json.loads(sender.communicate(timeout=30)[0])
        assert all(c["complete"] for c in out["connections"])
        assert sum(c["bytes_sent"] for c in out["connections"]) == 3000001
    finally:
        sink.send_signal(signal.SIGTERM)
    got = json.loads(sink.communicate(timeout=10)[0])
    assert sum(c["bytes"] for c in got["connections"]) == 3000001
    assert all(c["t_eof"] is not None for c in got["connections"])


def test_udp_sequence_lets_the_sink_count_losses() -> None:
    port = _free_port()
    sink = _gen("sink", "--port", str(port))
    try:
        time.sleep(0.5)
        sender = _gen(
            "udp",
            "--dst",
            "127.0.0.1",
            "--port",
            str(port),
            "--rate",
            "2e6",
            "--size",
            "1000",
            "--duration",
            "0.5",
        )
        out = json.loads(sender.communicate(timeout=30)[0])
        time.sleep(0.2)
    finally:
        sink.send_signal(signal.SIGTERM)
    got = json.loads(sink.communicate(timeout=10)[0])
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
