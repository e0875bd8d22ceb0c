"""ETEN notices (BETEN): the st edge turns corrupted forward packets into ICMP type-253 notices that
reach the sender over the return link, delayed by it, and lost when it loses them."""

from __future__ import annotations

import time

from gwnet import (
    CLI,
    HMAC_KEY,
    SRV,
    ST_SAT,
    Capture,
    RawSender,
    Topology,
    pace,
    parse_notice,
    tcp_segment,
)

FWD_DELAY_MS = 100.0
RET_DELAY_MS = 100.0
# PER of a 1000-byte IP packet (8000 bits after the Ethernet header) = 1 - (1 - ber)^8000 ~ 15 %
BER = 2e-5
PAYLOAD = b"x" * 960  # IP 1000 bytes


def test_notices_reach_sender_delayed_and_are_lost_with_the_return_link(topo: Topology) -> None:
    topo.start_emulator(
        topo.emulator_config(
            forward={
                "delay_ms": FWD_DELAY_MS,
                "bit_errors": {"model": "uniform", "ber": BER},
                # one MODCOD (32APSK 9/10, 16.05 dB): phase 3's rain erases frames, ACM cannot help
                "acm": {"mode": "ccm", "modcod": 28},
            },
            **{
                "return": {
                    "delay_ms": RET_DELAY_MS,
                    "bit_errors": {"model": "none", "action": "drop"},
                }
            },
        )
    )
    topo.start_gateway(topo.gateway_config("gw"))
    topo.start_gateway(
        topo.gateway_config(
            "st",
            eten={
                "enabled": True,
                "source_ip": ST_SAT,
                "hmac_key_hex": HMAC_KEY.hex(),
                "rate_limit_per_s": 10000,
                "burst": 1000,
            },
        )
    )
    # The client's kernel answers our crafted segments with RSTs: keep the return link for notices.
    topo.sh(
        "cli", ["iptables", "-A", "OUTPUT", "-p", "tcp", "--tcp-flags", "RST", "RST", "-j", "DROP"]
    )
    cap = Capture(topo.ns("srv"), "eth0", want=lambda ip: ip[9] == 1)
    tx = RawSender(topo.ns("srv"))
    try:
        seq0 = 1_000_000

        def run(n: int, base: int) -> dict[int, float]:
            times = pace(
                150.0,
                n,
                lambda i: tx.send(
                    tcp_segment(SRV, CLI, 5201, 40000, base + i * len(PAYLOAD), PAYLOAD)
                ),
            )
            return {base + i * len(PAYLOAD): t for i, t in enumerate(times)}

        # Phase 1: clean return link: every notice arrives, 2 one-way delays after the segment left.
        sent = run(300, seq0)
        time.sleep(0.6)
        notices = [(t, parse_notice(ip)) for t, ip in cap.snapshot()]
        notices = [(t, n) for t, n in notices if n is not None]
        st = topo.gw_status("st")["counters"]
        assert st["eten_notices"] >= 20, st
        assert len(notices) == st["eten_notices"], (len(notices), st)
        fwd = topo.emu("GET", "/status")["forward"]["counters"]
        # every corrupted packet whose headers survived was notified
        assert st["eten_events"] == fwd["corrupted_packets"]
        assert st["eten_notices"] + st["eten_unidentified"] == st["eten_events"]
        base_delay = (FWD_DELAY_MS + RET_DELAY_MS) / 1000
        for t, n in notices:
            assert n["checksum_ok"] and n["mac_ok"], n
            assert n["code"] == 0  # corrupted
            assert (n["src"], n["dst"], n["proto"], n["sport"], n["dport"]) == (
                SRV,
                CLI,
                6,
                5201,
                40000,
            )
            assert n["seq"] in sent, n
            delay = t - sent[n["seq"]]
            assert base_delay <= delay < base_delay + 0.15, (delay, n)
        seqs = [n["notice_seq"] for _, n in notices]
        assert len(set(seqs)) == len(seqs)

        # Phase 2: the return link corrupts about 2/3 of the notices and drops what it corrupts.
        before = len(notices)
        sent_before = st["eten_notices"]
        topo.emu("POST", "/control", {"direction": "return", "ber": 2e-3})
        run(300, seq0 + 10_000_000)
        time.sleep(0.6)
        got = len([1 for _, ip in cap.snapshot() if parse_notice(ip)]) - before
        st = topo.gw_status("st")["counters"]
        sent_now = st["eten_notices"] - sent_before
        ret = topo.emu("GET", "/status")["return"]["counters"]
        assert sent_now >= 20
        assert got < sent_now, (got, sent_now)
        # what the return link corrupted (and dropped) is exactly what did not arrive
        assert got + ret["corrupted_packets"] == sent_now, (got, sent_now, ret)
        assert 0.4 <= 1 - got / sent_now <= 0.9

        # Phase 3: 3 dB of rain on the forward downlink takes Es/N0 below 32APSK 9/10's threshold:
        # every frame is erased, and every packet gets an "erased" notice (code 1).
        topo.emu("POST", "/control", {"direction": "return", "ber": 0.0})
        topo.emu("POST", "/control", {"direction": "forward", "attenuation_db": 3.0, "ber": 0.0})
        before = len(cap.snapshot())
        sent3 = run(40, seq0 + 20_000_000)
        time.sleep(0.6)
        erased = [n for n in (parse_notice(ip) for _, ip in cap.snapshot()[before:]) if n]
        assert {n["code"] for n in erased} == {1}, erased[:3]
        assert {n["seq"] for n in erased} == set(sent3)
    finally:
        tx.close()
        cap.close()
