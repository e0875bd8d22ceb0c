"""Live link metrics of running runs for a Prometheus server: GET /api/metrics/runs.

The emulator, the edge gateways and the PEPs of a run serve Prometheus text on 127.0.0.1 inside
their own boxes, where no monitoring stack can reach them. The worker that runs the run scrapes
them with every heartbeat (`scrape`, through each box's agent) and stores the texts
in live_metrics; the API serves every fresh scrape of a running run as one exposition (`render`),
each sample labelled with its run, experiment, scenario, configuration, component and box, and
each metric family once (Prometheus refuses a family whose HELP/TYPE lines repeat). A Prometheus
server scrapes the endpoint with a viewer token (docs/monitoring.md); a row is dropped when its
run ends, and a row older than three heartbeats (its worker died) is not served.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from satlab.service.models import Experiment, LiveMetrics, Run
from satlab.settings import (
    EMULATOR_CONTROL_LISTEN,
    GATEWAY_HTTP_LISTEN,
    PEP_HTTP_LISTEN,
    get_settings,
)

# Where each component of a testbed serves /metrics: (component, box, port on 127.0.0.1). The
# runner makes them listen there (testbed/runner.py, testbed/gateway.py, testbed/pep.py); a
# component a run does not use refuses the connection at once and is left out.
TIMEOUT_S = 1.0
MAX_TEXT_BYTES = 1 << 20  # one target's exposition; the emulator's is ~10 KB
# name, {labels}, value, optional timestamp (text format 0.0.4)
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(\s+-?\d+)?$")


def targets() -> list[tuple[str, str, int]]:
    def port(listen: str) -> int:
        return int(listen.rsplit(":", 1)[1])

    return [("emulator", "emu", port(EMULATOR_CONTROL_LISTEN))] + [
        (component, box, port(listen))
        for component, listen in (("gateway", GATEWAY_HTTP_LISTEN), ("pep", PEP_HTTP_LISTEN))
        for box in ("gw", "st")
    ]


def scrape(testbed_id: str) -> list[dict[str, str]]:
    """Worker side: the /metrics text of every component of the testbed that answers, relayed by
    each box's agent (namespace and container testbeds alike)."""
    from satlab.service.control import box_http

    out = []
    for component, box, port in targets():
        try:
            status, body = box_http(testbed_id, box, port, "GET", "/metrics", timeout=TIMEOUT_S)
        except OSError:
            continue  # not running in this run (refused), or going away with the testbed
        if status == 200 and len(body) <= MAX_TEXT_BYTES:
            out.append({"component": component, "box": box, "text": body.decode(errors="replace")})
    return out


def store(session: Session, run_id: int, scraped: list[dict[str, str]]) -> None:
    """Replaces the run's newest scrape (the caller commits)."""
    stmt = insert(LiveMetrics).values(run_id=run_id, targets=scraped, scraped_at=datetime.now(UTC))
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[LiveMetrics.run_id],
            set_={"targets": stmt.excluded.targets, "scraped_at": stmt.excluded.scraped_at},
        )
    )


def forget(session: Session, run_id: int) -> None:
    session.execute(delete(LiveMetrics).where(LiveMetrics.run_id == run_id))


def _is_value(v: str) -> bool:
    try:
        float(v)  # also +Inf, -Inf, NaN
    except ValueError:
        return False
    return True


def _label_value(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass
class Family:
    """One metric family across runs: its HELP and TYPE lines once, then every sample."""

    meta: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)


def merge(texts: list[tuple[dict[str, Any], str]]) -> str:
    """One exposition from several (labels, text) pairs: labels added to every sample of the
    text, samples grouped under their family (a histogram's _bucket/_sum/_count lines stay under
    the family their TYPE line opened)."""
    families: dict[str, Family] = {}
    for labels, text in texts:
        extra = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items())
        current: str | None = None
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    current = parts[2]
                    fam = families.setdefault(current, Family())
                    if not any(m.split(None, 2)[1] == parts[1] for m in fam.meta):
                        fam.meta.append(line)
                continue
            m = SAMPLE.match(line)
            if m is None or not _is_value(m.group(3)):
                continue  # not a sample line: dropped rather than break the whole exposition
            name, inner, rest = m.group(1), m.group(2), " " + m.group(3) + (m.group(4) or "")
            family = current if current and name.startswith(current) else name
            inner_labels = inner[1:-1].strip().rstrip(",") if inner else ""
            joined = ",".join(x for x in (extra, inner_labels) if x)
            families.setdefault(family, Family()).samples.append(f"{name}{{{joined}}}{rest}")
    out: list[str] = []
    for fam in families.values():
        out.extend(fam.meta)
        out.extend(fam.samples)
    return "\n".join(out) + "\n" if out else ""


def render(session: Session) -> str:
    """The exposition of every running run's fresh scrape."""
    fresh = datetime.now(UTC) - timedelta(seconds=3 * get_settings().heartbeat_period_s)
    rows = session.execute(
        select(LiveMetrics, Run, Experiment)
        .join(Run, Run.id == LiveMetrics.run_id)
        .join(Experiment, Experiment.id == Run.experiment_id)
        .where(Run.state == "running", LiveMetrics.scraped_at >= fresh)
        .order_by(Run.id)
    ).all()
    texts = []
    for live, run, exp in rows:
        for t in live.targets:
            labels = {
                "run_id": run.id,
                "experiment_id": exp.id,
                "scenario": exp.scenario_name,
                "configuration": run.configuration,
                "component": t["component"],
                "box": t["box"],
            }
            texts.append((labels, t["text"]))
    return merge(texts)
