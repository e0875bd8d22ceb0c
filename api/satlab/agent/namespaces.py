"""The testbed's address plan and box names, and the socket clean-up of a namespace: shared by
the orchestrator (satlab.testbed.topology builds native testbeds on it) and the compose hop box's
agent (satlab.agent.hopbox builds the hops inside its container on the same plan).

Terrestrial hops: hop N's wire is 10.250.(10+N).0/24 (.1 its server end, .2 its client end).
Position p on the server side (r1..rK, then gw) has a LAN: 10.250.1.0/24 (the servers') for p = 1,
else 10.250.(20+p).0/24. On a LAN: servers and clients .(10+i), a hop's cross hosts .(100+i) at
its server end and .(200+i) at its client end.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

SERVER_NET = "10.250.1"  # servers and the LAN of the first box on their side (gw, or r1)
SAT_NET = "10.250.2"  # gw edge <-> st edge across the emulator
CLIENT_NET = "10.250.3"  # st edge's LAN side and the clients


def router(position: int) -> str:
    return f"r{position}"


def hop_box(hop: int) -> str:
    """The emulator box of terrestrial hop `hop` (1-based from the servers)."""
    return f"hop{hop}"


def cross_host(hop: int, end: str, i: int) -> str:
    """Cross host i of a hop at its server end (`s`) or its client end (`c`)."""
    return f"x{hop}{end}{i}"


def hop_net(hop: int) -> str:
    return f"10.250.{10 + hop}"


def lan_net(position: int) -> str:
    return SERVER_NET if position == 1 else f"10.250.{20 + position}"


def ip_json(*args: str) -> list[dict[str, Any]]:
    """`ip -j ARGS` parsed; an empty list when ip fails (an interface or namespace not there)."""
    r = subprocess.run(["ip", "-j", *args], capture_output=True, text=True)
    out: list[dict[str, Any]] = json.loads(r.stdout or "[]") if r.returncode == 0 else []
    return out


def abort_tcp(name: str) -> None:
    """Abort every TCP socket left in namespace `name` (SOCK_DESTROY, `ss -K`).

    A socket its process closed with data still unacknowledged lives on as an orphan,
    retransmitting for minutes into a path that is gone; it keeps the deleted namespace and its
    congestion control's struct_ops maps and programs alive (seen by `make soak` after an hour of
    BETEN: 15 BPF objects of the finished testbed, held by no process). Called once the box's
    processes have stopped, it finds only such orphans (and TIME_WAIT entries)."""
    subprocess.run(
        ["ip", "netns", "exec", name, "ss", "--kill", "--tcp", "--all"],
        capture_output=True,
        timeout=10,
        check=False,  # a namespace already without sockets, or one removed meanwhile
    )
