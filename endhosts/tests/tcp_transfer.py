"""One bulk TCP transfer, run inside network namespaces.

Used by the tests as `ip netns exec NS python tcp_transfer.py ...`. By default both ends
run here, over loopback: a receiver thread accepts one connection and reads to EOF; the
sender selects a congestion control with setsockopt(TCP_CONGESTION) (or keeps the
namespace's default), sends a deterministic payload, and reads back what the kernel
reports. Prints one JSON object: the congestion control getsockopt returns, bytes sent and
received, whether the payload arrived intact, and the sender's tcp_info counters that
show loss recovery.

Across a link between two namespaces, the ends are two processes: `--listen` (the
receiver: prints bytes received and their SHA-256) and `--connect HOST` (the sender:
prints what the loopback run prints, with the payload's SHA-256 instead of "intact").
`--sample-ms N` makes the sender also record its tcp_info every N ms while it sends.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import struct
import threading
import time
from typing import Any

TCP_CA_NAME_MAX = 16

# struct tcp_info (include/uapi/linux/tcp.h): 8 one-byte fields, then these fields in
# this order (naturally aligned, so "=" packs them as the kernel does). Only the leading
# part, stable since Linux 4.9, is decoded.
_TCP_INFO = struct.Struct("=8B24I4Q6IQ")
_TCP_INFO_FIELDS = (
    "rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans",
    "fackets", "last_data_sent", "last_ack_sent", "last_data_recv", "last_ack_recv",
    "pmtu", "rcv_ssthresh", "rtt", "rttvar", "snd_ssthresh", "snd_cwnd", "advmss",
    "reordering", "rcv_rtt", "rcv_space", "total_retrans",
    "pacing_rate", "max_pacing_rate", "bytes_acked", "bytes_received",
    "segs_out", "segs_in", "notsent_bytes", "min_rtt", "data_segs_in", "data_segs_out",
    "delivery_rate",
)  # fmt: skip
# What --sample-ms records per sample (besides t, seconds since connect).
SAMPLED = (
    "ca_state", "snd_cwnd", "snd_ssthresh", "bytes_acked", "min_rtt", "rtt",
    "delivery_rate", "total_retrans", "snd_mss",
)  # fmt: skip


def congestion_control(sock: socket.socket) -> str:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, TCP_CA_NAME_MAX)
    return raw.split(b"\0", 1)[0].decode()


def tcp_info(sock: socket.socket) -> dict[str, int]:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size)
    fields = _TCP_INFO.unpack(raw[: _TCP_INFO.size])
    info = dict(zip(_TCP_INFO_FIELDS, fields[8:], strict=True))
    info["ca_state"] = fields[1]
    return info


class Sampler(threading.Thread):
    """Records the sender's tcp_info every `period` seconds until stopped, and once more when
    stopped: a transfer shorter than one period (8 MiB over loopback can take under 5 ms) still
    has its final state."""

    def __init__(self, sock: socket.socket, period: float) -> None:
        super().__init__(daemon=True)
        self.sock, self.period = sock, period
        self.samples: list[dict[str, float]] = []
        self.done = threading.Event()
        self.start_time = time.monotonic()

    def run(self) -> None:
        while not self.done.wait(self.period):
            self.sample()
        self.sample()

    def sample(self) -> None:
        info = tcp_info(self.sock)
        sample: dict[str, float] = {"t": time.monotonic() - self.start_time}
        sample.update((k, info[k]) for k in SAMPLED)
        self.samples.append(sample)


def payload_of(size: int) -> bytes:
    return random.Random(5681).randbytes(size)


def receive_all(listener: socket.socket, result: dict[str, Any]) -> None:
    conn, _ = listener.accept()
    digest = hashlib.sha256()
    received = 0
    with conn:
        while chunk := conn.recv(1 << 16):
            digest.update(chunk)
            received += len(chunk)
    result["received"] = received
    result["sha256"] = digest.hexdigest()


def send(
    host: str,
    cc: str | None,
    size: int,
    port: int,
    timeout: float,
    sample_ms: float,
    source_port: int = 0,
    fin_after_acked: bool = False,
) -> dict[str, Any]:
    """The sender alone: connects (retrying while the receiver is not yet listening). With
    `fin_after_acked` the FIN goes out only once every byte is ACKed: a bare FIN, ACKed alone."""
    payload = payload_of(size)
    deadline = time.monotonic() + timeout
    while True:
        sender = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sender.settimeout(timeout)
        if cc is not None:
            sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        if source_port:
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sender.bind(("0.0.0.0", source_port))
        try:
            sender.connect((host, port))
            break
        except ConnectionRefusedError:
            sender.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with sender:
        selected = congestion_control(sender)
        sampler = Sampler(sender, sample_ms / 1000) if sample_ms > 0 else None
        if sampler:
            sampler.start()
        sender.sendall(payload)
        while fin_after_acked and tcp_info(sender)["bytes_acked"] < size:
            time.sleep(0.001)
        sender.shutdown(socket.SHUT_WR)
        # The receiver closes once it has read everything: then every byte is ACKed.
        sender.recv(1)
        if sampler:
            sampler.done.set()
            sampler.join()
        info = tcp_info(sender)
    return {
        "congestion_control": selected,
        "sent": size,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "tcp_info": info,
        "samples": sampler.samples if sampler else [],
    }


def listen(port: int, timeout: float) -> dict[str, Any]:
    """The receiver alone: one connection, read to EOF."""
    with socket.create_server(("0.0.0.0", port)) as listener:
        listener.settimeout(timeout)
        result: dict[str, Any] = {}
        receive_all(listener, result)
    return result


def transfer(cc: str | None, size: int, port: int, timeout: float) -> dict[str, Any]:
    payload = payload_of(size)
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(timeout)
    receiver: dict[str, Any] = {}
    thread = threading.Thread(target=receive_all, args=(listener, receiver))
    thread.start()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sender:
            sender.settimeout(timeout)
            if cc is not None:
                sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            sender.connect(("127.0.0.1", port))
            selected = congestion_control(sender)
            sender.sendall(payload)
            sender.shutdown(socket.SHUT_WR)
            thread.join(timeout)
            # Every byte has arrived, so the sender's counters cover the whole transfer.
            info = tcp_info(sender)
    finally:
        thread.join(timeout)
        listener.close()
    return {
        "congestion_control": selected,
        "sent": size,
        "received": receiver.get("received", 0),
        "intact": receiver.get("sha256") == hashlib.sha256(payload).hexdigest(),
        "tcp_info": info,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", help="TCP_CONGESTION for the sender (default: netns's)")
    parser.add_argument("--bytes", type=int, default=8 << 20, help="payload size")
    parser.add_argument("--port", type=int, default=5001)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds")
    ends = parser.add_mutually_exclusive_group()
    ends.add_argument("--listen", action="store_true", help="be the receiver only")
    ends.add_argument("--connect", metavar="HOST", help="be the sender only, to HOST")
    parser.add_argument(
        "--sample-ms", type=float, default=0, help="sender: record tcp_info every N ms"
    )
    parser.add_argument("--source-port", type=int, default=0, help="sender: bind to this port")
    parser.add_argument(
        "--fin-after-acked", action="store_true", help="sender: FIN only once all data is ACKed"
    )
    args = parser.parse_args()
    if args.listen:
        result = listen(args.port, args.timeout)
    elif args.connect:
        result = send(
            args.connect,
            args.cc,
            args.bytes,
            args.port,
            args.timeout,
            args.sample_ms,
            args.source_port,
            args.fin_after_acked,
        )
    else:
        result = transfer(args.cc, args.bytes, args.port, args.timeout)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
