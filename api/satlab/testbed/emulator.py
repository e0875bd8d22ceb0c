"""Where the emulator binary is, and a pre-flight check of a link configuration with it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
EMULATOR_BIN = Path(os.environ.get("SATLAB_EMULATOR", REPO_ROOT / "target/release/satlab-emulator"))


class LinkConfigError(ValueError):
    """The emulator refused a link configuration; the message names the field or file line."""


def check_link(link: dict[str, Any]) -> None:
    """Validate a scenario's link with the emulator itself (`--check`), so a bad field fails
    before any testbed is built, with the emulator's own message."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(link, f)
        f.flush()
        r = subprocess.run(
            [str(EMULATOR_BIN), "--config", f.name, "--check"],
            capture_output=True,
            text=True,
            check=False,
        )
    if r.returncode != 0:
        msg = r.stderr.strip().replace(f.name, "link")
        raise LinkConfigError(msg or f"emulator --check exited {r.returncode}")
