"""The harness acting on a BPF object it listed: one freed in between is gone, not an error.

A struct_ops map listed by `bpftool struct_ops show` can be freed before the harness dumps
or unregisters it (an unregistered map lingers in TOBEFREE until its last socket closes),
and a loader's link can go while a test looks at it. Real bpftool, real kernel: an id the
kernel never hands out stands for the object freed between listing and acting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from ca_harness import bpftool_by_id, run, struct_ops_state, unregister
from scheme_loader import BPFFS, ensure_bpffs, link_exists

# The kernel allocates map, link and prog ids from [1, INT_MAX): INT_MAX never names one.
FREED_ID = 0x7FFFFFFF


@pytest.fixture
def plain_map() -> Iterator[int]:
    """A real (array, not struct_ops) map, pinned for the duration; yields its id."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a BPF map: run as root")
    ensure_bpffs()
    pin = BPFFS / f"sltest-harness-{os.getpid()}"
    run("bpftool", "map", "create", str(pin), "type", "array", "key", "4", "value", "4",
        "entries", "1", "name", "sltest_plain")  # fmt: skip
    try:
        yield int(json.loads(run("bpftool", "-j", "map", "show", "pinned", str(pin)))["id"])
    finally:
        pin.unlink()


def test_a_struct_ops_map_freed_after_listing_has_no_state() -> None:
    assert struct_ops_state(FREED_ID) is None


def test_unregistering_a_freed_struct_ops_map_is_done() -> None:
    assert bpftool_by_id("map", FREED_ID, "struct_ops", "unregister") is None
    unregister("sl_not_registered")  # nothing listed, nothing to do


def test_a_freed_link_no_longer_exists() -> None:
    assert not link_exists(FREED_ID)


def test_a_live_map_is_shown(plain_map: int) -> None:
    shown = bpftool_by_id("map", plain_map, "map", "show")
    assert shown is not None and '"sltest_plain"' in shown


def test_any_other_error_still_fails(plain_map: int) -> None:
    """The map exists but is no struct_ops map: bpftool fails, and so must the harness."""
    with pytest.raises(AssertionError, match="is not a struct_ops map"):
        struct_ops_state(plain_map)
    with pytest.raises(AssertionError, match="is not a struct_ops map"):
        bpftool_by_id("map", plain_map, "struct_ops", "unregister")
