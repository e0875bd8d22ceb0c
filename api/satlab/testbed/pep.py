"""The split-TCP PEP (satlab-pep, gateway/pep/README.md) at the satellite edges of a testbed: where
the binary is, the configuration file each edge gets from a configuration's `pep` section, and
starting/stopping it through the edge's host agent (kind=pep), as the gateway is.

At an edge the PEP intercepts TCP arriving on the LAN bridge `lan` (terrestrial side) and on `sat0`
(satellite side; with a gateway, sat0 is still the router's satellite-side interface, and `wan`
counts as satellite side too), so with
`edges: both` a connection is split twice: end host -> PEP (terrestrial), PEP -> PEP across the
emulator (the satellite leg, with the configured congestion control, buffers and initial window),
PEP -> end host (terrestrial).
"""

from __future__ import annotations

import time
from typing import Any

import yaml

from satlab.agent.requests import ProcessStart
from satlab.scenario import PepSettings
from satlab.settings import PEP_HTTP_LISTEN as HTTP_LISTEN
from satlab.testbed.gateway import OUTSIDE
from satlab.testbed.schemes import LoadedSchemes
from satlab.testbed.testbed import Testbed, TestbedError

START_CHECK_S = 0.3  # a PEP that cannot parse its file or install its rules exits at once


class PepFailed(TestbedError):
    pass


def edges(p: PepSettings, tb: Testbed) -> list[str]:
    """The roles a PEP runs at: `st` means every terminal's st edge (satlab.testbed.terminals)."""
    st_edges = tb.topo.edges[1:] if tb.topo else ["st"]
    return {"gw": ["gw"], "st": st_edges, "both": ["gw", *st_edges]}[p.edges]


def pep_config(
    p: PepSettings, role: str, gateway: bool = False, cc: str | None = None
) -> dict[str, Any]:
    """The PEP's YAML configuration (as a dict) for one edge: the testbed's part (edge,
    interception, HTTP endpoint) around the scenario's section as given (`settings`, without
    `edges`; `cc` names the per-edge instance of a project congestion control). With a gateway
    bump at the edge, TCP arriving on the bump's `wan` port counts as from the satellite too: the
    edge's kernel received the link's frames there while `wan` answered ARP (nft trace: iif
    "wan"); it answers none now (topology.build), and the entry stays as a guard."""
    settings = p.model_dump(exclude={"edges"})
    if cc:
        settings["congestion_control"] = cc
    return {
        "edge": "gw" if role == "gw" else "st",  # st2, ...: another terminal's st edge
        "intercept": {
            "terrestrial_interfaces": ["lan"],
            "satellite_interface": "sat0",
            "satellite_extra_interfaces": [OUTSIDE] if gateway else [],
        },
        "settings": settings,
        "http": {"listen": HTTP_LISTEN},
    }


def start(p: PepSettings | None, tb: Testbed, loaded: LoadedSchemes | None = None) -> list[str]:
    """Starts satlab-pep at the configured edges; returns the edges started. A project eBPF
    congestion control for the satellite leg was loaded on the edge with the end hosts' schemes
    (satlab.testbed.schemes); `loaded` names its instance there (None: kernel algorithms only)."""
    if p is None:
        return []
    roles = edges(p, tb)
    for role in roles:
        cc = loaded.cc_for(role, p.congestion_control) if loaded else p.congestion_control
        path = tb.dir / f"pep-{role}.yaml"
        path.write_text(yaml.safe_dump(pep_config(p, role, tb.gateway, cc), sort_keys=False))
        pep = ProcessStart(id="pep", kind="pep", args=["--config", str(path)])
        tb.agent(role, "POST", "/processes", pep)
    time.sleep(START_CHECK_S)
    for role in roles:
        st = tb.agent(role, "GET", "/processes/pep")
        if st["state"] != "running":
            raise PepFailed(f"pep {role} did not start: {st['stderr'].strip()[-500:]}")
    return roles


def stop(tb: Testbed, roles: list[str]) -> dict[str, Any]:
    """Stops the PEPs; returns each one's final record (counters and finished connections)."""
    out = {}
    for role in roles:
        st = tb.agent(role, "DELETE", "/processes/pep")
        if st["exit_code"] not in (0, -15):
            raise PepFailed(f"pep {role} failed: {st['stderr'].strip()[-500:]}")
        out[role] = st.get("result")
    return out
