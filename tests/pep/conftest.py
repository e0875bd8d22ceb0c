"""The PEP tier: real namespaces (satlab.testbed), the real emulator, satlab-pep at the edges;
each test checks it left no namespace behind (the testbed makes its interfaces inside them; the root
namespace's interfaces are not compared, other tiers and containers change them meanwhile)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from satlab.settings import PEP_BIN
from satlab.testbed import topology
from satlab.testbed.testbed import STATE_ROOT

sys.path.insert(0, str(Path(__file__).parent))


def _ours(namespace: str) -> bool:
    tid = namespace[len(topology.PREFIX) :].split("-", 1)[0]
    try:
        owner = json.loads((STATE_ROOT / tid / "state.json").read_text())["owner_pid"]
    except (OSError, ValueError, KeyError):
        return True
    return bool(owner == os.getpid())


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.fail("the PEP tier needs root (network namespaces)")
    if not PEP_BIN.exists():
        pytest.fail(f"{PEP_BIN} missing: build with cargo build --release (make setup does)")
    before = set(topology.project_namespaces())
    yield
    new = set(topology.project_namespaces()) - before
    ours = {n for n in new if _ours(n)}
    # Listed again after the states were read: another testbed that closed in between removed
    # its namespaces before its state, and a namespace gone is not left behind.
    assert not ours & set(topology.project_namespaces()), "namespaces left behind"
