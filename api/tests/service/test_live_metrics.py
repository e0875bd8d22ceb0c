"""Live monitoring: GET /api/metrics/runs merges the running runs' emulator, gateway and PEP
expositions into one that Prometheus accepts, and a real Prometheus server (Debian's, with the
Compose profile's configuration) scrapes a live run's link, gateway and PEP metrics through it;
every expression of the shipped dashboard has data."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from satlab import worker
from satlab.service.live_metrics import merge

from .conftest import Tokens, needs_testbed

MONITORING = Path(__file__).resolve().parents[3] / "docker" / "monitoring"

EMULATOR_LIKE = """\
# HELP satlab_emulator_tx_bytes_total Bytes sent.
# TYPE satlab_emulator_tx_bytes_total counter
satlab_emulator_tx_bytes_total{direction="forward"} 1200
satlab_emulator_tx_bytes_total{direction="return"} 80
# HELP satlab_emulator_delay_seconds Delivery lateness.
# TYPE satlab_emulator_delay_seconds histogram
satlab_emulator_delay_seconds_bucket{le="0.001"} 3
satlab_emulator_delay_seconds_bucket{le="+Inf"} 4
satlab_emulator_delay_seconds_sum 0.01
satlab_emulator_delay_seconds_count 4
# HELP satlab_emulator_uptime_seconds Seconds since start.
# TYPE satlab_emulator_uptime_seconds gauge
satlab_emulator_uptime_seconds 12.5
not a sample line
"""


def promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    """promtool's exit code: 0 valid, 1 a parse error, 3 lint findings (e.g. no HELP)."""
    return subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus) absent")
def test_merge_gives_each_family_once_with_the_run_labels() -> None:
    out = merge(
        [
            ({"run_id": 1, "scenario": 'a "quoted"\\name'}, EMULATOR_LIKE),
            ({"run_id": 2, "scenario": "b"}, EMULATOR_LIKE),
        ]
    )
    lines = out.splitlines()
    assert lines.count("# TYPE satlab_emulator_tx_bytes_total counter") == 1
    assert lines.count("# TYPE satlab_emulator_delay_seconds histogram") == 1
    assert (
        'satlab_emulator_tx_bytes_total{run_id="1",scenario="a \\"quoted\\"\\\\name",'
        'direction="forward"} 1200' in lines
    )
    assert 'satlab_emulator_uptime_seconds{run_id="2",scenario="b"} 12.5' in lines
    # a histogram's samples of both runs stay together under its TYPE line
    i = lines.index("# TYPE satlab_emulator_delay_seconds histogram")
    assert all(x.startswith("satlab_emulator_delay_seconds_") for x in lines[i + 1 : i + 9])
    assert not any("not a sample" in x for x in lines)
    checked = promtool_check(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # the same two texts concatenated, as a naive proxy would serve them, are refused
    naive = promtool_check(EMULATOR_LIKE.replace("not a sample line\n", "") * 2)
    assert naive.returncode == 1 and "second HELP line" in naive.stderr, naive.stderr


def test_the_endpoint_needs_a_token_and_is_empty_without_running_runs(
    client: TestClient, tokens: Tokens
) -> None:
    assert client.get("/api/metrics/runs").status_code == 401
    r = client.get("/api/metrics/runs", headers=tokens.h("viewer"))
    assert r.status_code == 200 and r.text == ""
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")


LIVE = """\
version: 1
name: live-metrics
seed: 5
duration_s: 6
link:
  forward: {delay_ms: 250, kind: fixed, rate_bps: 10.0e6}
  return: {delay_ms: 250, kind: fixed, rate_bps: 2.0e6}
traffic:
  - kind: bulk_tcp
    duration_s: 6
configurations:
  - name: cubic-red
    transport: {congestion_control: cubic}
    gateway: {egress: {aqm: {kind: red}}}
    pep: {edges: both}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _query(prom: str, q: str) -> list[dict[str, Any]]:
    url = f"{prom}/api/v1/query?query={urllib.parse.quote(q)}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        result: list[dict[str, Any]] = json.load(resp)["data"]["result"]
        return result


@needs_testbed
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus (Debian) absent")
def test_prometheus_scrapes_a_live_runs_link_gateway_and_pep(
    server: str, tokens: Tokens, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "RUNNER", worker._default_runner)
    h = tokens.h("submitter")
    sc = client.post("/api/scenarios", json={"yaml": LIVE}, headers=h).json()
    exp = client.post("/api/experiments", json={"scenario_id": sc["id"]}, headers=h).json()
    exp_id = exp["experiment"]["id"]
    run_id = client.get(f"/api/experiments/{exp_id}", headers=h).json()["runs"][0]["id"]
    port = _free_port()
    prom_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="satlab-prom-") as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_text(tokens.viewer)
        # The Compose profile's configuration, pointed at this test's API and token, 1-s scrapes.
        config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
        config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s"}
        for job in config["scrape_configs"]:
            job["authorization"]["credentials_file"] = str(token_file)
            job["static_configs"] = [{"targets": [server.removeprefix("http://")]}]
        (Path(tmp) / "prometheus.yml").write_text(yaml.safe_dump(config))
        prom = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={tmp}/prometheus.yml",
                f"--storage.tsdb.path={tmp}/data",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            done: dict[str, Any] = {}
            t = threading.Thread(target=lambda: done.update(state=worker.execute_run(run_id)))
            t.start()
            link: list[dict[str, Any]] = []
            gateway: list[dict[str, Any]] = []
            pep: list[dict[str, Any]] = []
            deadline = time.monotonic() + 40
            while t.is_alive() and time.monotonic() < deadline and not (link and gateway and pep):
                time.sleep(1)
                try:
                    sel = f'run_id="{run_id}",configuration="cubic-red"'
                    link = _query(prom_url, f"satlab_emulator_uptime_seconds{{{sel}}}")
                    gateway = _query(prom_url, f'{{component="gateway",{sel}}}')
                    pep = _query(prom_url, f"satlab_pep_accepted_total{{{sel}}}")
                except OSError:
                    continue  # Prometheus still starting
            t.join(60)
            # Every expression of the shipped dashboard is valid PromQL and had data in this run.
            dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
            empty = []
            for panel in dashboard["panels"]:
                for target in panel["targets"]:
                    expr = target["expr"].replace("$run", str(run_id))
                    if not _query(prom_url, f"max_over_time(({expr})[2m:1s])"):
                        empty.append(f"{panel['title']}: {expr}")
        finally:
            prom.terminate()
            prom.wait(10)
    assert done.get("state") == "succeeded"
    assert link, "Prometheus never saw the live run's emulator"
    labels = link[0]["metric"]
    assert labels["component"] == "emulator" and labels["box"] == "emu"
    assert labels["experiment_id"] == str(exp_id)
    assert labels["scenario"] == "live-metrics"
    assert {g["metric"]["box"] for g in gateway} == {"gw", "st"}
    assert {p["metric"]["box"] for p in pep} == {"gw", "st"}
    assert not empty, empty
    # once the run has ended, nothing of it is served
    assert f'run_id="{run_id}"' not in client.get("/api/metrics/runs", headers=h).text
