"""Testbed tests run as root with real namespaces; each test checks it left nothing behind."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from leftovers import no_namespaces_left

ROOT = Path(__file__).resolve().parents[2]


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines()}


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    """Nothing a test made may remain: no namespace (leftovers.py), no root interface."""
    if os.geteuid() != 0:
        pytest.fail("testbed tests need root (network namespaces)")
    before_links = root_links()
    with no_namespaces_left():
        yield
    assert not root_links() - before_links, "interfaces left behind in the root namespace"


@pytest.fixture(scope="session")
def emulator_bin() -> Path:
    path = ROOT / "target/release/satlab-emulator"
    if not path.exists():
        pytest.fail(f"{path} missing: build with cargo build --release (make setup does)")
    return path
