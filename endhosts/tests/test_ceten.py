"""sl_ceten (endhosts/bpf/ceten.bpf.c) on the real kernel: the option on the wire, and the share
of losses it calls corruption for given survival values.

The sender runs in its own cgroup with the sockops program attached, the receiver outside it (so
it speaks no CETEN and reflects nothing). For the decision test the path estimate of the sender's
connection is written into the pinned ceten_paths map before the transfer, as a reflecting peer
would have left it, and nftables drops every 20th data segment: each loss the kernel detects is
drawn against those values, printed form or loss-fraction variant.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from ca_harness import TRANSFER, drop_every_nth_segment, run, use_real_segments
from scheme_loader import cgroup, loaded

from satlab.schemes import CETEN_STATS

PORT, SPORT = 5793, 47001
SIZE = 4 << 20


def q16(p: float) -> int:
    return round(p * 0xFFFF)


def transfer_in(netns: str, cg: Path, ca: str, capture: Path | None = None) -> dict[str, object]:
    """Receiver outside the cgroup, sender inside it; optionally a pcap of the first packets."""
    py = [sys.executable, str(TRANSFER), "--port", str(PORT), "--bytes", str(SIZE)]
    recv = subprocess.Popen(
        ["ip", "netns", "exec", netns, *py, "--listen"], stdout=subprocess.PIPE, text=True
    )
    dump = None
    if capture is not None:
        dump = subprocess.Popen(
            ["ip", "netns", "exec", netns, "tcpdump", "-U", "-i", "lo", "-c", "40",
             "-w", str(capture), f"tcp port {PORT}"],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        sender = [*py, "--connect", "127.0.0.1", "--source-port", str(SPORT), "--cc", ca]
        # nsenter, not `ip netns exec`, which mounts its own /sys (no cgroup2 in it)
        script = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        ns = f"--net=/run/netns/{netns}"
        out = run("nsenter", ns, "--", "sh", "-c", script, str(cg), *sender, timeout=120)
        recv.wait(60)
        if dump is not None:
            dump.wait(10)  # -c 40: done long before the transfer is
    finally:
        for p in (recv, dump):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    result: dict[str, object] = json.loads(out)
    return result


def set_estimate(pin_dir: Path, p_corr: float, p_cong: float) -> None:
    """ceten_paths[(127.0.0.1:SPORT -> 127.0.0.1:PORT)] = reflected survival values."""
    key = struct.pack("!4s4sHH", bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]), SPORT, PORT)
    value = struct.pack("<HHHHBBH", q16(p_corr), q16(p_cong), 0, 0, 1, 0, 0)
    run(
        "bpftool", "map", "update", "pinned", str(pin_dir / "ceten_paths"),
        "key", "hex", *[f"{b:02x}" for b in key], "value", "hex", *[f"{b:02x}" for b in value],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("variant", "p_corr", "p_cong", "corruption_share"),
    [
        # printed: P(congestion) = p_cong / (p_cong + p_corr) = 1 / (1 + 1/3) = 0.75
        (0, 1 / 3, 1.0, 0.25),
        # loss fraction: (1 - p_cong) / ((1 - p_cong) + (1 - p_corr)) = 0.01 / 0.04 = 0.25
        (1, 0.97, 0.99, 0.75),
    ],
)
def test_calls_the_expected_share_of_losses_corruption(
    built: Path, netns: str, variant: int, p_corr: float, p_cong: float, corruption_share: float
) -> None:
    use_real_segments(netns)
    drop_every_nth_segment(netns, PORT, 20)
    cfg = struct.pack("<I", variant).hex()
    with (
        cgroup(f"sltest-{os.getpid()}-{variant}") as cg,
        loaded("ceten.bpf.o", "sl_ceten", netns, "--cgroup", str(cg),
               "--set", f"ceten_config={cfg}", tag=f"tceten{variant}") as ld,
    ):  # fmt: skip
        set_estimate(ld.pin_dir, p_corr, p_cong)
        sent = transfer_in(netns, cg, ld.ca)
        final = ld.stop()
    stats = dict(zip(CETEN_STATS, final["stats"]["ceten_stats"], strict=True))
    losses = stats["loss_corruption"] + stats["loss_congestion"]
    share = stats["loss_corruption"] / losses
    report = f"counters {stats}, share {share:.3f}, sender {sent['tcp_info']}"
    assert sent["congestion_control"] == ld.ca
    assert losses >= 40, report
    assert stats["loss_no_estimate"] == 0, report
    assert stats["options_written"] > 1000, report  # every segment carries the option
    # binomial spread over >= 40 draws: sd <= 0.08; 0.2 is 2.5 sd
    assert abs(share - corruption_share) < 0.2, report


def test_option_is_on_the_wire_with_forward_one(built: Path, netns: str, tmp_path: Path) -> None:
    use_real_segments(netns)
    with (
        cgroup(f"sltest-{os.getpid()}-wire") as cg,
        loaded("ceten.bpf.o", "sl_ceten", netns, "--cgroup", str(cg), tag="tcetenw") as ld,
    ):
        pcap = tmp_path / "ceten.pcap"
        transfer_in(netns, cg, ld.ca, capture=pcap)
    text = run("tcpdump", "-nr", str(pcap), "-x", f"src port {SPORT} and tcp[13] & 8 != 0")
    # kind 254, length 12, ExID 0x4345, forward corruption and congestion 1.0 (0xffff 0xffff)
    hexdump = "".join(
        line.split(":", 1)[1].replace(" ", "") for line in text.splitlines() if "0x" in line
    )
    assert "fe0c4345ffffffff" in hexdump, text[:2000]
