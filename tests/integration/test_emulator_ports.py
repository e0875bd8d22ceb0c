"""What the emulator's af_packet ports must keep of a frame (emulator/README.md, Ports): VLAN tags
the kernel moved into metadata are put back (802.1Q and 802.1ad), and GSO super-packets (too big
for a receive-ring frame, read whole from the socket) are segmented and arrive byte-exact.

Topology as in test_emulator_link.py (netns.py, l2 mode); a fast fixed-rate link with a short
delay so the tests take seconds.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from emuconfig import FAST_LINK, EmulatorFactory
from netns import MAC_GW, MAC_ST, Topology
from traffic import tcp_transfer

from satlab.testbed.topology import socket_in_netns

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
ETH_P_ALL = 0x0003
ETH_P_EXPERIMENTAL = 0x88B5  # IEEE local experimental EtherType: no host stack answers it


def vlan_frame(tags: list[tuple[int, int]], marker: bytes) -> bytes:
    """Ethernet gw-host -> st-host carrying `tags` [(tpid, tci), outer first] and then an
    experimental-EtherType payload starting with `marker`."""
    f = bytes.fromhex(MAC_ST.replace(":", "")) + bytes.fromhex(MAC_GW.replace(":", ""))
    for tpid, tci in tags:
        f += struct.pack("!HH", tpid, tci)
    return f + struct.pack("!H", ETH_P_EXPERIMENTAL) + marker + bytes(range(64))


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tags", "label"),
    [
        ([(0x8100, (5 << 13) | 100)], "802.1Q PCP 5 VID 100"),
        ([(0x88A8, (3 << 13) | (1 << 12) | 200), (0x8100, 300)], "802.1ad DEI, inner VID 300"),
    ],
)
def test_vlan_tagged_frames_cross_with_their_tag(
    topo: Topology, emulator: EmulatorFactory, tags: list[tuple[int, int]], label: str
) -> None:
    """Tagged frames sent raw on gw-host's veth: the receiving kernel moves the outer tag into
    metadata before any packet socket sees the frame, so the emulator's rx ring reports it beside
    the frame and the data plane must put it back. st-host must get the same frame, outer tag
    (TPID, PCP, DEI, VID) and inner tag included (read back the same way, from PACKET_AUXDATA)."""
    emulator(**FAST_LINK)
    rx = socket_in_netns(topo.st, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    tx = socket_in_netns(topo.gw, socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        rx.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        rx.bind(("st0", ETH_P_ALL))
        rx.settimeout(0.2)
        tx.bind(("gw0", 0))
        marker = f"satlab-vlan-{label}".encode()
        sent = vlan_frame(tags, marker)
        got: list[tuple[bytes, int, int, int]] = []
        deadline = time.monotonic() + 5.0
        while not got and time.monotonic() < deadline:
            tx.send(sent)
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                try:
                    data, anc, _, _ = rx.recvmsg(4096, socket.CMSG_SPACE(20))
                except TimeoutError:
                    break
                if marker not in data:
                    continue
                for level, kind, raw in anc:
                    if level == SOL_PACKET and kind == PACKET_AUXDATA:
                        status, _, _, _, _, tci, tpid = struct.unpack("=IIIHHHH", raw[:20])
                        got.append((data, status, tci, tpid))
        assert got, f"{label}: frame did not arrive"
        data, status, tci, tpid = got[0]
        outer_tpid, outer_tci = tags[0]
        assert status & TP_STATUS_VLAN_VALID, f"{label}: arrived without its outer tag"
        assert status & TP_STATUS_VLAN_TPID_VALID and tpid == outer_tpid, hex(tpid)
        assert tci == outer_tci, f"{label}: TCI {tci:#06x}, sent {outer_tci:#06x}"
        # The rest of the frame, inner tag included, is unchanged.
        assert data == sent[:12] + sent[16:], f"{label}: frame changed"
    finally:
        rx.close()
        tx.close()


# ---------------------------------------------------------------------------------------------
def test_gso_superpackets_are_segmented_and_arrive_byte_exact(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """The sending host's veth with TSO/GSO and checksum offload on: the emulator reads TCP
    super-packets of up to 64 KiB (bigger than a receive-ring frame, so read from the socket
    queue), segments them, and an 8 MB transfer arrives byte-exact."""
    emu = emulator(**FAST_LINK)
    topo.sh(topo.gw, ["ethtool", "-K", "gw0", "tso", "on", "gso", "on", "tx", "on", "sg", "on"])
    res = tcp_transfer(topo, topo.gw, topo.st, topo.st_ip, 8_000_000)
    assert res.received == res.sent == 8_000_000
    assert res.received_sha256 == res.sent_sha256
    supers = emu.metric("gso_superpackets_total", "forward")
    segs = emu.metric("gso_segments_total", "forward")
    print(f"{supers:.0f} super-packets -> {segs:.0f} segments in {res.seconds:.2f} s")
    assert supers > 0 and segs > 2 * supers
    assert emu.metric("rx_invalid_total", "forward") == 0
