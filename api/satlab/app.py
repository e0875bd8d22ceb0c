"""The HTTP service: the REST API under /api and the built web UI at /.

Every /api endpoint but /api/health needs `Authorization: Bearer <token>` (service/auth.py);
/docs and /openapi.json are open. Errors are JSON `{"detail": "...", "errors": ["field: reason"]}`.
"""

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError, SQLAlchemyError

from satlab import __version__, db
from satlab.service.errors import ServiceError
from satlab.service.routes import admin, experiments, runs, scenarios
from satlab.settings import get_settings


def _field(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] if len(parts) > 1 else parts
    return ".".join(parts) or "(request)"


def create_app() -> FastAPI:
    app = FastAPI(
        title="SatLab",
        version=__version__,
        description="GEO satellite link experiments: scenarios, experiments, runs, results. "
        "Authenticate with `Authorization: Bearer <token>` (see docs/api.md).",
    )

    @app.exception_handler(ServiceError)
    def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        errors = getattr(exc, "errors", None) or []
        return JSONResponse(
            status_code=exc.status,
            content={"detail": exc.detail, "errors": errors},
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        lines = [f"{_field(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": "\n".join(lines), "errors": lines})

    @app.exception_handler(DataError)
    def data_error(_: Request, exc: DataError) -> JSONResponse:
        # Values PostgreSQL refuses (NUL characters, numbers out of range) are the client's.
        msg = str(exc.orig or exc).splitlines()[0]
        return JSONResponse(
            status_code=422, content={"detail": f"(request): {msg}", "errors": [msg]}
        )

    @app.get("/api/health", tags=["system"])
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
        return JSONResponse(
            {"status": "ok", "database": "ok", "postgres": pg, "version": __version__}
        )

    for module in (scenarios, experiments, runs, admin):
        app.include_router(module.router)

    def openapi() -> dict[str, object]:
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

    app.openapi = openapi  # type: ignore[method-assign]

    web = get_settings().web_dist
    if (web / "index.html").is_file():
        app.mount("/", StaticFiles(directory=web, html=True), name="web")
    return app


app = create_app()
