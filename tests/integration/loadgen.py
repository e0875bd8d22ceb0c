"""Line-rate UDP load through a system under test (the emulator, the naive forwarder), for the
emulator benchmark and the saturation test:

- ``udpblast()``: the C generator tests/bench/udpblast.c, built on first use (gcc);
- ``cpu_layout()`` / ``pinned()``: the generator on CPU 0, the system under test on the last CPU;
- ``gso_to_sink()``: gw0 set up for UDP GSO sending (16 packets a send, cut in gw-host) and a
  ``CountingSink`` installed: st-host counts and drops the load at st0's ingress (nftables).

On veth the receiving host's stack runs inside the sender's transmit call: a UDP socket receiver
in st-host would bill the system under test for a host's receive path and socket wake-ups (half
of the emulator's CPU at 2.4 Gbit/s, perf), and the generator and such a receiver sharing its
cores ran out of CPU before the emulator did.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from netns import REPO, Topology

UDPBLAST_SRC = REPO / "tests" / "bench" / "udpblast.c"
UDPBLAST_BIN = REPO / "tests" / "bench" / "build" / "udpblast"
SINK_PORT = 5001
#: UDP GSO segments per send of the generator (the kernel cuts them apart in gw-host)
GSO_SEGMENTS = 16


def udpblast() -> Path:
    """The generator's binary, (re)built when missing or older than its source."""
    if not UDPBLAST_BIN.exists() or UDPBLAST_SRC.stat().st_mtime > UDPBLAST_BIN.stat().st_mtime:
        UDPBLAST_BIN.parent.mkdir(parents=True, exist_ok=True)
        cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-o", str(UDPBLAST_BIN), str(UDPBLAST_SRC)]
        subprocess.run(cmd, check=True)
    return UDPBLAST_BIN


def cpu_layout() -> tuple[str | None, str | None]:
    """(generator CPU, system-under-test CPU) as `taskset -c` lists; no pinning on one CPU."""
    n = os.cpu_count() or 1
    return ("0", str(n - 1)) if n >= 2 else (None, None)


def pinned(cpu: str | None, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *argv] if cpu else argv


def gso_send_argv(dst: str, rate_bps: float, size: int, duration_s: float) -> list[str]:
    """udpblast sending `size`-byte IP packets at `rate_bps` with UDP GSO to the sink's port."""
    return [str(udpblast()), "send", dst, str(SINK_PORT), f"{rate_bps:.0f}", str(size),
            str(duration_s), "32", str(GSO_SEGMENTS)]  # fmt: skip


class CountingSink:
    """Counts and drops UDP to SINK_PORT at st0's ingress (nftables netdev hook, before IP)."""

    TABLE = "satlab_sink"

    def __init__(self, topo: Topology, ifname: str = "st0") -> None:
        self.topo = topo
        rules = (
            f"table netdev {self.TABLE} {{\n"
            f"  chain rx {{\n"
            f"    type filter hook ingress device {ifname} priority 0;\n"
            f"    udp dport {SINK_PORT} counter drop\n"
            f"  }}\n"
            f"}}\n"
        )
        subprocess.run(
            ["ip", "netns", "exec", topo.st, "nft", "-f", "-"],
            input=rules,
            text=True,
            check=True,
            capture_output=True,
        )

    def packets(self) -> int:
        listing = ["nft", "-j", "list", "table", "netdev", self.TABLE]
        out = self.topo.sh(self.topo.st, listing).stdout
        for item in json.loads(out)["nftables"]:
            for expr in item.get("rule", {}).get("expr", []):
                if "counter" in expr:
                    return int(expr["counter"]["packets"])
        raise RuntimeError(f"no counter in nft table {self.TABLE}: {out[:200]}")

    def settle(self, expected: int, start: int, timeout_s: float = 3.0) -> int:
        """Packets counted since `start`, once all `expected` arrived or the count stopped
        moving for 300 ms (a link holds its delay's worth of them when the sender stops)."""
        deadline = time.monotonic() + timeout_s
        last, still_since = -1, time.monotonic()
        while True:
            got = self.packets() - start
            now = time.monotonic()
            if got >= expected or now >= deadline:
                return got
            if got != last:
                last, still_since = got, now
            elif now - still_since >= 0.3:
                return got
            time.sleep(0.05)


def gso_to_sink(topo: Topology) -> CountingSink:
    """Sets the topology up for GSO load into a counting sink; returns the sink.

    gw0 offers tx checksumming (UDP GSO needs it) but not UDP segmentation, so the kernel cuts
    the GSO sends into wire-sized packets in gw-host, before they reach the system under test.
    The packets leave with partial checksums: the emulator completes them itself (counted
    against it); for the naive forwarder the kernel completes them in the generator's context."""
    topo.sh(topo.gw, ["ethtool", "-K", "gw0", "tx", "on", "tx-udp-segmentation", "off"])
    return CountingSink(topo)
