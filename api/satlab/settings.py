"""One place for the service's settings, read from the environment (SATLAB_*, DATABASE_URL)."""

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SATLAB_", extra="ignore")

    # scripts/pg.sh url prints the project's own cluster; the Makefile exports it.
    database_url: str = Field(validation_alias="DATABASE_URL")
    # The built web UI (web/dist) is served at / when present.
    web_dist: Path = REPO_ROOT / "web" / "dist"


@lru_cache
def get_settings() -> Settings:
    return Settings()  # database_url comes from the environment
