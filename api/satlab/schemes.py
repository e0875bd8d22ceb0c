"""The project's end-host congestion controls (endhosts/bpf/) and what each needs on a host.

A scenario names a congestion control per configuration (transport.congestion_control) or per
flow; the kernel's own (cubic, reno, bbr, ...) need nothing, while a project one is loaded by
endhosts/build/sl-scheme on every sending host for the run (satlab.testbed.schemes).

The kernel keys congestion controls by name for the whole machine, so each testbed host gets its
own instance, registered under `instance_name()`: the testbed id, the host, and the scheme's
short code (15 characters at most, TCP_CA_NAME_MAX).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# eten_stats indexes (endhosts/bpf/eten.bpf.c enum eten_stat), in order.
ETEN_STATS = (
    "notices_seen",
    "accepted",
    "malformed",
    "rate_limited",
    "no_mac",
    "bad_mac",
    "unknown_flow",
    "out_of_window",
    "duplicate",
    "loss_corruption",
    "loss_congestion",
    "late_notice",
)

# ceten_stats indexes (endhosts/bpf/ceten.bpf.c enum ceten_stat), in order.
CETEN_STATS = (
    "options_written",
    "options_parsed",
    "loss_corruption",
    "loss_congestion",
    "loss_no_estimate",
)

# ern_stats indexes (endhosts/bpf/ern.bpf.c enum ern_stat), in order.
ERN_STATS = (
    "options_written",
    "options_parsed",
    "negotiated",
    "not_negotiated",
    "feedback_applied",
    "feedback_none",
    "ern_limited",
    "tcp_limited",
)

# ecnld_stats indexes (endhosts/bpf/ecnld.bpf.c enum ecnld_stat), in order. Losses are counted
# per recovery episode (the kernel's fast retransmit), timeouts separately.
ECNLD_STATS = (
    "acks",
    "acks_ece",
    "cwr_ece",
    "loss_congestion",
    "loss_wireless",
    "reclassified",
    "timeouts",
)

# csumld_stats indexes (endhosts/bpf/csumld.bpf.c enum csumld_stat), in order: the receiver's
# (checksums, notices queued and written, misclassification by where the header was hit), then the
# sender's (options parsed, refused, losses by class).
CSUMLD_STATS = (
    "tcp_checked",
    "bad_checksum",
    "ip_header_bad",
    "no_payload",
    "unknown_flow",
    "rx_out_of_window",
    "too_long",
    "queued",
    "queue_full",
    "options_written",
    "options_parsed",
    "tx_out_of_window",
    "duplicate",
    "loss_corruption",
    "loss_congestion",
    "late_notice",
)


@dataclass(frozen=True)
class Scheme:
    name: str  # what a scenario writes
    short: str  # code in the per-host instance name (<= 7 characters)
    object: str  # endhosts/build/<object>
    placeholder: str  # the .name the object is compiled with
    tc_ingress: bool = False  # parses notices on the host's interface (BETEN)
    oracle: bool = False  # the emulator writes notices into the host's map
    cgroup: bool = False  # sockops on the host's cgroup: the traffic processes run in it
    receiver_too: bool = False  # the receiving host runs it as well (CETEN reflection)
    ceten_variant: int | None = None  # ceten_config.variant: 0 printed, 1 loss fraction
    needs_gateway: str | None = None  # GatewaySettings section whose `enabled` it needs
    needs_no_timestamps: bool = False  # its option must come first (IP-ERN: the router's rule)
    ern_base: int | None = None  # ern_config.base: cwnd_tcp's algorithm, 0 CUBIC, 1 NewReno
    stats_map: str = ""  # the loader prints this map's counters, named by `stats`
    stats: tuple[str, ...] = ()
    description: str = ""


# The two CETEN and the two IP-ERN schemes are one program each, compiled once and configured
# per variant (ceten_config.variant, ern_config.base).
_CETEN = Scheme(
    "sl_ceten",
    "ceten",
    "ceten.bpf.o",
    "sl_ceten",
    cgroup=True,
    receiver_too=True,
    ceten_variant=0,
    needs_gateway="ceten",
    stats_map="ceten_stats",
    stats=CETEN_STATS,
    description="CETEN (ETEN report section 4): path survival probabilities in a TCP "
    "option; each loss is congestion with probability p_cong / (p_cong + p_corr)",
)
_ERN = Scheme(
    "sl_ern",
    "ern",
    "ern.bpf.o",
    "sl_ern",
    cgroup=True,
    receiver_too=True,
    needs_gateway="ern",
    needs_no_timestamps=True,
    ern_base=0,
    stats_map="ern_stats",
    stats=ERN_STATS,
    description="IP-ERN (Lopez-Pacheco et al. 2012): capability option on SYN/SYN-ACK, "
    "the receiver echoes the ERN router's XCP feedback, the sender uses "
    "min(cwnd_tcp, cwnd_ern) with CUBIC as cwnd_tcp; plain CUBIC when not negotiated",
)

# The project's own eBPF schemes by congestion_control name (catalog.SCHEME_PRESETS, the scenario
# configurations the UI offers, is another list: presets that may use these or the kernel's).
PROJECT_SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme(
            "sl_newreno",
            "nreno",
            "newreno.bpf.o",
            "sl_newreno",
            description="reference NewReno/SACK; its loss response equals the kernel's reno",
        ),
        Scheme(
            "sl_beten",
            "beten",
            "eten.bpf.o",
            "sl_beten",
            tc_ingress=True,
            needs_gateway="eten",
            stats_map="eten_stats",
            stats=ETEN_STATS,
            description="BETEN (ETEN report section 2): the satellite edge's ICMP notices, "
            "validated on the host; a notified loss is retransmitted without a window cut",
        ),
        Scheme(
            "sl_oracle",
            "oracle",
            "eten.bpf.o",
            "sl_beten",
            oracle=True,
            stats_map="eten_stats",
            stats=ETEN_STATS,
            description="Oracle ETEN (report section 2): the emulator tells the sender at once "
            "and without loss; the upper bound of per-packet ETEN",
        ),
        _CETEN,
        replace(
            _CETEN,
            name="sl_ceten_lf",
            short="cetenlf",
            ceten_variant=1,
            description="CETEN, loss-fraction variant: congestion with probability "
            "(1 - p_cong) / ((1 - p_cong) + (1 - p_corr))",
        ),
        _ERN,
        replace(
            _ERN,
            name="sl_ern_reno",
            short="ernreno",
            ern_base=1,
            description="IP-ERN with NewReno as cwnd_tcp (the base of sl_newreno)",
        ),
        Scheme(
            "sl_westwood",
            "wwood",
            "westwood.bpf.o",
            "sl_westwood",
            description="TCP Westwood+: the bandwidth estimate sets ssthresh after a loss "
            "(the ETEN report's comparison, sims 5/6)",
        ),
        Scheme(
            "sl_ecnld",
            "ecnld",
            "ecnld.bpf.o",
            "sl_ecnld",
            stats_map="ecnld_stats",
            stats=ECNLD_STATS,
            description="ECN-based discriminator (TCP-ECN paper, section 3): a dupack loss with "
            "no ECE in the last K ACKs (transport.ecn_ld_k) is wireless: retransmit, no cut. "
            "Needs ECN on the hosts and RED/ECN marking at the gateway (aqm kind red_ecn)",
        ),
        Scheme(
            "sl_csumld",
            "csumld",
            "csumld.bpf.o",
            "sl_csumld",
            tc_ingress=True,
            cgroup=True,
            receiver_too=True,
            stats_map="csumld_stats",
            stats=CSUMLD_STATS,
            description="Receiver checksum loss differentiation (Garcia & Brunstrom 2004): the "
            "receiver reports segments with a bad TCP checksum in a TCP option; the sender "
            "retransmits them without a window cut",
        ),
    )
}


def project_scheme(congestion_control: str) -> Scheme | None:
    """The project scheme a name selects, or None for a kernel congestion control."""
    return PROJECT_SCHEMES.get(congestion_control)


def instance_name(testbed_id: str, role: str, scheme: Scheme) -> str:
    """'1a2bs1beten': testbed 1a2b, host srv1, BETEN."""
    name = f"{testbed_id}{role[0]}{role.lstrip('srvcli')}{scheme.short}"
    assert len(name) <= 15, name
    return name
