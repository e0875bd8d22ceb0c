"""Yang's reordering-robust receiver on the testbed (endhosts/withhold; Yang 2001, chapter 3).

With `receiver.withhold` in a configuration, every host receiving one of its TCP flows runs
satlab-withhold through its agent (kind `withhold`) for the ports of those flows. The program
installs its NFQUEUE rules in the host's namespace at start and removes them at exit; the rules
carry `--queue-bypass`, so nothing stalls if it dies, and the namespace goes with the testbed.
"""

from __future__ import annotations

import time
from typing import Any

from satlab.agent.requests import ProcessStart
from satlab.records.withhold import Withhold

PROCESS_ID = "withhold"


class WithholdError(RuntimeError):
    pass


def args(w: Withhold, ports: list[int]) -> list[str]:
    """The receiver's flags for a scenario's settings (the settings type is the binary's own,
    records/withhold.py). Flags, not its --config file: an agent on a leased hardware box cannot
    read a file in the orchestrator's testbed directory."""
    out = [
        "--immediate-dupacks",
        str(w.immediate_dupacks),
        "--history",
        str(w.history_episodes),
        "--iat-weight",
        str(w.iat_weight),
        "--initial-threshold",
        str(w.initial_threshold_packets),
        "--rtt-ms",
        str(w.rtt_ms),
    ]
    for p in ports:
        out += ["--port", str(p)]
    return out


def start(tb: Any, w: Withhold | None, receivers: dict[str, list[int]]) -> list[str]:
    """Starts the receiver on each receiving host (role -> its flows' ports); returns the roles."""
    if w is None:
        return []
    for role, ports in receivers.items():
        receiver = ProcessStart(id=PROCESS_ID, kind="withhold", args=args(w, ports))
        tb.agent(role, "POST", "/processes", receiver)
    time.sleep(0.3)  # the rules are in place, or the program has exited with the reason
    for role in receivers:
        st = tb.agent(role, "GET", f"/processes/{PROCESS_ID}")
        if st["state"] != "running":
            raise WithholdError(f"withhold on {role} did not start: {st['stderr'].strip()[-500:]}")
    return list(receivers)


def stop(tb: Any, roles: list[str]) -> dict[str, Any]:
    """Stops them (held ACKs are let out, rules removed); each role's printed counters."""
    out = {}
    for role in roles:
        st = tb.agent(role, "DELETE", f"/processes/{PROCESS_ID}")
        if st["state"] == "failed" or not st.get("result"):
            raise WithholdError(f"withhold on {role} failed: {st['stderr'].strip()[-500:]}")
        out[role] = st["result"]["withhold"]
    return out
