"""Which kind of testbed a run gets, chosen by the environment (SATLAB_TESTBED):

  namespaces  (default) one network namespace per box, built for the run and removed after it
              (satlab.testbed.testbed); needs root on the machine, or a privileged container
  containers  the boxes of a Docker Compose deployment, containers that outlive the run
              (satlab.testbed.containers)
  hardware    registered machines leased for the run, their agents reached over TCP with mutual
              TLS (satlab.testbed.hardware)

Both give the runner the same Testbed interface and the same host agents; `owned_testbed` and
`agent_sockets` find the testbed a worker is running and its agents, whatever its kind (the live
view, live control and live metrics reach the boxes only through the agents).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from satlab.agent.tlshttp import TlsTarget
from satlab.settings import HARDWARE_DIR, STATE_ROOT, testbed_kind
from satlab.testbed.testbed import Testbed, TestbedError

KINDS = ("namespaces", "containers", "hardware")


def create_testbed(
    servers: int = 1,
    clients: int = 1,
    mtu: int = 1500,
    gateway: bool = False,
    hops: list[int] | None = None,
    terminal_clients: list[int] | None = None,
    terminal_vlans: list[int] | None = None,
) -> Testbed:
    """`hops`: the cross hosts at each end of each terrestrial hop (satlab.testbed.hops);
    `terminal_clients`: the clients behind each of several terminals (satlab.testbed.terminals);
    `terminal_vlans`: each terminal's VLAN ID on the emulator's st port (terminals.vlans)."""
    kind = testbed_kind()
    if terminal_vlans and kind == "containers":
        raise TestbedError(
            "link.forward.beam.terminals.0.vlan: VLAN-tagged terminals need the namespaces or "
            "the hardware testbed; the containers testbed joins its st edges on the compose "
            "network satst, which has no 802.1Q switch"
        )
    if terminal_clients and kind == "hardware":
        raise TestbedError(
            f"hosts.terminals: {len(terminal_clients)} terminals need the namespaces or the "
            "containers testbed; the hardware testbed has one st edge"
        )
    cls: type[Testbed]
    if kind == "namespaces":
        cls = Testbed
    elif kind == "containers":
        from satlab.testbed.containers import ContainerTestbed

        cls = ContainerTestbed
    elif kind == "hardware":
        from satlab.testbed.hardware import HardwareTestbed

        cls = HardwareTestbed
    else:
        raise TestbedError(f"SATLAB_TESTBED: {kind!r} is not one of {', '.join(KINDS)}")
    return cls(
        servers,
        clients,
        mtu,
        gateway=gateway,
        hops=hops,
        terminal_clients=terminal_clients,
        terminal_vlans=terminal_vlans,
    )


def _state_dirs() -> list[Path]:
    from satlab.testbed.containers import RUNS

    roots = (STATE_ROOT, RUNS, HARDWARE_DIR)
    return [d for root in roots if root.is_dir() for d in root.iterdir()]


def owned_testbed(pid: int | None = None) -> str | None:
    """The id of the open testbed process `pid` (this one) owns, of either kind."""
    pid = os.getpid() if pid is None else pid
    for d in _state_dirs():
        try:
            state = json.loads((d / "state.json").read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if state.get("owner_pid") == pid:
            return d.name
    return None


def agent_sockets(testbed_id: str) -> dict[str, Path | TlsTarget]:
    """The agent socket of each box of an open testbed, by role (a hardware box's TLS endpoint)."""
    from satlab.testbed.containers import BOXES, RUNS
    from satlab.testbed.hardware import agent_targets

    if (STATE_ROOT / testbed_id).is_dir():
        return {p.stem: p for p in sorted((STATE_ROOT / testbed_id).glob("*.sock"))}
    if (RUNS / testbed_id).is_dir():
        return {p.stem: p for p in sorted(BOXES.glob("*.sock"))}
    if (HARDWARE_DIR / testbed_id).is_dir():
        return dict(agent_targets(testbed_id))
    return {}
