"""The `opensand` link backend: a scenario's link carried by OpenSAND 8's own entities.

The link is exported (satlab.opensand.exporter) into the run's testbed directory, the edges' MACs
replace the exporter's placeholders in every infrastructure.xml (OpenSAND's Ethernet mode
forwards by destination MAC), then the emulator box's agent wires and starts one gateway, one
transparent satellite and one terminal there (POST /opensand, satlab.agent.opensandbox): the same
requests on a namespace testbed and on the compose boxes, where the run's directory is on the
volume the boxes share. The entities' namespaces carry the testbed's name prefix (`sl<ID>-osgw`,
...), so a namespace testbed's teardown and its sweeper remove them with the rest.

Every entity writes its probes locally (satlab.opensand.probes); `stop` reads them into link
records (the forward MODCOD per statistics tick, the C/N, the throughput the terminal delivered),
event counts per direction (Gate drops, FIFO losses, packets the gateway's GSE encapsulation
refused) and each entity's CPU time and peak memory. With an artifacts directory, the run keeps
the configuration as exported and, at `stop`, the entities' probes and logs (two zips). The
entities are stopped on every path: by `close` (the runner's context), by the box's agent when it
is reset (a compose box's next run) and with the agent's process group when it dies."""

from __future__ import annotations

import contextlib
import time
import xml.etree.ElementTree as ET
from collections import Counter, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from satlab.agent.opensandbox import ENTITIES, STOP_GRACE_S
from satlab.agent.unixhttp import AgentError
from satlab.link_backend import BackendUnavailable
from satlab.opensand import archive, probes
from satlab.opensand.exporter import FIRST_ST_ID, GW_ID, export_link
from satlab.opensand.xmlsafe import OpenSandError
from satlab.settings import testbed_kind
from satlab.testbed import topology
from satlab.testbed.testbed import Testbed

# The link is up when the terminal measures the C/N of forward frames (the SoF and signalling
# frames, before any traffic: its received-MODCOD probe waits for data); under a second here.
READY_TIMEOUT_S = 30.0
TERMINAL_MODCOD = "down_forward_modcod.received_modcod"
TERMINAL_THROUGHPUT = "throughputs.l2_from_sat.total"
TERMINAL_CN = "phy.total_cn"
# What a compose deployment lacks when its emu box has no OpenSAND.
COMPOSE_HINT = (
    "; on Docker Compose, the emu box of docker/opensand/compose.yml has it (README.md, "
    "'Docker Compose')"
)
# The run's artifacts (the result's `artifacts`, served as the run's other files are): the
# exported configuration, to run again on one's own OpenSAND (or `satlab import opensand`), and
# what the entities measured and logged.
CONFIG_ARTIFACT = "opensand.config.zip"
PROBES_ARTIFACT = "opensand.probes.zip"


def namespace(tb_id: str, entity: str) -> str:
    return topology.namespace_name(tb_id, f"os{entity}")


class OpenSandLink:
    """The entities of one run. Offers what the runner reads from the built-in emulator's
    telemetry (`records`, `event_counts`, `stop`) so the rest of a run is the same."""

    def __init__(self, tb: Testbed, link: dict[str, Any], keep: Path | None = None):
        """`tb`: the run's testbed (its emulator box's agent runs the entities); `keep`: where
        the run's OpenSAND files are kept (the run's artifacts directory), or None."""
        self.tb, self.dir, self.link, self.keep = tb, tb.dir / "opensand", link, keep
        self.files: dict[str, Path] = {}  # the files kept, by artifact name
        self.started = False  # the emulator box's agent holds entities of this run
        self.records: deque[dict[str, Any]] = deque()
        self.event_counts: Counter[str] = Counter()
        self.summary: dict[str, Any] = {}
        self.not_mapped: list[str] = []  # the link's settings OpenSAND cannot express

    # -- start --

    def start(self) -> None:
        try:
            self.not_mapped = [n.setting for n in export_link(self.link, self.dir)]
        except OpenSandError as err:  # a trace file the exporter cannot read, ...
            raise BackendUnavailable(f"link.backend: opensand: {err}") from None
        if self.keep is not None:  # as exported, before the testbed's MACs and storage go in
            path = archive.pack_config(self.dir, self.keep / "opensand-config.zip")
            self.files[CONFIG_ARTIFACT] = path
        edges = edge_macs(self.tb)
        for entity in ENTITIES:
            self._set_infrastructure(entity, edges)
        names = {entity: namespace(self.tb.id, entity) for entity in ENTITIES}
        self.started = True
        try:
            self.tb.agent("emu", "POST", "/opensand", {"dir": str(self.dir), "namespaces": names})
        except AgentError as exc:  # 409: the box has no OpenSAND (its message names the binary)
            hint = COMPOSE_HINT if testbed_kind() == "containers" else ""
            raise BackendUnavailable(f"{exc}{hint}") from None
        self._wait_ready()

    def _set_infrastructure(self, entity: str, edges: dict[str, str]) -> None:
        path = self.dir / entity / "infrastructure.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        storage = root.find("root/storage")
        assert storage is not None
        _set(storage, "enable_local", "true")
        _set(storage, "path_local", str(self.dir / entity / "stats"))
        macs = {GW_ID: edges["gw"], FIRST_ST_ID: edges["st"]}
        for item in root.iterfind(".//infrastructure/*/item"):
            eid = int(item.findtext("entity_id") or -1)
            if eid in macs:
                _set(item, "mac_address", macs[eid])
        own = root.find(f"root/entity/entity_{entity}")
        if own is not None and own.find("mac_address") is not None:
            _set(own, "mac_address", macs[ENTITIES[entity]])
        tree.write(path, encoding="utf-8", xml_declaration=True)

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
        codes = self.tb.agent("emu", "GET", "/opensand")["exit_codes"]
        for entity, code in codes.items():
            if code is not None:
                tail = self._log_tail(entity)
                return f"OpenSAND {entity} exited (code {code}) during the run: {tail}"
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
        if not self.started or self.summary:
            return
        usage = self._end()
        self.summary = {"entities": usage, "not_mapped": self.not_mapped}
        self._read_stats()
        if self.keep is not None:
            path = archive.pack_probes(self.dir, ENTITIES, self.keep / "opensand-probes.zip")
            self.files[PROBES_ARTIFACT] = path

    def close(self) -> None:
        """Ends the entities however the run ends (an agent already gone took them with it)."""
        if self.started:
            with contextlib.suppress(AgentError):
                self._end()

    def _end(self) -> dict[str, Any]:
        """Stops the entities and unwires them: each one's CPU time and peak memory."""
        self.started = False
        timeout = STOP_GRACE_S + 10  # their SIGTERM grace, then unwiring
        ended: dict[str, Any] = self.tb.agent("emu", "DELETE", "/opensand", timeout=timeout)
        return dict(ended["usage"])

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


def edge_macs(tb: Testbed) -> dict[str, str]:
    """The MAC each edge's frames carry across the link (its agent's GET /macs): its router's
    `sat0`, also behind an edge gateway, a transparent bump whose port toward the emulator
    (`wan`) answers no ARP (topology.build, the agent's splice)."""
    return {edge: tb.agent(edge, "GET", "/macs")["sat0"] for edge in ("gw", "st")}


@contextlib.contextmanager
def opensand_link(
    link: dict[str, Any], tb: Testbed, keep: Path | None = None
) -> Iterator[OpenSandLink]:
    """The entities of a run on testbed `tb`, in its emulator box, stopped and killed however
    the block ends; their files are kept in `keep` when given. A box without OpenSAND fails the
    run naming the missing binary (its agent looks, in its own environment)."""
    if (ports := tb.emulator_interfaces()) != {"gw": "gw", "st": "st"}:  # a hardware box's NICs
        raise BackendUnavailable(
            f"link.backend: opensand needs the emulator box's ports named gw and st (a namespace "
            f"or compose testbed), not {ports}"
        )
    os_link = OpenSandLink(tb, link, keep)
    try:
        os_link.start()
        yield os_link
    finally:
        os_link.close()
