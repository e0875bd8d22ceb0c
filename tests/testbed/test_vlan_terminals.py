"""Two terminals of a beam on VLANs of the emulator's st port, behind the testbed's 802.1Q switch
(satlab.testbed.vlan_switch, endhosts/bpf/vlan_switch.bpf.c), run through the product's runner
on real namespaces.

The emulator tags each terminal's forward frames with its VLAN ID and takes return frames by
theirs (emulator/src/vlans.rs); the switch namespace `sw` tags what each st edge sends and
untags what the trunk brings, by the terminal's VLAN. One bulk TCP download to the client
behind each terminal: both carry data, and the trunk (the switch's port toward the emulator)
carries each terminal's packets in both directions tagged with its VLAN ID, read with
PACKET_AUXDATA (the kernel takes a received tag into the packet's metadata). Refusals name the
field; nothing (namespaces, BPF programs, pins) stays behind, after a run or a failed build.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from satlab.scenario import ScenarioError, expand_runs, parse_scenario
from satlab.testbed import testbed, topology, vlan_switch
from satlab.testbed.backend import create_testbed, owned_testbed
from satlab.testbed.runner import run_one
from satlab.testbed.terminals import SWITCH, TerminalsError, vlans

# The tagged packet socket the emulator's beam tests read VLAN trunks with.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from tagged import TaggedFrame, read_tagged, tagged_socket  # noqa: E402

DURATION_S = 5.0
VLANS = {"a": 101, "b": 102}
CLIENTS = {"a": "10.250.3.11", "b": "10.250.42.12"}  # terminal 1's LAN, terminal 2's LAN

SCENARIO: dict[str, Any] = {
    "name": "two-vlan-terminals",
    "duration_s": DURATION_S,
    "link": {
        "forward": {
            "delay_ms": 20.0,
            "symbol_rate_baud": 2.0e6,
            "queue": {"limit_packets": 200, "limit_bytes": 400_000},
            "beam": {
                "scheduler": "round_robin",
                "terminals": [{"name": n, "vlan": v} for n, v in VLANS.items()],
            },
        },
        "return": {"delay_ms": 20.0},
    },
    "hosts": {"terminals": [{"name": "a", "clients": 1}, {"name": "b", "clients": 1}]},
    "traffic": [
        {"kind": "bulk_tcp", "client": 1, "duration_s": DURATION_S},
        {"kind": "bulk_tcp", "client": 2, "duration_s": DURATION_S},
    ],
    "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
}

ETH_P_8021Q, ETH_P_IP = 0x8100, 0x0800
PACKET_OUTGOING = 4  # sockaddr_ll.sll_pkttype of a frame the interface sent

Seen = tuple[str, int | None, str, str]  # direction ("to_emulator"/"from_emulator"), VID, src, dst


def _frame(f: TaggedFrame) -> Seen | None:
    """(direction, VLAN ID or None, IPv4 source, IPv4 destination) of an IPv4 frame; None
    otherwise. The tag is in the metadata (PACKET_AUXDATA) or, if the kernel left it there, in
    the frame."""
    data, vid = f.data, f.vid
    ethertype = struct.unpack_from("!H", data, 12)[0]
    if ethertype == ETH_P_8021Q:
        vid = struct.unpack_from("!H", data, 14)[0] & 0x0FFF
        data = data[:12] + data[16:]
        ethertype = struct.unpack_from("!H", data, 12)[0]
    if ethertype != ETH_P_IP:
        return None
    direction = "to_emulator" if f.pkttype == PACKET_OUTGOING else "from_emulator"
    return direction, vid, socket.inet_ntoa(data[26:30]), socket.inet_ntoa(data[30:34])


def _capture_trunk(deadline_s: float) -> tuple[set[Seen], dict[str, int], str]:
    """Waits for the run's switch, then reads its trunk until a second after every terminal's
    client has been seen both ways (or the deadline); returns the frames seen, the switch's
    counters then, and the testbed id."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        tid = owned_testbed(os.getpid())
        # The switch's maps are pinned once its ports exist (its programs attached just after).
        if tid and (vlan_switch.maps_dir(tid) / "vsw_stats").exists():
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the run's switch never appeared")
    seen: set[Seen] = set()
    want = {(d, c) for d in ("to_emulator", "from_emulator") for c in CLIENTS.values()}
    # The switch's trunk port (`emu`), both directions.
    with _port(tid, SWITCH, "emu", timeout_s=0.2) as s:
        while time.monotonic() < deadline:
            if want <= {(d, src if d == "to_emulator" else dst) for d, _, src, dst in seen}:
                deadline = min(deadline, time.monotonic() + 1.0)
            tagged = read_tagged(s)
            f = None if tagged is None else _frame(tagged)
            if f is not None:
                seen.add(f)
    return seen, vlan_switch.counters(tid), tid


def _tags_by_client(seen: set[Seen]) -> dict[tuple[str, str], set[int | None]]:
    """The VLAN IDs each (direction, client) pair's frames carried on the trunk."""
    out: dict[tuple[str, str], set[int | None]] = {}
    for d, vid, src, dst in seen:
        client = src if d == "to_emulator" else dst
        if client in CLIENTS.values():
            out.setdefault((d, client), set()).add(vid)
    return out


def test_vlan_terminals_carry_tcp_tagged_on_the_trunk(emulator_bin: Path) -> None:
    sc = parse_scenario(SCENARIO)
    out: dict[str, Any] = {}
    th = threading.Thread(target=lambda: out.update(result=run_one(sc, expand_runs(sc)[0])))
    th.start()
    try:
        seen, counters, tid = _capture_trunk(deadline_s=40)
    finally:
        th.join(timeout=90)
    res = out["result"]
    assert res["status"] == "ok", res.get("error")
    flows = {f["terminal"]: f for f in res["flows"]}
    assert set(flows) == {"a", "b"}
    assert all(f["bytes_received"] > 100_000 for f in flows.values()), flows
    tags = _tags_by_client(seen)
    for name, client in CLIENTS.items():
        for direction in ("to_emulator", "from_emulator"):
            assert tags.get((direction, client)) == {VLANS[name]}, (direction, client, tags)
    assert counters["to_trunk"] > 0 and counters["from_trunk"] > 0, counters
    assert counters["unknown_vid"] == counters["tagged_on_access"] == 0, counters
    assert counters["unconfigured"] == counters["helper_failed"] == 0, counters
    assert not vlan_switch.pin_dir(tid).exists(), "the switch's pins outlived the testbed"


@pytest.mark.parametrize(
    ("beam", "field", "says"),
    [
        ([{"name": "a", "vlan": 101}, {"name": "b"}], "terminals.1.vlan", "give every terminal"),
        ([{"name": "a", "vlan": 7}, {"name": "b", "vlan": 7}], "terminals.1.vlan", "'a''s already"),
        ([{"name": "a", "vlan": 4095}, {"name": "b", "vlan": 7}], "terminals.0.vlan", "1 to 4094"),
    ],
)
def test_bad_vlans_are_refused_before_any_namespace(
    beam: list[dict[str, Any]], field: str, says: str
) -> None:
    """What the emulator refuses at its start, the runner refuses before building the testbed:
    the run fails naming the field, without a testbed (the fixture checks no namespace stays)."""
    data = copy.deepcopy(SCENARIO)
    data["link"]["forward"]["beam"]["terminals"] = beam
    sc = parse_scenario(data)
    with pytest.raises(TerminalsError, match=f"link.forward.beam.{field}: .*{says}"):
        vlans(sc.hosts, sc.link)
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "failed" and f"link.forward.beam.{field}" in res["error"], res
    assert "testbed_id" not in res


def test_several_vlan_terminals_need_hosts_terminals() -> None:
    data = copy.deepcopy(SCENARIO)
    del data["hosts"]["terminals"]
    for t, p in zip(data["link"]["forward"]["beam"]["terminals"], CLIENTS.values(), strict=True):
        t["prefixes"] = [f"{p}/32"]
    data["traffic"] = data["traffic"][:1]
    # refused at submission (satlab.beam_hosts; api/tests/service/test_beam_vlan_submission.py)
    with pytest.raises(ScenarioError, match="^hosts.terminals: the 2 terminals .* on VLANs"):
        parse_scenario(data)
    one = copy.deepcopy(data)
    one["link"]["forward"]["beam"]["terminals"] = data["link"]["forward"]["beam"]["terminals"][:1]
    sc = parse_scenario(one)
    assert vlans(sc.hosts, sc.link) == [101], "one terminal on a VLAN: one access port"


def test_the_containers_testbed_refuses_vlan_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", "containers")
    with pytest.raises(
        testbed.TestbedError, match="^link.forward.beam.terminals.0.vlan: .*containers"
    ):
        create_testbed(1, 2, terminal_clients=[1, 1], terminal_vlans=[101, 102])


ETH_P_ARP = 0x0806
BROADCAST = b"\xff" * 6


def _arp_request(sender_ip: str, target_ip: str, vid: int | None) -> bytes:
    """A broadcast ARP request from a made-up station, 802.1Q-tagged with `vid` if given."""
    mac = bytes.fromhex("025a000000aa")
    arp = struct.pack("!HHBBH", 1, ETH_P_IP, 6, 4, 1) + mac + socket.inet_aton(sender_ip)
    arp += b"\x00" * 6 + socket.inet_aton(target_ip)
    tag = struct.pack("!HH", ETH_P_8021Q, vid) if vid is not None else b""
    return BROADCAST + mac + tag + struct.pack("!H", ETH_P_ARP) + arp


def _arp_seen(s: socket.socket, sender_ip: str) -> list[int | None]:
    """The VLAN ID (None: untagged) of every ARP request from `sender_ip` read on `s` within
    half a second."""
    got: list[int | None] = []
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        f = read_tagged(s)
        if f is None:
            continue
        if f.data[12:14] == struct.pack("!H", ETH_P_ARP) and f.data[28:32] == socket.inet_aton(
            sender_ip
        ):
            got.append(f.vid)
    return got


def _port(testbed_id: str, role: str, ifname: str, timeout_s: float = 0.1) -> socket.socket:
    """A packet socket on `role`'s interface `ifname`, both directions, with tags."""
    return tagged_socket(topology.namespace_name(testbed_id, role), ifname, timeout_s)


def test_the_switch_sends_each_vlan_to_its_port_only() -> None:
    """Without an emulator: a broadcast written tagged on the emulator's st port reaches the
    access port of its VLAN only, untagged; one of a VLAN no port has reaches none and is
    counted; an edge's untagged broadcast reaches the emulator's port tagged with its VLAN."""
    with testbed.Testbed(1, 2, terminal_clients=[1, 1], terminal_vlans=[101, 102]) as tb:
        with (
            _port(tb.id, "emu", "st") as trunk,
            _port(tb.id, "st", "sat0") as st,
            _port(tb.id, "st2", "sat0") as st2,
        ):
            trunk.send(_arp_request("10.250.2.201", "10.250.2.99", 102))
            assert (_arp_seen(st2, "10.250.2.201"), _arp_seen(st, "10.250.2.201")) == ([None], [])
            trunk.send(_arp_request("10.250.2.202", "10.250.2.99", 999))
            assert _arp_seen(st, "10.250.2.202") == _arp_seen(st2, "10.250.2.202") == []
            st.send(_arp_request("10.250.2.203", "10.250.2.99", None))
            assert _arp_seen(trunk, "10.250.2.203") == [101]
        counters = vlan_switch.counters(tb.id)
    assert counters["unknown_vid"] == 1 and counters["from_trunk"] >= 1, counters


def _prog_exists(prog_id: int) -> bool:
    show = ["bpftool", "prog", "show", "id", str(prog_id)]
    return subprocess.run(show, capture_output=True, check=False).returncode == 0


def _switch_prog_ids(testbed_id: str) -> set[int]:
    """The kernel's ids of the switch's two programs (from their pins)."""
    ids = set()
    for name in (vlan_switch.ACCESS, vlan_switch.TRUNK):
        pin = vlan_switch.pin_dir(testbed_id) / name
        show = ["bpftool", "-j", "prog", "show", "pinned", str(pin)]
        proc = subprocess.run(show, capture_output=True, text=True, check=True)
        ids.add(int(json.loads(proc.stdout)["id"]))
    return ids


def test_the_switch_leaves_nothing_behind() -> None:
    """Torn down, the switch's programs are freed (they lived on its ports) and its pins gone; a
    build that fails half-way (VLAN 5000 does not fit the switch's 4096-entry map: the kernel
    refuses the entry after the programs were pinned) removes what it made. Through the
    testbed's lifecycle: its state names this process, so no other process's sweeper takes the
    namespaces meanwhile."""
    with testbed.Testbed(1, 2, terminal_clients=[1, 1], terminal_vlans=[101, 102]) as tb:
        progs = _switch_prog_ids(tb.id)
    assert not vlan_switch.pin_dir(tb.id).exists()
    deadline = time.monotonic() + 10  # a namespace's devices go in the kernel's cleanup work
    while any(_prog_exists(p) for p in progs) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_prog_exists(p) for p in progs), "the switch's programs outlived its ports"
    broken = testbed.Testbed(1, 2, terminal_clients=[1, 1], terminal_vlans=[101, 5000])
    with pytest.raises(vlan_switch.SwitchError, match="bpftool batch"):
        broken.__enter__()
    assert not vlan_switch.pin_dir(broken.id).exists()
    assert topology.project_namespaces(broken.id) == []
