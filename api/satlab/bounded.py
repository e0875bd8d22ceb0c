"""Programs run on request data with a time and an address-space limit: the emulator's
configuration check (satlab.linkcheck.check_link) and the link model's answers
(satlab.linkmodel); and programs stopped within a grace time (a testbed's agents, an emulator
box's OpenSAND entities). Standard library only, so any layer may use it."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any


class BoundedRunError(RuntimeError):
    """A bounded run did not start, or did not finish in time (the message names which, to be
    said after what was run: "the emulator's check did not finish in 10 s")."""


def run_bounded(
    argv: list[str], timeout_s: float, memory_bytes: int, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """argv run on request data (`stdin`, or files its arguments name) with a time and an
    address-space limit. When time is up it is killed, with anything it started."""
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


def stop_processes(procs: Iterable[subprocess.Popen[Any]], grace_s: float) -> None:
    """SIGTERM every process still running, wait up to `grace_s` for all of them together, then
    SIGKILL the ones still there. Each is reaped, so none is left a zombie."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
