"""Tokens (admin), who am I, Prometheus metrics (the service's, and the live runs')."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.service import auth, live_metrics, metrics
from satlab.service.auth import Admin, Viewer
from satlab.service.models import ApiToken
from satlab.service.routes import Id
from satlab.service.schemas import TokenCreated, TokenIn, TokenOut, WhoAmI

router = APIRouter(prefix="/api", tags=["admin"])
DB = Annotated[Session, Depends(get_session)]


@router.get("/whoami", response_model=WhoAmI)
def whoami(who: Viewer) -> WhoAmI:
    return WhoAmI(
        id=who.id,
        name=who.name,
        role=who.role,
        scope=list(who.scope) if who.scope is not None else None,
        rate_limit_per_min=who.rate_limit_per_min,
    )


@router.get("/tokens", response_model=list[TokenOut])
def list_tokens(_: Admin, session: DB) -> list[TokenOut]:
    return [TokenOut.of(t) for t in session.scalars(select(ApiToken).order_by(ApiToken.id))]


@router.post("/tokens", status_code=201, response_model=TokenCreated)
def create_token(_: Admin, session: DB, body: TokenIn) -> TokenCreated:
    row, token = auth.create_token(
        session, body.name, body.role, body.scope, body.rate_limit_per_min, body.expires_in_days
    )
    session.commit()
    return TokenCreated(**TokenOut.of(row).model_dump(), token=token)


@router.delete("/tokens/{token_id}", response_model=TokenOut)
def revoke_token(_: Admin, session: DB, token_id: Id) -> TokenOut:
    row = auth.revoke_token(session, token_id)
    session.commit()
    return TokenOut.of(row)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics (queue depth, runs by state, run durations, worker liveness)",
)
def prometheus(_: Viewer, session: DB) -> PlainTextResponse:
    return PlainTextResponse(metrics.render(session), media_type="text/plain; version=0.0.4")


@router.get(
    "/metrics/runs",
    response_class=PlainTextResponse,
    summary="Prometheus metrics of every running run's emulator, gateways and PEPs, labelled "
    "with run, experiment, scenario, configuration, component and box",
)
def prometheus_runs(_: Viewer, session: DB) -> PlainTextResponse:
    return PlainTextResponse(live_metrics.render(session), media_type="text/plain; version=0.0.4")
