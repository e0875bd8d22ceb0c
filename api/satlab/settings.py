"""One place for the service's settings, read from the environment (SATLAB_*, DATABASE_URL), and for
the repository's paths: the programs the runner starts and where they listen."""

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]


def _program(variable: str, default: Path) -> Path:
    """A program's path: SATLAB_<NAME> when set (read once, at import), else the build's."""
    return Path(os.environ.get(variable, default))


# The data planes (`cargo build --release`) and the end hosts' scheme loader (`make -C endhosts`).
EMULATOR_BIN = _program("SATLAB_EMULATOR", REPO_ROOT / "target/release/satlab-emulator")
GATEWAY_BIN = _program("SATLAB_GATEWAY", REPO_ROOT / "target/release/satlab-gateway")
PEP_BIN = _program("SATLAB_PEP", REPO_ROOT / "target/release/satlab-pep")
WITHHOLD_BIN = _program("SATLAB_WITHHOLD", REPO_ROOT / "target/release/satlab-withhold")
ENDHOSTS_BUILD = REPO_ROOT / "endhosts" / "build"
LOADER_BIN = ENDHOSTS_BUILD / "sl-scheme"


def phy_receiver_bin() -> Path:
    """satlab-phy (`cargo build --release -p dvbs2phy`), SATLAB_PHY_BIN read at each call."""
    return _program("SATLAB_PHY_BIN", REPO_ROOT / "target/release/satlab-phy")


# The testbeds' state on this machine (read once, at import): a directory per namespace testbed,
# the directory shared with the box containers, and the hardware testbeds' state.
STATE_ROOT = Path(os.environ.get("SATLAB_STATE_DIR", "/run/satlab/testbeds"))
SHARED_DIR = Path(os.environ.get("SATLAB_SHARED_DIR", "/run/satlab/shared"))
HARDWARE_DIR = Path(os.environ.get("SATLAB_HARDWARE_DIR", "/run/satlab/hardware"))


def testbed_kind() -> str:
    """SATLAB_TESTBED: namespaces (the default), containers or hardware; read at each testbed."""
    return os.environ.get("SATLAB_TESTBED", "namespaces")


def controller_tls_paths() -> dict[str, str | None]:
    """The hardware testbed's mutual-TLS files, by variable name (unset ones are None)."""
    return {v: os.environ.get(v) for v in ("SATLAB_TLS_CERT", "SATLAB_TLS_KEY", "SATLAB_TLS_CA")}


def box_wait_s() -> float:
    """How long a hardware testbed waits for its boxes to be free (SATLAB_BOX_WAIT_S)."""
    return float(os.environ.get("SATLAB_BOX_WAIT_S", "600"))


# Where the runner makes each program listen, inside its box; the agent relays POST /http there.
EMULATOR_CONTROL_LISTEN = "127.0.0.1:8781"  # control and metrics, inside the emulator's box
GATEWAY_HTTP_LISTEN = "127.0.0.1:8791"  # inside the edge's namespace
PEP_HTTP_LISTEN = "127.0.0.1:8792"  # inside the edge's namespace, next to the gateway's 8791


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SATLAB_", extra="ignore")

    # scripts/pg.sh url prints the project's own cluster; the Makefile exports it.
    database_url: str = Field(validation_alias="DATABASE_URL")
    # The built web UI (web/dist) is served at / when present.
    web_dist: Path = REPO_ROOT / "web" / "dist"

    # Uploads and artifacts (bytes).
    max_upload_bytes: int = 4 << 20  # traces, delay files, MODCOD and PER tables
    max_scenario_bytes: int = 256 << 10  # one scenario YAML document
    max_artifact_bytes: int = 20 << 20  # one artifact (pcap, log); larger ones are not stored
    # Any request body, counted while it is read and before authentication (app.py BodyLimit);
    # uploads pass through it too, so it must stay above max_upload_bytes.
    max_request_bytes: int = 5 << 20
    # Finished runs' results and experiments' comparisons kept serialized, per API process
    # (service/doccache.py).
    doc_cache_bytes: int = 64 << 20

    # Auth: default per-token rate limit (requests per minute, token bucket, per API process).
    rate_limit_per_min: int = 600
    # Failed authentications (no token, unknown, revoked or expired) per client address and
    # minute, per API process; then 429 until the bucket refills.
    auth_failures_per_min: int = 120

    # Experiments: set-up overhead per run used in estimates until runs have measured it.
    default_setup_overhead_s: float = 3.0
    # Work one experiment, and one token's queued and running runs, may ask for (service/limits.py).
    max_runs_per_experiment: int = 2000
    max_experiment_hours: float = 72.0
    max_pending_runs_per_token: int = 5000
    max_pending_hours_per_token: float = 168.0

    # Workers.
    heartbeat_period_s: float = 3.0  # a running run's heartbeat_at is refreshed this often
    stale_after_s: float = 20.0  # a running run without a heartbeat for this long is orphaned
    janitor_period_s: float = 10.0
    # The API's own janitor (service/janitor.py): re-queues the runs of dead workers even when no
    # worker is alive. 0 turns it off (the service tests drive the janitor by hand).
    api_janitor_period_s: float = 10.0
    max_attempts: int = 2  # a run orphaned by a dead worker is retried while attempt < this
    control_timeout_s: float = 10.0  # live control: how long the API waits for the worker

    @property
    def libpq_url(self) -> str:
        """The database URL without SQLAlchemy's driver suffix (for psycopg and procrastinate)."""
        return self.database_url.replace("postgresql+psycopg://", "postgresql://", 1)


@lru_cache
def get_settings() -> Settings:
    return Settings()  # database_url comes from the environment


class CheckLimits(BaseSettings):
    """Limits of the external checks the API runs per request (`satlab-emulator --check`).
    Apart from Settings because the command line and the workers run the check too, without a
    database URL."""

    model_config = SettingsConfigDict(env_prefix="SATLAB_", extra="ignore")

    check_timeout_s: float = 10.0  # then the check is killed and the link refused
    check_memory_bytes: int = 1 << 30  # address space (RLIMIT_AS); --check needs about 10 MiB


@lru_cache
def get_check_limits() -> CheckLimits:
    return CheckLimits()
