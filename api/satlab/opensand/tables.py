"""MODCOD tables: the emulator's embedded defaults, its table file format (emulator/CONFIG.md,
"MODCOD table file format", the format of OpenSAND's modcod.txt) and OpenSAND 8's waveform lists.

A row is (id, modulation, coding rate, efficiency in bit/symbol, required Es/N0 in dB)."""

from __future__ import annotations

import re

Row = tuple[int, str, str, float, float]

MODULATIONS = ("BPSK", "Pi/2BPSK", "QPSK", "8PSK", "16APSK", "16QAM", "32APSK")
CODINGS = ("1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "4/5", "5/6", "6/7", "8/9", "9/10")

# EN 302 307-1 V1.4.1 Table 13 (AWGN, PER 1e-7, normal FECFRAME, no pilots): the emulator's
# embedded `dvbs2` table; OpenSAND 8's topology lists the same rows with efficiencies to 3 decimals.
DVBS2: list[Row] = [
    (1, "QPSK", "1/4", 0.490243, -2.35),
    (2, "QPSK", "1/3", 0.656448, -1.24),
    (3, "QPSK", "2/5", 0.789412, -0.30),
    (4, "QPSK", "1/2", 0.988858, 1.00),
    (5, "QPSK", "3/5", 1.188304, 2.23),
    (6, "QPSK", "2/3", 1.322253, 3.10),
    (7, "QPSK", "3/4", 1.487473, 4.03),
    (8, "QPSK", "4/5", 1.587196, 4.68),
    (9, "QPSK", "5/6", 1.654663, 5.18),
    (10, "QPSK", "8/9", 1.766451, 6.20),
    (11, "QPSK", "9/10", 1.788612, 6.42),
    (12, "8PSK", "3/5", 1.779991, 5.50),
    (13, "8PSK", "2/3", 1.980636, 6.62),
    (14, "8PSK", "3/4", 2.228124, 7.91),
    (15, "8PSK", "5/6", 2.478562, 9.35),
    (16, "8PSK", "8/9", 2.646012, 10.69),
    (17, "8PSK", "9/10", 2.679207, 10.98),
    (18, "16APSK", "2/3", 2.637201, 8.97),
    (19, "16APSK", "3/4", 2.966728, 10.21),
    (20, "16APSK", "4/5", 3.165623, 11.03),
    (21, "16APSK", "5/6", 3.300184, 11.61),
    (22, "16APSK", "8/9", 3.523143, 12.89),
    (23, "16APSK", "9/10", 3.567342, 13.13),
    (24, "32APSK", "3/4", 3.703295, 12.73),
    (25, "32APSK", "4/5", 3.951571, 13.64),
    (26, "32APSK", "5/6", 4.119540, 14.28),
    (27, "32APSK", "8/9", 4.397854, 15.69),
    (28, "32APSK", "9/10", 4.453027, 16.05),
]

# OpenSAND's DVB-RCS2 waveforms for 536-symbol bursts (ids 3-12): the emulator's `rcs2` table.
RCS2: list[Row] = [
    (3, "QPSK", "1/3", 0.56, 0.22),
    (4, "QPSK", "1/2", 0.87, 2.34),
    (5, "QPSK", "2/3", 1.26, 4.29),
    (6, "QPSK", "3/4", 1.42, 5.36),
    (7, "QPSK", "5/6", 1.60, 6.68),
    (8, "8PSK", "2/3", 1.70, 8.08),
    (9, "8PSK", "3/4", 1.93, 9.31),
    (10, "8PSK", "5/6", 2.13, 10.82),
    (11, "16QAM", "3/4", 2.59, 11.17),
    (12, "16QAM", "5/6", 2.87, 12.56),
]


def same_rows(a: list[Row], b: list[Row]) -> bool:
    """Equal tables, efficiencies compared to OpenSAND's 3 decimals."""
    return len(a) == len(b) and all(
        x[0] == y[0]
        and x[1].upper() == y[1].upper()
        and x[2] == y[2]
        and abs(x[3] - y[3]) < 5e-4 + 1e-9
        and abs(x[4] - y[4]) < 1e-6
        for x, y in zip(sorted(a), sorted(b), strict=True)
    )


def is_standard(rows: list[Row], standard: list[Row], ids: list[int]) -> bool:
    """Whether `rows` are the `standard` table's rows of the MODCODs `ids` (then the emulator's
    own table serves, and no table file is written)."""
    return same_rows(rows, [r for r in standard if r[0] in ids])


def format_table(rows: list[Row], title: str) -> str:
    lines = [f"# {title}", "# id  MOD  rate  efficiency(bit/sym)  required Es/N0 (dB)"]
    lines.append(f"nb_fmt = {len(rows)}")
    lines += [f"{i} {m} {c} {e:.6f} {t:.2f}" for i, m, c, e, t in rows]
    return "\n".join(lines) + "\n"


def parse_table(text: str, name: str) -> list[Row]:
    """Rows of a MODCOD table file; errors name the file and line."""
    rows: list[Row] = []
    nb: int | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"nb_fmt\s*=\s*(\d+)", line)
        if m:
            nb = int(m.group(1))
            continue
        parts = re.split(r"[\s,]+", line)
        try:
            if len(parts) != 5:
                raise ValueError("expected `id MOD rate efficiency esn0_db`")
            mod = next((x for x in MODULATIONS if x.upper() == parts[1].upper()), None)
            if mod is None:
                raise ValueError(f"unknown modulation {parts[1]!r}")
            rows.append((int(parts[0]), mod, parts[2], float(parts[3]), float(parts[4])))
        except ValueError as err:
            raise ValueError(f"{name}:{n}: {err}") from None
    if nb is not None and nb != len(rows):
        raise ValueError(f"{name}: nb_fmt = {nb} but {len(rows)} rows")
    if not rows:
        raise ValueError(f"{name}: no MODCOD rows")
    return rows


def parse_ids(spec: str, where: str) -> list[int]:
    """OpenSAND's waveform id list: `1-28`, `4;7;12` (ranges and ';'-separated ids)."""
    ids: list[int] = []
    for tok in re.split(r"[;,\s]+", spec.strip()):
        if not tok:
            continue
        m = re.fullmatch(r"(\d+)-(\d+)", tok)
        try:
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if hi < lo or hi - lo > 255:
                    raise ValueError
                ids += range(lo, hi + 1)
            else:
                ids.append(int(tok))
        except ValueError:
            raise ValueError(f"{where}: {spec!r} is not a list of waveform ids") from None
    if not ids:
        raise ValueError(f"{where}: no waveform ids")
    return ids


def format_ids(ids: list[int]) -> str:
    """The shortest OpenSAND form: one range when the ids are consecutive, else ';'-separated."""
    s = sorted(set(ids))
    if len(s) > 1 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ";".join(str(i) for i in s)
