"""The toolkit CLI (`satlab trace ...`) when the Rust link model it asks (satlab.linkmodel) cannot
answer: one line saying so and exit status 2, not a traceback."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from satlab import cli, linkmodel

MODCOD_LOG = "time_s,modcod\n0,QPSK 1/2\n1,8PSK 3/5\n2,QPSK 1/2\n"


def _link_model(kind: str, tmp_path: Path) -> Path:
    """A link model binary that is not there, or one that dies of a signal without a word (as
    the address-space limit kills it)."""
    binary = tmp_path / f"{kind}-emulator"
    if kind == "killed":
        binary.write_text("#!/bin/sh\nkill -9 $$\n")
        binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("missing", "the link model could not start"),
        ("killed", "the link model was killed by signal 9"),
    ],
)
def test_trace_import_reports_an_unavailable_link_model(
    kind: str,
    reason: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(linkmodel, "EMULATOR_BIN", _link_model(kind, tmp_path))
    log = tmp_path / "modem.csv"
    log.write_text(MODCOD_LOG)
    out = tmp_path / "trace.txt"
    with pytest.raises(SystemExit) as ex:
        cli.main(["trace", "import-modem-log", str(log), "-o", str(out)])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("the link model is unavailable: ")
    assert reason in err
    assert len(err.strip().splitlines()) == 1  # one line, no traceback
    assert not out.exists()
