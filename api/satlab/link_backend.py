"""`link.backend`: which emulator carries a scenario's link.

`satlab` (the default) is the built-in emulator. `opensand` asks for OpenSAND 8's entities
instead (satlab.testbed.opensand); the runner checks for its binary before building anything and
fails with an error that names it and how to install it (README.md, "OpenSAND as the link").
The binary is `$SATLAB_OPENSAND_PREFIX/bin/opensand` when that variable is set (a build installed
under a prefix), else `opensand` on PATH (CNES's Debian packages).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from satlab.settings import testbed_kind

BACKENDS = ("satlab", "opensand")
# The OpenSAND 8 entity binary (gateway, satellite and terminal are one program, `opensand -i
# infrastructure.xml -t topology.xml -p profile.xml`), from CNES's Debian package `opensand`.
OPENSAND_BINARIES = ("opensand",)
INSTALL_HINT = (
    "install OpenSAND 8 from CNES's Debian repository (README.md, 'OpenSAND as the link': "
    "the net4sat-packages apt source, then `apt-get install opensand`)"
)


class BackendUnavailable(RuntimeError):
    """The link asks for a backend this machine cannot run."""


def backend_of(link: dict[str, Any]) -> str:
    b = link.get("backend", "satlab")
    return b if isinstance(b, str) else "satlab"


def emulator_link(link: dict[str, Any]) -> dict[str, Any]:
    """The link as the built-in emulator reads it (without `backend`, which is the runner's)."""
    return {k: v for k, v in link.items() if k != "backend"}


def _where(binary: str) -> Path | None:
    prefix = os.environ.get("SATLAB_OPENSAND_PREFIX")
    if prefix:
        p = Path(prefix) / "bin" / binary
        return p if os.access(p, os.X_OK) else None
    found = shutil.which(binary)
    return Path(found) if found else None


def opensand_binary() -> Path | None:
    """The OpenSAND entity program, or None when it is not installed."""
    return _where(OPENSAND_BINARIES[0])


def missing_binaries() -> list[str]:
    """The missing binaries, each as it was looked for (a path under SATLAB_OPENSAND_PREFIX)."""
    prefix = os.environ.get("SATLAB_OPENSAND_PREFIX")
    return [
        str(Path(prefix) / "bin" / b) if prefix else b
        for b in OPENSAND_BINARIES
        if _where(b) is None
    ]


def require_backend(link: dict[str, Any]) -> None:
    """Raises BackendUnavailable when the link's backend cannot run here."""
    if backend_of(link) != "opensand":
        return
    missing = missing_binaries()
    if missing:
        where = "" if os.environ.get("SATLAB_OPENSAND_PREFIX") else ", not found on PATH"
        raise BackendUnavailable(
            f"link.backend: opensand needs {', '.join(missing)}{where}; " + INSTALL_HINT
        )


def check_before_testbed(link: dict[str, Any]) -> None:
    """require_backend where the run's emulator box is this machine (a namespace testbed), so a
    missing OpenSAND fails the run before anything is built. A compose or hardware emulator box
    has binaries of its own: its agent runs require_backend when the link starts
    (satlab.agent.opensandbox), and the run fails there, naming what the box lacks."""
    if testbed_kind() == "namespaces":
        require_backend(link)
