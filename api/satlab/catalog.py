"""The transport schemes SatLab offers, as ready-made scenario configurations (`GET /api/schemes`;
the web UI's scheme picker adds them to a scenario).

Adding a scheme is one entry in SCHEME_PRESETS: `configuration` is a `configurations[]` item
exactly as the scenario schema accepts it (satlab.scenario.Configuration; checked when this module
loads, so a bad entry fails at start-up and in the tests, not in a run). `paper_section` names the
part of the paper the scheme implements, or None for the standard baselines.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from satlab.scenario import Configuration, HostSettings


class SchemePreset(TypedDict):
    name: str
    label: str
    description: str
    paper_section: str | None
    configuration: dict[str, Any]
    # hosts.settings the scheme needs in the scenario (they apply to every configuration)
    host_settings: NotRequired[dict[str, Any]]


# Thresholds of the RED entries: the gateway's defaults (gateway/src/config.rs: min_th 5, max_th
# 15 average packets, max_p 0.1, w_q 0.002), the classic Floyd-Jacobson values; a scenario that
# wants others edits them after picking.
SCHEME_PRESETS: list[SchemePreset] = [
    {
        "name": "cubic",
        "label": "TCP CUBIC (kernel)",
        "description": "Linux's default congestion control, end to end; the usual baseline.",
        "paper_section": None,
        "configuration": {"name": "cubic", "transport": {"congestion_control": "cubic"}},
    },
    {
        "name": "reno",
        "label": "TCP Reno / NewReno with SACK (kernel)",
        "description": "The kernel's reno: halves the window on every loss, corruption included.",
        "paper_section": None,
        "configuration": {"name": "reno", "transport": {"congestion_control": "reno"}},
    },
    {
        "name": "bbr",
        "label": "TCP BBR (kernel)",
        "description": "Model-based: paces at the measured bottleneck rate and ignores single "
        "losses.",
        "paper_section": None,
        "configuration": {"name": "bbr", "transport": {"congestion_control": "bbr"}},
    },
    {
        "name": "sl_newreno",
        "label": "NewReno in eBPF (sl_newreno)",
        "description": "The project's eBPF NewReno (endhosts/bpf/newreno.bpf.c), the reference "
        "every loss-differentiation scheme differs from only in how it classifies losses. "
        "Loaded on the sending hosts for the run.",
        "paper_section": None,
        "configuration": {"name": "sl_newreno", "transport": {"congestion_control": "sl_newreno"}},
    },
    {
        "name": "cubic-droptail",
        "label": "CUBIC behind the gateway, drop-tail",
        "description": "The edge gateway in the path, pacing at 0.97 of the link's useful rate so "
        "its drop-tail queue is the bottleneck (gateway/README.md).",
        "paper_section": None,
        "configuration": {
            "name": "cubic-droptail",
            "transport": {"congestion_control": "cubic"},
            "gateway": {"egress": {"aqm": {"kind": "drop_tail"}}},
        },
    },
    {
        "name": "cubic-red",
        "label": "CUBIC behind the gateway, RED",
        "description": "The gateway's queue under RED (Floyd-Jacobson, count-based): early random "
        "drops as the average queue grows.",
        "paper_section": None,
        "configuration": {
            "name": "cubic-red",
            "transport": {"congestion_control": "cubic"},
            "gateway": {"egress": {"aqm": {"kind": "red"}}},
        },
    },
    {
        "name": "reno-red-ecn",
        "label": "Reno behind the gateway, RED with ECN marks",
        "description": "RED marks CE instead of dropping (the hosts negotiate ECN), so a loss "
        "that still happens is more likely corruption: the bottleneck half of the TCP-ECN "
        "error discriminator (the sender half is a later end-host scheme). The scenario's "
        "hosts must ask for ECN: hosts.settings.ecn: on.",
        "paper_section": "TCP-ECN error discriminator: RED marks at the bottleneck",
        "configuration": {
            "name": "reno-red-ecn",
            "transport": {"congestion_control": "reno"},
            "gateway": {"egress": {"aqm": {"kind": "red_ecn"}}},
        },
    },
    {
        "name": "beten",
        "label": "BETEN: per-packet ETEN notices from the satellite edge",
        "description": "The st edge sends an ICMP notice back to the sender for each packet the "
        "link corrupted; the sender validates it (flow, window, duplicates, rate, optional "
        "HMAC) and retransmits that loss without cutting its window.",
        "paper_section": "ETEN report (BBN TR 8333) sections 2-3, 7: BETEN",
        "configuration": {
            "name": "beten",
            "transport": {"congestion_control": "sl_beten"},
            "gateway": {"eten": {"enabled": True}},
        },
    },
    {
        "name": "oracle",
        "label": "Oracle ETEN: the upper bound",
        "description": "The emulator tells the sender the instant it corrupts a packet, with no "
        "delay and no loss. What per-packet ETEN could gain at best.",
        "paper_section": "ETEN report section 2: Oracle ETEN",
        "configuration": {
            "name": "oracle",
            "transport": {"congestion_control": "sl_oracle"},
            "gateway": {"eten": {"enabled": True}},
        },
    },
    {
        "name": "ceten",
        "label": "CETEN: cumulative path error statistics",
        "description": "The edges stamp per-link corruption and congestion survival estimates "
        "on a TCP option; the receiver reflects them; each loss is congestion with probability "
        "p_cong / (p_cong + p_corr), as the report prints it.",
        "paper_section": "ETEN report section 4: CETEN",
        "configuration": {
            "name": "ceten",
            "transport": {"congestion_control": "sl_ceten"},
            "gateway": {"ceten": {"enabled": True}},
        },
    },
    {
        "name": "ceten-lf",
        "label": "CETEN, loss-fraction variant",
        "description": "CETEN with congestion probability (1 - p_cong) / ((1 - p_cong) + "
        "(1 - p_corr)): the share each cause has in the path's losses.",
        "paper_section": "ETEN report section 4: CETEN (loss-fraction variant, ours)",
        "configuration": {
            "name": "ceten-lf",
            "transport": {"congestion_control": "sl_ceten_lf"},
            "gateway": {"ceten": {"enabled": True}},
        },
    },
    {
        "name": "ipern",
        "label": "IP-ERN: XCP feedback from the satellite edges",
        "description": "The hosts negotiate an IP-ERN option on SYN/SYN-ACK; the edge gateways "
        "run XCP on ERN traffic and lower the option's feedback; the receiver echoes it and the "
        "sender uses min(cwnd_tcp, cwnd_ern), CUBIC as cwnd_tcp. Needs hosts.settings."
        "timestamps: false (the ERN option must be the first TCP option).",
        "paper_section": "IP-ERN (Lopez-Pacheco et al., Computer Networks 2012) sections 2-3",
        "configuration": {
            "name": "ipern",
            "transport": {"congestion_control": "sl_ern"},
            "gateway": {"ern": {"enabled": True}},
        },
        "host_settings": {"timestamps": False},
    },
    {
        "name": "westwood",
        "label": "TCP Westwood+ (eBPF)",
        "description": "After a loss, ssthresh comes from the bandwidth estimate instead of "
        "halving: the ETEN report's comparison scheme.",
        "paper_section": "ETEN report sims 5/6: Westwood",
        "configuration": {"name": "westwood", "transport": {"congestion_control": "sl_westwood"}},
    },
    {
        "name": "pep",
        "label": "Split-TCP PEP at both satellite edges",
        "description": "What operators deploy today (RFC 3135): satlab-pep splits each TCP "
        "connection at the gw and st edges; the satellite leg runs CUBIC with BDP-sized buffers "
        "(gateway/pep/README.md).",
        "paper_section": None,
        "configuration": {"name": "pep", "pep": {"edges": "both"}},
    },
    {
        "name": "withhold",
        "label": "Reordering-robust receiver (dupACK withholding)",
        "description": "Yang's receiver holds dupACKs up to the largest reordering stride seen "
        "(NFQUEUE on the receiving host). Needs hosts.settings.sack: false.",
        "paper_section": "Yang 2001 ch. 3",
        "configuration": {
            "name": "withhold",
            "transport": {"congestion_control": "reno"},
            "receiver": {"withhold": {}},
        },
        "host_settings": {"sack": False},
    },
    {
        "name": "ecn-ld",
        "label": "ECN-based loss discriminator (TCP-ECN)",
        "description": "RED at the gateway marks instead of dropping; the sender calls a "
        "dupack loss congestion only when one of the last K ACKs carried ECE (K = 2), and "
        "otherwise retransmits without a window cut. ECN on in the hosts' settings too "
        "(hosts.settings.ecn: on).",
        "paper_section": "TCP-ECN error discriminator, section 3",
        "configuration": {
            "name": "ecn-ld",
            "transport": {"congestion_control": "sl_ecnld", "ecn_ld_k": 2},
            "gateway": {"egress": {"aqm": {"kind": "red_ecn"}}},
        },
    },
    {
        "name": "csum-ld",
        "label": "Receiver checksum loss differentiation",
        "description": "The receiver reports segments that arrive with a valid IP header and a "
        "bad TCP checksum in a TCP option on its next ACK; the sender retransmits them without "
        "a window cut. Needs corrupted packets delivered (bit_errors action: deliver).",
        "paper_section": "Garcia & Brunstrom 2004",
        "configuration": {"name": "csum-ld", "transport": {"congestion_control": "sl_csumld"}},
    },
]


def schemes() -> list[SchemePreset]:
    return SCHEME_PRESETS


def _check() -> None:
    names = [s["name"] for s in SCHEME_PRESETS]
    if len(set(names)) != len(names):
        raise ValueError(f"satlab.catalog: scheme names must be unique: {names}")
    for s in SCHEME_PRESETS:
        Configuration.model_validate(s["configuration"])
        HostSettings.model_validate(s.get("host_settings", {}))


_check()
