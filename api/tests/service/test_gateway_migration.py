"""Migration 0007 on a real PostgreSQL: stored scenarios, experiments and runs of the old flat
`gateway` spelling become the gateway's nested one (satlab.gateway_settings), and back."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import yaml

from satlab.gateway_settings import GatewaySettings

from .conftest import create_scratch, drop_scratch
from .test_migrations import _with_url

OLD_YAML = """\
name: gw-mig
traffic:
  - {kind: bulk_tcp, duration_s: 1}
link:
  geometry:
    gateway: {lat_deg: 43.6, lon_deg: 1.44}   # the link's gateway: not a configuration's
sweep: {path: configurations.1.gateway.ceten_alpha, values: [0.3, 0.5]}
configurations:
  - name: beten   # BETEN needs the notices
    transport: {congestion_control: sl_beten}
    gateway: {eten: true, aqm: {kind: red_ecn, limit_packets: 50}}  # kept comment
  - name: ceten
    transport: {congestion_control: sl_ceten}
    gateway:
      ceten: true
      ceten_alpha: 0.3
      ern_ports: [9]
      rate_factor: 0.9
"""
OLD_SPEC_GATEWAYS = [
    {"eten": True, "aqm": {"kind": "red_ecn", "limit_packets": 50}},
    {"ceten": True, "ceten_alpha": 0.3, "ern_ports": [9], "rate_factor": 0.9},
]
NEW_GATEWAYS = [
    {"eten": {"enabled": True}, "egress": {"aqm": {"kind": "red_ecn", "limit_packets": 50}}},
    {
        "ceten": {"enabled": True, "alpha": 0.3},
        "ern": {"ports": [9]},
        "egress": {"rate_factor": 0.9},
    },
]
OLD_PATH = "configurations.1.gateway.ceten_alpha"
NEW_PATH = "configurations.1.gateway.ceten.alpha"


def _spec(gateways: list[dict[str, Any]], path: str) -> dict[str, Any]:
    return {
        "name": "gw-mig",
        "sweep": {"path": path, "values": [0.3, 0.5]},
        "configurations": [
            {"name": n, "transport": {"congestion_control": cc}, "gateway": g}
            for (n, cc), g in zip(
                [("beten", "sl_beten"), ("ceten", "sl_ceten")], gateways, strict=True
            )
        ],
        "reproduction": {"paper": "eten", "ci": {"sweep_values": {path: [0.3]}}},
        "expectations": [{"id": "e", "at": {path: 0.3}}],
    }


def _rows(url: str) -> dict[str, Any]:
    with psycopg.connect(url.replace("+psycopg", "")) as c:
        spec, text = c.execute("SELECT spec, yaml FROM scenario_revisions").fetchone()
        scenario_spec, matrix = c.execute(
            "SELECT scenario_spec, matrix FROM experiments"
        ).fetchone()
        (run,) = c.execute("SELECT spec FROM runs").fetchone()
    return {
        "spec": spec,
        "yaml": text,
        "scenario_spec": scenario_spec,
        "matrix": matrix,
        "run": run,
    }


def _check(rows: dict[str, Any], gateways: list[dict[str, Any]], path: str) -> None:
    expected = _spec(gateways, path)
    assert rows["spec"] == expected
    assert rows["scenario_spec"] == expected
    assert rows["matrix"]["configurations"] == expected["configurations"]
    assert rows["matrix"]["sweep"] == [{"path": path, "values": [0.3]}]
    assert rows["run"]["configuration"]["gateway"] == gateways[1]
    assert rows["run"]["scenario"]["configurations"][1]["gateway"] == gateways[1]
    data = yaml.safe_load(rows["yaml"])
    assert [c["gateway"] for c in data["configurations"]] == gateways
    assert data["sweep"]["path"] == path
    assert data["link"]["geometry"]["gateway"] == {"lat_deg": 43.6, "lon_deg": 1.44}


def test_the_gateway_section_is_rewritten_up_and_down() -> None:
    scratch = create_scratch("gwmig")
    try:
        _with_url(scratch.url, "upgrade", "0006")
        old = _spec(OLD_SPEC_GATEWAYS, OLD_PATH)
        matrix = {
            "configurations": old["configurations"],
            "sweep": [{"path": OLD_PATH, "values": [0.3]}],
            "repetitions": 1,
        }
        run = {"configuration": old["configurations"][1], "scenario": old, "sweep_value": 0.3}
        with psycopg.connect(scratch.url.replace("+psycopg", "")) as c:
            (sid,) = c.execute(
                "INSERT INTO scenarios (name) VALUES ('gw-mig') RETURNING id"
            ).fetchone()
            (rid,) = c.execute(
                "INSERT INTO scenario_revisions (scenario_id, number, yaml, spec) "
                "VALUES (%s, 1, %s, %s) RETURNING id",
                (sid, OLD_YAML, json.dumps(old)),
            ).fetchone()
            (eid,) = c.execute(
                "INSERT INTO experiments (revision_id, scenario_name, matrix, scenario_spec, "
                "files, priority, state, estimate_s) "
                "VALUES (%s, 'gw-mig', %s, %s, '{}', 0, 'queued', 1) RETURNING id",
                (rid, json.dumps(matrix), json.dumps(old)),
            ).fetchone()
            c.execute(
                "INSERT INTO runs (experiment_id, index, configuration, sweep_value, repetition, "
                "seed, spec, state, attempt, cancel_requested, progress) "
                "VALUES (%s, 0, 'ceten', '0.3', 0, 1, %s, 'queued', 0, false, 0)",
                (eid, json.dumps(run)),
            )

        _with_url(scratch.url, "upgrade", "head")
        rows = _rows(scratch.url)
        _check(rows, NEW_GATEWAYS, NEW_PATH)
        # The stored text was rewritten in place: its comments stay, and the service reads it.
        assert "# BETEN needs the notices" in rows["yaml"]
        assert "# kept comment" in rows["yaml"]
        assert "# the link's gateway: not a configuration's" in rows["yaml"]
        assert "gateway: {eten: {enabled: true}, egress: {aqm: {kind: red_ecn" in rows["yaml"]
        for c in yaml.safe_load(rows["yaml"])["configurations"]:
            GatewaySettings.model_validate(c["gateway"])  # the application's section reads it

        _with_url(scratch.url, "downgrade", "0006")
        rows = _rows(scratch.url)
        _check(rows, OLD_SPEC_GATEWAYS, OLD_PATH)
        assert "# kept comment" in rows["yaml"]
    finally:
        drop_scratch(scratch)
