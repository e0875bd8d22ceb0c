"""The project's traffic generator, run by host agents: `python -m satlab.traffic MODE ...`.

Modes: `sink` (receives TCP and UDP, counts unique bytes), `bulk` (exact bytes or a duration over n
parallel connections), `short` (N objects, sizes from a distribution, one connection each), `udp`
(constant rate or exponential on/off). Each prints one JSON line with its measurements when it ends
(SIGTERM ends a sink or a duration-less sender cleanly). Times are CLOCK_MONOTONIC seconds, the same
clock in every namespace, so sender and receiver times combine into completion times.

Every sender takes `--start-at T` and `--stop-at T`, CLOCK_MONOTONIC times: it waits until the first
before it connects or sends, and stops at the second. Absolute times on the shared clock keep a
flow's schedule exact however long the process took to start (an interpreter start-up and an agent
call are tens to hundreds of ms on a loaded machine). At its stop time a TCP sender aborts its
connection (a reset: what it had queued but not sent never leaves; what is in the network still
arrives), so the flow ends then rather than when a socket buffer has drained; a byte-count
transfer cut short is reported incomplete.

A data connection goes from the sending host to the receiving host's sink; a download is the server
sending to the client. A completion is when the sender, after its last byte and a FIN, sees the
sink's FIN: every byte was received by the application.
"""

from __future__ import annotations

import argparse
import json
import random
import selectors
import signal
import socket
import struct
import threading
import time
from typing import Any

CHUNK = 256 * 1024
CONNECT_RETRY_S = 5.0
stopping = threading.Event()


def _on_term(signum: int, frame: object) -> None:
    stopping.set()


def _tcp_socket(cc: str | None) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    return s


def sink(port: int) -> dict[str, Any]:
    sel = selectors.DefaultSelector()
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(1024)
    lsock.setblocking(False)
    usock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    usock.bind(("0.0.0.0", port))
    usock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, "accept")
    sel.register(usock, selectors.EVENT_READ, "udp")
    conns: list[dict[str, Any]] = []
    udp: dict[str, Any] = {"packets": 0, "bytes": 0, "t_first": None, "t_last": None, "max_seq": -1}
    buf = bytearray(CHUNK)
    while not stopping.is_set():
        for key, _ in sel.select(timeout=0.2):
            now = time.monotonic()
            if key.data == "accept":
                c, peer = lsock.accept()
                c.setblocking(False)
                rec = {
                    "peer": f"{peer[0]}:{peer[1]}",
                    "bytes": 0,
                    "t_accept": now,
                    "t_first": None,
                    "t_last": None,
                    "t_eof": None,
                }
                conns.append(rec)
                sel.register(c, selectors.EVENT_READ, rec)
            elif key.data == "udp":
                while True:
                    try:
                        n = usock.recv_into(buf)
                    except BlockingIOError:
                        break
                    udp["packets"] += 1
                    udp["bytes"] += n
                    udp["t_first"] = udp["t_first"] or now
                    udp["t_last"] = now
                    if n >= 8:
                        udp["max_seq"] = max(udp["max_seq"], struct.unpack_from("!Q", buf)[0])
            else:
                rec = key.data
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    n = sock.recv_into(buf)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionError:
                    n = 0
                if n:
                    rec["bytes"] += n
                    rec["t_first"] = rec["t_first"] or now
                    rec["t_last"] = now
                else:
                    rec["t_eof"] = now
                    sel.unregister(sock)
                    sock.close()
    return {"mode": "sink", "connections": conns, "udp": udp}


def _connect(dst: str, port: int, cc: str | None) -> tuple[socket.socket, float]:
    """A connected socket and the time its (successful) connect started. A refused connect is
    retried for a few seconds: the receiver's sink may still be starting on a loaded machine."""
    deadline = time.monotonic() + CONNECT_RETRY_S
    while True:
        s = _tcp_socket(cc)
        t_start = time.monotonic()
        try:
            s.connect((dst, port))
            return s, t_start
        except ConnectionRefusedError:
            s.close()
            if time.monotonic() > deadline or stopping.is_set():
                raise
            time.sleep(0.05)


def _left(t: float | None) -> float | None:
    """Seconds until CLOCK_MONOTONIC time t (None: no such time)."""
    return None if t is None else t - time.monotonic()


def wait_until(t: float | None) -> None:
    """Sleeps until CLOCK_MONOTONIC time t; a SIGTERM ends the wait."""
    left = _left(t)
    if left is not None and left > 0:
        stopping.wait(left)


def _send_bytes(
    dst: str,
    port: int,
    cc: str | None,
    nbytes: int | None,
    until: float | None,
    stop_at: float | None = None,
) -> dict[str, Any]:
    """One connection: writes nbytes (or until `until`), closes and waits for the sink's FIN;
    at `stop_at` it aborts wherever it is."""
    t_start = time.monotonic()
    try:
        s, t_start = _connect(dst, port, cc)
    except OSError as exc:
        return {"t_start": t_start, "error": str(exc), "bytes_sent": 0, "complete": False}
    sent = 0
    fin_seen = False
    try:
        t_conn = time.monotonic()
        payload = memoryview(bytes(CHUNK))
        ends = [t for t in (until, stop_at) if t is not None]
        write_end = min(ends) if ends else None
        while not stopping.is_set():
            want = CHUNK if nbytes is None else min(CHUNK, nbytes - sent)
            left = _left(write_end)
            if want <= 0 or (left is not None and left <= 0):
                break
            # A full send buffer blocks at most until the end of writing, so a stop is on time.
            s.settimeout(0.5 if left is None else min(0.5, left))
            try:
                sent += s.send(payload[:want])
            except TimeoutError:
                continue
        s.shutdown(socket.SHUT_WR)
        # Then the sink's FIN: every byte was received. A SIGTERM (the run's end) gives it a
        # second; the stop time cuts the wait.
        while True:
            left = _left(stop_at)
            if stopping.is_set():
                s.settimeout(1.0)
            elif left is not None and left <= 0:
                return _abort(s, t_start, t_conn, sent)
            else:
                s.settimeout(left)
            try:
                if not s.recv(4096):
                    fin_seen = True
                    break
            except TimeoutError:
                if stopping.is_set():
                    raise
        return {
            "t_start": t_start,
            "t_connected": t_conn,
            "t_end": time.monotonic(),
            "bytes_sent": sent,
            "local_port": s.getsockname()[1],
            "complete": nbytes is None or sent == nbytes,
        }
    except OSError as exc:
        return {"t_start": t_start, "error": str(exc), "bytes_sent": sent, "complete": False}
    finally:
        if not fin_seen and s.fileno() != -1:  # (_abort has closed it already)
            # Cut short (the run's end): reset rather than leave an orphan socket retransmitting
            # its unsent data for minutes after the testbed is gone, holding the congestion
            # control it used (an eBPF scheme's struct_ops map) and its namespace.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()


def _abort(s: socket.socket, t_start: float, t_conn: float, sent: int) -> dict[str, Any]:
    """Ends a connection at its stop time with a reset (SO_LINGER 0), and its record."""
    port = s.getsockname()[1]
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    return {
        "t_start": t_start,
        "t_connected": t_conn,
        "t_stop": time.monotonic(),
        "bytes_sent": sent,
        "local_port": port,
        "complete": False,
    }


def bulk(
    dst: str,
    port: int,
    cc: str | None,
    parallel: int,
    nbytes: int | None,
    duration: float | None,
    stop_at: float | None = None,
) -> dict[str, Any]:
    until = time.monotonic() + duration if duration else None
    shares: list[int | None] = [None] * parallel
    if nbytes is not None:
        shares = [nbytes // parallel] * parallel
        shares[0] = nbytes - (parallel - 1) * (nbytes // parallel)
    results: list[dict[str, Any]] = [{} for _ in range(parallel)]

    def one(i: int) -> None:
        results[i] = _send_bytes(dst, port, cc, shares[i], until, stop_at)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return _stopped({"mode": "bulk", "connections": results}, results)


def _stopped(out: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The result with `t_stop`, when the sender stopped on its stop time (the last of its
    connections aborted then)."""
    stops = [r["t_stop"] for r in records if "t_stop" in r]
    return {**out, "t_stop": max(stops)} if stops else out


def object_sizes(count: int, dist: str, mean: int, shape: float, seed: int) -> list[int]:
    rng = random.Random(seed)
    if dist == "fixed":
        return [mean] * count
    if dist == "exponential":
        return [max(1, round(rng.expovariate(1 / mean))) for _ in range(count)]
    # Pareto with the given shape, scaled so that its mean is `mean`.
    scale = mean * (shape - 1) / shape
    return [max(1, round(scale * rng.paretovariate(shape))) for _ in range(count)]


def short(
    dst: str, port: int, cc: str | None, sizes: list[int], stop_at: float | None = None
) -> dict[str, Any]:
    flows: list[dict[str, Any]] = []
    for size in sizes:
        if stopping.is_set():
            break
        if stop_at is not None and time.monotonic() >= stop_at:  # between two objects
            return {"mode": "short", "flows": flows, "t_stop": time.monotonic()}
        r = _send_bytes(dst, port, cc, size, None, stop_at)
        r["size"] = size
        if "t_end" in r:
            r["fct_s"] = r["t_end"] - r["t_start"]
        flows.append(r)
        if "t_stop" in r:  # during one
            break
    return _stopped({"mode": "short", "flows": flows}, flows)


def udp(
    dst: str,
    port: int,
    rate_bps: float,
    size: int,
    duration: float | None,
    onoff: tuple[float, float] | None,
    seed: int,
    stop_at: float | None = None,
) -> dict[str, Any]:
    """Paced UDP for `duration` seconds or until `stop_at` (the earlier); each datagram starts
    with a 64-bit sequence number so the sink counts losses."""
    rng = random.Random(seed)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap = size * 8 / rate_bps
    payload = bytearray(size)
    seq = sent_bytes = 0
    t0 = time.monotonic()
    end = min(t for t in (t0 + duration if duration else None, stop_at) if t is not None)
    next_send = t0
    on_until = t0 + rng.expovariate(1 / onoff[0]) if onoff else end
    while not stopping.is_set() and next_send < end:
        now = time.monotonic()
        if now >= on_until and onoff:  # an off period, then a new on period
            next_send = now + rng.expovariate(1 / onoff[1])
            on_until = next_send + rng.expovariate(1 / onoff[0])
            continue
        if next_send > now:
            time.sleep(min(next_send - now, 0.01))
            continue
        struct.pack_into("!Q", payload, 0, seq)
        try:
            s.sendto(payload, (dst, port))
            sent_bytes += size
            seq += 1
        except OSError:
            pass  # a full local queue is a loss like any other
        next_send += gap
    out: dict[str, Any] = {
        "mode": "udp",
        "packets_sent": seq,
        "bytes_sent": sent_bytes,
        "t_start": t0,
        "t_end": time.monotonic(),
    }
    if end == stop_at and not stopping.is_set():
        out["t_stop"] = out["t_end"]
    return out


def main() -> None:
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    ap = argparse.ArgumentParser(prog="satlab.traffic")
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("sink")
    p.add_argument("--port", type=int, required=True)
    for name in ("bulk", "short", "udp"):
        p = sub.add_parser(name)
        p.add_argument("--dst", required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--cc")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--start-at", type=float, help="CLOCK_MONOTONIC time to start at")
        p.add_argument("--stop-at", type=float, help="CLOCK_MONOTONIC time to stop at")
        if name == "bulk":
            p.add_argument("--parallel", type=int, default=1)
            p.add_argument("--bytes", type=int)
            p.add_argument("--duration", type=float)
        elif name == "short":
            p.add_argument("--count", type=int, required=True)
            p.add_argument("--dist", default="exponential")
            p.add_argument("--mean", type=int, required=True)
            p.add_argument("--shape", type=float, default=1.2)
        else:
            p.add_argument("--rate", type=float, required=True)
            p.add_argument("--size", type=int, default=1200)
            p.add_argument("--duration", type=float)
            p.add_argument("--onoff", type=float, nargs=2)
    a = ap.parse_args()
    if a.mode == "udp" and a.duration is None and a.stop_at is None:
        ap.error("udp: give --duration or --stop-at")
    if a.mode != "sink":
        wait_until(a.start_at)
    if a.mode == "sink":
        out = sink(a.port)
    elif a.mode == "bulk":
        out = bulk(a.dst, a.port, a.cc, a.parallel, a.bytes, a.duration, a.stop_at)
    elif a.mode == "short":
        sizes = object_sizes(a.count, a.dist, a.mean, a.shape, a.seed)
        out = short(a.dst, a.port, a.cc, sizes, a.stop_at)
    else:
        onoff = tuple(a.onoff) if a.onoff else None
        out = udp(a.dst, a.port, a.rate, a.size, a.duration, onoff, a.seed, a.stop_at)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
