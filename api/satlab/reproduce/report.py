"""The reproduction report: one document for a commit, assembled from its parts.

A *part* is one reproduction scenario run once for the commit (an experiment on the service, or a
results directory of a local run): its aggregate rows (mean and 95 % CI per configuration and
sweep point, as service/results.py makes them) and the verdicts of its expectations
(satlab.expectations). `assemble` makes report.json's content: every claim with its source,
measure, band, measured mean and CI, verdict and Linux note, where it was measured (scenario,
seeds, experiment or results directory, versions), the summary counts, and per part the sweep
series to plot, with the PFTK model beside the baseline NewReno goodput-vs-BER curves
(reproduce/pftk.py). `render_html` makes the self-contained report.html (inline CSS and SVG,
nothing fetched), `render_markdown` docs/reproductions.md. Nothing here measures: every number
comes from the parts.
"""

from __future__ import annotations

import html
import math
import re
from datetime import UTC, datetime
from typing import Any

from satlab import __version__
from satlab.reproduce import pftk
from satlab.reproduce.parts import sweep_paths

SCHEMA = "satlab.reproduction/1"
VERDICTS = ("holds", "direction", "fails", "no-data")
VERDICT_LABELS = {
    "holds": "holds",
    "direction": "holds in direction only",
    "fails": "does not hold",
    "no-data": "no data",
}
COLOURS = {"holds": "#1a7f37", "direction": "#b08800", "fails": "#cf222e", "no-data": "#6e7781"}
MEASURE_METRIC = re.compile(r"^\s*[a-z_]+\s*\(\s*([a-z_]+)")
NEWRENO = ("sl_newreno", "reno")
# PFTK's inputs that the scenario does not give: b packets per ACK (delayed ACKs), and the first
# retransmission timeout as Linux sets it on a steady path (srtt + the 200 ms minimum).
PFTK_B = 2
PFTK_RTO_EXTRA_S = 0.2


def count(verdicts: list[str]) -> dict[str, int]:
    """How many claims hold, hold in direction only, do not hold, have no data."""
    out = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        if v not in out:
            raise ValueError(f"verdict: {v!r} is not one of {', '.join(VERDICTS)}")
        out[v] += 1
    out["total"] = len(verdicts)
    return out


def _first(value: Any) -> Any:
    """A sweep point's value on the plot's x axis: the first dimension of a two-dimensional one."""
    return value[0] if isinstance(value, list) and value else value


def _series_key(value: Any) -> str:
    """Which series a point of a two-dimensional sweep belongs to: its second dimension."""
    return f" ({value[1]})" if isinstance(value, list) and len(value) > 1 else ""


def sweep_series(part: dict[str, Any], metrics: list[str]) -> list[dict[str, Any]]:
    """Per metric: one series per configuration (and second sweep value), mean and CI half-width
    against the (first) sweep value."""
    out = []
    for m in metrics:
        series: dict[str, list[dict[str, Any]]] = {}
        for row in part["rows"]:
            x = _first(row["sweep_value"])
            est = row["metrics"].get(m) or {}
            label = row["configuration"] + _series_key(row["sweep_value"])
            series.setdefault(label, []).append(
                {"x": x, "mean": est.get("mean"), "half_width": est.get("half_width")}
            )
        out.append({"metric": m, "series": series})
    return out


def pftk_curve(part: dict[str, Any]) -> dict[str, Any] | None:
    """PFTK beside the measured NewReno goodput when the (first) sweep is the forward BER."""
    spec = part["spec"]
    paths = sweep_paths(spec)
    if not paths or not paths[0].endswith("forward.bit_errors.ber"):
        return None
    cfg = next(
        (
            c["name"]
            for c in spec.get("configurations", [])
            if (c.get("transport") or {}).get("congestion_control") in NEWRENO
        ),
        None,
    )
    link = spec.get("link") or {}
    fwd, ret = link.get("forward") or {}, link.get("return") or {}
    if cfg is None or "delay_ms" not in fwd or "delay_ms" not in ret:
        return None  # no NewReno baseline, or a delay from geometry or a file: no fixed RTT
    hosts = spec.get("hosts") or {}
    settings = hosts.get("settings") or {}
    mtu = int(hosts.get("mtu_bytes", 1500))
    mss = mtu - 40 - (12 if settings.get("timestamps", True) else 0)
    window = settings.get("window_clamp_bytes") or settings.get("rmem_max_bytes", 64 << 20)
    rtt = (float(fwd["delay_ms"]) + float(ret["delay_ms"])) / 1000
    assumptions = {
        "rtt_s": rtt,
        "t0_s": rtt + PFTK_RTO_EXTRA_S,
        "wmax_packets": max(1.0, float(window) / mss),
        "mss_bytes": mss,
        "packet_bytes": mtu,
        "b": PFTK_B,
    }
    points = []
    for x in sorted({_first(r["sweep_value"]) for r in part["rows"]}, key=float):
        p = pftk.loss_from_ber(float(x), mtu)
        bps = (
            pftk.goodput_bps(
                p,
                rtt,
                assumptions["t0_s"],
                assumptions["wmax_packets"],
                mss,
                PFTK_B,
            )
            if 0 < p < 1
            else None
        )
        points.append({"x": x, "loss_rate": p, "goodput_bps": bps})
    return {"configuration": cfg, "assumptions": assumptions, "points": points}


def _metrics_of(verdicts: list[dict[str, Any]]) -> list[str]:
    named = [MEASURE_METRIC.match(v.get("measure") or "") for v in verdicts]
    found = [m.group(1) for m in named if m]
    return list(dict.fromkeys(["goodput_bps", *found]))


def assemble(parts: list[dict[str, Any]], commit: str) -> dict[str, Any]:
    """report.json's content from the parts of one commit (see the module's docstring).

    A part: scenario, paper, subset, commit, at (ISO time), experiment_id or results_dir, state,
    seeds, kernel, spec (the scenario as run), rows (aggregate rows), verdicts."""
    claims = []
    out_parts = []
    for part in sorted(parts, key=lambda p: (p["paper"], p["scenario"])):
        versions = {
            "commit": part["commit"],
            "kernel": part.get("kernel"),
            "satlab": part.get("satlab", __version__),
        }
        for v in part["verdicts"]:
            source = v.get("source") or {}
            ci = v.get("ci")
            claims.append(
                {
                    "id": v["id"],
                    "paper": part["paper"],
                    "source": source.get("paper"),
                    "section": source.get("section"),
                    "figure": source.get("figure"),
                    "statement": v.get("claim"),
                    "measure": v.get("measure"),
                    "point": v.get("at"),
                    "band": v.get("band"),
                    "direction": v.get("direction"),
                    "neutral": v.get("neutral"),
                    "mean": v.get("mean"),
                    "ci": list(ci) if ci is not None else None,
                    "n": v.get("n"),
                    "verdict": v["verdict"],
                    "note": v.get("note"),
                    "linux_note": v.get("linux_note"),
                    "scenario": part["scenario"],
                    "subset": part["subset"],
                    "seeds": part["seeds"],
                    "experiment_id": part.get("experiment_id"),
                    "results_dir": part.get("results_dir"),
                    "versions": versions,
                }
            )
        out_parts.append(
            {
                "scenario": part["scenario"],
                "paper": part["paper"],
                "subset": part["subset"],
                "commit": part["commit"],
                "at": part["at"],
                "state": part["state"],
                "experiment_id": part.get("experiment_id"),
                "results_dir": part.get("results_dir"),
                "seeds": part["seeds"],
                "versions": versions,
                "sweep_paths": sweep_paths(part["spec"]),
                "plots": sweep_series(part, _metrics_of(part["verdicts"])),
                "pftk": pftk_curve(part),
            }
        )
    return {
        "schema": SCHEMA,
        "commit": commit,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "summary": count([c["verdict"] for c in claims]),
        "claims": claims,
        "parts": out_parts,
    }


# -- HTML --

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #d0d7de;padding:4px 6px;text-align:left;vertical-align:top}
.v{color:#fff;border-radius:3px;padding:1px 6px;white-space:nowrap}.muted{color:#6e7781}
.counts span{margin-right:1.5em;font-size:1.1em}svg text{font-size:11px;fill:#1f2328}
.note{font-size:12px;color:#57606a}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{float(x):.4g}"


def point_text(point: dict[str, Any] | None) -> str:
    """`ber=1.56e-05, sack=true`: a claim's sweep point by the last key of each path."""
    return ", ".join(
        f"{k.rsplit('.', 1)[-1]}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in (point or {}).items()
    )


def _measured(c: dict[str, Any]) -> str:
    ci = c.get("ci")
    tail = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else ""
    return f"{_fmt(c.get('mean'))}{tail}"


def claim_svg(c: dict[str, Any], width: int = 260, height: int = 34) -> str:
    """The measured mean and its CI (dot and whisker) against the band (shaded) and neutral."""
    band = c.get("band") or []
    ci = c.get("ci") or []
    vals = [
        float(x)
        for x in [*band, *ci, c.get("mean"), c.get("neutral")]
        if x is not None and math.isfinite(float(x))
    ]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.1 or abs(lo) * 0.1 or 1.0
    lo, hi = lo - pad, hi + pad

    def sx(v: float) -> float:
        return 6 + (width - 12) * (v - lo) / (hi - lo)

    y = height / 2
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{_e(c["id"])}">']
    if len(band) == 2:
        x0, x1 = sx(float(band[0])), sx(float(band[1]))
        parts.append(
            f'<rect x="{x0:.1f}" y="4" width="{max(1.0, x1 - x0):.1f}" height="{height - 8}" '
            'fill="#d1f0d9" stroke="#1a7f37" stroke-width="0.5"/>'
        )
    if c.get("neutral") is not None:
        xn = sx(float(c["neutral"]))
        parts.append(
            f'<line x1="{xn:.1f}" x2="{xn:.1f}" y1="2" y2="{height - 2}" stroke="#57606a" '
            'stroke-dasharray="3,2"/>'
        )
    colour = COLOURS.get(c["verdict"], "#6e7781")
    if len(ci) == 2 and ci[0] is not None and ci[1] is not None:
        parts.append(
            f'<line x1="{sx(float(ci[0])):.1f}" x2="{sx(float(ci[1])):.1f}" y1="{y}" y2="{y}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
    if c.get("mean") is not None and math.isfinite(float(c["mean"])):
        parts.append(f'<circle cx="{sx(float(c["mean"])):.1f}" cy="{y}" r="4" fill="{colour}"/>')
    parts.append(f'<text x="2" y="{height - 1}">{_fmt(lo)}</text>')
    parts.append(f'<text x="{width - 2}" y="{height - 1}" text-anchor="end">{_fmt(hi)}</text>')
    parts.append("</svg>")
    return "".join(parts)


PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#bf3989", "#57606a")


def sweep_svg(plot: dict[str, Any], pftk_points: list[dict[str, Any]] | None, xlabel: str) -> str:
    """Metric against the sweep value, one polyline (with CI whiskers) per series; the PFTK
    model dashed. A log x axis when the values span two decades or more."""
    series = {
        k: [p for p in pts if p["mean"] is not None and isinstance(p["x"], int | float)]
        for k, pts in plot["series"].items()
    }
    model = [p for p in pftk_points or [] if p["goodput_bps"] is not None]
    xs = [float(p["x"]) for pts in series.values() for p in pts] + [float(p["x"]) for p in model]
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

    out = [f'<svg width="{w}" height="{h}" role="img" aria-label="{_e(plot["metric"])}">']
    out.append(f'<line x1="{ml}" x2="{w - 130}" y1="{h - mb}" y2="{h - mb}" stroke="#57606a"/>')
    out.append(f'<line x1="{ml}" x2="{ml}" y1="10" y2="{h - mb}" stroke="#57606a"/>')
    for v in (ymin, (ymin + ymax) / 2, ymax):
        out.append(f'<text x="{ml - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    for v in sorted(set(xs)):
        out.append(f'<text x="{sx(v):.1f}" y="{h - mb + 14}" text-anchor="middle">{_fmt(v)}</text>')
    out.append(f'<text x="{ml}" y="{h - 2}">{_e(xlabel)}{" (log)" if logx else ""}</text>')
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
            f"{_e(label)}</text>"
        )
    if model:
        pts = sorted(model, key=lambda p: float(p["x"]))
        line = " ".join(f"{sx(float(p['x'])):.1f},{sy(float(p['goodput_bps'])):.1f}" for p in pts)
        out.append(
            f'<polyline points="{line}" fill="none" stroke="#24292f" stroke-dasharray="5,3"/>'
        )
        for p in pts:  # a cross at each point: a single point draws no line
            cx, cy = sx(float(p["x"])), sy(float(p["goodput_bps"]))
            out.append(f'<path d="M{cx - 4:.1f},{cy - 4:.1f}l8,8m0,-8l-8,8" stroke="#24292f"/>')
        out.append(f'<text x="{w - 125}" y="{20 + 14 * len(series)}">PFTK (dashed, x)</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(report: dict[str, Any]) -> str:
    """report.html: one file, inline CSS and SVG, no script, nothing loaded from a network."""
    s = report["summary"]
    rows = []
    for c in report["claims"]:
        where = (
            f"experiment {c['experiment_id']}"
            if c.get("experiment_id") is not None
            else _e(c.get("results_dir"))
        )
        src = ", ".join(_e(x) for x in (c["source"], c["section"], c["figure"]) if x)
        band = c.get("band") or []
        rows.append(
            "<tr>"
            f"<td><b>{_e(c['id'])}</b><br>{_e(c['statement'])}<br>"
            f'<span class="note">{_e(c["measure"])}'
            f"{' at ' + _e(point_text(c['point'])) if c.get('point') else ''}</span></td>"
            f"<td>{src}</td>"
            f"<td>{_e(_measured(c))}<br><span class='note'>n = {_e(c.get('n'))}</span></td>"
            f"<td>{_e('[' + ', '.join(_fmt(b) for b in band) + ']' if band else '-')}</td>"
            f"<td>{claim_svg(c)}</td>"
            f'<td><span class="v" style="background:{COLOURS[c["verdict"]]}">'
            f"{_e(VERDICT_LABELS[c['verdict']])}</span></td>"
            f'<td class="note">{_e(c["scenario"])} ({_e(c["subset"])}), {where}, seeds '
            f"{_e(', '.join(str(x) for x in c['seeds']))}</td>"
            "</tr>"
        )
    notes = [
        f"<li><b>{_e(c['id'])}</b>: {_e(c['linux_note'])}</li>"
        for c in report["claims"]
        if c.get("linux_note")
    ]
    sweeps = []
    for p in report["parts"]:
        if not p["sweep_paths"]:
            continue
        xlabel = " / ".join(p["sweep_paths"])
        sweeps.append(f"<h3>{_e(p['scenario'])}</h3>")
        for plot in p["plots"]:
            model = p["pftk"]["points"] if p["pftk"] and plot["metric"] == "goodput_bps" else None
            sweeps.append(f"<p>{_e(plot['metric'])}</p>{sweep_svg(plot, model, xlabel)}")
        if p["pftk"]:
            a = p["pftk"]["assumptions"]
            sweeps.append(
                f'<p class="note">PFTK (Padhye, Firoiu, Towsley, Kurose, SIGCOMM 1998, full '
                f"model) beside {_e(p['pftk']['configuration'])}: RTT {a['rtt_s']:.3f} s, T0 "
                f"{a['t0_s']:.3f} s, Wmax {a['wmax_packets']:.1f} packets, MSS "
                f"{a['mss_bytes']} bytes, b = {a['b']}, loss rate = 1 - (1 - BER)^(8 x "
                f"{a['packet_bytes']}).</p>"
            )
    parts = "".join(
        f"<li>{_e(p['scenario'])} ({_e(p['paper'])}, {_e(p['subset'])}): {_e(p['state'])}, "
        f"commit {_e(p['commit'])}, {_e(p['at'])}, kernel {_e(p['versions']['kernel'])}, "
        f"satlab {_e(p['versions']['satlab'])}</li>"
        for p in report["parts"]
    )
    counts = "".join(
        f'<span style="color:{COLOURS[v]}">{_e(VERDICT_LABELS[v])}: <b>{s[v]}</b></span>'
        for v in VERDICTS
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>SatLab reproduction report {_e(report['commit'])}</title>"
        f"<style>{CSS}</style></head><body>"
        f"<h1>SatLab reproduction report</h1>"
        f"<p>Commit {_e(report['commit'])}, generated {_e(report['generated_at'])} by "
        "<code>satlab reproduce</code>.</p>"
        f'<p class="counts">{counts}<span>claims: <b>{s["total"]}</b></span></p>'
        "<h2>Claims</h2><table><tr><th>claim</th><th>source</th><th>measured [95% CI]</th>"
        "<th>band</th><th>measured vs band (shaded) and neutral (dashed)</th><th>verdict</th>"
        f"<th>where</th></tr>{''.join(rows)}</table>"
        f"<h2>Sweeps</h2>{''.join(sweeps) or '<p class=muted>no swept scenario</p>'}"
        "<h2>Where Linux differs from the papers' simulators</h2>"
        f"<ul>{''.join(notes) or '<li class=muted>no notes</li>'}</ul>"
        f"<h2>Parts</h2><ul>{parts}</ul></body></html>\n"
    )


# -- docs/reproductions.md --


def render_markdown(report: dict[str, Any]) -> str:
    s = report["summary"]

    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = [
        "# Reproductions of the source papers",
        "",
        f"Commit `{report['commit']}`, generated {report['generated_at']}.",
        "",
        "Generated by `satlab reproduce` from its report.json (`satlab reproduce --subset full "
        "--local` as root, or `--service URL`; `make reproduce`; `--report-only` re-renders from "
        "the stored results). Do not edit by hand: run it again.",
        "",
        " ".join(f"{VERDICT_LABELS[v]}: {s[v]}." for v in VERDICTS) + f" Claims: {s['total']}.",
        "",
        "Subsets run: "
        + ", ".join(sorted({p["subset"] for p in report["parts"]}))
        + " (ci: each scenario shortened by its `reproduction.ci`; full: as written).",
        "",
        "| claim | source | measured [95% CI] | band | verdict |",
        "|---|---|---|---|---|",
    ]
    for c in report["claims"]:
        src = ", ".join(str(x) for x in (c["source"], c["section"], c["figure"]) if x)
        band = c.get("band") or []
        at = f" (at {point_text(c['point'])})" if c.get("point") else ""
        lines.append(
            f"| {cell(c['id'])}: {cell(c['statement'])}{cell(at)} | {cell(src)} "
            f"| {cell(_measured(c))} (n {cell(c.get('n'))}) "
            f"| {cell('[' + ', '.join(_fmt(b) for b in band) + ']')} "
            f"| {VERDICT_LABELS[c['verdict']]} |"
        )
    lines += ["", "Parts (scenario, subset, state, commit, time):", ""]
    lines += [
        f"- {p['scenario']} ({p['subset']}): {p['state']}, {p['commit']}, {p['at']}"
        for p in report["parts"]
    ]
    return "\n".join(lines) + "\n"
