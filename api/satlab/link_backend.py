"""`link.backend`: which emulator carries a scenario's link.

`satlab` (the default) is the built-in emulator. `opensand` asks for OpenSAND 8's entities
instead; the runner checks for its binaries before building anything and fails with an error that
names the missing ones and how to install them (README.md, "OpenSAND as the link"). Running the
entities is not implemented yet: with the binaries present the run still fails, saying so.
"""

from __future__ import annotations

import shutil
from typing import Any

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


def missing_binaries() -> list[str]:
    return [b for b in OPENSAND_BINARIES if shutil.which(b) is None]


def require_backend(link: dict[str, Any]) -> None:
    """Raises BackendUnavailable when the link's backend cannot run here."""
    if backend_of(link) != "opensand":
        return
    missing = missing_binaries()
    if missing:
        raise BackendUnavailable(
            f"link.backend: opensand needs {', '.join(missing)}, not found on PATH; " + INSTALL_HINT
        )
    raise BackendUnavailable(
        "link.backend: opensand: OpenSAND's binaries are installed, but this runner cannot yet "
        "start its entities; export the link (`satlab export opensand SCENARIO DIR`) and run "
        "them by hand, or use backend: satlab"
    )
