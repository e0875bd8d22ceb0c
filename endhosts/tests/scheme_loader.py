"""Runs endhosts/build/sl-scheme (the scheme loader) for a test, and reads what it reports."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ca_harness import AVAILABLE, BUILD, TRANSFER, bpftool_by_id, run

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


def in_cgroup(netns: str, cg: Path | None, *cmd: str) -> list[str]:
    """The command inside `netns`, and inside cgroup `cg` when given (nsenter: `ip netns exec`
    mounts its own /sys, without cgroup2)."""
    if cg is None:
        return ["ip", "netns", "exec", netns, *cmd]
    script = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
    return ["nsenter", f"--net=/run/netns/{netns}", "--", "sh", "-c", script, str(cg), *cmd]


def cgroup_transfer(
    netns: str,
    ports: tuple[int, int],
    size: int,
    ca: str,
    sender_cg: Path,
    receiver_cg: Path | None = None,
    capture: Path | None = None,
    sample_ms: float | None = None,
    fin_after_acked: bool = False,
) -> dict[str, object]:
    """One bulk transfer (tcp_transfer.py) over loopback in `netns`, to port ports[0] from
    source port ports[1]: the sender with congestion control `ca` in cgroup `sender_cg` (where a
    scheme's sockops program sees it), the receiver in `receiver_cg` or in none. Optionally a
    pcap of the first 40 packets, tcp_info samples every `sample_ms`, and a bare FIN sent once
    all data is ACKed (`fin_after_acked`). Returns the sender's report."""
    port, sport = ports
    py = [sys.executable, str(TRANSFER), "--port", str(port), "--bytes", str(size)]
    recv = subprocess.Popen(in_cgroup(netns, receiver_cg, *py, "--listen"), stdout=subprocess.PIPE)
    dump = None
    if capture is not None:
        dump = subprocess.Popen(
            ["ip", "netns", "exec", netns, "tcpdump", "-U", "-i", "lo", "-c", "40", "-w",
             str(capture), f"tcp port {port}"],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        sender = [*py, "--connect", "127.0.0.1", "--source-port", str(sport), "--cc", ca]
        if sample_ms is not None:
            sender += ["--sample-ms", str(sample_ms)]
        if fin_after_acked:
            sender.append("--fin-after-acked")
        out = run(*in_cgroup(netns, sender_cg, *sender), timeout=120)
        recv.wait(60)
        if dump is not None:
            dump.wait(10)  # -c 40: done long before the transfer is
    finally:
        for p in (recv, dump):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    result: dict[str, object] = json.loads(out)
    return result


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
