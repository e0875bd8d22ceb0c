"""Where the emulator binary is, and a pre-flight check of a link configuration with it."""

from __future__ import annotations

import tempfile
from typing import Any

import yaml

from satlab.bounded import BoundedRunError, exit_reason, run_bounded
from satlab.link_backend import emulator_link
from satlab.settings import EMULATOR_BIN, get_check_limits


class LinkConfigError(ValueError):
    """The emulator refused a link configuration; the message names the field or file line."""


def check_link(
    link: dict[str, Any], timeout_s: float | None = None, memory_bytes: int | None = None
) -> None:
    """Validate a scenario's link with the emulator itself (`--check`), so a bad field fails
    before any testbed is built, with the emulator's own message.

    The check runs on request data (a FIFO or a huge file among the link's files could hang it or
    make it grow), so it is bounded: killed after `timeout_s` (default SATLAB_CHECK_TIMEOUT_S) and
    limited to `memory_bytes` of address space (default SATLAB_CHECK_MEMORY_BYTES)."""
    limits = get_check_limits()
    timeout_s = limits.check_timeout_s if timeout_s is None else timeout_s
    memory_bytes = limits.check_memory_bytes if memory_bytes is None else memory_bytes
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(emulator_link(link), f)  # `backend` is the runner's, not the emulator's
        f.flush()
        argv = [str(EMULATOR_BIN), "--config", f.name, "--check"]
        try:
            proc = run_bounded(argv, timeout_s, memory_bytes)
        except BoundedRunError as err:
            raise LinkConfigError(f"the emulator's check {err}") from None
    if proc.returncode != 0:
        msg = proc.stderr.strip().replace(f.name, "link")
        raise LinkConfigError(
            msg or f"the emulator's check {exit_reason(proc.returncode, memory_bytes)}"
        )
