"""Every contract the Rust binaries own is committed as the binary prints it, and every type
generated from one is current (scripts/schemas.sh --check: the JSON Schemas under api/satlab/, the
Python records in api/satlab/records/, the TypeScript records in web/src/api/records/)."""

from __future__ import annotations

import subprocess

from satlab.settings import REPO_ROOT


def test_committed_contracts_and_generated_types_are_current() -> None:
    r = subprocess.run(
        [str(REPO_ROOT / "scripts" / "schemas.sh"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr + r.stdout
