"""The `opensand` link backend: a scenario's link carried by OpenSAND 8's own entities.

The link is exported (satlab.opensand.exporter) into the run's testbed directory, then one gateway,
one transparent satellite and one terminal run, each in a network namespace of its own (OpenSAND's
own layout, as its opensand-network tool makes it: an entity binds its emulation address and
creates its TAP `opensand_tap`, so two entities cannot share a namespace):

    gw edge --sat0~~gw [osgw: lan bridge + opensand_tap] (opensand gw)
                          emu0 192.168.18.0 --.
                                              [emu box: bridge osemu]-- emu0 [ossat] (opensand sat)
                          emu0 192.168.18.2 --'
    st edge --sat0~~st [osst: lan bridge + opensand_tap] (opensand st)

The emulator box's two ports (`gw`, `st`, the veths the testbed cabled to the edges) are moved
into the gateway's and the terminal's namespaces and bridged with their TAPs, so the edges' frames
enter OpenSAND as they would enter the built-in emulator. The entities' emulation network is a
bridge in the emulator box with a veth per entity (192.168.0.0/16: the exporter's ids make the
gateway 192.168.18.0, which must be a host address). OpenSAND's Ethernet mode forwards by
destination MAC, so the edges' MACs replace the exporter's placeholders in every
infrastructure.xml. The namespaces carry the testbed's name prefix (`sl<ID>-osgw`, ...), so the
testbed's teardown and its sweeper remove them with the rest.

Every entity writes its probes locally (satlab.opensand.probes); `stop` reads them into link
records (the forward MODCOD per statistics tick, the C/N, the throughput the terminal delivered),
event counts per direction (Gate drops, FIFO losses, packets the gateway's GSE encapsulation
refused) and each entity's CPU time and peak memory. With an artifacts directory, the run keeps
the configuration as exported and, at `stop`, the entities' probes and logs (two zips). The
entities are killed on every path: by `close` (the runner's context), and by the kernel when the
process that started them dies (PR_SET_PDEATHSIG), since no agent's process group holds them.
They run without `-v`: OpenSAND's logging to stderr halves its throughput."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections import Counter, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyroute2 import NetNS

from satlab.link_backend import BackendUnavailable, opensand_binary
from satlab.opensand import archive, probes
from satlab.opensand.exporter import FIRST_ST_ID, GW_ID, SAT_ID, export_link
from satlab.opensand.xmlsafe import OpenSandError
from satlab.testbed import topology
from satlab.testbed.testbed import stop_processes

ENTITIES = {"gw": GW_ID, "sat": SAT_ID, "st": FIRST_ST_ID}
START_ORDER = ("sat", "gw", "st")  # the satellite first: the others log on through it
EMU_PREFIXLEN = 16
EMU_BRIDGE = "osemu"
# The link is up when the terminal measures the C/N of forward frames (the SoF and signalling
# frames, before any traffic: its received-MODCOD probe waits for data); under a second here.
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 3.0
TERMINAL_MODCOD = "down_forward_modcod.received_modcod"
TERMINAL_THROUGHPUT = "throughputs.l2_from_sat.total"
TERMINAL_CN = "phy.total_cn"
PR_SET_PDEATHSIG = 1
# The run's artifacts (the result's `artifacts`, served as the run's other files are): the
# exported configuration, to run again on one's own OpenSAND (or `satlab import opensand`), and
# what the entities measured and logged.
CONFIG_ARTIFACT = "opensand.config.zip"
PROBES_ARTIFACT = "opensand.probes.zip"


def namespace(tb_id: str, entity: str) -> str:
    return topology.namespace_name(tb_id, f"os{entity}")


_prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not in the forked child


def _die_with_parent() -> None:
    # Between fork and exec: one system call, no lock taken (see satlab.bounded on preexec_fn).
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class OpenSandLink:
    """The entities of one run. Offers what the runner reads from the built-in emulator's
    telemetry (`records`, `event_counts`, `stop`) so the rest of a run is the same."""

    def __init__(
        self,
        tb_id: str,
        tb_dir: Path,
        link: dict[str, Any],
        edges: dict[str, str],
        keep: Path | None = None,
    ):
        """`edges`: the MAC address of each edge's interface toward the link, by edge; `keep`:
        where the run's OpenSAND files are kept (the run's artifacts directory), or None."""
        self.tb_id, self.dir, self.link, self.edges = tb_id, tb_dir / "opensand", link, edges
        self.keep = keep
        self.files: dict[str, Path] = {}  # the files kept, by artifact name
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.records: deque[dict[str, Any]] = deque()
        self.event_counts: Counter[str] = Counter()
        self.summary: dict[str, Any] = {}
        self.not_mapped: list[str] = []  # the link's settings OpenSAND cannot express

    # -- start --

    def start(self, binary: Path) -> None:
        try:
            self.not_mapped = [n.setting for n in export_link(self.link, self.dir)]
        except OpenSandError as err:  # a trace file the exporter cannot read, ...
            raise BackendUnavailable(f"link.backend: opensand: {err}") from None
        if self.keep is not None:  # as exported, before the testbed's MACs and storage go in
            path = archive.pack_config(self.dir, self.keep / "opensand-config.zip")
            self.files[CONFIG_ARTIFACT] = path
        for entity in ENTITIES:
            self._set_infrastructure(entity)
        self._wire()
        for entity in START_ORDER:
            self._launch(binary, entity)
        self._wait_ready()

    def _set_infrastructure(self, entity: str) -> None:
        path = self.dir / entity / "infrastructure.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        storage = root.find("root/storage")
        assert storage is not None
        _set(storage, "enable_local", "true")
        _set(storage, "path_local", str(self.dir / entity / "stats"))
        macs = {GW_ID: self.edges["gw"], FIRST_ST_ID: self.edges["st"]}
        for item in root.iterfind(".//infrastructure/*/item"):
            eid = int(item.findtext("entity_id") or -1)
            if eid in macs:
                _set(item, "mac_address", macs[eid])
        own = root.find(f"root/entity/entity_{entity}")
        if own is not None and own.find("mac_address") is not None:
            _set(own, "mac_address", macs[ENTITIES[entity]])
        tree.write(path, encoding="utf-8", xml_declaration=True)

    def _wire(self) -> None:
        emu = topology.namespace_name(self.tb_id, "emu")
        with NetNS(emu) as e:
            e.link("add", ifname=EMU_BRIDGE, kind="bridge", br_mcast_snooping=0)
            bridge = e.link_lookup(ifname=EMU_BRIDGE)[0]
            e.link("set", index=bridge, state="up")
        for entity, eid in ENTITIES.items():
            ns = namespace(self.tb_id, entity)
            topology.new_namespace(ns)
            with NetNS(emu) as e:
                port = f"os{entity}"
                e.link("add", ifname=port, kind="veth", peer={"ifname": "emu0", "net_ns_fd": ns})
                e.link("set", index=e.link_lookup(ifname=port)[0], master=bridge, state="up")
                if entity != "sat":  # the edge's port moves into the entity's namespace
                    e.link("set", index=e.link_lookup(ifname=entity)[0], net_ns_fd=ns)
            with NetNS(ns) as n:
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

    def _launch(self, binary: Path, entity: str) -> None:
        d = self.dir / entity
        argv = ["nsenter", f"--net=/run/netns/{namespace(self.tb_id, entity)}", "--"]
        argv += [str(binary), "-i", "infrastructure.xml", "-t", "topology.xml"]
        if (d / "profile.xml").is_file():
            argv += ["-p", "profile.xml"]
        with open(d / "opensand.log", "wb") as log:
            self.procs[entity] = subprocess.Popen(
                argv,
                cwd=d,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (one system call, see above)
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if (why := self.failed()) is not None:
                raise BackendUnavailable(why)
            stats = probes.read_stats(self.dir / "st" / "stats")
            if probes.find(stats, TERMINAL_CN):
                return
            time.sleep(0.2)
        raise BackendUnavailable(
            f"link.backend: opensand: the terminal received no forward frame within "
            f"{READY_TIMEOUT_S:g} s; {self._log_tail('st')}"
        )

    # -- run --

    def failed(self) -> str | None:
        """Why the link is down (an entity exited), or None while every entity runs."""
        for entity, p in self.procs.items():
            if p.poll() is not None:
                return (
                    f"OpenSAND {entity} exited (code {p.returncode}) during the run: "
                    f"{self._log_tail(entity)}"
                )
        return None

    def _log_tail(self, entity: str) -> str:
        """The end of what the entity said: its stderr, then its own log (`stats/NAME.log`)."""
        d = self.dir / entity
        text = ""
        for path in [d / "opensand.log", *sorted((d / "stats").glob("*.log"))]:
            with contextlib.suppress(OSError):
                text += path.read_text(errors="replace")
        return text.strip()[-500:] or "nothing logged"

    # -- stop --

    def stop(self) -> None:
        """Ends the entities (SIGTERM, so they flush their statistics) and reads what they
        measured into `records` and `summary`. Idempotent."""
        if not self.procs or self.summary:
            return
        usage = {e: _usage(p.pid) for e, p in self.procs.items()}
        self.close()
        self.summary = {"entities": usage, "not_mapped": self.not_mapped}
        self._read_stats()
        if self.keep is not None:
            path = archive.pack_probes(self.dir, ENTITIES, self.keep / "opensand-probes.zip")
            self.files[PROBES_ARTIFACT] = path

    def close(self) -> None:
        stop_processes(self.procs.values(), STOP_GRACE_S)

    def _read_stats(self) -> None:
        st = probes.read_stats(self.dir / "st" / "stats")
        gw = probes.read_stats(self.dir / "gw" / "stats")
        to_monotonic = time.monotonic() - time.time()
        modcod = probes.find(st, TERMINAL_MODCOD)
        rate = probes.find(st, TERMINAL_THROUGHPUT)
        cn = probes.find(st, TERMINAL_CN)
        rows: dict[float, dict[str, Any]] = {}
        for series, key, scale in ((modcod, "modcod", 1), (rate, "delivered_bps", 1000),
                                   (cn, "esn0_db", 1)):  # fmt: skip
            for t, v in series.points if series else []:
                if key == "modcod" and v == 0:
                    continue  # a tick without data frames: no MODCOD received
                rec = rows.setdefault(t, {"direction": "forward", "t": t + to_monotonic})
                rec[key] = int(v) if key == "modcod" else v * scale
        self.records.extend(rows[t] for t in sorted(rows))
        # Each receiver's Gate drops the frames of its direction; each sender's FIFOs lose packets.
        self.event_counts.update(
            {
                "forward.gate_drop": int(probes.total(st, "phy.drops")),
                "forward.queue_drop": int(probes.total(gw, "queue_loss.packets")),
                "forward.gse_encap_drop": self._gse_drops(),
                "return.gate_drop": int(probes.total(gw, "phy.drops")),
                "return.queue_drop": int(probes.total(st, "queue_loss.packets")),
            }
        )

    def _gse_drops(self) -> int:
        """Packets the gateway's GSE encapsulation refused (its log says so once per packet):
        OpenSAND 8.2 drops a packet when the room left in a BBFrame is smaller than a GSE
        fragment header, and the later packets of that frame in the same superframe."""
        n = 0
        for log in (self.dir / "gw" / "stats").glob("*.log"):
            with log.open(errors="replace") as f:
                n += sum(1 for line in f if "error during encapsulation" in line)
        return n


def _set(parent: ET.Element, tag: str, text: str) -> None:
    el = parent.find(tag)
    if el is None:
        raise OpenSandError(f"infrastructure.xml: no <{tag}> in <{parent.tag}>")
    el.text = text


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


def edge_macs(tb_id: str) -> dict[str, str]:
    """The MAC of the interface each edge box sends toward the link: the peer of the emulator
    box's port of the same name."""
    out = {}
    with NetNS(topology.namespace_name(tb_id, "emu")) as e:
        for edge in ("gw", "st"):
            (port,) = e.get_links(ifname=edge)
            peer_idx = port.get_attr("IFLA_LINK")
            with NetNS(topology.namespace_name(tb_id, edge)) as n:
                (peer,) = n.get_links(peer_idx)
                out[edge] = peer.get_attr("IFLA_ADDRESS")
    return out


@contextlib.contextmanager
def opensand_link(
    link: dict[str, Any], tb_id: str, tb_dir: Path, kind: str, keep: Path | None = None
) -> Iterator[OpenSandLink]:
    """The entities of a run on testbed `tb_id`, stopped and killed however the block ends (the
    namespaces go with the testbed); their files are kept in `keep` when given."""
    binary = opensand_binary()
    if binary is None:
        raise BackendUnavailable("link.backend: opensand: the `opensand` binary is gone")
    if kind != "namespaces":
        raise BackendUnavailable(
            f"link.backend: opensand runs on the namespaces testbed only, not {kind!r}"
        )
    os_link = OpenSandLink(tb_id, tb_dir, link, edge_macs(tb_id), keep)
    try:
        os_link.start(binary)
        yield os_link
    finally:
        os_link.close()
