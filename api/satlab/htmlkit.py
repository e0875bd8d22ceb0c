"""Self-contained HTML documents: escaping, number format, one stylesheet and inline SVG charts.

The reproduction report (satlab.reproduce.report) and the experiment report
(satlab.service.report) are single files a user hands on: no script, nothing fetched from a
network, every chart an inline SVG drawn here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable
from typing import Any

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #d0d7de;padding:4px 6px;text-align:left;vertical-align:top}
.v{color:#fff;border-radius:3px;padding:1px 6px;white-space:nowrap}.muted{color:#6e7781}
.counts span{margin-right:1.5em;font-size:1.1em}svg text{font-size:11px;fill:#1f2328}
.note{font-size:12px;color:#57606a}pre{background:#f6f8fa;padding:8px;overflow:auto}
"""
PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#bf3989", "#57606a")


def esc(x: Any) -> str:
    """HTML-escaped text of any value (None: empty)."""
    return html.escape("" if x is None else str(x))


def fmt(x: Any) -> str:
    """A number in four significant digits; '-' for none or not finite."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{float(x):.4g}"


def page(title: str, body: str) -> str:
    """One HTML document: the stylesheet inline, no script."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def first(value: Any) -> Any:
    """A sweep point's value on a plot's x axis: the first dimension of a two-dimensional one."""
    return value[0] if isinstance(value, list) and value else value


def _series_key(value: Any) -> str:
    """Which series a point of a two-dimensional sweep belongs to: its second dimension."""
    return f" ({value[1]})" if isinstance(value, list) and len(value) > 1 else ""


def sweep_series(rows: list[dict[str, Any]], metrics: list[str]) -> list[dict[str, Any]]:
    """Per metric: one series per configuration (and second sweep value), mean and CI half-width
    against the (first) sweep value; rows as service/results.aggregate_rows makes them."""
    out = []
    for m in metrics:
        series: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            est = row["metrics"].get(m) or {}
            label = row["configuration"] + _series_key(row["sweep_value"])
            series.setdefault(label, []).append(
                {
                    "x": first(row["sweep_value"]),
                    "mean": est.get("mean"),
                    "half_width": est.get("half_width"),
                }
            )
        out.append({"metric": m, "series": series})
    return out


def _axes(
    box: tuple[int, int, int, int, int],
    scale: tuple[Callable[[float], float], Callable[[float], float]],
    ticks: tuple[Iterable[float], Iterable[float]],
    label: str,
) -> list[str]:
    """A chart's x and y axis lines, tick values and label (already escaped). `box`: width,
    height, left and bottom margins, and where the x axis ends; `scale`: value -> x, y."""
    w, h, ml, mb, right = box
    sx, sy = scale
    out = [
        f'<line x1="{ml}" x2="{right}" y1="{h - mb}" y2="{h - mb}" stroke="#57606a"/>',
        f'<line x1="{ml}" x2="{ml}" y1="10" y2="{h - mb}" stroke="#57606a"/>',
    ]
    for v in ticks[0]:
        out.append(f'<text x="{ml - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    for v in ticks[1]:
        out.append(f'<text x="{sx(v):.1f}" y="{h - mb + 14}" text-anchor="middle">{fmt(v)}</text>')
    out.append(f'<text x="{ml}" y="{h - 2}">{label}</text>')
    return out


def sweep_svg(
    plot: dict[str, Any],
    xlabel: str,
    model: list[tuple[float, float]] | None = None,
    model_label: str = "model",
) -> str:
    """Metric against the sweep value, one polyline (with CI whiskers) per series; a model's
    (x, y) points dashed with a cross at each. A log x axis when the values span two decades or
    more."""
    series = {
        k: [p for p in pts if p["mean"] is not None and isinstance(p["x"], int | float)]
        for k, pts in plot["series"].items()
    }
    model = sorted(model or [])
    xs = [float(p["x"]) for pts in series.values() for p in pts] + [x for x, _ in model]
    ys = [
        float(p["mean"]) + s * float(p["half_width"] or 0)
        for pts in series.values()
        for p in pts
        for s in (-1, 1)
    ]
    if not xs or not ys:
        return '<p class="muted">no numeric sweep values with data to plot</p>'
    ymax = max(ys) * 1.1 or 1.0
    ymin = min(0.0, min(ys))
    logx = min(xs) > 0 and max(xs) / min(xs) >= 100
    fx = math.log10 if logx else float
    x0, x1 = fx(min(xs)), fx(max(xs))
    if x1 <= x0:  # one sweep value (a CI subset): in the middle
        x0, x1 = x0 - 1, x1 + 1
    w, h, ml, mb = 600, 260, 76, 30

    def sx(v: float) -> float:
        return ml + (w - ml - 130) * (fx(v) - x0) / (x1 - x0)

    def sy(v: float) -> float:
        v = min(max(v, ymin), ymax)  # a model value off the chart is drawn at its edge
        return (h - mb) - (h - mb - 10) * (v - ymin) / (ymax - ymin)

    out = [f'<svg width="{w}" height="{h}" role="img" aria-label="{esc(plot["metric"])}">']
    out += _axes(
        (w, h, ml, mb, w - 130),
        (sx, sy),
        ((ymin, (ymin + ymax) / 2, ymax), sorted(set(xs))),
        f"{esc(xlabel)}{' (log)' if logx else ''}",
    )
    for i, (label, pts) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(pts, key=lambda p: float(p["x"]))
        line = " ".join(f"{sx(float(p['x'])):.1f},{sy(float(p['mean'])):.1f}" for p in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for p in pts:
            cx, m, hw = sx(float(p["x"])), float(p["mean"]), float(p["half_width"] or 0)
            out.append(f'<circle cx="{cx:.1f}" cy="{sy(m):.1f}" r="3" fill="{colour}"/>')
            if hw:
                out.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{sy(m - hw):.1f}" '
                    f'y2="{sy(m + hw):.1f}" stroke="{colour}"/>'
                )
        out.append(
            f'<text x="{w - 125}" y="{20 + 14 * i}" fill="{colour}" style="fill:{colour}">'
            f"{esc(label)}</text>"
        )
    if model:
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in model)
        out.append(
            f'<polyline points="{line}" fill="none" stroke="#24292f" stroke-dasharray="5,3"/>'
        )
        for x, y in model:  # a cross at each point: a single point draws no line
            cx, cy = sx(x), sy(y)
            out.append(f'<path d="M{cx - 4:.1f},{cy - 4:.1f}l8,8m0,-8l-8,8" stroke="#24292f"/>')
        out.append(f'<text x="{w - 125}" y="{20 + 14 * len(series)}">{esc(model_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def bars_svg(bars: list[tuple[str, float | None, float | None]], unit: str = "") -> str:
    """Horizontal bars (label, mean, 95 % CI half-width) with their intervals as whiskers."""
    shown = [(label, m, hw or 0.0) for label, m, hw in bars if m is not None and math.isfinite(m)]
    if not shown:
        return '<p class="muted">no data to plot</p>'
    top = max(m + hw for _, m, hw in shown) * 1.1 or 1.0
    ml, w, row = 170, 640, 22
    h = row * len(shown) + 24

    def sx(v: float) -> float:
        return ml + (w - ml - 70) * max(0.0, v) / top

    out = [f'<svg width="{w}" height="{h}" role="img" aria-label="bars">']
    for i, (label, m, hw) in enumerate(shown):
        y = 4 + row * i
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<text x="{ml - 6}" y="{y + 14}" text-anchor="end">{esc(label)}</text>')
        out.append(
            f'<rect x="{ml}" y="{y + 3}" width="{sx(m) - ml:.1f}" height="{row - 8}" '
            f'fill="{colour}" opacity="0.8"/>'
        )
        if hw:
            out.append(
                f'<line x1="{sx(m - hw):.1f}" x2="{sx(m + hw):.1f}" y1="{y + row / 2 - 1}" '
                f'y2="{y + row / 2 - 1}" stroke="#24292f" stroke-width="1.5"/>'
            )
        out.append(f'<text x="{sx(m + hw) + 4:.1f}" y="{y + 14}">{fmt(m)}{esc(unit)}</text>')
    out.append(f'<line x1="{ml}" x2="{ml}" y1="0" y2="{h - 20}" stroke="#57606a"/>')
    out.append(f'<text x="{ml}" y="{h - 4}">0</text>')
    out.append("</svg>")
    return "".join(out)


def timeseries_svg(series: dict[str, list[tuple[float, float]]], ylabel: str) -> str:
    """Values against time (s), one polyline per labelled series."""
    series = {k: sorted(v) for k, v in series.items() if v}
    if not series:
        return '<p class="muted">no samples</p>'
    ts = [t for pts in series.values() for t, _ in pts]
    vs = [v for pts in series.values() for _, v in pts]
    t0, t1 = min(ts), max(ts)
    lo, hi = min(0.0, min(vs)), max(vs) * 1.1 or 1.0
    t1 = t1 if t1 > t0 else t0 + 1
    w, h, ml, mb = 640, 200, 76, 30

    def sx(t: float) -> float:
        return ml + (w - ml - 140) * (t - t0) / (t1 - t0)

    def sy(v: float) -> float:
        return (h - mb) - (h - mb - 10) * (v - lo) / (hi - lo)

    out = [f'<svg width="{w}" height="{h}" role="img" aria-label="{esc(ylabel)}">']
    out += _axes(
        (w, h, ml, mb, w - 140),
        (sx, sy),
        ((lo, (lo + hi) / 2, hi), (t0, (t0 + t1) / 2, t1)),
        f"time (s); {esc(ylabel)}",
    )
    for i, (label, pts) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        line = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.2"/>')
        out.append(
            f'<text x="{w - 135}" y="{20 + 14 * i}" style="fill:{colour}">{esc(label)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
