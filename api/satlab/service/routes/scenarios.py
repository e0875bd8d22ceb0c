"""Scenarios (with revisions, YAML import/export), uploaded link files and the scenario schema."""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy.orm import Session

from satlab import catalog, db
from satlab.db import get_session
from satlab.scenario import json_schema
from satlab.service import files, scenarios
from satlab.service.auth import Submitter, Viewer
from satlab.service.errors import Invalid, TooLarge
from satlab.service.models import FILE_KINDS
from satlab.service.routes import Id, Limit, Offset
from satlab.service.schemas import FileOut, Page, RevisionOut, ScenarioIn, ScenarioOut, SchemeOut
from satlab.settings import get_settings

router = APIRouter(prefix="/api", tags=["scenarios"])
DB = Annotated[Session, Depends(get_session)]

YAML_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/yaml": {"schema": {"type": "string"}}},
    }
}
FILE_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


async def _body(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"body is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("(body): the scenario must be UTF-8 text") from None


@router.get("/scenario-schema", summary="The scenario JSON Schema (version 1)")
def scenario_schema(_: Viewer) -> JSONResponse:
    return JSONResponse(json.loads(json_schema()))


@router.get(
    "/schemes",
    response_model=list[SchemeOut],
    response_model_exclude_unset=True,  # each configuration as written in the catalogue
    summary="The transport schemes on offer, each a ready-made scenario configuration",
)
def list_schemes(_: Viewer) -> list[SchemeOut]:
    return [SchemeOut.model_validate(s) for s in catalog.schemes()]


@router.get("/scenarios", response_model=Page[ScenarioOut])
def list_scenarios(
    who: Viewer, session: DB, name: str | None = None, limit: Limit = 50, offset: Offset = 0
) -> Page[ScenarioOut]:
    rows, total = scenarios.list_scenarios(session, who, name, limit, offset)
    return Page(items=[ScenarioOut.of(s) for s in rows], total=total, limit=limit, offset=offset)


@router.post("/scenarios", status_code=201, response_model=ScenarioOut)
def create_scenario(who: Submitter, session: DB, body: ScenarioIn) -> ScenarioOut:
    rev = scenarios.create(session, who, body.yaml)
    return ScenarioOut.of(scenarios.get(session, who, rev.scenario_id))


@router.post(
    "/scenarios/import",
    response_model=ScenarioOut,
    openapi_extra=YAML_BODY,
    summary="Create or revise (by name) from a raw YAML body",
)
async def import_scenario(who: Submitter, request: Request, response: Response) -> ScenarioOut:
    text = _text(await _body(request, get_settings().max_scenario_bytes))

    def work() -> ScenarioOut:
        with db.new_session() as session:
            rev, created = scenarios.import_yaml(session, who, text)
            response.status_code = 201 if created else 200
            return ScenarioOut.of(scenarios.get(session, who, rev.scenario_id))

    return await anyio.to_thread.run_sync(work)


@router.get("/scenarios/{scenario_id}", response_model=ScenarioOut)
def get_scenario(who: Viewer, session: DB, scenario_id: Id) -> ScenarioOut:
    return ScenarioOut.of(scenarios.get(session, who, scenario_id))


@router.delete("/scenarios/{scenario_id}", status_code=204)
def delete_scenario(who: Submitter, session: DB, scenario_id: Id) -> Response:
    scenarios.delete(session, who, scenario_id)
    return Response(status_code=204)


@router.get("/scenarios/{scenario_id}/revisions", response_model=list[RevisionOut])
def list_revisions(who: Viewer, session: DB, scenario_id: Id) -> list[RevisionOut]:
    return [RevisionOut.of(r) for r in scenarios.get(session, who, scenario_id).revisions]


@router.post("/scenarios/{scenario_id}/revisions", status_code=201, response_model=RevisionOut)
def revise_scenario(who: Submitter, session: DB, scenario_id: Id, body: ScenarioIn) -> RevisionOut:
    return RevisionOut.of(scenarios.revise(session, who, scenario_id, body.yaml))


@router.get("/scenarios/{scenario_id}/revisions/{number}", response_model=RevisionOut)
def get_revision(who: Viewer, session: DB, scenario_id: Id, number: Id) -> RevisionOut:
    return RevisionOut.of(scenarios.revision(session, who, scenario_id, number))


@router.get(
    "/scenarios/{scenario_id}/yaml",
    response_class=PlainTextResponse,
    summary="Export a revision's YAML verbatim (default the latest)",
)
def export_yaml(
    who: Viewer,
    session: DB,
    scenario_id: Id,
    revision: Annotated[int | None, Query(ge=1, le=2_147_483_647)] = None,
) -> PlainTextResponse:
    rev = (
        scenarios.revision(session, who, scenario_id, revision)
        if revision
        else scenarios.latest(session, who, scenario_id)
    )
    return PlainTextResponse(
        rev.yaml,
        media_type="application/yaml",
        headers={"Content-Disposition": f'attachment; filename="{rev.spec["name"]}.yaml"'},
    )


@router.post(
    "/files",
    status_code=201,
    response_model=FileOut,
    openapi_extra=FILE_BODY,
    tags=["files"],
    summary="Upload a trace, delay file, MODCOD or PER table (raw body)",
)
async def upload_file(
    who: Submitter,
    request: Request,
    name: Annotated[str, Query(min_length=1, max_length=200)],
    kind: Annotated[str, Query(description=" | ".join(FILE_KINDS))],
) -> FileOut:
    content = await _body(request, get_settings().max_upload_bytes)

    def work() -> FileOut:
        with db.new_session() as session:
            return FileOut.of(files.upload(session, who, name, kind, content))

    return await anyio.to_thread.run_sync(work)


@router.get("/files", response_model=Page[FileOut], tags=["files"])
def list_files(
    _: Viewer, session: DB, name: str | None = None, limit: Limit = 50, offset: Offset = 0
) -> Page[FileOut]:
    rows, total = files.list_files(session, name, limit, offset)
    return Page(items=[FileOut.of(f) for f in rows], total=total, limit=limit, offset=offset)


@router.get("/files/{file_id}", response_model=FileOut, tags=["files"])
def get_file(_: Viewer, session: DB, file_id: Id) -> FileOut:
    return FileOut.of(files.get(session, file_id))


@router.get("/files/{file_id}/content", response_class=PlainTextResponse, tags=["files"])
def file_content(_: Viewer, session: DB, file_id: Id) -> Response:
    f = files.get(session, file_id)
    return Response(f.content, media_type="text/plain; charset=utf-8")
