"""OpenSAND's entities in the emulator box (POST, GET and DELETE /opensand): the one place that
wires and starts them, on every testbed, since the emulator box's agent is where its ports are (a
namespace testbed's `emu` namespace, the compose `emu` container). satlab.testbed.opensand
prepares their configuration in the run's directory, which the box sees at the same path, and
reads their probes from there.

One gateway, one transparent satellite and one terminal run, each in a network namespace of its
own (OpenSAND's own layout, as its opensand-network tool makes it: an entity binds its emulation
address and creates its TAP `opensand_tap`, so two entities cannot share a namespace):

    gw edge --sat0~~gw [osgw: lan bridge + opensand_tap] (opensand gw)
                          emu0 192.168.18.0 --.
                                              [emu box: bridge osemu]-- emu0 [ossat] (opensand sat)
                          emu0 192.168.18.2 --'
    st edge --sat0~~st [osst: lan bridge + opensand_tap] (opensand st)

The box's two ports (`gw`, `st`, cabled to the edges) move into the gateway's and the terminal's
namespaces and are bridged with their TAPs, so the edges' frames enter OpenSAND as they would
enter the built-in emulator. The entities' emulation network is a bridge in the box with a veth
per entity (192.168.0.0/16: the exporter's ids make the gateway 192.168.18.0, which must be a host
address). `teardown` moves the ports back before it removes the namespaces: a compose box outlives
the run, and a Docker interface left in a removed namespace would be gone with it.

The entities run in the agent's process group, as its other programs do (server.Managed), so a
killed agent's are found and ended with it (testbed.kill_agent_group; a compose box's agent is its
container's main process). They run without `-v`: OpenSAND's logging to stderr halves its
throughput."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, NetNS, netns

from satlab.bounded import stop_processes
from satlab.link_backend import opensand_binary, require_backend
from satlab.opensand.exporter import FIRST_ST_ID, GW_ID, SAT_ID

ENTITIES = {"gw": GW_ID, "sat": SAT_ID, "st": FIRST_ST_ID}
START_ORDER = ("sat", "gw", "st")  # the satellite first: the others log on through it
EMU_PREFIXLEN = 16
EMU_BRIDGE = "osemu"
STOP_GRACE_S = 3.0  # SIGTERM lets an entity flush its statistics


class OpenSandBox:
    """The entities of the current run in this box, and the namespaces they run in."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.namespaces: dict[str, str] = {}

    def build(self, directory: Path, namespaces: dict[str, str]) -> dict[str, Any]:
        """Wires the namespaces `namespaces` (by entity) and starts each entity in its
        directory `directory/ENTITY` (infrastructure.xml, topology.xml, profile.xml), replacing
        whatever an earlier run left. Raises BackendUnavailable naming a missing binary."""
        require_backend({"backend": "opensand"})  # in this box's environment: its binaries
        binary = opensand_binary()
        assert binary is not None
        if sorted(namespaces) != sorted(ENTITIES):
            raise ValueError(f"namespaces: {sorted(namespaces)} (one each: gw, sat, st)")
        self.teardown()
        if taken := set(namespaces.values()) & set(netns.listnetns()):
            raise ValueError(f"namespaces: {sorted(taken)} exist (not this agent's to reuse)")
        self.namespaces = dict(namespaces)
        try:
            self._wire()
            for entity in START_ORDER:
                self._launch(binary, entity, directory / entity)
        except BaseException:
            self.teardown()
            raise
        return {"pids": {e: p.pid for e, p in self.procs.items()}}

    def _wire(self) -> None:
        with IPRoute() as e:
            e.link("add", ifname=EMU_BRIDGE, kind="bridge", br_mcast_snooping=0)
            bridge = e.link_lookup(ifname=EMU_BRIDGE)[0]
            e.link("set", index=bridge, state="up")
        for entity, eid in ENTITIES.items():
            ns = self.namespaces[entity]
            netns.create(ns)
            with IPRoute() as e:
                port = f"os{entity}"
                e.link("add", ifname=port, kind="veth", peer={"ifname": "emu0", "net_ns_fd": ns})
                e.link("set", index=e.link_lookup(ifname=port)[0], master=bridge, state="up")
                if entity != "sat":  # the edge's port moves into the entity's namespace
                    e.link("set", index=e.link_lookup(ifname=entity)[0], net_ns_fd=ns)
            with NetNS(ns) as n:
                n.link("set", index=n.link_lookup(ifname="lo")[0], state="up")
                emu0 = n.link_lookup(ifname="emu0")[0]
                n.link("set", index=emu0, state="up")
                n.addr("add", index=emu0, address=f"192.168.18.{eid}", prefixlen=EMU_PREFIXLEN)
                # The gateway's control and data carriers are multicast groups (its
                # infrastructure's ctrl/data_multicast_address).
                n.route("add", dst="224.0.0.0/4", oif=emu0)
                if entity == "sat":
                    continue
                n.link("add", ifname="opensand_tap", kind="tuntap", mode="tap")
                n.link("add", ifname="lan", kind="bridge")
                lan = n.link_lookup(ifname="lan")[0]
                for port in (entity, "opensand_tap"):
                    idx = n.link_lookup(ifname=port)[0]
                    n.link("set", index=idx, master=lan, state="up")
                n.link("set", index=lan, state="up")

    def _launch(self, binary: Path, entity: str, d: Path) -> None:
        argv = ["nsenter", f"--net=/run/netns/{self.namespaces[entity]}", "--"]
        argv += [str(binary), "-i", "infrastructure.xml", "-t", "topology.xml"]
        if (d / "profile.xml").is_file():
            argv += ["-p", "profile.xml"]
        with open(d / "opensand.log", "wb") as log:
            self.procs[entity] = subprocess.Popen(
                argv, cwd=d, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    def status(self) -> dict[str, Any]:
        """Each entity's exit code, None while it runs."""
        return {"exit_codes": {e: p.poll() for e, p in self.procs.items()}}

    def teardown(self) -> dict[str, Any]:
        """Stops the entities (SIGTERM, then SIGKILL after STOP_GRACE_S) and undoes the wiring.
        Returns each entity's CPU time and peak memory, read before it ended. Idempotent."""
        usage = {e: _usage(p.pid) for e, p in self.procs.items()}
        stop_processes(self.procs.values(), STOP_GRACE_S)
        self.procs.clear()
        if self.namespaces:  # only what this agent made: a box never running OpenSAND is untouched
            self._unwire()
        return {"usage": usage}

    def _unwire(self) -> None:
        """The box's ports back in its own namespace and up, then the entities' namespaces and
        the emulation bridge and its veths removed."""
        for entity, ns in self.namespaces.items():
            if entity != "sat" and ns in netns.listnetns():
                with NetNS(ns) as n, contextlib.suppress(IndexError):  # (not moved yet)
                    idx = n.link_lookup(ifname=entity)[0]
                    n.link("set", index=idx, master=0, state="down")
                    n.link("set", index=idx, net_ns_pid=os.getpid())
                with IPRoute() as e, contextlib.suppress(IndexError):
                    e.link("set", index=e.link_lookup(ifname=entity)[0], state="up")
            with contextlib.suppress(FileNotFoundError):
                netns.remove(ns)
        self.namespaces = {}
        with IPRoute() as e:
            for name in [EMU_BRIDGE, *(f"os{entity}" for entity in ENTITIES)]:
                for idx in e.link_lookup(ifname=name):
                    e.link("del", index=idx)


def _usage(pid: int) -> dict[str, float]:
    """CPU seconds (user, system) and peak resident memory of a running entity."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    hwm = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmHWM")), 0)
    # fields 14 and 15 of /proc/PID/stat (utime, stime), counted after the command's ")"
    return {"user_s": int(stat[11]) / tick, "system_s": int(stat[12]) / tick,
            "peak_rss_bytes": hwm * 1024}  # fmt: skip
