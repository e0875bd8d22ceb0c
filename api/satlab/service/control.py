"""Live control of a running testbed's emulator (attenuation, BER, delay) for hands-on use.

API side: POST /api/runs/{id}/control (the run's owner or an admin) stores a control_requests row
and NOTIFYs; the worker that holds the run (possibly on another machine) picks pending requests
up within half a second, sends them to its emulator and writes the answer back; the API waits for
it up to control_timeout_s.

Worker side (`emulator_request`): the emulator's control HTTP listens on 127.0.0.1:8781 (its
default, docs/emulator-contract.md) inside the testbed's `emu` box; the box's host agent relays
the exchange (POST /http), so it is the same on a namespace and a container testbed. The worker
finds its testbed by the state directory whose owner_pid is its own process
(satlab.testbed.backend.owned_testbed).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from satlab import db
from satlab.agent.tlshttp import TlsTarget
from satlab.service.auth import Principal
from satlab.service.errors import Conflict, Invalid, NotFound, Unavailable
from satlab.service.models import ControlRequest, Experiment, Run
from satlab.settings import EMULATOR_CONTROL_LISTEN, get_settings

_host, _port = EMULATOR_CONTROL_LISTEN.rsplit(":", 1)
EMULATOR_CONTROL = (_host, int(_port))  # where the runner makes every emulator listen
CHANNEL = "satlab_control"


# The emulator owns the control request (linkmodel::control): its JSON Schema, committed by
# `make schemas` (a test fails when it differs from `satlab-emulator --print-schema control`),
# gives the bounds and descriptions below, and a test checks this model has exactly its fields.
CONTROL_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).resolve().parents[1].joinpath("control_schema.json").read_text()
)


def _bounded(name: str) -> Any:
    p = CONTROL_SCHEMA["properties"][name]
    return Field(None, ge=p["minimum"], le=p["maximum"], description=p["description"])


class ControlIn(BaseModel):
    """The emulator's POST /control body (docs/emulator-contract.md); at least one change."""

    model_config = ConfigDict(extra="forbid")

    direction: Literal["forward", "return", "both"] = "both"
    attenuation_db: float | None = _bounded("attenuation_db")
    resume_trace: bool | None = Field(
        None, description=CONTROL_SCHEMA["properties"]["resume_trace"]["description"]
    )
    ber: float | None = _bounded("ber")
    delay_ms: float | None = _bounded("delay_ms")
    terminal: str | None = Field(
        None,
        min_length=CONTROL_SCHEMA["properties"]["terminal"]["minLength"],
        max_length=CONTROL_SCHEMA["properties"]["terminal"]["maxLength"],
        pattern=CONTROL_SCHEMA["properties"]["terminal"]["pattern"],
        description=CONTROL_SCHEMA["properties"]["terminal"]["description"],
    )


# -- API side --


def request(session: Session, who: Principal, run_id: int, body: ControlIn) -> dict[str, Any]:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    exp = session.get(Experiment, run.experiment_id)
    assert exp is not None
    if not who.may_use(exp.scenario_name):
        raise NotFound(f"run {run_id} does not exist")
    who.owns_or_admin(exp.created_by, "run")
    payload = body.model_dump(exclude_none=True)
    if set(payload) <= {"direction", "terminal"}:
        raise Invalid("(body): give at least one of attenuation_db, resume_trace, ber, delay_ms")
    if run.state != "running":
        raise Conflict(f"run {run_id} is {run.state}; live control needs a running run")
    req = ControlRequest(run_id=run_id, body=payload, created_by=who.id)
    session.add(req)
    session.flush()
    session.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": str(run_id)})
    session.commit()
    deadline = time.monotonic() + get_settings().control_timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.1)
        session.refresh(req)
        if req.state != "pending":
            return {"request_id": req.id, "status_code": req.status_code, "response": req.response}
    req.state = "failed"
    req.response = {"error": "the run's worker did not answer in time"}
    session.commit()
    raise Unavailable(f"run {run_id}'s worker did not answer within the control timeout")


# -- worker side --


def current_testbed_id() -> str | None:
    """The testbed this process owns (the one being run), of either kind, if any."""
    from satlab.testbed.backend import owned_testbed

    return owned_testbed()


def _target(sock: Path | TlsTarget) -> str | TlsTarget:
    """An agent_sockets entry as unixhttp.request takes it."""
    return sock if isinstance(sock, TlsTarget) else str(sock)


def box_http(
    testbed_id: str,
    box: str,
    port: int,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    timeout: float = 3.0,
) -> tuple[int, bytes]:
    """One HTTP exchange with a program that serves on 127.0.0.1:`port` in one of the testbed's
    boxes, relayed by the box's agent (POST /http): the same on namespaces and containers.
    OSError when the box or the program is not there."""
    from satlab.agent.unixhttp import AgentError
    from satlab.agent.unixhttp import request as agent_request
    from satlab.testbed.backend import agent_sockets

    sock = agent_sockets(testbed_id).get(box)
    if sock is None:
        raise ConnectionError(f"testbed {testbed_id} has no box {box}")
    req = {"port": port, "method": method, "path": path, "json": body, "timeout": timeout}
    try:
        out = agent_request(_target(sock), "POST", "/http", req, timeout=timeout + 1)
    except AgentError as exc:  # refused, not running, going away with its testbed
        raise ConnectionError(str(exc)) from None
    return int(out["status"]), str(out["body"]).encode()


def emulator_request(
    testbed_id: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    timeout: float = 3.0,
) -> tuple[int, dict[str, Any]]:
    """One HTTP exchange with the emulator's control server in the testbed's emu box."""
    status, raw = box_http(testbed_id, "emu", EMULATOR_CONTROL[1], method, path, body, timeout)
    try:
        parsed = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        parsed = {"text": raw.decode(errors="replace")[:2000]}
    return status, parsed if isinstance(parsed, dict) else {"value": parsed}


# What a live view needs of a TCP_INFO sample (satlab.agent.tcpinfo); the rest stays in the result.
LIVE_TCP_FIELDS = (
    "sport",
    "dport",
    "cc",
    "cwnd",
    "ssthresh",
    "srtt_us",
    "delivery_rate_bps",
    "retrans_total",
    "mss",
)


def latest_tcp(testbed_id: str, timeout: float = 1.0) -> list[dict[str, Any]]:
    """The newest TCP_INFO sample of every sender connection in the testbed: each end host's
    agent (srvN, cliN: the runner starts sampling on the hosts that send) answers with the last
    sampling round; hosts that sample nothing answer with none."""
    from satlab.agent.unixhttp import AgentError
    from satlab.agent.unixhttp import request as agent_request
    from satlab.testbed.backend import agent_sockets

    out: list[dict[str, Any]] = []
    for host, sock in agent_sockets(testbed_id).items():
        if not host.startswith(("srv", "cli")):
            continue
        try:
            samples = agent_request(_target(sock), "GET", "/sampling/latest", timeout=timeout)
        except AgentError:
            continue  # an agent going away with its testbed: no sample this time
        for smp in samples.get("samples", []):
            out.append({"host": host, **{k: smp.get(k) for k in LIVE_TCP_FIELDS}})
    return out


def serve_pending(run_id: int, testbed_id: str | None) -> int:
    """Carries out the run's pending control requests; how many were handled."""
    handled = 0
    with db.new_session() as s:
        reqs = s.scalars(
            select(ControlRequest)
            .where(ControlRequest.run_id == run_id, ControlRequest.state == "pending")
            .order_by(ControlRequest.id)
            .with_for_update(skip_locked=True)
        ).all()
        for req in reqs:
            if testbed_id is None:
                status, resp = 503, {"error": "the run's testbed is not up yet"}
            else:
                try:
                    status, resp = emulator_request(testbed_id, "POST", "/control", req.body)
                except OSError as exc:
                    status, resp = 502, {"error": f"emulator control unreachable: {exc}"}
            req.state = "done" if status < 400 else "failed"
            req.status_code = status
            req.response = resp
            req.done_at = datetime.now(UTC)
            handled += 1
        s.commit()
    return handled
