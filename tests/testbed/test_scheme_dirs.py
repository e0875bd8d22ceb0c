"""The agent makes a scheme loader's pin directory and traffic cgroup in its own box
(agent.server.scheme_dirs), as a compose box needs, and removes them when the loader ends; it
refuses paths outside PIN_ROOT and CGROUP_ROOT, naming the option."""

from __future__ import annotations

import secrets
from pathlib import Path

from satlab.agent.server import Managed, scheme_dirs
from satlab.testbed.schemes import CGROUP_ROOT, PIN_ROOT


def test_refuses_paths_outside_the_roots() -> None:
    made, error = scheme_dirs(["--pin-dir", "/tmp/pins"])
    assert made == [] and error == f"--pin-dir: /tmp/pins is not a directory of {PIN_ROOT}"
    made, error = scheme_dirs(["--cgroup", str(CGROUP_ROOT / "a" / "b")])
    assert made == [] and error and error.startswith("--cgroup: ")


def test_makes_and_removes_them(tmp_path: Path) -> None:
    name = f"test-{secrets.token_hex(3)}"
    pins, cg = PIN_ROOT / name, CGROUP_ROOT / f"{name}-srv1"
    made, error = scheme_dirs(["--object", "x.o", "--pin-dir", str(pins), "--cgroup", str(cg)])
    try:
        assert error is None and made == [pins, cg]
        assert PIN_ROOT.is_dir() and (cg / "cgroup.procs").exists()
        pins.mkdir()  # what the loader does
        (pins / "stale").mkdir()  # bpffs holds no plain files: a directory stands in for a pin
        p = Managed(tmp_path, "scheme-x", ["true"])
        p.leftovers = made
        p.stop()
        p.close()
        p.remove_leftovers()
        assert not pins.exists() and not cg.exists()
    finally:
        if pins.exists():
            for d in pins.iterdir():
                d.rmdir()
            pins.rmdir()
        if cg.exists():
            cg.rmdir()
