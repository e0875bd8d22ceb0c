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

import math
import re
from datetime import UTC, datetime
from typing import Any

from satlab import __version__
from satlab.htmlkit import esc, first, fmt, page, sweep_series, sweep_svg
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
    for x in sorted({first(r["sweep_value"]) for r in part["rows"]}, key=float):
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


def _at_once(part: dict[str, Any]) -> str:
    """How the part's runs shared the machine, when they did."""
    jobs = part.get("jobs", 1)
    return f", {jobs} runs at a time" if jobs > 1 else ""


def assemble(parts: list[dict[str, Any]], commit: str) -> dict[str, Any]:
    """report.json's content from the parts of one commit (see the module's docstring).

    A part: scenario, paper, subset, commit, at (ISO time), experiment_id or results_dir, state,
    seeds, kernel, jobs (runs at a time, local parts), spec (the scenario as run), rows (aggregate
    rows), verdicts."""
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
                "jobs": part.get("jobs", 1),
                "versions": versions,
                "sweep_paths": sweep_paths(part["spec"]),
                "plots": sweep_series(part["rows"], _metrics_of(part["verdicts"])),
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


def point_text(point: dict[str, Any] | None) -> str:
    """`ber=1.56e-05, sack=true`: a claim's sweep point by the last key of each path."""
    return ", ".join(
        f"{k.rsplit('.', 1)[-1]}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in (point or {}).items()
    )


def _measured(c: dict[str, Any]) -> str:
    ci = c.get("ci")
    tail = f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""
    return f"{fmt(c.get('mean'))}{tail}"


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
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(c["id"])}">']
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
    parts.append(f'<text x="2" y="{height - 1}">{fmt(lo)}</text>')
    parts.append(f'<text x="{width - 2}" y="{height - 1}" text-anchor="end">{fmt(hi)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: dict[str, Any]) -> str:
    """report.html: one file, inline CSS and SVG, no script, nothing loaded from a network."""
    s = report["summary"]
    rows = []
    for c in report["claims"]:
        where = (
            f"experiment {c['experiment_id']}"
            if c.get("experiment_id") is not None
            else esc(c.get("results_dir"))
        )
        src = ", ".join(esc(x) for x in (c["source"], c["section"], c["figure"]) if x)
        band = c.get("band") or []
        rows.append(
            "<tr>"
            f"<td><b>{esc(c['id'])}</b><br>{esc(c['statement'])}<br>"
            f'<span class="note">{esc(c["measure"])}'
            f"{' at ' + esc(point_text(c['point'])) if c.get('point') else ''}</span></td>"
            f"<td>{src}</td>"
            f"<td>{esc(_measured(c))}<br><span class='note'>n = {esc(c.get('n'))}</span></td>"
            f"<td>{esc('[' + ', '.join(fmt(b) for b in band) + ']' if band else '-')}</td>"
            f"<td>{claim_svg(c)}</td>"
            f'<td><span class="v" style="background:{COLOURS[c["verdict"]]}">'
            f"{esc(VERDICT_LABELS[c['verdict']])}</span></td>"
            f'<td class="note">{esc(c["scenario"])} ({esc(c["subset"])}), {where}, seeds '
            f"{esc(', '.join(str(x) for x in c['seeds']))}</td>"
            "</tr>"
        )
    notes = [
        f"<li><b>{esc(c['id'])}</b>: {esc(c['linux_note'])}</li>"
        for c in report["claims"]
        if c.get("linux_note")
    ]
    sweeps = []
    for p in report["parts"]:
        if not p["sweep_paths"]:
            continue
        xlabel = " / ".join(p["sweep_paths"])
        sweeps.append(f"<h3>{esc(p['scenario'])}</h3>")
        for plot in p["plots"]:
            model = (
                [(float(q["x"]), q["goodput_bps"]) for q in p["pftk"]["points"] if q["goodput_bps"]]
                if p["pftk"] and plot["metric"] == "goodput_bps"
                else None
            )
            svg = sweep_svg(plot, xlabel, model, "PFTK (dashed, x)")
            sweeps.append(f"<p>{esc(plot['metric'])}</p>{svg}")
        if p["pftk"]:
            a = p["pftk"]["assumptions"]
            sweeps.append(
                f'<p class="note">PFTK (Padhye, Firoiu, Towsley, Kurose, SIGCOMM 1998, full '
                f"model) beside {esc(p['pftk']['configuration'])}: RTT {a['rtt_s']:.3f} s, T0 "
                f"{a['t0_s']:.3f} s, Wmax {a['wmax_packets']:.1f} packets, MSS "
                f"{a['mss_bytes']} bytes, b = {a['b']}, loss rate = 1 - (1 - BER)^(8 x "
                f"{a['packet_bytes']}).</p>"
            )
    parts = "".join(
        f"<li>{esc(p['scenario'])} ({esc(p['paper'])}, {esc(p['subset'])}): {esc(p['state'])}, "
        f"commit {esc(p['commit'])}, {esc(p['at'])}, kernel {esc(p['versions']['kernel'])}, "
        f"satlab {esc(p['versions']['satlab'])}{esc(_at_once(p))}</li>"
        for p in report["parts"]
    )
    counts = "".join(
        f'<span style="color:{COLOURS[v]}">{esc(VERDICT_LABELS[v])}: <b>{s[v]}</b></span>'
        for v in VERDICTS
    )
    return page(
        f"SatLab reproduction report {report['commit']}",
        "<h1>SatLab reproduction report</h1>"
        f"<p>Commit {esc(report['commit'])}, generated {esc(report['generated_at'])} by "
        "<code>satlab reproduce</code>.</p>"
        f'<p class="counts">{counts}<span>claims: <b>{s["total"]}</b></span></p>'
        "<h2>Claims</h2><table><tr><th>claim</th><th>source</th><th>measured [95% CI]</th>"
        "<th>band</th><th>measured vs band (shaded) and neutral (dashed)</th><th>verdict</th>"
        f"<th>where</th></tr>{''.join(rows)}</table>"
        f"<h2>Sweeps</h2>{''.join(sweeps) or '<p class=muted>no swept scenario</p>'}"
        "<h2>Where Linux differs from the papers' simulators</h2>"
        f"<ul>{''.join(notes) or '<li class=muted>no notes</li>'}</ul>"
        f"<h2>Parts</h2><ul>{parts}</ul>",
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
            f"| {cell('[' + ', '.join(fmt(b) for b in band) + ']')} "
            f"| {VERDICT_LABELS[c['verdict']]} |"
        )
    lines += ["", "Parts (scenario, subset, state, commit, time):", ""]
    lines += [
        f"- {p['scenario']} ({p['subset']}): {p['state']}, {p['commit']}, {p['at']}{_at_once(p)}"
        for p in report["parts"]
    ]
    return "\n".join(lines) + "\n"
