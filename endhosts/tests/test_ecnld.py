"""sl_ecnld (endhosts/bpf/ecnld.bpf.c) on the real kernel: losses classified by recent ECE.

One namespace on loopback with ECN on (net.ipv4.tcp_ecn=1, so data segments are ECT and the
receiver echoes CE as ECE). nftables drops every 20th data segment on input; a second rule sets CE
on data segments in prerouting (before the receiver reads the IP header), on none, on every one,
or on every n-th. The loader's --set writes K into ecnld_config.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from ca_harness import drop_every_nth_segment, nft_table, run, transfer, use_real_segments
from scheme_loader import loaded

from satlab.schemes import ECNLD_STATS

PORT = 5795
SIZE = 4 << 20


def mark_ce_every_nth(netns: str, port: int, n: int) -> None:
    """Sets CE on every n-th data segment to `port` as it arrives (a RED/ECN queue's mark)."""
    rule = f"tcp dport {port} meta length > 100 numgen inc mod {n} 0 ip ecn set ce counter"
    nft_table(netns, "satlab_mark", "prerouting", rule)


def run_with(netns: str, mark_every: int | None, k: int, tag: str) -> dict[str, int]:
    use_real_segments(netns)
    run("ip", "netns", "exec", netns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
    drop_every_nth_segment(netns, PORT, 20)
    if mark_every is not None:
        mark_ce_every_nth(netns, PORT, mark_every)
    cfg = struct.pack("<I", k).hex()
    with loaded("ecnld.bpf.o", "sl_ecnld", netns, "--set", f"ecnld_config={cfg}", tag=tag) as ld:
        sent = transfer(netns, SIZE, PORT, ld.ca)
        final = ld.stop()
    assert sent["congestion_control"] == ld.ca
    stats = dict(zip(ECNLD_STATS, final["stats"]["ecnld_stats"], strict=True))
    stats["ssthresh"] = sent["tcp_info"]["snd_ssthresh"]
    return stats


def test_unmarked_losses_are_wireless(built: Path, netns: str) -> None:
    s = run_with(netns, None, 2, "tecnw")
    assert s["acks"] > 100, s
    assert s["acks_ece"] == 0 and s["cwr_ece"] == 0 and s["loss_congestion"] == 0, s
    # ~200 drops; the kernel's recovery episodes (several drops may share one) all wireless
    assert s["loss_wireless"] >= 20, s


def test_losses_after_marks_are_congestion(built: Path, netns: str) -> None:
    s = run_with(netns, 1, 2, "tecnc")
    assert s["acks_ece"] > 100, s
    assert s["cwr_ece"] + s["loss_congestion"] >= 20, s
    assert s["loss_wireless"] == 0, s


@pytest.mark.parametrize("k", [1, 32])
def test_look_back_k_is_the_configured_one(built: Path, netns: str, k: int) -> None:
    """Marks on every 8th segment: the receiver echoes ECE only until the sender's CWR comes
    back (microseconds on loopback), so few ACKs carry it. With K = 32 nearly every loss sees
    one of them; with K = 1 only a loss detected on an ECE ACK itself does."""
    s = run_with(netns, 8, k, f"tecnk{k}")
    losses = s["loss_congestion"] + s["loss_wireless"]
    assert losses >= 20, s
    share = s["loss_congestion"] / losses
    if k == 32:
        assert share > 0.5, s
    else:
        assert share < 0.5, s
