"""Kernel tests of sl_newreno, the reference congestion control (bpf/newreno.bpf.c).

Nothing is mocked: the program is built with make, registered with bpftool as a
struct_ops tcp_congestion_ops, and selected for real TCP transfers over loopback inside
a fresh network namespace. Needs root, clang, bpftool, iproute2, nftables, ethtool and
a kernel with BTF at /sys/kernel/btf/vmlinux. Every test unregisters and deletes its
namespace when it ends, also when it fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ca_harness import (
    allowed_as_namespace_default,
    assert_recovers_from_periodic_loss,
    assert_registered_once,
    available_congestion_controls,
    registered,
    run,
    struct_ops_ids,
    transfer,
    unregister,
    use_real_segments,
)

CA_NAME = "sl_newreno"  # tcp_congestion_ops.name, and the struct_ops map's name
PORT = 5001


@pytest.fixture
def newreno(built: Path) -> Iterator[int]:
    with registered(built / "newreno.bpf.o", CA_NAME) as map_id:
        yield map_id


# Tests take `newreno` before `netns`, so the namespace goes first at teardown.


def test_registers_and_is_available(newreno: int) -> None:
    assert_registered_once(CA_NAME, newreno)


def test_transfer_selects_sl_newreno_with_setsockopt(newreno: int, netns: str) -> None:
    use_real_segments(netns)
    size = 8 << 20
    result = transfer(netns, size, PORT, cc=CA_NAME)
    info = result["tcp_info"]

    assert result["congestion_control"] == CA_NAME
    assert result["received"] == size
    assert result["intact"]
    # The window grew well past the initial 10. (Not "no loss": a burst of hundreds of
    # segments can overflow loopback's backlog queue, a real loss the test allows.)
    assert info["snd_cwnd"] > 20


def test_namespace_default_selects_sl_newreno(newreno: int, netns: str) -> None:
    # How a testbed host runs a scheme: its namespace's default, the application as is.
    with allowed_as_namespace_default(CA_NAME):
        run(
            "ip", "netns", "exec", netns,
            "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={CA_NAME}",
        )  # fmt: skip
        result = transfer(netns, 1 << 20, PORT)

    assert result["congestion_control"] == CA_NAME
    assert result["intact"]


def test_recovers_from_loss_and_sets_ssthresh(newreno: int, netns: str) -> None:
    # ssthresh left infinity: sl_newreno's ssthresh ran, and it never goes below 2.
    assert_recovers_from_periodic_loss(netns, PORT, CA_NAME)


def test_unregisters_cleanly(built: Path) -> None:
    with registered(built / "newreno.bpf.o", CA_NAME) as map_id:
        unregister(CA_NAME)
        assert CA_NAME not in available_congestion_controls()
        assert map_id not in struct_ops_ids(CA_NAME)
