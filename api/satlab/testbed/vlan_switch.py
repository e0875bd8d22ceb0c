"""The namespace testbed's 802.1Q switch: terminals of a beam on VLANs of the emulator's st port.

When the beam's terminals have VLAN IDs (satlab.testbed.terminals.vlans), the switch namespace
`sw` is not a bridge but an 802.1Q switch in front of the st edges, as a real switch would stand
in front of real terminals' LANs:

    emulator st port ~~[sw: emu (trunk)  | st (access, VLAN 101) ]~~ sat0 of edge st
                                         | st2 (access, VLAN 102)]~~ sat0 of edge st2 ...

This kernel has no 8021q module, no VLAN-filtering bridge and no u32/flower classifiers, so the
switching is a tc BPF program (endhosts/bpf/vlan_switch.bpf.c, built with the end hosts' other
programs by `make -C endhosts`; its header says what it does to each frame): on every access
port's ingress `vsw_access` pushes the port's tag and redirects to the trunk, on the trunk's
ingress `vsw_trunk` maps the frame's VLAN ID to its access port, pops the tag and redirects there
(a broadcast too: the emulator tags an ARP request with the asked-for terminal's VLAN).

Loading: bpftool loads the object once and pins its programs and maps under `pin_dir` (apart
from the hosts' scheme pins, PIN_ROOT/<testbed id>, which each scheme loader's box removes when
the loader ends); the maps are filled (bpftool batch) before tc attaches the pinned programs to
clsact ingress of each port (direct action). Not the hosts' loader (sl-scheme): that one is a
process per host, started by the host's agent, whose links end with it, while the switch has no
agent and its programs belong to its interfaces: they are detached when the namespace goes, and
`remove` unpins the maps (topology.teardown, so the sweeper's teardown of a dead testbed too).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

from pyroute2 import NetNS

from satlab.agent.bpffs import PIN_ROOT, ensure_bpffs
from satlab.settings import ENDHOSTS_BUILD

OBJECT = ENDHOSTS_BUILD / "vlan_switch.bpf.o"
ACCESS, TRUNK = "vsw_access", "vsw_trunk"  # the object's programs
# vsw_stats' counters, in the order of the object's enum vsw_stat.
STATS = (
    "to_trunk",
    "from_trunk",
    "untagged",
    "unknown_vid",
    "tagged_on_access",
    "unconfigured",
    "helper_failed",
)


class SwitchError(RuntimeError):
    """The switch could not be built (a tool's message is in it)."""


def pin_dir(testbed_id: str) -> Path:
    return PIN_ROOT / f"{testbed_id}-sw"


def maps_dir(testbed_id: str) -> Path:
    return pin_dir(testbed_id) / "maps"


def build(testbed_id: str, netns: str, ns: NetNS, trunk: str, access: dict[str, int]) -> None:
    """Make namespace `netns` (open as `ns`, its ports up) an 802.1Q switch: `trunk` the port
    toward the emulator, `access` each access port's VLAN ID. The caller removes what it made
    on failure (`remove`, and the namespace)."""
    if not OBJECT.exists():
        raise SwitchError(f"{OBJECT} is missing: build it with make -C endhosts (make setup does)")
    ensure_bpffs()
    pins = pin_dir(testbed_id)
    _run(
        ["bpftool", "prog", "loadall", str(OBJECT), str(pins), "pinmaps", str(maps_dir(testbed_id))]
    )
    ifindex = {p: ns.link_lookup(ifname=p)[0] for p in [trunk, *access]}
    updates = [_update(testbed_id, "vsw_config", 0, ifindex[trunk])]
    for port, vid in access.items():
        updates.append(_update(testbed_id, "vsw_vlans", ifindex[port], vid))
        updates.append(_update(testbed_id, "vsw_ports", vid, ifindex[port]))
    _run(["bpftool", "batch", "file", "-"], "\n".join(updates))
    # Attached last, with the maps full: no frame meets a half-configured switch.
    tc = []
    for port, prog in [(trunk, TRUNK), *((p, ACCESS) for p in access)]:
        tc.append(f"qdisc add dev {port} clsact")
        tc.append(f"filter add dev {port} ingress bpf direct-action object-pinned {pins / prog}")
    # nsenter, not `ip netns exec` or `tc -n`: those mount a /sys of their own, without bpffs.
    _run(["nsenter", f"--net=/run/netns/{netns}", "--", "tc", "-batch", "-"], "\n".join(tc))


def _update(testbed_id: str, name: str, key: int, value: int) -> str:
    """A bpftool batch line writing a map entry (both __u32, in this machine's byte order)."""
    k, v = (" ".join(f"{b:02x}" for b in struct.pack("=I", x)) for x in (key, value))
    return f"map update pinned {maps_dir(testbed_id) / name} key hex {k} value hex {v}"


def _run(argv: list[str], stdin: str | None = None) -> None:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SwitchError(f"the VLAN switch: {' '.join(argv[:3])} failed: {proc.stderr.strip()}")


def counters(testbed_id: str) -> dict[str, int]:
    """The switch's counters (vsw_stats) by name: frames switched each way and drops by reason."""
    argv = ["bpftool", "-j", "map", "dump", "pinned", str(maps_dir(testbed_id) / "vsw_stats")]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SwitchError(f"the VLAN switch's counters: {proc.stderr.strip()}")
    raw = {_number(e["key"]): _number(e["value"]) for e in json.loads(proc.stdout)}
    return {name: raw.get(i, 0) for i, name in enumerate(STATS)}


def _number(hex_bytes: list[str]) -> int:
    """A map key or value as bpftool prints it (its bytes, in hex) read in this machine's order."""
    return int.from_bytes(bytes(int(b, 16) for b in hex_bytes), sys.byteorder)


def remove(testbed_id: str) -> None:
    """Unpin the switch's programs and maps (freed once its namespace, holding the programs, is
    gone too)."""
    shutil.rmtree(pin_dir(testbed_id), ignore_errors=True)
