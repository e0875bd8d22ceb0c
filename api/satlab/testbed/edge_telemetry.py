"""Each terminal's own view of the emulator's telemetry, for the edge gateways of a beam with
several terminals (satlab.testbed.terminals): one Unix socket per st edge, fed from the emulator's
one stream (docs/emulator-contract.md), that an edge's gateway reads as if it were the emulator's.

Why: an `st` gateway takes its pacing rate from the return link's status, and its CETEN corruption
samples and ETEN notices from the forward link's per-packet events. On the emulator's own stream
every st gateway would see every terminal's events: each loss would draw one notice per terminal
(the sender would hear of it N times) and each terminal's CETEN estimate would mix the weather of
all. The relay gives terminal k:
- events of packets to its hosts (forward: by destination) or from them (return: by source), by
  its LAN and edge address as the beam tells terminals apart (emulator/CONFIG.md, Beam); an event
  without flow fields (bits hit its IP header) names no terminal and goes to none;
- status lines with its own entry of the beam's `terminals` (MODCOD, Es/N0, useful rate, queue,
  counters, DAMA grant) in place of the link's, for a direction that has them (the forward beam;
  a DAMA return beam): a return link without a beam is one link all terminals share, its status
  goes to each as it is.
The gw edge's gateway reads the emulator's stream itself: it sees the whole carrier.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import selectors
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from satlab.testbed import terminals

# A status line's fields that a terminal's entry (TerminalStatus) replaces.
TERMINAL_FIELDS = (
    "modcod",
    "esn0_db",
    "attenuation_db",
    "useful_rate_bps",
    "queue_packets",
    "queue_bytes",
    "counters",
    "dama",
)
SEND_TIMEOUT_S = 1.0  # a gateway that reads nothing for this long is dropped (it reconnects)


@dataclass
class EdgeView:
    """One terminal's part of the stream: its beam name, its st edge, its hosts' networks."""

    name: str
    edge: str
    nets: list[ipaddress.IPv4Network]
    socket_path: Path
    clients: list[socket.socket] = field(default_factory=list)

    def owns(self, address: str | None) -> bool:
        """Whether `address` is one of this terminal's (an IPv6 one, e.g. a link-local
        neighbour discovery packet's, is nobody's: the testbed's plan is IPv4)."""
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return ip.version == 4 and any(ip in net for net in self.nets)


def views(names: list[str], counts: list[int], directory: Path) -> list[EdgeView]:
    """Each terminal's view, in hosts.terminals order (names and client counts), its socket
    `telemetry-EDGE.sock` in `directory`."""
    out = []
    for name, t in zip(names, terminals.plan(counts), strict=True):
        nets = [ipaddress.IPv4Network(p) for p in t.prefixes]
        out.append(EdgeView(name, t.edge, nets, directory / f"telemetry-{t.edge}.sock"))
    return out


def terminal_status(line: dict[str, Any], name: str) -> dict[str, Any]:
    """A status line as terminal `name` sees its link: its own entry's fields in place of the
    link's where the line has per-terminal entries (and no carrier rate: a gateway would take it
    for its own link's), else the line unchanged."""
    entry = next((t for t in line.get("terminals") or [] if t.get("name") == name), None)
    if entry is None:
        return line
    out = {k: v for k, v in line.items() if k not in ("terminals", "carrier_useful_rate_bps")}
    out.update({k: entry[k] for k in TERMINAL_FIELDS if k in entry})
    return out


def event_address(line: dict[str, Any]) -> str | None:
    """The terminal-side address of an event: the destination of a forward packet, the source
    of a return one (None when the emulator could not read it)."""
    addr = line.get("dst") if line.get("direction") == "forward" else line.get("src")
    return addr if isinstance(addr, str) else None


class EdgeTelemetry(threading.Thread):
    """The relay: `start()` after the emulator's socket exists; ends when `stop()` is called or
    the emulator's stream ends, closing its sockets."""

    def __init__(self, upstream: Path, edge_views: list[EdgeView]) -> None:
        super().__init__(daemon=True, name="edge-telemetry")
        self.upstream_path, self.views = upstream, edge_views
        self.stopped = threading.Event()
        self.sel = selectors.DefaultSelector()
        self.listeners: list[socket.socket] = []
        self.upstream: socket.socket | None = None

    def open(self) -> None:
        """Connects to the emulator's stream and listens on each edge's socket."""
        self.upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.upstream.connect(str(self.upstream_path))
        self.sel.register(self.upstream, selectors.EVENT_READ, None)
        for v in self.views:
            with contextlib.suppress(FileNotFoundError):
                v.socket_path.unlink()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(v.socket_path))
            # the gateways run as root in their boxes; the socket is the runner's
            os.chmod(v.socket_path, 0o666)
            s.listen(4)
            s.setblocking(False)
            self.listeners.append(s)
            self.sel.register(s, selectors.EVENT_READ, v)

    def run(self) -> None:
        buf = b""
        try:
            while not self.stopped.is_set():
                for key, _ in self.sel.select(timeout=0.2):
                    if key.data is not None:
                        self._accept(key.fileobj, key.data)  # type: ignore[arg-type]
                        continue
                    assert self.upstream is not None
                    chunk = self.upstream.recv(65536)
                    if not chunk:
                        return  # the emulator ended
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        self._relay(line)
        except OSError:
            return  # the emulator's stream broke: as if it ended
        finally:
            self._close()

    def _accept(self, listener: socket.socket, view: EdgeView) -> None:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:  # the gateway gave up meanwhile: it reconnects
            return
        conn.setblocking(True)
        conn.settimeout(SEND_TIMEOUT_S)
        view.clients.append(conn)

    def _relay(self, raw: bytes) -> None:
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            return
        if not isinstance(line, dict):
            return
        if line.get("type") == "event":
            addr = event_address(line)
            for v in self.views:
                if v.owns(addr):
                    self._send(v, raw)
            return
        for v in self.views:
            own = terminal_status(line, v.name)
            self._send(v, raw if own is line else json.dumps(own).encode())

    def _send(self, view: EdgeView, data: bytes) -> None:
        for conn in list(view.clients):
            try:
                conn.sendall(data + b"\n")
            except OSError:  # the gateway went away or stalled: it reconnects if it lives
                view.clients.remove(conn)
                conn.close()

    def stop(self) -> None:
        """Ends the relay and removes its sockets."""
        self.stopped.set()
        if self.is_alive():
            self.join(timeout=2)
        else:
            self._close()

    def _close(self) -> None:
        for s in [self.upstream, *self.listeners, *(c for v in self.views for c in v.clients)]:
            if s is not None:
                with contextlib.suppress(OSError):
                    s.close()
        self.sel.close()
        for v in self.views:
            v.clients.clear()
            with contextlib.suppress(FileNotFoundError):
                v.socket_path.unlink()
        self.listeners = []
