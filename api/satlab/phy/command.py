"""`satlab phy ...` argument parsing and dispatch."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from satlab.phy import calibrate as cal


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("phy", help="DVB-S2 waveform calibration (GNU Radio TX, Rust receiver)")
    psub = p.add_subparsers(dest="phy_cmd", required=True)
    c = psub.add_parser(
        "calibrate",
        help="PER(Es/N0) tables in the emulator's format, resumable",
        description=cal.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("--modcod", default="all", help="Table 13 ids: `all`, `4`, `4,12-14`")
    c.add_argument("--frame", choices=["normal", "short"], default="short")
    c.add_argument("--pilots", action="store_true", help="PL pilots on")
    c.add_argument(
        "--esn0",
        required=True,
        help="START:STOP:STEP dB, STOP included (negative start: --esn0=-1:0.5:0.1)",
    )
    c.add_argument(
        "--relative",
        action="store_true",
        help="--esn0 offsets from each MODCOD's EN 302 307-1 Table 13 QEF Es/N0",
    )
    c.add_argument("--frames", type=int, default=200, help="frames per point")
    c.add_argument(
        "--probe-frames",
        type=int,
        default=0,
        help="per MODCOD, first this many frames per point up to the first point without "
        "error, then --frames from the point before it on (0: off, the default)",
    )
    c.add_argument(
        "--max-iterations",
        type=int,
        default=50,
        help="LDPC layered iterations (limits: satlab-phy --help)",
    )
    c.add_argument(
        "--decoder",
        default="minsum",
        help="LDPC decoder: minsum (ours, fast: 360 rows at a time), minsum-rows (the same, "
        "one row at a time) or an ldpc-toolbox decoder such as HLTanhf32 (layered "
        "sum-product, the reference); default minsum",
    )
    c.add_argument(
        "--minsum-scale",
        type=float,
        default=1.0,
        help="min-sum check rule max(scale x min - offset, 0): scale (default 1; limits: "
        "satlab-phy --help)",
    )
    c.add_argument(
        "--minsum-offset",
        type=float,
        default=0.4,
        help="min-sum offset, LLR units (default 0.4: offset min-sum, "
        "crates/dvbs2phy/src/minsum.rs says why)",
    )
    c.add_argument(
        "--stop-after-zero",
        type=int,
        default=2,
        help="stop a MODCOD's sweep after this many points in a row without error (0: never)",
    )
    c.add_argument("--out", required=True, help="table file (state: FILE.state.jsonl)")


def crossing(points: list[dict[str, Any]], modcod: int) -> str:
    """Where the measured curve reaches PER 1e-3, or what the frame counts allow saying."""
    pts = sorted((r for r in points if r["modcod"] == modcod), key=lambda r: r["esn0_db"])
    x = cal.esn0_at(points, modcod)
    clean = [r for r in pts if r["errors"] == 0]
    if x is not None and not (clean and clean[0]["esn0_db"] == x):
        return f"PER 1e-3 at {x:.2f} dB"
    if clean:
        r = clean[0]
        return (
            f"first point without error {r['esn0_db']:.2f} dB (0/{r['frames']} frames, "
            f"PER < {r['ci95'][1]:.3g} at 95 %; more frames to resolve PER 1e-3)"
        )
    return "PER 1e-3 not reached"


def main(args: argparse.Namespace) -> int:
    if args.phy_cmd != "calibrate":
        return 2
    t0 = time.monotonic()
    try:
        modcods = cal.parse_modcods(args.modcod)
        esn0 = cal.parse_range(args.esn0)
        if args.stop_after_zero < 0:
            raise cal.CalibrationError(f"--stop-after-zero {args.stop_after_zero} is negative")
        points = cal.calibrate(
            modcods,
            args.frame,
            args.pilots,
            esn0,
            args.relative,
            args.frames,
            Path(args.out),
            max_iterations=args.max_iterations,
            stop_after_zero=args.stop_after_zero,
            command=cal.command_line(),
            decoder=cal.Decoder(args.decoder, args.minsum_scale, args.minsum_offset),
            probe_frames=args.probe_frames,
        )
    except cal.CalibrationError as err:
        print(f"satlab phy calibrate: {err}")
        return 2
    t13 = cal.table13()
    for m in sorted({r["modcod"] for r in points}):
        print(
            f"MODCOD {m} ({t13[m][0]} {t13[m][1]}, Table 13 QEF {t13[m][2]:.2f} dB): "
            + crossing(points, m)
        )
    print(f"table: {args.out}; calibration took {time.monotonic() - t0:.1f} s")
    return 0
