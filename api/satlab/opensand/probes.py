"""OpenSAND 8's statistics as its entities write them locally, read without its collector.

With `<storage><enable_local>true</enable_local><path_local>DIR</path_local>` in its
infrastructure.xml, an entity's output library (opensand-output, FileStatHandler) writes its
probes to `DIR/ENTITY_N.csv`: a header `Date;NAME (UNIT);...` then one line per statistics tick,
`YYYY-MM-DD HH:MM:SS.mmm;VALUE;...` in local time, an empty field for a probe without a new value.
A new file (N + 1) starts each time the set of probes changes.

The output library writes a probe's name in lower case with `_` for spaces and the entity's
spot and kind before it (`spot_0.st.phy.total_cn`); the probes read here (opensand-core 8.2.0):
  terminal  down_forward_modcod.received_modcod   the forward MODCOD id of the data it receives
            throughputs.l2_from_sat.total         forward throughput delivered to its LAN, kbit/s
            phy.total_cn                          total C/N of the forward frames, dB
            phy.drops                             frames the Gate dropped (C/N below the MODCOD's)
  gateway   queue_loss.packets.FIFO               packets its forward FIFOs dropped
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Series:
    """One probe's samples: (epoch seconds, value)."""

    unit: str
    points: list[tuple[float, float]] = field(default_factory=list)


def _epoch(stamp: str) -> float:
    whole, _, ms = stamp.partition(".")
    return time.mktime(time.strptime(whole, "%Y-%m-%d %H:%M:%S")) + int(ms or 0) / 1000


def _name_unit(header: str) -> tuple[str, str]:
    name, _, unit = header.rpartition(" (")
    return (name, unit.rstrip(")")) if name else (header, "")


def read_stats(folder: Path) -> dict[str, Series]:
    """Every probe an entity wrote into `folder`, by name, its files read in order."""
    out: dict[str, Series] = {}
    files = sorted(folder.glob("*.csv"), key=lambda p: int(p.stem.rpartition("_")[2] or 0))
    for path in files:
        with path.open(newline="") as f:
            rows = csv.reader(f, delimiter=";")
            header = next(rows, None)
            if not header:
                continue
            columns = [_name_unit(h) for h in header[1:]]
            for row in rows:
                if len(row) != len(header):
                    continue  # a line cut short by the entity's end
                try:
                    t = _epoch(row[0])
                except ValueError:
                    continue
                for (name, unit), v in zip(columns, row[1:], strict=True):
                    if v == "":
                        continue
                    try:
                        x = float(v)
                    except ValueError:
                        continue
                    if math.isfinite(x):
                        out.setdefault(name, Series(unit)).points.append((t, x))
    return out


def _local(name: str) -> str:
    """A probe's name without its `spot_N.KIND.` prefix."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0].startswith("spot_") else name


def find(stats: dict[str, Series], name: str) -> Series | None:
    """The probe `name` (without the spot prefix)."""
    return next((s for n, s in sorted(stats.items()) if _local(n) == name), None)


def total(stats: dict[str, Series], prefix: str) -> float:
    """The sum of the samples of every probe whose name (without the spot prefix, and without
    the terminal category the gateway puts before its FIFOs' probes: `standard.`) starts with
    `prefix`: per-tick counts such as the Gate's drops and the FIFOs' losses."""
    return sum(
        v
        for n, s in stats.items()
        if _local(n).startswith(prefix) or f".{prefix}" in _local(n)
        for _, v in s.points
    )
