"""The request bodies of the agent's HTTP API that the testbed sends (agent/server.py reads)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ProcessStart(TypedDict):
    """POST /processes: start program `kind` (emulator, traffic, capture, ...) as `id`."""

    id: str
    kind: str
    args: list[str]
    cgroup: NotRequired[str]  # the host's traffic cgroup (its loaded scheme's), when it has one


class SamplingStart(TypedDict):
    """POST /sampling: sample the TCP state (tcp_info) of these local ports every period_ms."""

    period_ms: int
    ports: list[int]


class InterfacePlan(TypedDict):
    """One interface's MTU, IPv4 addresses ("a.b.c.d/len") and routes through a gateway
    ([destination, gateway]: exactly these, the others of the interface go); each left as it is
    when absent."""

    mtu: NotRequired[int]
    addresses: NotRequired[list[str]]
    routes: NotRequired[list[list[str]]]


class Addressing(TypedDict):
    """POST /addressing: re-wire a box that outlives runs, by interface: the run's MTU, and a
    compose edge moved behind the terrestrial hops of a run and back."""

    interfaces: dict[str, InterfacePlan]


class HopsBuild(TypedDict):
    """POST /hops (the compose `hops` box): build a run's terrestrial hops, the cross hosts at
    each end of each (satlab.agent.hopbox); an empty list removes what is there."""

    hops: list[int]
    mtu: int
    uplinks: NotRequired[list[str]]  # a hardware hop box's NICs (hopbox.UPLINKS' order)


class TerminalPlan(TypedDict):
    """One extra terminal of a compose st box (satlab.testbed.terminals.Terminal): its st edge's
    role, client LAN (first three octets), satellite-side address and global client numbers."""

    edge: str
    net: str
    sat_address: str
    clients: list[int]


class TerminalsBuild(TypedDict):
    """POST /terminals (the compose `st` box): build a run's terminals 2..N as namespaces with
    their clients (satlab.agent.terminalbox), their edges on macvlans of `uplink`; an empty
    list removes what is there."""

    terminals: list[TerminalPlan]
    mtu: int
    uplink: str
    gateway: NotRequired[bool]  # each edge with the edge gateway's bump (satlab.agent.terminalbox)
