"""API tokens: `Authorization: Bearer <token>`, roles, scopes, per-token rate limits.

Tokens are random (`sl_` + 43 url-safe characters), shown once at creation and stored only as
their SHA-256. Roles are ordered: viewer (read everything) < submitter (+ scenarios, files,
experiments, live control of its own runs) < admin (+ tokens, anything of anyone). A token's
scope, when set, is a list of scenario-name patterns (fnmatch, e.g. `ci-*`) it may read and
submit; a scoped token sees only experiments of those scenarios.

Rate limit: a token bucket per token and per API process (capacity = the per-minute limit,
refilled continuously); with several API processes the effective limit is multiplied by their
number. Exceeding it gives 429 with Retry-After.

Failed authentications (no token, or one that is unknown, revoked or expired) take from a bucket
of the client's address (`auth_failures_per_min`, default 120); while it is empty every request
from that address, with a valid token or not, gets 429 with Retry-After before its token is
looked up. Behind a reverse proxy the address is the one uvicorn takes from X-Forwarded-For
(`--forwarded-allow-ips`).

Token cache: a valid token's row is kept in the API process for TOKEN_CACHE_TTL_S (5 s), so a
burst of requests costs one lookup instead of one each (the lookup was a query per request).
A revocation through this process (revoke_token) drops the entry at once; one made elsewhere
(another API process, `satlab token revoke`) is honoured within TOKEN_CACHE_TTL_S. Expiry is
checked on every request. Unknown tokens are never cached, so the cache holds at most as many
entries as there are valid tokens in use (bounded by TOKEN_CACHE_MAX besides).
"""

from __future__ import annotations

import fnmatch
import hashlib
import secrets
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.service.errors import Forbidden, NotFound, TooManyRequests, Unauthorized
from satlab.service.models import ROLES, ApiToken
from satlab.settings import get_settings

TOKEN_PREFIX = "sl_"
LAST_USED_WRITE_PERIOD_S = 60.0
MAX_BUCKETS = 10_000  # above this many, buckets idle for a minute (so full) are dropped
TOKEN_CACHE_TTL_S = 5.0  # a revocation made in another process takes effect within this
TOKEN_CACHE_MAX = 1_000  # entries; when full, the cache is emptied (valid tokens are few)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    id: int
    name: str
    role: str
    scope: tuple[str, ...] | None
    rate_limit_per_min: int

    def at_least(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)

    def may_use(self, scenario_name: str) -> bool:
        return self.scope is None or any(fnmatch.fnmatchcase(scenario_name, p) for p in self.scope)

    def check_scenario(self, scenario_name: str) -> None:
        if not self.may_use(scenario_name):
            raise Forbidden(f"this token's scope does not include scenario {scenario_name!r}")

    def owns_or_admin(self, owner_id: int | None, what: str) -> None:
        if self.role != "admin" and owner_id != self.id:
            raise Forbidden(f"only the {what}'s owner or an admin may do this")


def create_token(
    session: Session,
    name: str,
    role: str,
    scope: list[str] | None = None,
    rate_limit_per_min: int | None = None,
    expires_in_days: float | None = None,
) -> tuple[ApiToken, str]:
    """A new token row and the token itself (the only time it is known)."""
    if role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        name=name,
        role=role,
        token_hash=hash_token(token),
        scope=scope,
        rate_limit_per_min=rate_limit_per_min,
        expires_at=datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    session.add(row)
    session.flush()
    return row, token


def revoke_token(session: Session, token_id: int) -> ApiToken:
    row = session.get(ApiToken, token_id)
    if row is None:
        raise NotFound(f"token {token_id} does not exist")
    if row.revoked_at is None:
        row.revoked_at = datetime.now(UTC)
    tokens.forget(row.token_hash)
    return row


@dataclass(frozen=True)
class _Valid:
    """What authentication needs of a token row (the row itself belongs to its session)."""

    id: int
    name: str
    role: str
    scope: tuple[str, ...] | None
    rate_limit_per_min: int | None
    expires_at: datetime | None


class TokenCache:
    """token hash -> (_Valid, monotonic time it was read); entries older than ttl_s are read
    again from the database."""

    def __init__(self, ttl_s: float, max_entries: int) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[_Valid, float]] = {}

    def get(self, token_hash: str) -> _Valid | None:
        with self._lock:
            hit = self._entries.get(token_hash)
        if hit is None or time.monotonic() - hit[1] >= self.ttl_s:
            return None
        return hit[0]

    def put(self, token_hash: str, valid: _Valid) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[token_hash] = (valid, time.monotonic())

    def forget(self, token_hash: str) -> None:
        with self._lock:
            self._entries.pop(token_hash, None)

    def __len__(self) -> int:
        return len(self._entries)

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()


tokens = TokenCache(TOKEN_CACHE_TTL_S, TOKEN_CACHE_MAX)


class TokenBuckets:
    """In-process token buckets: one per API token (key: its id) and one per client address for
    failed authentications (key: ("failed", address))."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[Hashable, tuple[float, float]] = {}  # key -> (tokens, last refill)

    def take(self, key: Hashable, per_min: int) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        return self._wait(key, per_min, take=True)

    def peek(self, key: Hashable, per_min: int) -> float:
        """Like take, without taking anything."""
        return self._wait(key, per_min, take=False)

    def _wait(self, key: Hashable, per_min: int, take: bool) -> float:
        now = time.monotonic()
        rate = per_min / 60.0
        with self._lock:
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_full(now)
            tokens, last = self._buckets.get(key, (float(per_min), now))
            tokens = min(float(per_min), tokens + (now - last) * rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0 if take else tokens, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / rate

    def _forget_full(self, now: float) -> None:
        # One bucket per client address that ever failed would grow without end; a bucket left
        # alone for a minute is full again, the same as no bucket.
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60.0}

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()


buckets = TokenBuckets()
_last_used_written: dict[int, float] = {}


def _retry_after(wait: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, round(wait + 0.5)))}


def _refuse_failing_client(client: str) -> None:
    """429 while the client's address has used up its failed authentications."""
    per_min = get_settings().auth_failures_per_min
    wait = buckets.peek(("failed", client), per_min)
    if wait > 0:
        raise TooManyRequests(
            f"more than {per_min} failed authentications per minute from {client}",
            _retry_after(wait),
        )


def _valid_token(session: Session, authorization: str | None) -> _Valid:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized(
            "an API token is required: Authorization: Bearer <token>",
            {"WWW-Authenticate": "Bearer"},
        )
    digest = hash_token(authorization[7:].strip())
    valid = tokens.get(digest)
    if valid is None:
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
        if row is not None and row.revoked_at is None:
            valid = _Valid(
                row.id,
                row.name,
                row.role,
                tuple(row.scope) if row.scope is not None else None,
                row.rate_limit_per_min,
                row.expires_at,
            )
            tokens.put(digest, valid)
    if valid is None or (valid.expires_at and valid.expires_at <= datetime.now(UTC)):
        raise Unauthorized(
            "the token is unknown, revoked or expired", {"WWW-Authenticate": "Bearer"}
        )
    return valid


def authenticate(
    session: Session, authorization: str | None, client: str | None = None
) -> Principal:
    """The token's Principal; `client` (the caller's address) is charged for a failure and
    refused with 429 while it has too many (no limit without it)."""
    if client is not None:
        _refuse_failing_client(client)
    try:
        row = _valid_token(session, authorization)
    except Unauthorized:
        if client is not None:
            buckets.take(("failed", client), get_settings().auth_failures_per_min)
        raise
    now = datetime.now(UTC)
    per_min = row.rate_limit_per_min or get_settings().rate_limit_per_min
    wait = buckets.take(row.id, per_min)
    if wait > 0:
        raise TooManyRequests(
            f"rate limit of {per_min} requests per minute exceeded", _retry_after(wait)
        )
    mono = time.monotonic()
    if mono - _last_used_written.get(row.id, -1e9) > LAST_USED_WRITE_PERIOD_S:
        _last_used_written[row.id] = mono
        session.execute(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=now))
        session.commit()
    return Principal(row.id, row.name, row.role, row.scope, per_min)


def require(role: str) -> Any:
    """A FastAPI dependency giving the caller's Principal if its role is at least `role`."""

    def dependency(
        request: Request, session: Annotated[Session, Depends(get_session)]
    ) -> Principal:
        client = request.client.host if request.client else "(unknown)"
        p = authenticate(session, request.headers.get("authorization"), client)
        if not p.at_least(role):
            raise Forbidden(f"this needs the {role} role; the token has {p.role}")
        return p

    return Depends(dependency)


Viewer = Annotated[Principal, require("viewer")]
Submitter = Annotated[Principal, require("submitter")]
Admin = Annotated[Principal, require("admin")]
