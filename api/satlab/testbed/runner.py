"""Runs one run of a scenario on a fresh testbed and returns its result document (RESULT.md).

Order: testbed up -> host settings -> project congestion controls loaded on the sending hosts
(satlab.testbed.schemes) -> emulator started with the run's seed (or, for `link.backend:
opensand`, OpenSAND's entities, up before the rest: satlab.testbed.opensand) -> edge gateways (when
the configuration has a `gateway` section) -> withholding receivers (`receiver.withhold`) ->
sinks -> TCP_INFO sampling -> the link's capacity for `rate_share` items -> senders (each waits
for its start_s itself) -> wait (agents watched; the run fails with the reason if
one dies) -> stop -> collect -> teardown. A fresh testbed
and a fresh emulator per run means every configuration starts from the same channel state at t=0.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import re
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from satlab import __version__, contention
from satlab.agent.requests import ProcessStart, SamplingStart
from satlab.agent.unixhttp import AgentError, AgentTimeout
from satlab.link_backend import (
    BackendUnavailable,
    backend_of,
    check_before_testbed,
    emulator_link,
)
from satlab.records.gateway import Port
from satlab.scenario import (
    BulkTcp,
    Configuration,
    RunSpec,
    Scenario,
    ShortFlows,
    UdpCross,
    sweep_record,
)
from satlab.schemes import project_scheme
from satlab.settings import EMULATOR_CONTROL_LISTEN
from satlab.testbed import gateway as edge_gateway
from satlab.testbed import hops, terminals, vlan_switch, withhold
from satlab.testbed import pep as edge_pep
from satlab.testbed import schemes as host_schemes
from satlab.testbed.backend import create_testbed
from satlab.testbed.edge_telemetry import EdgeTelemetry
from satlab.testbed.edge_telemetry import views as edge_views
from satlab.testbed.opensand import OpenSandLink, opensand_link
from satlab.testbed.telemetry import TelemetryReader
from satlab.testbed.testbed import Testbed, TestbedError

RESULT_SCHEMA = "satlab.run/1"
BASE_PORT = 5001
STOP_GRACE_S = 5.0
# Every sender waits for t0 + its start_s itself (satlab.traffic --start-at), so traffic starts at
# t0 exactly rather than whenever each process is up; t0 is set this far ahead of the senders'
# start-up, an agent call and an interpreter start each (0.7 s, once 1.6 s, for three senders on a
# 2-core machine under a load of 6). A sender up later than its time starts at once, and its
# start_s says so.
SENDER_LEAD_S = 2.0
SENDER_LEAD_PER_ITEM_S = 0.05

Progress = Callable[[float, str], None]


class RunFailed(RuntimeError):
    pass


def emulator_config(
    spec: RunSpec, tb: Testbed, period_ms: int, oracle: bool = False
) -> dict[str, Any]:
    """The scenario's link with what only the testbed knows: ports, seed, telemetry socket, and
    the senders' notice map when a configuration uses Oracle ETEN."""
    cfg: dict[str, Any] = json.loads(json.dumps(emulator_link(spec.link)))
    cfg["seed"] = spec.seed
    cfg["ports"] = {
        edge: {"kind": "af_packet", "interface": nic}
        for edge, nic in tb.emulator_interfaces().items()
    }
    # The control endpoint listens inside the emu namespace only; the worker's live-control
    # passthrough (satlab.service.control) reaches it there.
    cfg["control"] = {"listen": EMULATOR_CONTROL_LISTEN}
    cfg["telemetry"] = {
        **cfg.get("telemetry", {}),
        "socket": str(tb.dir / "emulator.sock"),
        "period_ms": period_ms,
    }
    g = spec.configuration.gateway
    if g is not None and g.ceten.enabled:
        cfg["telemetry"]["events"] = "all"  # CETEN samples every packet of the link
    if oracle:
        pin = str(host_schemes.pin_dir(tb.id) / "eten_notices")
        for d in ("forward", "return"):
            cfg.setdefault(d, {})["oracle_eten"] = {"map_pin": pin}
    return cfg


def _roles(t: BulkTcp | ShortFlows | UdpCross) -> tuple[str, str]:
    """(sender, receiver) host roles of a traffic item."""
    server, client = hops.ends(t)  # a hop's cross hosts for `hop: N`
    return (server, client) if t.direction == "download" else (client, server)


# The link carries each UDP datagram as an IPv4 packet with 28 bytes of headers (IP 20, UDP 8):
# a rate_share counts them; rate_bps and the generator's --rate are payload rates.
UDP_IP_HEADER_BYTES = 28
# The link direction a traffic item's data crosses.
_LINK_DIRECTION = {"download": "forward", "upload": "return"}


def udp_capacities(
    sc: Scenario, telemetry: TelemetryReader | OpenSandLink, timeout_s: float = 3.0
) -> dict[str, float]:
    """The link's useful rate in each direction a `rate_share` item sends in, from the emulator's
    newest status line (the same DirectionStatus as its GET /status): the emulator owns the link
    arithmetic. Status lines come on the telemetry socket, in the testbed directory that every
    backend shares with the runner; GET /status listens inside the emulator box's own network
    namespace, which only the namespace backend could join.

    For an ACM link this is the current rate at the start of the traffic (t0), not the clear-sky
    one: a link that starts in clear sky gives its clear-sky rate; one that starts faded, the faded
    rate. The UDP rate then stays fixed for the run, so a fade makes the same background load a
    larger share of the smaller capacity, as real background traffic would."""
    wanted = {_LINK_DIRECTION[sc.traffic[i].direction] for i in _rate_shares(sc)}
    rates: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    while wanted - rates.keys():
        for rec in list(telemetry.records):  # oldest first: the newest of each direction wins
            if rec["direction"] in wanted:
                rates[rec["direction"]] = rec["useful_rate_bps"]
        if time.monotonic() > deadline:
            raise RunFailed(
                f"no link status from the emulator within {timeout_s:g} s: the capacity "
                "a rate_share needs is unknown"
            )
        time.sleep(0.02)
    return rates


def _rate_shares(sc: Scenario) -> list[int]:
    return [i for i, t in enumerate(sc.traffic) if getattr(t, "rate_share", None) is not None]


def refuse_shares_without_capacity(sc: Scenario, link: dict[str, Any]) -> None:
    """udp_capacities reads the capacity from the built-in emulator's status; a link backend
    without that figure (OpenSAND's records carry no useful rate) cannot resolve a rate_share:
    refused before any testbed, naming the first such item."""
    shares = _rate_shares(sc)
    if shares and backend_of(link) != "satlab":
        raise BackendUnavailable(
            f"traffic.{shares[0]}.rate_share: the link's capacity is the built-in emulator's "
            f"status, which {backend_of(link)} does not give: use rate_bps with "
            f"link.backend: {backend_of(link)}"
        )


def udp_rate_bps(t: UdpCross, capacities: dict[str, float]) -> float:
    """A UDP item's payload rate: its rate_bps, or the share of the capacity in its direction
    that its IP packets (payload + headers) fill."""
    if t.rate_bps is not None:
        return t.rate_bps
    assert t.rate_share is not None
    share_bps = t.rate_share * capacities[_LINK_DIRECTION[t.direction]]
    return share_bps * t.packet_bytes / (t.packet_bytes + UDP_IP_HEADER_BYTES)


def _sender_args(
    t: BulkTcp | ShortFlows | UdpCross,
    dst: str,
    port: int,
    cc: str,
    seed: int,
    duration_s: float,
    t0: float,
    udp_rate: float | None = None,
) -> list[str]:
    """The generator's arguments. Start and stop are absolute CLOCK_MONOTONIC times (t0 + start_s,
    t0 + stop_s) the generator waits for itself: exact to a millisecond, where starting the
    sender later from the wait loop would add the loop's 0.2 s poll, an agent call and an
    interpreter start-up (together most of a second on a loaded machine)."""
    common = ["--dst", dst, "--port", str(port), "--cc", cc, "--seed", str(seed)]
    common += ["--start-at", repr(t0 + t.start_s)]
    if t.stop_s is not None and not isinstance(t, UdpCross):
        common += ["--stop-at", repr(t0 + t.stop_s)]
    if isinstance(t, BulkTcp):
        stop = ["--bytes", str(t.bytes)] if t.bytes else ["--duration", str(t.duration_s)]
        return ["bulk", *common, "--parallel", str(t.parallel), *stop]
    if isinstance(t, ShortFlows):
        return [
            "short",
            *common,
            "--count",
            str(t.count),
            "--dist",
            t.size_distribution,
            "--mean",
            str(t.mean_size_bytes),
            "--shape",
            str(t.pareto_shape),
        ]
    args = [
        "udp",
        *common,
        "--rate",
        repr(udp_rate),
        "--size",
        str(t.packet_bytes),
        "--stop-at",  # its stop_s, or the run's end
        repr(t0 + (t.stop_s if t.stop_s is not None else duration_s)),
    ]
    return args + (
        ["--onoff", str(t.mean_on_s), str(t.mean_off_s)] if t.kind == "udp_onoff" else []
    )


def run_one(
    sc: Scenario, spec: RunSpec, progress: Progress | None = None, artifacts: Path | None = None
) -> dict[str, Any]:
    """Runs one run; `artifacts` is where pcaps are kept (the testbed's own directory goes away)."""
    started = time.time()
    sweep = sweep_record(sc, spec.sweep_value)
    # From here on the run's own scenario: hosts, traffic, duration_s, ... with its sweep values.
    sc = spec.scenario or sc
    result: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "scenario": sc.name,
        "configuration": spec.configuration.name,
        "sweep": sweep,
        "repetition": spec.repetition,
        "seed": spec.seed,
        "inputs": {
            "scenario": sc.model_dump(mode="json"),
            "link": spec.link,
            "versions": {"satlab": __version__, "kernel": platform.release()},
        },
        "started_at": started,
        "status": "running",
    }
    try:
        refuse_shares_without_capacity(sc, spec.link)
        check_before_testbed(spec.link)  # link.backend: opensand fails here, before any testbed
    except BackendUnavailable as exc:
        return {**result, "status": "failed", "error": str(exc), "wall_s": time.time() - started}
    try:
        gw = spec.configuration.gateway is not None
        with (
            create_testbed(
                sc.hosts.servers,
                sc.hosts.clients,
                sc.hosts.mtu_bytes,
                gw,
                hops.cross_hosts(sc),
                terminals.counts(sc.hosts),
                terminals.vlans(sc.hosts, spec.link),
            ) as tb,
            _opensand_entities(spec, tb, artifacts) as satlink,
        ):
            result["testbed_id"] = tb.id
            progress = progress or (lambda f, m: None)
            result.update(_execute(sc, spec, tb, progress, artifacts, satlink))
            result["status"] = "ok"
            result["setup_s"] = result.pop("_setup_s")
    except (
        RunFailed,
        TestbedError,
        AgentError,
        TimeoutError,
        host_schemes.SchemeError,
        withhold.WithholdError,
        BackendUnavailable,
        terminals.TerminalsError,
        vlan_switch.SwitchError,
    ) as exc:
        result["status"] = "failed"
        result["error"] = str(exc)
    result["wall_s"] = time.time() - started
    return result


@dataclass
class _Started:
    """What a run started on its testbed, in start order (_stop_all ends them in this order too)."""

    loaded: host_schemes.LoadedSchemes
    telemetry: TelemetryReader | OpenSandLink  # the link's records: its emulator's, or OpenSAND's
    hop_emulators: dict[int, int]
    edges: list[str]  # roles running a gateway
    edge_telemetry: EdgeTelemetry | None  # each terminal's telemetry for its st edge's gateway
    peps: list[str]  # roles running a PEP
    hosts: list[str]  # the end hosts (netstat and captures)
    netstat_before: dict[str, Any]
    pcaps: dict[str, Path]
    withholding: list[str]  # receivers running satlab-withhold
    senders: dict[int, str] = field(default_factory=dict)  # traffic index -> sending role
    sample_ports: dict[str, list[int]] = field(default_factory=dict)  # sender -> sampled ports


@dataclass
class _Stopped:
    """What each started program said when the run stopped it."""

    flows: dict[int, Any]
    sinks: dict[int, Any]
    receivers: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]
    netstat_after: dict[str, Any]
    captures: dict[str, Any]
    gateways: dict[str, Any]
    endhosts: dict[str, Any]
    peps: dict[str, Any]


def _opensand_entities(
    spec: RunSpec, tb: Testbed, artifacts: Path | None
) -> contextlib.AbstractContextManager[OpenSandLink | None]:
    """OpenSAND's entities as the link (`link.backend: opensand`), ended with the run; their
    configuration, probes and logs are kept in `artifacts`."""
    if backend_of(spec.link) != "opensand":
        return contextlib.nullcontext()
    return opensand_link(spec.link, tb, artifacts)


def _execute(
    sc: Scenario,
    spec: RunSpec,
    tb: Testbed,
    progress: Progress,
    artifacts: Path | None,
    satlink: OpenSandLink | None = None,
) -> dict[str, Any]:
    t_setup = time.monotonic()
    tb.apply_host_settings(sc.hosts.settings)
    run = _start_link_and_hosts(sc, spec, tb, artifacts, satlink)
    _start_sinks(sc, tb, run)
    time.sleep(0.1)  # sinks listening
    capacities = udp_capacities(sc, run.telemetry)
    udp_rates = {
        i: udp_rate_bps(t, capacities) for i, t in enumerate(sc.traffic) if isinstance(t, UdpCross)
    }
    t0 = time.monotonic() + SENDER_LEAD_S + SENDER_LEAD_PER_ITEM_S * len(sc.traffic)
    _start_senders(sc, spec, tb, run, t0, udp_rates)
    _wait(sc, tb, run.senders, t0, progress, run.edges, satlink)
    stopped = _stop_all(sc, tb, run)
    flows = [
        {
            **_flow_summary(
                i, t, stopped.flows[i], stopped.sinks[i], t0, udp_rates.get(i), capacities
            ),
            **terminals.flow_terminal(sc.hosts, t),
        }
        for i, t in enumerate(sc.traffic)
    ]
    out = _component_records(tb, run, stopped)
    if contention.configured(spec.link):
        # each return terminal's requests by contention over the run (its counters are cumulative)
        out["contention"] = contention.final_split(run.telemetry.records)
    return {
        **out,
        "_setup_s": t0 - t_setup,
        "t0_monotonic": t0,
        "flows": flows,
        "hosts": {
            r: _counter_diff(run.netstat_before[r], stopped.netstat_after[r]) for r in run.hosts
        },
        "link_events": dict(run.telemetry.event_counts),
        "artifacts": _artifacts(run, out.get("artifacts_skipped", {})),
        "timeseries": {
            "tcp": [
                {**s, "t": round(s["t"] - t0, 4), "host": r}
                for r, ss in stopped.samples.items()
                for s in ss
            ],
            "link": [{**rec, "t": round(rec["t"] - t0, 4)} for rec in run.telemetry.records],
        },
    }


def _load_schemes(sc: Scenario, conf: Configuration, tb: Testbed) -> host_schemes.LoadedSchemes:
    """The project schemes each sending host (and each PEP's satellite leg) needs, loaded."""
    senders_cc: dict[str, set[str]] = {}
    pairs: list[tuple[str, str, str]] = []
    for t in sc.traffic:
        if not isinstance(t, UdpCross):
            cc = t.congestion_control or conf.transport.congestion_control
            sender, receiver = _roles(t)
            senders_cc.setdefault(sender, set()).add(cc)
            pairs.append((sender, receiver, cc))
    if conf.pep is not None:  # the PEP's satellite leg may run a project algorithm too
        for role in edge_pep.edges(conf.pep, tb):
            senders_cc.setdefault(role, set()).add(conf.pep.congestion_control)
    wanted = host_schemes.hosts_needing(senders_cc, pairs)
    eten = host_schemes.EtenOptions(
        hmac_key_hex=conf.gateway.eten.hmac_key_hex if conf.gateway else None,
        rate_limit_per_s=conf.transport.eten.rate_limit_per_s,
        burst=conf.transport.eten.burst,
    )
    return host_schemes.start(tb, wanted, eten, conf.transport.ecn_ld_k)


def _start_emulator(
    sc: Scenario, spec: RunSpec, tb: Testbed, loaded: host_schemes.LoadedSchemes
) -> TelemetryReader:
    """The link's emulator, started and streaming its telemetry."""
    cfg_path = tb.dir / "emulator.yaml"
    cfg = emulator_config(spec, tb, sc.sample_period_ms, oracle=loaded.oracle)
    terminals.fill_beam_prefixes(cfg, sc.hosts)  # hosts.terminals: where each terminal's hosts are
    cfg_path.write_text(yaml.safe_dump(cfg))
    start = ProcessStart(id="emulator", kind="emulator", args=["--config", str(cfg_path)])
    tb.agent("emu", "POST", "/processes", start)
    telemetry = TelemetryReader(tb.dir / "emulator.sock")
    try:
        telemetry.wait_connected()
    except TimeoutError:
        emu = tb.agent("emu", "GET", "/processes/emulator")
        raise RunFailed(f"emulator did not start: {emu['stderr'].strip()[-500:]}") from None
    return telemetry


def _start_link_and_hosts(
    sc: Scenario, spec: RunSpec, tb: Testbed, artifacts: Path | None, satlink: OpenSandLink | None
) -> _Started:
    """Everything but the traffic: schemes, emulators, gateways, PEPs, captures, withholding."""
    conf = spec.configuration
    loaded = _load_schemes(sc, conf, tb)
    telemetry = satlink or _start_emulator(sc, spec, tb, loaded)
    hop_emulators = hops.start(tb, sc, spec)  # path.terrestrial: an emulator per hop
    edge_telemetry = _start_edge_telemetry(sc, spec, tb)
    edges = _start_gateways(sc, spec, tb, edge_telemetry)
    peps = edge_pep.start(conf.pep, tb, loaded)  # split-TCP PEPs (a `pep` section)
    hosts = [r for r in tb.topo.host_roles if r not in tb.topo.edges] if tb.topo else []
    netstat_before = {r: tb.agent(r, "GET", "/netstat") for r in hosts}
    pcaps = _start_captures(sc, tb, hosts, artifacts)
    tcp_receivers: dict[str, list[int]] = {}
    for i, t in enumerate(sc.traffic):
        if not isinstance(t, UdpCross):
            tcp_receivers.setdefault(_roles(t)[1], []).append(BASE_PORT + i)
    withholding = withhold.start(tb, conf.receiver.withhold, tcp_receivers)
    return _Started(
        loaded,
        telemetry,
        hop_emulators,
        edges,
        edge_telemetry,
        peps,
        hosts,
        netstat_before,
        pcaps,
        withholding,
    )


def _start_sinks(sc: Scenario, tb: Testbed, run: _Started) -> None:
    """A sink per traffic item on its receiver, and TCP sampling of its port on its sender."""
    for i, t in enumerate(sc.traffic):
        sender, receiver = _roles(t)
        args = ["sink", "--port", str(BASE_PORT + i)]
        sink = ProcessStart(id=f"sink{i}", kind="traffic", args=args)
        tb.agent(receiver, "POST", "/processes", {**sink, **run.loaded.process_options(receiver)})
        run.senders[i] = sender
        run.sample_ports.setdefault(sender, []).append(BASE_PORT + i)
    for role, ports in run.sample_ports.items():
        sampling = SamplingStart(period_ms=sc.sample_period_ms, ports=ports)
        tb.agent(role, "POST", "/sampling", sampling)


def _start_senders(
    sc: Scenario,
    spec: RunSpec,
    tb: Testbed,
    run: _Started,
    t0: float,
    udp_rates: dict[int, float],
) -> None:
    """Each traffic item's sender, all starting at monotonic time t0."""
    conf = spec.configuration
    for i, t in enumerate(sc.traffic):
        sender, receiver = _roles(t)
        cc = getattr(t, "congestion_control", None) or conf.transport.congestion_control
        args = _sender_args(
            t,
            tb.topo.address(receiver) if tb.topo else "",
            BASE_PORT + i,
            run.loaded.cc_for(sender, cc),
            spec.seed + i,
            sc.duration_s,
            t0,
            udp_rates.get(i),
        )
        send = ProcessStart(id=f"send{i}", kind="traffic", args=args)
        tb.agent(
            run.senders[i], "POST", "/processes", {**send, **run.loaded.process_options(sender)}
        )


def _stop_all(sc: Scenario, tb: Testbed, run: _Started) -> _Stopped:
    """Stop what the run started, traffic first, and keep what each program reported."""
    senders = run.senders
    stopped = _Stopped(
        flows={i: tb.agent(senders[i], "DELETE", f"/processes/send{i}") for i in senders},
        sinks={
            i: tb.agent(_roles(t)[1], "DELETE", f"/processes/sink{i}")
            for i, t in enumerate(sc.traffic)
        },
        receivers=withhold.stop(tb, run.withholding),
        samples={r: tb.agent(r, "GET", "/sampling")["samples"] for r in run.sample_ports},
        netstat_after={r: tb.agent(r, "GET", "/netstat") for r in run.hosts},
        captures={role: tb.agent(role, "DELETE", "/processes/capture") for role in run.pcaps},
        gateways={r: tb.agent(r, "DELETE", "/processes/gateway") for r in run.edges},
        endhosts=host_schemes.stop(tb, run.loaded),
        peps=edge_pep.stop(tb, run.peps),  # a PEP that died during the run fails it here
    )
    if run.edge_telemetry is not None:
        run.edge_telemetry.stop()  # its gateways have ended
    if isinstance(run.telemetry, OpenSandLink):
        run.telemetry.stop()  # its entities' statistics, read once they have ended
        return stopped
    emu = tb.agent("emu", "DELETE", "/processes/emulator")
    run.telemetry.stop()
    if emu["state"] == "failed" and emu["exit_code"] not in (0, -15):
        raise RunFailed(f"emulator failed ({_ended(emu)}): {emu['stderr'][-500:]}")
    return stopped


def _component_records(tb: Testbed, run: _Started, stopped: _Stopped) -> dict[str, Any]:
    """The result's per-component sections, present only for the components the run had."""
    out: dict[str, Any] = hops.stop(tb, run.hop_emulators)  # each hop's counters, if any
    if isinstance(run.telemetry, OpenSandLink):
        out["opensand"] = run.telemetry.summary  # entities' CPU and memory, settings not mapped
    if run.edges:
        # each gateway prints its final status (counters, CETEN, ERN) as its last stdout line
        out["gateway"] = {r: g.get("result") for r, g in stopped.gateways.items()}
    if stopped.endhosts:
        # per sending host: each project scheme's instance name and counters (notices by verdict,
        # losses by classification)
        out["endhosts"] = stopped.endhosts
    if run.peps:
        out["pep"] = stopped.peps  # final counters and connection records of each edge's PEP
    if stopped.receivers:
        # per receiving host: satlab-withhold's counters (dupACKs held, releases, strides)
        out["receivers"] = stopped.receivers
    # A capture whose file is not whole (a full disk) is not kept, and says why; the run's
    # measurements do not depend on it (the store skips unreadable or oversized artifacts alike).
    skipped = {
        f"pcap.{role}": why
        for role, path in run.pcaps.items()
        if (why := _capture_fault(path, stopped.captures[role]))
    }
    if skipped:
        out["artifacts_skipped"] = skipped
    return out


def _artifacts(run: _Started, skipped: dict[str, str]) -> dict[str, str]:
    """The run's files kept with its result, by name: each host's capture (but those `skipped`)
    and, for an OpenSAND link, its exported configuration and its entities' probes and logs."""
    files = {f"pcap.{role}": path for role, path in run.pcaps.items()}
    if isinstance(run.telemetry, OpenSandLink):
        files.update(run.telemetry.files)
    return {name: str(path) for name, path in files.items() if name not in skipped}


def ern_ports(sc: Scenario, conf: Configuration) -> list[int]:
    """The gateway's `ern.ports` for a configuration: the scenario's `gateway.ern.ports` when
    given, else the ports of the flows that use an IP-ERN scheme (traffic i runs on BASE_PORT + i),
    so the router counts exactly the ERN-over-TCP traffic, as the paper's reserved port does."""
    g = conf.gateway
    if g is None or g.ern.ports:
        return [p.root for p in g.ern.ports] if g else []
    return [
        BASE_PORT + i
        for i, t in enumerate(sc.traffic)
        if not isinstance(t, UdpCross)
        and (s := project_scheme(t.congestion_control or conf.transport.congestion_control))
        and s.needs_gateway == "ern"
    ]


def _start_edge_telemetry(sc: Scenario, spec: RunSpec, tb: Testbed) -> EdgeTelemetry | None:
    """With gateways on several terminals' st edges, each terminal's share of the emulator's
    telemetry on a socket of its own (satlab.testbed.edge_telemetry says why)."""
    counts = terminals.counts(sc.hosts)
    if spec.configuration.gateway is None or not counts or sc.hosts.terminals is None:
        return None
    names = [t.name for t in sc.hosts.terminals]
    relay = EdgeTelemetry(tb.dir / "emulator.sock", edge_views(names, counts, tb.dir))
    try:
        relay.open()
    except OSError as exc:
        relay.stop()
        raise RunFailed(f"edge gateways' telemetry: emulator telemetry socket: {exc}") from None
    relay.start()
    return relay


def _start_gateways(
    sc: Scenario, spec: RunSpec, tb: Testbed, relay: EdgeTelemetry | None = None
) -> list[str]:
    """Starts satlab-gateway at every satellite edge (gw, and each terminal's st edge) through
    their agents; returns the edges started. An st edge reads its terminal's telemetry from
    `relay` when there is one, the gw edge the emulator's own."""
    g = spec.configuration.gateway
    if g is None or tb.topo is None:
        return []
    if g.ern.enabled:
        ports = [Port(p) for p in ern_ports(sc, spec.configuration)]
        g = g.model_copy(update={"ern": g.ern.model_copy(update={"ports": ports})})
    edges = tb.topo.edges
    sockets = {v.edge: v.socket_path for v in relay.views} if relay else {}
    for edge in edges:
        telemetry = sockets.get(edge, tb.dir / "emulator.sock")
        cfg = edge_gateway.gateway_config(g, edge, tb.topo.address(edge), telemetry, spec.seed)
        path = tb.dir / f"gateway-{edge}.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        gateway = ProcessStart(id="gateway", kind="gateway", args=["--config", str(path)])
        tb.agent(edge, "POST", "/processes", gateway)
    time.sleep(0.3)  # a gateway that cannot open its ports or parse its file exits at once
    for edge in edges:
        st = tb.agent(edge, "GET", "/processes/gateway")
        if st["state"] != "running":
            raise RunFailed(f"gateway {edge} did not start: {st['stderr'].strip()[-500:]}")
    return edges


def _start_captures(
    sc: Scenario, tb: Testbed, hosts: list[str], artifacts: Path | None
) -> dict[str, Path]:
    if sc.capture is None or artifacts is None:
        return {}
    artifacts.mkdir(parents=True, exist_ok=True)
    count = sc.capture.max_bytes_per_host // (sc.capture.snaplen_bytes + 16)
    pcaps = {}
    for role in hosts:
        pcaps[role] = artifacts / f"{role}.pcap"
        # The agent reads every argument as a string (agent/server.py start_process).
        args = ["eth0", str(pcaps[role]), str(sc.capture.snaplen_bytes), str(count)]
        capture = ProcessStart(id="capture", kind="capture", args=args)
        tb.agent(role, "POST", "/processes", capture)
    return pcaps


def _wait(
    sc: Scenario,
    tb: Testbed,
    senders: dict[int, str],
    t0: float,
    progress: Progress,
    edges: list[str] | None = None,
    satlink: OpenSandLink | None = None,
) -> None:
    running = set(senders)

    def process(role: str, ident: str, elapsed: float) -> dict[str, Any]:
        """A process's state from its agent; the run fails naming an agent that died or hangs."""
        try:
            st: dict[str, Any] = tb.agent(role, "GET", f"/processes/{ident}")
        except AgentError as exc:
            # The agent may have died between the liveness check and this request.
            if not tb.agent_alive(role):
                raise RunFailed(
                    f"agent {role} died during the run (at t={elapsed:.1f} s)"
                ) from None
            if isinstance(exc, AgentTimeout):  # alive but not answering: stopped or stuck
                raise RunFailed(f"agent {role} hangs (at t={elapsed:.1f} s): {exc}") from None
            raise
        return st

    while running:
        elapsed = time.monotonic() - t0
        for role in ["emu", *set(senders.values())]:
            if not tb.agent_alive(role):
                raise RunFailed(f"agent {role} died during the run (at t={elapsed:.1f} s)")
        for i in list(running):
            st = process(senders[i], f"send{i}", elapsed)
            if st["state"] != "running":
                running.discard(i)
                if st["state"] == "failed":
                    raise RunFailed(f"traffic {i} sender failed: {st['stderr'][-500:]}")
        if satlink is not None:
            if (why := satlink.failed()) is not None:
                raise RunFailed(why)
        elif (emu := process("emu", "emulator", elapsed))["state"] != "running":
            raise RunFailed(
                f"emulator exited during the run ({_ended(emu)}): {emu['stderr'][-500:]}"
            )
        for role in edges or []:
            g = process(role, "gateway", elapsed)
            if g["state"] != "running":
                raise RunFailed(
                    f"gateway {role} exited during the run ({_ended(g)}): {g['stderr'][-500:]}"
                )
        if elapsed >= sc.duration_s + STOP_GRACE_S:
            break  # senders still going are stopped and reported incomplete
        progress(max(0.0, min(1.0, elapsed / sc.duration_s)), f"{len(running)} flow(s) running")
        time.sleep(0.2)


def _ended(proc: dict[str, Any]) -> str:
    """How a process an agent ran ended, from its exit code: `signal 9, SIGKILL` (a crash or a
    kill leaves nothing on stderr to say so), or `exit code 1`."""
    code = proc.get("exit_code")
    if code is not None and code < 0:
        try:
            return f"signal {-code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


_CAPTURED = re.compile(r"^(\d+) packets? captured$", re.MULTILINE)


def _capture_fault(path: Path, capture: dict[str, Any]) -> str | None:
    """Why a capture file is not whole, or None. tcpdump carries on when its writes fail (a full
    disk leaves a short file and a clean exit), so the records in the file are counted against
    the packets it says it captured (its last words on stderr)."""
    said = _CAPTURED.search(capture.get("stderr") or "")
    if said is None:
        if (capture.get("exit_code") or 0) > 0:  # it gave up: could not start, or write
            lines = (capture.get("stderr") or "").strip().splitlines()
            return f"capture failed ({_ended(capture)}): {lines[-1] if lines else ''}"
        return None  # killed before it could say: the file is what there is
    try:
        records, whole = _pcap_records(path)
    except OSError as err:
        return f"cannot read: {err.strerror}"
    captured = int(said[1])
    if whole and records >= captured:
        return None
    full = os.statvfs(path.parent).f_bavail == 0
    return (
        f"{os.strerror(errno.ENOSPC) if full else 'a write failed'}: the file holds {records} "
        f"of the {captured} packets captured"
    )


def _pcap_records(path: Path) -> tuple[int, bool]:
    """(complete records in a pcap file, whether the file ends where a record does)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return 0, False
        order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        pos, n = 24, 0
        while pos + 16 <= size:
            f.seek(pos + 8)  # a record header: ts_sec, ts_usec, incl_len, orig_len
            (incl,) = struct.unpack(order + "I", f.read(4))
            if pos + 16 + incl > size:
                break
            pos, n = pos + 16 + incl, n + 1
    return n, pos == size


def _counter_diff(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    keys = (
        "Tcp.RetransSegs",
        "Tcp.OutSegs",
        "Tcp.InSegs",
        "Tcp.InCsumErrors",
        "TcpExt.TCPDSACKOldSent",
        "TcpExt.TCPDSACKOfoSent",
        "TcpExt.TCPLossProbes",
        "TcpExt.TCPTimeouts",
        "TcpExt.TCPSackRecovery",
        "TcpExt.TCPRenoRecovery",
        "TcpExt.TCPFastRetrans",
        "TcpExt.TCPRenoReorder",
        "TcpExt.DelayedACKLost",
    )
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


def _flow_summary(
    i: int,
    t: BulkTcp | ShortFlows | UdpCross,
    sender: dict[str, Any],
    sink: dict[str, Any],
    t0: float,
    udp_rate: float | None = None,
    capacities: dict[str, float] | None = None,
) -> dict[str, Any]:
    """One traffic item's line of the run summary: what every kind reports, then its own figures."""
    out: dict[str, Any] = {"traffic": i, "kind": t.kind, "direction": t.direction}
    res, rcv = sender.get("result") or {}, sink.get("result") or {}
    if t.stop_s is not None:
        # when the sender stopped on its stop time; None: it ended before (or was not heard from)
        out["stop_s"] = _since(res.get("t_stop"), t0)
    if isinstance(t, UdpCross):
        out.update(_udp_figures(t, res, rcv, t0, udp_rate, capacities))
        return out
    conns = rcv.get("connections", [])
    out.update(
        first_byte_s=_since(min((c["t_first"] for c in conns if c["t_first"]), default=None), t0),
        last_byte_s=_since(max((c["t_last"] for c in conns if c["t_last"]), default=None), t0),
    )
    if isinstance(t, BulkTcp):
        out.update(_bulk_figures(t, res, conns, sender["state"], t0))
    else:
        out.update(_short_flow_figures(t, res, conns, t0))
    return out


def _udp_figures(
    t: UdpCross,
    res: dict[str, Any],
    rcv: dict[str, Any],
    t0: float,
    udp_rate: float | None,
    capacities: dict[str, float] | None,
) -> dict[str, Any]:
    udp = rcv.get("udp", {})
    sent = res.get("packets_sent", 0)
    out: dict[str, Any] = dict(
        packets_sent=sent,
        packets_received=udp.get("packets", 0),
        loss_fraction=(1 - udp.get("packets", 0) / sent) if sent else None,
        goodput_bps=_rate(udp.get("bytes", 0), res.get("t_start"), udp.get("t_last")),
        rate_bps=udp_rate,
        start_s=_since(res.get("t_start"), t0),
        first_byte_s=_since(udp.get("t_first"), t0),
        last_byte_s=_since(udp.get("t_last"), t0),
    )
    if t.rate_share is not None and capacities is not None:
        out.update(rate_share=t.rate_share, capacity_bps=capacities[_LINK_DIRECTION[t.direction]])
    return out


def _bulk_figures(
    t: BulkTcp, res: dict[str, Any], conns: list[dict[str, Any]], state: str, t0: float
) -> dict[str, Any]:
    sc_conns = res.get("connections", [])
    # A sender stopped at the end of the run (its queued data still draining over a slow,
    # lossy link) reports nothing: its connections then start when the sink accepted them.
    starts = [c["t_start"] for c in sc_conns if "t_start" in c] or [
        c["t_accept"] for c in conns if c.get("t_accept")
    ]
    lasts = [c["t_last"] for c in conns if c["t_last"]]
    complete = bool(sc_conns) and all(c.get("complete") for c in sc_conns) and state == "done"
    ends = [c["t_eof"] for c in conns if c["t_eof"]]
    received = sum(c["bytes"] for c in conns)
    return dict(
        bytes_received=received,
        parallel=t.parallel,
        complete=complete,
        goodput_bps=_rate(received, min(starts, default=None), max(lasts, default=None)),
        completion_s=(max(ends) - min(starts)) if complete and ends and starts else None,
        start_s=(min(starts) - t0) if starts else None,
    )


def _short_flow_figures(
    t: ShortFlows, res: dict[str, Any], conns: list[dict[str, Any]], t0: float
) -> dict[str, Any]:
    fcts = [f["fct_s"] for f in res.get("flows", []) if "fct_s" in f]
    starts = [f["t_start"] for f in res.get("flows", [])]
    return dict(
        start_s=_since(min(starts, default=None), t0),
        bytes_received=sum(c["bytes"] for c in conns),
        objects=t.count,
        completed=len(fcts),
        fct_s=fcts,
        mean_fct_s=sum(fcts) / len(fcts) if fcts else None,
    )


def _since(t: float | None, t0: float) -> float | None:
    return None if t is None else t - t0


def _rate(nbytes: int, start: float | None, end: float | None) -> float | None:
    if start is None or end is None or end <= start:
        return None
    return 8 * nbytes / (end - start)
