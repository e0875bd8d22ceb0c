"""Kernel harness for the congestion-control tests: struct_ops registration, network
namespaces, real TCP transfers, and packet loss made with nftables.

Nothing here is a stand-in: every helper runs the real tool (bpftool, ip, nft, ethtool)
against the running kernel, and fails with the tool's own error output.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ENDHOSTS = Path(__file__).resolve().parents[1]
BUILD = ENDHOSTS / "build"
TRANSFER = Path(__file__).with_name("tcp_transfer.py")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
LOCK = Path("/run/lock/satlab-endhosts-struct_ops.lock")
TCP_INFINITE_SSTHRESH = 0x7FFFFFFF


def run(*cmd: str, timeout: float = 60, stdin: str | None = None) -> str:
    """Runs a command and returns its stdout; a failure names it and shows its output."""
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
        )
    return proc.stdout


def bpftool_by_id(kind: str, obj_id: int, *cmd: str) -> str | None:
    """Runs `bpftool -j <cmd> id <obj_id>` on one BPF object (`kind` map, link or prog);
    returns its stdout, or None when no object has that id any more.

    An id comes from an earlier listing, and the object can be freed before this call
    (a struct_ops map lingering in TOBEFREE, a link whose loader just exited): that one
    object is gone, not an error. bpftool reports it as the id lookup failing with
    ENOENT; any other failure still fails the caller.
    """
    argv = ["bpftool", "-j", *cmd, "id", str(obj_id)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        return proc.stdout
    # bpftool's wordings: "can't get map by id (7): ...", "failed to get link with ID 7: ..."
    gone = rf"(by id \({obj_id}\)|{kind} with ID {obj_id}): No such file or directory"
    if re.search(gone, proc.stdout + proc.stderr):
        return None
    raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}")


# --- struct_ops registration -------------------------------------------------------


def available_congestion_controls() -> list[str]:
    return AVAILABLE.read_text().split()


def json_values(text: str) -> Iterator[Any]:
    """The JSON values in bpftool's output, which may be several, comma-separated."""
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos == len(text):
            return
        value, pos = decoder.raw_decode(text, pos)
        yield value


def _flat(values: Iterator[Any]) -> Iterator[dict[str, Any]]:
    for value in values:
        yield from value if isinstance(value, list) else [value]


def struct_ops_maps(name: str) -> list[int]:
    """Ids of every tcp_congestion_ops struct_ops map called `name`, in any state."""
    return [
        int(m["id"])
        for m in _flat(json_values(run("bpftool", "-j", "struct_ops", "show")))
        if m.get("name") == name and m.get("kernel_struct_ops") == "tcp_congestion_ops"
    ]


def struct_ops_ids(name: str) -> list[int]:
    """Ids of the registered (in use) tcp_congestion_ops struct_ops maps called `name`.

    An unregistered map lingers in state TOBEFREE while anything still holds it (a
    socket, a namespace's default); it is no longer registered and cannot be
    unregistered again.
    """
    return [
        map_id
        for map_id in struct_ops_maps(name)
        if struct_ops_state(map_id) == "BPF_STRUCT_OPS_STATE_INUSE"
    ]


def struct_ops_state(map_id: int) -> str | None:
    """The state of tcp_congestion_ops struct_ops map `map_id`, or None once it is freed."""
    dump = bpftool_by_id("map", map_id, "struct_ops", "dump")
    if dump is None:
        return None
    states = [
        item["bpf_struct_ops_tcp_congestion_ops"]["common"]["state"]
        for item in _flat(json_values(dump))
        if "bpf_struct_ops_tcp_congestion_ops" in item
    ]
    assert len(states) == 1, f"struct_ops map {map_id}: expected one state in {dump}"
    return states[0]


def unregister(name: str) -> None:
    for map_id in struct_ops_ids(name):
        # None (freed since it was listed) is as unregistered as it gets.
        bpftool_by_id("map", map_id, "struct_ops", "unregister")


def assert_registered_once(name: str, map_id: int) -> None:
    """`name` is offered to sockets and is exactly one registered struct_ops map, `map_id`."""
    assert name in available_congestion_controls()
    assert struct_ops_ids(name) == [map_id]


@contextlib.contextmanager
def registered(obj: Path, name: str) -> Iterator[int]:
    """Registers the struct_ops map `name` from `obj` for the duration; yields its id.

    Registration is global to the kernel, so callers serialise on a lock file. A
    registration of the same name found on entry (left by an interrupted run, or in use
    by a testbed) is replaced, and put back on exit. The map's variable name in the
    object and its tcp_congestion_ops .name must both be `name`.
    """
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found_before = name in available_congestion_controls()
        unregister(name)
        try:
            run("bpftool", "struct_ops", "register", str(obj))
            ids = struct_ops_ids(name)
            assert len(ids) == 1, f"expected one struct_ops map {name}, found {ids}"
            yield ids[0]
        finally:
            unregister(name)
            if found_before:
                run("bpftool", "struct_ops", "register", str(obj))


@contextlib.contextmanager
def allowed_as_namespace_default(name: str) -> Iterator[None]:
    """Lists `name` in the initial namespace's tcp_allowed_congestion_control.

    Only an allowed congestion control can be another namespace's default. Never try
    without: the kernel (seen on 6.18) answers EPERM and leaks a reference, and the
    struct_ops map then cannot be freed until reboot.
    """
    before = ALLOWED.read_text().split()
    ALLOWED.write_text(" ".join(dict.fromkeys([*before, name])))
    try:
        assert name in ALLOWED.read_text().split()
        yield
    finally:
        ALLOWED.write_text(" ".join(before))


# --- namespaces, transfers and loss ---------------------------------------------------


def use_real_segments(netns: str) -> None:
    """Loopback with 1500-byte packets and no TSO/GSO: windows count real segments."""
    run("ip", "-n", netns, "link", "set", "lo", "mtu", "1500")
    run("ip", "netns", "exec", netns, "ethtool", "-K", "lo", "tso", "off", "gso", "off")


def nft_table(netns: str, table: str, hook: str, rule: str, priority: int = 0) -> None:
    """Puts table inet `table` into `netns`: one chain on `hook` (input, prerouting, output)
    holding the one `rule`. A table of that name already there is replaced."""
    rules = (
        f"add table inet {table}\n"
        f"delete table inet {table}\n"
        f"table inet {table} {{\n"
        f"  chain {hook} {{\n"
        f"    type filter hook {hook} priority {priority}; policy accept;\n"
        f"    {rule}\n"
        "  }\n"
        "}\n"
    )
    run("ip", "netns", "exec", netns, "nft", "-f", "-", stdin=rules)


# Loss is made on input, not output: a packet dropped on output is only retried locally and
# never counts as a loss. `meta length > 100` picks data segments, not bare ACKs.


def drop_every_nth_segment(netns: str, port: int, n: int) -> None:
    """Drops every n-th data segment to `port` on arrival, deterministically."""
    rule = f"tcp dport {port} meta length > 100 numgen inc mod {n} 0 counter drop"
    nft_table(netns, "satlab_loss", "input", rule)


def drop_segments(netns: str, port: int, indices: list[int]) -> None:
    """Drops the data segments to `port` that arrive as number i (from 0) for every i in
    `indices`, retransmissions counting as arrivals; replaces any earlier loss rules."""
    wanted = ", ".join(str(i) for i in indices)
    rule = f"tcp dport {port} meta length > 100 numgen inc mod 1000000000 {{ {wanted} }}"
    rule += " counter drop"
    nft_table(netns, "satlab_loss", "input", rule)


def drop_all_segments(netns: str, port: int, table: str, priority: int = 0) -> None:
    """Drops every data segment to `port` on arrival (a path that carries only ACKs), from
    table `table`; delete the table to end it."""
    nft_table(netns, table, "input", f"tcp dport {port} meta length > 100 drop", priority)


def dropped_segments(netns: str) -> int:
    """Packets drop_every_nth_segment has dropped so far."""
    ruleset = json.loads(run("ip", "netns", "exec", netns, "nft", "-j", "list", "ruleset"))
    return sum(
        expr["counter"]["packets"]
        for item in ruleset["nftables"]
        if "rule" in item
        for expr in item["rule"]["expr"]
        if "counter" in expr
    )


def transfer(netns: str, size: int, port: int, cc: str | None = None) -> dict[str, Any]:
    """One bulk transfer inside `netns` (tcp_transfer.py); returns what it reports."""
    cmd = ["ip", "netns", "exec", netns, sys.executable, str(TRANSFER)]
    cmd += ["--bytes", str(size), "--port", str(port)]
    if cc is not None:
        cmd += ["--cc", cc]
    result: dict[str, Any] = json.loads(run(*cmd, timeout=120))
    return result


def assert_recovers_from_periodic_loss(netns: str, port: int, cc: str) -> None:
    """A 4 MiB transfer with `cc` over real segments, every 50th dropped, arrives byte-exact
    after retransmissions, and the loss response left ssthresh below infinity and at least 2."""
    use_real_segments(netns)
    drop_every_nth_segment(netns, port, 50)
    size = 4 << 20
    result = transfer(netns, size, port, cc=cc)
    info = result["tcp_info"]

    assert dropped_segments(netns) > 0
    assert result["congestion_control"] == cc
    assert result["received"] == size
    assert result["intact"]
    assert info["total_retrans"] > 0
    assert 2 <= info["snd_ssthresh"] < TCP_INFINITE_SSTHRESH
