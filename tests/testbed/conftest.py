"""Testbed tests run as root with real namespaces; each test checks it left nothing behind."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from satlab.testbed import topology

ROOT = Path(__file__).resolve().parents[2]


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines()}


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.fail("testbed tests need root (network namespaces)")
    # Each test gets its own state directory, so the sweeper of a test never sees another's.
    monkeypatch.setattr("satlab.testbed.testbed.STATE_ROOT", tmp_path / "state")
    before_ns = set(topology.project_namespaces())
    before_links = root_links()
    yield
    assert set(topology.project_namespaces()) == before_ns, "namespaces left behind"
    assert root_links() == before_links, "interfaces left behind in the root namespace"


@pytest.fixture
def emulator_bin() -> Path:
    path = ROOT / "target/release/satlab-emulator"
    if not path.exists():
        pytest.fail(f"{path} missing: build with cargo build --release (make setup does)")
    return path
