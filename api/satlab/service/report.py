"""The experiment report: one self-contained HTML file to hand on.

`satlab report EXPERIMENT`, GET /api/experiments/{id}/report and the experiment page's Report
button all give this document: the scenario (its link and link budget, configurations, and the
verbatim YAML), the comparison of every configuration with the baseline (mean and 95 % confidence
interval per sweep point, ratios with Fieller intervals), the expectations' verdicts, the link and
the senders over time in one run of each configuration, and the runs with their states. Everything
comes from the database; charts are inline SVG (satlab.htmlkit), nothing is fetched to open it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab import __version__, linkbudget, linkmodel
from satlab.expectations import point_label
from satlab.htmlkit import (
    bars_svg,
    esc,
    fmt,
    page,
    sweep_series,
    sweep_svg,
    timeseries_svg,
)
from satlab.service import comparisons, results
from satlab.service.models import Experiment, Run, ScenarioRevision, Series

# The comparison's metrics in the report, with the scale and unit they are shown in.
METRICS = (
    ("goodput_bps", 1e-6, " Mbit/s"),
    ("total_goodput_bps", 1e-6, " Mbit/s"),
    ("completion_s", 1.0, " s"),
    ("retransmissions", 1.0, ""),
    ("jain_fairness", 1.0, ""),
)
# Link telemetry plotted per run (series link.<direction>.<field>), with the axis label.
LINK_PLOTS = (
    ("attenuation_db", "attenuation (dB)"),
    ("esn0_db", "Es/N0 (dB)"),
    ("modcod", "MODCOD id"),
    ("useful_rate_bps", "useful rate (bit/s)"),
    ("queue_packets", "queue (packets)"),
)
BUCKETS = 200  # samples per plotted series: enough for a page, small for the file
VERDICT_COLOURS = {
    "holds": "#1a7f37",
    "direction": "#b08800",
    "fails": "#cf222e",
    "no-data": "#6e7781",
}


def _scaled(est: dict[str, Any], scale: float) -> tuple[float | None, float | None]:
    mean, hw = est.get("mean"), est.get("half_width")
    return (
        None if mean is None else float(mean) * scale,
        None if hw is None else float(hw) * scale,
    )


def _estimate(est: dict[str, Any], scale: float, unit: str) -> str:
    mean, hw = _scaled(est, scale)
    if mean is None:
        return "-"
    return f"{fmt(mean)}{' ± ' + fmt(hw) if hw else ''}{unit} (n {est.get('n', 0)})"


def _ratio(m: dict[str, Any]) -> str:
    r = m.get("ratio")
    if r is None:
        return "-"
    lo, hi = m.get("low"), m.get("high")
    return f"{fmt(r)} [{fmt(lo)}, {fmt(hi)}]" if lo is not None else fmt(r)


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _hops(d: dict[str, Any], field: str) -> str:
    """A direction's per-hop setting: `uplink / downlink` values (hops left out: their defaults)."""
    vals = [
        f"{hop}: {(d.get(hop) or {}).get(field)}"
        for hop in ("uplink", "downlink")
        if (d.get(hop) or {}).get(field) is not None
    ]
    return ", ".join(vals) or "default"


def _fade(d: dict[str, Any]) -> str:
    fades = []
    for hop in ("uplink", "downlink"):
        a = (d.get(hop) or {}).get("attenuation") or {}
        if a:
            fades.append(f"{hop}: {a.get('file') or a.get('type')}")
    return ", ".join(fades) or "none"


def _link_section(spec: dict[str, Any]) -> str:
    """One row per direction; the kind's default as the emulator applies it (emulator/CONFIG.md)."""
    link = spec.get("link") or {}
    rows = []
    for direction, default_kind in (("forward", "dvbs2"), ("return", "rcs2")):
        d = link.get(direction) or {}
        kind = d.get("kind") or default_kind
        rate = (
            f"{fmt(d.get('rate_bps'))} bit/s"
            if kind == "fixed"
            else f"{fmt(d.get('symbol_rate_baud'))} Bd"
        )
        rows.append(
            [
                esc(direction),
                esc(kind),
                esc(rate),
                esc(d.get("delay_ms", "geometry or file")),
                esc(_hops(d, "clear_sky_db") if kind != "fixed" else "-"),
                esc(_fade(d) if kind != "fixed" else "-"),
                esc((d.get("bit_errors") or {}).get("ber", "-")),
            ]
        )
    return _table(
        ["direction", "kind", "rate", "delay (ms)", "clear-sky C/N (dB)", "fade", "BER"], rows
    )


def _budget_section(spec: dict[str, Any]) -> str:
    """The scenario's link budget (satlab.linkbudget) as the table `satlab budget` prints."""
    if not spec.get("link_budget"):
        return '<p class="muted">no link_budget section: the link gives each hop\'s C/N</p>'
    try:
        budget = linkbudget.LinkBudget.model_validate(spec["link_budget"])
        t = linkbudget.table(budget, spec.get("link") or {})
    except (ValueError, KeyError) as exc:
        return f'<p class="muted">the link budget cannot be computed: {esc(exc)}</p>'
    rows = [
        [esc(h["direction"]), esc(h["hop"]), esc(h["station"])]
        + [
            esc(fmt(h[k]))
            for k in (
                "frequency_ghz",
                "elevation_deg",
                "slant_range_km",
                "eirp_dbw",
                "free_space_loss_db",
                "gas_db",
                "other_losses_db",
                "g_over_t_db_per_k",
                "bandwidth_db_hz",
                "clear_sky_db",
                "rain_db",
                "availability_db",
            )
        ]
        for h in t["hops"]
    ]
    head = ["direction", "hop", "station", "f (GHz)", "elevation (°)", "slant range (km)"]
    head += ["EIRP (dBW)", "free space (dB)", "gases (dB)", "other (dB)", "G/T (dB/K)"]
    head += ["bandwidth (dBHz)", "clear-sky C/N (dB)", "rain (dB)"]
    head += [f"C/N at {t['availability_pct']} % (dB)"]
    total = "".join(
        f"<li>{esc(d['direction'])}: Es/N0 {fmt(d['clear_sky_esn0_db'])} dB clear sky, "
        f"{fmt(d['availability_esn0_db'])} dB at {t['availability_pct']} % of the time</li>"
        for d in t["directions"]
    )
    return _table(head, rows) + f"<ul>{total}</ul>"


def _clear_sky_modcod(direction: str, d: dict[str, Any], up: float, down: float) -> tuple[str, str]:
    """(MODCOD, useful rate) the ACM rule picks at clear sky on a DVB-S2 direction `d` of a
    run's link, as the link model computes it (satlab.linkmodel: the emulator's own arithmetic);
    the other cases are named instead."""
    acm = d.get("acm") or {}
    if d.get("modcod_table"):
        return "its own table (modcod_table)", "-"
    if acm.get("mode", "acm") != "acm":
        return f"{acm.get('mode')} (set, not chosen)", "-"
    table = d.get("modcod_set") or "dvbs2"
    request = {
        "trace": "0 0\n",  # no fade: the clear sky
        "symbol_rate_baud": float(
            d.get("symbol_rate_baud") or linkbudget.DEFAULT_SYMBOL_RATE[direction]
        ),
        "clear_sky_up_db": up,
        "clear_sky_down_db": down,
        "margin_db": float(acm.get("margin_db") or 0.0),
        "pilots": bool(d.get("pilots", True)),
        "table": table,
    }
    try:
        names = {m["id"]: m["name"] for m in linkmodel.modcods(table)}
        tick = linkmodel.preview(request)
    except (linkmodel.LinkModelError, linkmodel.LinkModelUnavailable) as err:
        return f"- (the link model: {err})", "-"
    mid = tick["modcod"][0]
    return f"{mid} {names.get(mid, '')}".strip(), f"{fmt(tick['rate_bps'][0] / 1e6)} Mbit/s"


def _applied_budget(exp: Experiment, swept: list[str]) -> str:
    """What the emulator received where the link budget filled clear_sky_db: per sweep point
    (a swept budget field changes it), each budgeted hop's C/N from the run documents
    (Run.spec.link, the emulator's configuration), the direction's clear-sky Es/N0 (the two hops
    in cascade, as the emulator combines them) and the MODCOD its ACM rule picks then."""
    budget = exp.scenario_spec.get("link_budget") or {}
    directions = [d for d in ("forward", "return") if budget.get(d)]
    points: dict[str, Run] = {}
    for r in exp.runs:
        points.setdefault(json.dumps(r.sweep_value), r)
    if not directions or not points:
        return ""
    rows = []
    for r in points.values():
        link = (r.spec or {}).get("link") or {}
        label = point_label(swept, r.sweep_value) if swept else "all runs"
        for direction in directions:
            d = link.get(direction) or {}
            up = (d.get("uplink") or {}).get("clear_sky_db")
            down = (d.get("downlink") or {}).get("clear_sky_db")
            if up is None or down is None:
                continue
            kind = d.get("kind") or ("dvbs2" if direction == "forward" else "rcs2")
            modcod, rate = (
                _clear_sky_modcod(direction, d, up, down)
                if kind == "dvbs2"
                else ("RCS2 waveform table (not computed here)", "-")
            )
            rows.append(
                [esc(label), esc(direction), esc(fmt(up)), esc(fmt(down))]
                + [esc(fmt(linkbudget.combine_db(up, down))), esc(modcod), esc(rate)]
            )
    head = ["sweep point", "direction", "uplink C/N (dB)", "downlink C/N (dB)"]
    head += ["clear-sky Es/N0 (dB)", "clear-sky MODCOD (ACM)", "useful rate"]
    return (
        "<h3>As the emulator received it</h3>"
        '<p class="note">Each hop\'s clear-sky C/N the budget gave the runs (from the stored run '
        "documents), the direction's Es/N0 (the hops in cascade) and the MODCOD the ACM rule "
        "picks at clear sky with the link's margin (the link model's arithmetic).</p>"
        + _table(head, rows)
    )


def _configurations(spec: dict[str, Any]) -> str:
    rows = []
    for c in spec.get("configurations") or []:
        parts = {k: v for k, v in c.items() if k not in ("name", "description") and v}
        rows.append(
            [
                f"<b>{esc(c['name'])}</b>",
                esc(c.get("description", "")),
                f'<span class="note">{esc(json.dumps(parts, sort_keys=True))}</span>',
            ]
        )
    return _table(["configuration", "description", "settings"], rows)


def _comparison(rows: list[dict[str, Any]], baseline: str, swept: list[str]) -> str:
    if not rows:
        return '<p class="muted">no runs</p>'
    cmp = comparisons.compare(rows, baseline, [m for m, _, _ in METRICS])
    out = []
    for point in cmp["points"]:
        if swept:
            out.append(f"<h3>{esc(point_label(swept, point['sweep_value']))}</h3>")
        table = []
        for entry in point["configurations"]:
            m = entry["metrics"]
            table.append(
                [f"<b>{esc(entry['configuration'])}</b>", esc(entry["succeeded"])]
                + [esc(_estimate(m[name], scale, unit)) for name, scale, unit in METRICS[:4]]
                + [esc(_ratio(m["goodput_bps"]))]
            )
        out.append(
            _table(
                ["configuration", "runs ok"]
                + [name for name, _, _ in METRICS[:4]]
                + [f"goodput / {baseline} [95% CI]"],
                table,
            )
        )
    if swept:
        for plot in sweep_series(rows, ["goodput_bps", "retransmissions"]):
            out.append(f"<p>{esc(plot['metric'])}</p>{sweep_svg(plot, swept[0])}")
    else:
        bars = [(r["configuration"], *_scaled(r["metrics"]["goodput_bps"], 1e-6)) for r in rows]
        out.append(f"<p>goodput (Mbit/s), 95 % CI</p>{bars_svg(bars, ' Mbit/s')}")
    return "".join(out)


def _expectations(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    verdicts = comparisons.verdicts(rows, spec)
    if not verdicts:
        return '<p class="muted">the scenario states no expectations</p>'
    table = []
    for v in verdicts:
        colour = VERDICT_COLOURS.get(v["verdict"], "#6e7781")
        source = v.get("source") or {}
        table.append(
            [
                f"<b>{esc(v['id'])}</b><br>{esc(v.get('claim'))}",
                esc(", ".join(str(x) for x in source.values())),
                esc(v["measure"]) + (f" at {esc(v['at'])}" if v.get("at") else ""),
                f"[{', '.join(fmt(b) for b in v['band'])}]",
                esc(v["note"]),
                f'<span class="v" style="background:{colour}">{esc(v["verdict"])}</span>',
            ]
        )
    return _table(["claim", "source", "measure", "band", "measured", "verdict"], table)


def _series(session: Session, run_id: int, name: str) -> list[tuple[float, float]]:
    d = results.downsample(session, run_id, name, BUCKETS)
    return [((b["t0"] + b["t1"]) / 2, b["mean"]) for b in d["buckets"]]


def _over_time(session: Session, exp: Experiment) -> str:
    """The link and each configuration's senders in the first succeeded run of each
    configuration (at the first sweep point that has one)."""
    chosen: dict[str, Run] = {}
    for r in exp.runs:
        if r.state == "succeeded" and r.configuration not in chosen:
            chosen[r.configuration] = r
    if not chosen:
        return '<p class="muted">no succeeded run yet</p>'
    names = {
        r.id: set(session.scalars(select(Series.name).where(Series.run_id == r.id)))
        for r in chosen.values()
    }
    out = []
    first_run = next(iter(chosen.values()))
    at = "" if first_run.sweep_value is None else f", sweep value {first_run.sweep_value}"
    out.append(
        f'<p class="note">link: run {first_run.id} ({esc(first_run.configuration)}{esc(at)}, '
        f"seed {first_run.seed})</p>"
    )
    for field, label in LINK_PLOTS:
        plotted = {
            name.split(".")[1]: _series(session, first_run.id, name)
            for name in sorted(names[first_run.id])
            if name.startswith("link.") and name.endswith("." + field)
        }
        if plotted:
            out.append(timeseries_svg(plotted, label))
    rates: dict[str, list[tuple[float, float]]] = {}
    for cfg, r in chosen.items():
        flows = sorted(n for n in names[r.id] if n.startswith("tcp.") and n.endswith(".cwnd"))
        if flows:  # the first sender connection of the run
            rates[f"{cfg} (run {r.id})"] = _series(session, r.id, flows[0])
    if rates:
        out.append(timeseries_svg(rates, "first connection's cwnd (packets)"))
    return "".join(out)


def _runs(exp: Experiment) -> str:
    rows = [
        [
            esc(r.id),
            esc(r.configuration),
            esc(r.sweep_value),
            esc(r.repetition),
            esc(r.seed),
            esc(r.state),
            esc(fmt((r.summary or {}).get("goodput_bps"))),
            f'<span class="note">{esc(r.error)}</span>',
        ]
        for r in exp.runs
    ]
    return _table(
        [
            "run",
            "configuration",
            "sweep value",
            "rep.",
            "seed",
            "state",
            "goodput (bit/s)",
            "error",
        ],
        rows,
    )


def render(session: Session, exp: Experiment) -> str:
    """The report of one experiment as an HTML document."""
    spec = exp.scenario_spec
    revision = session.get(ScenarioRevision, exp.revision_id)
    rows = results.aggregate(session, exp)
    baseline = exp.matrix["configurations"][0]
    sweep = spec.get("sweep")
    swept = [d["path"] for d in (sweep if isinstance(sweep, list) else [sweep] if sweep else [])]
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    yaml_text = revision.yaml if revision else ""
    finished = (
        f", finished {esc(exp.finished_at.isoformat(timespec='seconds'))}"
        if exp.finished_at
        else ""
    )
    body = (
        f"<h1>SatLab experiment {exp.id}: {esc(exp.scenario_name)}</h1>"
        f"<p>Scenario {esc(exp.scenario_name)} revision {esc(revision.number if revision else '?')}"
        f", state <b>{esc(exp.state)}</b>, {len(exp.runs)} runs, created "
        f"{esc(exp.created_at.isoformat(timespec='seconds'))}"
        f"{finished}"
        f". Generated {esc(generated)} by SatLab {esc(__version__)}.</p>"
        f"<p>{esc(spec.get('description', ''))}</p>"
        "<h2>Link</h2>"
        f"{_link_section(spec)}"
        "<h2>Link budget</h2>"
        f"{_budget_section(spec)}"
        f"{_applied_budget(exp, swept)}"
        "<h2>Configurations</h2>"
        f"{_configurations(spec)}"
        f"<h2>Comparison with {esc(baseline)}</h2>"
        '<p class="note">Mean ± the 95 % confidence half-width over the repetitions (Student t); '
        "the goodput ratio's interval is Fieller's.</p>"
        f"{_comparison(rows, baseline, swept)}"
        "<h2>Expectations</h2>"
        f"{_expectations(rows, spec)}"
        "<h2>Over time</h2>"
        f"{_over_time(session, exp)}"
        "<h2>Runs</h2>"
        f"{_runs(exp)}"
        "<h2>Scenario</h2>"
        f"<details><summary>the scenario as submitted (YAML)</summary><pre>{esc(yaml_text)}</pre>"
        "</details>"
    )
    return page(f"SatLab experiment {exp.id}: {exp.scenario_name}", body)
