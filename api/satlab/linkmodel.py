"""The Rust link model's read-only answers (MODCOD tables, a trace's Es/N0, MODCOD and useful
rate per tick, whether a link file parses), asked of the emulator binary (`--print-modcods`,
`--preview-trace`, `--check-file`, emulator/src/describe.rs), so Python and the UI keep no copy
of the DVB-S2 arithmetic or of the file parsers.

The binary runs on request data, so it runs with a time and an address-space limit
(satlab.bounded), as the configuration check (satlab.linkcheck.check_link) does."""

from __future__ import annotations

import json
from typing import Any

from satlab.bounded import BoundedRunError, exit_reason, run_bounded
from satlab.settings import EMULATOR_BIN, get_check_limits


class LinkModelError(ValueError):
    """The link model refused the request; the message names the field or the file's line."""


class LinkModelUnavailable(RuntimeError):
    """The link model did not answer (missing, timed out, killed): not the request's fault."""


def _ask(args: list[str], stdin: str | None = None) -> Any:
    limits = get_check_limits()
    try:
        proc = run_bounded(
            [str(EMULATOR_BIN), *args], limits.check_timeout_s, limits.check_memory_bytes, stdin
        )
    except BoundedRunError as err:
        raise LinkModelUnavailable(f"the link model {err}") from None
    if proc.returncode == 2:  # the request's fault, said on stderr
        raise LinkModelError(proc.stderr.strip().removeprefix("satlab-emulator: "))
    if proc.returncode != 0:
        reason = exit_reason(proc.returncode, limits.check_memory_bytes)
        raise LinkModelUnavailable(proc.stderr.strip() or f"the link model {reason}")
    return json.loads(proc.stdout)


def modcods(table: str = "dvbs2", text: str | None = None) -> list[dict[str, Any]]:
    """An embedded MODCOD table (`dvbs2`, `dvbs2x`), or the table file `text` when given, with
    each row's normal-frame arithmetic."""
    rows: list[dict[str, Any]] = _ask(["--print-modcods", "-" if text is not None else table], text)
    return rows


def preview(request: dict[str, Any]) -> dict[str, list[Any]]:
    """Per tick of `request["trace"]`: t_s, attenuation_db, esn0_db, modcod, rate_bps."""
    out: dict[str, list[Any]] = _ask(["--preview-trace"], json.dumps(request))
    return out


def check_file(kind: str, text: str) -> int:
    """The data rows of a link file (attenuation, delay, modcod, per) as a run parses it; raises
    LinkModelError naming the line (`line N: reason`) and the limit."""
    out: dict[str, int] = _ask(["--check-file", kind], text)
    return out["rows"]


def read_trace(path: str) -> tuple[list[int], list[float]]:
    """An attenuation trace's (ticks, dB values); errors name the file, line and reason."""
    out: dict[str, list[Any]] = _ask(["--read-trace", path])
    return out["ticks"], out["values_db"]
