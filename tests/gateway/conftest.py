"""Fixtures of the gateway tier: a fresh namespace topology (with the gateway spliced in at both
edges) per test; processes and namespaces are removed even when a test fails."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from gwnet import Topology, sweep_stale


@pytest.fixture(scope="session", autouse=True)
def _root_and_sweep() -> None:
    if os.geteuid() != 0:
        pytest.fail("the gateway tier needs root (network namespaces)")
    sweep_stale()


@pytest.fixture
def topo() -> Iterator[Topology]:
    with Topology() as t:
        yield t
