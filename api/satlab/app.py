"""The HTTP service: the REST API under /api and the built web UI at /."""

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import SQLAlchemyError

from satlab import __version__, db
from satlab.settings import get_settings


def create_app() -> FastAPI:
    app = FastAPI(title="SatLab", version=__version__)

    @app.get("/api/health")
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

    web = get_settings().web_dist
    if (web / "index.html").is_file():
        app.mount("/", StaticFiles(directory=web, html=True), name="web")
    return app


app = create_app()
