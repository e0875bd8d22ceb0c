"""The product's testbed (satlab.testbed: topology.build with the gateway spliced in at both
satellite edges, one agent per box) and the tools the gateway tests use (crafted TCP segments,
packet capture, HTTP inside a namespace).

    srv1 [eth0] --- [p1|lan] gw [sat0]=veth=[gwx] GATEWAY(gw) [wan] --- [gw] emu [st]
        --- [wan] GATEWAY(st) [stx]=veth=[sat0] st [lan|p1] --- [eth0] cli1

- Addresses are the topology's (satlab.testbed.topology): srv 10.250.1.11, gw 10.250.1.1 (lan) /
  10.250.2.1 (sat0); st 10.250.2.2 (sat0) / 10.250.3.1 (lan), cli 10.250.3.11. The edges route
  with the kernel; every next hop has a permanent neighbour entry (no ARP across the slow link).
  The tests name the end hosts ``srv`` and ``cli``.
- ``gateway=False`` cables each edge's sat0 straight to the emulator (the baseline).
- The testbed's own lifecycle owns the namespaces (its state directory names this process, so the
  sweeper at every testbed start removes only those of dead processes); :meth:`Topology.close`
  kills every process it started (by PID, its own process group), then closes the testbed, which
  removes every namespace, even after a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import yaml
from pyroute2 import NetNS

# The namespace helpers, the checksum and deep_merge are the emulator tier's (tests/integration).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import netns as netns_util  # noqa: E402
from checksum import inet_checksum  # noqa: E402
from emuconfig import deep_merge  # noqa: E402

from satlab.agent import namespaces  # noqa: E402
from satlab.testbed import testbed, topology  # noqa: E402
from satlab.testbed.testbed import Testbed  # noqa: E402
from satlab.testbed.topology import socket_in_netns  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EMULATOR_BIN = REPO / "target" / "release" / "satlab-emulator"
GATEWAY_BIN = REPO / "target" / "release" / "satlab-gateway"

SRV, GW_LAN = f"{namespaces.SERVER_NET}.11", f"{namespaces.SERVER_NET}.1"
GW_SAT, ST_SAT = f"{namespaces.SAT_NET}.1", f"{namespaces.SAT_NET}.2"
ST_LAN, CLI = f"{namespaces.CLIENT_NET}.1", f"{namespaces.CLIENT_NET}.11"
QUIET_SYSCTLS = (
    "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1"
    " net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0"
    "; for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done"
)
HMAC_KEY = b"satlab-g5-testbed-key-0123456789"


def sweep_stale() -> list[str]:
    """Remove the testbeds of dead processes (the product's sweeper; each testbed start runs it)."""
    return testbed.sweep()


def _mac(ns: str, ifname: str) -> str:
    with NetNS(ns) as n:
        link = n.get_links(n.link_lookup(ifname=ifname)[0])[0]
        addr: str = link.get_attr("IFLA_ADDRESS")
        return addr


def http_json(ns: str, port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One HTTP request to 127.0.0.1:port inside ``ns``; (status, parsed JSON or raw text)."""
    result: tuple[int, Any] = netns_util.http_json(ns, "127.0.0.1", port, method, path, body)
    return result


ROLES = {"srv": "srv1", "cli": "cli1"}  # the tests' names of the testbed's end hosts


@dataclass
class Topology(netns_util.ProcessesAndTeardown):
    gateway: bool = True
    tb: Testbed = field(init=False)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tb = Testbed(1, 1, gateway=self.gateway)

    @property
    def work(self) -> Path:
        return self.tb.dir

    def ns(self, role: str) -> str:
        assert self.tb.topo is not None
        return self.tb.topo.ns(ROLES.get(role, role))

    # --- processes -----------------------------------------------------------------------
    def sh(self, role: str, args: Sequence[str], check: bool = True) -> str:
        r = netns_util.run_in(self.ns(role), args, check=check)
        return r.stdout

    def spawn(self, role: str, args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as f:
            p = netns_util.spawn_in(self.ns(role), args, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    # --- build ---------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.tb.__enter__()  # builds the topology, or removes what it made and raises
        return super().__enter__()

    def close(self) -> None:
        self.stop_all()
        self.tb.close()

    def _build(self) -> None:
        """What the gateway tests add to the testbed: no IPv6, no reverse-path filter, offloads off
        on the emulator's ports too, and permanent neighbours for every next hop."""
        topo = self.tb.topo
        assert topo is not None
        for role in topo.boxes:
            self.sh(role, ["sh", "-c", QUIET_SYSCTLS])
        offloads = "tso off gso off gro off tx off"
        emu_ports = topology.interfaces(topo, "emu")
        self.sh("emu", ["sh", "-c", "; ".join(f"ethtool -K {i} {offloads}" for i in emu_ports)])
        mac = {
            "srv": _mac(self.ns("srv"), "eth0"),
            "gw_lan": _mac(self.ns("gw"), "lan"),
            "gw_sat": _mac(self.ns("gw"), "sat0"),
            "st_sat": _mac(self.ns("st"), "sat0"),
            "st_lan": _mac(self.ns("st"), "lan"),
            "cli": _mac(self.ns("cli"), "eth0"),
        }
        neigh = (
            ("srv", GW_LAN, "gw_lan", "eth0"),
            ("gw", SRV, "srv", "lan"),
            ("gw", ST_SAT, "st_sat", "sat0"),
            ("st", GW_SAT, "gw_sat", "sat0"),
            ("st", CLI, "cli", "lan"),
            ("cli", ST_LAN, "st_lan", "eth0"),
        )
        for role, ip, who, dev in neigh:
            self.sh(role, ["ip", "neigh", "replace", ip, "lladdr", mac[who], "dev", dev])

    # --- emulator and gateways -------------------------------------------------------------
    def emulator_config(self, **over: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "seed": 5,
            "ports": {
                "gw": {"kind": "af_packet", "interface": "gw"},
                "st": {"kind": "af_packet", "interface": "st"},
            },
            "telemetry": {
                "socket": str(self.work / "telemetry.sock"),
                "period_ms": 50,
                "events": "all",
            },
            "control": {"listen": "127.0.0.1:8781"},
            "forward": {
                "delay_ms": 100.0,
                "symbol_rate_baud": 2.0e6,
                "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 0.0},
                "queue": {"limit_packets": 1000, "limit_bytes": 1_500_000},
            },
            "return": {"delay_ms": 100.0, "symbol_rate_baud": 2.0e6},
        }
        return deep_merge(base, over)

    def start_emulator(self, cfg: dict[str, Any]) -> subprocess.Popen[bytes]:
        if not EMULATOR_BIN.exists():
            raise FileNotFoundError(f"{EMULATOR_BIN}: cargo build --release")
        path = self.work / "emulator.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        p = self.spawn("emu", [str(EMULATOR_BIN), "--config", str(path)], self.work / "emu.log")
        self._wait_http(p, "emu", 8781, self.work / "emu.log")
        return p

    def emu(self, method: str, path: str, body: Any = None) -> Any:
        code, data = http_json(self.ns("emu"), 8781, method, path, body)
        assert code == 200, f"emulator {method} {path} -> {code}: {data}"
        return data

    def gateway_config(self, role: str, **over: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "role": role,
            "ports": {"inside": "gwx" if role == "gw" else "stx", "outside": "wan"},
            "telemetry": {"socket": str(self.work / "telemetry.sock"), "reconnect_ms": 50},
            "http": {"listen": "127.0.0.1:8791"},
        }
        return deep_merge(base, over)

    def start_gateway(self, cfg: dict[str, Any]) -> subprocess.Popen[bytes]:
        if not GATEWAY_BIN.exists():
            raise FileNotFoundError(f"{GATEWAY_BIN}: cargo build --release")
        role = cfg["role"]
        path = self.work / f"gateway-{role}.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        log = self.work / f"gateway-{role}.log"
        p = self.spawn(role, [str(GATEWAY_BIN), "--config", str(path)], log)
        self._wait_http(p, role, 8791, log)
        return p

    def gw_status(self, role: str) -> dict[str, Any]:
        code, data = http_json(self.ns(role), 8791, "GET", "/status")
        assert code == 200, data
        return data  # type: ignore[no-any-return]

    def _wait_http(self, p: subprocess.Popen[bytes], role: str, port: int, log: Path) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise RuntimeError(
                    f"{role} process exited {p.returncode}: {log.read_text()[-3000:]}"
                )
            with contextlib.suppress(OSError):
                if http_json(self.ns(role), port, "GET", "/status")[0] == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"{role}: no HTTP endpoint after 15 s: {log.read_text()[-3000:]}")


# --- packets ---------------------------------------------------------------------------------
def ipv4(src: str, dst: str, proto: int, payload: bytes, tos: int = 0, ident: int = 0) -> bytes:
    h = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        tos,
        20 + len(payload),
        ident,
        0x4000,
        64,
        proto,
        0,
        socket.inet_aton(src),
        socket.inet_aton(dst),
    )
    h = h[:10] + struct.pack("!H", inet_checksum(h)) + h[12:]
    return h + payload


def tcp_segment(
    src: str,
    dst: str,
    sport: int,
    dport: int,
    seq: int,
    payload: bytes,
    options: bytes = b"",
    flags: int = 0x18,
    ack: int = 0,
) -> bytes:
    """An IPv4 packet carrying one TCP segment (checksums filled)."""
    opts = options + b"\x01" * (-len(options) % 4)
    hl = 20 + len(opts)
    t = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (hl // 4) << 4, flags, 65535, 0, 0)
    t += opts + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(t))
    t = t[:16] + struct.pack("!H", inet_checksum(pseudo + t)) + t[18:]
    return ipv4(src, dst, 6, t, ident=seq & 0xFFFF)


def ceten_option(fwd_corr: int = 0xFFFF, fwd_cong: int = 0xFFFF) -> bytes:
    """crates/packet/src/ceten.rs: kind 254, len 12, ExID 0x4345, four Q16 probabilities."""
    return struct.pack("!BBHHHHH", 254, 12, 0x4345, fwd_corr, fwd_cong, 0, 0)


def ern_option(cwnd: int, rtt_us: int, feedback: int, reverse: int = 0) -> bytes:
    """crates/packet/src/ern.rs: kind 254, len 20, ExID 0x4552, cwnd, rtt, feedback, reverse."""
    return struct.pack("!BBHIIii", 254, 20, 0x4552, cwnd, rtt_us, feedback, reverse)


def find_option(tcp: bytes, exid: int, length: int) -> bytes | None:
    hl = (tcp[12] >> 4) * 4
    opts = tcp[20:hl]
    i = 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            return None
        if k == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            return None
        ln = opts[i + 1]
        if k in (253, 254) and ln == length and struct.unpack("!H", opts[i + 2 : i + 4])[0] == exid:
            return opts[i : i + ln]
        i += ln
    return None


def parse_notice(ip: bytes) -> dict[str, Any] | None:
    """An ETEN notice (crates/packet/src/eten.rs) from an IPv4 packet, or None."""
    ihl = (ip[0] & 15) * 4
    if ip[9] != 1 or len(ip) < ihl + 36 or ip[ihl] != 253:
        return None
    m = ip[ihl:]
    flags = m[5]
    n = 52 if flags & 1 else 36
    q = m[8:28]
    t = m[28:36]
    out = {
        "code": m[1],
        "notice_seq": struct.unpack("!H", m[6:8])[0],
        "src": socket.inet_ntoa(q[12:16]),
        "dst": socket.inet_ntoa(q[16:20]),
        "proto": q[9],
        "sport": struct.unpack("!H", t[0:2])[0],
        "dport": struct.unpack("!H", t[2:4])[0],
        "seq": struct.unpack("!I", t[4:8])[0],
        "checksum_ok": inet_checksum(bytes(m[:n])) == 0,
        "mac_ok": None,
    }
    if flags & 1:
        signed = bytes(m[:2]) + b"\0\0" + bytes(m[4:36])
        want = hmac.new(HMAC_KEY, signed, hashlib.sha256).digest()[:16]
        out["mac_ok"] = hmac.compare_digest(want, bytes(m[36:52]))
    return out


class RawSender:
    """Sends whole IPv4 packets from inside a namespace (IPPROTO_RAW: the kernel routes them)."""

    def __init__(self, ns: str) -> None:
        self.s = socket_in_netns(ns, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def send(self, pkt: bytes) -> None:
        self.s.sendto(pkt, (socket.inet_ntoa(pkt[16:20]), 0))

    def close(self) -> None:
        self.s.close()


class Capture:
    """Collects (monotonic time, IPv4 packet without the Ethernet header) from an interface in
    a namespace (AF_PACKET, a background thread). ``want`` filters IPv4 packets."""

    def __init__(self, ns: str, ifname: str, want: Any = None, outgoing: bool = False) -> None:
        eth_p_ip = 0x0800
        self.s = socket_in_netns(ns, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(eth_p_ip))
        self.s.bind((ifname, eth_p_ip))
        self.s.settimeout(0.1)
        self.outgoing = outgoing
        self.want = want
        self.items: list[tuple[float, bytes]] = []
        self.lock = threading.Lock()
        self._stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                data, addr = self.s.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            now = time.monotonic()
            if (addr[2] == socket.PACKET_OUTGOING) != self.outgoing:
                continue
            data = data[14:]
            if self.want is None or self.want(data):
                with self.lock:
                    self.items.append((now, data))

    def snapshot(self) -> list[tuple[float, bytes]]:
        with self.lock:
            return list(self.items)

    def close(self) -> None:
        self._stop = True
        self.t.join(2)
        self.s.close()


def pace(rate_pps: float, n: int, send: Any) -> list[float]:
    """Calls send(i) n times at rate_pps (absolute schedule); returns the send times."""
    times = []
    t0 = time.monotonic()
    for i in range(n):
        at = t0 + i / rate_pps
        while True:
            d = at - time.monotonic()
            if d <= 0:
                break
            time.sleep(min(d, 0.002))
        times.append(time.monotonic())
        send(i)
    return times
