"""The host agent's server: `python -m satlab.agent.server --socket PATH --name ROLE`, or on a
physical box `--listen ADDRESS:PORT --cert NAME.crt --key NAME.key --ca ca.crt --name NAME`
(mutual TLS, satlab.agent.tlshttp; both listeners may serve one agent).

Endpoints (JSON over HTTP/1.1 on a Unix socket, or TLS over TCP):
  GET  /health                      who and where the agent is
  POST /sysctl      {name: value}   write sysctls of this host's network namespace
  POST /offloads    {interfaces}    switch off TSO/GSO/GRO and tx checksum offload (ethtool -K)
  POST /route-metrics {metrics}     window, advmss, initcwnd on the box's default route (ip route)
  POST /http {port, method, path, json?}  relay one request to the emulator, gateway or PEP
                                    of this box on 127.0.0.1 (their ports only)
  POST /splice {interface, inside, outside}  a veth bump in an interface (the edge gateway's
                                    ports on a container box); POST /unsplice undoes it
  POST /addressing {interfaces}     set interfaces' MTU, IPv4 addresses and gateway routes (a
                                    box: the run's MTU; an edge moved behind a run's terrestrial
                                    hops, and back); answers the MTUs they had (mtu_before)
  POST /hops {hops, mtu, uplinks?}  a hop box (compose `hops`, hardware role hop): build a run's
                                    routers, hop emulators and cross hosts as namespaces, each
                                    with its own agent (satlab.agent.hopbox), on the box's
                                    `uplinks` NICs (default srv hopup hoplan); {hops: []} removes
  POST /terminals {terminals, mtu, uplink}  the compose st box: build a run's terminals 2..N,
                                    their st edges (macvlans of `uplink`) and clients, as
                                    namespaces with their own agents (satlab.agent.terminalbox);
                                    {terminals: []} removes them
  ANY  /boxes/ROLE/PATH             a hop box: relay the request to the agent of its box ROLE
                                    (a hardware hop box's sub-agents listen on its Unix sockets)
  POST /processes   {id, kind, args} start a traffic generator (kind=traffic), the emulator, the
                                    edge gateway (kind=gateway), the split-TCP PEP (kind=pep),
                                    an end-host scheme loader (kind=scheme:
                                    endhosts/build/sl-scheme; the agent makes its pin directory
                                    and cgroup, removed when it ends), Yang's receiver
                                    (kind=withhold: satlab-withhold), or a pcap (kind=capture,
                                    args [iface, file, snaplen, count]); with `cgroup`, in that
                                    cgroup (a scheme's sockops acts there)
  GET  /processes/ID                state, exit code, JSON result (last stdout line), stderr tail
  DELETE /processes/ID              stop it (SIGTERM, then SIGKILL after 3 s)
  DELETE /processes                 stop every process and the sampling, forget them: a box that
                                    outlives a run (a compose container) starts the next one clean
  POST /sampling    {period_ms, ports} sample TCP_INFO of sockets to/from these ports (INET_DIAG)
  GET  /sampling                    the samples so far
  GET  /sampling/latest             the newest sample of each connection (live views)
  GET  /netstat                     TCP counters of this namespace (/proc/net/netstat, snmp)
  GET  /addresses                   IPv4 addresses by interface (a hardware box's data address)
  GET  /macs                        MAC address by interface (an edge's: OpenSAND's Ethernet mode)
  POST /opensand {dir, namespaces}  the emulator box: wire OpenSAND's gateway, satellite and
                                    terminal in namespaces and start them
                                    (satlab.agent.opensandbox); GET /opensand their exit codes;
                                    DELETE /opensand stop them, unwire, answer their CPU and memory
Only these programs run: the project's traffic generator, emulator, gateway, PEP, scheme loader
and withholding receiver, OpenSAND's entity program, tcpdump, ethtool and fixed `ip` steps, so
an agent on a physical host is no remote shell.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from http.server import HTTPServer
from pathlib import Path
from typing import Any

from pyroute2 import NetlinkError

from satlab.agent import tcpinfo, tlshttp
from satlab.agent.bpffs import CGROUP_ROOT, PIN_ROOT, ensure_bpffs
from satlab.agent.hopbox import UPLINKS, HopBox
from satlab.agent.namespaces import ip_json
from satlab.agent.opensandbox import OpenSandBox
from satlab.agent.terminalbox import TerminalBox
from satlab.agent.unixhttp import JsonHandler, UnixHTTPConnection, UnixHTTPServer
from satlab.link_backend import BackendUnavailable
from satlab.settings import (
    EMULATOR_BIN,
    EMULATOR_CONTROL_LISTEN,
    GATEWAY_BIN,
    GATEWAY_HTTP_LISTEN,
    LOADER_BIN,
    PEP_BIN,
    PEP_HTTP_LISTEN,
    WITHHOLD_BIN,
)

MAX_SAMPLES = 500_000  # bounds memory: an hour of 10 ms samples of one flow
ROUTE_METRICS = ("window", "advmss", "initcwnd")  # ip-route(8) names
# What POST /http may reach on 127.0.0.1: where the runner makes each program listen.
LOCAL_SERVICES = {
    int(EMULATOR_CONTROL_LISTEN.rsplit(":", 1)[1]): "emulator",
    int(GATEWAY_HTTP_LISTEN.rsplit(":", 1)[1]): "gateway",
    int(PEP_HTTP_LISTEN.rsplit(":", 1)[1]): "pep",
}
MAX_RELAY_BYTES = 1 << 20
# A request relayed to a hop box's sub-agent (/boxes/ROLE/...): the longest any takes is a
# process stop (SIGTERM, 3 s, SIGKILL) or a reset of several.
RELAY_TIMEOUT_S = 30.0


class Managed:
    """A process the agent started, with its output in files so it never blocks on a pipe."""

    def __init__(self, pid_dir: Path, ident: str, argv: list[str]) -> None:
        self.ident = ident
        self.out = open(pid_dir / f"{ident}.out", "w+b")  # noqa: SIM115 (closed in close())
        self.err = open(pid_dir / f"{ident}.err", "w+b")  # noqa: SIM115
        # In the agent's process group (the testbed starts every agent as a group leader), so a
        # killed agent's programs are found and ended with it (testbed.kill_agent_group).
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=self.err)
        self.leftovers: list[Path] = []  # what the box holds for it once it ends (scheme_dirs)

    def describe(self) -> dict[str, Any]:
        rc = self.proc.poll()
        result = None
        if rc is not None:
            self.out.seek(0)
            lines = self.out.read().decode(errors="replace").strip().splitlines()
            with contextlib.suppress(IndexError, json.JSONDecodeError):
                result = json.loads(lines[-1])
        self.err.seek(0)
        err_tail = self.err.read().decode(errors="replace")[-2000:]
        state = "running" if rc is None else ("done" if rc == 0 else "failed")
        return {
            "id": self.ident,
            "pid": self.proc.pid,
            "state": state,
            "exit_code": rc,
            "result": result,
            "stderr": err_tail,
        }

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self) -> None:
        self.out.close()
        self.err.close()

    def remove_leftovers(self) -> None:
        """Its scheme's pins and traffic cgroup, once nothing of the run uses them (a cgroup
        still holding processes stays, for testbed.remove_pins or the next reset)."""
        for d in self.leftovers:
            if d.is_relative_to(PIN_ROOT):
                shutil.rmtree(d, ignore_errors=True)  # unlinked pins: maps go with their last user
            else:
                with contextlib.suppress(OSError):
                    d.rmdir()


def scheme_dirs(args: list[str]) -> tuple[list[Path], str | None]:
    """Makes in this box what a scheme loader's --pin-dir and --cgroup need: the BPF filesystem
    and PIN_ROOT, the host's traffic cgroup. Done by the box's agent, not the orchestrator, so a
    box with a filesystem of its own (a compose container) gets them where its loader looks.
    Returns the directories to remove when the loader ends, or an error naming the option."""
    made: list[Path] = []
    opts = dict(zip(args[::2], args[1::2], strict=False))
    if "--pin-dir" in opts:
        pins = Path(opts["--pin-dir"])
        if pins.parent != PIN_ROOT:
            return [], f"--pin-dir: {pins} is not a directory of {PIN_ROOT}"
        ensure_bpffs()
        made.append(pins)
    if "--cgroup" in opts:
        cg = Path(opts["--cgroup"])
        if cg.parent != CGROUP_ROOT:
            return [], f"--cgroup: {cg} is not a cgroup of {CGROUP_ROOT}"
        cg.mkdir(parents=True, exist_ok=True)
        made.append(cg)
    return made, None


class Sampler(threading.Thread):
    def __init__(self, period_s: float, ports: set[int]) -> None:
        super().__init__(daemon=True)
        self.period_s, self.ports = period_s, ports
        self.samples: deque[dict[str, Any]] = deque(maxlen=MAX_SAMPLES)
        self.latest: list[dict[str, Any]] = []  # the last round: one sample per open connection
        self.stopped = threading.Event()

    def run(self) -> None:
        with tcpinfo.Diag() as diag:
            next_t = time.monotonic()
            while not self.stopped.is_set():
                self.latest = diag.sample(self.ports)
                self.samples.extend(self.latest)
                next_t += self.period_s
                self.stopped.wait(max(0.0, next_t - time.monotonic()))


def _ip_state(iface: str) -> tuple[list[str], list[list[str]], int]:
    """An interface's IPv4 addresses (a/len), its routes through a gateway, and its MTU."""
    links = ip_json("addr", "show", "dev", iface)  # (with -4, one without IPv4 is not listed)
    if not links:
        raise ValueError(f"interface: no {iface!r} in this box")
    addr_info = [a for a in links[0].get("addr_info", []) if a.get("family") == "inet"]
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in addr_info]
    routes = [
        [r["dst"], "via", r["gateway"]]
        for r in ip_json("-4", "route", "show", "dev", iface)
        if "gateway" in r
    ]
    return addrs, routes, int(links[0].get("mtu", 1500))


def _ip_steps(steps: list[list[str]], done: dict[str, Any]) -> tuple[int, Any]:
    for step in steps:
        r = subprocess.run(["ip", *step], capture_output=True, text=True)
        if r.returncode != 0:
            return 500, {"error": f"ip {' '.join(step)}: {r.stderr.strip()}"}
    return 200, done


class Agent:
    def __init__(self, name: str, workdir: Path, hop_box: bool = False) -> None:
        self.name = name
        self.workdir = workdir
        self.procs: dict[str, Managed] = {}
        self.sampler: Sampler | None = None
        self.lock = threading.Lock()
        # Only the compose `hops` box makes namespaces for a run (--hop-box); sub-agents'
        # sockets go beside this agent's.
        self.hop_box = HopBox(workdir.parent, workdir) if hop_box else None
        self.opensand = OpenSandBox()  # holds nothing until a run asks (POST /opensand)
        self.terminals = TerminalBox(workdir.parent, workdir)  # likewise (POST /terminals)

    # -- handlers: each returns (status, body) --
    def health(self) -> tuple[int, Any]:
        return 200, {
            "name": self.name,
            "pid": os.getpid(),
            "netns_inode": os.stat("/proc/self/ns/net").st_ino,
        }

    def addresses(self) -> tuple[int, Any]:
        """The IPv4 addresses of each interface: a hardware testbed learns a box's experiment
        address from its registered interface (satlab.testbed.hardware)."""
        r = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True)
        if r.returncode != 0:
            return 500, {"error": f"ip addr: {r.stderr.strip()}"}
        return 200, {
            link["ifname"]: [a["local"] for a in link.get("addr_info", [])]
            for link in json.loads(r.stdout)
        }

    def macs(self) -> tuple[int, Any]:
        """The MAC address of each interface (OpenSAND's Ethernet mode forwards by MAC)."""
        return 200, {link["ifname"]: link.get("address") for link in ip_json("link", "show")}

    def opensand_link(self, method: str, body: Any) -> tuple[int, Any]:
        """OpenSAND's entities in this box (satlab.agent.opensandbox): POST starts, GET
        tells, DELETE stops. A box without OpenSAND answers 409 naming the missing binary."""
        with self.lock:
            if method == "GET":
                return 200, self.opensand.status()
            if method == "DELETE":
                return 200, self.opensand.teardown()
            names = {str(k): str(v) for k, v in body["namespaces"].items()}
            try:
                return 201, self.opensand.build(Path(body["dir"]), names)
            except BackendUnavailable as exc:
                return 409, {"error": f"box {self.name}: {exc}"}
            except (OSError, NetlinkError) as exc:
                return 500, {"error": f"opensand: {exc}"}

    def sysctl(self, body: dict[str, Any]) -> tuple[int, Any]:
        applied, failed = {}, {}
        for key, value in body.items():
            path = Path("/proc/sys") / key.replace(".", "/")
            try:
                path.write_text(str(value))
                applied[key] = value
            except OSError as exc:
                failed[key] = exc.strerror
        return 200, {"applied": applied, "failed": failed}

    def offloads(self, body: dict[str, Any]) -> tuple[int, Any]:
        for ifname in body["interfaces"]:
            r = subprocess.run(
                ["ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx", "off"],
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                return 500, {"error": f"ethtool -K {ifname}: {r.stderr.strip()}"}
        return 200, {"interfaces": body["interfaces"]}

    def route_metrics(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Window clamp, advertised MSS and initial cwnd: route metrics of the box's default
        route (Linux keeps them per route), set on the route the box already has, so a namespace
        box and a container box take the same request."""
        metrics = {k: int(v) for k, v in body["metrics"].items()}
        bad = sorted(set(metrics) - set(ROUTE_METRICS))
        if bad or any(v <= 0 for v in metrics.values()):
            return 400, {
                "error": f"metrics: {bad or metrics} (one of {', '.join(ROUTE_METRICS)}, > 0)"
            }
        shown = subprocess.run(
            ["ip", "-j", "route", "show", "default"], capture_output=True, text=True
        )
        routes = json.loads(shown.stdout or "[]") if shown.returncode == 0 else []
        if len(routes) != 1 or "gateway" not in routes[0]:
            return 409, {"error": f"the box has no single default route: {shown.stdout.strip()}"}
        route = routes[0]
        argv = ["ip", "route", "replace", "default", "via", route["gateway"], "dev", route["dev"]]
        for name, value in metrics.items():
            argv += [name, str(value)]
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            return 500, {"error": f"{' '.join(argv)}: {r.stderr.strip()}"}
        return 200, {"route": " ".join(argv[3:])}

    def http(self, body: dict[str, Any]) -> tuple[int, Any]:
        """One HTTP exchange with a program of this box that serves on 127.0.0.1 (the emulator's
        control and metrics, the gateway's, the PEP's): the worker's live view, live control
        and metrics scrape reach them through here on any kind of box. Only their ports."""
        port, method, path = int(body["port"]), str(body["method"]), str(body["path"])
        if port not in LOCAL_SERVICES:
            names = ", ".join(f"{p} ({n})" for p, n in LOCAL_SERVICES.items())
            return 400, {"error": f"port: {port} is not one of {names}"}
        if method not in ("GET", "POST") or not path.startswith("/"):
            return 400, {"error": f"method, path: {method} {path!r} (GET or POST, /...)"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=float(body.get("timeout", 3)))
        try:
            data = json.dumps(body["json"]).encode() if body.get("json") is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            text = resp.read(MAX_RELAY_BYTES + 1)
        except OSError as exc:
            return 502, {"error": f"127.0.0.1:{port} ({LOCAL_SERVICES[port]}): {exc}"}
        finally:
            conn.close()
        if len(text) > MAX_RELAY_BYTES:
            return 502, {"error": f"127.0.0.1:{port}: answer over {MAX_RELAY_BYTES} bytes"}
        return 200, {"status": resp.status, "body": text.decode(errors="replace")}

    def splice(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Splices a bump into the box's interface `interface` (a container box's satellite side,
        where the edge gateway goes): it is renamed `outside`, a veth pair `interface`/`inside`
        takes its place with its addresses and routes, so the box's IP layer is unchanged and a
        program reading `inside` and `outside` sits on the wire. A namespace testbed is wired
        this way from the start (topology.build); `POST /unsplice` undoes it."""
        iface, inside, outside = body["interface"], body["inside"], body["outside"]
        if ip_json("link", "show", "dev", outside):
            return 409, {"error": f"{outside} exists: spliced already (POST /unsplice first)"}
        addrs, routes, mtu = _ip_state(iface)
        steps = [
            ["link", "set", iface, "down"],
            ["link", "set", iface, "name", outside],
            ["-4", "addr", "flush", "dev", outside],
            # a wire, not a router port: answering ARP on it would draw the far edge's frames past
            # the bump (topology.build does the same for a namespace testbed)
            ["link", "set", outside, "arp", "off"],
            ["link", "set", outside, "up"],
            ["link", "add", iface, "mtu", str(mtu), "type", "veth", "peer", "name", inside],
            ["link", "set", inside, "mtu", str(mtu), "up"],
            ["link", "set", iface, "up"],
        ]
        steps += [["addr", "add", a, "dev", iface] for a in addrs]
        steps += [["route", "replace", *r, "dev", iface] for r in routes]
        steps += [["neigh", "flush", "dev", iface]]
        return _ip_steps(steps, {"interface": iface, "inside": inside, "outside": outside})

    def unsplice(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Undoes `splice` from what the box has (it survives an agent restart); nothing to undo
        is no error."""
        iface, outside = body["interface"], body["outside"]
        if not ip_json("link", "show", "dev", outside):
            return 200, {"spliced": False}
        addrs, routes, _ = _ip_state(iface)
        steps = [
            ["link", "del", iface],  # and its peer
            ["link", "set", outside, "down"],
            ["link", "set", outside, "name", iface],
            ["link", "set", iface, "arp", "on"],
            ["link", "set", iface, "up"],
        ]
        steps += [["addr", "add", a, "dev", iface] for a in addrs]
        steps += [["route", "replace", *r, "dev", iface] for r in routes]
        steps += [["neigh", "flush", "dev", iface]]
        return _ip_steps(steps, {"spliced": False})

    def addressing(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Gives each named interface exactly the MTU, addresses and gateway routes of its plan,
        where given (requests.Addressing); addresses first, as a route needs its gateway's net.
        Answers the MTUs the interfaces had (a hardware run puts the operator's back at close)."""
        steps: list[list[str]] = []
        plans: dict[str, Any] = body["interfaces"]
        found: dict[str, int] = {}
        for iface, plan in plans.items():
            addrs, routes, mtu = _ip_state(iface)
            found[iface] = mtu
            if "mtu" in plan and int(plan["mtu"]) != mtu:
                steps += [["link", "set", "dev", iface, "mtu", str(int(plan["mtu"]))]]
            if "addresses" in plan and set(plan["addresses"]) != set(addrs):
                steps += [["-4", "addr", "flush", "dev", iface]]
                steps += [["addr", "add", a, "dev", iface] for a in plan["addresses"]]
                routes = []  # went with the addresses
            if "routes" in plan:
                wanted = [[dst, "via", gw] for dst, gw in plan["routes"]]
                steps += [["route", "del", *r, "dev", iface] for r in routes if r not in wanted]
        for iface, plan in plans.items():
            steps += [["neigh", "flush", "dev", iface]]  # an address may have moved to another box
            for dst, gw in plan.get("routes", []):
                steps += [["route", "replace", dst, "via", gw, "dev", iface]]
        return _ip_steps(steps, {"interfaces": sorted(plans), "mtu_before": found})

    def hops(self, body: dict[str, Any]) -> tuple[int, Any]:
        hops, mtu = [int(n) for n in body["hops"]], int(body["mtu"])
        uplinks = tuple(str(i) for i in body.get("uplinks", UPLINKS))
        if self.hop_box is None:
            return 409, {"error": f"hops: box {self.name} is no hop box (agent --hop-box)"}
        if len(uplinks) != len(UPLINKS):
            return 400, {"error": f"uplinks: {list(uplinks)} is not 3 interfaces {UPLINKS}"}
        with self.lock:
            try:
                return 200, self.hop_box.build(hops, mtu, (uplinks[0], uplinks[1], uplinks[2]))
            except RuntimeError as exc:
                return 500, {"error": f"hops: {exc}"}

    def build_terminals(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            try:
                return 200, self.terminals.build(
                    body["terminals"],
                    int(body["mtu"]),
                    str(body["uplink"]),
                    bool(body.get("gateway")),
                )
            except RuntimeError as exc:
                return 500, {"error": f"terminals: {exc}"}

    def relay_box(self, role: str, method: str, path: str, body: Any) -> tuple[int, Any]:
        """One request to the agent of box `role` that this hop box made, answered as it
        answers (status and JSON body)."""
        if self.hop_box is None or role not in self.hop_box.agents:
            return 404, {"error": f"boxes: box {self.name} has no box {role!r} (POST /hops)"}
        conn = UnixHTTPConnection(str(self.hop_box.boxes / f"{role}.sock"), RELAY_TIMEOUT_S)
        try:
            payload = None if body is None else json.dumps(body)
            headers = {"Content-Type": "application/json"} if payload else {}
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"null")
        except (OSError, http.client.HTTPException, json.JSONDecodeError) as exc:
            return 502, {"error": f"box {role}: {method} {path}: {exc}"}
        finally:
            conn.close()

    def start_process(self, body: dict[str, Any]) -> tuple[int, Any]:
        ident, kind, args = body["id"], body["kind"], [str(a) for a in body.get("args", [])]
        leftovers: list[Path] = []
        if kind == "traffic":
            argv = [sys.executable, "-m", "satlab.traffic", *args]
        elif kind == "emulator":
            argv = [str(EMULATOR_BIN), *args]
        elif kind == "gateway":
            argv = [str(GATEWAY_BIN), *args]
        elif kind == "scheme":
            argv = [str(LOADER_BIN), *args]
            leftovers, error = scheme_dirs(args)
            if error:
                return 400, {"error": error}
        elif kind == "pep":
            argv = [str(PEP_BIN), *args]
        elif kind == "withhold":
            argv = [str(WITHHOLD_BIN), *args]
        elif kind == "capture":
            iface, path, snaplen, count = args
            # -c bounds the file: count x (snaplen + 16-byte record header) bytes at most.
            argv = [
                "tcpdump",
                "-i",
                iface,
                "-s",
                str(int(snaplen)),
                "-c",
                str(int(count)),
                "-U",
                "-w",
                path,
            ]
        else:
            kinds = "traffic, emulator, gateway, pep, scheme, capture, withhold"
            return 400, {"error": f"kind: {kind!r} is not one of {kinds}"}
        cgroup = body.get("cgroup")
        if cgroup is not None:
            # A scheme's sockops program acts on the sockets of the processes in the host's
            # cgroup: the process joins it before it execs, so its first socket is covered.
            cg = Path(cgroup)
            if CGROUP_ROOT not in cg.parents or not (cg / "cgroup.procs").exists():
                return 400, {"error": f"cgroup: {cgroup!r} is not a cgroup under {CGROUP_ROOT}"}
            argv = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cg), *argv]
        with self.lock:
            if ident in self.procs:
                return 409, {"error": f"id: process {ident!r} exists"}
            self.procs[ident] = Managed(self.workdir, ident, argv)
            if kind == "scheme":
                self.procs[ident].leftovers = leftovers
            return 201, self.procs[ident].describe()

    def process(self, ident: str, stop: bool) -> tuple[int, Any]:
        p = self.procs.get(ident)
        if p is None:
            return 404, {"error": f"no process {ident!r}"}
        if stop:
            p.stop()
            p.remove_leftovers()
        return 200, p.describe()

    def reset(self) -> tuple[int, Any]:
        with self.lock:
            stopped = sorted(self.procs)
            self._stop_all()
            self.procs.clear()
            self.opensand.teardown()
        return 200, {"stopped": stopped}

    def _stop_all(self) -> None:
        if self.sampler:
            self.sampler.stopped.set()
            self.sampler = None
        for p in self.procs.values():
            p.stop()
            p.close()
        for p in self.procs.values():  # a cgroup is empty once every process is gone
            p.remove_leftovers()

    def start_sampling(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.sampler:
            self.sampler.stopped.set()
        self.sampler = Sampler(body.get("period_ms", 100) / 1000, {int(p) for p in body["ports"]})
        self.sampler.start()
        return 201, {"period_ms": body.get("period_ms", 100)}

    def samples(self) -> tuple[int, Any]:
        return 200, {"samples": list(self.sampler.samples) if self.sampler else []}

    def latest_samples(self) -> tuple[int, Any]:
        return 200, {"samples": list(self.sampler.latest) if self.sampler else []}

    def shutdown(self) -> None:
        self._stop_all()
        self.opensand.teardown()
        self.terminals.teardown()
        if self.hop_box and self.hop_box.agents:
            self.hop_box.teardown()


def make_handler(agent: Agent) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def _dispatch(self, method: str) -> None:
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            try:
                body = self.read_json() if method == "POST" else None
                status, out = route(agent, method, parts, body)
            except (KeyError, TypeError, ValueError) as exc:
                status, out = 400, {"error": f"bad request: {exc!r}"}
            self.send_json(status, out)

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

    return Handler


def route(agent: Agent, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
    match method, parts:
        case "GET", ["health"]:
            return agent.health()
        case "POST", ["sysctl"]:
            return agent.sysctl(body)
        case "POST", ["offloads"]:
            return agent.offloads(body)
        case "POST", ["route-metrics"]:
            return agent.route_metrics(body)
        case "POST", ["http"]:
            return agent.http(body)
        case "POST", ["splice"]:
            return agent.splice(body)
        case "POST", ["unsplice"]:
            return agent.unsplice(body)
        case "POST", ["addressing"]:
            return agent.addressing(body)
        case "POST", ["hops"]:
            return agent.hops(body)
        case "POST", ["terminals"]:
            return agent.build_terminals(body)
        case _, ["boxes", role, *rest]:
            return agent.relay_box(role, method, "/" + "/".join(rest), body)
        case "POST", ["processes"]:
            return agent.start_process(body)
        case "GET", ["processes", ident]:
            return agent.process(ident, stop=False)
        case "DELETE", ["processes"]:
            return agent.reset()
        case "DELETE", ["processes", ident]:
            return agent.process(ident, stop=True)
        case "POST", ["sampling"]:
            return agent.start_sampling(body)
        case "GET", ["sampling"]:
            return agent.samples()
        case "GET", ["sampling", "latest"]:
            return agent.latest_samples()
        case "GET", ["netstat"]:
            return 200, tcpinfo.netstat()
        case "GET", ["addresses"]:
            return agent.addresses()
        case "GET", ["macs"]:
            return agent.macs()
        case _, ["opensand"]:  # GET, POST, DELETE (the handler's only methods)
            return agent.opensand_link(method, body)
    return 404, {"error": f"no route {method} /{'/'.join(parts)}"}


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--listen: {text!r} is not ADDRESS:PORT")
    return host.strip("[]"), int(port)


def main() -> None:
    ap = argparse.ArgumentParser(description="SatLab host agent")
    ap.add_argument("--socket", help="Unix socket path to listen on (a namespace or compose box)")
    ap.add_argument(
        "--listen",
        type=_listen_address,
        help="ADDRESS:PORT to listen on with mutual TLS (a physical box); needs --cert --key --ca",
    )
    ap.add_argument("--cert", type=Path, help="this agent's certificate (satlab ca issue)")
    ap.add_argument("--key", type=Path, help="its private key")
    ap.add_argument("--ca", type=Path, help="the project CA's certificate (ca.crt)")
    ap.add_argument("--workdir", type=Path, help="process output (default: beside the socket)")
    ap.add_argument("--name", required=True, help="the box's role, or its registered name")
    ap.add_argument(
        "--hop-box",
        action="store_true",
        help="build runs' terrestrial hops as namespaces in this box (POST /hops; compose `hops`)",
    )
    args = ap.parse_args()
    if not args.socket and not args.listen:
        ap.error("--socket or --listen (or both)")
    if args.listen and not (args.cert and args.key and args.ca):
        ap.error("--listen: mutual TLS only; give --cert, --key and --ca")
    # Process output lives beside the socket, in the testbed's directory, which teardown removes.
    workdir = args.workdir or (
        Path(args.socket).parent / f"agent-{args.name}"
        if args.socket
        else Path("/var/lib/satlab/agent")
    )
    workdir.mkdir(parents=True, exist_ok=True)
    agent = Agent(args.name, workdir, args.hop_box)
    servers: list[HTTPServer] = []
    if args.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(args.socket)
        servers.append(UnixHTTPServer(args.socket, make_handler(agent)))
    if args.listen:
        ctx = tlshttp.server_context(args.cert, args.key, args.ca)
        servers.append(tlshttp.TlsHTTPServer(args.listen, make_handler(agent), ctx))

    def stop(signum: int, frame: object) -> None:
        for server in servers:
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}) for s in servers
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        agent.shutdown()
        for server in servers:
            server.server_close()
        if args.socket:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.socket)


if __name__ == "__main__":
    main()
