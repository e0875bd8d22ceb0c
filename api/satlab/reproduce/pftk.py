"""The PFTK model of a Reno sender's steady-state throughput, with timeouts.

Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
Validation", SIGCOMM 1998, section 2.3, the "full model" (their equation 32, the send rate in
packets per second, timeouts and the receiver's window limit included):

    E[W] = (2 + b) / (3b) + sqrt(8 (1 - p) / (3 b p) + ((2 + b) / (3b))^2)
    Q(p, w) = min(1, (1 - (1-p)^3) (1 + (1-p)^3 (1 - (1-p)^(w-3))) / (1 - (1-p)^w))
    f(p) = 1 + p + 2p^2 + 4p^3 + 8p^4 + 16p^5 + 32p^6

    E[W] < Wmax:  B = ((1-p)/p + E[W] + Q(p, E[W]) / (1-p))
                      / (RTT (b/2 E[W] + 1) + Q(p, E[W]) T0 f(p) / (1-p))
    otherwise:    B = ((1-p)/p + Wmax + Q(p, Wmax) / (1-p))
                      / (RTT (b/8 Wmax + (1-p) / (p Wmax) + 2) + Q(p, Wmax) T0 f(p) / (1-p))

p: the probability that a packet is lost (the paper's loss indications per packet sent), b:
packets acknowledged by one ACK, RTT and T0 (the first retransmission timeout) in seconds, Wmax
the receiver's window in packets. The report draws it beside the measured NewReno goodput; the
model is Reno's, so NewReno's better recovery of several losses in a window sits somewhat above it.
"""

from __future__ import annotations

import math


def _q(p: float, w: float) -> float:
    """The probability that a loss in a window of w packets is a timeout (equation 23's Q-hat)."""
    if w <= 3:
        return 1.0
    s = 1.0 - p
    return min(1.0, float((1 - s**3) * (1 + s**3 * (1 - s ** (w - 3))) / (1 - s**w)))


def _f(p: float) -> float:
    return 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def send_rate_pps(p: float, rtt_s: float, t0_s: float, wmax_packets: float, b: int = 2) -> float:
    """PFTK's full model: packets per second at loss probability p (0 < p < 1)."""
    if not 0 < p < 1:
        raise ValueError(f"p: {p} must be in (0, 1)")
    if rtt_s <= 0 or t0_s <= 0 or wmax_packets < 1 or b < 1:
        raise ValueError("rtt_s and t0_s must be > 0, wmax_packets >= 1 and b >= 1")
    c = (2 + b) / (3 * b)
    ew = c + math.sqrt(8 * (1 - p) / (3 * b * p) + c * c)
    tail = _f(p) / (1 - p)
    if ew < wmax_packets:
        q = _q(p, ew)
        return ((1 - p) / p + ew + q / (1 - p)) / (rtt_s * (b / 2 * ew + 1) + q * t0_s * tail)
    w = wmax_packets
    q = _q(p, w)
    return ((1 - p) / p + w + q / (1 - p)) / (
        rtt_s * (b / 8 * w + (1 - p) / (p * w) + 2) + q * t0_s * tail
    )


def goodput_bps(
    p: float, rtt_s: float, t0_s: float, wmax_packets: float, mss_bytes: int, b: int = 2
) -> float:
    """The model's rate in bit/s of payload (every packet sent counted as carrying one MSS)."""
    return send_rate_pps(p, rtt_s, t0_s, wmax_packets, b) * mss_bytes * 8


def loss_from_ber(ber: float, packet_bytes: int) -> float:
    """The probability that a packet of packet_bytes has at least one bit in error."""
    return 1.0 - (1.0 - ber) ** (8 * packet_bytes)
