"""Errors the domain modules raise; the app turns them into HTTP responses (app.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from satlab import linkmodel


class ServiceError(Exception):
    status = 400

    def __init__(self, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Forbidden(ServiceError):
    status = 403


class Unauthorized(ServiceError):
    status = 401


class TooManyRequests(ServiceError):
    status = 429


class TooLarge(ServiceError):
    status = 413


class Unavailable(ServiceError):
    status = 503


class Invalid(ServiceError):
    """422 with every problem as a `field: reason` line."""

    status = 422

    def __init__(self, errors: list[str] | str) -> None:
        self.errors = errors.splitlines() if isinstance(errors, str) else errors
        super().__init__("\n".join(self.errors))


@contextmanager
def link_model_answers(field: str = "", unavailable: str = "") -> Iterator[None]:
    """The Rust link model's two failures (satlab.linkmodel) as responses: a refused request is
    the client's 422 (`field: ` before the model's message, when given), no answer is a 503
    (`unavailable` before the reason)."""
    try:
        yield
    except linkmodel.LinkModelError as err:
        raise Invalid(f"{field}: {err}" if field else str(err)) from None
    except linkmodel.LinkModelUnavailable as err:
        raise Unavailable(f"{unavailable}{err}") from None
