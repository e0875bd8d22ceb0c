"""Reads the emulator's telemetry stream (newline JSON on a Unix socket, docs/emulator-contract.md;
its lines are satlab.records.telemetry.TelemetryLine, generated from the emulator's own schema) in
a background thread and keeps the periodic link records and per-cause event counts."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter, deque
from pathlib import Path
from typing import Literal, cast

from satlab.records.telemetry import StatusLine, TelemetryLine

MAX_RECORDS = 200_000


class LinkRecord(StatusLine):
    """A status line as received, with the reader's monotonic clock when it arrived."""

    type: Literal["telemetry"]
    t: float


class TelemetryReader(threading.Thread):
    def __init__(self, path: Path, connect_timeout_s: float = 10.0) -> None:
        super().__init__(daemon=True)
        self.path, self.connect_timeout_s = path, connect_timeout_s
        self.records: deque[LinkRecord] = deque(maxlen=MAX_RECORDS)
        self.event_counts: Counter[str] = Counter()
        self.connected = threading.Event()
        self.stopped = threading.Event()
        self.sock: socket.socket | None = None

    def wait_connected(self) -> None:
        """Blocks until the emulator accepted the connection, or raises with the reason."""
        deadline = time.monotonic() + self.connect_timeout_s
        while time.monotonic() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(self.path))
                self.sock = s
                self.connected.set()
                self.start()
                return
            except OSError:
                s.close()
                time.sleep(0.05)
        raise TimeoutError(f"emulator telemetry socket {self.path} not reachable")

    def run(self) -> None:
        assert self.sock is not None
        self.sock.settimeout(0.2)
        buf = b""
        while not self.stopped.is_set():
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                with contextlib.suppress(json.JSONDecodeError):
                    self._take(json.loads(line))

    def _take(self, rec: TelemetryLine) -> None:
        if rec["type"] == "telemetry":
            self.records.append(cast(LinkRecord, {**rec, "t": time.monotonic()}))
        else:
            self.event_counts[f"{rec['direction']}.{rec['kind']}"] += 1

    def stop(self) -> None:
        self.stopped.set()
        if self.sock:
            self.sock.close()
