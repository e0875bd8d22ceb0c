"""The edge gateways' telemetry relay with several terminals: each st edge's socket carries its own
terminal's events and status, from an emulator stream served on a real Unix socket."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from satlab.testbed.edge_telemetry import EdgeTelemetry, terminal_status, views

TERMINALS = [
    {"name": "clear", "useful_rate_bps": 4e7, "esn0_db": 12.0, "modcod": {"id": 17}},
    {"name": "rainy", "useful_rate_bps": 1e7, "esn0_db": 3.0, "modcod": {"id": 4}},
]
STATUS = {
    "type": "telemetry",
    "t_ms": 1.0,
    "direction": "forward",
    "useful_rate_bps": 5e7,
    "esn0_db": 12.0,
    "terminals": TERMINALS,
    "carrier_useful_rate_bps": 3e7,
}
RETURN_STATUS = {"type": "telemetry", "t_ms": 1.0, "direction": "return", "useful_rate_bps": 2e6}


def _corrupted(direction: str, src: str | None, dst: str | None, seq: int) -> dict[str, Any]:
    line = {"type": "event", "t_ms": 2.0, "direction": direction, "kind": "corrupted", "len": 1500}
    if src is not None:  # a hit IP header leaves the flow fields out
        line.update(src=src, dst=dst, proto=6, sport=5001, dport=40000, seq=seq)
    return line


def test_a_terminals_entry_replaces_the_links_fields_and_other_lines_pass() -> None:
    rainy = terminal_status(STATUS, "rainy")
    assert (rainy["useful_rate_bps"], rainy["esn0_db"], rainy["modcod"]) == (1e7, 3.0, {"id": 4})
    assert "terminals" not in rainy and rainy["direction"] == "forward"
    assert "carrier_useful_rate_bps" not in rainy  # the beam's whole carrier is not its link
    assert terminal_status(RETURN_STATUS, "rainy") is RETURN_STATUS


def _read_lines(conn: socket.socket, count: int) -> list[dict[str, Any]]:
    buf = b""
    conn.settimeout(5)
    while buf.count(b"\n") < count:
        chunk = conn.recv(65536)
        assert chunk, f"stream ended after {buf!r}"
        buf += chunk
    return [json.loads(line) for line in buf.split(b"\n") if line]


def test_each_edge_gets_its_terminals_events_and_status(tmp_path: Path) -> None:
    emulator = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    emulator.bind(str(tmp_path / "emulator.sock"))
    emulator.listen(1)
    relay = EdgeTelemetry(tmp_path / "emulator.sock", views(["clear", "rainy"], [2, 1], tmp_path))
    relay.open()
    stream, _ = emulator.accept()
    relay.start()
    gateways = {}
    try:
        for edge in ("st", "st2"):
            gateways[edge] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            gateways[edge].connect(str(tmp_path / f"telemetry-{edge}.sock"))
        deadline = time.monotonic() + 5
        while not all(v.clients for v in relay.views) and time.monotonic() < deadline:
            time.sleep(0.01)
        lines = [
            _corrupted("forward", "10.250.1.11", "10.250.42.13", 1),  # to rainy's client
            _corrupted("forward", "10.250.1.11", "10.250.3.11", 2),  # to clear's client
            _corrupted("forward", None, None, 3),  # no flow fields: nobody's
            _corrupted("return", "10.250.2.3", "10.250.1.11", 4),  # from rainy's edge
            STATUS,
            RETURN_STATUS,
        ]
        stream.sendall(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        clear, rainy = _read_lines(gateways["st"], 3), _read_lines(gateways["st2"], 4)
    finally:
        for g in gateways.values():
            g.close()
        stream.close()
        relay.stop()
        emulator.close()
    assert [x.get("seq") for x in clear] == [2, None, None]
    assert [x.get("seq") for x in rainy] == [1, 4, None, None]
    assert (clear[1]["useful_rate_bps"], rainy[2]["useful_rate_bps"]) == (4e7, 1e7)
    assert clear[2] == rainy[3] == RETURN_STATUS  # one return link for both: as it is
    assert not (tmp_path / "telemetry-st2.sock").exists()  # stop() removes its sockets
