"""The satlab-gateway at both satellite edges of a testbed (gateway/README.md): where the binary is,
and the configuration file each edge gets from a configuration's `gateway` section.

With a gateway, each edge's satellite-side address sits on a veth `sat0` whose peer (`gwx` at the
gw edge, `stx` at the st edge) the gateway reads; the gateway writes to `wan`, cabled to the
emulator (topology.build(..., gateway=True)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from satlab.scenario import GatewaySettings
from satlab.settings import GATEWAY_HTTP_LISTEN as HTTP_LISTEN
from satlab.testbed.topology import GATEWAY_INSIDE

OUTSIDE = "wan"


def splice(edge: str, sat_interface: str) -> dict[str, str]:
    """POST /splice for a box that outlives the run (a compose or hardware edge): its satellite
    side `sat_interface` becomes the veth toward the gateway's `inside` port, and the NIC toward
    the emulator is renamed OUTSIDE, as topology.build wires a namespace edge."""
    return {"interface": sat_interface, "inside": GATEWAY_INSIDE[edge], "outside": OUTSIDE}


def unsplice(sat_interface: str) -> dict[str, str]:
    """POST /unsplice: the edge as it was before `splice` (nothing to undo is no error)."""
    return {"interface": sat_interface, "outside": OUTSIDE}


def gateway_config(
    g: GatewaySettings, role: str, sat_address: str, telemetry_socket: Path, seed: int
) -> dict[str, Any]:
    """The gateway's YAML configuration (as a dict) for one edge."""
    return {
        "role": role,
        "ports": {"inside": GATEWAY_INSIDE[role], "outside": OUTSIDE},
        "seed": seed,
        "telemetry": {"socket": str(telemetry_socket), "reconnect_ms": 100},
        "egress": {
            "rate_factor": g.rate_factor,
            "aqm": g.aqm.model_dump(),
        },
        "eten": {
            "enabled": g.eten,
            "source_ip": sat_address,
            "hmac_key_hex": g.eten_hmac_key_hex,
            "rate_limit_per_s": g.eten_rate_limit_per_s,
        },
        "ceten": {"enabled": g.ceten, "reflect": g.ceten_reflect, "alpha": g.ceten_alpha},
        "ern": {"enabled": g.ern, "ports": list(g.ern_ports)},
        "http": {"listen": HTTP_LISTEN},
    }
