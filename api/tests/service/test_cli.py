"""The CI-facing CLI against a real HTTP server (uvicorn) and database: submit with file upload
and a sweep, idempotent resubmission, the worker running real testbed runs, wait with --expect
gates and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from satlab import cli, worker
from satlab.expectations import Expectation, ExpectationError, evaluate

from .conftest import FADE, Tokens, needs_testbed, scenario_yaml


def run_cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as exc:
        cli.main(list(argv))
    return int(exc.value.code or 0)


def wait_with_junit(
    exp_id: int, auth: list[str], junit: Path, *expectations: str
) -> tuple[int, ET.Element]:
    """`satlab wait` with one --expect per expectation and --junit; its exit status, and the
    testsuite element of the JUnit XML it wrote."""
    expects = [arg for e in expectations for arg in ("--expect", e)]
    code = run_cli("wait", str(exp_id), *auth, *expects, "--junit", str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    return code, suite


@needs_testbed
def test_submit_wait_expect_junit(
    server: str,
    tokens: Tokens,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "fade.txt").write_bytes(FADE)
    f = tmp_path / "s.yaml"
    f.write_text(scenario_yaml("cli", 1))
    auth = ["--url", server, "--token", tokens.submitter]
    sweep = "forward.bit_errors.ber=1e-7,1e-5"
    assert run_cli("submit", str(f), *auth, "--sweep", sweep, "--idempotency-key", "b1") == 0
    exp_id = int(capsys.readouterr().out.strip().splitlines()[-1])
    assert run_cli("submit", str(f), *auth, "--sweep", sweep, "--idempotency-key", "b1") == 0
    assert int(capsys.readouterr().out.strip().splitlines()[-1]) == exp_id  # no duplicate
    worker.app.run_worker(queues=["runs"], concurrency=1, wait=False, install_signal_handlers=False)
    junit = tmp_path / "junit.xml"
    code, suite = wait_with_junit(
        exp_id,
        auth,
        junit,
        "ratio(goodput_bps, bbr/cubic, sweep=1e-7) > 0.01",
        "mean(goodput_bps, cubic) > 1e4",
        "mean(retransmissions, cubic) < 1e6",
    )
    assert code == 0
    # 4 runs (2 sweep values x 2 configurations) + 3 expectations
    assert suite.get("tests") == "7" and suite.get("failures") == "0"
    code, suite = wait_with_junit(exp_id, auth, junit, "ratio(goodput_bps, cubic/bbr) >= 100")
    assert code == 1
    assert suite.get("failures") == "1"
    failure = suite.find("testcase[@classname='satlab.expect']/failure")
    assert failure is not None and "FAILS" in (failure.get("message") or "")
    assert run_cli("list", *auth) == 0 and "cli" in capsys.readouterr().out
    assert run_cli("show", str(exp_id), *auth) == 0
    assert run_cli("compare", str(exp_id), *auth, "--baseline", "cubic") == 0
    out = tmp_path / "runs.csv"
    assert run_cli("export", str(exp_id), *auth, "-o", str(out)) == 0
    assert len(out.read_text().splitlines()) == 5
    # Refusals exit 2 with the reason.
    bad = tmp_path / "bad.yaml"
    bad.write_text(scenario_yaml("cli", 1).replace("duration_s: 2\nrep", "duration_s: -2\nrep"))
    capsys.readouterr()
    assert run_cli("submit", str(bad), *auth) == 2
    assert "duration_s:" in capsys.readouterr().err
    assert run_cli("list", "--url", server, "--token", "sl_nope") == 2


def test_token_create_bootstrap(tokens: Tokens, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("token", "create", "--role", "admin", "--name", "boot") == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("sl_")
    assert run_cli("token", "list") == 0
    assert "boot" in capsys.readouterr().out


def test_expectation_grammar() -> None:
    e = Expectation.parse("ratio(goodput_bps, pep/cubic, sweep=1e-6) >= 1.2")
    assert (e.func, e.metric, e.config, e.baseline, e.sweep, e.op, e.value) == (
        "ratio",
        "goodput_bps",
        "pep",
        "cubic",
        "1e-6",
        ">=",
        1.2,
    )
    assert Expectation.parse("mean(completion_s, bbr) < 30").baseline is None
    for bad in ("ratio(goodput_bps, bbr) > 1", "goodput > 3", "mean(x, y) >> 2"):
        with pytest.raises(ExpectationError):
            Expectation.parse(bad)
    cmp = {
        "points": [
            {
                "sweep_value": 1e-6,
                "configurations": [
                    {
                        "configuration": "pep",
                        "metrics": {
                            "goodput_bps": {"ratio": 1.3, "low": 1.1, "high": 1.5, "mean": 2.0}
                        },
                    }
                ],
            },
            {
                "sweep_value": 1e-5,
                "configurations": [
                    {
                        "configuration": "pep",
                        "metrics": {
                            "goodput_bps": {"ratio": 1.1, "low": None, "high": None, "mean": 1.0}
                        },
                    }
                ],
            },
        ]
    }
    assert evaluate(e, cmp)[0] is True
    assert evaluate(Expectation.parse("ratio(goodput_bps, pep/cubic) >= 1.2"), cmp)[0] is False
    ok, note = evaluate(Expectation.parse("ratio_low(goodput_bps, pep/cubic, sweep=1e-5) > 1"), cmp)
    assert ok is False and "no value" in note
