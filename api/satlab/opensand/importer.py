"""OpenSAND 8 configuration directory -> a scenario's `link` section.

Layouts read (OpenSAND 8.2.0):
- opensand-deploy projects: `topology.xml` at the top, `entities/NAME/infrastructure.xml` and
  `entities/NAME/profile.xml` per entity;
- opensand-network's `opensand_cli` examples: one folder per entity, each with its
  `infrastructure.xml`, `topology.xml` and (ground entities) `profile.xml`.
An entity's kind is its infrastructure's `entity/entity_type`. One gateway, one satellite and the
terminal with the lowest id are mapped (the emulator has one gateway side and one terminal side).

What maps where (OpenSAND's element -> the link's field, emulator/CONFIG.md):
- topology `frequency_plan/spots`: the gateway's spot; the terminal's carrier group's first forward
  and return carriers: `bandwidth` (kHz) / (1 + `roll_off`) -> `symbol_rate_baud`, `roll_off`;
  forward `type` ACM with one waveform -> `acm.mode: ccm`, several -> `acm` (a MODCOD table of
  exactly those waveforms when they are not all of the embedded table), VCM `wave_form`+`ratio`
  -> `acm.vcm_modcods` (each id repeated by its ratio, in the order given).
- topology `wave_forms/dvb_s2`, `dvb_rcs2` (the rows of the scheduler's `burst_length`) -> the
  MODCOD tables (`modcod_table`, written only when they differ from the embedded ones);
  `schedulers/burst_length` -> `return.burst_symbols`; `links/forward_margin`, `return_margin`
  -> `acm.margin_db`; `timers/acm_refresh` -> `acm.refresh_ms` of both directions (it is also the
  tick of the attenuation files, as the emulator's default `tick_ms`).
- profiles `physical_layer/delay`: OpenSAND delays every frame an entity sends and receives by
  its own delay, so one way (either direction) is the gateway's plus the terminal's delay ->
  `delay_ms` of both directions; a FileDelay (`file_path`, `refresh_period`, `loop`) ->
  `delay_file` (the other entity's constant delay added to each line).
- `uplink_attenuation`/`downlink_attenuation`: a sender applies its uplink, a receiver its
  downlink: gateway uplink -> `forward.uplink`, terminal downlink -> `forward.downlink`, terminal
  uplink -> `return.uplink`, gateway downlink -> `return.downlink`; `clear_sky` -> `clear_sky_db`;
  Ideal / File / On/Off / Triangular -> `constant` / `file` / `on_off` / `triangular`.
- `network/gw_fifos` (`st_fifos`): the capacity of the FIFO that `qos_settings/default_pcp`'s
  class goes to -> `forward.queue.limit_packets` (`return`); OpenSAND's FIFOs count packets only,
  so `limit_bytes` is set to the emulator's largest value.
- `encap/gse/compatibility_mode`: true -> 6-byte GSE labels, false -> 3 (`forward.gse_label_bytes`).
- Implied by OpenSAND: DVB-S2 normal frames without pilots (`pilots: false`, `frame: normal`),
  a DVB-RCS2 return (`kind: rcs2`), the ACM-Loop rule (the emulator's ACM rule).
Everything else is reported by name, with the reason, in the not-mapped list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path, PurePosixPath
from typing import Any

from satlab.opensand import tables
from satlab.opensand.xmlsafe import Doc, OpenSandError, collapse, read_xml

MAX_ENTITIES = 64
MAX_DATA_FILE_BYTES = 8 << 20
QUEUE_MAX_BYTES = 2**34  # the emulator's upper bound for queue.limit_bytes: no byte limit
ENTITY_KINDS = {
    "Gateway": "gw",
    "Gateway Net Access": "gw_net_acc",
    "Gateway Phy": "gw_phy",
    "Satellite": "sat",
    "Terminal": "st",
}

# Why a setting does not map (by its path without list indices); the longest matching prefix wins.
REASONS: dict[str, str] = {
    "": "no equivalent in the emulator's link",
    "entity": "deployment (entity ids, emulation addresses, TAP interfaces, MAC addresses): the "
    "runner wires the emulator's ports itself",
    "logs": "OpenSAND's log levels",
    "storage": "OpenSAND's probe and log storage",
    "infrastructure": "deployment (emulation addresses, MAC addresses of the entities)",
    "frequency_plan/spots/item/forward_band": "another carrier: the link has one carrier per "
    "direction (the terminal's group's first is mapped)",
    "frequency_plan/spots/item/return_band": "another carrier: the link has one carrier per "
    "direction (the terminal's group's first is mapped)",
    "frequency_plan/spots/item": "another spot: the link has one gateway and one terminal",
    "wave_forms/dvb_rcs2": "a waveform of another burst length than the scheduler's",
    "advanced_settings/links/forward_duration": "the emulator sends BBFrames back to back, not "
    "in fixed superframes",
    "advanced_settings/links/return_duration": "the emulator sends return bursts back to back, "
    "not in fixed superframes",
    "advanced_settings/schedulers": "DVB-RCS2 random access (CRDSA) and PEP allocation: the "
    "emulator has no return access scheme",
    "advanced_settings/timers": "OpenSAND's statistics and synchronisation timers",
    "advanced_settings/delay": "OpenSAND's delay FIFO and its timer (the emulator delays each "
    "packet exactly)",
    "control_plane": "OpenSAND's control plane (logon, SAC, TTP)",
    "network/qos_classes": "another QoS class: the link has one queue per direction (the "
    "default_pcp class's FIFO is mapped)",
    "network/gw_fifos": "another FIFO: the link has one queue per direction (the default_pcp "
    "class's FIFO is mapped)",
    "network/st_fifos": "another FIFO: the link has one queue per direction (the default_pcp "
    "class's FIFO is mapped)",
    "network/virtual_connections": "another QoS setting: the link has one queue per direction",
    "network/qos_settings": "LAN/satellite frame types: the emulator carries Ethernet frames",
    "network/simulation": "OpenSAND's simulated terminals",
    "network/fca": "free capacity assignment: the emulator has no DAMA",
    "network/dama_algorithm": "the emulator has no DAMA: the terminal gets the whole carrier",
    "encap": "encapsulation settings: the emulator's GSE-like encapsulation has no fragment "
    "ids, reassembly buffers or RLE",
    "access": "return access (DAMA CRA/RBDC/VBDC, SCPC, random access): the emulator gives the "
    "terminal the whole return carrier",
    "access2": "return access (SCPC): the emulator gives the terminal the whole return carrier",
    "physical_layer/error_insertion": "Gate drops a frame below its threshold (a cliff); the "
    "emulator erases frames by a PER curve (per_curves: calibrated or waterfall; per_table)",
    "physical_layer/minimal_condition": "a constant minimal C/N: the emulator judges each "
    "frame against its MODCOD's threshold",
}


@dataclass
class NotMapped:
    """A setting that has no place in the other side's configuration."""

    file: str
    setting: str
    value: str
    reason: str

    def line(self) -> str:
        v = f" = {self.value}" if self.value else ""
        return f"{self.file}: {self.setting}{v}: {self.reason}"


@dataclass
class Entity:
    kind: str
    id: int
    folder: Path
    infra: Doc
    profile: Doc | None = None


@dataclass
class ImportResult:
    link: dict[str, Any]
    files: dict[str, bytes]  # file name the link uses -> its content
    not_mapped: list[NotMapped]
    entities: dict[str, Any] = field(default_factory=dict)


def _rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix()


def _find_entities(root: Path) -> list[Entity]:
    found = sorted(
        p for p in root.rglob("infrastructure.xml") if len(p.relative_to(root).parts) <= 4
    )
    if not found:
        raise OpenSandError(f"{root.name or root}: no infrastructure.xml (an OpenSAND 8 directory)")
    if len(found) > MAX_ENTITIES:
        raise OpenSandError(f"{root.name}: more than {MAX_ENTITIES} entities")
    out = []
    for p in found:
        if p.is_symlink():
            raise OpenSandError(f"{_rel(root, p)}: a symbolic link (not read)")
        doc = read_xml(p, _rel(root, p))
        etype = doc.req("entity/entity_type")
        kind = ENTITY_KINDS.get(etype)
        if kind is None:
            raise OpenSandError(
                f"{doc.name}: <entity/entity_type>: {etype!r} is not one of "
                + ", ".join(ENTITY_KINDS)
            )
        eid = int(doc.num(f"entity/entity_{kind}/entity_id", 0, 65535))
        prof_path = p.parent / "profile.xml"
        prof = None
        if prof_path.is_file() and not prof_path.is_symlink():
            prof = read_xml(prof_path, _rel(root, prof_path))
        out.append(Entity(kind, eid, p.parent, doc, prof))
    return out


class _Importer:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.files: dict[str, bytes] = {}
        self.not_mapped: list[NotMapped] = []
        self.docs: list[Doc] = []

    # -- helpers --

    def note(self, doc: Doc | str, setting: str, value: str, reason: str) -> None:
        name = doc.name if isinstance(doc, Doc) else doc
        self.not_mapped.append(NotMapped(name, setting, value, reason))

    def data_file(self, doc: Doc, element: str, ref: str, folder: Path) -> Path:
        """The file an XML element names, found in the configuration directory: relative to the
        entity's folder, then to the directory; an absolute path by its name there."""
        if not ref:
            raise OpenSandError(f"{doc.name}: <{element}> is empty")
        pure = PurePosixPath(ref)
        candidates = (
            [folder / pure.name, self.root / pure.name]
            if pure.is_absolute()
            else [folder / pure, self.root / pure, folder / pure.name, self.root / pure.name]
        )
        for c in candidates:
            try:
                r = c.resolve()
            except OSError:
                continue
            if r.is_relative_to(self.root) and r.is_file():
                if pure.is_absolute():
                    self.note(
                        doc,
                        element,
                        ref,
                        f"an absolute path: its copy {_rel(self.root, r)} in the directory is used",
                    )
                return r
        raise OpenSandError(
            f"{doc.name}: <{element}>: {ref!r} is not a file in the configuration directory"
        )

    def add_file(self, path: Path, prefix: str, content: bytes | None = None) -> str:
        if content is None:
            if path.stat().st_size > MAX_DATA_FILE_BYTES:
                raise OpenSandError(
                    f"{_rel(self.root, path)}: over the {MAX_DATA_FILE_BYTES}-byte limit"
                )
            content = path.read_bytes()
        name = path.name
        if name in self.files and self.files[name] != content:
            name = f"{prefix}-{path.name}"
        self.files[name] = content
        return name

    # -- the parts --

    def attenuation(self, e: Entity, which: str) -> dict[str, Any]:
        p = e.profile
        assert p is not None
        base = f"physical_layer/{which}_attenuation"
        if not p.has(base):
            return {}
        out: dict[str, Any] = {"clear_sky_db": p.num(f"{base}/clear_sky", -20, 60, 20.0)}
        kind = p.get(f"{base}/attenuation_type") or "Ideal"
        if kind == "Ideal":
            a = {
                "type": "constant",
                "value_db": p.num(f"{base}/ideal_attenuation_value", 0, 100, 0),
            }
        elif kind == "File":
            ref = p.req(f"{base}/file_attenuation_file")
            path = self.data_file(p, f"{base}/file_attenuation_file", ref, e.folder)
            a = {
                "type": "file",
                "file": self.add_file(path, f"{e.kind}-{which}"),
                "loop": p.flag(f"{base}/file_attenuation_loop"),
            }
        elif kind == "On/Off":
            a = {
                "type": "on_off",
                "on_ticks": int(p.num(f"{base}/onoff_attenuation_on", 0, 1e9)),
                "off_ticks": int(p.num(f"{base}/onoff_attenuation_off", 0, 1e9)),
                "amplitude_db": p.num(f"{base}/onoff_attenuation_amplitude", 0, 100),
            }
        elif kind == "Triangular":
            a = {
                "type": "triangular",
                "slope_db_per_tick": p.num(f"{base}/triangle_attenuation_slope", 0, 100),
                "period_ticks": int(p.num(f"{base}/triangle_attenuation_period", 1, 1e9)),
            }
        else:
            raise OpenSandError(
                f"{p.name}: <{base}/attenuation_type>: {kind!r} is not Ideal, File, On/Off "
                "or Triangular"
            )
        out["attenuation"] = a
        return out

    def delay(self, e: Entity) -> tuple[str, Any]:
        p = e.profile
        assert p is not None
        base = "physical_layer/delay"
        kind = p.get(f"{base}/delay_type")
        if kind is None:
            return ("const", 0.0)
        if kind == "ConstantDelay":
            return ("const", p.num(f"{base}/delay_value", 0, 10000))
        if kind == "FileDelay":
            ref = p.req(f"{base}/file_path")
            path = self.data_file(p, f"{base}/file_path", ref, e.folder)
            return (
                "file",
                (
                    path,
                    int(p.num(f"{base}/refresh_period", 1, 3600000, 1000)),
                    p.flag(f"{base}/loop"),
                ),
            )
        raise OpenSandError(
            f"{p.name}: <{base}/delay_type>: {kind!r} is not ConstantDelay or FileDelay"
        )

    def fifo(self, e: Entity, list_name: str) -> int | None:
        """Capacity (packets) of the FIFO the default PCP's class goes to."""
        p = e.profile
        assert p is not None
        fifos = p.items(f"network/{list_name}")
        if not fifos:
            return None
        pcp = p.get("network/qos_settings/default_pcp") or "0"
        fifo_name = None
        for c in p.items("network/qos_classes"):
            if p.leaves.get(f"{c}/pcp") == pcp:
                fifo_name = p.get(f"{c}/fifo")
                p.get(f"{c}/pcp")
                p.get(f"{c}/name")
        chosen = None
        for f in fifos:
            if fifo_name is None or p.leaves.get(f"{f}/name") == fifo_name:
                chosen = f
                break
        if chosen is None:
            raise OpenSandError(
                f"{p.name}: <network/{list_name}>: no FIFO named {fifo_name!r} "
                f"(the FIFO of default_pcp {pcp})"
            )
        for k in ("name", "priority", "access_type"):
            p.get(f"{chosen}/{k}")
        return int(p.num(f"{chosen}/capacity", 1, 1e7))

    def table(
        self,
        topo: Doc,
        list_path: str,
        ids: list[int],
        default: list[tables.Row],
        name: str,
        burst: str | None = None,
    ) -> tuple[list[tables.Row], str | None]:
        """The waveform rows of `ids`, and the table file to write (None: the embedded table)."""
        rows: dict[int, tables.Row] = {}
        for item in topo.items(list_path):
            if burst is not None and topo.leaves.get(f"{item}/burst_length") != burst:
                continue
            wid = int(topo.num(f"{item}/id", 1, 255))
            mod = topo.req(f"{item}/modulation")
            if mod not in tables.MODULATIONS:
                raise OpenSandError(f"{topo.name}: <{item}/modulation>: {mod!r} is not known")
            rows[wid] = (
                wid,
                mod,
                topo.req(f"{item}/coding"),
                topo.num(f"{item}/efficiency", 0.01, 10),
                topo.num(f"{item}/threshold", -30, 60),
            )
            if burst is not None:
                topo.get(f"{item}/burst_length")
        missing = [i for i in ids if i not in rows]
        if missing:
            raise OpenSandError(
                f"{topo.name}: <{list_path}>: no waveform {missing[0]}"
                + (f" with burst_length {burst}" if burst else "")
            )
        wanted = [rows[i] for i in sorted(set(ids))]
        by_id = {r[0]: r for r in default}
        # A row equal to the embedded one (OpenSAND rounds efficiencies to 3 decimals) keeps the
        # embedded efficiency.
        exact = [
            by_id[r[0]] if r[0] in by_id and tables.same_rows([r], [by_id[r[0]]]) else r
            for r in wanted
        ]
        if tables.same_rows(exact, default):
            return exact, None
        return exact, name

    def run(self) -> ImportResult:
        ents = _find_entities(self.root)
        by_kind: dict[str, list[Entity]] = {}
        for e in ents:
            by_kind.setdefault(e.kind, []).append(e)
            self.docs.append(e.infra)
            if e.profile:
                self.docs.append(e.profile)
        gws = by_kind.get("gw") or by_kind.get("gw_phy") or []
        sts = sorted(by_kind.get("st", []), key=lambda x: x.id)
        if not gws:
            raise OpenSandError(f"{self.root.name}: no Gateway entity (entity_type Gateway)")
        if not sts:
            raise OpenSandError(f"{self.root.name}: no Terminal entity (entity_type Terminal)")
        gw, st = sorted(gws, key=lambda x: x.id)[0], sts[0]
        for e in (gw, st):
            if e.profile is None:
                raise OpenSandError(f"{_rel(self.root, e.folder / 'profile.xml')}: missing")
        # A split gateway: its FIFOs are in the net-access entity's profile.
        gw_net: Entity | None = gw
        if gw.kind == "gw_phy":
            gw_net = next(iter(by_kind.get("gw_net_acc", [])), None)
        for e in gws[1:] + sts[1:]:
            self.note(
                e.infra,
                "entity",
                f"{e.kind} {e.id}",
                "the link has one gateway and one terminal (the lowest ids are mapped)",
            )
            if e.profile:
                e.profile.use_all()
        topo = self.topology(ents, gw)
        link = self.link(topo, gw, gw_net, st)
        self.report_unused()
        sats = by_kind.get("sat", [])
        return ImportResult(
            link,
            self.files,
            self.not_mapped,
            {
                "gateway": gw.id,
                "satellite": sats[0].id if sats else None,
                "terminals": [s.id for s in sts],
                "mapped_terminal": st.id,
            },
        )

    def topology(self, ents: list[Entity], gw: Entity) -> Doc:
        top = self.root / "topology.xml"
        main_path = top if top.is_file() else gw.folder / "topology.xml"
        if not main_path.is_file():
            raise OpenSandError(f"{_rel(self.root, main_path)}: missing (the gateway's topology)")
        main = read_xml(main_path, _rel(self.root, main_path))
        self.docs.append(main)
        for e in ents:
            other = e.folder / "topology.xml"
            if other.is_file() and other.resolve() != main_path.resolve():
                doc = read_xml(other, _rel(self.root, other))
                diff = sorted(
                    k
                    for k in set(doc.leaves) | set(main.leaves)
                    if doc.leaves.get(k) != main.leaves.get(k)
                )
                for k in diff:
                    self.note(
                        doc,
                        k,
                        doc.leaves.get(k, "(absent)"),
                        f"differs from {main.name}, which is used",
                    )
        return main

    def carrier(self, topo: Doc, spot: str, band: str, group: str) -> str:
        items = topo.items(f"{spot}/{band}")
        for it in items:
            if (topo.leaves.get(f"{it}/group") or "Standard") == group:
                topo.get(f"{it}/group")
                return it
        raise OpenSandError(f"{topo.name}: <{spot}/{band}>: no carrier of group {group}")

    def link(self, topo: Doc, gw: Entity, gw_net: Entity | None, st: Entity) -> dict[str, Any]:
        spot = self.spot(topo, gw)
        group = self.terminal_group(topo, st)
        acm_refresh = topo.num("advanced_settings/timers/acm_refresh", 1, 600000, 1000)
        fwd: dict[str, Any] = {"kind": "dvbs2"}
        rtn: dict[str, Any] = {"kind": "rcs2"}
        for d, out, band, ro_key in (
            ("forward", fwd, "forward_band", "forward"),
            ("return", rtn, "return_band", "return"),
        ):
            ro = topo.num(f"{spot}/roll_off/{ro_key}", 0, 1, 0.35 if d == "forward" else 0.2)
            c = self.carrier(topo, spot, band, group)
            bw = topo.num(f"{c}/bandwidth", 1, 1e7)
            out["symbol_rate_baud"] = round(bw * 1000 / (1 + ro), 3)
            out["roll_off"] = ro
        self.forward_modcods(topo, spot, group, gw_net or gw, acm_refresh, fwd)
        self.return_modcods(topo, spot, group, acm_refresh, rtn)
        self.delays(gw, st, fwd, rtn)
        # Link budget.
        for out, hop, ent, which in (
            (fwd, "uplink", gw, "uplink"),
            (fwd, "downlink", st, "downlink"),
            (rtn, "uplink", st, "uplink"),
            (rtn, "downlink", gw, "downlink"),
        ):
            budget = self.attenuation(ent, which)
            if budget:
                out[hop] = budget
        # Physical-layer plugins the emulator's model covers.
        for e in (gw, st):
            assert e.profile is not None
            mc = e.profile.get("physical_layer/minimal_condition/minimal_condition_type")
            if mc not in (None, "ACM-Loop"):
                e.profile.used.discard("physical_layer/minimal_condition/minimal_condition_type")
        # Queues.
        qf = self.fifo(gw_net or gw, "gw_fifos")
        if qf is not None:
            fwd["queue"] = {"limit_packets": qf, "limit_bytes": QUEUE_MAX_BYTES}
        qr = self.fifo(st, "st_fifos")
        if qr is not None:
            rtn["queue"] = {"limit_packets": qr, "limit_bytes": QUEUE_MAX_BYTES}
        return {"forward": fwd, "return": rtn}

    def spot(self, topo: Doc, gw: Entity) -> str:
        """The gateway's spot of the frequency plan (the first one when none names it)."""
        spots = topo.items("frequency_plan/spots")
        if not spots:
            raise OpenSandError(f"{topo.name}: <frequency_plan/spots> has no spot")
        spot = spots[0]
        for s in spots:
            if topo.leaves.get(f"{s}/assignments/gateway_id") == str(gw.id):
                spot = s
                break
        for k in ("gateway_id", "sat_id_gw", "sat_id_st"):
            topo.get(f"{spot}/assignments/{k}")
        for d in ("forward", "return"):
            lvl = topo.get(f"{spot}/assignments/{d}_regen_level") or "Transparent"
            if lvl != "Transparent":
                self.note(
                    topo,
                    f"{spot}/assignments/{d}_regen_level",
                    lvl,
                    "a regenerative satellite: the emulator is a transparent GEO link",
                )
        return spot

    def terminal_group(self, topo: Doc, st: Entity) -> str:
        """The carrier group the terminal is assigned to."""
        group = "Standard"
        topo.use_all("st_assignment")
        group = topo.leaves.get("st_assignment/defaults/default_group") or group
        for a in topo.items("st_assignment/assignments"):
            if topo.leaves.get(f"{a}/terminal_id") == str(st.id):
                group = topo.leaves.get(f"{a}/group") or group
        return group

    def forward_modcods(
        self,
        topo: Doc,
        spot: str,
        group: str,
        gw_net: Entity,
        acm_refresh: float,
        fwd: dict[str, Any],
    ) -> None:
        """The forward carrier's ACM and MODCODs: DVB-S2 normal frames without pilots, GSE labels
        per the compatibility mode of gw_net (the gateway's network entity, or the gateway)."""
        fwd["pilots"] = False
        fwd["frame"] = "normal"
        gp = gw_net.profile
        if gp is not None and gp.get("encap/gse/compatibility_mode") is not None:
            fwd["gse_label_bytes"] = 6 if gp.flag("encap/gse/compatibility_mode") else 3
        fc = self.carrier(topo, spot, "forward_band", group)
        ftype = topo.req(f"{fc}/type")
        fwd["acm"] = {
            "refresh_ms": int(acm_refresh),
            "margin_db": topo.num("advanced_settings/links/forward_margin", 0, 20, 0),
        }
        spec = topo.req(f"{fc}/wave_form")
        if ftype == "ACM":
            try:
                ids = tables.parse_ids(spec, f"{topo.name}: <{fc}/wave_form>")
            except ValueError as err:
                raise OpenSandError(str(err)) from None
            rows, tname = self.table(
                topo, "wave_forms/dvb_s2", ids, tables.DVBS2, "forward-modcod.txt"
            )
            if len(set(ids)) == 1:
                fwd["acm"] = {**fwd["acm"], "mode": "ccm", "modcod": ids[0]}
                tname = None if tables.is_standard(rows, tables.DVBS2, ids) else tname
            else:
                fwd["acm"] = {"mode": "acm", **fwd["acm"]}
        elif ftype == "VCM":
            ratio = topo.req(f"{fc}/ratio")
            fwd["acm"] = {
                "mode": "vcm",
                **fwd["acm"],
                "vcm_modcods": self.vcm(topo, fc, spec, ratio),
            }
            ids = fwd["acm"]["vcm_modcods"]
            rows, tname = self.table(
                topo, "wave_forms/dvb_s2", ids, tables.DVBS2, "forward-modcod.txt"
            )
            tname = None if tables.is_standard(rows, tables.DVBS2, ids) else tname
        else:
            raise OpenSandError(f"{topo.name}: <{fc}/type>: {ftype!r} is not ACM or VCM")
        if tname:
            fwd["modcod_table"] = self.put_table(
                rows, tname, "DVB-S2 waveforms of the OpenSAND topology"
            )

    def return_modcods(
        self, topo: Doc, spot: str, group: str, acm_refresh: float, rtn: dict[str, Any]
    ) -> None:
        """The return carrier's ACM and MODCODs: DVB-RCS2 bursts of the scheduler's length."""
        rc = self.carrier(topo, spot, "return_band", group)
        rtype = topo.get(f"{rc}/type") or "DAMA"
        self.note(
            topo,
            f"{rc}/type",
            rtype,
            "the emulator has no return access scheme: the terminal gets the whole return carrier",
        )
        burst = topo.get("advanced_settings/schedulers/burst_length") or "536 sym"
        if burst not in ("536 sym", "1616 sym"):
            raise OpenSandError(
                f"{topo.name}: <advanced_settings/schedulers/burst_length>: {burst!r} is not "
                "536 sym or 1616 sym"
            )
        rtn["burst_symbols"] = int(burst.split()[0])
        try:
            rids = tables.parse_ids(topo.req(f"{rc}/wave_form"), f"{topo.name}: <{rc}/wave_form>")
        except ValueError as err:
            raise OpenSandError(str(err)) from None
        rrows, rname = self.table(
            topo, "wave_forms/dvb_rcs2", rids, tables.RCS2, "return-modcod.txt", burst
        )
        rtn["acm"] = {
            "mode": "acm",
            "refresh_ms": int(acm_refresh),
            "margin_db": topo.num("advanced_settings/links/return_margin", 0, 20, 0),
        }
        if len(set(rids)) == 1:
            rtn["acm"] = {**rtn["acm"], "mode": "ccm", "modcod": rids[0]}
            rname = None if tables.is_standard(rrows, tables.RCS2, rids) else rname
        if rname:
            rtn["modcod_table"] = self.put_table(
                rrows, rname, f"DVB-RCS2 waveforms ({burst}) of the OpenSAND topology"
            )

    def delays(self, gw: Entity, st: Entity, fwd: dict[str, Any], rtn: dict[str, Any]) -> None:
        """Both directions' delay: the sum of the entities' constant delays, or one's FileDelay."""
        dg, ds = self.delay(gw), self.delay(st)
        if dg[0] == "const" and ds[0] == "const":
            fwd["delay_ms"] = rtn["delay_ms"] = dg[1] + ds[1]
        else:
            # One entity's FileDelay, the other's constant delay added to each of its lines.
            fe, (path, period, loop), other = (
                (st, ds[1], dg) if ds[0] == "file" else (gw, dg[1], ds)
            )
            if other[0] == "file":
                assert gw.profile is not None and st.profile is not None
                self.note(
                    gw.profile,
                    "physical_layer/delay/file_path",
                    str(dg[1][0].name),
                    f"both entities have a FileDelay: only {st.profile.name}'s is mapped",
                )
                other = ("const", 0.0)
            name = self.delay_file(path, float(other[1]), fe.kind)
            dfile: dict[str, Any] = {"path": name, "refresh_period_ms": period, "loop": loop}
            fwd["delay_file"] = dict(dfile)
            rtn["delay_file"] = dict(dfile)

    def vcm(self, topo: Doc, fc: str, spec: str, ratio: str) -> list[int]:
        import re

        ids = [t for t in re.split(r"[,\s]+", spec.strip()) if t]
        ratios = [t for t in re.split(r"[,;\-\s]+", ratio.strip()) if t]
        if len(ids) != len(ratios) or not ids:
            raise OpenSandError(
                f"{topo.name}: <{fc}/ratio>: {len(ratios)} ratios for {len(ids)} waveforms"
            )
        try:
            pairs = [(int(i), int(r)) for i, r in zip(ids, ratios, strict=True)]
        except ValueError:
            raise OpenSandError(
                f"{topo.name}: <{fc}/wave_form>/<ratio>: {spec!r} / {ratio!r} are not whole numbers"
            ) from None
        g = reduce(math.gcd, [r for _, r in pairs if r > 0], 0) or 1
        cycle = [i for i, r in pairs for _ in range(r // g)]
        if not 1 <= len(cycle) <= 1024:
            raise OpenSandError(
                f"{topo.name}: <{fc}/ratio>: {ratio!r} gives a VCM cycle of {len(cycle)} frames "
                "(1-1024)"
            )
        return cycle

    def put_table(self, rows: list[tables.Row], name: str, title: str) -> str:
        self.files[name] = tables.format_table(rows, title).encode()
        return name

    def delay_file(self, path: Path, add_ms: float, prefix: str) -> str:
        if path.stat().st_size > MAX_DATA_FILE_BYTES:
            raise OpenSandError(
                f"{_rel(self.root, path)}: over the {MAX_DATA_FILE_BYTES}-byte limit"
            )
        content = path.read_bytes()
        if add_ms:
            lines = []
            for n, raw in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
                body = raw.split("#", 1)[0].split()
                if len(body) == 2:
                    try:
                        lines.append(f"{body[0]} {float(body[1]) + add_ms:g}")
                        continue
                    except ValueError:
                        raise OpenSandError(
                            f"{_rel(self.root, path)}:{n}: {raw.strip()!r} is not `<tick> <ms>`"
                        ) from None
                lines.append(raw)
            content = ("\n".join(lines) + "\n").encode()
            return self.add_file(
                path.with_name(f"delay-plus-{add_ms:g}ms-{path.name}"), prefix, content
            )
        return self.add_file(path, prefix, content)

    def report_unused(self) -> None:
        for doc in self.docs:
            groups: dict[str, list[str]] = {}
            infra = doc.name.endswith("infrastructure.xml")
            for k, v in doc.unused().items():
                key = collapse(k)
                if infra:  # deployment settings: one line per part (per entity for `entity`)
                    parts = key.split("/")
                    key = "/".join(parts[:2] if parts[0] == "entity" else parts[:1])
                groups.setdefault(key, []).append(v)
            for key, values in groups.items():
                distinct = list(dict.fromkeys(v for v in values if v))
                value = ", ".join(distinct)
                if len(value) > 80:
                    value = value[:77] + "..."
                self.note(doc, key, value, _reason(key))


def _reason(key: str) -> str:
    best = ""
    for prefix in REASONS:
        if (key == prefix or key.startswith(prefix + "/")) and len(prefix) > len(best):
            best = prefix
    return REASONS[best]


def import_dir(root: Path) -> ImportResult:
    """Reads the OpenSAND 8 configuration in `root`; raises OpenSandError naming the file."""
    if not root.is_dir():
        raise OpenSandError(f"{root}: not a directory")
    return _Importer(root).run()
