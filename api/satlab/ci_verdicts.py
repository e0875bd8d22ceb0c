"""The verdicts `satlab submit --wait` and `satlab wait` report: `--expect` expressions evaluated
on an experiment's comparison, the scenario's own expectations, and JUnit XML of both with the
runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console

from satlab.expectations import Expectation, ExpectationError, evaluate
from satlab.rest_client import Client, CliError

console = Console(stderr=True)


def sweep_text(value: Any) -> str:
    """A sweep point as the scenario writes it: `1e-05`, `[1e-05, false]` for two dimensions."""
    return "" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


def parse_expectation(text: str) -> Expectation:
    try:
        return Expectation.parse(text)
    except ExpectationError as err:
        raise CliError(str(err)) from None


def check_expectations(
    client: Client, exp_id: int, texts: list[str]
) -> list[tuple[Expectation, bool, str]]:
    expects = [parse_expectation(t) for t in texts]
    by_base: dict[str | None, dict[str, Any]] = {}
    verdicts = []
    for e in expects:
        if e.baseline not in by_base:
            params: dict[str, Any] = {"baseline": e.baseline} if e.baseline else {}
            by_base[e.baseline] = client.call(
                "GET", f"/api/experiments/{exp_id}/comparison", params=params
            )
        ok, note = evaluate(e, by_base[e.baseline])
        verdicts.append((e, ok, note))
    return verdicts


def junit(
    exp: dict[str, Any],
    verdicts: list[tuple[Expectation, bool, str]],
    claims: list[dict[str, Any]],
    path: Path,
) -> None:
    suites = ET.Element("testsuites")
    runs = exp["runs"] or []
    failures = (
        sum(1 for r in runs if r["state"] != "succeeded")
        + sum(1 for _, ok, _ in verdicts if not ok)
        + sum(1 for c in claims if c["verdict"] != "holds")
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"satlab experiment {exp['id']} ({exp['scenario_name']})",
        tests=str(len(runs) + len(verdicts) + len(claims)),
        failures=str(failures),
    )
    for r in runs:
        name = f"run {r['index']}: {r['configuration']}"
        if r["sweep_value"] is not None:
            name += f" sweep={sweep_text(r['sweep_value'])}"
        name += f" rep {r['repetition']}"
        dur = 0.0
        case = ET.SubElement(suite, "testcase", classname="satlab.runs", name=name, time=f"{dur}")
        if r["state"] != "succeeded":
            fail = ET.SubElement(case, "failure", message=f"run {r['state']}")
            fail.text = r.get("error") or r["state"]
    for e, ok, note in verdicts:
        case = ET.SubElement(suite, "testcase", classname="satlab.expect", name=e.text)
        if not ok:
            fail = ET.SubElement(case, "failure", message=note)
            fail.text = note
        else:
            ET.SubElement(case, "system-out").text = note
    for c in claims:
        case = ET.SubElement(suite, "testcase", classname="satlab.expectations", name=c["id"])
        text = f"{c['verdict']}: {c['claim']} ({c['measure']}): {c['note']}"
        if c["verdict"] != "holds":
            ET.SubElement(case, "failure", message=c["verdict"]).text = text
        else:
            ET.SubElement(case, "system-out").text = text
    ET.indent(suites)
    path.write_text(ET.tostring(suites, encoding="unicode", xml_declaration=True))


VERDICT_STYLE = {"holds": "green", "direction": "yellow", "fails": "red", "no-data": "red"}


def print_verdicts(claims: list[dict[str, Any]]) -> None:
    """The scenario's expectations, one line each: verdict, id, claim, measured mean [CI]."""
    for c in claims:
        style = VERDICT_STYLE[c["verdict"]]
        console.print(
            f"[{style}]{c['verdict'].upper()}[/] {c['id']}: {c['claim']} "
            f"({c['measure']}, band [{c['band'][0]:g}, {c['band'][1]:g}]): {c['note']}"
        )
