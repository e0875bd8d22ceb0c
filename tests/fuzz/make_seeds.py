"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/<target>/) from the repository's own files.

    .venv/bin/python tests/fuzz/make_seeds.py

- packet: frames built like the unit-test vectors of crates/packet (TCP/UDP/ICMP over IPv4 and
  IPv6, VLAN tags, CETEN and IP-ERN options, ETEN notices, virtio_net_hdr GSO super-packets).
- config: scenarios/links/*.yaml (without the emulator's own sections: the target parses
  linkmodel's LinkConfig) and the `link:` of every scenarios/*.yaml, file references pointed at
  the seeds below (relative to tests/fuzz, where run.sh runs the fuzzers), plus one configuration
  that names one file of every kind.
- traces: scenarios/traces/*, a delay file and an error pattern.
- tables: crates/linkmodel/src/data/*_modcod.txt and a PER table.
The seeds are committed; rerun this after changing it. Fuzzing never writes here (run.sh gives
libFuzzer a scratch copy).
"""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from checksum import inet_checksum  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"


def eth(ethertype: int, payload: bytes, vlan: int | None = None) -> bytes:
    macs = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1])
    tag = b"" if vlan is None else struct.pack("!HH", 0x8100, vlan)
    return macs + tag + struct.pack("!H", ethertype) + payload


A4, B4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
A6, B6 = bytes([0xFD] + [0] * 14 + [1]), bytes([0xFD] + [0] * 14 + [2])


def ipv4(proto: int, l4: bytes, src: bytes = A4, dst: bytes = B4) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0x1234, 0x4000, 64, proto, 0, src, dst)
    return h[:10] + struct.pack("!H", inet_checksum(h)) + h[12:] + l4


def ipv6(proto: int, l4: bytes) -> bytes:
    return struct.pack("!IHBB", 0x6 << 28, len(l4), proto, 64) + A6 + B6 + l4


def pseudo(proto: int, length: int, v6: bool) -> bytes:
    if v6:
        return A6 + B6 + struct.pack("!IxxxB", length, proto)
    return A4 + B4 + struct.pack("!xBH", proto, length)


def tcp(payload: bytes, options: bytes = b"", flags: int = 0x18, v6: bool = False) -> bytes:
    doff = (20 + len(options)) // 4
    h = struct.pack(
        "!HHIIBBHHH", 40000, 5201, 0x01020304, 0x0A0B0C0D, doff << 4, flags, 64240, 0, 0
    )
    seg = h + options + payload
    c = inet_checksum(pseudo(6, len(seg), v6) + seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def udp(payload: bytes, v6: bool = False) -> bytes:
    d = struct.pack("!HHHH", 5000, 5201, 8 + len(payload), 0) + payload
    return d[:6] + struct.pack("!H", inet_checksum(pseudo(17, len(d), v6) + d)) + d[8:]


def icmp(msg_type: int, rest: bytes, data: bytes) -> bytes:
    m = bytes([msg_type, 0, 0, 0]) + rest + data
    return m[:2] + struct.pack("!H", inet_checksum(m)) + m[4:]


CETEN = bytes.fromhex("fe0c4345e666ffff80004000")  # crates/packet/src/ceten.rs tests
ERN = bytes.fromhex("fe14455200003908000927c0fffffa4c00000b68")  # crates/packet/src/ern.rs tests


def eten_notice(mac: bool) -> bytes:
    quote = ipv4(6, b"\0" * 20)[:20]
    l4 = struct.pack("!HHI", 40000, 5201, 0x01020304)
    m = (
        bytes([253, 1, 0, 0, 1, 1 if mac else 0, 0, 7])
        + quote
        + l4
        + (b"\x5a" * 16 if mac else b"")
    )
    return m[:2] + struct.pack("!H", inet_checksum(m)) + m[4:]


def vnet(flags: int, gso_type: int, gso_size: int, csum_start: int, csum_offset: int) -> bytes:
    return struct.pack("<BBHHHH", flags, gso_type, 0, gso_size, csum_start, csum_offset)


def packet_seeds() -> dict[str, bytes]:
    payload = bytes(range(40))
    return {
        "tcp-ipv4.bin": eth(0x0800, ipv4(6, tcp(b"hi!"))),
        "tcp-ipv4-bare.bin": ipv4(6, tcp(b"hi!")),
        "udp-ipv4.bin": eth(0x0800, ipv4(17, udp(b"abcd"))),
        "icmp-echo.bin": eth(0x0800, ipv4(1, icmp(8, struct.pack("!HH", 0x42, 7), b"ping"))),
        "tcp-vlan.bin": eth(0x0800, ipv4(6, tcp(b"hi!")), vlan=0xA064),
        "udp-ipv6.bin": eth(0x86DD, ipv6(17, udp(b"abcd", v6=True))),
        "tcp-ipv6.bin": eth(0x86DD, ipv6(6, tcp(b"hello", v6=True))),
        "tcp-ceten.bin": eth(0x0800, ipv4(6, tcp(b"data", options=CETEN))),
        "tcp-ern.bin": eth(0x0800, ipv4(6, tcp(b"data", options=ERN))),
        "eten.bin": eth(0x0800, ipv4(1, eten_notice(mac=False), src=B4, dst=A4)),
        "eten-mac.bin": eth(0x0800, ipv4(1, eten_notice(mac=True), src=B4, dst=A4)),
        # virtio_net_hdr + GSO super-packets (the kernel leaves the transport checksum partial).
        "gso-tcpv4.bin": vnet(1, 1, 16, 34, 16) + eth(0x0800, ipv4(6, tcp(payload, flags=0x99))),
        "gso-tcpv6.bin": vnet(0, 4, 12, 0, 0) + eth(0x86DD, ipv6(6, tcp(payload, v6=True))),
        "gso-udp-vlan.bin": vnet(1, 5, 12, 38, 6) + eth(0x0800, ipv4(17, udp(payload)), vlan=5),
    }


LINK_KEYS = {"seed", "geometry", "forward", "return"}


def link_seeds() -> dict[str, str]:
    """The emulator configurations of the repository, file references pointed at the seeds."""

    def fix(node: object) -> object:
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k in ("file", "path", "modcod_table", "per_table", "pattern_file"):
                    v = f"corpus/traces/{Path(v).name}" if isinstance(v, str) else v
                out[k] = fix(v)
            return out
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    seeds = {}
    for p in sorted((ROOT / "scenarios/links").glob("*.yaml")):
        text = p.read_text()
        data = yaml.safe_load(text)
        # The fuzzed parser is linkmodel's LinkConfig: the emulator's own sections (ports,
        # telemetry, control) go; a file without them is kept as written, comments and all.
        if set(data) - LINK_KEYS:
            text = yaml.safe_dump(
                {k: v for k, v in data.items() if k in LINK_KEYS}, sort_keys=False
            )
        seeds[p.name] = text
    seeds["rain-step.yaml"] = seeds["rain-step.yaml"].replace("../traces/", "corpus/traces/")
    for p in sorted((ROOT / "scenarios").glob("*.yaml")):
        link = yaml.safe_load(p.read_text()).get("link")
        if link:
            seeds[f"scenario-{p.name}"] = yaml.safe_dump(fix(link), sort_keys=False)
    seeds["all-files.yaml"] = """\
# One file of every kind the configuration can name (tests/fuzz/corpus/*).
forward:
  delay_file: {path: corpus/traces/delay.txt, refresh_period_ms: 100, loop: true}
  modcod_table: corpus/tables/dvbs2_modcod.txt
  per_table: corpus/tables/per.csv
  downlink:
    attenuation: {type: file, file: corpus/traces/quickstart-fade.txt, loop: true}
  bit_errors: {model: pattern, pattern_file: corpus/traces/pattern.txt}
return:
  kind: rcs2
  modcod_table: corpus/tables/rcs2_modcod.txt
  uplink:
    attenuation: {type: on_off, on_ticks: 3, off_ticks: 7, amplitude_db: 4, tick_ms: 10}
  reorder: {probability: 0.05, extra_delay_ms: 5}
"""
    return seeds


def main() -> None:
    for d in ("packet", "config", "traces", "tables"):
        shutil.rmtree(CORPUS / d, ignore_errors=True)
        (CORPUS / d).mkdir(parents=True)
    for name, data in packet_seeds().items():
        (CORPUS / "packet" / name).write_bytes(data)
    for name, text in link_seeds().items():
        (CORPUS / "config" / name).write_text(text)
    for p in sorted((ROOT / "scenarios/traces").iterdir()):
        shutil.copy(p, CORPUS / "traces" / p.name)
    (CORPUS / "traces/delay.txt").write_text(
        "# OpenSAND FileDelay: <tick> <ms>\n0 250\n10 260.5\n20 250\n"
    )
    (CORPUS / "traces/pattern.txt").write_text(
        "# error pattern: <packet_index> <bit_offset>...\n0 3 17\n4 160\n9 0 1 2 8000\n"
    )
    for p in sorted((ROOT / "crates/linkmodel/src/data").glob("*_modcod.txt")):
        shutil.copy(p, CORPUS / "tables" / p.name)
    (CORPUS / "tables/per.csv").write_text(
        "modcod_id,esn0_db,per\n7,3.9,1e-1\n7,4.0,1e-5 # comment\n28,15.9,0.5\n28,16.2,0\n"
    )


if __name__ == "__main__":
    main()
