"""Split-TCP PEP benchmark (make bench-pep): the PEP's maximum relayed TCP throughput, its CPU per
Gbit/s and its connection set-up rate, with no emulator in the path: three network namespaces
(client -- proxy box -- server, veths, the proxy box routing), the proxy intercepting what the
client opens toward the server. Plain routing (no proxy) is printed for reference; with PEPSAL_BIN
set to a PEPsal binary built outside the repository, PEPsal is measured in the same position with
the same interception rules (nftables TPROXY to its port, fwmark -> local table).

Figures: iperf3 (1 stream and 8 streams, `--seconds` each), the proxy's CPU time over the
throughput runs (utime + stime of all its threads, from /proc) divided by the gigabits it relayed,
and connections/s of tests/bench/connrate.c (4 threads each connect -> read 1 byte -> EOF -> close)
for `--seconds`. Offloads stay on (veth GSO/GRO, like a host PEP on a real NIC with TSO/GRO).

Usage: .venv/bin/python tests/bench/pep_bench.py [--seconds 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from satlab.bounded import stop_processes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEP_BIN = ROOT / "target/release/satlab-pep"
CONNRATE = HERE / "build" / "connrate"
# Not the testbed's "sl" prefix: its sweeper removes sl* namespaces it has no record of.
NS = f"pepb{os.getpid()}"
CLIENT, PROXY, SERVER = f"{NS}-c", f"{NS}-p", f"{NS}-s"
SERVER_IP = "10.251.2.2"
PORT = 5000  # TPROXY port (PEPsal's default)
MARK, TABLE = "0x5e9", "159"


def sh(*argv: str, ns: str | None = None, stdin: str | None = None) -> str:
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    r = subprocess.run(full, input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {r.stderr.strip()}")
    return r.stdout


@contextlib.contextmanager
def namespaces() -> Iterator[None]:
    try:
        for ns in (CLIENT, PROXY, SERVER):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "-n", CLIENT, "link", "add", "c0", "type", "veth", "peer", "c1", "netns", PROXY)
        sh("ip", "-n", SERVER, "link", "add", "s0", "type", "veth", "peer", "s1", "netns", PROXY)
        for ns, dev, addr in (
            (CLIENT, "c0", "10.251.1.2/24"),
            (PROXY, "c1", "10.251.1.1/24"),
            (PROXY, "s1", "10.251.2.1/24"),
            (SERVER, "s0", f"{SERVER_IP}/24"),
        ):
            sh("ip", "addr", "add", addr, "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ip", "route", "add", "default", "via", "10.251.1.1", ns=CLIENT)
        sh("ip", "route", "add", "default", "via", "10.251.2.1", ns=SERVER)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=PROXY)
        yield
    finally:
        for ns in (CLIENT, PROXY, SERVER):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def pep_config(dirpath: Path) -> Path:
    cfg = {
        "edge": "gw",
        "intercept": {
            "terrestrial_interfaces": ["c1"],
            "satellite_interface": "s1",
            "terrestrial_port": PORT,
            "satellite_port": PORT + 1,
            "mark": int(MARK, 16),
            "table": int(TABLE),
            "install": False,  # the bench installs the same rules for every proxy
        },
        "settings": {
            "congestion_control": "cubic",
            "buffer_bytes": 0,
            "initial_window_packets": 0,
        },
        "http": {"listen": None},
    }
    path = dirpath / "pep.json"
    path.write_text(json.dumps(cfg))
    return path


@contextlib.contextmanager
def interception(cfg: Path) -> Iterator[None]:
    sh("nft", "-f", "-", ns=PROXY, stdin=sh(str(PEP_BIN), "--config", str(cfg), "--print-rules"))
    sh("ip", "rule", "add", "fwmark", MARK, "lookup", TABLE, ns=PROXY)
    sh("ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", TABLE, ns=PROXY)
    try:
        yield
    finally:
        subprocess.run(["ip", "netns", "exec", PROXY, "nft", "delete", "table", "ip", "satlab_pep"])
        sh("ip", "rule", "del", "fwmark", MARK, "lookup", TABLE, ns=PROXY)
        sh("ip", "route", "del", "local", "0.0.0.0/0", "dev", "lo", "table", TABLE, ns=PROXY)


def cpu_seconds(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def iperf(streams: int, seconds: float) -> float:
    srv = subprocess.Popen(
        ["ip", "netns", "exec", SERVER, "iperf3", "-s", "-1", "-p", "5201"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)
        out = sh(
            "iperf3", "-c", SERVER_IP, "-p", "5201", "-t", str(seconds), "-P", str(streams), "-J",
            ns=CLIENT,
        )  # fmt: skip
        return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
    finally:
        srv.kill()
        srv.wait()


def conn_rate(seconds: float) -> dict[str, Any]:
    srv = subprocess.Popen(
        ["ip", "netns", "exec", SERVER, str(CONNRATE), "serve", "7000"], stdout=subprocess.PIPE
    )
    try:
        assert srv.stdout is not None
        srv.stdout.readline()
        out: dict[str, Any] = json.loads(
            sh(str(CONNRATE), "connect", SERVER_IP, "7000", "4", str(seconds), ns=CLIENT)
        )
        return out
    finally:
        srv.kill()
        srv.wait()


def measure(name: str, argv: list[str] | None, cfg: Path, seconds: float) -> dict[str, Any]:
    ctx = interception(cfg) if argv else contextlib.nullcontext()
    with ctx:
        proxy = None
        if argv:
            proxy = subprocess.Popen(
                ["ip", "netns", "exec", PROXY, *argv],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(0.5)
            if proxy.poll() is not None:
                raise RuntimeError(f"{name} exited: {proxy.stderr.read() if proxy.stderr else ''}")
        try:
            cpu0 = cpu_seconds(proxy.pid) if proxy else 0.0
            one = iperf(1, seconds)
            eight = iperf(8, seconds)
            cpu = (cpu_seconds(proxy.pid) - cpu0) if proxy else None
            gbits = (one + eight) * seconds / 1e9
            rate = conn_rate(seconds)
        finally:
            if proxy:
                stop_processes([proxy], grace_s=5)
    return {
        "proxy": name,
        "throughput_1_stream_gbps": one / 1e9,
        "throughput_8_streams_gbps": eight / 1e9,
        "cpu_s_per_gbit": (cpu / gbits) if cpu is not None else None,
        "connections_per_s": rate["per_s"],
        "connections_failed": rate["failed"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("pep_bench: needs root (network namespaces)")
    CONNRATE.parent.mkdir(exist_ok=True)
    subprocess.run(
        ["gcc", "-O2", "-Wall", "-pthread", "-o", str(CONNRATE), str(HERE / "connrate.c")],
        check=True,
    )
    proxies: list[tuple[str, list[str] | None]] = [("plain routing", None)]
    with tempfile.TemporaryDirectory() as d:
        cfg = pep_config(Path(d))
        proxies.append(("satlab-pep", [str(PEP_BIN), "--config", str(cfg)]))
        pepsal = os.environ.get("PEPSAL_BIN")
        if pepsal:
            # -c: PEPsal sets RLIMIT_NOFILE to 10 x its connection cap: it must fit the hard limit
            proxies.append(("PEPsal", [pepsal, "-p", str(PORT), "-c", "1024"]))
        rows = []
        with namespaces():
            for name, argv in proxies:
                rows.append(measure(name, argv, cfg, a.seconds))
    print(f"\nsplit-TCP PEP between namespaces, no emulator ({a.seconds:g} s per figure)")
    print(f"{'proxy':<14} {'1 stream':>10} {'8 streams':>10} {'CPU-s/Gbit':>11} {'conn/s':>9}")
    for r in rows:
        cpu = f"{r['cpu_s_per_gbit']:.3f}" if r["cpu_s_per_gbit"] is not None else "-"
        print(
            f"{r['proxy']:<14} {r['throughput_1_stream_gbps']:>8.2f}G "
            f"{r['throughput_8_streams_gbps']:>9.2f}G {cpu:>11} {r['connections_per_s']:>9.0f}"
        )
    print("CPU-s/Gbit: the proxy's CPU seconds per gigabit relayed (= cores busy per Gbit/s)")
    if not os.environ.get("PEPSAL_BIN"):
        print("(set PEPSAL_BIN to a PEPsal binary to measure it side by side)")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
