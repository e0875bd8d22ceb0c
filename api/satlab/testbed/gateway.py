"""The satlab-gateway at both satellite edges of a testbed (gateway/README.md): where the binary is,
and the configuration file each edge gets from a configuration's `gateway` section.

With a gateway, each edge's satellite-side address sits on a veth `sat0` whose peer (`gwx` at the
gw edge, `stx` at an st edge) the gateway reads; the gateway writes to `wan`, cabled to the
emulator (topology.build(..., gateway=True)). With several terminals of a beam every terminal's st
edge (st, st2, ...) runs one, as an `st` gateway; the gw edge runs one for all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from satlab.gateway_settings import GatewaySettings
from satlab.settings import GATEWAY_HTTP_LISTEN as HTTP_LISTEN
from satlab.testbed.topology import gateway_inside

OUTSIDE = "wan"


def splice(edge: str, sat_interface: str) -> dict[str, str]:
    """POST /splice for a box that outlives the run (a compose or hardware edge): its satellite
    side `sat_interface` becomes the veth toward the gateway's `inside` port, and the NIC toward
    the emulator is renamed OUTSIDE, as topology.build wires a namespace edge."""
    return {"interface": sat_interface, "inside": gateway_inside(edge), "outside": OUTSIDE}


def unsplice(sat_interface: str) -> dict[str, str]:
    """POST /unsplice: the edge as it was before `splice` (nothing to undo is no error)."""
    return {"interface": sat_interface, "outside": OUTSIDE}


def role(edge: str) -> str:
    """The gateway's `role` at an edge: `gw`, or `st` at every terminal's st edge."""
    return "gw" if edge == "gw" else "st"


def gateway_config(
    g: GatewaySettings, edge: str, sat_address: str, telemetry_socket: Path, seed: int
) -> dict[str, Any]:
    """The gateway's YAML configuration (as a dict) for one edge (gw, st, st2, ...): the
    scenario's section (the file's own sections, satlab.gateway_settings) merged under the
    testbed's part (role, ports, seed, telemetry, the notices' source address, HTTP endpoint)."""
    sections = g.file_sections()
    return {
        "role": role(edge),
        "ports": {"inside": gateway_inside(edge), "outside": OUTSIDE},
        "seed": seed,
        "telemetry": {"socket": str(telemetry_socket), "reconnect_ms": 100},
        **sections,
        "eten": {**sections.get("eten", {}), "source_ip": sat_address},
        "http": {"listen": HTTP_LISTEN},
    }
