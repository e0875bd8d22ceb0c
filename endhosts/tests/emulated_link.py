"""A sender and a receiver namespace joined by the project's emulator (a link with real
delay and rate), for the tests whose congestion control needs a bandwidth-delay product.

    <prefix>-s (sender, 10.77.0.1) -- veth -- [egw | <prefix>-e: satlab-emulator | est]
        -- veth -- <prefix>-r (receiver, 10.77.0.2)

This kernel has no sch_netem, and a delay line is the emulator's job anyway
(no netem). Both directions are `kind: fixed` links: a rate and a one-way
delay, a drop-tail queue deep enough that the tests' own drops are the only losses.
Everything is removed on exit (the emulator process by its PID, then the namespaces),
also when the test fails.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ca_harness import ENDHOSTS, TRANSFER, run

from satlab.bounded import stop_processes
from satlab.testbed.topology import WireEnd, bare_wire, new_namespace

EMULATOR = ENDHOSTS.parent / "target" / "release" / "satlab-emulator"
SENDER_IP, RECEIVER_IP = "10.77.0.1", "10.77.0.2"


@dataclass(frozen=True)
class LinkedHosts:
    sender: str
    receiver: str
    emulator: str


@contextlib.contextmanager
def emulated_path(
    prefix: str, rate_bps: float, one_way_delay_ms: float, bit_errors: dict[str, Any] | None = None
) -> Iterator[LinkedHosts]:
    """Builds the three namespaces and runs the emulator between them; yields their names.
    `bit_errors` is the forward link's bit-error model (the emulator's `bit_errors` section)."""
    if not EMULATOR.exists():
        raise AssertionError(f"{EMULATOR} is missing: run scripts/setup.sh (cargo build)")
    path = LinkedHosts(f"{prefix}-s", f"{prefix}-r", f"{prefix}-e")
    created: list[str] = []
    emulator: subprocess.Popen[bytes] | None = None
    with tempfile.TemporaryDirectory(prefix="satlab-endhosts-") as tmp:
        try:
            for ns in (path.sender, path.emulator, path.receiver):
                new_namespace(ns)
                created.append(ns)
            ends = (
                WireEnd(path.sender, "ws0", SENDER_IP),
                WireEnd(path.receiver, "wr0", RECEIVER_IP),
            )
            bare_wire(path.emulator, ("egw", "est"), ends, mtu=1500)
            for ns, ifname in ((path.sender, "ws0"), (path.emulator, "egw"),
                               (path.receiver, "wr0"), (path.emulator, "est")):  # fmt: skip
                # Wire-sized segments: the window counts real packets, as use_real_segments().
                run("ip", "netns", "exec", ns, "ethtool", "-K", ifname,
                    "tso", "off", "gso", "off", "gro", "off")  # fmt: skip
            # Every connection starts from scratch (no ssthresh or RTT cached per peer).
            run("ip", "netns", "exec", path.sender, "sysctl", "-qw",
                "net.ipv4.tcp_no_metrics_save=1")  # fmt: skip
            link = {"kind": "fixed", "rate_bps": rate_bps, "delay_ms": one_way_delay_ms,
                    "queue": {"limit_packets": 5000, "limit_bytes": 8_000_000}}  # fmt: skip
            config = {
                "ports": {"gw": {"interface": "egw"}, "st": {"interface": "est"}},
                "telemetry": {"socket": f"{tmp}/telemetry.sock", "events": "none"},
                "forward": {**link, "bit_errors": bit_errors} if bit_errors else link,
                "return": link,
            }
            config_file = Path(tmp) / "link.yaml"
            config_file.write_text(json.dumps(config))  # JSON is YAML
            log = Path(tmp) / "emulator.log"
            with log.open("wb") as log_file:  # a file, not a pipe nobody reads
                emulator = subprocess.Popen(
                    ["ip", "netns", "exec", path.emulator, str(EMULATOR), "--config",
                     str(config_file)],
                    stdout=subprocess.DEVNULL, stderr=log_file,
                )  # fmt: skip
            _wait_for_path(path, emulator, log)
            yield path
        finally:
            if emulator is not None:
                stop_processes([emulator], grace_s=10)
            for ns in reversed(created):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _wait_for_path(path: LinkedHosts, emulator: subprocess.Popen[bytes], log: Path) -> None:
    """Until a ping crosses the link (the emulator has opened its ports)."""
    deadline = time.monotonic() + 15
    while True:
        if emulator.poll() is not None:
            raise AssertionError(
                f"satlab-emulator exited {emulator.returncode}:\n{log.read_text()}"
            )
        ping = subprocess.run(
            ["ip", "netns", "exec", path.sender, "ping", "-c1", "-W1", RECEIVER_IP],
            capture_output=True, check=False,
        )  # fmt: skip
        if ping.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"no ping across the emulated link:\n{ping.stdout!r}")


def transfer_across(
    path: LinkedHosts, size: int, port: int, cc: str, sample_ms: float = 0
) -> dict[str, Any]:
    """One transfer from the sender namespace to the receiver namespace.

    Returns the sender's report (tcp_transfer.py --connect) with "received" and "intact"
    from the receiver's.
    """
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", path.receiver, sys.executable, str(TRANSFER),
         "--listen", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        sent: dict[str, Any] = json.loads(
            run("ip", "netns", "exec", path.sender, sys.executable, str(TRANSFER),
                "--connect", RECEIVER_IP, "--port", str(port), "--cc", cc,
                "--bytes", str(size), "--sample-ms", str(sample_ms), timeout=120)
        )  # fmt: skip
        out, err = receiver.communicate(timeout=30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    if receiver.returncode != 0:
        raise AssertionError(f"receiver exited {receiver.returncode}:\n{err}")
    received = json.loads(out)
    sent["received"] = received["received"]
    sent["intact"] = received["sha256"] == sent["sha256"]
    return sent
