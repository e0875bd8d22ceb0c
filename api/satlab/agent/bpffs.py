"""Where a box keeps the end hosts' BPF state: the pinned maps under the BPF filesystem and the
hosts' traffic cgroups. The agent makes and checks these directories; the testbed names them."""

from __future__ import annotations

import subprocess
from pathlib import Path

BPFFS = Path("/sys/fs/bpf")
PIN_ROOT = BPFFS / "satlab"
CGROUP_ROOT = Path("/sys/fs/cgroup/unified/satlab")


def ensure_bpffs() -> None:
    """Mount the BPF filesystem at /sys/fs/bpf when the machine has not (systemd usually does)."""
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    if not any(line.split(" ")[1:3] == [str(BPFFS), "bpf"] for line in mounts if line):
        subprocess.run(["mount", "-t", "bpf", "bpf", str(BPFFS)], check=True, capture_output=True)
    PIN_ROOT.mkdir(exist_ok=True)
