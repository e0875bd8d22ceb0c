"""A scenario's `link` -> an OpenSAND 8 configuration: one gateway, one transparent satellite and
the terminal(s), in opensand-network's `opensand_cli` layout (a folder per entity with its
infrastructure.xml, topology.xml and profile.xml, and the trace files it names).

The mapping is the importer's (importer.py) read backwards, so importing the result gives the
same link on every mapped field. What OpenSAND 8 cannot express (pilots, PER curves, bit errors,
reordering, a return delay other than the forward one, ...) is listed by field with the reason,
in the returned list and in the folder's README.txt; nothing is dropped silently.
"""

from __future__ import annotations

import math
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from satlab.opensand import tables
from satlab.opensand.importer import QUEUE_MAX_BYTES, NotMapped
from satlab.opensand.xmlsafe import OpenSandError

# The ids and layout of an export, which the `opensand` link backend runs as it is
# (satlab.agent.opensandbox): gw 0, sat 1, terminals from 2; topology.xml at the top, a folder
# per entity.
GW_ID, SAT_ID, FIRST_ST_ID = 0, 1, 2
MAX_TERMINALS = 16
# OpenSAND 8's example profiles (opensand_cli); decap_buffer_len raised from the example's 8,
# with which a terminal drops every forward packet, to 5000.
QOS_CLASSES = [(7, "NC", "NM"), (6, "IC", "SIG"), (5, "VO", "EF"), (4, "VI", "AF"),
               (3, "CA", "AF"), (2, "EE", "AF"), (1, "BK", "BE"), (0, "BE", "BE")]  # fmt: skip
FIFOS = [(0, "NM", 1000), (1, "EF", 3000), (2, "SIG", 1000), (3, "AF", 2000), (4, "BE", 6000)]
DEFAULT_FIFO = "BE"  # where default_pcp 0 goes

# The emulator's defaults (emulator/CONFIG.md) for fields a link leaves out.
DEFAULTS: dict[str, Any] = {
    "forward.kind": "dvbs2",
    "return.kind": "rcs2",
    "forward.symbol_rate_baud": 40e6,
    "return.symbol_rate_baud": 4e6,
    "roll_off": 0.35,
    "delay_ms": 250.0,
    "acm.mode": "acm",
    "acm.refresh_ms": 1000,
    "acm.margin_db": 0.0,
    "clear_sky_db": 20.0,
    "queue.limit_packets": 1000,
    "queue.limit_bytes": 1_500_000,
    "burst_symbols": 536,
    "gse_label_bytes": 3,
    "pilots": True,
    "frame": "normal",
}

REASONS = {
    "pilots": "OpenSAND's BBFrames have no pilot blocks (its rates are Table 13's, without pilots)",
    "frame": "OpenSAND sends normal (64800-bit) FECFRAMEs only",
    "gse_label_bytes": "OpenSAND's GSE labels are 6 bytes (compatibility mode) or 3",
    "per_table": "OpenSAND's Gate drops a frame below its MODCOD's threshold: no PER curve",
    "per_curves": "OpenSAND's Gate drops a frame below its MODCOD's threshold: no PER curve",
    "waterfall_width_db": "OpenSAND's Gate drops a frame below its MODCOD's threshold: no PER "
    "curve",
    "failed_frames": "OpenSAND delivers no frame with bit errors",
    "bit_errors": "OpenSAND inserts no bit errors",
    "reorder": "OpenSAND does not reorder packets",
    "oracle_eten": "a SatLab end-host mechanism",
    "hysteresis_db": "OpenSAND's ACM loop has a margin but no hysteresis",
    "sky_noise": "OpenSAND adds no sky noise to rain attenuation",
    "limit_bytes": "OpenSAND's FIFOs count packets, not bytes",
    "tick_ms": "OpenSAND's attenuation tick is its ACM refresh period",
    "seed": "set per run by the runner",
    "ports": "set per run by the runner",
    "telemetry": "set per run by the runner",
    "control": "set per run by the runner",
    "backend": "selects the emulator backend, not a link setting",
    "geometry": "OpenSAND takes a delay, not positions (the link's delay_ms is written)",
    # OpenSAND runs several terminals, but each with an attenuation, MODCOD set-up and address
    # plan of its own that this exporter does not write: --terminals N writes N alike ones.
    "beam": "a beam's terminals are not exported (their fades, prefixes and scheduler); "
    "`--terminals N` writes N terminals alike",
}


class _Link:
    """The link's leaves by dotted path, with a record of which the exporter used."""

    def __init__(self, link: dict[str, Any]) -> None:
        self.leaves: dict[str, Any] = dict(_flatten(link))
        self.used: set[str] = set()
        self.notes: list[NotMapped] = []

    def get(self, path: str, default: Any = None) -> Any:
        if path in self.leaves:
            self.used.add(path)
            return self.leaves[path]
        return default

    def note(self, path: str, value: Any, reason: str) -> None:
        self.used.add(path)
        self.notes.append(NotMapped("link", path, _show(value), reason))

    def unused(self) -> Iterator[tuple[str, Any]]:
        for k, v in self.leaves.items():
            if k not in self.used:
                yield k, v


def _flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, node


def _show(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _num(v: Any) -> str:
    """Numbers as OpenSAND's own files write them (`%f`)."""
    return f"{float(v):f}"


def _el(parent: ET.Element, tag: str, text: Any = None) -> ET.Element:
    e = ET.SubElement(parent, tag)
    if text is not None:
        e.text = _show(text)
    return e


def _tree(spec: dict[str, Any] | list[Any], parent: ET.Element) -> None:
    """Builds XML from nested dicts (components) and lists of dicts (`<item>` lists)."""
    items = spec.items() if isinstance(spec, dict) else [("item", x) for x in spec]
    for tag, v in items:
        if isinstance(v, dict | list):
            _tree(v, _el(parent, tag))
        else:
            _el(parent, tag, v)


def _write(path: Path, root_spec: dict[str, Any]) -> None:
    model = ET.Element("model", version="1.0.0")
    _tree(root_spec, _el(model, "root"))
    ET.indent(model)
    path.write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(model, encoding="utf-8") + b"\n"
    )


def geometry_delay_ms(g: dict[str, Any]) -> float:
    """One-way delay of a GEO geometry (emulator/CONFIG.md, `geometry`): (uplink + downlink slant
    range) / c, stations on the WGS84 ellipsoid, the satellite at 42 164 km on the equator."""
    a, f = 6378137.0, 1 / 298.257223563
    e2 = f * (2 - f)

    def ecef(lat: float, lon: float, h: float) -> tuple[float, float, float]:
        la, lo = math.radians(lat), math.radians(lon)
        n = a / math.sqrt(1 - e2 * math.sin(la) ** 2)
        return (
            (n + h) * math.cos(la) * math.cos(lo),
            (n + h) * math.cos(la) * math.sin(lo),
            (n * (1 - e2) + h) * math.sin(la),
        )

    s_lon = math.radians(float(g["satellite_longitude_deg"]))
    sat = (42164e3 * math.cos(s_lon), 42164e3 * math.sin(s_lon), 0.0)
    total = 0.0
    for st in ("gateway", "terminal"):
        p = ecef(float(g[st]["lat_deg"]), float(g[st]["lon_deg"]), float(g[st].get("alt_m", 0)))
        total += math.dist(p, sat)
    return total / 299792458.0 * 1000


class _Exporter:
    def __init__(
        self,
        link: dict[str, Any],
        base: Path | None,
        out: Path,
        terminals: int,
        files_at: str | None,
    ) -> None:
        self.files_at = files_at.rstrip("/") if files_at else None
        self.link = _Link(link)
        self.raw = link
        self.base = base
        self.out = out
        self.terminals = terminals
        self.copies: dict[str, list[tuple[Path, str]]] = {}  # entity folder -> (source, name)

    def val(self, path: str, default_key: str | None = None) -> Any:
        key = default_key or path.split(".", 1)[1]
        default = DEFAULTS.get(path, DEFAULTS.get(key))
        return self.link.get(path, default)

    def source(self, ref: str, where: str) -> Path:
        p = Path(ref)
        if not p.is_absolute() and self.base is not None:
            p = self.base / p
        if not p.is_file():
            raise OpenSandError(f"{where}: {ref!r} is not a file")
        return p

    def attach(self, entity: str, ref: str, where: str) -> str:
        """The name the XML uses for a file copied into the entity's folder(s)."""
        src = self.source(ref, where)
        copies = self.copies.setdefault(entity, [])
        name = next((n for s, n in copies if s == src), None)
        if name is None:
            taken = {n for _, n in copies}
            name = src.name if src.name not in taken else f"{len(copies)}-{src.name}"
            copies.append((src, name))
        if self.files_at is None:
            return name
        return f"{self.files_at}/{entity}/{name}"  # e.g. /etc/opensand/st/...

    # -- pieces --

    def table(self, d: str, kind: str) -> list[tables.Row]:
        ref = self.link.get(f"{d}.modcod_table")
        if ref is None:
            return tables.RCS2 if kind == "rcs2" else tables.DVBS2
        src = self.source(ref, f"{d}.modcod_table")
        try:
            return tables.parse_table(src.read_text(), f"{d}.modcod_table")
        except (ValueError, UnicodeDecodeError) as err:
            raise OpenSandError(str(err)) from None

    def carrier(self, d: str, rows: list[tables.Row]) -> tuple[dict[str, Any], float]:
        """The band item (bandwidth, type, wave_form[, ratio]) and the roll-off."""
        kind = self.val(f"{d}.kind")
        ro = float(self.val(f"{d}.roll_off"))
        rs = float(self.val(f"{d}.symbol_rate_baud"))
        mode = self.val(f"{d}.acm.mode")
        ids = [r[0] for r in rows]
        item: dict[str, Any] = {}
        if kind == "fixed":
            rate = float(self.link.get(f"{d}.rate_bps"))
            best = max(rows, key=lambda r: r[3])
            bw_khz = max(1, round(rate / best[3] * (1 + ro) / 1000))
            rs = bw_khz * 1000 / (1 + ro)
            self.link.note(
                f"{d}.kind",
                "fixed",
                f"OpenSAND has no fixed-rate link: written as a constant carrier of waveform "
                f"{best[0]} ({best[1]} {best[2]}), {bw_khz} kHz = {rs:.0f} baud, "
                f"{rs * best[3]:.6g} bit/s before encapsulation",
            )
            self.link.note(f"{d}.rate_bps", rate, "see kind")
            mode, ids = "ccm", [best[0]]
        elif mode == "ccm":
            ids = [int(self.link.get(f"{d}.acm.modcod"))]
        elif mode == "vcm":
            cycle = [int(x) for x in self.link.get(f"{d}.acm.vcm_modcods")]
            order = list(dict.fromkeys(cycle))
            counts = [cycle.count(i) for i in order]
            g = math.gcd(*counts)
            grouped = [i for i in order for _ in range(cycle.count(i) // g)]
            if d == "return":
                self.link.note(f"{d}.acm.vcm_modcods", cycle, "OpenSAND's return has no VCM")
                mode, ids = "acm", ids
            else:
                if grouped != cycle:
                    self.link.note(
                        f"{d}.acm.vcm_modcods",
                        cycle,
                        "OpenSAND's VCM gives each waveform a share of the frames, not an order: "
                        f"written as the shares of {grouped}",
                    )
                item["ratio"] = ",".join(str(c // g) for c in counts)
                ids = order
        bw = rs * (1 + ro) / 1000
        if abs(bw - round(bw)) > 1e-6:
            self.link.note(
                f"{d}.symbol_rate_baud",
                rs,
                f"OpenSAND's bandwidth is whole kHz: {round(bw)} kHz, "
                f"{round(bw) * 1000 / (1 + ro):.0f} baud",
            )
        if d == "forward":
            item = {
                "bandwidth": round(bw),
                "type": "VCM" if mode == "vcm" else "ACM",
                "wave_form": ",".join(map(str, ids)) if mode == "vcm" else tables.format_ids(ids),
                "group": "Standard",
                **item,
            }
        else:
            item = {
                "bandwidth": round(bw),
                "type": "DAMA",
                "wave_form": tables.format_ids(ids),
                "group": "Standard",
            }
            if kind == "dvbs2":
                self.link.note(
                    f"{d}.kind", kind, "OpenSAND's return is DVB-RCS2: written with RCS2 waveforms"
                )
        return item, ro

    def delays(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(gateway, terminal) physical_layer/delay components."""
        lk = self.link
        files = [lk.get(f"{d}.delay_file.path") for d in ("forward", "return")]
        if files[0] is not None:
            period = int(lk.get("forward.delay_file.refresh_period_ms", 1000))
            loop = bool(lk.get("forward.delay_file.loop", False))
            for k in ("path", "refresh_period_ms", "loop"):
                fv, rv = lk.get(f"forward.delay_file.{k}"), lk.get(f"return.delay_file.{k}")
                if rv is not None and rv != fv:
                    lk.note(f"return.delay_file.{k}", rv, "OpenSAND's delay is the same both "
                            "ways: the forward delay file is written")  # fmt: skip
            if files[1] is None:
                lk.note("return.delay_ms", lk.get("return.delay_ms", 250), "OpenSAND's delay is "
                        "the same both ways: the forward delay file is written")  # fmt: skip
            name = self.attach("st", files[0], "forward.delay_file.path")
            st = {"delay_type": "FileDelay", "file_path": name, "refresh_period": period,
                  "loop": loop}  # fmt: skip
            return {"delay_type": "ConstantDelay", "delay_value": 0}, st
        ms: list[float] = []
        for d in ("forward", "return"):
            v = lk.get(f"{d}.delay_ms")
            if v is None and "geometry.satellite_longitude_deg" in lk.leaves:
                v = geometry_delay_ms(self.raw["geometry"])
                for k in [k for k in lk.leaves if k.startswith("geometry.")]:
                    lk.used.add(k)
                if d == "forward":
                    lk.note("geometry", "", f"OpenSAND takes a delay, not positions: written as "
                            f"the geometry's {v:.2f} ms, rounded to whole ms")  # fmt: skip
            ms.append(250.0 if v is None else float(v))
        if files[1] is not None:
            lk.note("return.delay_file.path", files[1], "OpenSAND's delay is the same both ways: "
                    "the forward delay is written")  # fmt: skip
        elif ms[1] != ms[0]:
            lk.note("return.delay_ms", ms[1], f"OpenSAND's delay is the same both ways: "
                    f"{ms[0]:g} ms (the forward delay) is written")  # fmt: skip
        total = round(ms[0])
        if total != ms[0]:
            lk.note("forward.delay_ms", ms[0], f"OpenSAND's delays are whole ms: {total} ms")
        gw = total // 2
        return (
            {"delay_type": "ConstantDelay", "delay_value": gw},
            {"delay_type": "ConstantDelay", "delay_value": total - gw},
        )

    def attenuation(self, d: str, hop: str, entity: str, refresh: int) -> dict[str, Any]:
        p = f"{d}.{hop}"
        lk = self.link
        out: dict[str, Any] = {"clear_sky": _num(self.val(f"{p}.clear_sky_db", "clear_sky_db"))}
        kind = lk.get(f"{p}.attenuation.type", "constant")
        if kind == "constant":
            value = _num(lk.get(f"{p}.attenuation.value_db", 0))
            out |= {"attenuation_type": "Ideal", "ideal_attenuation_value": value}
        elif kind == "file":
            name = self.attach(entity, lk.get(f"{p}.attenuation.file"), f"{p}.attenuation.file")
            loop = bool(lk.get(f"{p}.attenuation.loop", False))
            out |= {"attenuation_type": "File", "file_attenuation_file": name,
                    "file_attenuation_loop": loop}  # fmt: skip
        elif kind == "on_off":
            out |= {
                "attenuation_type": "On/Off",
                "onoff_attenuation_on": int(lk.get(f"{p}.attenuation.on_ticks", 10)),
                "onoff_attenuation_off": int(lk.get(f"{p}.attenuation.off_ticks", 10)),
                "onoff_attenuation_amplitude": _num(lk.get(f"{p}.attenuation.amplitude_db", 0)),
            }
        elif kind == "triangular":
            out |= {
                "attenuation_type": "Triangular",
                "triangle_attenuation_slope": _num(
                    lk.get(f"{p}.attenuation.slope_db_per_tick", 0.1)
                ),
                "triangle_attenuation_period": int(lk.get(f"{p}.attenuation.period_ticks", 100)),
            }
        tick = lk.get(f"{p}.attenuation.tick_ms")
        if tick is not None and int(tick) != refresh:
            lk.note(f"{p}.attenuation.tick_ms", tick, f"OpenSAND's attenuation tick is its ACM "
                    f"refresh period ({refresh} ms)")  # fmt: skip
        return out

    def queue(self, d: str) -> int:
        lb = self.link.get(f"{d}.queue.limit_bytes")
        if lb is None or int(lb) != QUEUE_MAX_BYTES:
            self.link.note(
                f"{d}.queue.limit_bytes",
                lb if lb is not None else "1500000 (default)",
                REASONS["limit_bytes"],
            )
        return int(self.val(f"{d}.queue.limit_packets", "queue.limit_packets"))

    # -- the files --

    def run(self) -> list[NotMapped]:
        lk = self.link
        frows, rrows = self.table("forward", "dvbs2"), self.table("return", "rcs2")
        fband, fro = self.carrier("forward", frows)
        rband, rro = self.carrier("return", rrows)
        refresh = int(self.val("forward.acm.refresh_ms", "acm.refresh_ms"))
        rrefresh = int(self.val("return.acm.refresh_ms", "acm.refresh_ms"))
        if rrefresh != refresh and self.val("return.kind") != "fixed":
            lk.note("return.acm.refresh_ms", rrefresh, f"OpenSAND has one ACM refresh period: "
                    f"the forward one ({refresh} ms) is written")  # fmt: skip
        burst = int(self.val("return.burst_symbols", "burst_symbols"))
        if burst not in (536, 1616):
            lk.note("return.burst_symbols", burst, "OpenSAND's bursts are 536 or 1616 symbols: "
                    "536 is written")  # fmt: skip
            burst = 536
        if lk.get("forward.pilots", True):
            lk.note("forward.pilots", lk.get("forward.pilots", "true (default)"), REASONS["pilots"])
        if lk.get("forward.frame", "normal") != "normal":
            lk.note("forward.frame", "short", REASONS["frame"])
        label = int(self.val("forward.gse_label_bytes", "gse_label_bytes"))
        if label not in (3, 6):
            lk.note("forward.gse_label_bytes", label, REASONS["gse_label_bytes"] + ": 3 is written")
        topology = {
            "frequency_plan": {"spots": [{
                "assignments": {"gateway_id": GW_ID, "sat_id_gw": SAT_ID, "sat_id_st": SAT_ID,
                                "forward_regen_level": "Transparent",
                                "return_regen_level": "Transparent"},
                "roll_off": {"forward": _num(fro), "return": _num(rro)},
                "forward_band": [fband],
                "return_band": [rband],
            }]},
            "st_assignment": {"defaults": {"default_gateway": GW_ID, "default_group": "Standard"},
                              "assignments": []},
            "wave_forms": {
                "dvb_s2": [{"id": i, "modulation": m, "coding": c, "efficiency": _num(e),
                            "threshold": _num(t)} for i, m, c, e, t in frows],
                "dvb_rcs2": [{"id": i, "modulation": m, "coding": c, "efficiency": _num(e),
                              "threshold": _num(t), "burst_length": f"{burst} sym"}
                             for i, m, c, e, t in rrows],
            },
            "advanced_settings": {
                "links": {"forward_duration": _num(10), "forward_margin":
                          _num(self.val("forward.acm.margin_db", "acm.margin_db")),
                          "return_duration": _num(26.5), "return_margin":
                          _num(self.val("return.acm.margin_db", "acm.margin_db"))},
                "schedulers": {"burst_length": f"{burst} sym", "crdsa_frame": 3,
                               "crdsa_delay": 250, "pep_allocation": 1000},
                "timers": {"statistics": 53, "synchro": 1000, "acm_refresh": refresh},
                "delay": {"fifo_size": 10000, "delay_timer": 1},
            },
        }  # fmt: skip
        gw_delay, st_delay = self.delays()
        # The terminal's constant rate: its whole return carrier at the best waveform, in kbit/s.
        cra = int(float(rband["bandwidth"]) * 1000 / (1 + rro) * max(r[3] for r in rrows) / 1000)
        profiles = {
            "gw": self.profile("gw", gw_delay, "gw_fifos", self.queue("forward"), label, refresh,
                               [("forward", "uplink"), ("return", "downlink")], cra),
            "st": self.profile("st", st_delay, "st_fifos", self.queue("return"), label, refresh,
                               [("return", "uplink"), ("forward", "downlink")], cra),
        }  # fmt: skip
        for k, v in lk.unused():
            leaf = k.split(".")[-1]
            reason = next(
                (REASONS[p] for p in k.split(".")[::-1] if p in REASONS),
                "no OpenSAND 8 equivalent",
            )
            if leaf in ("hysteresis_db", "enabled") and not v:
                continue  # no hysteresis, no sky noise: as OpenSAND
            lk.notes.append(NotMapped("link", k, _show(v), reason))
        self.write(topology, profiles)
        return lk.notes

    def profile(
        self,
        kind: str,
        delay: dict[str, Any],
        fifo_list: str,
        capacity: int,
        label: int,
        refresh: int,
        hops: list[tuple[str, str]],
        cra: int,
    ) -> dict[str, Any]:
        fifos = [
            {"priority": p, "name": n, "capacity": capacity if n == DEFAULT_FIFO else c,
             "access_type": "ACM" if kind == "gw" else "DAMA_RBDC"}
            for p, n, c in FIFOS
        ]  # fmt: skip
        network: dict[str, Any] = {
            "qos_classes": [{"pcp": p, "name": n, "fifo": f} for p, n, f in QOS_CLASSES],
            "virtual_connections": [],
            "qos_settings": {"lan_frame_type": "Ethernet", "sat_frame_type": "Ethernet",
                             "default_pcp": 0},
            fifo_list: fifos,
        }  # fmt: skip
        if kind == "gw":
            network |= {"simulation": "None", "fca": 0, "dama_algorithm": "Legacy"}
            access: dict[str, Any] = {"random_access": {"saloha_algo": "CRDSA"}, "simulations": []}
        else:
            access = {
                "settings": {"category": "Standard", "dama_enabled": True, "scpc_enabled": False},
                "dama": {"cra": cra, "algorithm": "Legacy", "duration": 23},
                "random_access": [],
                "scpc": {"carrier_duration": 5},
            }
        phy: dict[str, Any] = {
            "delay": delay,
            "minimal_condition": {"minimal_condition_type": "ACM-Loop"},
            "error_insertion": {"error_insertion_type": "Gate"},
        }
        for d, hop in hops:
            phy[f"{hop}_attenuation"] = self.attenuation(d, hop, kind, refresh)
        out = {
            "control_plane": {"disable_control_plane": False},
            "network": network,
            "encap": {
                "gse": {"max_frag_id": 8, "decap_buffer_len": 5000,
                        "compatibility_mode": label == 6},
                "rle": {"alpdu_protection": "Sequence Number"},
            },
            "access": access,
        }  # fmt: skip
        if kind == "st":  # OpenSAND 8.2's terminal schema wants it (its opensand_cli examples)
            out["access2"] = {"scpc": {"carrier_duration": 5}}
        return {**out, "physical_layer": phy}

    def infrastructure(self, kind: str, eid: int) -> dict[str, Any]:
        def emu(i: int) -> str:
            return f"192.168.18.{i}"

        def mac(i: int) -> str:
            return f"02:00:00:00:00:{i:02x}"

        sts = self.terminal_ids()

        def ground(i: int) -> dict[str, Any]:
            return {"entity_id": i, "emu_address": emu(i), "tap_iface": "opensand_tap",
                    "mac_address": mac(i)}  # fmt: skip

        # OpenSAND 8's schema wants every entity kind's block, in this order, whatever the
        # entity's type (its opensand_cli examples carry them all); the type picks the one read.
        interconnect = {"interconnect_address": "192.168.1.1", "interconnect_remote": "192.168.1.2"}
        entity: dict[str, Any] = {
            "entity_type": {"gw": "Gateway", "sat": "Satellite", "st": "Terminal"}[kind],
            "entity_sat": {"entity_id": SAT_ID, "emu_address": emu(SAT_ID), "isl_settings": []},
            "entity_gw": ground(GW_ID),
            "entity_gw_net_acc": {"entity_id": GW_ID, "tap_iface": "opensand_tap",
                                  "mac_address": mac(GW_ID),
                                  "interconnect_params": interconnect},
            "entity_gw_phy": {"entity_id": GW_ID, "interconnect_params": {
                "interconnect_address": "192.168.1.2", "interconnect_remote": "192.168.1.1"},
                "emu_address": emu(GW_ID)},
            "entity_st": ground(eid if kind == "st" else sts[0]),
        }  # fmt: skip
        return {
            "entity": entity,
            "logs": {**{k: {"level": "warning"} for k in
                        ("init", "lan_adaptation", "dvb", "physical_layer", "sat_carrier")},
                     "extra_levels": [{"name": "Configuration", "level": "warning"}]},
            "storage": {"enable_local": False, "path_local": "/var/log/opensand",
                        "enable_collector": False, "collector_address": "127.0.0.1"},
            "infrastructure": {
                "satellites": [{"entity_id": SAT_ID, "emu_address": emu(SAT_ID)}],
                "gateways": [{"entity_id": GW_ID, "emu_address": emu(GW_ID),
                              "mac_address": mac(GW_ID)}],
                "terminals": [{"entity_id": i, "emu_address": emu(i), "mac_address": mac(i)}
                              for i in sts],
                "default_gw": GW_ID,
            },
        }  # fmt: skip

    def terminal_ids(self) -> list[int]:
        return list(range(FIRST_ST_ID, FIRST_ST_ID + self.terminals))

    def st_folder(self, eid: int) -> str:
        return "st" if self.terminals == 1 else f"st{eid}"

    def write(self, topology: dict[str, Any], profiles: dict[str, dict[str, Any]]) -> None:
        folders = [("gw", "gw", GW_ID), ("sat", "sat", SAT_ID)] + [
            (self.st_folder(i), "st", i) for i in self.terminal_ids()
        ]
        _write(self.out / "topology.xml", topology)
        for folder, kind, eid in folders:
            d = self.out / folder
            d.mkdir(parents=True)
            _write(d / "infrastructure.xml", self.infrastructure(kind, eid))
            _write(d / "topology.xml", topology)
            if kind in profiles:
                _write(d / "profile.xml", profiles[kind])
            for src, name in self.copies.get(kind, []):
                shutil.copyfile(src, d / name)
        where = (
            f"the trace files are named by absolute path under {self.files_at}/ENTITY/"
            if self.files_at
            else "the trace files are named relative to it"
        )
        st = self.st_folder(FIRST_ST_ID)
        lines = [
            "OpenSAND 8 configuration written by `satlab export opensand`: one gateway (id 0),",
            "one transparent satellite (id 1), the terminal(s) (ids from 2), a folder per entity.",
            f"Launch each entity from its folder ({where}), e.g. in opensand-network's namespaces:",
            "",
            f"  sudo opensand-network setup -g {GW_ID} -s {SAT_ID} -t "
            + " ".join(str(i) for i in self.terminal_ids()),
            "  (cd gw && opensand -i infrastructure.xml -t topology.xml -p profile.xml)",
            "  (cd sat && opensand -i infrastructure.xml -t topology.xml)",
            f"  (cd {st} && opensand -i infrastructure.xml -t topology.xml -p profile.xml)",
            "",
            "The MAC addresses (02:00:00:00:00:ID) are placeholders: OpenSAND's Ethernet mode",
            "forwards by destination MAC, so add the MACs of the hosts behind the gateway and the",
            "terminal(s) to <infrastructure><gateways>/<terminals> of every infrastructure.xml.",
            "",
            "Not mapped (the SatLab link's settings OpenSAND 8 cannot express):",
        ]
        lines += [f"  {n.setting} = {n.value}: {n.reason}" for n in self.link.notes] or ["  none"]
        (self.out / "README.txt").write_text("\n".join(lines) + "\n")


def export_link(
    link: dict[str, Any],
    out: Path,
    base: Path | None = None,
    terminals: int = 1,
    files_at: str | None = None,
) -> list[NotMapped]:
    """Writes `link` as an OpenSAND 8 configuration in `out` (which must not exist or be empty);
    relative file references resolve against `base`. The XML names each trace file relative to
    its entity's folder, or as `FILES_AT/ENTITY/NAME` (where the folders will be, e.g.
    /etc/opensand). Returns what could not be mapped."""
    if files_at is not None and not files_at.startswith("/"):
        raise OpenSandError(f"files_at: {files_at!r} is not an absolute path")
    if not 1 <= terminals <= MAX_TERMINALS:
        raise OpenSandError(f"terminals: {terminals} is outside [1, {MAX_TERMINALS}]")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OpenSandError(f"{out}: exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    return _Exporter(link, base, out, terminals, files_at).run()
