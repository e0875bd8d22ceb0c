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

import threading
import time

import pytest
from emuconfig import EmulatorFactory
from linkcalc import ETH_HEADER, UDP_IP_HEADERS, frame_time_s
from netns import MAC_ST, Topology
from traffic import send_udp, udp_receiver

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
        senders = [
            threading.Thread(
                target=send_udp,
                args=(topo, topo.gw, ip, port, int(SEND_S * 8e6 / 1500 / 8), PAYLOAD, 8e6),
            )
            for ip, port in ((topo.st_ip, 5001), (FADED_IP, 5002))
        ]
        t0 = time.monotonic()
        for s in senders:
            s.start()
        for s in senders:
            s.join()
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
    # Round robin: as many frames for each (both always backlogged).
    assert abs(clear["frames"] - faded["frames"]) <= 0.02 * clear["frames"] + 1
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
    every terminal's; an unknown name or `direction: return` is a 400 naming the field."""
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
        ({"terminal": "a", "direction": "return", "attenuation_db": 1.0}, "direction: "),
        ({"terminal": 7, "attenuation_db": 1.0}, "terminal: "),
    ):
        code, resp = emu.control(body)
        assert code == 400 and resp["error"].startswith(field), resp
    assert attenuations() == [4.0, 4.0]
