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
