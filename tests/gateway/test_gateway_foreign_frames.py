"""The gateway's outside port takes only the frames meant for its edge (gateway/src/macfilter.rs).

On the container testbed, terminals 2..N are macvlans whose parent is the st box's `wan`, the st
gateway's outside port: every frame the satellite segment brings to them crosses that port too.
The port is promiscuous (frames for the router's sat0 are not addressed to `wan`), so without a
filter the gateway read them, counted them, sampled CETEN on them and forwarded them to a kernel
that dropped them. Here the same segment is built on the namespace testbed: a macvlan station on
the st edge's `wan`, frames for it injected from the emulator's side of the cable.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest
from gwnet import GW_SAT, Topology, _mac

from satlab.testbed.topology import socket_in_netns

ETH_P_EXPERIMENTAL = 0x88B5  # IEEE 802 local experimental: no kernel protocol takes it
FRAMES = 20
STATION = "station2"  # another terminal's satellite interface on the same segment


@pytest.fixture
def cable(topo: Topology) -> Iterator[socket.socket]:
    """A packet socket on the emulator's st port, the far end of the st edge's `wan`."""
    s = socket_in_netns(topo.ns("emu"), socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.bind(("st", 0))
        yield s
    finally:
        s.close()


def _mac_bytes(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def _ingress_read(topo: Topology) -> int:
    return int(topo.gw_status("st")["counters"]["ingress_rx_frames"])


def _rx_packets(topo: Topology, ifname: str) -> int:
    return int(topo.sh("st", ["cat", f"/sys/class/net/{ifname}/statistics/rx_packets"]))


def _taken(topo: Topology, cable: socket.socket, dst: str) -> int:
    """Sends FRAMES frames to `dst` over the cable; how many the st gateway read."""
    src = _mac_bytes(_mac(topo.ns("emu"), "st"))
    before = _ingress_read(topo)
    for i in range(FRAMES):
        payload = i.to_bytes(2, "big") + bytes(44)
        cable.send(_mac_bytes(dst) + src + ETH_P_EXPERIMENTAL.to_bytes(2, "big") + payload)
    time.sleep(0.5)
    return _ingress_read(topo) - before


def _wait_for_log(path: str, text: str) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError), open(path) as f:
            if text in f.read():
                return
        time.sleep(0.05)
    raise AssertionError(f"{path}: no {text!r} within 5 s")


def test_frames_for_another_station_on_the_segment_are_not_taken(
    topo: Topology, cable: socket.socket
) -> None:
    topo.sh("st", ["ip", "link", "add", "link", "wan", "name", STATION, "type", "macvlan"])
    topo.sh("st", ["ip", "link", "set", STATION, "up"])
    station, router = _mac(topo.ns("st"), STATION), _mac(topo.ns("st"), "sat0")
    topo.start_gateway(topo.gateway_config("st"))
    station_rx = _rx_packets(topo, STATION)

    # Before the router has sent anything the gateway does not know its MAC and takes every
    # frame: the other station's reach and are counted (the pollution this test is about).
    assert _taken(topo, cable, station) == FRAMES

    # The router speaks (its ICMP echo crosses the gateway's inside port): from now on only its
    # frames and group addresses are taken, in the kernel.
    topo.sh("st", ["ping", "-c", "1", "-W", "0.2", GW_SAT], check=False)
    _wait_for_log(str(topo.work / "gateway-st.log"), f"taking only frames to {router}")
    assert _taken(topo, cable, station) == 0, "another station's frames were taken"
    assert _taken(topo, cable, router) == FRAMES
    assert _taken(topo, cable, "ff:ff:ff:ff:ff:ff") == FRAMES, "broadcast must pass (ARP)"
    # The station itself got both batches meant for it (and the broadcast): the filter is the
    # gateway's socket's only.
    assert _rx_packets(topo, STATION) - station_rx == 3 * FRAMES
