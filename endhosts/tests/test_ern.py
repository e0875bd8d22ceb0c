"""sl_ern (endhosts/bpf/ern.bpf.c) on the real kernel: negotiation on the handshake, silent
fallback with a peer that does not speak IP-ERN, and the window held at what the feedback allows.

Both ends run over loopback in a fresh namespace with timestamps off (so the ERN option is the
first TCP option of a data segment, as the gateway requires). The IP-ERN hosts run in a cgroup
with ern_sockops attached; a plain peer runs outside it. For the clamp, nftables plays the ERN
router: it rewrites H_feedback of every data segment (TCP header bytes 32-35 when the ERN option
is the only one) to a fixed value, as a router would lower it; the receiver echoes it and the
sender applies it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ca_harness import nft_table, run, use_real_segments
from scheme_loader import cgroup, cgroup_transfer, loaded

from satlab.schemes import ERN_STATS

PORT, SPORT = 5795, 47011
SIZE = 8 << 20
OPTION_HEAD = "fe144552"  # kind 254, length 20, ExID 0x4552 (crates/packet/src/ern.rs)


def no_timestamps(netns: str) -> None:
    run("ip", "netns", "exec", netns, "sysctl", "-qw", "net.ipv4.tcp_timestamps=0")


def hex_of(pcap: Path, pcap_filter: str) -> list[str]:
    """One hex string per packet matching the filter (IP header onwards)."""
    text = run("tcpdump", "-nr", str(pcap), "-x", pcap_filter)
    packets: list[str] = []
    for line in text.splitlines():
        if not line.startswith("\t"):
            packets.append("")
        elif "0x" in line and packets:
            packets[-1] += line.split(":", 1)[1].replace(" ", "")
    return packets


def max_cwnd(sent: dict[str, object]) -> int:
    samples = sent["samples"]
    assert isinstance(samples, list) and samples
    return max(int(s["snd_cwnd"]) for s in samples)


def stats_of(final: dict[str, object]) -> dict[str, int]:
    raw = final["stats"]
    assert isinstance(raw, dict)
    return dict(zip(ERN_STATS, raw["ern_stats"], strict=True))


def ern_transfer(
    netns: str,
    tag: str,
    plain_receiver: bool = False,
    capture: Path | None = None,
    fin_after_acked: bool = False,
) -> tuple[str, dict[str, object], dict[str, int]]:
    """One transfer with sl_ern loaded for the sender's cgroup and, unless `plain_receiver`, the
    receiver's; returns the CA's name, the sender's report and the ERN counters."""
    use_real_segments(netns)
    no_timestamps(netns)
    with (
        cgroup(f"sltest-{os.getpid()}-{tag}") as cg,
        loaded("ern.bpf.o", "sl_ern", netns, "--cgroup", str(cg), tag=f"t{tag}") as ld,
    ):
        receiver_cg = None if plain_receiver else cg
        sent = cgroup_transfer(
            netns,
            (PORT, SPORT),
            SIZE,
            ld.ca,
            cg,
            receiver_cg,
            capture=capture,
            sample_ms=5,
            fin_after_acked=fin_after_acked,
        )
        final = ld.stop()
    return ld.ca, sent, stats_of(final)


def handshake_and_data(pcap: Path) -> tuple[list[str], list[str], list[str]]:
    """The SYN, the SYN-ACK and the sender's data segments of a capture, as hex."""
    return (
        hex_of(pcap, f"src port {SPORT} and tcp[13] == 2"),
        hex_of(pcap, f"src port {PORT} and tcp[13] == 18"),
        hex_of(pcap, f"src port {SPORT} and tcp[13] & 8 != 0"),
    )


def test_negotiated_on_syn_and_synack(built: Path, netns: str, tmp_path: Path) -> None:
    pcap = tmp_path / "ern.pcap"
    ca, sent, stats = ern_transfer(netns, "ern", capture=pcap)
    report = f"counters {stats}"
    assert sent["congestion_control"] == ca
    syn, synack, data = handshake_and_data(pcap)
    assert syn and OPTION_HEAD in syn[0], syn
    assert synack and OPTION_HEAD in synack[0], synack
    # data: IP (20 B) + TCP (20 B), then the ERN option first, H_feedback "no limit"
    assert data and all(p[80:88] == OPTION_HEAD for p in data), data[:2]
    assert all(p[104:112] == "7fffffff" for p in data), data[:2]
    assert stats["negotiated"] == 2 and stats["not_negotiated"] == 0, report
    assert stats["options_parsed"] > 100, report  # every segment both ways
    # No router on loopback: nothing lowered the feedback, so TCP governs throughout.
    assert stats["feedback_applied"] == 0 and stats["ern_limited"] == 0, report


def test_plain_peer_falls_back_to_the_base_cc(built: Path, netns: str, tmp_path: Path) -> None:
    pcap = tmp_path / "plain.pcap"
    _, sent, stats = ern_transfer(netns, "ernp", plain_receiver=True, capture=pcap)
    report = f"counters {stats}, sender {sent['tcp_info']}"
    syn, synack, data = handshake_and_data(pcap)
    assert syn and OPTION_HEAD in syn[0], syn
    assert synack and OPTION_HEAD not in synack[0], synack
    assert data and not any(OPTION_HEAD in p for p in data), data[:2]
    assert stats["negotiated"] == 0 and stats["not_negotiated"] == 1, report
    assert stats["options_written"] == 1, report  # the SYN only
    assert stats["ern_limited"] == 0 and stats["tcp_limited"] > 0, report
    assert max_cwnd(sent) > 50, report  # NewReno's growth, unclamped


def feedback_router(netns: str, feedback: int) -> None:
    """nftables as the ERN router: H_feedback of every data segment to PORT := `feedback`."""
    value = feedback & 0xFFFFFFFF
    rule = f"tcp dport {PORT} tcp flags & syn == 0 meta length > 100 @th,256,32 set {value:#x}"
    nft_table(netns, "satlab_ern", "output", rule)


def test_window_held_by_the_echoed_feedback(built: Path, netns: str) -> None:
    """Feedback 0 on every data segment: cwnd_ern stays where the first echo found the window
    (the initial 10 segments), while the same transfer without the router grows past 50. The
    FIN goes out alone after the last ACK, so its own ACK (no payload, nothing a router lowers,
    so no echo) comes last, and the final sample is taken after it."""
    feedback_router(netns, 0)
    _, sent, stats = ern_transfer(netns, "ernc", fin_after_acked=True)
    report = f"counters {stats}, max cwnd {max_cwnd(sent)}"
    assert stats["feedback_applied"] > 100, report
    assert stats["ern_limited"] > 100, report
    # The ACK of the bare FIN echoes no feedback: it must not lift the limit.
    assert stats["feedback_none"] == 0, report
    assert max_cwnd(sent) <= 12, report


def test_negative_feedback_drives_the_window_to_its_floor(built: Path, netns: str) -> None:
    """-1 MSS per data segment: cwnd_ern falls to the 2-packet floor and stays there."""
    feedback_router(netns, -1448)
    _, sent, _ = ern_transfer(netns, "ernn")
    samples = sent["samples"]
    assert isinstance(samples, list)
    tail = [int(s["snd_cwnd"]) for s in samples[len(samples) // 2 :]]
    assert tail and max(tail) <= 2, tail
