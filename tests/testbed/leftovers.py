"""The check that a test left no testbed namespace behind, for the testbed and PEP tiers' conftest.

The tests share the machine's testbed state directory with every other testbed (as they must: the
sweeper decides from it what is orphaned), so a new namespace counts only when no other live
process owns its testbed."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

from satlab.testbed import topology
from satlab.testbed.testbed import STATE_ROOT


def _owned_by_another_process(namespace: str) -> bool:
    """A namespace of a testbed another live process runs (a worker, a second test session)."""
    tid = namespace[len(topology.PREFIX) :].split("-", 1)[0]
    try:
        owner = json.loads((STATE_ROOT / tid / "state.json").read_text())["owner_pid"]
    except (OSError, ValueError, KeyError):
        return False
    return bool(owner != os.getpid())


@contextlib.contextmanager
def no_namespaces_left() -> Iterator[None]:
    """Fails when a project namespace made during the block and not another process's remains."""
    before = set(topology.project_namespaces())
    yield
    new = set(topology.project_namespaces()) - before
    unowned = {n for n in new if not _owned_by_another_process(n)}
    # Listed again after the states were read: another testbed that closed in between removed
    # its namespaces before its state, and a namespace gone is not left behind.
    assert not unowned & set(topology.project_namespaces()), "namespaces left behind"
