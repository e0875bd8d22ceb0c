"""Two terminals on one forward carrier (issue 20, `forward.beam`): each with its own fade and
MODCOD, the carrier shared frame by frame.

Topology (netns.py, l2 mode): gw-host 10.250.1.1 -- [egw | satlab-emulator | est] -- st-host,
which holds two addresses: 10.250.1.2 (terminal `clear`, clear sky) and 10.250.1.3 (terminal
`faded`, 8 dB of downlink rain). The emulator tells them apart by destination prefix; both leave
by the one st port. Forward link (emuconfig.base_config): DVB-S2 ACM at 2 Msym/s, clear sky 20 dB
up and down, queue 200 packets per terminal; 20 ms one way here to keep the test short.

Each terminal is offered a UDP flow of 1500-byte packets at 8 Mbit/s for 3 s (together about
twice the carrier). Round robin gives both terminals the same number of BBFRAMEs, each at its own
MODCOD: the faded terminal's lower code rate carries fewer bytes per frame, so its throughput is
lower in the ratio of the frames' data fields, and the two together fill the carrier.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from emuconfig import EmulatorFactory
from linkcalc import ETH_HEADER, UDP_IP_HEADERS, frame_time_s
from netns import MAC_GW, MAC_ST, Topology
from tagged import read_tagged, tagged_socket
from traffic import UdpFlow, send_udp, udp_receiver, udp_senders

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

RATE_BAUD = 2.0e6
DELAY_MS = 20.0
SEND_S = 3.0
SETTLE_S = 1.0  # both queues are full well within this; arrivals before it are not counted
PAYLOAD = 1472
FADED_IP = "10.250.1.3"


def test_two_terminals_share_the_carrier_round_robin(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    topo.sh(topo.st, ["ip", "addr", "add", f"{FADED_IP}/24", "dev", "st0"])
    topo.sh(topo.gw, ["ip", "neigh", "replace", FADED_IP, "lladdr", MAC_ST, "dev", "gw0"])
    emu = emulator(
        forward={
            "delay_ms": DELAY_MS,
            "beam": {
                "scheduler": "round_robin",
                "terminals": [
                    {"name": "clear", "prefixes": [f"{topo.st_ip}/32"]},
                    {
                        "name": "faded",
                        "prefixes": [FADED_IP],
                        "attenuation": {"type": "constant", "value_db": 8.0},
                    },
                ],
            },
        },
        **{"return": {"delay_ms": DELAY_MS}},
    )
    with (
        udp_receiver(topo, topo.st, 5001) as rx_clear,
        udp_receiver(topo, topo.st, 5002) as rx_faded,
    ):
        flows = [UdpFlow(topo.st_ip, 5001, 8e6), UdpFlow(FADED_IP, 5002, 8e6)]
        with udp_senders(topo, topo.gw, flows, SEND_S, PAYLOAD) as t0:
            # Frame counts over the window in which both queues are backlogged only: at start-up
            # one terminal's packets arrive first, and after the senders stop the two queues
            # drain at different rates (the faded one needs more frames for the same packets).
            time.sleep(max(0.0, t0 + SETTLE_S - time.monotonic()))
            first = emu.status()["forward"]["terminals"]
            time.sleep(max(0.0, t0 + SEND_S - 0.3 - time.monotonic()))
            last = emu.status()["forward"]["terminals"]
        t1 = time.monotonic()
        st = emu.status()["forward"]
        rates = [
            r.rate_bps(t0 + SETTLE_S, t1, overhead_bytes=ETH_HEADER + UDP_IP_HEADERS)
            for r in (rx_clear, rx_faded)
        ]
    clear, faded = st["terminals"]
    assert [clear["name"], faded["name"]] == ["clear", "faded"]
    assert faded["attenuation_db"] == pytest.approx(8.0)
    assert faded["esn0_db"] < clear["esn0_db"] - 4
    assert faded["modcod"]["id"] < clear["modcod"]["id"], (clear["modcod"], faded["modcod"])
    # Round robin: as many frames for each while both are backlogged (one frame apart at most,
    # and the two counters are read in one status snapshot).
    frames = [b["frames"] - a["frames"] for a, b in zip(first, last, strict=True)]
    assert frames[0] > 50, frames
    assert abs(frames[0] - frames[1]) <= 1, frames
    # Each frame carries its MODCOD's data field: bytes per frame = useful rate x frame time.
    data = [t["useful_rate_bps"] * frame_time_s(t["modcod"], RATE_BAUD) / 8 for t in (clear, faded)]
    assert rates[1] < rates[0]
    assert rates[1] / rates[0] == pytest.approx(data[1] / data[0], rel=0.08), (rates, data)
    # Together they fill the carrier: two frames (one each) per round.
    cycle_s = sum(frame_time_s(t["modcod"], RATE_BAUD) for t in (clear, faded))
    carrier_bps = sum(data) * 8 / cycle_s
    assert sum(rates) == pytest.approx(carrier_bps, rel=0.08), (rates, carrier_bps)
    # Both terminals' queues overflowed: each was offered more than its share.
    assert clear["counters"]["queue_drops"] > 0 and faded["counters"]["queue_drops"] > 0
    # Per-terminal Prometheus series beside the link's own (unchanged) ones.
    code, text = emu.request("GET", "/metrics")
    assert code == 200
    for t in (clear, faded):
        row = f'satlab_emulator_terminal_modcod_id{{direction="forward",terminal="{t["name"]}"}} '
        assert f"{row}{t['modcod']['id']}" in str(text)
    assert emu.metric("modcod_id", "forward") == clear["modcod"]["id"]


def test_control_naming_a_terminal_changes_that_terminal_only(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """POST /control with `terminal` sets that terminal's forward attenuation only; without it,
    every terminal's; an unknown name, or `direction: return` on a return link without terminals
    (no return beam), is a 400 naming the field."""
    emu = emulator(
        forward={
            "delay_ms": DELAY_MS,
            "beam": {"terminals": [{"name": "a", "prefixes": [topo.st_ip]}, {"name": "b"}]},
        },
        **{"return": {"delay_ms": DELAY_MS}},
    )

    def attenuations() -> list[float]:
        return [t["attenuation_db"] for t in emu.status()["forward"]["terminals"]]

    code, resp = emu.control({"terminal": "b", "attenuation_db": 9.0})
    assert code == 200, resp
    assert [t["attenuation_db"] for t in resp["forward"]["terminals"]] == [0.0, 9.0]
    # The return link (no per-terminal state) is left alone.
    assert resp["return"]["attenuation_db"] == 0.0
    code, resp = emu.control({"direction": "forward", "attenuation_db": 4.0})
    assert code == 200, resp
    assert attenuations() == [4.0, 4.0]
    for body, field in (
        (
            {"terminal": "zz", "attenuation_db": 1.0},
            'terminal: no terminal of forward.beam is named "zz"',
        ),
        (
            {"terminal": "a", "direction": "return", "attenuation_db": 1.0},
            "terminal: this direction has no terminals",
        ),
        ({"terminal": 7, "attenuation_db": 1.0}, "terminal: "),
    ):
        code, resp = emu.control(body)
        assert code == 400 and resp["error"].startswith(field), resp
    assert attenuations() == [4.0, 4.0]


# The terminals' VLANs on the st port. This kernel has neither VLAN-filtering bridges
# (CONFIG_BRIDGE_VLAN_FILTERING) nor VLAN devices (8021q), so the switch in front of the
# terminals is played by the test: a packet socket on st0 (the trunk's far end) reads each frame's
# tag as the kernel took it off (PACKET_AUXDATA) and writes tagged frames itself.
TRUNK_VLANS = {"a": 101, "b": 102}
B_IP = "10.250.1.3"


def _tagged_frames(s: socket.socket, idle_s: float = 0.5) -> list[tuple[int | None, str]]:
    """(VLAN ID or None, IPv4 destination) of every IPv4 frame, (VLAN ID or None, "arp " + target
    address) of every ARP packet, read until `idle_s` of quiet."""
    got: list[tuple[int | None, str]] = []
    last = time.monotonic()
    while time.monotonic() - last < idle_s:
        f = read_tagged(s)
        if f is None:
            continue
        data, vid = f.data, f.vid
        # A tag the kernel took off is no longer in the data.
        if data[12:14] == b"\x08\x00":
            got.append((vid, socket.inet_ntoa(data[30:34])))
        elif data[12:14] == b"\x08\x06":
            got.append((vid, "arp " + socket.inet_ntoa(data[38:42])))
        else:
            continue
        last = time.monotonic()
    return got


def _tagged_udp(vid: int, src: str, dst: str, dport: int, payload: bytes) -> bytes:
    """An 802.1Q-tagged Ethernet frame MAC_ST -> MAC_GW carrying one UDP datagram."""
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
        socket.inet_aton(src), socket.inet_aton(dst),
    )  # fmt: skip
    words = struct.unpack("!10H", ip)
    c = sum(words)
    c = (c & 0xFFFF) + (c >> 16)
    c = (c & 0xFFFF) + (c >> 16)
    ip = ip[:10] + struct.pack("!H", ~c & 0xFFFF) + ip[12:]
    eth = bytes.fromhex(MAC_GW.replace(":", "")) + bytes.fromhex(MAC_ST.replace(":", ""))
    return eth + struct.pack("!HH", 0x8100, vid) + b"\x08\x00" + ip + udp


def test_terminals_on_vlans_are_told_apart_by_their_tags(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """Two terminals on VLANs 101 and 102 of the st port: each terminal's forward packets leave
    tagged with its VLAN ID; frames arriving tagged are counted as their terminal's and reach the
    gateway host untagged; a frame of a VLAN no terminal has is dropped and counted; the gateway
    host's ARP request for a terminal's address goes out on that terminal's VLAN."""
    topo.sh(topo.gw, ["ip", "neigh", "replace", B_IP, "lladdr", MAC_ST, "dev", "gw0"])
    emu = emulator(
        forward={
            "delay_ms": DELAY_MS,
            "beam": {
                "terminals": [
                    {"name": "a", "prefixes": [topo.st_ip], "vlan": TRUNK_VLANS["a"]},
                    {"name": "b", "prefixes": [B_IP], "vlan": TRUNK_VLANS["b"]},
                ]
            },
        },
        **{"return": {"delay_ms": DELAY_MS}},
    )
    n = 30
    trunk = tagged_socket(topo.st, "st0", timeout_s=0.2)
    try:
        for ip in (topo.st_ip, B_IP):
            send_udp(topo, topo.gw, ip, 5001, n, 200, 1e6)
        seen = _tagged_frames(trunk)
        with udp_receiver(topo, topo.gw, 5002) as at_gw:
            sent = [("a", topo.st_ip), ("b", B_IP), ("a", topo.st_ip), ("z", B_IP)]
            for name, src in sent:
                vid = TRUNK_VLANS.get(name, 999)
                for i in range(n):
                    trunk.send(_tagged_udp(vid, src, topo.gw_ip, 5002, i.to_bytes(4, "big")))
                    time.sleep(0.001)
            at_gw.wait_idle(0.5, timeout=10)
    finally:
        trunk.close()
    assert sorted(set(seen)) == [(101, topo.st_ip), (102, B_IP)]
    assert seen.count((101, topo.st_ip)) == n and seen.count((102, B_IP)) == n
    assert len(at_gw.arrivals) == 3 * n, "every frame of a terminal's VLAN, none of VLAN 999"
    st = emu.status()["forward"]["terminals"]
    assert [t["counters"]["delivered_packets"] for t in st] == [n, n]
    code, text = emu.request("GET", "/metrics")
    assert code == 200
    for row in (
        f'satlab_emulator_terminal_rx_frames_total{{direction="return",terminal="a"}} {2 * n}',
        f'satlab_emulator_terminal_rx_frames_total{{direction="return",terminal="b"}} {n}',
        f'satlab_emulator_rx_vlan_dropped_total{{direction="return",reason="unknown_vid"}} {n}',
        'satlab_emulator_rx_vlan_dropped_total{direction="return",reason="untagged"} 0',
    ):
        assert row in str(text), row
    # Without its neighbour entry, the gateway host asks (broadcast) for B_IP: terminal b's VLAN.
    topo.sh(topo.gw, ["ip", "neigh", "del", B_IP, "dev", "gw0"])
    trunk = tagged_socket(topo.st, "st0", timeout_s=0.2)
    try:
        send_udp(topo, topo.gw, B_IP, 5001, 1, 200, 1e6)
        asked = _tagged_frames(trunk)
    finally:
        trunk.close()
    assert asked and set(asked) == {(102, f"arp {B_IP}")}, asked
