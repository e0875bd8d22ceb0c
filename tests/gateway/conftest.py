"""Fixtures of the gateway tier: a fresh testbed (satlab.testbed, the gateway spliced in at both
edges) per test; processes and namespaces are removed even when a test fails (and each testbed's
start sweeps what dead test processes left)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from gwnet import Topology

from satlab.testbed import topology


@pytest.fixture(scope="session", autouse=True)
def _root_and_sweep() -> None:
    if os.geteuid() != 0:
        pytest.fail("the gateway tier needs root (network namespaces)")


@pytest.fixture
def topo() -> Iterator[Topology]:
    with Topology() as t:
        yield t
    assert not t.procs, "processes left running"
    assert not topology.project_namespaces(t.tb.id), "namespaces left behind"
