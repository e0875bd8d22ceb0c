"""Small traffic helpers for the integration tests: a paced UDP sender, a UDP receiver that records
every arrival, and a TCP bulk transfer; all with sockets made inside the test's namespaces."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from checksum import inet_checksum
from netns import Topology

from satlab.testbed.topology import socket_in_netns

SO_NO_CHECK = 11  # IPv4 UDP: send with checksum 0, so payload bit errors reach the application
SO_TIMESTAMPNS = 35  # asm-generic: SO_TIMESTAMPNS_OLD (struct timespec, 64-bit)
HDR = struct.Struct("!QQ")  # sequence number, send time (ns, CLOCK_MONOTONIC)


def payload(seq: int, size: int) -> bytes:
    """A deterministic UDP payload for sequence number seq (header + repeating pattern)."""
    body = bytes((seq * 7 + i) & 0xFF for i in range(256))
    rest = size - HDR.size
    return HDR.pack(seq, 0) + (body * (rest // 256 + 1))[:rest]


@dataclass
class Arrival:
    t: float  # time.monotonic() at receipt
    length: int  # UDP payload bytes
    seq: int
    sent_ns: int
    intact: bool  # payload equals what payload(seq) would be (ignoring the send-time field)


@dataclass
class UdpReceiver:
    topo: Topology
    ns: str
    port: int = 5001
    check_payload: bool = False
    arrivals: list[Arrival] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock = socket_in_netns(self.ns, socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.sock.bind(("0.0.0.0", self.port))
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            t = time.monotonic()
            if len(data) < HDR.size:
                self.arrivals.append(Arrival(t, len(data), -1, 0, False))
                continue
            seq, sent = HDR.unpack_from(data)
            intact = True
            if self.check_payload:
                ref = payload(seq, len(data)) if seq < 1 << 32 else b""
                intact = data[HDR.size :] == ref[HDR.size :] and len(ref) == len(data)
            self.arrivals.append(Arrival(t, len(data), seq, sent, intact))

    def wait_idle(self, idle_s: float = 1.0, timeout: float = 30.0) -> None:
        """Wait until no packet arrived for idle_s (after at least one arrived) or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.arrivals[-1].t if self.arrivals else None
            if last is not None and time.monotonic() - last > idle_s:
                return
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(2)
        self.sock.close()

    def rate_bps(self, t0: float, t1: float, overhead_bytes: int = 0) -> float:
        """Bits/s of (payload + overhead_bytes) per packet arriving in [t0, t1)."""
        sel = [a for a in self.arrivals if t0 <= a.t < t1]
        if len(sel) < 2:
            return 0.0
        # count packets after the first one in the window over the span they cover
        span = sel[-1].t - sel[0].t
        bits = sum((a.length + overhead_bytes) * 8 for a in sel[1:])
        return bits / span if span > 0 else 0.0


@contextlib.contextmanager
def udp_receiver(
    topo: Topology, ns: str, port: int = 5001, check_payload: bool = False
) -> Iterator[UdpReceiver]:
    r = UdpReceiver(topo, ns, port, check_payload)
    try:
        yield r
    finally:
        r.close()


def send_udp(
    topo: Topology,
    ns: str,
    dst: str,
    port: int,
    count: int,
    size: int,
    rate_bps: float,
    no_check: bool = False,
    stop: Callable[[], bool] | None = None,
    src: str | None = None,
) -> int:
    """Send count UDP payloads of size bytes, paced at rate_bps of IP bits (payload + 28), from
    address src if given. Returns the number sent."""
    s = socket_in_netns(ns, socket.AF_INET, socket.SOCK_DGRAM)
    try:
        if src is not None:
            s.bind((src, 0))
        if no_check:
            s.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        s.connect((dst, port))
        interval = (size + 28) * 8 / rate_bps
        pre = [bytearray(payload(i, size)) for i in range(min(count, 4096))]
        t0 = time.monotonic()
        for i in range(count):
            if stop is not None and stop():
                return i
            due = t0 + i * interval
            now = time.monotonic()
            if due > now + 0.0005:
                time.sleep(due - now)
            buf = pre[i] if i < len(pre) else bytearray(payload(i, size))
            struct.pack_into("!Q", buf, 8, time.monotonic_ns())
            s.send(buf)
        return count
    finally:
        s.close()


@dataclass(frozen=True)
class UdpFlow:
    dst: str
    port: int
    rate_bps: float  # IP bits (payload + 28 bytes of headers)
    src: str | None = None


@contextlib.contextmanager
def udp_senders(
    topo: Topology, ns: str, flows: list[UdpFlow], seconds: float, size: int
) -> Iterator[float]:
    """Sends every flow from ns at once, each in its own thread for about `seconds` at its rate;
    yields the start time (monotonic) and waits for every sender when the block ends."""
    threads = [
        threading.Thread(
            target=send_udp,
            args=(topo, ns, f.dst, f.port, int(seconds * f.rate_bps / ((size + 28) * 8)), size),
            kwargs={"rate_bps": f.rate_bps, "src": f.src},
        )
        for f in flows
    ]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    try:
        yield t0
    finally:
        for th in threads:
            th.join()


@dataclass
class TcpResult:
    sent: int
    received: int
    sent_sha256: str
    received_sha256: str
    seconds: float


class _Sink:
    def __init__(self) -> None:
        self.n = 0
        self.h = hashlib.sha256()


def tcp_transfer(
    topo: Topology, src_ns: str, dst_ns: str, dst_ip: str, nbytes: int, port: int = 5201
) -> TcpResult:
    """Send nbytes of deterministic data from src_ns to dst_ip:port (listener in dst_ns)."""
    lsock = socket_in_netns(dst_ns, socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(1)
    lsock.settimeout(30)
    got = _Sink()
    err: list[BaseException] = []

    def serve() -> None:
        try:
            conn, _ = lsock.accept()
            conn.settimeout(30)
            with conn:
                while True:
                    b = conn.recv(1 << 20)
                    if not b:
                        break
                    got.n += len(b)
                    got.h.update(b)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            err.append(e)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    block = bytes(range(256)) * 4096  # 1 MiB pattern
    h = hashlib.sha256()
    t0 = time.monotonic()
    c = socket_in_netns(src_ns, socket.AF_INET, socket.SOCK_STREAM)
    try:
        c.settimeout(30)
        c.connect((dst_ip, port))
        left = nbytes
        while left:
            chunk = block[: min(left, len(block))]
            c.sendall(chunk)
            h.update(chunk)
            left -= len(chunk)
        c.shutdown(socket.SHUT_WR)
        th.join(60)
    finally:
        c.close()
        lsock.close()
    if err:
        raise err[0]
    return TcpResult(nbytes, got.n, h.hexdigest(), got.h.hexdigest(), time.monotonic() - t0)


def icmp_rtts_ms(
    ns: str, dst: str, count: int = 10, interval: float = 0.2, size: int = 56
) -> list[float | None]:
    """ICMP echo RTTs (ms, microsecond precision: iputils ping prints whole ms above 100 ms).
    Send time is read just before sendto(), receive time is the kernel's SO_TIMESTAMPNS; both
    CLOCK_REALTIME. None for a reply that did not come within 3 s."""
    s = socket_in_netns(ns, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    ident = (os.getpid() ^ threading.get_ident()) & 0xFFFF
    out: list[float | None] = []
    try:
        for seq in range(count):
            body = bytes(i & 0xFF for i in range(size))
            hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
            pkt = struct.pack("!BBHHH", 8, 0, inet_checksum(hdr + body), ident, seq) + body
            t0 = time.time_ns()
            s.sendto(pkt, (dst, 0))
            deadline = time.monotonic() + 3.0
            rtt: float | None = None
            while rtt is None and time.monotonic() < deadline:
                s.settimeout(max(deadline - time.monotonic(), 0.001))
                try:
                    data, anc, _, _ = s.recvmsg(65536, 256)
                except TimeoutError:
                    break
                ihl = (data[0] & 0x0F) * 4
                typ, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
                if typ != 0 or rid != ident or rseq != seq:
                    continue
                for level, kind, val in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", val[:16])
                        rtt = (sec * 1_000_000_000 + nsec - t0) / 1e6
            out.append(rtt)
            time.sleep(interval)
    finally:
        s.close()
    return out
