"""CETEN: the st edge's corruption-survival EWMA (alpha 0.5, every packet of the forward link)
tracks the injected packet error rate, the forward fields reach the receiver multiplied along the
path, and the edge reflects them to the sender on the receiver's ACKs."""

from __future__ import annotations

import struct
import time

from gwnet import (
    CLI,
    SRV,
    Capture,
    RawSender,
    Topology,
    ceten_option,
    find_option,
    pace,
    tcp_segment,
)

PER = 0.10
BITS = 1000 * 8  # bit errors hit everything after the Ethernet header: a 1000-byte IP packet
BER = 1 - (1 - PER) ** (1 / BITS)
N = 1500


def test_corruption_survival_tracks_the_injected_per(topo: Topology) -> None:
    topo.start_emulator(
        topo.emulator_config(forward={"bit_errors": {"model": "uniform", "ber": BER}})
    )
    topo.start_gateway(topo.gateway_config("gw", ceten={"enabled": True}))
    topo.start_gateway(topo.gateway_config("st", ceten={"enabled": True, "reflect": True}))
    at_cli = Capture(topo.ns("cli"), "eth0", want=lambda ip: ip[9] == 6)
    at_srv = Capture(topo.ns("srv"), "eth0", want=lambda ip: ip[9] == 6)
    tx = RawSender(topo.ns("srv"))
    opt = ceten_option()
    payload = b"c" * (1000 - 20 - 20 - len(opt))
    try:
        # SYN-less, ACK-less segments: the client's kernel answers each with RST|ACK, a pure ACK
        # the st edge reflects the forward values into.
        pace(
            300.0,
            N,
            lambda i: tx.send(
                tcp_segment(
                    SRV, CLI, 5201, 40000, 7000 + i * len(payload), payload, opt, flags=0x08
                )
            ),
        )
        time.sleep(0.5)
        st = topo.gw_status("st")
        corr = st["ceten"]["corruption"]
        emu = topo.emu("GET", "/status")["forward"]["counters"]
        injected = emu["corrupted_packets"] / emu["offered_packets"]
        assert corr["samples"] >= N
        estimated = 1 - corr["mean_estimate"]
        # The EWMA (alpha 0.5) swings with every packet; its mean over the run is the estimate.
        assert abs(estimated - injected) <= 0.10 * injected, (estimated, injected)
        assert abs(estimated - PER) <= 0.25 * PER, (estimated, PER)

        # Forward fields at the receiver: corruption multiplied by the st edge's estimate,
        # congestion by the gw edge's (no drops: 1.0).
        fwd = []
        for _, ip in at_cli.snapshot():
            o = find_option(ip[20:], 0x4345, 12)
            if o is not None:
                fwd.append(struct.unpack("!HH", o[4:8]))
        assert len(fwd) >= 0.8 * N
        assert all(g == 0xFFFF for _, g in fwd)
        mean_fwd = sum(c for c, _ in fwd) / len(fwd) / 65535
        assert abs((1 - mean_fwd) - injected) <= 0.15 * injected, (mean_fwd, injected)

        # Reflection: the RSTs reach the sender with the reverse fields set.
        refl = []
        for _, ip in at_srv.snapshot():
            o = find_option(ip[20:], 0x4345, 12)
            if o is not None:
                refl.append(struct.unpack("!HH", o[8:12]))
        assert len(refl) >= 0.5 * N, len(refl)
        assert st["counters"]["ceten_inserted"] >= len(refl)
        mean_rev = sum(c for c, _ in refl) / len(refl) / 65535
        assert abs((1 - mean_rev) - injected) <= 0.25 * injected, (mean_rev, injected)
    finally:
        tx.close()
        at_cli.close()
        at_srv.close()
