"""The hardware testbed's box registry (admin only): register, list, remove (service/boxes.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi import Path as PathParam
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.service import boxes
from satlab.service.auth import Admin
from satlab.service.boxes import BoxIn, BoxOut

router = APIRouter(prefix="/api/boxes", tags=["boxes"])
DB = Annotated[Session, Depends(get_session)]
Name = Annotated[str, PathParam(max_length=63)]


@router.get("", response_model=list[BoxOut], description=boxes.__doc__)
def list_boxes(_: Admin, session: DB) -> list[BoxOut]:
    return [BoxOut.of(b) for b in boxes.listed(session)]


@router.post("", status_code=201, response_model=BoxOut)
def register_box(_: Admin, session: DB, body: BoxIn) -> BoxOut:
    box = boxes.register(session, body)
    session.commit()
    return BoxOut.of(box)


@router.delete("/{name}", response_model=BoxOut)
def remove_box(_: Admin, session: DB, name: Name) -> BoxOut:
    box = boxes.remove(session, name)
    out = BoxOut.of(box)
    session.commit()
    return out
