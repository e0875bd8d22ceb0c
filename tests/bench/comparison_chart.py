"""The README's central example, drawn from a `satlab run` results directory: an SVG of bulk
goodput (summary.json: mean and 95% CI per configuration) and of the short objects' mean
completion time (the run-NNN.json files beside it: the short_flows traffic item), and the same
numbers as a Markdown table on stdout.

    .venv/bin/python tests/bench/comparison_chart.py results/geo-rain-comparison-TIME \
        -o docs/geo-rain-comparison.svg > table.md

Plain SVG (no plotting library): two panels of horizontal bars with the 95% interval as a whisker.
"""

from __future__ import annotations

import argparse
import json
import math
from html import escape
from pathlib import Path
from typing import Any

from satlab.stats import Estimate, mean_ci95

BAR_H = 18
GAP = 8
LABEL_W = 90
PANEL_W = 260
PANEL_GAP = 40
TOP = 48


def short_fct(results: Path) -> dict[str, Estimate]:
    """Per configuration, the short objects' mean completion time over the successful runs."""
    per: dict[str, list[float]] = {}
    for f in sorted(results.glob("run-*.json")):
        r = json.loads(f.read_text())
        if r["status"] != "ok":
            continue
        fcts = [fl["mean_fct_s"] for fl in r["flows"] if fl.get("kind") == "short_flows"]
        if fcts and fcts[0] is not None:
            per.setdefault(r["configuration"], []).append(fcts[0])
    return {k: mean_ci95(v) for k, v in per.items()}


def panel(x0: float, title: str, rows: list[tuple[str, Estimate]]) -> list[str]:
    finite = [e for _, e in rows if e.n and math.isfinite(e.mean)]
    top = max((e.mean + (e.half_width or 0.0) for e in finite), default=1.0) or 1.0
    scale = PANEL_W / top
    out = [f'<text x="{x0}" y="{TOP - 24}" class="t">{escape(title)}</text>']
    for i, (name, e) in enumerate(rows):
        y = TOP + i * (BAR_H + GAP)
        out.append(f'<text x="{x0 - 6}" y="{y + 13}" class="l">{escape(name)}</text>')
        if not e.n or not math.isfinite(e.mean):
            out.append(f'<text x="{x0 + 4}" y="{y + 13}" class="v">no data</text>')
            continue
        w = e.mean * scale
        end = w  # the label goes after the bar or its whisker, whichever is longer
        out.append(f'<rect x="{x0}" y="{y}" width="{w:.1f}" height="{BAR_H}" class="b"/>')
        if e.half_width is not None:
            lo, hi = (e.mean - e.half_width) * scale, (e.mean + e.half_width) * scale
            mid = y + BAR_H / 2
            out.append(
                f'<path d="M{x0 + max(lo, 0):.1f} {mid}H{x0 + hi:.1f}M{x0 + max(lo, 0):.1f} '
                f'{mid - 4}v8M{x0 + hi:.1f} {mid - 4}v8" class="w"/>'
            )
            end = max(w, hi)
        label = f"{e.format()} (n={e.n})"
        out.append(f'<text x="{x0 + end + 6:.1f}" y="{y + 13}" class="v">{escape(label)}</text>')
    return out


def svg(name: str, goodput: list[tuple[str, Estimate]], fct: list[tuple[str, Estimate]]) -> str:
    height = TOP + len(goodput) * (BAR_H + GAP) + 24
    width = 2 * (LABEL_W + PANEL_W + 150) + PANEL_GAP
    x1 = LABEL_W
    x2 = LABEL_W + PANEL_W + 150 + PANEL_GAP + LABEL_W
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        "<style>.t{font-weight:bold}.l{text-anchor:end}.v{fill:#333}"
        ".b{fill:#4a78b0}.w{stroke:#111;stroke-width:1.2;fill:none}</style>",
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
        *panel(x1, f"{name}: bulk goodput (Mbit/s, mean and 95% CI)", goodput),
        *panel(x2, "short web objects: mean completion time (s)", fct),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def table(
    goodput: list[tuple[str, Estimate]], fct: dict[str, Estimate], retx: dict[str, Any]
) -> str:
    lines = [
        "| configuration | bulk goodput, Mbit/s | short objects, mean completion s "
        "| retransmissions |",
        "|---|---:|---:|---:|",
    ]
    for name, g in goodput:
        f = fct.get(name, Estimate(math.nan, None, 0))
        r = Estimate(**retx[name]) if name in retx else Estimate(math.nan, None, 0)
        lines.append(f"| {name} | {g.format()} | {f.format()} | {r.format(digits=0)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a `satlab run` results directory")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the SVG to write")
    a = ap.parse_args()
    summary = json.loads((a.results / "summary.json").read_text())
    first = json.loads(next(iter(sorted(a.results.glob("run-*.json")))).read_text())
    name = first["scenario"]
    goodput = [
        (
            row["configuration"],
            Estimate(
                row["goodput_bps"]["mean"] / 1e6,
                None
                if row["goodput_bps"]["half_width"] is None
                else row["goodput_bps"]["half_width"] / 1e6,
                row["goodput_bps"]["n"],
            ),
        )
        for row in summary
    ]
    fct = short_fct(a.results)
    a.output.write_text(
        svg(name, goodput, [(n, fct.get(n, Estimate(math.nan, None, 0))) for n, _ in goodput])
    )
    retx = {row["configuration"]: row["retransmissions"] for row in summary}
    print(table(goodput, fct, retx), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
