"""Thin REST routes over the domain modules; every one needs a token (service/auth.py)."""

from typing import Annotated

from fastapi import Path, Query

Id = Annotated[int, Path(ge=1, le=2_147_483_647)]
Limit = Annotated[int, Query(ge=1, le=500)]
Offset = Annotated[int, Query(ge=0, le=1_000_000)]
