"""Namespace test topology for the emulator tests and benchmark, and an emulator process handle.

    gw-host [gw0] ---veth--- [egw] emu [est] ---veth--- [st0] st-host

Modes:
- ``l2``   the emulator is a transparent L2 wire between ``egw`` and ``est``: both hosts sit in
           10.250.1.0/24 (gw-host .1, st-host .2) with permanent neighbour entries, so no ARP ever
           crosses the link (it would take a round trip and pollute counters).
- ``l3``   for the naive TUN forwarder: the emu namespace routes 10.250.1.0/24 (egw side) and
           10.250.2.0/24 (est side) through two TUN devices ``tna``/``tnb`` with policy rules
           keyed on the input interface, so every packet crosses the user-space forwarder once.
- ``veth`` gw-host and st-host joined by one plain veth (measures the traffic generator itself).

Everything lives in namespaces named ``<prefix><role>``; the prefix carries the creating PID so
parallel runs never collide, and tearing down removes every namespace (hence every interface in
it) and kills every process this object started (by PID), even after a failure. IPv6 is off in
all namespaces; tso/gso/gro/tx-checksumming are off on every veth (veth passes GSO
super-packets and partial checksums otherwise).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pyroute2 import NetNS, netns

# One setns helper for every test tier: the product's (a socket made inside a namespace).
from satlab.testbed.topology import WireEnd, bare_wire, new_namespace, socket_in_netns

REPO = Path(__file__).resolve().parents[2]
# SATLAB_EMULATOR_BIN: another build to run (e.g. the benchmark comparing an older binary).
EMULATOR_BIN = Path(
    os.environ.get("SATLAB_EMULATOR_BIN") or REPO / "target" / "release" / "satlab-emulator"
)
NAIVE_BIN = REPO / "target" / "release" / "naive-forwarder"
MAC_GW = "02:5a:00:00:00:01"
MAC_ST = "02:5a:00:00:00:02"

Mode = Literal["l2", "l3", "veth"]


def unique_prefix(tag: str = "satit") -> str:
    """A namespace-name prefix unique to this process (not 'sl...': the testbed sweeper owns it)."""
    return f"{tag}-{os.getpid()}-"


def sweep_stale(tag: str) -> list[str]:
    """Remove namespaces ``<tag>-<pid>-*`` left by a crashed run whose PID no longer exists."""
    removed = []
    for name in netns.listnetns():
        parts = name.split("-")
        if len(parts) < 3 or parts[0] != tag or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        # Another session's sweeper may have removed it since the listing: gone is fine.
        with contextlib.suppress(FileNotFoundError):
            netns.remove(name)
            removed.append(name)
    return removed


def run_in(
    ns: str, args: Sequence[str], check: bool = True, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run a command inside namespace ``ns`` and wait for it."""
    r = subprocess.run(
        ["ip", "netns", "exec", ns, *args], capture_output=True, text=True, timeout=timeout
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} in {ns} failed ({r.returncode}): {r.stderr}")
    return r


def spawn_in(ns: str, args: Sequence[str], **kw: Any) -> subprocess.Popen[bytes]:
    """Start a process inside namespace ``ns``, in a process group of its own (see stop_group)."""
    p: subprocess.Popen[bytes] = subprocess.Popen(
        ["ip", "netns", "exec", ns, *args], start_new_session=True, **kw
    )
    return p


def stop_group(p: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
    """SIGTERM then SIGKILL the process group of one process spawn_in started (by its PID)."""
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)
    return p.returncode


class ProcessesAndTeardown:
    """What this tier's Topology and the gateway tier's (tests/gateway/gwnet.py) share: the
    processes one started (spawn_in, kept in `procs`), stopped by PID one at a time or all at
    close, and the context manager: __enter__ builds (`_build`) and, when that fails part way,
    closes what was made before the error goes on; __exit__ closes."""

    procs: list[subprocess.Popen[bytes]]

    def _build(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def stop(self, p: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
        """SIGTERM then SIGKILL one process this topology started (its own process group only)."""
        rc = stop_group(p, timeout)
        if p in self.procs:
            self.procs.remove(p)
        return rc

    def stop_all(self) -> None:
        """Stops every process still running; one that fails to stop does not keep the rest."""
        for p in list(self.procs):
            with contextlib.suppress(Exception):
                self.stop(p)

    def __enter__(self) -> Self:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NsHTTPConnection(http.client.HTTPConnection):
    """HTTPConnection whose TCP socket is made inside a network namespace."""

    def __init__(self, ns: str, host: str, port: int, timeout: float = 5.0) -> None:
        super().__init__(host, port, timeout=timeout)
        self.ns = ns

    def connect(self) -> None:
        s = socket_in_netns(self.ns, socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect((self.host, self.port))
        self.sock = s


def http_json(
    ns: str, host: str, port: int, method: str, path: str, body: Any = None, timeout: float = 5.0
) -> tuple[int, Any]:
    """One HTTP request from inside ``ns``; returns (status, parsed JSON or raw text)."""
    conn = NsHTTPConnection(ns, host, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw
    finally:
        conn.close()


@dataclass
class Topology(ProcessesAndTeardown):
    mode: Mode = "l2"
    prefix: str = field(default_factory=unique_prefix)
    mtu: int = 1500
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    @property
    def gw(self) -> str:
        return self.prefix + "gw-host"

    @property
    def emu(self) -> str:
        return self.prefix + "emu"

    @property
    def st(self) -> str:
        return self.prefix + "st-host"

    @property
    def gw_ip(self) -> str:
        return "10.250.1.1"

    @property
    def st_ip(self) -> str:
        return "10.250.2.1" if self.mode == "l3" else "10.250.1.2"

    # --- shell helpers -------------------------------------------------------------------
    def sh(
        self, ns: str, args: Sequence[str], check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside a namespace and wait for it."""
        return run_in(ns, args, check, timeout)

    def spawn(self, ns: str, args: Sequence[str], **kw: Any) -> subprocess.Popen[bytes]:
        """Start a process inside a namespace; it is killed (by PID) at teardown."""
        p = spawn_in(ns, args, **kw)
        self.procs.append(p)
        return p

    def sock(self, ns: str, kind: int = socket.SOCK_DGRAM) -> socket.socket:
        return socket_in_netns(ns, socket.AF_INET, kind)

    # --- build / tear down ---------------------------------------------------------------
    def _new_ns(self, name: str) -> None:
        new_namespace(name)
        self.created.append(name)
        for key, val in (
            ("net.ipv6.conf.all.disable_ipv6", "1"),
            ("net.ipv6.conf.default.disable_ipv6", "1"),
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
        ):
            self.sh(name, ["sysctl", "-qw", f"{key}={val}"])

    def _veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str, mac_a: str | None = None) -> None:
        with NetNS(ns_a) as a:
            a.link("add", ifname=if_a, kind="veth", peer={"ifname": if_b, "net_ns_fd": ns_b})
            ia = a.link_lookup(ifname=if_a)[0]
            if mac_a:
                a.link("set", index=ia, address=mac_a)
            a.link("set", index=ia, mtu=self.mtu, state="up")
        with NetNS(ns_b) as b:
            b.link("set", index=b.link_lookup(ifname=if_b)[0], mtu=self.mtu, state="up")
        self.offloads_off(ns_a, if_a)
        self.offloads_off(ns_b, if_b)

    def offloads_off(self, ns: str, ifname: str) -> None:
        feats = ["tso", "off", "gso", "off", "gro", "off", "tx", "off"]
        self.sh(ns, ["ethtool", "-K", ifname, *feats])

    def _addr(self, ns: str, ifname: str, addr: str, plen: int = 24) -> None:
        with NetNS(ns) as n:
            n.addr("add", index=n.link_lookup(ifname=ifname)[0], address=addr, prefixlen=plen)

    def _build(self) -> None:
        sweep_stale(self.prefix.split("-")[0])
        if self.mode == "veth":
            for n in (self.gw, self.st):
                self._new_ns(n)
            self._veth(self.gw, "gw0", self.st, "st0", MAC_GW)
            self._addr(self.gw, "gw0", self.gw_ip)
            self._addr(self.st, "st0", self.st_ip)
            return
        for n in (self.gw, self.emu, self.st):
            self._new_ns(n)
        gw_end = WireEnd(self.gw, "gw0", self.gw_ip, MAC_GW)
        st_end = WireEnd(self.st, "st0", self.st_ip, MAC_ST)
        bare_wire(self.emu, ("egw", "est"), (gw_end, st_end), self.mtu)
        for ns, ifname in (
            (self.gw, "gw0"),
            (self.emu, "egw"),
            (self.st, "st0"),
            (self.emu, "est"),
        ):
            self.offloads_off(ns, ifname)
        if self.mode == "l2":
            # Permanent neighbours: no ARP across the (slow, lossy) emulated link.
            self.sh(self.gw, ["ip", "neigh", "replace", self.st_ip, "lladdr", MAC_ST, "dev", "gw0"])
            self.sh(self.st, ["ip", "neigh", "replace", self.gw_ip, "lladdr", MAC_GW, "dev", "st0"])
            return
        # l3: hosts route via the emu namespace; emu sends each direction through the TUN pair.
        self._addr(self.emu, "egw", "10.250.1.254")
        self._addr(self.emu, "est", "10.250.2.254")
        self.sh(self.gw, ["ip", "route", "add", "10.250.2.0/24", "via", "10.250.1.254"])
        self.sh(self.st, ["ip", "route", "add", "10.250.1.0/24", "via", "10.250.2.254"])
        self.sh(self.emu, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        e = self.emu
        for tun in ("tna", "tnb"):
            self.sh(e, ["ip", "tuntap", "add", "mode", "tun", "name", tun])
            # txqueuelen 5000 (default 500): the baseline is not starved by queue bursts
            self.sh(e, ["ip", "link", "set", tun, "mtu", str(self.mtu), "txqueuelen", "5000", "up"])
            self.sh(e, ["sysctl", "-qw", f"net.ipv4.conf.{tun}.rp_filter=0"])
        self.sh(e, ["ip", "rule", "add", "pref", "100", "iif", "egw", "lookup", "100"])
        self.sh(e, ["ip", "rule", "add", "pref", "101", "iif", "est", "lookup", "101"])
        self.sh(e, ["ip", "route", "add", "10.250.2.0/24", "dev", "tna", "table", "100"])
        self.sh(e, ["ip", "route", "add", "10.250.1.0/24", "dev", "tnb", "table", "101"])

    def close(self) -> None:
        self.stop_all()
        for n in reversed(self.created):
            with contextlib.suppress(Exception):
                netns.remove(n)
        self.created.clear()

    # --- the naive forwarder (l3 mode) ---------------------------------------------------
    def start_naive_forwarder(self, cpus: str | None = None) -> subprocess.Popen[bytes]:
        """The naive TUN forwarder in the emu namespace (on ``cpus``, a ``taskset -c`` list)."""
        assert self.mode == "l3", "the naive forwarder needs the l3 topology"
        if not NAIVE_BIN.exists():
            raise FileNotFoundError(f"{NAIVE_BIN}: cargo build --release -p naive-forwarder")
        pin = ["taskset", "-c", cpus] if cpus else []
        p = self.spawn(self.emu, [*pin, str(NAIVE_BIN), "tna", "tnb"], stdout=subprocess.PIPE)
        assert p.stdout is not None
        line = p.stdout.readline().decode().strip()
        if line != "ready":
            raise RuntimeError(f"naive-forwarder did not start: {line!r}")
        return p


class EmulatorError(RuntimeError):
    pass


@dataclass
class Emulator:
    """``satlab-emulator --config FILE.yaml`` inside the topology's emu namespace."""

    topo: Topology
    config: dict[str, Any]
    binary: Path = EMULATOR_BIN
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="satit-emu-")))
    proc: subprocess.Popen[bytes] | None = None
    host: str = "127.0.0.1"
    port: int = 8781
    #: CPUs the emulator may run on (``taskset -c`` list), e.g. to keep it off the generator's core
    cpus: str | None = None

    @property
    def config_path(self) -> Path:
        return self.workdir / "emulator.yaml"

    @property
    def log_path(self) -> Path:
        return self.workdir / "emulator.log"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def start(self, timeout: float = 15.0) -> Emulator:
        if not self.binary.exists():
            raise FileNotFoundError(f"{self.binary}: cargo build --release -p satlab-emulator")
        listen = str(self.config.get("control", {}).get("listen", f"{self.host}:{self.port}"))
        self.host, _, port = listen.rpartition(":")
        self.port = int(port)
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        logf = self.log_path.open("wb")
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        self.proc = self.topo.spawn(
            self.topo.emu,
            [*pin, str(self.binary), "--config", str(self.config_path)],
            stdout=logf,
            stderr=subprocess.STDOUT,
        )
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EmulatorError(f"emulator exited with {self.proc.returncode}:\n{self.log()}")
            try:
                code, _ = self.request("GET", "/status", timeout=1.0)
                if code == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise EmulatorError(f"control endpoint {listen} not up after {timeout}s:\n{self.log()}")

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 5.0
    ) -> tuple[int, Any]:
        return http_json(self.topo.emu, self.host, self.port, method, path, body, timeout)

    def status(self) -> dict[str, Any]:
        code, body = self.request("GET", "/status")
        if code != 200 or not isinstance(body, dict):
            raise EmulatorError(f"GET /status -> {code}: {body}")
        return body

    def control(self, body: dict[str, Any]) -> tuple[int, Any]:
        return self.request("POST", "/control", body)

    def metric(self, name: str, direction: str) -> float:
        """One per-direction value of GET /metrics (`satlab_emulator_<name>`)."""
        code, text = self.request("GET", "/metrics")
        if code != 200:
            raise EmulatorError(f"GET /metrics -> {code}: {text}")
        line = f'satlab_emulator_{name}{{direction="{direction}"}} '
        for row in str(text).splitlines():
            if row.startswith(line):
                return float(row[len(line) :])
        raise EmulatorError(f"{line!r} not in /metrics")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        rc = self.topo.stop(self.proc)
        return rc

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def proc_stat(pid: int) -> tuple[float, int]:
    """(CPU seconds user+system, RSS bytes) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / tck  # utime, stime (fields 14, 15)
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # field 24
    return cpu, rss
