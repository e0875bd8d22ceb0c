"""Project congestion controls on a testbed's sending hosts, for the length of one run.

Each (host, project scheme) pair gets an `sl-scheme` process started through the host's agent
(kind `scheme`): it loads the scheme's eBPF object, registers a per-host instance of the congestion
control, attaches the scheme's tc ingress program to the host's interface and its sockops program
to the host's cgroup (CGROUP_ROOT/<testbed id>-<role>, where the agent then starts that host's
traffic) when the scheme has them, and pins the scheme's maps under PIN_ROOT/<testbed id>, where the
emulator's Oracle ETEN writer finds eten_notices. Senders load every scheme they use; receivers the
schemes that need them too (CETEN: the receiver reflects). Stopping the process (or its death)
detaches everything: registration and attachment are BPF links owned by it
(endhosts/loader/sl-scheme.c).
"""

from __future__ import annotations

import contextlib
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from satlab.agent.bpffs import CGROUP_ROOT, PIN_ROOT
from satlab.agent.requests import ProcessStart
from satlab.schemes import Scheme, instance_name, project_scheme
from satlab.settings import ENDHOSTS_BUILD

if TYPE_CHECKING:
    from satlab.testbed.testbed import Testbed

AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
READY_TIMEOUT_S = 10.0


class SchemeError(RuntimeError):
    pass


def pin_dir(testbed_id: str) -> Path:
    return PIN_ROOT / testbed_id


def cgroup_dir(testbed_id: str, role: str) -> Path:
    return CGROUP_ROOT / f"{testbed_id}-{role}"


def remove_pins(testbed_id: str) -> None:
    """What a killed loader left: pins (unlinking one frees the map once nothing uses it) and the
    hosts' cgroups (empty once the testbed's processes are gone)."""
    shutil.rmtree(pin_dir(testbed_id), ignore_errors=True)
    if CGROUP_ROOT.is_dir():
        for d in CGROUP_ROOT.glob(f"{testbed_id}-*"):
            with contextlib.suppress(OSError):
                d.rmdir()


@dataclass
class EtenOptions:
    """Sender-side validation of BETEN notices (endhosts/bpf/eten.bpf.c)."""

    hmac_key_hex: str | None = None
    rate_limit_per_s: int = 1000
    burst: int = 100

    def config_hex(self) -> str:
        """struct eten_config: rate_per_s, burst, key_len, pad, key[64]."""
        key = bytes.fromhex(self.hmac_key_hex) if self.hmac_key_hex else b""
        if len(key) > 64:
            raise SchemeError("eten hmac key: at most 64 bytes")
        return struct.pack("<IIII64s", self.rate_limit_per_s, self.burst, len(key), 0, key).hex()


@dataclass
class LoadedSchemes:
    """Which congestion-control name each (host, scenario name) uses in this run."""

    names: dict[tuple[str, str], str] = field(default_factory=dict)
    procs: dict[str, tuple[str, Scheme]] = field(default_factory=dict)  # proc id -> (role, scheme)
    cgroups: dict[str, Path] = field(default_factory=dict)  # role -> its traffic's cgroup

    def cc_for(self, role: str, congestion_control: str) -> str:
        return self.names.get((role, congestion_control), congestion_control)

    def process_options(self, role: str) -> dict[str, str]:
        """Extra fields of the agent's POST /processes for this host's traffic."""
        cg = self.cgroups.get(role)
        return {"cgroup": str(cg)} if cg else {}

    @property
    def oracle(self) -> bool:
        return any(s.oracle for _, s in self.procs.values())


def hosts_needing(
    senders: dict[str, set[str]], pairs: list[tuple[str, str, str]]
) -> dict[str, set[str]]:
    """{role: {scheme}} to load: each sender's, plus a receiver's where the scheme needs it.
    `pairs` are (sender, receiver, congestion control) of the TCP traffic."""
    out = {role: set(ccs) for role, ccs in senders.items()}
    for _, receiver, cc in pairs:
        scheme = project_scheme(cc)
        if scheme is not None and scheme.receiver_too:
            out.setdefault(receiver, set()).add(cc)
    return out


def start(
    tb: Testbed, wanted: dict[str, set[str]], eten: EtenOptions, ecn_ld_k: int = 2
) -> LoadedSchemes:
    """Loads every project scheme in `wanted` ({role: {congestion_control}}); `ecn_ld_k` is
    sl_ecnld's ECE look-back in ACKs (ecnld_config.k)."""
    loaded = LoadedSchemes()
    if not any(project_scheme(cc) for ccs in wanted.values() for cc in ccs):
        return loaded  # kernel algorithms only: nothing to load (nor bpffs to need)
    # The pin directory and the hosts' cgroups are made by each box's agent (scheme_dirs): a
    # compose box has its own filesystem, with the host's bpffs and cgroup v2 mounted in it.
    pins = pin_dir(tb.id)
    for role, names in sorted(wanted.items()):
        for cc in sorted(names):
            scheme = project_scheme(cc)
            if scheme is None:
                continue
            ca = instance_name(tb.id, role, scheme)
            args = [
                "--object",
                str(ENDHOSTS_BUILD / scheme.object),
                "--placeholder",
                scheme.placeholder,
                "--ca-name",
                ca,
                "--pin-dir",
                str(pins),
            ]
            if scheme.tc_ingress:
                # Notices arrive on an end host's only interface; at an edge (a PEP's satellite
                # leg runs the scheme there) on the satellite side, where the far edge sends them.
                edges = tb.topo.edges if tb.topo else ["gw", "st"]
                args += ["--tc-ingress", "sat0" if role in edges else "eth0"]
            if scheme.object == "eten.bpf.o":
                args += ["--set", f"eten_config={eten.config_hex()}"]
            if scheme.object == "ecnld.bpf.o":
                args += ["--set", f"ecnld_config={struct.pack('<I', ecn_ld_k).hex()}"]
            if scheme.ceten_variant is not None:
                args += ["--set", f"ceten_config={struct.pack('<I', scheme.ceten_variant).hex()}"]
            if scheme.ern_base is not None:
                # struct ern_config: bound_packets (0: the program's default, 2), base
                args += ["--set", f"ern_config={struct.pack('<II', 0, scheme.ern_base).hex()}"]
            if scheme.cgroup:
                cg = cgroup_dir(tb.id, role)
                loaded.cgroups[role] = cg
                args += ["--cgroup", str(cg)]
            ident = f"scheme-{scheme.short}"
            tb.agent(role, "POST", "/processes", ProcessStart(id=ident, kind="scheme", args=args))
            loaded.procs[f"{role}/{ident}"] = (role, scheme)
            loaded.names[(role, cc)] = ca
    _wait_registered(tb, loaded)
    return loaded


def _wait_registered(tb: Testbed, loaded: LoadedSchemes) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = dict(loaded.procs)
    while pending:
        available = set(AVAILABLE_CC.read_text().split())
        for key, (role, scheme) in list(pending.items()):
            ident = key.split("/", 1)[1]
            if instance_name(tb.id, role, scheme) in available:
                del pending[key]
                continue
            st = tb.agent(role, "GET", f"/processes/{ident}")
            if st["state"] != "running":
                raise SchemeError(
                    f"{scheme.name} did not load on {role}: {st['stderr'].strip()[-800:]}"
                )
        if pending and time.monotonic() > deadline:
            raise SchemeError(f"schemes not registered after {READY_TIMEOUT_S:.0f} s: {pending}")
        if pending:
            time.sleep(0.05)


def stop(tb: Testbed, loaded: LoadedSchemes) -> dict[str, Any]:
    """Unloads every scheme; returns {role: {scheme: {cc, stats}}} from each loader's last line."""
    out: dict[str, Any] = {}
    for key, (role, scheme) in loaded.procs.items():
        ident = key.split("/", 1)[1]
        st = tb.agent(role, "DELETE", f"/processes/{ident}")
        raw = ((st.get("result") or {}).get("stats") or {}).get(scheme.stats_map)
        entry: dict[str, Any] = {"cc": instance_name(tb.id, role, scheme)}
        if raw is not None and scheme.stats:
            entry["stats"] = dict(zip(scheme.stats, raw, strict=False))
        out.setdefault(role, {})[scheme.name] = entry
    remove_pins(tb.id)
    return out
