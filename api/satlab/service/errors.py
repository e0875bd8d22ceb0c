"""Errors the domain modules raise; the app turns them into HTTP responses (app.py)."""

from __future__ import annotations


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
