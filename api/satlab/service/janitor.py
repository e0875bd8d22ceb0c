"""The janitor thread: takes back runs whose worker stopped heartbeating (service/runs.janitor).

Every worker runs one (it also beats for itself and sweeps this machine's leftover testbeds), and
so does every API process (no sweep: it has no privileges; the next run on that machine sweeps
first), so a run whose worker died is re-queued or failed within stale_after_s + janitor_period_s
(30 s with the defaults) even when no worker is alive, and picked up when one starts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from satlab import db
from satlab.service import runs
from satlab.settings import get_settings

log = logging.getLogger("satlab.janitor")


class Janitor(threading.Thread):
    def __init__(
        self,
        me: runs.WorkerIdentity,
        sweep: Callable[[], list[str]] | None,
        period_s: float,
        beat: bool,
    ) -> None:
        super().__init__(name="janitor", daemon=True)
        self.me = me
        self.sweep = sweep
        self.period_s = period_s
        self.beat = beat
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.period_s):
            try:
                with db.new_session() as s:
                    if self.beat:
                        runs.beat_worker(s, self.me)
                    runs.janitor(s, self.me, self.sweep)
            except Exception:  # noqa: BLE001 - a database hiccup must not stop the janitor
                log.exception("janitor")

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=max(5.0, self.period_s))


def for_api(me: runs.WorkerIdentity) -> Janitor | None:
    """The API process's janitor, or None where it is turned off (api_janitor_period_s = 0)."""
    period = get_settings().api_janitor_period_s
    return Janitor(me, None, period, beat=False) if period > 0 else None
