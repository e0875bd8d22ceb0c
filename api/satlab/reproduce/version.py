"""The commit a reproduction belongs to: SATLAB_COMMIT, else a VERSION file at the repository root
(an image built without .git), else `git rev-parse HEAD` of the repository; "unknown" without any.
Read once per process: the service reports the commit it was started from."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

from satlab.settings import REPO_ROOT

COMMIT_LEN = 12  # enough to be unique in this repository, short enough for keys and file names


@lru_cache
def commit() -> str:
    env = os.environ.get("SATLAB_COMMIT", "").strip()
    if env:
        return env[:COMMIT_LEN]
    version = REPO_ROOT / "VERSION"
    if version.is_file():
        text = version.read_text().strip()
        if text:
            return text[:COMMIT_LEN]
    try:
        # safe.directory: the API runs as the user `satlab` in a checkout owned by root.
        out = subprocess.run(
            ["git", "-c", f"safe.directory={REPO_ROOT}", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip()[:COMMIT_LEN] or "unknown"
