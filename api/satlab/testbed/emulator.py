"""Where the emulator binary is, and a pre-flight check of a link configuration with it."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

import yaml

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


class BoundedRunError(RuntimeError):
    """A bounded run did not start, or did not finish in time (the message names which, to be
    said after what was run: "the emulator's check did not finish in 10 s")."""


def run_bounded(
    argv: list[str], timeout_s: float, memory_bytes: int, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """argv run on request data (`stdin`, or files its arguments name) with a time and an
    address-space limit: the configuration check here and the link model's answers
    (satlab.linkmodel). When time is up it is killed, with anything it started."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Its own process group, so a timeout kills whatever it started too.
            start_new_session=True,
            preexec_fn=_address_space_limit(memory_bytes),
        )
    except OSError as err:
        raise BoundedRunError(f"could not start: {err}") from None
    with proc:
        try:
            stdout, stderr = proc.communicate(stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise BoundedRunError(f"did not finish in {timeout_s:g} s") from None
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _address_space_limit(memory_bytes: int) -> Callable[[], None]:
    # Runs in the child between fork and exec. subprocess warns about preexec_fn in threaded
    # programs (the API runs this in worker threads) because the child could need a lock another
    # thread held at fork; this function only makes one system call, so it takes none.
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return limit


def exit_reason(returncode: int, memory_bytes: int) -> str:
    """Why a bounded run (run_bounded) failed when it said nothing on stderr, to be said after
    what was run, as BoundedRunError's message is."""
    if returncode < 0:  # a signal: likely the address-space limit (no message at all)
        return (
            f"was killed by signal {-returncode} "
            f"(its address space is limited to {memory_bytes} bytes)"
        )
    return f"exited {returncode}"
