"""IP-ERN: the gw edge's XCP controller (ERN traffic only, capacity = the link's current useful
rate) drives hand-set consumers, Python senders that obey the feedback (cwnd += echoed feedback,
sent ACK-clocked), to the link capacity, and a MODCOD drop changes the feedback within one
control interval."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gwnet import (
    CLI,
    SRV,
    RawSender,
    Topology,
    ern_option,
    find_option,
    tcp_segment,
)

from satlab.testbed.topology import socket_in_netns

PORT = 7000
PAYLOAD = b"e" * 1000
SIZE = 20 + 20 + 20 + len(PAYLOAD)  # IP packet with the ERN option
FEEDBACK_NONE = 2**31 - 1


@dataclass
class Flow:
    sport: int
    cwnd: float = 2 * SIZE
    rtt: float = 0.25
    seq: int = 0
    sent: dict[int, float] = field(default_factory=dict)
    acked_bytes: int = 0


def _ip_sock(ns: str) -> socket.socket:
    s = socket_in_netns(ns, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind(("eth0", 0x0800))
    s.settimeout(0.05)
    return s


class Consumers:
    """Senders in srv, an echoing receiver in cli, the ACK reader in srv: three threads."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.flows: dict[int, Flow] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.tx_srv = RawSender(topo.ns("srv"))
        self.tx_cli = RawSender(topo.ns("cli"))
        self.rx_cli = _ip_sock(topo.ns("cli"))
        self.rx_srv = _ip_sock(topo.ns("srv"))
        self.threads = [
            threading.Thread(target=f, daemon=True) for f in (self._send, self._echo, self._acks)
        ]
        for t in self.threads:
            t.start()

    def add(self, sport: int) -> None:
        with self.lock:
            self.flows[sport] = Flow(sport)

    def _send(self) -> None:
        """Window-based and ACK-clocked, as an XCP sender: a segment goes out whenever the bytes
        in flight are below cwnd; a segment unacknowledged after 3 RTTs counts as lost."""
        while not self.stop.is_set():
            now = time.monotonic()
            with self.lock:
                flows = list(self.flows.values())
            for f in flows:
                with self.lock:
                    for seq in [q for q, t in f.sent.items() if now - t > 3 * f.rtt]:
                        del f.sent[seq]
                    inflight = len(f.sent) * SIZE
                while inflight + SIZE <= f.cwnd:
                    opt = ern_option(int(f.cwnd), int(f.rtt * 1e6), FEEDBACK_NONE)
                    self.tx_srv.send(tcp_segment(SRV, CLI, f.sport, PORT, f.seq, PAYLOAD, opt))
                    with self.lock:
                        f.sent[f.seq] = now
                    f.seq += len(PAYLOAD)
                    inflight += SIZE
            time.sleep(0.001)

    def _ern_segments(self, sock: socket.socket, port_at: int) -> Iterator[tuple[bytes, bytes]]:
        """(TCP header onwards, ERN option) of each segment `sock` receives with the ERN option
        and PORT at offset `port_at` of its TCP header (0: from PORT, 2: to PORT), until stop."""
        while not self.stop.is_set():
            try:
                data = sock.recv(65535)[14:]
            except (TimeoutError, OSError):
                continue
            tcp = data[20:]
            if data[9] != 6 or struct.unpack("!H", tcp[port_at : port_at + 2])[0] != PORT:
                continue
            o = find_option(tcp, 0x4552, 20)
            if o is not None:
                yield tcp, o

    def _echo(self) -> None:
        for tcp, o in self._ern_segments(self.rx_cli, port_at=2):
            fb = struct.unpack("!i", o[12:16])[0]
            sport, seq = struct.unpack("!HI", tcp[0:2] + tcp[4:8])
            ack = tcp_segment(
                CLI,
                SRV,
                PORT,
                sport,
                1,
                b"",
                ern_option(0, 0, 0, fb),
                flags=0x10,
                ack=seq + len(PAYLOAD),
            )
            self.tx_cli.send(ack)

    def _acks(self) -> None:
        for tcp, o in self._ern_segments(self.rx_srv, port_at=0):
            rev = struct.unpack("!i", o[16:20])[0]
            dport, ackno = struct.unpack("!HI", tcp[2:4] + tcp[8:12])
            with self.lock:
                f = self.flows.get(dport)
            if f is None:
                continue
            with self.lock:
                t = f.sent.pop(ackno - len(PAYLOAD), None)
            if t is not None:
                f.rtt = 0.8 * f.rtt + 0.2 * (time.monotonic() - t)
            if rev != FEEDBACK_NONE:
                f.cwnd = max(f.cwnd + rev, float(SIZE))
            f.acked_bytes += SIZE

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(2)
        for s in (self.rx_cli, self.rx_srv):
            s.close()
        self.tx_srv.close()
        self.tx_cli.close()


def _mean_input(topo: Topology, seconds: float) -> tuple[float, float, dict[str, Any]]:
    """Mean ERN input rate and capacity (bytes/s) over the controller's intervals in `seconds`."""
    seen: dict[int, dict[str, Any]] = {}
    end = time.monotonic() + seconds
    st: dict[str, Any] = {}
    while time.monotonic() < end:
        st = topo.gw_status("gw")
        last = st["ern"]["last"]
        seen[last["t_ns"]] = last
        time.sleep(0.05)
    lasts = list(seen.values())
    if os.environ.get("G5_DEBUG"):
        for x in sorted(lasts, key=lambda x: x["t_ns"]):
            print(
                f"t={x['t_ns'] / 1e9:.2f} d={x['d_s']:.3f} in={x['input_bytes_per_s']:.0f} "
                f"cap={x['capacity_bytes_per_s']:.0f} q={x['queue_bytes']:.0f} phi={x['phi']:.0f}"
            )
    inp = sum(x["input_bytes_per_s"] * x["d_s"] for x in lasts) / sum(x["d_s"] for x in lasts)
    cap = sum(x["capacity_bytes_per_s"] for x in lasts) / len(lasts)
    return inp, cap, st


def test_feedback_drives_ern_input_to_capacity_and_follows_a_modcod_drop(topo: Topology) -> None:
    topo.start_emulator(
        # ACM with a 6 dB margin: a 5.5 dB fade leaves the current MODCOD decodable while the ACM
        # loop catches up (no erasures), then ACM steps down (8PSK 9/10 -> 8PSK 2/3)
        topo.emulator_config(
            forward={
                "symbol_rate_baud": 0.5e6,
                "delay_ms": 100.0,
                "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 6.0},
            }
        )
    )
    topo.start_gateway(
        topo.gateway_config(
            "gw", ern={"enabled": True, "ports": [PORT], "initial_interval_ms": 300}
        )
    )
    topo.start_gateway(topo.gateway_config("st"))
    for role in ("srv", "cli"):  # the kernels would answer the crafted segments with RSTs
        topo.sh(
            role,
            ["iptables", "-A", "OUTPUT", "-p", "tcp", "--tcp-flags", "RST", "RST", "-j", "DROP"],
        )
    c = Consumers(topo)
    try:
        c.add(6001)
        time.sleep(1.5)
        c.add(6002)
        time.sleep(5.0)
        inp, cap, st = _mean_input(topo, 3.0)
        assert st["counters"]["ern_feedback_lowered"] > 100
        assert abs(inp - cap) <= 0.12 * cap, (inp, cap)
        with c.lock:
            rates = [f.cwnd / f.rtt for f in c.flows.values()]
        assert min(rates) > 0.2 * max(rates), rates  # both flows get a real share

        # MODCOD drop: 5.5 dB of rain on the forward downlink.
        before = st["egress"]["useful_rate_bps"]
        topo.emu("POST", "/control", {"direction": "forward", "attenuation_db": 5.5})
        changed_at = None
        decisions: dict[int, dict[str, Any]] = {}  # intervals computed with the new capacity
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and len(decisions) < 2:
            s = topo.gw_status("gw")
            if changed_at is None and s["egress"]["useful_rate_bps"] < 0.9 * before:
                changed_at = s["egress"]["useful_rate_changed_s"]  # gateway clock
            last = s["ern"]["last"]
            if (
                changed_at is not None
                and last["t_ns"] * 1e-9 > changed_at
                and last["capacity_bytes_per_s"] < 0.9 * cap
            ):
                decisions[last["t_ns"]] = last
            time.sleep(0.02)
        assert changed_at is not None and len(decisions) == 2, decisions
        first, second = (decisions[k] for k in sorted(decisions))
        # the first interval that ends after the rate changed already uses the new capacity
        lag = first["t_ns"] * 1e-9 - changed_at
        assert 0 < lag <= first["d_s"], (lag, first["d_s"])
        # and the aggregate feedback turns negative: at once (spare bandwidth < 0), or one interval
        # later when the ACK-clocked senders slowed with the queue and it is the queue term
        # (-beta Q) that asks them to drain it
        assert min(first["phi"], second["phi"]) < 0, (first, second)

        time.sleep(4.0)
        inp2, cap2, _ = _mean_input(topo, 3.0)
        assert cap2 < 0.8 * cap
        assert abs(inp2 - cap2) <= 0.15 * cap2, (inp2, cap2)
        print(
            f"ERN: capacity {cap:.0f} B/s input {inp:.0f} B/s; after the MODCOD drop capacity "
            f"{cap2:.0f} B/s input {inp2:.0f} B/s; feedback changed {lag * 1000:.0f} ms after "
            f"the rate (interval {first['d_s'] * 1000:.0f} ms)"
        )
    finally:
        c.close()
