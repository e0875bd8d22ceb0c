"""A modem's log of Es/N0 (or MODCOD) over time, as an attenuation trace the emulator replays.

Input: CSV text, a header row then one sample per row, `#` comment lines and blank lines skipped,
fields separated by commas (or semicolons, or whitespace). Columns (by header name, any order;
other columns are ignored):
- `time_s`: seconds (any origin: the first sample is time 0), or `time`: an ISO 8601 timestamp
  (`2026-11-26T15:00:00.250Z`); strictly increasing.
- `esn0_db`: the modem's measured Es/N0 (dB), within [-30, 60] (the MODCOD tables' range), or
- `modcod`: the MODCOD the modem used, by table id (`13`) or name (`8PSK 2/3`, `8psk-2/3`,
  `8PSK_2/3`) of the MODCOD table (the emulator's embedded `dvbs2` table, EN 302 307-1 Table
  13, by default; `dvbs2x` adds EN 302 307-2 Table 20a, ids 132-214; or a table file);
  its sample stands for the Es/N0 that makes the emulator's ACM rule choose it: the MODCOD's
  required Es/N0 plus the ACM margin (`margin_db`; with hysteresis 0).

The emulator has no MODCOD trace (emulator/CONFIG.md: `acm.vcm_modcods` is a per-frame cycle), so
both become an attenuation trace for one direction's downlink: the series is resampled every
`step_ms` (linear interpolation for Es/N0; the last MODCOD holds until the next sample) and the
attenuation A = clear_sky_db - C/N_down with C/N_down chosen so that the emulator's total,
1/(1/C/N_up + 1/C/N_down), equals the log's Es/N0 exactly for the given uplink C/N
(`uplink_db`). Set the direction's `downlink.clear_sky_db` and `uplink.clear_sky_db` to the two
values the trace header states, `attenuation.tick_ms` to `step_ms`.

Errors name the line and the limit: a gap between samples longer than `max_gap_s`, times not
increasing, values out of range, an unknown MODCOD, a missing column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from satlab import linkmodel
from satlab.weather import MAX_TRACE_DB, MIN_TRACE_DB

ESN0_RANGE_DB = (-30.0, 60.0)
CLEAR_SKY_RANGE_DB = (-20.0, 60.0)  # the emulator's clear_sky_db bounds
MAX_TICKS = 10_000_000


class LogError(ValueError):
    """A log that cannot be imported: `line N: reason` (or `field: reason`)."""


@dataclass(frozen=True)
class Modcod:
    id: int
    name: str  # "8PSK 2/3"
    esn0_db: float


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower()


def read_modcod_table(text: str | None = None, modcod_set: str = "dvbs2") -> dict[str, Modcod]:
    """MODCODs by normalised name and by id, of a table file's text (`id MOD rate efficiency
    esn0_db` rows), or of the emulator's embedded table `modcod_set` (dvbs2, dvbs2x) when None:
    read by the emulator's own parser (satlab.linkmodel; one process per log imported)."""
    try:
        rows = linkmodel.modcods(modcod_set, text)
    except linkmodel.LinkModelError as err:
        raise LogError(f"modcod table: {err}") from None
    out: dict[str, Modcod] = {}
    for r in rows:
        m = Modcod(r["id"], r["name"], r["esn0_db"])
        out[_norm(m.name)] = m
        out[str(m.id)] = m
    return out


def _rows(text: str) -> Iterator[tuple[int, list[str]]]:
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        sep = "," if "," in line else ";" if ";" in line else None
        yield i, [c.strip() for c in (line.split(sep) if sep else line.split())]


def _time(line: int, s: str, iso: bool) -> float:
    if iso:
        try:
            return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise LogError(f"line {line}: time {s!r} is not an ISO 8601 timestamp") from None
    try:
        v = float(s)
    except ValueError:
        raise LogError(f"line {line}: time_s {s!r} is not a number") from None
    if not math.isfinite(v):
        raise LogError(f"line {line}: time_s {s!r} is not finite")
    return v


@dataclass
class ModemLog:
    times_s: list[float]
    esn0_db: list[float]
    kind: str  # "esn0" or "modcod"
    lines: list[int]


def parse(
    text: str,
    margin_db: float = 0.0,
    table: dict[str, Modcod] | None = None,
    max_gap_s: float = 10.0,
    modcod_set: str = "dvbs2",
) -> ModemLog:
    rows = _rows(text)
    try:
        hline, header = next(rows)
    except StopIteration:
        raise LogError("no header row (time_s,esn0_db or time_s,modcod)") from None
    cols = [h.lower() for h in header]
    tcol = "time_s" if "time_s" in cols else "time" if "time" in cols else None
    vcol = "esn0_db" if "esn0_db" in cols else "modcod" if "modcod" in cols else None
    if tcol is None or vcol is None:
        raise LogError(
            f"line {hline}: the header {','.join(header)!r} needs a time column (time_s or time) "
            "and a value column (esn0_db or modcod)"
        )
    ti, vi = cols.index(tcol), cols.index(vcol)
    if vcol == "modcod" and table is None:
        table = read_modcod_table(None, modcod_set)
    log = ModemLog([], [], "esn0" if vcol == "esn0_db" else "modcod", [])
    t0: float | None = None
    for line, f in rows:
        if len(f) <= max(ti, vi):
            raise LogError(f"line {line}: expected {len(cols)} columns, found {len(f)}")
        t = _time(line, f[ti], tcol == "time")
        t0 = t if t0 is None else t0
        t -= t0
        if log.times_s:
            prev = log.times_s[-1]
            if t <= prev:
                raise LogError(
                    f"line {line}: time {f[ti]} is not after the previous sample's "
                    f"(line {log.lines[-1]}): times must increase"
                )
            if t - prev > max_gap_s:
                raise LogError(
                    f"line {line}: gap of {t - prev:g} s after line {log.lines[-1]} exceeds "
                    f"max_gap_s ({max_gap_s:g} s)"
                )
        if vcol == "esn0_db":
            try:
                v = float(f[vi])
            except ValueError:
                raise LogError(f"line {line}: esn0_db {f[vi]!r} is not a number") from None
            lo, hi = ESN0_RANGE_DB
            if not lo <= v <= hi:  # also refuses NaN
                raise LogError(f"line {line}: esn0_db {f[vi]} is outside [{lo:g}, {hi:g}] dB")
        else:
            assert table is not None
            m = table.get(_norm(f[vi]))
            if m is None:
                raise LogError(f"line {line}: modcod {f[vi]!r} is not in the MODCOD table")
            v = m.esn0_db + margin_db
        log.times_s.append(t)
        log.esn0_db.append(v)
        log.lines.append(line)
    if len(log.times_s) < 2:
        raise LogError("the log needs at least two samples")
    return log


@dataclass
class Imported:
    values_db: np.ndarray
    step_ms: int
    clear_sky_db: float
    uplink_db: float
    header: list[str]

    def text(self) -> str:
        lines = [f"# {h}" for h in self.header]
        lines.extend(f"{i} {v:.4f}" for i, v in enumerate(self.values_db))
        return "\n".join(lines) + "\n"


def to_trace(
    log: ModemLog, step_ms: int = 100, clear_sky_db: float | None = None, uplink_db: float = 60.0
) -> Imported:
    """The log as a downlink attenuation trace (see the module's docstring)."""
    if step_ms < 1:
        raise LogError(f"step_ms: must be at least 1, got {step_ms}")
    lo, hi = CLEAR_SKY_RANGE_DB
    if not lo <= uplink_db <= hi:
        raise LogError(f"uplink_db: {uplink_db:g} is outside the emulator's [{lo:g}, {hi:g}] dB")
    t = np.array(log.times_s)
    v = np.array(log.esn0_db)
    n = int(t[-1] * 1000 // step_ms) + 1
    if n > MAX_TICKS:
        raise LogError(
            f"step_ms: {n} ticks of {step_ms} ms exceed the limit of {MAX_TICKS}; use a longer step"
        )
    grid = np.arange(n) * step_ms / 1000.0
    if log.kind == "esn0":
        total = np.interp(grid, t, v)
    else:
        total = v[np.searchsorted(t, grid, side="right") - 1]
    peak = float(np.max(total))
    if peak >= uplink_db:
        raise LogError(
            f"uplink_db: the log reaches {peak:.2f} dB, which needs an uplink C/N above it "
            f"(uplink_db {uplink_db:g}); raise uplink_db"
        )
    inv = 10 ** (-total / 10.0) - 10 ** (-uplink_db / 10.0)
    down = -10.0 * np.log10(inv)
    ref = float(np.max(down)) if clear_sky_db is None else clear_sky_db
    if not lo <= ref <= hi:
        raise LogError(f"clear_sky_db: {ref:.2f} is outside the emulator's [{lo:g}, {hi:g}] dB")
    att = ref - down
    if float(att.min()) < MIN_TRACE_DB or float(att.max()) > MAX_TRACE_DB:
        raise LogError(
            f"clear_sky_db: {ref:g} dB makes attenuations of {att.min():.2f} to {att.max():.2f} "
            f"dB, outside the trace's [{MIN_TRACE_DB:g}, {MAX_TRACE_DB:g}] dB"
        )
    header = [
        f"SatLab trace imported from a modem log of {log.kind} "
        f"({len(log.times_s)} samples over {t[-1]:g} s), OpenSAND File format",
        f"columns: <tick> <attenuation dB>; tick = {step_ms} ms (attenuation.tick_ms); "
        "put it on the direction's downlink",
        f"set downlink.clear_sky_db: {ref:.4f} and uplink.clear_sky_db: {uplink_db:g} "
        "(the emulator's total Es/N0 then equals the log's)",
    ]
    return Imported(np.round(att, 4) + 0.0, step_ms, ref, uplink_db, header)
