"""The HTTP service: the REST API under /api and the built web UI at /.

Every /api endpoint but /api/health needs `Authorization: Bearer <token>` (service/auth.py);
/docs and /openapi.json are open. Errors are JSON `{"detail": "...", "errors": ["field: reason"]}`.
A request body over `max_request_bytes` is refused with 413 before anything reads it (BodyLimit).
"""

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError, SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from satlab import __version__, db
from satlab.reproduce import routes as reproductions
from satlab.service import janitor as janitors
from satlab.service.errors import ServiceError
from satlab.service.routes import (
    admin,
    boxes,
    experiments,
    link,
    linktools,
    opensand,
    runs,
    scenarios,
)
from satlab.service.runs import WorkerIdentity
from satlab.settings import get_settings


def _field(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] if len(parts) > 1 else parts
    return ".".join(parts) or "(request)"


class BodyTooLarge(Exception):
    """Raised into the app from receive() when the body passes the limit; aborts the request."""


class BodyLimit:
    """Refuses a request body over `max_bytes` with 413, before any route, dependency or the
    authentication sees it: at once when Content-Length says so, else as soon as the bytes
    received pass the limit (chunked bodies), without reading the rest.

    Pure ASGI, so it counts what the server hands over instead of buffering the body first."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _content_length(scope) > self.max_bytes:
            await self._refuse(scope, send)
            return
        received, over, started = 0, False, False

        async def counting_receive() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if over:
                return  # the app's own answer to BodyTooLarge (FastAPI makes it a 400): dropped
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not over:
                raise
        # A response already under way (none of the routes streams one while reading) cannot be
        # replaced; the server then closes the connection on the incomplete response.
        if over and not started:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        reason = f"over the {self.max_bytes}-byte limit (max_request_bytes)"
        response = JSONResponse(
            status_code=413,
            content={"detail": f"request body is {reason}", "errors": [f"(body): {reason}"]},
            headers={"Connection": "close"},  # the rest of the body is never read
        )
        await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _content_length(scope: Scope) -> int:
    """The declared body length; -1 when absent or not a number (the server refuses those)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else -1
    return -1


@asynccontextmanager
async def _lifespan(_: FastAPI) -> AsyncIterator[None]:
    """While the app serves, its janitor re-queues the runs of dead workers (service/janitor.py)."""
    janitor = janitors.for_api(WorkerIdentity(socket.gethostname(), os.getpid()))
    if janitor is not None:
        janitor.start()
    try:
        yield
    finally:
        if janitor is not None:
            janitor.stop()


def _service_error(_: Request, exc: ServiceError) -> JSONResponse:
    errors = getattr(exc, "errors", None) or []
    return JSONResponse(
        status_code=exc.status,
        content={"detail": exc.detail, "errors": errors},
        headers=exc.headers,
    )


def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    lines = [f"{_field(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
    return JSONResponse(status_code=422, content={"detail": "\n".join(lines), "errors": lines})


def _data_error(_: Request, exc: DataError) -> JSONResponse:
    # Values PostgreSQL refuses (NUL characters, numbers out of range) are the client's.
    msg = str(exc.orig or exc).splitlines()[0]
    return JSONResponse(status_code=422, content={"detail": f"(request): {msg}", "errors": [msg]})


def health() -> JSONResponse:
    """Service liveness and database reachability; 503 when the database is down."""
    try:
        pg = db.server_version()
    except SQLAlchemyError as exc:
        return JSONResponse(
            status_code=503,
            content={
                "status": "degraded",
                "database": "unreachable",
                "detail": str(exc.__cause__ or exc).splitlines()[0],
                "version": __version__,
            },
        )
    return JSONResponse({"status": "ok", "database": "ok", "postgres": pg, "version": __version__})


def _openapi_with_bearer(app: FastAPI) -> dict[str, object]:
    """The generated document with bearer authentication on every operation but the health."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        schema.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"}
        }
        for path, ops in schema["paths"].items():
            if path != "/api/health":
                for op in ops.values():
                    op["security"] = [{"bearer": []}]
        app.openapi_schema = schema
    return app.openapi_schema


def create_app() -> FastAPI:
    app = FastAPI(
        lifespan=_lifespan,
        title="SatLab",
        version=__version__,
        description="GEO satellite link experiments: scenarios, experiments, runs, results. "
        "Authenticate with `Authorization: Bearer <token>` (see docs/api.md).",
    )
    app.add_middleware(BodyLimit, max_bytes=get_settings().max_request_bytes)
    app.exception_handler(ServiceError)(_service_error)
    app.exception_handler(RequestValidationError)(_validation_error)
    app.exception_handler(DataError)(_data_error)
    app.add_api_route("/api/health", health, methods=["GET"], tags=["system"])
    for module in (
        scenarios,
        experiments,
        runs,
        reproductions,
        link,
        linktools,
        opensand,
        admin,
        boxes,
    ):
        app.include_router(module.router)
    app.openapi = lambda: _openapi_with_bearer(app)  # type: ignore[method-assign]

    web = get_settings().web_dist
    if (web / "index.html").is_file():
        app.mount("/", StaticFiles(directory=web, html=True), name="web")
    return app


app = create_app()
