"""The PEP tier: real namespaces (satlab.testbed), the real emulator, satlab-pep at the edges;
each test checks it left no namespace behind (the testbed makes its interfaces inside them; the root
namespace's interfaces are not compared, other tiers and containers change them meanwhile)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from satlab.settings import PEP_BIN

sys.path.insert(0, str(Path(__file__).parent))
# The leftover check is the testbed tier's (tests/testbed/leftovers.py).
sys.path.insert(0, str(Path(__file__).parents[1] / "testbed"))
from leftovers import no_namespaces_left  # noqa: E402


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.fail("the PEP tier needs root (network namespaces)")
    if not PEP_BIN.exists():
        pytest.fail(f"{PEP_BIN} missing: build with cargo build --release (make setup does)")
    with no_namespaces_left():
        yield
