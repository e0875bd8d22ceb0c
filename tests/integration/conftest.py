"""Fixtures of the testbed integration tier: a fresh namespace topology per test and an emulator
factory; both are torn down (processes killed by PID, namespaces removed) even when a test fails."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from emuconfig import EmulatorFactory, base_config, deep_merge
from netns import Emulator, Topology, sweep_stale, unique_prefix

TAG = "satit"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "integration: testbed test in real network namespaces (root, no netem)"
    )


@pytest.fixture(scope="session", autouse=True)
def _root_and_sweep() -> None:
    if os.geteuid() != 0:
        pytest.fail("the integration tier needs root (network namespaces)")
    sweep_stale(TAG)


@pytest.fixture
def topo() -> Iterator[Topology]:
    with Topology("l2", prefix=unique_prefix(TAG)) as t:
        yield t


@pytest.fixture
def emulator(topo: Topology, tmp_path: Path) -> Iterator[EmulatorFactory]:
    """emulator(**overrides) -> a started Emulator whose config is base_config deep-merged with
    overrides (a dict per top-level key)."""
    started: list[Emulator] = []

    def make(**over: Any) -> Emulator:
        work = tmp_path / f"emu{len(started)}"
        work.mkdir()
        cfg = deep_merge(base_config(work), over)
        emu = Emulator(topo, cfg, workdir=work)
        started.append(emu)
        return emu.start()

    yield make
    for e in started:
        e.stop()
