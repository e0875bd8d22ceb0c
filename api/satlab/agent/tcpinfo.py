"""Per-socket TCP state through INET_DIAG netlink (TCP_INFO + congestion control name), and the
namespace's TCP counters. Times are CLOCK_MONOTONIC seconds: the same clock in every namespace."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from pyroute2.netlink.diag import DiagSocket

TCP_ESTABLISHED_MASK = 1 << 1
INET_DIAG_INFO = 1 << (2 - 1)
INET_DIAG_CONG = 1 << (4 - 1)


class Diag:
    def __enter__(self) -> Diag:
        self.sock = DiagSocket()
        self.sock.bind()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.sock.close()

    def sample(self, ports: set[int]) -> list[dict[str, Any]]:
        """One sample of every established TCP socket whose local or remote port is in `ports`."""
        now = time.monotonic()
        out = []
        msgs = self.sock.get_sock_stats(
            family=socket.AF_INET,
            states=TCP_ESTABLISHED_MASK,
            extensions=INET_DIAG_INFO | INET_DIAG_CONG,
        )
        for m in msgs:
            sport, dport = m.get("idiag_sport"), m.get("idiag_dport")
            if sport not in ports and dport not in ports:
                continue
            info = m.get_attr("INET_DIAG_INFO")
            if info is None:
                continue
            out.append(
                {
                    "t": now,
                    "sport": sport,
                    "dport": dport,
                    "cc": m.get_attr("INET_DIAG_CONG"),
                    "cwnd": info.get("tcpi_snd_cwnd"),
                    "ssthresh": info.get("tcpi_snd_ssthresh"),
                    "srtt_us": info.get("tcpi_rtt"),
                    "rttvar_us": info.get("tcpi_rttvar"),
                    "retrans_total": info.get("tcpi_total_retrans"),
                    "delivery_rate_bps": 8 * (info.get("tcpi_delivery_rate") or 0),
                    "bytes_acked": info.get("tcpi_bytes_acked"),
                    "bytes_received": info.get("tcpi_bytes_received"),
                    "mss": info.get("tcpi_snd_mss"),
                }
            )
        return out


def netstat() -> dict[str, int]:
    """TcpExt and Tcp counters of this network namespace, as `TcpExt.Name` keys."""
    counters: dict[str, int] = {}
    for path in (Path("/proc/net/netstat"), Path("/proc/net/snmp")):
        lines = path.read_text().splitlines()
        for head, vals in zip(lines[::2], lines[1::2], strict=True):
            group, names = head.split(":", 1)
            if group not in ("TcpExt", "Tcp"):
                continue
            for n, v in zip(names.split(), vals.split(":", 1)[1].split(), strict=True):
                counters[f"{group}.{n}"] = int(v)
    return counters
