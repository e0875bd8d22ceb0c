"""OpenSAND 8 interoperability: import an uploaded OpenSAND configuration (satlab/opensand/)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import anyio.to_thread
import yaml
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from satlab import db
from satlab.linkcheck import LinkConfigError, check_link
from satlab.opensand import archive
from satlab.opensand.cli import scenario_data, scenario_name
from satlab.opensand.importer import ImportResult, import_dir
from satlab.opensand.xmlsafe import OpenSandError
from satlab.scenario import (
    NAME_SEGMENT,
    ScenarioError,
    link_file_refs,
    map_link_files,
    parse_scenario,
)
from satlab.service import files, scenarios
from satlab.service.auth import Submitter
from satlab.service.errors import Invalid
from satlab.service.routes.scenarios import FILE_BODY, _body
from satlab.service.schemas import FileOut, ScenarioOut
from satlab.settings import EMULATOR_BIN, get_settings

router = APIRouter(prefix="/api", tags=["opensand"])

# The file kind of each link key that names a file (service/files.py validates each kind).
KIND_OF_KEY = {"modcod_table": "modcod", "file": "attenuation", "path": "delay"}


class NotMappedOut(BaseModel):
    file: str = Field(description="the configuration file the setting is in")
    setting: str = Field(description="its element path below <root> (list indices removed)")
    value: str
    reason: str


class ImportedFile(BaseModel):
    name: str = Field(description="the name the link uses")
    kind: str
    size_bytes: int


class OpenSandImportOut(BaseModel):
    link: dict[str, Any] = Field(description="the scenario's link section")
    not_mapped: list[NotMappedOut] = Field(description="every OpenSAND setting left out, by name")
    files: list[ImportedFile] = Field(description="files the link names (traces, tables)")
    entities: dict[str, Any] = Field(description="gateway, satellite and terminal ids found")
    scenario: ScenarioOut | None = Field(None, description="the scenario created (create=true)")
    uploads: list[FileOut] = Field(default_factory=list, description="uploads made (create=true)")


def _kinds(link: dict[str, Any]) -> dict[str, str]:
    return {name: KIND_OF_KEY[key] for _, key, name in link_file_refs(link)}


def _check(result: ImportResult, tmp: Path) -> None:
    """The imported link through the emulator's own check, with its files."""
    if not EMULATOR_BIN.is_file():
        return
    fdir = tmp / "files"
    fdir.mkdir()
    for name, content in result.files.items():
        (fdir / name).write_bytes(content)
    try:
        check_link(map_link_files(result.link, lambda _, v: str(fdir / v)))
    except LinkConfigError as err:
        raise Invalid([f"link: {err}".replace(str(fdir) + "/", "")]) from None


@router.post(
    "/opensand/import",
    response_model=OpenSandImportOut,
    openapi_extra=FILE_BODY,
    summary="Import an OpenSAND 8 configuration (a zip or tar of its directory, raw body)",
)
async def import_opensand(
    who: Submitter,
    request: Request,
    name: Annotated[
        str | None, Query(pattern=f"^{NAME_SEGMENT}$", description="scenario name")
    ] = None,
    create: Annotated[bool, Query(description="create the scenario and upload its files")] = False,
) -> OpenSandImportOut:
    """Reads the configuration (infrastructure, topology and profile XML of each entity, and
    the trace files they name) into a scenario's link and lists every setting it could not map.
    With `create=true` the link's files are uploaded as `opensand/NAME/FILE` and the scenario
    NAME (one bulk download with CUBIC around the link) is created."""
    body = await _body(request, get_settings().max_upload_bytes)

    def work() -> OpenSandImportOut:
        with tempfile.TemporaryDirectory(prefix="satlab-opensand-") as t:
            tmp = Path(t)
            (tmp / "in").mkdir()
            try:
                archive.unpack(body, tmp / "in")
                root = archive.config_root(tmp / "in")
                result = import_dir(root)
            except OpenSandError as err:
                raise Invalid([str(err).replace(str(tmp / "in") + "/", "")]) from None
            sc_name = name or scenario_name(root.name if root != tmp / "in" else "opensand")
            who.check_scenario(sc_name)
            _check(result, tmp)
        kinds = _kinds(result.link)
        out = OpenSandImportOut(
            link=result.link,
            not_mapped=[NotMappedOut(**n.__dict__) for n in result.not_mapped],
            files=[
                ImportedFile(name=n, kind=kinds[n], size_bytes=len(c))
                for n, c in result.files.items()
            ],  # fmt: skip
            entities=result.entities,
        )
        prefix = f"opensand/{sc_name}/"
        data = scenario_data(result, sc_name, "uploaded")
        data["link"] = map_link_files(result.link, lambda _, v: prefix + v)
        try:
            parse_scenario(data)
        except ScenarioError as err:
            raise Invalid(str(err)) from None
        if not create:
            return out
        header = "# Imported from an uploaded OpenSAND 8 configuration. Not mapped:\n"
        header += "".join(f"#   {n.line()}\n" for n in result.not_mapped)
        text = header + yaml.safe_dump(data, sort_keys=False)
        with db.new_session() as session:
            out.uploads = [
                FileOut.of(files.upload(session, who, prefix + n, kinds[n], c))
                for n, c in result.files.items()
            ]
            rev = scenarios.create(session, who, text)
            out.scenario = ScenarioOut.of(scenarios.get(session, who, rev.scenario_id))
        return out

    return await anyio.to_thread.run_sync(work)
