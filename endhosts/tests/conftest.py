"""Fixtures shared by the congestion-control tests: the build and fresh namespaces."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ca_harness import BUILD, ENDHOSTS, bpftool_by_id, run

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


# Congestion-control instances of the service's testbeds (satlab.schemes.instance_name: a
# 4-hex-digit testbed id, the host's role letter and number, the scheme): loaded by another user
# of the machine (a soak, a scheduled run), never by these tests, whose instances carry their pid.
SERVICE_INSTANCE = re.compile(r"[0-9a-f]{4}[sc][0-9]+[a-z]+")


def _service_instance(map_id: int) -> bool:
    dump = bpftool_by_id("map", map_id, "struct_ops", "dump")
    if dump is None:  # freed since the listing
        return True
    names = re.findall(r'"name":\s*"([^"]*)"', dump)  # the map's, then its tcp_congestion_ops'
    return any(SERVICE_INSTANCE.fullmatch(n) for n in names)


@pytest.fixture(autouse=True)
def no_struct_ops_left() -> Iterator[None]:
    """Fails a test whose struct_ops maps outlive it. A socket still using a scheme's congestion
    control keeps its map after the loader has gone: an orphan retransmitting into a dropped path
    kept one (and its deleted namespace) for about two minutes. The kernel frees a released map
    after an RCU grace period: waited out for up to 5 s. Maps of the service's testbeds running
    at the same time (a soak beside these tests) are told apart by their instance names."""
    before = _struct_ops_ids()

    def ours_left() -> set[int]:
        return {i for i in _struct_ops_ids() - before if not _service_instance(i)}

    yield
    deadline = time.monotonic() + 5
    while (left := ours_left()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"struct_ops maps (bpftool struct_ops show) left by this test: {sorted(left)}"
