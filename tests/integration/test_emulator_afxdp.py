"""The emulator's `af_xdp` ports (emulator/README.md, Ports): a real TCP flow crosses the emulator
with both ports on AF_XDP sockets bound to queue 0 of the emu namespace's veth ends (veth gives
native XDP in copy mode), byte-exact; the XDP program goes away with the emulator; an MTU whose
frames do not fit a UMEM chunk is refused at start with the limits.

Topology as in test_emulator_link.py (netns.py, l2 mode, offloads off on the hosts' veths).
"""

from __future__ import annotations

import json

import pytest
from emuconfig import FAST_LINK, EmulatorFactory
from netns import EmulatorError, Topology
from traffic import tcp_transfer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

XDP_PORTS = {
    "gw": {"kind": "af_xdp", "interface": "egw", "queue": 0, "xdp_mode": "auto"},
    "st": {"kind": "af_xdp", "interface": "est"},
}


def xdp_attached(topo: Topology, ifname: str) -> bool:
    out = topo.sh(topo.emu, ["ip", "-j", "-d", "link", "show", ifname])
    return "xdp" in json.loads(out.stdout)[0]


def test_tcp_crosses_af_xdp_ports_byte_exact_and_the_program_goes_with_the_emulator(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    emu = emulator(ports=XDP_PORTS, **FAST_LINK)
    log = emu.log()
    for port in ("egw", "est"):
        assert f"port {port}: af_xdp queue 0: XDP native, copy mode" in log, log
        assert xdp_attached(topo, port)
    res = tcp_transfer(topo, topo.gw, topo.st, topo.st_ip, 4_000_000)
    assert res.received == res.sent == 4_000_000
    assert res.received_sha256 == res.sent_sha256
    assert emu.metric("rx_invalid_total", "forward") == 0
    emu.stop()
    # The program was attached through a BPF link: it is gone with the process.
    assert not xdp_attached(topo, "egw") and not xdp_attached(topo, "est")


def test_an_mtu_too_big_for_a_umem_chunk_is_refused_at_start(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    topo.sh(topo.emu, ["ip", "link", "set", "egw", "mtu", "9000"])
    with pytest.raises(EmulatorError) as e:
        emulator(ports=XDP_PORTS, **FAST_LINK)
    assert "port egw: af_xdp: MTU 9000 means frames of up to 9018 bytes, more than the 3840" in str(
        e.value
    ), str(e.value)
