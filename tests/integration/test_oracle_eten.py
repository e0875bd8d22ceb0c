"""Oracle ETEN (ETEN report section 2): the emulator writes a notice into the sender host's pinned
BPF map for every TCP data segment the link corrupts or erases, keyed by the segment's real header
bytes.

Each test mounts a fresh bpffs in its own temporary directory (unmounted afterwards, which drops
every pin made there), creates the LRU hash with ``bpftool map create`` (BPF_MAP_CREATE), runs the
real emulator between two namespaces (prefix ``satorc-<pid>-``) and reads the map back with
``bpftool map dump``. The sender's segments are captured on its own interface (offloads are off
on every veth, so what it captures is exactly what the emulator receives).
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from emuconfig import EmulatorFactory
from netns import EmulatorError, Topology, sweep_stale, unique_prefix
from traffic import tcp_transfer

from satlab.testbed.topology import socket_in_netns

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TAG = "satorc"
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


@pytest.fixture
def topo() -> Iterator[Topology]:
    """This module's own namespace prefix (overrides conftest's ``topo``)."""
    sweep_stale(TAG)
    with Topology("l2", prefix=unique_prefix(TAG)) as t:
        yield t


@pytest.fixture
def bpffs(tmp_path: Path) -> Iterator[Path]:
    """A private bpffs mount; unmounting it removes every pin made in it."""
    mnt = tmp_path / "bpffs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        for p in mnt.iterdir():
            with contextlib.suppress(OSError):
                p.unlink()
        subprocess.run(["umount", str(mnt)], check=False)


def create_map(path: Path, value_size: int = 16, kind: str = "lru_hash") -> None:
    subprocess.run(
        ["bpftool", "map", "create", str(path), "type", kind, "key", "16", "value",
         str(value_size), "entries", "65536", "name", "eten_oracle"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip


@dataclass(frozen=True)
class Notice:
    saddr: str
    daddr: str
    sport: int
    dport: int
    seq: int
    t_ns: int
    code: int
    source: int


def dump_map(path: Path) -> list[Notice]:
    r = subprocess.run(
        ["bpftool", "-j", "map", "dump", "pinned", str(path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    out = []
    for e in json.loads(r.stdout):
        k = bytes(int(b, 16) for b in e["key"])
        v = bytes(int(b, 16) for b in e["value"])
        sport, dport, seq = struct.unpack("!HHI", k[8:16])
        t_ns, code, source = struct.unpack("=QII", v)
        out.append(
            Notice(
                socket.inet_ntoa(k[0:4]), socket.inet_ntoa(k[4:8]), sport, dport, seq,
                t_ns, code, source,
            )
        )  # fmt: skip
    return out


@dataclass
class SentCapture:
    """Every TCP segment an interface sends, as (saddr, daddr, sport, dport, seq, payload_len)."""

    sock: socket.socket
    segments: list[tuple[str, str, int, int, int, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                data, addr = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            if addr[2] != PACKET_OUTGOING or data[12:14] != b"\x08\x00" or data[23] != 6:
                continue
            ip = data[14:]
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[ihl:total]
            doff = (tcp[12] >> 4) * 4
            sport, dport, seq = struct.unpack("!HHI", tcp[0:8])
            self.segments.append(
                (socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), sport, dport, seq,
                 len(tcp) - doff)
            )  # fmt: skip


@contextlib.contextmanager
def capture_sent(ns: str, ifname: str) -> Iterator[SentCapture]:
    s = socket_in_netns(ns, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    cap = SentCapture(s)
    th = threading.Thread(target=cap.run, daemon=True)
    th.start()
    try:
        yield cap
    finally:
        time.sleep(0.3)
        cap.stop.set()
        th.join(2)
        s.close()


# ---------------------------------------------------------------------------------------------
def test_corrupted_and_erased_segments_are_notified_with_their_real_keys(
    topo: Topology, emulator: EmulatorFactory, bpffs: Path, tmp_path: Path
) -> None:
    """600 kB gw -> st over 20 ms each way, forward BER 3e-6 (about 3.6 % of 1514-byte frames) and
    a flat 10 % BBFrame erasure rate (CCM MODCOD 28), return BER 1e-4 on the ACKs; both directions
    write to one map. Every entry names a segment the sender really sent, with the right code and
    stamp; the forward notice count equals the corrupted + erased packets minus the sender's
    segments without payload at most; the return direction (pure ACKs) writes none."""
    pin = bpffs / "eten_oracle"
    create_map(pin)
    per = tmp_path / "per.csv"
    per.write_text("# flat 10 % frame erasure for MODCOD 28\n28,0,0.1\n28,30,0.1\n")
    oracle = {"map_pin": str(pin)}
    emu = emulator(
        seed=7,
        forward={
            "delay_ms": 20.0,
            "acm": {"mode": "ccm", "modcod": 28},
            "per_table": str(per),
            "queue": {"limit_packets": 2000, "limit_bytes": 3_000_000},
            "bit_errors": {"model": "uniform", "ber": 3e-6, "action": "deliver"},
            "oracle_eten": oracle,
        },
        **{
            "return": {
                "delay_ms": 20.0,
                "bit_errors": {"model": "uniform", "ber": 1e-4, "action": "drop"},
                "oracle_eten": oracle,
            }
        },
    )
    t0 = time.monotonic_ns()
    with capture_sent(topo.gw, "gw0") as cap:
        res = tcp_transfer(topo, topo.gw, topo.st, topo.st_ip, 600_000)
    t1 = time.monotonic_ns()
    assert res.received == res.sent == 600_000 and res.received_sha256 == res.sent_sha256
    fwd = emu.status()["forward"]["counters"]
    ret = emu.status()["return"]["counters"]
    notices = {d: emu.metric("oracle_notices_total", d) for d in ("forward", "return")}
    errors = {d: emu.metric("oracle_errors_total", d) for d in ("forward", "return")}
    entries = dump_map(pin)
    emu.stop()

    data = {s[:5] for s in cap.segments if s[5] > 0}
    no_payload = sum(1 for s in cap.segments if s[5] == 0)
    lost = fwd["corrupted_packets"] + fwd["erased_packets"]
    codes = {n.code for n in entries}
    print(
        f"forward: corrupted {fwd['corrupted_packets']} erased {fwd['erased_packets']} "
        f"notices {notices['forward']:.0f}; sender: {len(data)} data segments, "
        f"{no_payload} without payload; map: {len(entries)} entries, codes {sorted(codes)}; "
        f"return: corrupted {ret['corrupted_packets']} notices {notices['return']:.0f}"
    )
    assert errors == {"forward": 0, "return": 0}
    assert fwd["corrupted_packets"] > 5 and fwd["erased_packets"] > 5, fwd
    assert lost - no_payload <= notices["forward"] <= lost
    # One entry per distinct segment lost (a segment lost twice, first and retransmitted, is one
    # key); the map holds nothing else.
    assert 0 < len(entries) <= notices["forward"]
    assert codes == {0, 1}
    for n in entries:
        assert (n.saddr, n.daddr, n.sport, n.dport, n.seq) in data, n
        assert (n.saddr, n.daddr, n.dport) == (topo.gw_ip, topo.st_ip, 5201)
        assert n.source == 1
        assert t0 <= n.t_ns <= t1
    # The ACK direction loses ACKs, but a segment without payload is never notified.
    assert ret["corrupted_packets"] > 0 and notices["return"] == 0


def test_a_map_of_the_wrong_layout_or_a_missing_pin_stops_the_emulator_naming_the_field(
    topo: Topology, emulator: EmulatorFactory, bpffs: Path
) -> None:
    wrong = bpffs / "eten_val8"
    create_map(wrong, value_size=8)
    with pytest.raises(EmulatorError) as e:
        emulator(forward={"oracle_eten": {"map_pin": str(wrong)}})
    assert "forward.oracle_eten.map_pin: BPF map" in str(e.value)
    assert "value 16 bytes; it has type 9, key 16 bytes, value 8 bytes" in str(e.value)
    with pytest.raises(EmulatorError) as e:
        emulator(**{"return": {"oracle_eten": {"map_pin": str(bpffs / "absent")}}})
    assert "return.oracle_eten.map_pin: cannot open pinned BPF object" in str(e.value)
