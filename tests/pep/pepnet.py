"""A testbed (satlab.testbed: server, gw edge, emulator, st edge, client namespaces) with the
emulator running a fixed-rate GEO-like link and satlab-pep at the chosen edges, plus helpers to
run test peers (peer.py) inside its namespaces. Everything goes away with the `with` block."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from satlab.scenario import PepSettings
from satlab.testbed import pep as edge_pep
from satlab.testbed.testbed import Testbed

PEER = Path(__file__).with_name("peer.py")


def link(
    rate_bps: float, rtt_ms: float, corrupt_ber: float = 0.0, drop_ber: float = 0.0
) -> dict[str, Any]:
    """A fixed-rate link, the same both ways. `corrupt_ber`: bits flipped on the forward link (the
    receiving TCP discards the packet on its checksum); `drop_ber`: packets with an error dropped
    on the return link (loss of ACKs and upload data)."""
    one_way = rtt_ms / 2
    fwd: dict[str, Any] = {"kind": "fixed", "rate_bps": rate_bps, "delay_ms": one_way}
    ret: dict[str, Any] = {"kind": "fixed", "rate_bps": rate_bps, "delay_ms": one_way}
    if corrupt_ber:
        fwd["bit_errors"] = {"model": "uniform", "ber": corrupt_ber, "action": "deliver"}
    if drop_ber:
        ret["bit_errors"] = {"model": "uniform", "ber": drop_ber, "action": "drop"}
    return {"forward": fwd, "return": ret}


class PepNet:
    def __init__(self, link_cfg: dict[str, Any], pep: PepSettings | None, seed: int = 1) -> None:
        self.link, self.pep, self.seed = link_cfg, pep, seed
        self.tb = Testbed(1, 1)
        self.edges: list[str] = []
        self.procs: list[subprocess.Popen[str]] = []

    def __enter__(self) -> PepNet:
        tb = self.tb.__enter__()
        try:
            cfg = {
                **self.link,
                "seed": self.seed,
                "ports": {
                    "gw": {"kind": "af_packet", "interface": "gw"},
                    "st": {"kind": "af_packet", "interface": "st"},
                },
                "control": {"listen": "127.0.0.1:8781"},
                "telemetry": {"socket": str(tb.dir / "emulator.sock")},
            }
            path = tb.dir / "emulator.yaml"
            path.write_text(yaml.safe_dump(cfg))
            body = {"id": "emulator", "kind": "emulator", "args": ["--config", str(path)]}
            tb.agent("emu", "POST", "/processes", body)
            time.sleep(0.3)
            emu = tb.agent("emu", "GET", "/processes/emulator")
            assert emu["state"] == "running", emu["stderr"]
            # the end hosts run CUBIC whatever this machine's default is
            for role in ("srv1", "cli1"):
                tb.agent(role, "POST", "/sysctl", {"net.ipv4.tcp_congestion_control": "cubic"})
            self.edges = edge_pep.start(self.pep, tb)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        with contextlib.suppress(Exception):
            edge_pep.stop(self.tb, self.edges)
        self.tb.__exit__(None, None, None)

    def ns(self, role: str) -> str:
        assert self.tb.topo is not None
        return self.tb.topo.ns(role)

    def addr(self, role: str) -> str:
        assert self.tb.topo is not None
        return self.tb.topo.address(role)

    def serve(self, role: str, port: int, mode: str) -> subprocess.Popen[str]:
        """A peer.py server in `role`'s namespace; returns once it listens."""
        argv = [
            "ip",
            "netns",
            "exec",
            self.ns(role),
            sys.executable,
            str(PEER),
            "serve",
            str(port),
            mode,
        ]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        assert p.stdout is not None
        assert "listening" in p.stdout.readline()
        return p

    def run(self, role: str, *args: Any, timeout: float = 120) -> dict[str, Any]:
        """peer.py client command in `role`'s namespace; its JSON line."""
        argv = ["ip", "netns", "exec", self.ns(role), sys.executable, str(PEER), *map(str, args)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, r.stderr[-2000:] + self.pep_state()
        out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
        return out

    def pep_state(self) -> str:
        """Each PEP's counters and newest connection records, and the emulator's counters: what
        a failed transfer's message needs to tell a PEP fault from a link fault."""
        parts = []
        for edge in self.edges:
            try:
                counters = self.pep_get(edge, "/status")["counters"]
                conns = self.pep_get(edge, "/connections")["connections"][-4:]
                parts.append(f"\nPEP at {edge}: {counters}\n  newest connections: {conns}")
            except (AssertionError, subprocess.SubprocessError, ValueError, KeyError) as e:
                parts.append(f"\nPEP at {edge}: unreadable ({e})")
        emu = self.in_ns("emu", "curl", "-sf", "http://127.0.0.1:8781/status")
        parts.append(f"\nemulator status: {emu.stdout[-3000:] or emu.stderr}")
        # The link flips bits in ARP frames too (a non-IP frame is all payload to it): a flipped
        # sender address would leave an edge sending to a MAC nobody has (compare with `link`).
        for role in ("gw", "st"):
            for what in (["neigh", "show"], ["-br", "link"]):
                out = self.in_ns(role, "ip", *what)
                parts.append(f"\n{role} ip {' '.join(what)}: {out.stdout.strip()}")
        return "".join(parts)

    def in_ns(self, role: str, *argv: str) -> subprocess.CompletedProcess[str]:
        """A short command in `role`'s namespace (10 s at most), its output captured."""
        cmd = ["ip", "netns", "exec", self.ns(role), *argv]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10)

    def pep_get(self, role: str, path: str) -> dict[str, Any]:
        """GET on the PEP's HTTP endpoint inside the edge namespace."""
        url = urllib.parse.urljoin(f"http://{edge_pep.HTTP_LISTEN}", path)
        r = self.in_ns(role, "curl", "-sf", url)
        assert r.returncode == 0, r.stderr
        out: dict[str, Any] = json.loads(r.stdout)
        return out
