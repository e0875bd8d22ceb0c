"""Testbed tests run as root with real namespaces; each test checks it left nothing behind."""

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from satlab.testbed import topology
from satlab.testbed.testbed import STATE_ROOT

ROOT = Path(__file__).resolve().parents[2]


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines()}


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    """Nothing a test made may remain. The tests share the machine's testbed state directory with
    every other testbed (as they must: the sweeper decides from it what is orphaned)."""
    if os.geteuid() != 0:
        pytest.fail("testbed tests need root (network namespaces)")
    before_ns = set(topology.project_namespaces())
    before_links = root_links()
    yield
    new = set(topology.project_namespaces()) - before_ns
    unowned = {n for n in new if not _owned_by_another_process(n)}
    # Listed again after the states were read: another testbed that closed in between removed
    # its namespaces before its state, and a namespace gone is not left behind.
    assert not unowned & set(topology.project_namespaces()), "namespaces left behind"
    assert not root_links() - before_links, "interfaces left behind in the root namespace"


def _owned_by_another_process(namespace: str) -> bool:
    """A namespace of a testbed another live process runs (a worker, a second test session)."""
    tid = namespace[len(topology.PREFIX) :].split("-", 1)[0]
    try:
        owner = json.loads((STATE_ROOT / tid / "state.json").read_text())["owner_pid"]
    except (OSError, ValueError, KeyError):
        return False
    return bool(owner != os.getpid())


@pytest.fixture(scope="session")
def emulator_bin() -> Path:
    path = ROOT / "target/release/satlab-emulator"
    if not path.exists():
        pytest.fail(f"{path} missing: build with cargo build --release (make setup does)")
    return path
