"""Forges ETEN notices (crates/packet/src/eten.rs) at a live TCP connection, inside a namespace.

Run as `ip netns exec NS python eten_forge.py --cc NAME --port P [--key HEX] [--flood N]`, with
the scheme loaded on `lo` and the namespace dropping data segments to P (so the sender's data
stays unacknowledged: snd_una < snd_nxt). Opens a connection 127.0.0.1 -> 127.0.0.1:P with the
congestion control NAME, learns the first data sequence number from the receiver's side
(TCP_REPAIR: rcv_nxt before any data), sends some data, then one notice of each kind below and a
flood, waits for the retransmission timeout (a loss of the notified segment), and prints what
it sent as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import socket
import struct
import time

TCP_REPAIR, TCP_REPAIR_QUEUE, TCP_QUEUE_SEQ, TCP_RECV_QUEUE = 19, 20, 21, 1
LOCAL = "127.0.0.1"


def checksum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def notice(
    sport: int, dport: int, seq: int, serial: int, key: bytes | None, corrupt: bool = False
) -> bytes:
    src = dst = socket.inet_aton(LOCAL)
    quote = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 576, 0, 0, 0, 6, 0, src, dst)
    quote = quote[:10] + struct.pack("!H", checksum(quote)) + quote[12:]
    l4 = struct.pack("!HHI", sport, dport, seq & 0xFFFFFFFF)
    flags = 1 if key is not None else 0
    msg = struct.pack("!BBHBBH", 253, 0, 0, 1, flags, serial) + quote + l4
    if key is not None:
        msg += hmac.new(key, msg, hashlib.sha256).digest()[:16]
    csum = checksum(msg) ^ (0xFFFF if corrupt else 0)
    return msg[:2] + struct.pack("!H", csum) + msg[4:]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cc", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", help="hex; notices are signed with it")
    p.add_argument("--flood", type=int, default=0)
    a = p.parse_args()
    key = bytes.fromhex(a.key) if a.key else None

    listener = socket.create_server((LOCAL, a.port))
    sender = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    sender.connect((LOCAL, a.port))
    receiver, _ = listener.accept()
    receiver.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR, 1)
    receiver.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)
    first = struct.unpack("I", receiver.getsockopt(socket.IPPROTO_TCP, TCP_QUEUE_SEQ, 4))[0]
    sport = sender.getsockname()[1]
    sender.setblocking(False)
    sender.send(bytes(100_000))  # the window's worth leaves, and is dropped on arrival
    time.sleep(0.02)  # notices go out well before the first retransmission timeout (200 ms)

    icmp = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    wrong = bytes(len(key)) if key else None
    sent = {
        "valid": notice(sport, a.port, first, 1, key),
        "duplicate": notice(sport, a.port, first, 2, key),
        "below_window": notice(sport, a.port, first - 100_000, 3, key),
        "above_window": notice(sport, a.port, first + 10_000_000, 4, key),
        "unknown_flow": notice(sport ^ 0x5A5A, a.port, first, 5, key),
        "bad_checksum": notice(sport, a.port, first, 6, key, corrupt=True),
        "bad_mac": notice(sport, a.port, first + 1, 7, wrong) if key else b"",
        "unsigned": notice(sport, a.port, first + 2, 8, None) if key else b"",
    }
    for msg in sent.values():
        if msg:
            icmp.sendto(msg, (LOCAL, 0))
            time.sleep(0.002)
    for i in range(a.flood):
        icmp.sendto(notice(sport, a.port, first + 3 + i, 100 + i, key), (LOCAL, 0))
    time.sleep(0.6)  # the timeout fires: the kernel's first loss of this connection
    # Abort the connection (RST, freed at once): closed with its data still dropped on arrival,
    # it would live on as an orphan retransmitting for minutes, holding the scheme's struct_ops
    # map and the deleted namespace after the test.
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sender.close()
    kinds = [k for k, v in sent.items() if v]
    print(json.dumps({"first_seq": first, "sport": sport, "sent": kinds}))


if __name__ == "__main__":
    main()
