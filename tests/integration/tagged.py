"""802.1Q tags as a packet socket sees them: the kernel takes a received tag off the frame into the
packet's metadata (PACKET_AUXDATA), so the socket asks for that and each read returns the frame
with its VLAN ID. Shared by the emulator's beam tests (tests/integration) and the testbed's VLAN
terminal tests (tests/testbed, which put this folder on sys.path)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from satlab.testbed.topology import socket_in_netns

ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA, TP_STATUS_VLAN_VALID = 263, 8, 0x10
AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata (linux/if_packet.h)


@dataclass(frozen=True)
class TaggedFrame:
    data: bytes  # as received: without the tag the kernel took off
    vid: int | None  # the tag the kernel took off (None: none)
    pkttype: int  # sockaddr_ll.sll_pkttype (PACKET_OUTGOING: the interface sent it)


def tagged_socket(netns: str, ifname: str, timeout_s: float) -> socket.socket:
    """A packet socket on `ifname` in `netns`, every protocol both ways, reporting tags; reads
    time out after `timeout_s`."""
    s = socket_in_netns(netns, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.settimeout(timeout_s)
    return s


def read_tagged(s: socket.socket) -> TaggedFrame | None:
    """The next frame on a `tagged_socket`, or None when its timeout passed first."""
    try:
        data, anc, _, addr = s.recvmsg(2048, socket.CMSG_SPACE(AUXDATA.size))
    except TimeoutError:
        return None
    vid = None
    for level, kind, raw in anc:
        if (level, kind) == (SOL_PACKET, PACKET_AUXDATA):
            status, *_, tci, _tpid = AUXDATA.unpack_from(raw)
            vid = tci & 0x0FFF if status & TP_STATUS_VLAN_VALID else None
    return TaggedFrame(data, vid, addr[2])
