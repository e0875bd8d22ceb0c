"""satlab reproduce: the PFTK model, selection, report assembly and verdict counting, and the
report's renderings (report.html self-contained, docs/reproductions.md)."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from satlab.reproduce import command, local, pftk, report
from satlab.reproduce.local import rows_of
from satlab.reproduce.parts import seeds, verdicts_for
from satlab.reproduce.selection import SelectionError, load_entries, select

# A reproduction scenario of the agreed format: a BER sweep, NewReno against CUBIC, two claims.
SCENARIO = """\
version: 1
name: {name}
seed: 5
duration_s: 20
repetitions: 3
hosts:
  mtu_bytes: 576
  settings: {{window_clamp_bytes: 10720, timestamps: false}}
link:
  forward:
    delay_ms: 320
    kind: fixed
    rate_bps: 1.0e7
    bit_errors: {{model: uniform, ber: 1.0e-6}}
  return: {{delay_ms: 320, kind: fixed, rate_bps: 1.0e7}}
traffic:
  - {{kind: bulk_tcp, duration_s: 20}}
configurations:
  - {{name: newreno, transport: {{congestion_control: sl_newreno}}}}
  - {{name: cubic, transport: {{congestion_control: cubic}}}}
sweep: {{path: forward.bit_errors.ber, values: [1.0e-6, 1.0e-5]}}
expectations:
  - id: cubic-over-newreno
    claim: "CUBIC's goodput is 1.2-2x NewReno's at BER 1e-5"
    source: {{paper: "ETEN report (BBN TR 8333)", section: "5.1", figure: "Fig. 4"}}
    measure: "ratio(goodput_bps, cubic/newreno)"
    at: {{forward.bit_errors.ber: 1.0e-5}}
    band: [1.2, 2.0]
    direction: ">"
    linux_note: "Linux NewReno has SACK and RACK; ns-2's had neither"
  - id: newreno-goodput
    claim: "NewReno keeps 50-90 kbit/s at BER 1e-6"
    source: {{paper: "ETEN report (BBN TR 8333)", section: "5.1"}}
    measure: "mean(goodput_bps, newreno)"
    at: {{forward.bit_errors.ber: 1.0e-6}}
    band: [50000, 90000]
    direction: ">"
{reproduction}
"""
CI = """\
reproduction:
  paper: {paper}
  ci: {{duration_s: 8, repetitions: 2, sweep_values: {{forward.bit_errors.ber: [1.0e-5]}}}}
"""
NO_CI = "reproduction:\n  paper: {paper}\n"


def write_scenarios(root: Path) -> Path:
    (root / "reproductions").mkdir(parents=True)
    (root / "reproductions" / "a.yaml").write_text(
        SCENARIO.format(name="eten-a", reproduction=CI.format(paper="eten"))
    )
    (root / "reproductions" / "b.yaml").write_text(
        SCENARIO.format(name="yang-b", reproduction=NO_CI.format(paper="yang"))
    )
    (root / "quickstart.yaml").write_text("name: not-a-reproduction\n")
    return root


def run_doc(cfg: str, ber: float, rep: int, goodput: float | None) -> dict[str, Any]:
    """A run document (docs/run-result.md) as far as the report reads it."""
    ok = goodput is not None
    return {
        "configuration": cfg,
        "sweep": {"path": "forward.bit_errors.ber", "value": ber},
        "repetition": rep,
        "seed": 5 + rep,
        "status": "ok" if ok else "failed",
        "inputs": {"versions": {"satlab": "0.1.0", "kernel": "6.1.0-test"}},
        "flows": [{"goodput_bps": goodput, "completion_s": None}] if ok else [],
        "hosts": {"srv1": {"Tcp.RetransSegs": 10}} if ok else {},
    }


# Goodput per (configuration, BER): three repetitions each.
GOODPUT = {
    ("newreno", 1e-6): [70_000.0, 72_000.0, 71_000.0],
    ("cubic", 1e-6): [80_000.0, 79_000.0, 81_000.0],
    ("newreno", 1e-5): [40_000.0, 41_000.0, 39_000.0],
    ("cubic", 1e-5): [60_000.0, 62_000.0, 61_000.0],
}


def docs_of(goodput: dict[tuple[str, float], list[float]]) -> list[dict[str, Any]]:
    return [
        run_doc(cfg, ber, rep, g)
        for (cfg, ber), values in goodput.items()
        for rep, g in enumerate(values)
    ]


def make_part(tmp_path: Path, goodput: dict[tuple[str, float], list[float]]) -> dict[str, Any]:
    entry = load_entries(write_scenarios(tmp_path / "scenarios"))[0]
    spec = entry.scenario("full").model_dump(mode="json")
    rows = rows_of(docs_of(goodput))
    return {
        "scenario": entry.name,
        "paper": entry.paper,
        "subset": "full",
        "commit": "abc123",
        "at": "2026-11-26T12:00:00+00:00",
        "state": "succeeded",
        "experiment_id": 7,
        "results_dir": None,
        "seeds": seeds(spec),
        "kernel": "6.1.0-test",
        "spec": spec,
        "rows": rows,
        "verdicts": verdicts_for(spec, rows),
    }


# -- PFTK --


def test_pftk_full_model_against_values_worked_by_hand() -> None:
    # p = 0.01, b = 2, RTT 0.5 s, T0 1 s, Wmax 1000 (not reached):
    # E[W] = 2/3 + sqrt(8 * 0.99 / 0.06 + 4/9) = 0.66667 + 11.50845 = 12.17512
    # Q = (1 - 0.99^3)(1 + 0.99^3 (1 - 0.99^9.17512)) / (1 - 0.99^12.17512)
    #   = 0.029701 * 1.085474 / 0.115174 = 0.279924;  f(0.01) = 1.010204
    # B = (99 + 12.17512 + 0.279924 / 0.99) / (0.5 (12.17512 + 1) + 0.279924 * 1.010204 / 0.99)
    #   = 111.45787 / 6.873197 = 16.2163 packets/s
    assert pftk.send_rate_pps(0.01, 0.5, 1.0, 1000) == pytest.approx(16.2163, rel=1e-4)
    # Window-limited: p = 1e-4, Wmax 20 (E[W] = 115.5 > 20):
    # Q(20) = 2.9997e-4 * 1.0016981 / 0.0019981 = 0.150382
    # B = (9999 + 20 + 0.150397) / (0.5 (5 + 499.95 + 2) + 0.150382 * 1.0002) = 39.504
    assert pftk.send_rate_pps(1e-4, 0.5, 1.0, 20) == pytest.approx(39.504, rel=1e-4)
    assert pftk.goodput_bps(0.01, 0.5, 1.0, 1000, 536) == pytest.approx(16.2163 * 536 * 8, 1e-4)


def test_pftk_is_monotone_in_loss_and_refuses_bad_input() -> None:
    rates = [pftk.send_rate_pps(p, 0.64, 0.84, 20) for p in (1e-4, 1e-3, 1e-2, 1e-1)]
    assert rates == sorted(rates, reverse=True)
    assert pftk.loss_from_ber(1e-5, 576) == pytest.approx(1 - (1 - 1e-5) ** 4608)
    with pytest.raises(ValueError, match="p: 0"):
        pftk.send_rate_pps(0.0, 0.5, 1.0, 20)


# -- selection --


def test_select_by_paper_claim_and_subset(tmp_path: Path) -> None:
    entries = load_entries(write_scenarios(tmp_path))
    assert [e.name for e in entries] == ["eten-a", "yang-b"]  # quickstart has no reproduction
    assert [e.name for e in select(entries, "ci")] == ["eten-a"]
    assert [e.name for e in select(entries, "full", paper="yang")] == ["yang-b"]
    assert [e.name for e in select(entries, "full", claim="newreno-goodput")] == [
        "eten-a",
        "yang-b",
    ]
    with pytest.raises(SelectionError, match="paper: 'nope' is not one of"):
        select(entries, "full", paper="nope")
    with pytest.raises(SelectionError, match="claim: no reproduction scenario"):
        select(entries, "full", claim="no-such-claim")
    with pytest.raises(SelectionError, match="no reproduction scenario matches"):
        select(entries, "ci", paper="yang")


def test_ci_subset_shrinks_and_service_yaml_renames(tmp_path: Path) -> None:
    entry = load_entries(write_scenarios(tmp_path))[0]
    ci = entry.scenario("ci")
    assert (ci.duration_s, ci.repetitions) == (8, 2)
    assert ci.sweeps()[0].values == [1.0e-5]
    assert [e.id for e in ci.expectations] == ["cubic-over-newreno"]  # 1e-6 is not run
    name, text = entry.service_yaml("ci")
    assert name == "eten-a-ci" and "name: eten-a-ci" in text
    assert entry.service_yaml("full") == ("eten-a", entry.text)


# -- report assembly and verdicts --


def test_report_assembles_claims_with_verdicts_counts_and_pftk(tmp_path: Path) -> None:
    rep = report.assemble([make_part(tmp_path, GOODPUT)], "abc123")
    assert rep["commit"] == "abc123" and rep["schema"] == report.SCHEMA
    by_id = {c["id"]: c for c in rep["claims"]}
    ratio = by_id["cubic-over-newreno"]
    assert ratio["mean"] == pytest.approx(61_000 / 40_000)
    assert ratio["verdict"] == "holds" and ratio["n"] == 3
    assert ratio["ci"][0] < ratio["mean"] < ratio["ci"][1]
    assert ratio["point"] == {"forward.bit_errors.ber": 1.0e-5}
    assert (ratio["source"], ratio["section"], ratio["figure"]) == (
        "ETEN report (BBN TR 8333)",
        "5.1",
        "Fig. 4",
    )
    assert ratio["linux_note"].startswith("Linux NewReno")
    assert ratio["seeds"] == [5, 6, 7] and ratio["experiment_id"] == 7
    assert ratio["versions"] == {"commit": "abc123", "kernel": "6.1.0-test", "satlab": "0.1.0"}
    assert by_id["newreno-goodput"]["verdict"] == "holds"
    assert rep["summary"] == {"holds": 2, "direction": 0, "fails": 0, "no-data": 0, "total": 2}
    part = rep["parts"][0]
    assert part["sweep_paths"] == ["forward.bit_errors.ber"]
    assert part["plots"][0]["metric"] == "goodput_bps"
    assert [p["mean"] for p in part["plots"][0]["series"]["newreno"]] == [71_000.0, 40_000.0]
    model = part["pftk"]
    assert model["configuration"] == "newreno"
    assert model["assumptions"]["rtt_s"] == pytest.approx(0.64)
    assert model["assumptions"]["mss_bytes"] == 536
    assert model["assumptions"]["wmax_packets"] == pytest.approx(20.0)
    p5 = next(p for p in model["points"] if p["x"] == 1.0e-5)
    assert p5["goodput_bps"] == pytest.approx(
        pftk.goodput_bps(pftk.loss_from_ber(1e-5, 576), 0.64, 0.84, 20.0, 536)
    )


def test_verdicts_direction_fails_and_no_data_are_counted(tmp_path: Path) -> None:
    # CUBIC 1.1x NewReno (above neutral, below the band): direction only; NewReno at 1e-6 far
    # below its band but above neutral 0: direction too; then every run of 1e-5 failed: no data.
    direction = dict(GOODPUT)
    direction[("cubic", 1e-5)] = [44_000.0, 44_500.0, 43_500.0]
    direction[("newreno", 1e-6)] = [10_000.0, 11_000.0, 12_000.0]
    rep = report.assemble([make_part(tmp_path / "1", direction)], "c1")
    assert rep["summary"] == {"holds": 0, "direction": 2, "fails": 0, "no-data": 0, "total": 2}
    missing = {k: v for k, v in GOODPUT.items() if k[1] == 1e-6}
    missing |= {("newreno", 1e-5): [None] * 3, ("cubic", 1e-5): [None] * 3}  # type: ignore[list-item]
    rep = report.assemble([make_part(tmp_path / "2", missing)], "c2")
    assert rep["summary"]["no-data"] == 1 and rep["summary"]["holds"] == 1
    worse = dict(GOODPUT)
    worse[("cubic", 1e-5)] = [20_000.0, 21_000.0, 19_000.0]
    rep = report.assemble([make_part(tmp_path / "3", worse)], "c3")
    assert {c["id"]: c["verdict"] for c in rep["claims"]}["cubic-over-newreno"] == "fails"


def test_count_refuses_an_unknown_verdict() -> None:
    assert report.count(["holds", "fails", "holds"])["holds"] == 2
    with pytest.raises(ValueError, match="verdict: 'maybe'"):
        report.count(["maybe"])


# -- renderings --

REMOTE = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", re.IGNORECASE)


def test_html_is_self_contained(tmp_path: Path) -> None:
    page = report.render_html(report.assemble([make_part(tmp_path, GOODPUT)], "abc123"))
    assert not REMOTE.search(page)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert page.count("<svg") == 2 + 1  # one per claim, one sweep plot (goodput_bps)
    assert "PFTK (dashed, x)" in page and "holds: <b>2</b>" in page
    assert "Linux NewReno has SACK and RACK" in page
    # the check itself: a remote reference is found
    assert REMOTE.search('<img src="https://cdn.example/x.png">')


def test_markdown_table_from_the_report(tmp_path: Path) -> None:
    md = report.render_markdown(report.assemble([make_part(tmp_path, GOODPUT)], "abc123"))
    assert "Commit `abc123`" in md and "Generated by `satlab reproduce`" in md
    row = next(line for line in md.splitlines() if line.startswith("| cubic-over-newreno"))
    assert "ETEN report (BBN TR 8333), 5.1, Fig. 4" in row
    assert "1.525 [" in row and "[1.2, 2]" in row and row.endswith("| holds |")


# -- local results directories --


def test_local_parts_are_collected_per_scenario_latest_subset(tmp_path: Path) -> None:
    entry = load_entries(write_scenarios(tmp_path / "scenarios"))[0]
    root = tmp_path / "results"
    for subset, reps in (("full", 3), ("ci", 2)):
        d = local.part_dir(root, subset, entry.name)  # type: ignore[arg-type]
        d.mkdir(parents=True)
        spec = entry.scenario(subset).model_dump(mode="json")  # type: ignore[arg-type]
        meta = {
            "scenario": entry.name,
            "paper": "eten",
            "subset": subset,
            "commit": "c",
            "spec": spec,
            "started_at": "t0",
            "finished_at": f"t-{subset}",
        }
        (d / "part.json").write_text(json.dumps(meta))
        goodput = {k: v[:reps] for k, v in GOODPUT.items() if subset == "full" or k[1] == 1e-5}
        for n, doc in enumerate(docs_of(goodput), 1):
            (d / f"run-{n:03d}.json").write_text(json.dumps(doc))
    parts = local.collect(root)
    assert len(parts) == 1 and parts[0]["subset"] == "ci"  # written last
    assert parts[0]["seeds"] == [5, 6] and parts[0]["state"] == "succeeded"
    assert parts[0]["kernel"] == "6.1.0-test"
    ratio = parts[0]["verdicts"][0]
    assert ratio["n"] == 2 and math.isclose(ratio["mean"], (60_000 + 62_000) / (40_000 + 41_000))


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--local", "--jobs", "0"], "--jobs: 0 is outside 1-8"),
        (["--local", "--jobs", "9"], "--jobs: 9 is outside 1-8"),
        (["--jobs", "2"], "--jobs and --results are for --local runs"),
        (["--results", "somewhere"], "--jobs and --results are for --local runs"),
    ],
)
def test_jobs_and_results_are_refused_out_of_bounds_or_off_local(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["reproduce", "--report-only", *argv])
    assert command.main(args) == 2
    assert error in capsys.readouterr().err.replace("\n", " ")


def test_parts_run_side_by_side_say_so(tmp_path: Path) -> None:
    part = {
        "scenario": "s", "paper": "ecn", "subset": "ci", "commit": "c", "at": "t",
        "state": "succeeded", "seeds": [1], "kernel": "k", "spec": {}, "rows": [],
        "verdicts": [],
    }  # fmt: skip
    rep = report.assemble([{**part, "jobs": 3}, {**part, "scenario": "t"}], "c")
    md = report.render_markdown(rep)
    assert "- s (ci): succeeded, c, t, 3 runs at a time" in md
    assert "- t (ci): succeeded, c, t\n" in md
