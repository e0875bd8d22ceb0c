"""Runs endhosts/build/sl-scheme (the scheme loader) for a test, and reads what it reports."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ca_harness import AVAILABLE, BUILD, bpftool_by_id

BPFFS = Path("/sys/fs/bpf")
CGROUP2 = Path("/sys/fs/cgroup/unified")


def ensure_bpffs() -> None:
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    if not any(line.split(" ")[1:3] == [str(BPFFS), "bpf"] for line in mounts):
        subprocess.run(["mount", "-t", "bpf", "bpf", str(BPFFS)], check=True)


@dataclass
class Loaded:
    proc: subprocess.Popen[str]
    ca: str
    pin_dir: Path
    ready: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)

    def stop(self, sig: int = signal.SIGTERM) -> dict[str, Any]:
        """Stops the loader; returns its last line ({"stats": ...}) after a SIGTERM."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            out, _ = self.proc.communicate(timeout=10)
            lines = out.strip().splitlines()
            if sig == signal.SIGTERM and lines:
                self.final = json.loads(lines[-1])
        return self.final


@contextlib.contextmanager
def loaded(obj: str, placeholder: str, netns: str, *extra: str, tag: str = "t") -> Iterator[Loaded]:
    """The scheme in build/<obj> registered as '<tag><pid>' inside `netns` for the duration."""
    ensure_bpffs()
    ca = f"{tag}{os.getpid()}"[:15]
    pin_dir = BPFFS / f"sltest-{ca}"
    cmd = ["nsenter", f"--net=/run/netns/{netns}", "--", str(BUILD / "sl-scheme")]
    cmd += ["--object", str(BUILD / obj), "--placeholder", placeholder, "--ca-name", ca]
    cmd += ["--pin-dir", str(pin_dir), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    handle = Loaded(proc, ca, pin_dir)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # {"ready": ...} once registered and attached
        if not line:
            _, err = proc.communicate(timeout=5)
            raise AssertionError(f"sl-scheme did not load {obj}:\n{err[-3000:]}")
        handle.ready = json.loads(line)["ready"]
        assert ca in AVAILABLE.read_text().split()
        yield handle
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["rm", "-rf", str(pin_dir)], check=False)


@contextlib.contextmanager
def cgroup(name: str) -> Iterator[Path]:
    """A fresh cgroup v2 directory for the duration (its processes must be gone by the end)."""
    path = CGROUP2 / name
    path.mkdir()
    try:
        yield path
    finally:
        path.rmdir()


def link_exists(link_id: int) -> bool:
    """Whether BPF link `link_id` is still there (any error other than its absence fails)."""
    return bpftool_by_id("link", link_id, "link", "show") is not None


def map_entries(pinned: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["bpftool", "-j", "map", "dump", "pinned", str(pinned)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    entries: list[dict[str, Any]] = json.loads(out)
    return entries
