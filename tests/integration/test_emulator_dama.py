"""DAMA on the return link (`return.dama`, emulator/CONFIG.md) with real traffic between real
namespaces (issue 20, "Done when": the DAMA ramp of an upload from an idle terminal; CRA-only and
RBDC-only behave as configured; collisions appear with contention access under load).

Topology and base link: conftest / emuconfig (250 ms each way). The return link here: RCS2 at
4 Msym/s, CCM QPSK 5/6 (107-byte slots of 536 symbols), DAMA with OpenSAND's 26.5 ms frame, one
frame per superframe, 180 slots per frame: the request round trip is ceil(500 / 26.5) + 1 = 20
superframes = 530 ms. A 1514-byte frame fills 1570 bytes of slots (GSE fragment headers), so the
Ethernet rate is 1514 / 1570 = 0.964 x the grant.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from emuconfig import EmulatorFactory
from linkcalc import ETH_HEADER, UDP_IP_HEADERS
from netns import Emulator, Topology
from traffic import UdpFlow, UdpReceiver, send_udp, tcp_transfer, udp_receiver, udp_senders

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UDP_PAYLOAD = 1472  # 1514-byte Ethernet frames
L2_PER_GRANT = 1514 / 1570
SUPERFRAME_S = 0.0265
REQUEST_DELAY_S = 20 * SUPERFRAME_S
ONE_WAY_S = 0.250


def dama_return(**dama: Any) -> dict[str, Any]:
    return {
        "return": {
            "delay_ms": 250.0,
            "acm": {"mode": "ccm", "modcod": 7},
            "queue": {"limit_packets": 3000, "limit_bytes": 5_000_000},
            "dama": dama,
        }
    }


def upload(topo: Topology, rate_bps: float, seconds: float) -> UdpReceiver:
    """UDP from the terminal's host to the gateway's host at rate_bps for `seconds`, into a
    receiver that has seen every packet arrive (or 1.5 s of silence)."""
    count = int(rate_bps * seconds / ((UDP_PAYLOAD + UDP_IP_HEADERS) * 8))
    with udp_receiver(topo, topo.gw) as rx:
        send_udp(topo, topo.st, topo.gw_ip, 5001, count, UDP_PAYLOAD, rate_bps)
        rx.wait_idle(idle_s=1.5, timeout=30)
    assert rx.arrivals, "nothing crossed the return link"
    return rx


def l2_rate(rx: UdpReceiver, t0: float, t1: float) -> float:
    return rx.rate_bps(t0, t1, UDP_IP_HEADERS + ETH_HEADER)


def ramp_s(rx: UdpReceiver) -> float:
    """From the first packet's send time to the first arrival of the granted-rate phase: the
    first of five arrivals in a row closer than 20 ms to the one before (CRA alone spaces them
    47 ms apart)."""
    a = rx.arrivals
    sent0 = a[0].sent_ns / 1e9
    for i in range(1, len(a) - 5):
        if all(a[j].t - a[j - 1].t < 0.020 for j in range(i, i + 5)):
            return a[i].t - sent0
    raise AssertionError("no granted-rate phase")


def test_upload_from_an_idle_terminal_shows_the_dama_ramp(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """CRA 256 kbit/s + RBDC up to 2048 kbit/s, 3 Mbit/s offered for 2.5 s: the first packets
    arrive at CRA; the RBDC grant starts after the request round trip (the next superframe start
    + 530 ms, arriving 250 ms later); then CRA + RBDC = 2304 kbit/s of slots."""
    emulator(**dama_return(cra_kbps=256, rbdc_max_kbps=2048))
    rx = upload(topo, 3e6, 2.5)
    t_first = rx.arrivals[0].t
    ramp = ramp_s(rx)
    cra_phase = l2_rate(rx, t_first, t_first + 0.5)
    granted = l2_rate(rx, t_first + 0.9, t_first + 2.9)
    modelled = REQUEST_DELAY_S + ONE_WAY_S
    print(
        f"DAMA ramp: granted phase {ramp * 1e3:.1f} ms after the first send (modelled "
        f"{modelled * 1e3:.1f} + up to {SUPERFRAME_S * 1e3:.1f} ms to the next superframe); "
        f"CRA phase {cra_phase / 1e3:.1f} kbit/s, granted phase {granted / 1e3:.1f} kbit/s"
    )
    assert modelled - 0.005 <= ramp <= modelled + SUPERFRAME_S + 0.050
    assert cra_phase == pytest.approx(256e3 * L2_PER_GRANT, rel=0.12)
    assert granted == pytest.approx(2304e3 * L2_PER_GRANT, rel=0.05)


def test_cra_only_carries_the_cra(topo: Topology, emulator: EmulatorFactory) -> None:
    """CRA 512 kbit/s, no RBDC: the offered 1.5 Mbit/s leaves at the CRA from the first packet."""
    emulator(**dama_return(cra_kbps=512, rbdc_max_kbps=0))
    rx = upload(topo, 1.5e6, 2.0)
    t_first = rx.arrivals[0].t
    rate = l2_rate(rx, t_first, t_first + 2.5)
    print(f"CRA only: {rate / 1e3:.1f} kbit/s of Ethernet frames")
    assert rate == pytest.approx(512e3 * L2_PER_GRANT, rel=0.05)


def test_rbdc_only_waits_one_request_round_trip(topo: Topology, emulator: EmulatorFactory) -> None:
    """No CRA, RBDC up to 1024 kbit/s: nothing arrives before the first grant's round trip, then
    the RBDC maximum."""
    emulator(**dama_return(cra_kbps=0, rbdc_max_kbps=1024))
    rx = upload(topo, 2e6, 2.0)
    first_s = rx.arrivals[0].t - rx.arrivals[0].sent_ns / 1e9
    t_first = rx.arrivals[0].t
    rate = l2_rate(rx, t_first, t_first + 3.0)
    print(
        f"RBDC only: first arrival {first_s * 1e3:.1f} ms after its send, {rate / 1e3:.1f} kbit/s"
    )
    modelled = REQUEST_DELAY_S + ONE_WAY_S
    assert modelled - 0.005 <= first_s <= modelled + SUPERFRAME_S + 0.050
    assert rate == pytest.approx(1024e3 * L2_PER_GRANT, rel=0.05)


def test_tcp_upload_over_dama_completes(topo: Topology, emulator: EmulatorFactory) -> None:
    """A 600 kB TCP upload (Linux CUBIC) over CRA 256 + RBDC 2048 kbit/s arrives byte-exact, no
    faster than the granted rate allows."""
    emulator(**dama_return(cra_kbps=256, rbdc_max_kbps=2048))
    res = tcp_transfer(topo, topo.st, topo.gw, topo.gw_ip, 600_000)
    print(f"TCP upload over DAMA: {res.received} bytes in {res.seconds:.2f} s")
    assert res.received == res.sent == 600_000
    assert res.received_sha256 == res.sent_sha256
    # 600 kB at the 2.2 Mbit/s ceiling alone takes 2.2 s.
    assert 2.2 < res.seconds < 30


def test_contention_access_loses_requests_under_load(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """RBDC only, requests by contention against a background load of 3 requests per contention
    slot (a request gets through with probability exp(-3) = 5 %), backoff 0-3 superframes: the
    terminal tries, collides and backs off until a request gets through, and its data cross once
    one has. (Stray frames before the upload, ARP and IPv6 neighbour discovery, also ask for
    capacity, so the tries are not all the upload's: the counts, not the first packet's delay,
    are checked.)"""
    emu = emulator(
        **dama_return(
            cra_kbps=0,
            rbdc_max_kbps=1024,
            contention={
                "slots_per_superframe": 4,
                "background_load": 3.0,
                "backoff_superframes": 3,
            },
        )
    )
    rx = upload(topo, 2e6, 2.0)
    dama = emu.status()["return"]["dama"]
    first_s = rx.arrivals[0].t - rx.arrivals[0].sent_ns / 1e9
    print(
        f"contention: {dama['contention_attempts']} tries, {dama['contention_collisions']} "
        f"collisions; first arrival {first_s * 1e3:.1f} ms after its send"
    )
    assert dama["contention_collisions"] >= 1
    assert dama["contention_attempts"] > dama["contention_collisions"]
    assert first_s >= REQUEST_DELAY_S + ONE_WAY_S - 0.005


SECOND_IP = "10.250.1.3"  # st-host's second address: the beam's second terminal


def two_terminal_beam(
    topo: Topology,
    emulator: EmulatorFactory,
    dama: dict[str, Any],
    returns: tuple[dict[str, Any], dict[str, Any]] = ({}, {}),
) -> Emulator:
    """An emulator whose beam has terminal `a` (st-host's first address) and `b` (SECOND_IP,
    added to st-host here), each with its `returns` settings, the return link `dama`
    (dama_return's), 20 ms each way."""
    topo.sh(topo.st, ["ip", "addr", "add", f"{SECOND_IP}/24", "dev", "st0"])
    terminals = [
        {"name": "a", "prefixes": [f"{topo.st_ip}/32"]},
        {"name": "b", "prefixes": [SECOND_IP]},
    ]
    for t, ret in zip(terminals, returns, strict=True):
        if ret:
            t["return"] = ret
    return emulator(
        forward={"delay_ms": 20.0, "beam": {"terminals": terminals}},
        **{"return": {**dama["return"], "delay_ms": 20.0}},
    )


def two_terminal_uploads(
    topo: Topology,
    emu: Emulator,
    offered_bps: tuple[float, float],
    settle_s: float,
    metrics: bool = False,
) -> tuple[list[float], dict[str, Any], Any]:
    """Terminal `a` (st-host's first address) and `b` (SECOND_IP) upload UDP at `offered_bps` for
    3 s; (their L2 rates at the gateway after `settle_s`, the return status 0.5 s before the end,
    the /metrics text then when `metrics`)."""
    send_s = 3.0
    offered = [
        UdpFlow(topo.gw_ip, 5001, offered_bps[0], src=topo.st_ip),
        UdpFlow(topo.gw_ip, 5002, offered_bps[1], src=SECOND_IP),
    ]
    with (
        udp_receiver(topo, topo.gw, 5001) as rx_a,
        udp_receiver(topo, topo.gw, 5002) as rx_b,
    ):
        with udp_senders(topo, topo.st, offered, send_s, UDP_PAYLOAD) as t0:
            time.sleep(send_s - 0.5)
            st = emu.status()["return"]
            text = None
            if metrics:
                code, text = emu.request("GET", "/metrics")
                assert code == 200
        rates = [l2_rate(rx, t0 + settle_s, t0 + send_s) for rx in (rx_a, rx_b)]
    return rates, st, text


def test_two_terminals_share_the_return_pool_each_with_its_own_requests(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """`forward.beam` with two terminals told apart by source prefix (st-host's two addresses)
    and `return.dama` CRA 256 + RBDC up to 1024 kbit/s each, 20 ms each way: terminal `a` offers
    600 kbit/s and gets all of it; terminal `b` offers 2 Mbit/s and gets CRA + the RBDC maximum,
    1280 kbit/s of slots. Each terminal's requests and grant are in the status and metrics."""
    emu = two_terminal_beam(topo, emulator, dama_return(cra_kbps=256, rbdc_max_kbps=1024))
    rates, st, text = two_terminal_uploads(topo, emu, (600e3, 2e6), 0.8, metrics=True)
    print(f"return beam: a {rates[0] / 1e3:.1f} kbit/s, b {rates[1] / 1e3:.1f} kbit/s")
    a, b = st["terminals"]
    assert [a["name"], b["name"]] == ["a", "b"]
    assert rates[0] == pytest.approx(600e3 * 1514 / 1500, rel=0.08)
    assert rates[1] == pytest.approx(1280e3 * L2_PER_GRANT, rel=0.06)
    assert b["dama"]["requested_rbdc_kbps"] == 1024.0
    assert b["dama"]["granted_kbps"] == pytest.approx(1280, rel=0.05)
    # a's grant follows its requests (its arrivals per superframe plus its small backlog).
    assert 256 < a["dama"]["granted_kbps"] < 1280
    assert b["queue_packets"] > a["queue_packets"]
    row = 'satlab_emulator_terminal_granted_kbps{direction="return",terminal="b"} '
    assert row in str(text)
    # A terminal's return link is controlled alone.
    code, resp = emu.control({"terminal": "b", "direction": "return", "attenuation_db": 2.0})
    assert code == 200, resp
    assert [t["attenuation_db"] for t in resp["return"]["terminals"]] == [0.0, 2.0]


def test_terminals_of_a_beam_collide_in_their_contention_slots(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """Six terminals of a return beam (st-host's six addresses), RBDC only, requests by contention
    in 2 slots a superframe, no background load, 20 ms each way (a request round trip of 3
    superframes): the six start sending in the same superframe and keep asking by contention
    until a grant comes, so requests of the beam's own terminals share slots and are lost (six
    in two slots cannot all be alone); each terminal retries after its backoff until one gets
    through, and every terminal's data cross."""
    addrs = [topo.st_ip] + [f"10.250.1.{h}" for h in range(3, 8)]
    for a in addrs[1:]:
        topo.sh(topo.st, ["ip", "addr", "add", f"{a}/24", "dev", "st0"])
    contention = {"slots_per_superframe": 2, "background_load": 0.0, "backoff_superframes": 3}
    emu = emulator(
        forward={
            "delay_ms": 20.0,
            "beam": {
                "terminals": [{"name": f"t{k}", "prefixes": [a]} for k, a in enumerate(addrs)]
            },
        },
        **{
            "return": {
                **dama_return(cra_kbps=0, rbdc_max_kbps=256, contention=contention)["return"],
                "delay_ms": 20.0,
            }
        },
    )
    flows = [UdpFlow(topo.gw_ip, 5001 + k, 100e3, src=a) for k, a in enumerate(addrs)]
    with contextlib.ExitStack() as stack:
        rxs = [stack.enter_context(udp_receiver(topo, topo.gw, f.port)) for f in flows]
        with udp_senders(topo, topo.st, flows, 1.0, UDP_PAYLOAD):
            pass
        for rx in rxs:
            rx.wait_idle(idle_s=1.0, timeout=15)
    terms = emu.status()["return"]["terminals"]
    code, text = emu.request("GET", "/metrics")
    counts = [(t["dama"]["contention_attempts"], t["dama"]["contention_collisions"]) for t in terms]
    print(f"beam contention (tries, collisions) per terminal: {counts}")
    # Two requests in one slot both count: the beam's own collisions come at least in pairs.
    assert sum(c for _, c in counts) >= 2, counts
    assert all(tries > c for tries, c in counts), "every terminal got a request through"
    assert all(rx.arrivals for rx in rxs), [len(rx.arrivals) for rx in rxs]
    # No background load: every collision was with another terminal of the beam.
    assert [t["dama"]["contention_beam_collisions"] for t in terms] == [c for _, c in counts]
    assert code == 200
    for t, (tries, lost) in zip(terms, counts, strict=True):
        labels = f'{{direction="return",terminal="{t["name"]}"}}'
        for series, value in [
            ("tries", tries),
            ("successes", tries - lost),
            ("beam_collisions", lost),
            ("background_collisions", 0),
        ]:
            row = f"satlab_emulator_terminal_contention_{series}_total{labels} {value}\n"
            assert row in str(text), row


def test_two_terminals_at_different_return_modcods_get_different_return_rates(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """Two terminals of a return beam with their own fixed return MODCODs
    (`forward.beam.terminals[].return.modcod`): `a` at 16QAM 5/6 (192-byte bursts), `b` at QPSK
    1/3 (37-byte bursts). Each may take all 10 slots of a 26.5 ms frame (2 carriers) and asks for
    more than that, so each gets 10 slots a superframe and carries its MODCOD's payload in them:
    579.6 and 111.7 kbit/s of slots."""
    dama = dama_return(carriers=2, timeslots_per_frame=10, rbdc_max_kbps=4096)
    emu = two_terminal_beam(topo, emulator, dama, ({"modcod": 12}, {"modcod": 3}))
    rates, st, _ = two_terminal_uploads(topo, emu, (1e6, 1e6), 1.0)
    slots = [10 * b * 8 / SUPERFRAME_S for b in (192, 37)]
    print(
        f"return MODCODs: a {rates[0] / 1e3:.1f} of {slots[0] / 1e3:.1f} kbit/s of slots, "
        f"b {rates[1] / 1e3:.1f} of {slots[1] / 1e3:.1f}"
    )
    a, b = st["terminals"]
    assert (a["modcod"]["id"], b["modcod"]["id"]) == (12, 3)
    assert (a["dama"]["slot_bytes"], b["dama"]["slot_bytes"]) == (192, 37)
    assert a["dama"]["granted_slots"] == b["dama"]["granted_slots"] == 10
    # GSE fragment headers take a few percent of the slots, more of the small bursts.
    assert 0.85 * slots[0] < rates[0] < 1.02 * slots[0]
    assert 0.75 * slots[1] < rates[1] < 1.02 * slots[1]
