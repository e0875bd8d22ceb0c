"""Fixtures shared by the congestion-control tests: the build and fresh namespaces."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ca_harness import BUILD, ENDHOSTS, run

_netns_serial = itertools.count()


@pytest.fixture(scope="session")
def built() -> Path:
    """Runs make once; returns endhosts/build with every bpf/*.bpf.c compiled."""
    if os.geteuid() != 0:
        pytest.fail("these tests load eBPF and create network namespaces: run as root")
    run("make", "-C", str(ENDHOSTS), timeout=300)
    return BUILD


@pytest.fixture
def netns() -> Iterator[str]:
    """A fresh network namespace w-<pid>-<n> with loopback up, deleted afterwards."""
    name = f"w-{os.getpid()}-{next(_netns_serial)}"
    run("ip", "netns", "add", name)
    try:
        run("ip", "-n", name, "link", "set", "lo", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
