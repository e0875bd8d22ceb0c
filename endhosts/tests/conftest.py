"""Fixtures shared by the congestion-control tests: the build and fresh namespaces."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
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


def _struct_ops_ids() -> set[int]:
    out = run("bpftool", "-j", "struct_ops", "show")
    return {int(m["id"]) for m in json.loads(out or "[]")}


@pytest.fixture(autouse=True)
def no_struct_ops_left() -> Iterator[None]:
    """Fails a test whose struct_ops maps outlive it. A socket still using a scheme's congestion
    control keeps its map after the loader has gone: an orphan retransmitting into a dropped path
    kept one (and its deleted namespace) for about two minutes. The kernel frees a released map
    after an RCU grace period: waited out for up to 5 s. Other processes loading schemes at the
    same time would show here too: run these tests alone (as CI does)."""
    before = _struct_ops_ids()
    yield
    deadline = time.monotonic() + 5
    while (left := _struct_ops_ids() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"struct_ops maps (bpftool struct_ops show) left by this test: {sorted(left)}"
