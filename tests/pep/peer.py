"""A test peer run inside a testbed namespace (`ip netns exec NS python peer.py ...`); prints one
JSON line per connection (server) or per run (client).

  serve PORT MODE     MODE: source:N (send N seeded bytes, close) | sink (read to EOF, answer with
                      sha256 and count, close) | rst (read 1 byte, then reset) | watch (read to EOF
                      or reset and report which) | halfsrv (send "hello", half-close, read to EOF,
                      report what came back)
  get HOST PORT       read to EOF; print count, sha256, rate timeline (t of every 1 MB)
  put HOST PORT N     send N seeded bytes, half-close, read the answer
  rst HOST PORT       connect, send 1 byte, reset (SO_LINGER 0)
  watch HOST PORT     connect, send 1 byte, wait for EOF or reset
  halfcli HOST PORT   read to EOF (the server's half-close), then send "reply" and close
  many HOST PORT N    N concurrent short connections (sink), count completed/refused
  hold HOST PORT K    hold K connections open, then try one more: report how it went
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import struct
import sys
import threading
import time


def payload(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


def reset(s: socket.socket) -> None:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def read_all(s: socket.socket) -> tuple[bytes, str]:
    chunks = []
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                return b"".join(chunks), "eof"
            chunks.append(b)
    except ConnectionResetError:
        return b"".join(chunks), "reset"


def serve(port: int, mode: str) -> None:
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1024)
    print(json.dumps({"listening": port}), flush=True)
    while True:
        c, peer = ls.accept()
        threading.Thread(target=handle, args=(c, mode), daemon=True).start()


def handle(c: socket.socket, mode: str) -> None:
    if mode.startswith("source:"):
        c.sendall(payload(int(mode.split(":")[1])))
        c.close()
    elif mode == "sink":
        data, how = read_all(c)
        c.sendall(json.dumps({"n": len(data), "sha": hashlib.sha256(data).hexdigest()}).encode())
        c.close()
    elif mode == "rst":
        c.recv(1)
        reset(c)
    elif mode == "watch":
        _, how = read_all(c)
        print(json.dumps({"server_saw": how}), flush=True)
        c.close()
    elif mode == "halfsrv":
        c.sendall(b"hello")
        c.shutdown(socket.SHUT_WR)
        data, how = read_all(c)
        print(json.dumps({"server_got": data.decode(), "how": how}), flush=True)
        c.close()


def main() -> None:
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
        return
    host, port = sys.argv[2], int(sys.argv[3])
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=60)
    if cmd == "get":
        marks, total, h = [], 0, hashlib.sha256()
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            h.update(b)
            before, total = total, total + len(b)
            if before // 100_000 != total // 100_000:
                marks.append([round(time.monotonic() - t0, 4), total])
        print(json.dumps({"n": total, "sha": h.hexdigest(), "marks": marks}))
    elif cmd == "put":
        s.sendall(payload(int(sys.argv[4])))
        s.shutdown(socket.SHUT_WR)  # half-close: the answer still comes back
        data, how = read_all(s)
        print(json.dumps({"answer": json.loads(data), "how": how}))
    elif cmd == "rst":
        s.sendall(b"x")
        time.sleep(0.5)
        reset(s)
        print(json.dumps({"sent_reset": True}))
    elif cmd == "watch":
        s.sendall(b"x")
        _, how = read_all(s)
        print(json.dumps({"client_saw": how}))
    elif cmd == "halfcli":
        data, how = read_all(s)
        s.sendall(b"reply")
        s.close()
        print(json.dumps({"client_got": data.decode(), "how": how}))


def many(host: str, port: int, n: int) -> None:
    out = {"completed": 0, "refused": 0, "other": 0}
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            s = socket.create_connection((host, port), timeout=60)
            s.sendall(payload(1000, i))
            s.shutdown(socket.SHUT_WR)
            data, how = read_all(s)
            ok = how == "eof" and json.loads(data)["n"] == 1000
            key = "completed" if ok else "refused" if how == "reset" else "other"
        except ConnectionResetError:
            key = "refused"
        except OSError:
            key = "other"
        with lock:
            out[key] += 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(out))


def hold(host: str, port: int, k: int) -> None:
    held = []
    for _ in range(k):
        s = socket.create_connection((host, port), timeout=30)
        s.sendall(b"x")
        held.append(s)
    time.sleep(1.0)  # every held connection is relayed (the PEP counts it active)
    extra = socket.create_connection((host, port), timeout=30)
    extra.sendall(b"x")
    _, how = read_all(extra)
    for s in held:
        s.close()
    print(json.dumps({"extra": how}))


if __name__ == "__main__":
    if sys.argv[1] == "many":
        many(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "hold":
        hold(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
