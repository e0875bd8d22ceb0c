"""sl_csumld (endhosts/bpf/csumld.bpf.c) on the real kernel, across the project's emulator.

    sender ns (cgroup: csumld_sockops parses) -- emulator, forward bit errors delivered --
        receiver ns (tc ingress on wr0: csumld_ingress; cgroup: csumld_sockops writes)

The emulator flips bits in forward packets and delivers them (bit_errors action `deliver`), so
the receiver's kernel sees segments whose TCP checksum fails, as a host behind a noisy satellite
link would. Checked: the receiver's ACKs carry the corruption-notice option (kind 254, length 8,
ExID 0x4353) naming exactly the sequence numbers of segments that arrived with a bad checksum, on
the first ACK it sent after such a segment where the option had room; the sender parses them and
classifies the losses they explain as corruption, keeping its window; and misclassification is
counted only for header hits.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ca_harness import TRANSFER, run
from emulated_link import RECEIVER_IP, emulated_path
from scheme_loader import Loaded, cgroup, loaded

from satlab.schemes import CSUMLD_STATS

PORT = 5797
SIZE = 3 << 20
BER = 1e-5  # 1500-byte packets: 11 % corrupted; 40-byte ACKs on the clean return link


def in_cgroup(netns: str, cg: Path, *cmd: str) -> list[str]:
    """The command inside `netns` and cgroup `cg` (nsenter: `ip netns exec` hides cgroup2)."""
    script = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
    return ["nsenter", f"--net=/run/netns/{netns}", "--", "sh", "-c", script, str(cg), *cmd]


@contextlib.contextmanager
def capture(netns: str, ifname: str, pcap: Path) -> Iterator[None]:
    dump = subprocess.Popen(
        ["ip", "netns", "exec", netns, "tcpdump", "-U", "-s", "0", "-i", ifname,
         "-w", str(pcap), f"tcp port {PORT}"],
        stderr=subprocess.PIPE,
    )  # fmt: skip
    time.sleep(0.5)  # listening before the first SYN
    try:
        yield
    finally:
        time.sleep(0.3)
        dump.terminate()
        dump.wait(10)


def transfer(netns_s: str, netns_r: str, cg_s: Path, cg_r: Path, cc: str) -> dict[str, object]:
    py = [sys.executable, str(TRANSFER), "--port", str(PORT), "--bytes", str(SIZE)]
    recv = subprocess.Popen(in_cgroup(netns_r, cg_r, *py, "--listen"), stdout=subprocess.PIPE)
    try:
        time.sleep(0.3)
        out = run(*in_cgroup(netns_s, cg_s, *py, "--connect", RECEIVER_IP, "--cc", cc),
                  timeout=120)  # fmt: skip
        recv.wait(30)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    result: dict[str, object] = json.loads(out)
    return result


def stats_of(ld: Loaded) -> dict[str, int]:
    return dict(zip(CSUMLD_STATS, ld.stop()["stats"]["csumld_stats"], strict=True))


def read_pcap(pcap: Path) -> list[tuple[bool, int, bool, str]]:
    """(from the receiver, seq or ack, checksum bad, option hex) per packet, in order."""
    text = run("tcpdump", "-nn", "-vv", "-S", "-x", "-r", str(pcap), timeout=120)
    packets: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("\t0x"):
            packets[-1][1] += line.split(":", 1)[1].replace(" ", "")
        elif line[:1].isdigit():
            packets.append([line, ""])
        elif packets:
            packets[-1][0] += line
    out = []
    for head, hexdump in packets:
        from_receiver = f"{RECEIVER_IP}.{PORT} >" in head
        bad = "incorrect" in head
        ip_hl = int(hexdump[1], 16) * 4 * 2
        tcp = hexdump[ip_hl:]
        number = int(tcp[16:24], 16) if from_receiver else int(tcp[8:16], 16)  # ack / seq
        doff = int(tcp[24], 16) * 4 * 2
        out.append((from_receiver, number, bad, tcp[40:doff]))
    return out


def test_notices_on_the_wire_and_losses_kept(built: Path, tmp_path: Path) -> None:
    prefix = f"lc{os.getpid() % 100000}"
    ber = {"model": "uniform", "ber": BER, "action": "deliver"}
    with emulated_path(prefix, 10e6, 10, bit_errors=ber) as path:
        # full checksums on the wire (veth would leave them partial)
        run("ip", "netns", "exec", path.sender, "ethtool", "-K", "ws0", "tx", "off")
        pcap = tmp_path / "csumld.pcap"
        with (
            cgroup(f"sltest-{os.getpid()}-cs") as cg_s,
            cgroup(f"sltest-{os.getpid()}-cr") as cg_r,
            loaded("csumld.bpf.o", "sl_csumld", path.sender, "--cgroup", str(cg_s),
                   tag="tcsums") as snd,
            loaded("csumld.bpf.o", "sl_csumld", path.receiver, "--cgroup", str(cg_r),
                   "--tc-ingress", "wr0", tag="tcsumr") as rcv,
        ):  # fmt: skip
            with capture(path.receiver, "wr0", pcap):
                sent = transfer(path.sender, path.receiver, cg_s, cg_r, snd.ca)
            s, r = stats_of(snd), stats_of(rcv)
    report = f"sender {s}\nreceiver {r}\ntcp_info {sent['tcp_info']}"
    assert sent["congestion_control"] == snd.ca

    packets = read_pcap(pcap)
    bad_seqs = {n for from_r, n, bad, _ in packets if not from_r and bad}
    notices = []
    first_ack_after_bad: list[tuple[int, str]] = []
    waiting: int | None = None
    for from_r, n, bad, opts in packets:
        m = re.search("fe084353([0-9a-f]{8})", opts)
        if from_r and m:
            notices.append(int(m.group(1), 16))
        if not from_r and bad:
            waiting = n if waiting is None else waiting
        elif from_r and waiting is not None:
            first_ack_after_bad.append((waiting, opts))
            waiting = None
    assert len(bad_seqs) >= 20, report
    # every notice names a segment that arrived corrupted, and (nearly) every corrupted data
    # segment was notified: the ones missing had their TCP header hit (counted as such)
    assert notices and set(notices) <= bad_seqs, (sorted(set(notices) - bad_seqs), report)
    assert len(set(notices)) >= 0.8 * len(bad_seqs), report
    # the next ACK carries a notice, this one or an older queued one (FIFO), unless its options
    # had no room: timestamps and three SACK blocks (kind 5, length 0x1a) fill the 40 bytes
    with_room = [opts for _, opts in first_ack_after_bad if "0101051a" not in opts]
    on_next = sum("fe084353" in opts for opts in with_room)
    assert len(with_room) >= 20 and on_next >= 0.95 * len(with_room), (on_next, report)

    # receiver: checksums checked, notices written; sender: parsed, losses kept as corruption
    assert r["bad_checksum"] >= len(bad_seqs) * 0.9, report
    # every notice written was parsed; the capture (a tcpdump on a loaded machine may drop a few
    # packets) saw nearly all of them
    assert r["options_written"] == s["options_parsed"], report
    assert 0.9 * r["options_written"] <= len(notices) <= r["options_written"], report
    assert s["loss_corruption"] >= 10, report
    # no congestion on this path: a loss is congestion only when a header hit hid the notice
    assert s["loss_congestion"] <= 0.2 * (s["loss_corruption"] + s["loss_congestion"]), report
    assert s["tx_out_of_window"] + r["unknown_flow"] + r["rx_out_of_window"] <= 0.2 * len(
        bad_seqs
    ), report
