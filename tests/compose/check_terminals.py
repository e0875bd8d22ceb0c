"""The compose smoke test's beam check: through the reverse proxy, a scenario with two terminals of
one beam (`hosts.terminals`) runs on the boxes (the st box is terminal 1's edge with cli1, its
agent builds terminal 2's edge st2 and client cli2 inside it, satlab.agent.terminalbox). Checks
that the download to each client carried data, that each flow names its terminal, and that the
terminal under rain (a lower MODCOD, equal frames by round robin) has the lower goodput. Exits
non-zero with the reason.

    python3 tests/compose/check_terminals.py URL TOKEN [--timeout S]
Standard library only (runs with any python3).
"""

from __future__ import annotations

from typing import Any

from check_experiment import Api, Fail
from parity import check_command

SCENARIO = """\
version: 1
name: compose-smoke-terminals
description: Docker Compose smoke test, two terminals of a beam (tests/compose/check_terminals.py)
seed: 14
duration_s: 5
link:
  forward:
    delay_ms: 20
    symbol_rate_baud: 2.0e6
    acm: {mode: acm, refresh_ms: 100, margin_db: 0.0}
    queue: {limit_packets: 200, limit_bytes: 400000}
    beam:
      scheduler: round_robin
      terminals:
        - {name: clear}
        - {name: faded, attenuation: {type: constant, value_db: 14.0}}
  return: {delay_ms: 20}
hosts:
  terminals:
    - {name: clear, clients: 1}
    - {name: faded, clients: 1}
traffic:
  - {kind: bulk_tcp, direction: download, client: 1, duration_s: 5}
  - {kind: bulk_tcp, direction: download, client: 2, duration_s: 5}
configurations:
  - name: cubic
"""


def check_run(api: Api, doc: dict[str, Any]) -> None:
    run = f"run {doc['run_id']} {doc['configuration']}"
    flows = {f.get("terminal"): f for f in doc["flows"]}
    if set(flows) != {"clear", "faded"}:
        raise Fail(f"{run}: the flows name terminals {sorted(map(str, flows))}, not clear, faded")
    goodput = {name: f.get("goodput_bps", 0.0) for name, f in flows.items()}
    if not all(g > 0 for g in goodput.values()) or goodput["faded"] >= goodput["clear"]:
        raise Fail(f"{run}: goodput by terminal {goodput}: want both > 0, faded below clear")
    print(
        f"    {run}: goodput clear {goodput['clear'] / 1e6:.2f} Mbit/s, "
        f"faded {goodput['faded'] / 1e6:.2f} Mbit/s",
        flush=True,
    )


if __name__ == "__main__":
    check_command(__doc__.splitlines()[0], SCENARIO, check_run, timeout_s=120.0)
