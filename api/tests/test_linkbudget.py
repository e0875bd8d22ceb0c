"""Link budget (satlab.linkbudget): arithmetic against a worked example computed here, on its own.

Worked example: a GEO Ku-band forward link, both stations on the equator so that the geometry is
plane trigonometry (the WGS84 equatorial radius a = 6378.137 km, the GEO radius R = 42164 km):
- satellite at 10 E;
- terminal at the sub-satellite point (0 N, 10 E): slant range R - a = 35 785.863 km, elevation 90;
  downlink 12 GHz, satellite EIRP 52 dBW, terminal G/T 20 dB/K, 0.5 dB other losses: the classic
  DTH figures, whose free-space loss is the familiar "about 205 dB" (205.11 dB here);
- gateway at 0 N, 40 E (30 deg from the sub-satellite point): slant range
  sqrt(a^2 + R^2 - 2 a R cos 30), elevation atan((cos 30 - a/R) / sin 30) = 55.03 deg;
  uplink 14 GHz, gateway EIRP 80 dBW, satellite G/T 3 dB/K;
- symbol rate 27.5 Msym/s (a 36 MHz transponder's DVB-S carrier).
C/N = EIRP - 20 log10(4 pi d f / c) - A_gas - L + G/T + 228.599 - 10 log10(Rs): the test redoes each
term; only the gaseous attenuation (P.676 via itur, a model, not arithmetic) is taken from the row
and bounded (0.02-0.5 dB at 12-14 GHz above 50 deg elevation).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from satlab import cli, linkbudget
from satlab.scenario import ScenarioError, expand_runs, parse_scenario

A = 6_378_137.0
R = 42_164_000.0
C = 299_792_458.0
K_DBW = 10 * math.log10(1.380649e-23)
RS = 27.5e6


def scenario(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "budget",
        "link": {
            "geometry": {
                "satellite_longitude_deg": 10.0,
                "gateway": {"lat_deg": 0.0, "lon_deg": 40.0},
                "terminal": {"lat_deg": 0.0, "lon_deg": 10.0},
            },
            "forward": {"symbol_rate_baud": RS},
        },
        "link_budget": {
            "availability_pct": 99.7,
            "forward": {
                "uplink": {"frequency_ghz": 14.0, "eirp_dbw": 80.0, "g_over_t_db_per_k": 3.0},
                "downlink": {
                    "frequency_ghz": 12.0,
                    "eirp_dbw": 52.0,
                    "g_over_t_db_per_k": 20.0,
                    "other_losses_db": 0.5,
                },
            },
        },
        "traffic": [{"kind": "bulk_tcp", "duration_s": 10}],
        "configurations": [{"name": "cubic"}],
    }
    data.update(over)
    return data


def fsl(d_m: float, f_hz: float) -> float:
    return 20 * math.log10(4 * math.pi * d_m * f_hz / C)


@pytest.fixture(scope="module")
def rows() -> dict[str, Any]:
    sc = parse_scenario(scenario())
    assert sc.link_budget is not None
    return linkbudget.table(sc.link_budget, sc.link)


def test_downlink_worked_example(rows: dict[str, Any]) -> None:
    down = next(h for h in rows["hops"] if h["hop"] == "downlink")
    d = R - A
    assert down["station"] == "terminal"
    assert down["slant_range_km"] == pytest.approx(d / 1000, abs=1e-6)
    assert down["elevation_deg"] == pytest.approx(90.0, abs=1e-6)
    assert down["free_space_loss_db"] == pytest.approx(205.11, abs=0.005)
    assert 0.02 < down["gas_db"] < 0.5
    expected = 52.0 - fsl(d, 12e9) - down["gas_db"] - 0.5 + 20.0 - K_DBW - 10 * math.log10(RS)
    assert down["clear_sky_db"] == pytest.approx(expected, abs=1e-9)
    # 52 - 205.11 - 0.5 + 20 + 228.60 - 74.39 = 20.60 dB, less the gases
    assert 20.1 < down["clear_sky_db"] < 20.6


def test_uplink_worked_example(rows: dict[str, Any]) -> None:
    up = next(h for h in rows["hops"] if h["hop"] == "uplink")
    g = math.radians(30.0)
    d = math.sqrt(A * A + R * R - 2 * A * R * math.cos(g))
    el = math.degrees(math.atan((math.cos(g) - A / R) / math.sin(g)))
    assert up["station"] == "gateway"
    assert up["slant_range_km"] == pytest.approx(d / 1000, abs=1e-6)
    assert up["elevation_deg"] == pytest.approx(el, abs=1e-9)
    assert 0.02 < up["gas_db"] < 0.5
    expected = 80.0 - fsl(d, 14e9) - up["gas_db"] + 3.0 - K_DBW - 10 * math.log10(RS)
    assert up["clear_sky_db"] == pytest.approx(expected, abs=1e-9)


def test_direction_and_availability(rows: dict[str, Any]) -> None:
    up, down = rows["hops"]
    fwd = rows["directions"][0]
    lin = 10 ** (-up["clear_sky_db"] / 10) + 10 ** (-down["clear_sky_db"] / 10)
    assert fwd["clear_sky_esn0_db"] == pytest.approx(-10 * math.log10(lin), abs=1e-9)
    for h in (up, down):
        assert h["unavailability_pct"] == pytest.approx(0.3)
        # P.618 rain at 0.3 % in the equatorial climate is a few dB at Ku band
        assert 0.5 < h["rain_db"] <= h["atmosphere_db"] < 20
        assert h["availability_db"] == pytest.approx(
            h["clear_sky_db"] - (h["atmosphere_db"] - h["gas_db"]), abs=1e-9
        )
    lin = 10 ** (-up["availability_db"] / 10) + 10 ** (-down["availability_db"] / 10)
    assert fwd["availability_esn0_db"] == pytest.approx(-10 * math.log10(lin), abs=1e-9)


def test_runs_get_the_clear_sky_values(rows: dict[str, Any]) -> None:
    (run,) = expand_runs(parse_scenario(scenario()))
    up, down = rows["hops"]
    assert run.link["forward"]["uplink"] == {"clear_sky_db": round(up["clear_sky_db"], 2)}
    assert run.link["forward"]["downlink"] == {"clear_sky_db": round(down["clear_sky_db"], 2)}
    assert run.link["forward"]["symbol_rate_baud"] == RS
    assert "return" not in run.link  # not budgeted: the emulator's defaults
    # the run's scenario keeps the budget, not the derived values (it re-parses unchanged)
    assert run.scenario is not None and "uplink" not in run.scenario.link["forward"]
    parse_scenario(run.scenario.model_dump(mode="json"))


def test_sweeping_the_availability_changes_nothing_at_clear_sky() -> None:
    sweep = {"path": "link_budget.forward.downlink.eirp_dbw", "values": [52.0, 55.0]}
    runs = expand_runs(parse_scenario(scenario(sweep=sweep)))
    a, b = (r.link["forward"]["downlink"]["clear_sky_db"] for r in runs)
    assert b - a == pytest.approx(3.0, abs=0.011)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["link"].pop("geometry"), "link.geometry: the link budget needs"),
        (
            lambda d: d["link"]["forward"].update(downlink={"clear_sky_db": 18}),
            "link.forward.downlink.clear_sky_db: given while link_budget.forward derives it",
        ),
        (
            lambda d: d["link"]["geometry"]["gateway"].update(lon_deg=90.0),
            "link.geometry.gateway: elevation 1.30 deg is below the 5 deg",
        ),
        (
            lambda d: d["link"]["forward"].update(kind="fixed", rate_bps=1e6),
            "link_budget.forward: link.forward.kind is fixed",
        ),
        (
            lambda d: d["link_budget"]["forward"]["uplink"].update(frequency_ghz=70),
            "link_budget.forward.uplink.frequency_ghz: Input should be less than or equal to 55",
        ),
        (lambda d: d["link_budget"].pop("forward"), "link_budget: give forward, return or both"),
    ],
)
def test_errors_name_the_field(change: Any, message: str) -> None:
    data = scenario()
    change(data)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    assert message in str(err.value), str(err.value)


def test_out_of_range_clear_sky_is_refused_at_expansion() -> None:
    data = scenario()
    data["link_budget"]["forward"]["downlink"]["eirp_dbw"] = 95.0  # 20.60 + 43 - gases
    with pytest.raises(ScenarioError, match=r"forward.downlink: clear-sky C/N 63\.\d\d dB is out"):
        expand_runs(parse_scenario(data))


def test_cli_budget_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario()))
    with pytest.raises(SystemExit) as ex:
        cli.main(["budget", str(path), "--json"])
    assert ex.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert [h["hop"] for h in out["hops"]] == ["uplink", "downlink"]
    with pytest.raises(SystemExit) as ex:
        cli.main(["budget", str(path)])
    assert ex.value.code == 0
    assert "= C/N clear sky dB" in capsys.readouterr().out


def test_the_experiment_report_shows_the_budget(rows: dict[str, Any]) -> None:
    from satlab.service.report import _budget_section

    page = _budget_section(parse_scenario(scenario()).model_dump(mode="json"))
    down = next(h for h in rows["hops"] if h["hop"] == "downlink")
    assert "clear-sky C/N (dB)" in page and f"<td>{down['clear_sky_db']:.4g}</td>" in page
    assert "no link_budget section" in _budget_section({"link": {}})
