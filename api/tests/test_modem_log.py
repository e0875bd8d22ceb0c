"""Modem log import (satlab.modemlog, `satlab trace import-modem-log`): the trace replays the log's
Es/N0 through the emulator's C/N algebra, MODCOD logs map to the ACM rule's choice, and every
problem is an error naming the line and the limit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from satlab import cli, modemlog, raintrace
from satlab.service import files

LOG = """\
# modem export
time_s,esn0_db,locked
0,15.0,1
1,14.0,1
2.5,8.5,1
4,15.5,1
"""


def emulator_total(up_db: float, down_db: float) -> float:
    """The emulator's total Es/N0 of two hops (emulator/CONFIG.md, C/N algebra)."""
    return -10 * math.log10(10 ** (-up_db / 10) + 10 ** (-down_db / 10))


def test_esn0_log_replays_through_the_emulator_algebra() -> None:
    imp = modemlog.to_trace(modemlog.parse(LOG), step_ms=500, uplink_db=30.0)
    assert len(imp.values_db) == 9  # 0 .. 4 s every 0.5 s
    expected = np.interp(np.arange(9) * 0.5, [0, 1, 2.5, 4], [15.0, 14.0, 8.5, 15.5])
    got = [emulator_total(30.0, imp.clear_sky_db - a) for a in imp.values_db]
    np.testing.assert_allclose(got, expected, atol=1e-3)  # values written to 4 decimals
    assert float(np.min(imp.values_db)) == 0.0  # clear sky defaults to the log's best
    assert f"downlink.clear_sky_db: {imp.clear_sky_db:.4f}" in imp.text()
    assert files.validate("attenuation", imp.text().encode()) == 9


def test_modcod_log_holds_each_modcod_at_its_threshold_plus_margin() -> None:
    log = modemlog.parse(
        "time,modcod\n2026-11-26T10:00:00Z,32APSK 9/10\n2026-11-26T10:00:01.5Z,8psk-2/3\n"
        "2026-11-26T10:00:02Z,13\n",
        margin_db=0.3,
    )
    assert log.times_s == [0.0, 1.5, 2.0]
    # EN 302 307-1 Table 13: 32APSK 9/10 16.05 dB, 8PSK 2/3 (id 13) 6.62 dB
    assert log.esn0_db == pytest.approx([16.35, 6.92, 6.92])
    imp = modemlog.to_trace(log, step_ms=500)
    got = [emulator_total(60.0, imp.clear_sky_db - a) for a in imp.values_db]
    np.testing.assert_allclose(got, [16.35, 16.35, 16.35, 6.92, 6.92], atol=1e-3)


def test_a_dvbs2x_modems_log_reads_the_s2x_table() -> None:
    text = "time_s,modcod\n0,QPSK 13/45\n1,256APSK 29/45-L\n2,132\n"
    log = modemlog.parse(text, modcod_set="dvbs2x")
    # EN 302 307-2 Table 20a: QPSK 13/45 (PLS code 132) -2.03 dB, 256APSK 29/45-L 16.98 dB
    assert log.esn0_db == pytest.approx([-2.03, 16.98, -2.03])
    with pytest.raises(modemlog.LogError, match="line 2"):
        modemlog.parse(text)  # the DVB-S2 table has no 13/45


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time_s,esn0_db\n0,10\n1,11\n0.5,12\n", "line 4: time 0.5 is not after the previous"),
        ("time_s,esn0_db\n0,10\n1,11\n1,12\n", "line 4: time 1 is not after"),
        (
            "time_s,esn0_db\n0,10\n30,11\n",
            "line 3: gap of 30 s after line 2 exceeds max_gap_s (10 s)",
        ),
        ("time_s,esn0_db\n0,10\n1,75\n", "line 3: esn0_db 75 is outside [-30, 60] dB"),
        ("time_s,esn0_db\n0,10\n1,nan\n", "line 3: esn0_db nan is outside [-30, 60] dB"),
        ("time_s,esn0_db\n0,10\n1,abc\n", "line 3: esn0_db 'abc' is not a number"),
        ("time_s,esn0_db\n0,10\n1\n", "line 3: expected 2 columns, found 1"),
        ("time_s,snr\n0,10\n", "line 1: the header 'time_s,snr' needs a time column"),
        ("time_s,modcod\n0,QPSK 1/2\n1,64APSK 9/10\n", "line 3: modcod '64APSK 9/10' is not in"),
        ("time,esn0_db\n2026-11-26,10\nyesterday,11\n", "line 3: time 'yesterday' is not an ISO"),
        ("time_s,esn0_db\n0,10\n", "the log needs at least two samples"),
        ("# nothing\n", "no header row"),
    ],
)
def test_errors_name_the_line_and_the_limit(text: str, message: str) -> None:
    with pytest.raises(modemlog.LogError) as err:
        modemlog.parse(text)
    assert message in str(err.value), str(err.value)


def test_trace_limits() -> None:
    log = modemlog.parse(LOG)
    with pytest.raises(modemlog.LogError, match=r"uplink_db: the log reaches 15.50 dB"):
        modemlog.to_trace(log, uplink_db=15.0)
    with pytest.raises(modemlog.LogError, match=r"clear_sky_db: 70.00 is outside .*\[-20, 60\]"):
        modemlog.to_trace(log, clear_sky_db=70.0)
    long = modemlog.ModemLog([0.0, 5.0, 10_001.0 - 1.0], [10.0] * 3, "esn0", [2, 3, 4])
    with pytest.raises(
        modemlog.LogError, match=r"step_ms: 10000001 ticks of 1 ms exceed the limit"
    ):
        modemlog.to_trace(long, step_ms=1)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "modem.csv"
    src.write_text(LOG)
    out = tmp_path / "trace.txt"
    with pytest.raises(SystemExit) as ex:
        cli.main(["trace", "import-modem-log", str(src), "--step", "250", "-o", str(out)])
    assert ex.value.code == 0
    ticks, _ = raintrace.read_trace(out)
    assert len(ticks) == 17
    assert "set downlink.clear_sky_db:" in capsys.readouterr().err
    src.write_text("time_s,esn0_db\n0,10\n1,99\n")
    with pytest.raises(SystemExit) as ex:
        cli.main(["trace", "import-modem-log", str(src), "-o", str(out)])
    assert ex.value.code == 2
    assert "line 3: esn0_db 99 is outside [-30, 60] dB" in capsys.readouterr().err
