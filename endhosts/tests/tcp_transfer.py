"""One bulk TCP transfer over loopback, run inside a network namespace.

Used by the tests as `ip netns exec NS python tcp_transfer.py ...`: a receiver thread
accepts one connection and reads to EOF; the sender selects a congestion control with
setsockopt(TCP_CONGESTION) (or keeps the namespace's default), sends a deterministic
payload, and reads back what the kernel reports. Prints one JSON object: the congestion
control getsockopt returns, bytes sent and received, whether the payload arrived
intact, and the sender's tcp_info counters that show loss recovery.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import struct
import threading
from typing import Any

TCP_CA_NAME_MAX = 16

# struct tcp_info (include/uapi/linux/tcp.h): 8 one-byte fields, then __u32 fields in
# this order. Only the leading, stable part is decoded.
_TCP_INFO = struct.Struct("=8B24I")
_TCP_INFO_U32 = (
    "rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans",
    "fackets", "last_data_sent", "last_ack_sent", "last_data_recv", "last_ack_recv",
    "pmtu", "rcv_ssthresh", "rtt", "rttvar", "snd_ssthresh", "snd_cwnd", "advmss",
    "reordering", "rcv_rtt", "rcv_space", "total_retrans",
)  # fmt: skip


def congestion_control(sock: socket.socket) -> str:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, TCP_CA_NAME_MAX)
    return raw.split(b"\0", 1)[0].decode()


def tcp_info(sock: socket.socket) -> dict[str, int]:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size)
    fields = _TCP_INFO.unpack(raw[: _TCP_INFO.size])
    info = dict(zip(_TCP_INFO_U32, fields[8:], strict=True))
    info["ca_state"] = fields[1]
    return info


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


def transfer(cc: str | None, size: int, port: int, timeout: float) -> dict[str, Any]:
    payload = random.Random(5681).randbytes(size)
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
    args = parser.parse_args()
    print(json.dumps(transfer(args.cc, args.bytes, args.port, args.timeout)))


if __name__ == "__main__":
    main()
