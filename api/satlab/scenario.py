"""Scenario schema v1: one YAML file that reads like the experiment it describes.

A scenario has a link (the emulator's configuration, see emulator/CONFIG.md), the end hosts and
their TCP settings, the traffic, the transport configurations to compare, how to repeat and sweep.
Every number carries its unit in its name and has bounds; errors name the field and the limit.
`expand_runs` turns a scenario into the list of runs (configuration x sweep value x repetition).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from satlab import beam_hosts, linkbudget
from satlab.expectations import ExpectationSpec, Measure, same_value
from satlab.gateway_settings import GatewaySettings
from satlab.link_backend import BACKENDS
from satlab.records.pep import PepRelay
from satlab.records.withhold import Withhold
from satlab.schemes import PROJECT_SCHEMES

SCHEMA_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HostSettings(Strict):
    """Per-host TCP settings, applied as sysctls in every end host's namespace.

    The buffer defaults (64 MiB) cover the bandwidth-delay product of a 500 ms, 1 Gbit/s GEO path,
    so buffers never cap a flow unless a scenario asks for it.
    """

    sack: bool = True
    ecn: Literal["off", "on", "passive"] = "passive"
    timestamps: bool = True
    rmem_max_bytes: int = Field(64 << 20, ge=4096, le=1 << 30)
    wmem_max_bytes: int = Field(64 << 20, ge=4096, le=1 << 30)
    window_clamp_bytes: int | None = Field(
        None, ge=1024, le=1 << 30, description="receive window clamp"
    )
    mss_bytes: int | None = Field(None, ge=536, le=1460, description="advertised MSS clamp")
    initial_cwnd_packets: int | None = Field(None, ge=1, le=100, description="route initcwnd")
    # The loss-recovery extensions Yang's baseline sender lacks (Yang 2001, section 5.1). Limited
    # Transmit (RFC 3042) has no switch in Linux: it follows from how dupACKs shrink the
    # in-flight count, so a Linux sender always uses it (see receiver.withhold.immediate_dupacks).
    rack: bool = Field(True, description="RACK loss detection (net.ipv4.tcp_recovery bit 0x1)")
    tlp: bool = Field(True, description="tail loss probes (net.ipv4.tcp_early_retrans 3, off 0)")
    reordering_packets: int = Field(
        3, ge=1, le=300, description="initial dupthresh (net.ipv4.tcp_reordering)"
    )
    max_reordering_packets: int = Field(
        300,
        ge=1,
        le=10000,
        description="bound of the dynamic dupthresh (net.ipv4.tcp_max_reordering); equal to "
        "reordering_packets: dynamic dupthresh off",
    )

    @model_validator(mode="after")
    def _reordering_bounds(self) -> HostSettings:
        if self.max_reordering_packets < self.reordering_packets:
            raise ValueError(
                f"max_reordering_packets: {self.max_reordering_packets} must be at least "
                f"reordering_packets ({self.reordering_packets})"
            )
        return self


MAX_CLIENTS = 16  # clients in all, behind one terminal or several


class TerminalHosts(Strict):
    """The clients behind one terminal of link.forward.beam (satlab.testbed.terminals)."""

    name: str = Field(
        pattern=r"^[a-z0-9_-]{1,32}$", description="a terminal of link.forward.beam.terminals"
    )
    clients: int = Field(1, ge=1, le=MAX_CLIENTS, description="hosts behind this terminal")


class Hosts(Strict):
    servers: int = Field(1, ge=1, le=16, description="terrestrial hosts behind the gateway")
    clients: int = Field(
        1,
        ge=1,
        le=MAX_CLIENTS,
        description="hosts behind the satellite terminal; with `terminals`, their sum (may be "
        "left out)",
    )
    terminals: list[TerminalHosts] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CLIENTS,
        description="which clients sit behind which terminal of link.forward.beam, in order "
        "(clients are numbered across them, the first terminal's first); each terminal gets its "
        "own st edge. Absent: one terminal with every client",
    )
    mtu_bytes: int = Field(1500, ge=576, le=9000)
    settings: HostSettings = HostSettings()

    @model_validator(mode="after")
    def _terminal_clients(self) -> Hosts:
        # Left out, clients is the terminals' sum; given, Scenario._beam_hosts checks it is.
        if self.terminals is not None and "clients" not in self.model_fields_set:
            self.clients = sum(t.clients for t in self.terminals)
        return self


CC_PATTERN = r"^[a-z0-9_]{1,15}$"
CC_DESCRIPTION = (
    "a kernel algorithm (cubic, reno, bbr) or a project one (satlab.schemes: sl_newreno, "
    "sl_beten, sl_oracle, sl_westwood, ...)"
)


def check_traffic_times(i: int, t: BulkTcp | ShortFlows | UdpCross, duration_s: float) -> None:
    """A traffic item's start and stop lie within the run."""
    if t.start_s >= duration_s:
        raise ValueError(
            f"traffic.{i}.start_s: {t.start_s} must be less than duration_s ({duration_s})"
        )
    if t.stop_s is not None and t.stop_s > duration_s:
        raise ValueError(
            f"traffic.{i}.stop_s: {t.stop_s} must be at most duration_s ({duration_s})"
        )


MAX_HOPS = 8  # terrestrial hops of path.terrestrial
MAX_CROSS_HOSTS = 8  # cross-traffic hosts at each end of one hop


class TrafficItem(Strict):
    """When a traffic item runs and between which hosts: the fields every kind shares."""

    start_s: float = Field(
        0.0,
        ge=0,
        le=3600,
        description="when the sender starts, seconds after the run's start; less than the "
        "scenario's duration_s",
    )
    stop_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="when the sender stops, seconds after the run's start (greater than start_s, "
        "at most the scenario's duration_s); absent: at its own end or the run's end. A TCP "
        "sender then aborts its connection (what it had queued is not sent; a byte-count "
        "transfer cut short is incomplete)",
    )
    client: int = Field(1, ge=1, le=16, description="which client host (1-based)")
    server: int = Field(1, ge=1, le=16)
    hop: int | None = Field(
        None,
        ge=1,
        le=MAX_HOPS,
        description="carried between the cross hosts of this terrestrial hop (1-based, counted "
        "from the servers: path.terrestrial); server and client then number that hop's cross "
        "hosts; absent: between the servers and the clients, across the satellite",
    )

    # Called by each kind's own validator after its own rules, so those are reported first.
    def _check_times(self) -> None:
        if self.stop_s is not None and self.stop_s <= self.start_s:
            raise ValueError(f"stop_s: {self.stop_s} must be greater than start_s ({self.start_s})")


class BulkTcp(TrafficItem):
    """A bulk TCP transfer of an exact byte count, or for a duration (counted from start_s).
    Given bytes and stop_s, it stops at whichever comes first."""

    kind: Literal["bulk_tcp"]
    congestion_control: str | None = Field(
        None, pattern=CC_PATTERN, description="this flow's, instead of the configuration's"
    )
    direction: Literal["download", "upload"] = "download"
    bytes: int | None = Field(None, ge=1, le=1 << 40)
    duration_s: float | None = Field(None, gt=0, le=3600)
    parallel: int = Field(1, ge=1, le=64, description="parallel connections for one user")

    @model_validator(mode="after")
    def _one_stop_rule(self) -> BulkTcp:
        if (self.bytes is None) == (self.duration_s is None):
            raise ValueError("give exactly one of bytes or duration_s")
        self._check_times()
        return self


class ShortFlows(TrafficItem):
    """N objects fetched one after another, each on a new connection."""

    kind: Literal["short_flows"]
    congestion_control: str | None = Field(
        None, pattern=CC_PATTERN, description="these flows', instead of the configuration's"
    )
    direction: Literal["download", "upload"] = "download"
    count: int = Field(ge=1, le=10000)
    size_distribution: Literal["fixed", "exponential", "pareto"] = "exponential"
    mean_size_bytes: int = Field(ge=1, le=1 << 30)
    pareto_shape: float = Field(1.2, gt=1.0, le=10.0)

    @model_validator(mode="after")
    def _times(self) -> ShortFlows:
        self._check_times()
        return self


class UdpCross(TrafficItem):
    """UDP cross traffic at a constant rate, or exponential on/off (the ETEN report's), sent
    from start_s to stop_s (or the run's end). The rate is given in bit/s or as a share of the
    link's capacity (background load as in the IP-ERN paper, section 6: 1, 10, 20 %)."""

    kind: Literal["udp_cbr", "udp_onoff"]
    direction: Literal["download", "upload"] = "download"
    rate_bps: float | None = Field(
        None, gt=0, le=10e9, description="UDP payload rate while on; or give rate_share"
    )
    rate_share: float | None = Field(
        None,
        gt=0,
        le=1,
        description="rate while on as a share of the link's useful rate in the flow's direction "
        "at the start of the run (the emulator's status), counting each datagram's IP and UDP "
        "headers; or give rate_bps",
    )
    packet_bytes: int = Field(1200, ge=28, le=1472, description="UDP payload bytes")
    mean_on_s: float = Field(1.0, gt=0, le=600)
    mean_off_s: float = Field(1.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_rate(self) -> UdpCross:
        if (self.rate_bps is None) == (self.rate_share is None):
            raise ValueError("give exactly one of rate_bps or rate_share")
        self._check_times()
        return self


Traffic = Annotated[BulkTcp | ShortFlows | UdpCross, Field(discriminator="kind")]


class EtenSender(Strict):
    """The sender's checks on BETEN notices before one counts (endhosts/bpf/eten.bpf.c; ETEN
    report section 7). The MAC key is the gateway's `eten.hmac_key_hex`: with a key, unsigned or
    badly signed notices are refused."""

    rate_limit_per_s: int = Field(
        1000, ge=0, le=1_000_000, description="token-bucket bound on notices; 0: unbounded"
    )
    burst: int = Field(100, ge=1, le=1_000_000, description="token-bucket depth, notices")


class Transport(Strict):
    """How the end hosts' TCP behaves in one configuration."""

    congestion_control: str = Field("cubic", pattern=CC_PATTERN, description=CC_DESCRIPTION)
    eten: EtenSender = EtenSender()
    ecn_ld_k: int = Field(
        2,
        ge=1,
        le=32,
        description="sl_ecnld: a dupack loss is congestion when one of the last K ACKs carried "
        "ECE (the TCP-ECN paper, section 3: 'normally two previous marked packets is enough'), "
        "else wireless",
    )


class PepSettings(PepRelay):
    """The split-TCP PEP (gateway/pep/README.md) at one or both edges; absent: end-to-end TCP.
    Its relay settings are the PEP's own type (gateway/pep/src/config.rs, generated from its
    --print-schema by `make schemas`: the binary's fields, bounds and defaults); `edges` is the
    testbed's, which edges run one."""

    edges: Literal["gw", "st", "both"] = Field(
        "both", description="where connections are split: the gw edge, the st edge, or both"
    )

    @model_validator(mode="after")
    def _buffer(self) -> PepSettings:
        # "0 or at least N" has no JSON Schema keyword a generated model checks: the PEP's
        # schema carries N as x-minimum-unless-zero (its own validation checks the same).
        extra = PepRelay.model_fields["buffer_bytes"].json_schema_extra
        least = extra.get("x-minimum-unless-zero") if isinstance(extra, dict) else None
        if isinstance(least, int) and 0 < self.buffer_bytes < least:
            raise ValueError(
                f"buffer_bytes: {self.buffer_bytes} must be 0 or at least {least} bytes"
            )
        return self


class ReceiverSettings(Strict):
    """What runs on the receiving hosts of the configuration's TCP flows."""

    # The withholding receiver's own settings type (endhosts/withhold/src/config.rs), generated
    # from its --print-schema by `make schemas`: its fields, bounds and defaults are the binary's.
    withhold: Withhold | None = None


class Configuration(Strict):
    # A letter or digit first: names label runs, exports and --expect expressions, and are passed
    # on command lines, so never '.', '..' or '-rf'.
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$")
    transport: Transport = Transport()
    gateway: GatewaySettings | None = None
    pep: PepSettings | None = None
    receiver: ReceiverSettings = ReceiverSettings()

    def congestion_controls(self, traffic: list[Traffic]) -> set[str]:
        """Every congestion control this configuration's TCP flows use."""
        return {
            getattr(t, "congestion_control", None) or self.transport.congestion_control
            for t in traffic
            if not isinstance(t, UdpCross)
        }


SweepCoordinate = bool | int | float | str
# A run's sweep_value: its coordinate for one dimension, the list of both for two, None unswept.
SweepValue = SweepCoordinate | list[SweepCoordinate] | None
MAX_SWEEP_DIMENSIONS = 2
MAX_SWEEP_POINTS = 100  # the product of the value lists; the plan limits then count runs


class Sweep(Strict):
    """One scenario field varied over values. `path` is dotted from the scenario's top
    (`link.forward.bit_errors.ber`, `hosts.settings.rack`, `traffic.0.bytes`,
    `configurations.1.transport.ecn_ld_k`, `duration_s`); a path whose first key is not a
    scenario field is taken inside `link` (`forward.bit_errors.ber`)."""

    path: str = Field(pattern=r"^[a-z_][a-z0-9_.]*$", examples=["link.forward.bit_errors.ber"])
    values: list[SweepCoordinate] = Field(min_length=1, max_length=50)


class HopQueue(Strict):
    """A hop's drop-tail queue, one per direction (the emulator's `queue`, emulator/CONFIG.md)."""

    limit_packets: int = Field(1000, ge=1, le=10_000_000)
    limit_bytes: int = Field(1_500_000, ge=64, le=1 << 34)


class TerrestrialHop(Strict):
    """One terrestrial hop: a wire with its own one-way delay, rate, drop-tail queue and optional
    bit errors, emulated exactly by a satlab-emulator instance of its own (`kind: fixed`, both
    directions) between two routers (satlab.testbed.hops). `bit_errors` is the direction toward
    the clients (the satellite link's `forward`), `return_bit_errors` the one toward the servers.
    The bounds are the emulator's; the emulator checks the whole hop link as it checks `link`."""

    delay_ms: float = Field(ge=0, le=10000, description="one-way propagation delay of the hop")
    rate_bps: float = Field(
        ge=1e3, le=1e11, description="bit rate of each direction (whole Ethernet frames)"
    )
    queue: HopQueue = HopQueue()
    bit_errors: dict[str, Any] = Field(
        default_factory=dict,
        description="the emulator's bit_errors section (emulator/CONFIG.md) toward the clients; "
        "absent: none",
    )
    return_bit_errors: dict[str, Any] = Field(
        default_factory=dict, description="the same toward the servers; absent: none"
    )
    cross_hosts: int = Field(
        0,
        ge=0,
        le=MAX_CROSS_HOSTS,
        description="cross-traffic hosts at each end of the hop, on its two routers' LANs "
        "(namespaces xNsI and xNcI for hop N), for traffic items with `hop: N`",
    )

    def link(self) -> dict[str, Any]:
        """The hop's emulator configuration; the runner adds seed, ports, control, telemetry."""

        def direction(bit_errors: dict[str, Any]) -> dict[str, Any]:
            d: dict[str, Any] = {
                "kind": "fixed",
                "rate_bps": self.rate_bps,
                "delay_ms": self.delay_ms,
                "queue": self.queue.model_dump(),
            }
            if bit_errors:
                d["bit_errors"] = copy.deepcopy(bit_errors)
            return d

        return {"forward": direction(self.bit_errors), "return": direction(self.return_bit_errors)}


class NetworkPath(Strict):
    """The path beyond the satellite link's edges."""

    terrestrial: list[TerrestrialHop] = Field(
        default_factory=list,
        max_length=MAX_HOPS,
        description="hops between the servers and the gw edge, in order from the servers",
    )


class Capture(Strict):
    """A size-capped pcap of every end host's interface (headers only by default)."""

    snaplen_bytes: int = Field(128, ge=64, le=65535)
    max_bytes_per_host: int = Field(20_000_000, ge=10_000, le=1_000_000_000)


class CiSubset(Strict):
    """What `satlab reproduce --subset ci` changes (apply_subset): a shorter, smaller run."""

    duration_s: float | None = Field(None, gt=0, le=300)
    repetitions: int | None = Field(None, ge=1, le=10)
    sweep_values: dict[str, list[SweepCoordinate]] | None = Field(
        None,
        max_length=MAX_SWEEP_DIMENSIONS,
        description="by sweep path as written: keep only these values of that dimension",
    )


class Reproduction(Strict):
    """The paper a scenario reproduces, and its CI-sized subset (absent: not in the CI subset)."""

    paper: Literal["eten", "ipern", "garcia", "yang", "ecn", "product"]
    ci: CiSubset | None = None


# Scenario names become file names (exports, result directories): a letter or digit, then up to 63
# of [A-Za-z0-9_.-] (so never '.', '..', '-rf' or '.hidden'), and not a Windows device name. Upload
# names are segments of the same grammar (service/files.py NAME_RE).
NAME_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
WINDOWS_DEVICE_RE = re.compile(r"(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(\..*)?", re.IGNORECASE)


def _scenario_name(name: str) -> str:
    if not re.fullmatch(NAME_SEGMENT, name) or WINDOWS_DEVICE_RE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid name: a letter or digit followed by up to 63 of "
            "A-Z a-z 0-9 _ . -, not a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9)"
        )
    return name


class Scenario(Strict):
    version: Literal[1] = 1
    name: Annotated[
        str,
        AfterValidator(_scenario_name),
        Field(json_schema_extra={"pattern": f"^{NAME_SEGMENT}$"}),
    ]
    description: str = ""
    seed: int = Field(1, ge=0, le=2**63 - 1)
    duration_s: float = Field(30, gt=0, le=3600, description="run length; flows stop at the end")
    repetitions: int = Field(1, ge=1, le=100, description="each with seed + repetition index")
    sample_period_ms: int = Field(100, ge=10, le=10000)
    link: dict[str, Any] = Field(
        default_factory=dict, description="the emulator configuration (emulator/CONFIG.md)"
    )
    link_budget: linkbudget.LinkBudget | None = Field(
        None,
        description="derive each hop's clear_sky_db from EIRP, G/T and frequency over "
        "link.geometry (satlab budget SCENARIO shows the table)",
    )
    path: NetworkPath | None = Field(
        None, description="terrestrial hops between the servers and the gw edge"
    )
    hosts: Hosts = Hosts()
    traffic: list[Traffic] = Field(min_length=1, max_length=64)
    configurations: list[Configuration] = Field(min_length=1, max_length=32)
    sweep: Sweep | Annotated[list[Sweep], Field(min_length=1, max_length=2)] | None = Field(
        None,
        description="one dimension, or a list of up to two (runs: the product of the value "
        f"lists, at most {MAX_SWEEP_POINTS} points); each run gets a copy of the scenario with "
        "its values applied",
    )
    capture: Capture | None = None
    expectations: list[ExpectationSpec] = Field(
        default_factory=list, max_length=100, description="claims checked on the comparison"
    )
    reproduction: Reproduction | None = None

    @field_validator("sweep", mode="before")
    @classmethod
    def _dimensions(cls, v: Any) -> Any:
        if isinstance(v, list) and not 1 <= len(v) <= MAX_SWEEP_DIMENSIONS:
            raise ValueError(f"give 1 to {MAX_SWEEP_DIMENSIONS} dimensions, not {len(v)}")
        return v

    @field_validator("link")
    @classmethod
    def _backend(cls, v: dict[str, Any]) -> dict[str, Any]:
        b = v.get("backend", "satlab")
        if b not in BACKENDS:  # the runner's key, not the emulator's (satlab/link_backend.py)
            raise ValueError(f"backend: {b!r} is not one of {', '.join(BACKENDS)}")
        return v

    def sweeps(self) -> list[Sweep]:
        """The sweep's dimensions (none, one or two)."""
        if self.sweep is None:
            return []
        return self.sweep if isinstance(self.sweep, list) else [self.sweep]

    @model_validator(mode="after")
    def _beam_hosts(self) -> Scenario:
        terms = self.hosts.terminals
        names = [t.name for t in terms] if terms else None
        if terms:
            counts = [t.clients for t in terms]
            beam_hosts.check_terminal_clients(names or [], counts, self.hosts.clients, MAX_CLIENTS)
        beam_hosts.check_against_link(names, self.link)
        return self

    @model_validator(mode="after")
    def _references_exist(self) -> Scenario:
        names = [c.name for c in self.configurations]
        if len(set(names)) != len(names):
            raise ValueError("configurations: names must be unique")
        for i, c in enumerate(self.configurations):
            for cc in sorted(c.congestion_controls(self.traffic)):
                _check_project_cc(f"configurations.{i}", cc, c)
                scheme = PROJECT_SCHEMES.get(cc)
                if scheme and scheme.needs_no_timestamps and self.hosts.settings.timestamps:
                    raise ValueError(
                        f"hosts.settings.timestamps: configurations.{i} uses {cc}, whose TCP "
                        "option must be the first one (Linux writes timestamps before it): "
                        "set it to false"
                    )
            if c.pep is not None:
                _check_project_cc(f"configurations.{i}.pep", c.pep.congestion_control, c)
            if c.receiver.withhold is not None and self.hosts.settings.sack:
                # The withheld and rewritten ACKs are plain dupACKs; SACK blocks would tell the
                # sender what they hide (and Linux compresses SACKed dupACKs).
                raise ValueError(
                    f"configurations.{i}.receiver.withhold: needs hosts.settings.sack: false"
                )
        for i, t in enumerate(self.traffic):
            check_traffic_times(i, t, self.duration_s)
            if t.hop is not None:
                continue  # between a hop's cross hosts: _path_references
            if t.client > self.hosts.clients:
                raise ValueError(
                    f"traffic.{i}.client: {t.client} > hosts.clients ({self.hosts.clients})"
                )
            if t.server > self.hosts.servers:
                raise ValueError(
                    f"traffic.{i}.server: {t.server} > hosts.servers ({self.hosts.servers})"
                )
        return self

    @model_validator(mode="after")
    def _path_references(self) -> Scenario:
        hops = self.path.terrestrial if self.path else []
        for i, t in enumerate(self.traffic):
            if t.hop is None:
                continue
            if t.hop > len(hops):
                raise ValueError(
                    f"traffic.{i}.hop: {t.hop} > the hops of path.terrestrial ({len(hops)})"
                )
            have = hops[t.hop - 1].cross_hosts
            for end in ("server", "client"):
                if getattr(t, end) > have:
                    raise ValueError(
                        f"traffic.{i}.{end}: {getattr(t, end)} > "
                        f"path.terrestrial.{t.hop - 1}.cross_hosts ({have}), the cross hosts "
                        f"of hop {t.hop}"
                    )
            if getattr(t, "rate_share", None) is not None:
                raise ValueError(
                    f"traffic.{i}.rate_share: a share of the satellite link; cross traffic on "
                    "a hop gives rate_bps"
                )
        for i, c in enumerate(self.configurations):
            if hops and c.pep is not None:
                raise ValueError(
                    f"configurations.{i}.pep: the split-TCP PEP intercepts on the gw edge's LAN, "
                    "which terrestrial hops (path.terrestrial) replace; not supported together yet"
                )
        return self

    @model_validator(mode="after")
    def _link_budget(self) -> Scenario:
        if self.link_budget is not None:
            linkbudget.check(self.link_budget, self.link)
        return self

    @model_validator(mode="after")
    def _sweep_and_claims(self) -> Scenario:
        check_sweep(self)
        _check_claims(self)
        return self


def _check_project_cc(where: str, cc: str, c: Configuration) -> None:
    """A project congestion control must exist, and BETEN needs the edge's notices."""
    if not cc.startswith("sl_"):
        return  # a kernel one: the sender's setsockopt reports an unknown name at run time
    if cc not in PROJECT_SCHEMES:
        raise ValueError(
            f"{where}: congestion control {cc!r} is not a project scheme "
            f"(one of {', '.join(sorted(PROJECT_SCHEMES))})"
        )
    flag = PROJECT_SCHEMES[cc].needs_gateway
    if flag and (c.gateway is None or not getattr(c.gateway, flag).enabled):
        raise ValueError(
            f"{where}.gateway.{flag}.enabled: {cc} needs it from the satellite edges "
            f"(gateway: {{{flag}: {{enabled: true}}}})"
        )


class ScenarioError(ValueError):
    """A scenario that cannot be used, with every problem as `field: reason` lines."""


# The line boundaries of str.splitlines() (which the API's errors are split on), escaped: a key or
# a tag value of the client's may hold one, and each problem must stay one `field: reason` line.
_LINE_BREAKS = "\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029"
_ONE_LINE = {ord(c): repr(c)[1:-1] for c in _LINE_BREAKS}
_FIELD_FIRST = re.compile(r"[a-z_][\w.]*: ")


def format_validation_error(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(scenario)"
        # The scenario's own checks across fields name the field first ("sweep.1.values.2: ..."):
        # that is the line's field, as for any other error.
        reason = str(e.get("ctx", {}).get("error", ""))
        if not e["loc"] and e["type"] == "value_error" and _FIELD_FIRST.match(reason):
            lines.append(reason.translate(_ONE_LINE))
            continue
        lines.append(f"{where}: {e['msg']}".translate(_ONE_LINE))
    return "\n".join(lines)


def parse_scenario(data: Any) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(format_validation_error(err)) from None


# Keys of the emulator configuration whose values are file paths (emulator/CONFIG.md).
LINK_PATH_KEYS = {"modcod_table", "per_table", "path", "file", "pattern_file", "record_file"}


def link_file_refs(link: Any, where: str = "link") -> Iterator[tuple[str, str, str]]:
    """(field path, key, file name) of every file reference in a link, in document order."""
    if isinstance(link, dict):
        for k, v in link.items():
            if k in LINK_PATH_KEYS and isinstance(v, str):
                yield f"{where}.{k}", k, v
            else:
                yield from link_file_refs(v, f"{where}.{k}")
    elif isinstance(link, list):
        for i, v in enumerate(link):
            yield from link_file_refs(v, f"{where}.{i}")


# The files service's kind of a link file reference (`POST /api/files?kind=`).
FILE_KINDS = {"modcod_table": "modcod", "per_table": "per"}


def link_file_kind(where: str, key: str) -> str:
    """The kind of the file at field path `where` (a link_file_refs entry) under `key`."""
    if key in FILE_KINDS:
        return FILE_KINDS[key]
    return "delay" if "delay" in where else "attenuation"


def map_link_files(link: Any, fn: Callable[[str, str], str], where: str = "link") -> Any:
    """The link with every file reference replaced by fn(field path, file name)."""
    if isinstance(link, dict):
        return {
            k: fn(f"{where}.{k}", v)
            if k in LINK_PATH_KEYS and isinstance(v, str)
            else map_link_files(v, fn, f"{where}.{k}")
            for k, v in link.items()
        }
    if isinstance(link, list):
        return [map_link_files(v, fn, f"{where}.{i}") for i, v in enumerate(link)]
    return link


def resolve_link_paths(link: Any, base: Path) -> Any:
    """Relative file paths in the link become absolute against the scenario file's directory, so
    the emulator finds them wherever its own configuration file is written."""
    return map_link_files(
        link, lambda _, v: v if Path(v).is_absolute() else str((base / v).resolve())
    )


def load_scenario(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ScenarioError(f"{path}: not valid YAML: {err}") from None
    except OSError as err:
        raise ScenarioError(f"{path}: {err.strerror}") from None
    if isinstance(data, dict) and isinstance(data.get("link"), dict):
        data["link"] = resolve_link_paths(data["link"], path.parent)
    if isinstance(data, dict) and isinstance(data.get("path"), dict):
        data["path"] = resolve_link_paths(data["path"], path.parent)  # a hop's bit-error files
    return parse_scenario(data)


LINK_SCHEMA_FILE = Path(__file__).with_name("link_schema.json")
LINK_DEF_PREFIX = "Link"


def link_json_schema() -> dict[str, Any]:
    """The emulator configuration's JSON Schema (`satlab-emulator --print-schema`, committed as
    link_schema.json by `make schemas`; a test fails when the two differ)."""
    schema: dict[str, Any] = json.loads(LINK_SCHEMA_FILE.read_text())
    return schema


def _prefix_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (
                v.replace("#/$defs/", f"#/$defs/{LINK_DEF_PREFIX}")
                if k == "$ref" and isinstance(v, str)
                else _prefix_refs(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_prefix_refs(v) for v in node]
    return node


def json_schema_dict() -> dict[str, Any]:
    """The scenario's JSON Schema with `link` described by the emulator's own schema (its
    definitions renamed `Link...` so they cannot clash with the scenario's)."""
    schema = Scenario.model_json_schema()
    link = _prefix_refs(link_json_schema())
    defs = schema.setdefault("$defs", {})
    for name, d in link.pop("$defs", {}).items():
        defs[LINK_DEF_PREFIX + name] = d
    for key in ("$schema", "title"):
        link.pop(key, None)
    link["description"] = schema["properties"]["link"].get("description", "")
    # The runner sets these per run (seed, ports, control address, telemetry socket and period).
    link["x-set-by-runner"] = ["seed", "ports", "control", "telemetry"]
    link.setdefault("properties", {})["backend"] = {
        "type": "string",
        "enum": list(BACKENDS),
        "default": "satlab",
        "description": "which emulator carries the link: the built-in one, or OpenSAND 8's "
        "entities (the runner fails before anything runs when OpenSAND is not installed)",
    }
    link["default"] = {}
    schema["properties"]["link"] = link
    return schema


def json_schema() -> str:
    return json.dumps(json_schema_dict(), indent=2)


class RunSpec(BaseModel):
    """One run: a configuration at one sweep point, one repetition."""

    configuration: Configuration
    sweep_value: SweepValue
    repetition: int
    seed: int
    link: dict[str, Any] = Field(
        description="the run's emulator configuration (its scenario's link; the worker rewrites "
        "its file references to where it put the files)"
    )
    scenario: Scenario | None = Field(
        None,
        description="the run's own scenario: a copy with the point's sweep values applied, "
        "without sweep and expectations (None in runs queued before it was stored: their "
        "sweeps varied the link only, so the experiment's scenario serves)",
    )


# Scenario fields a sweep may not vary, and why.
NOT_SWEPT = {
    "version": "the schema version",
    "name": "it names the experiment",
    "seed": "each repetition has its own; sweep points of one repetition share it",
    "repetitions": "it counts the runs; set it instead",
    "sweep": "the sweep itself",
    "expectations": "the claims, not the experiment",
    "reproduction": "metadata, not the experiment",
}


def sweep_keys(path: str) -> list[str]:
    """A sweep path's keys from the scenario's top: one whose first key is no scenario field is
    inside `link` (the v1 meaning)."""
    keys = path.split(".")
    return keys if keys[0] in Scenario.model_fields else ["link", *keys]


def set_path(tree: dict[str, Any], path: str, value: Any) -> None:
    """Sets `path` (a sweep path) in `tree`, a scenario as data. Inside `link`, which only the
    emulator validates, missing mappings are made; elsewhere every key must name a field the tree
    has and every index must be in range. A ScenarioError says where the path went wrong."""
    keys = sweep_keys(path)
    if keys[0] in NOT_SWEPT:
        raise ScenarioError(f"{keys[0]} cannot be swept ({NOT_SWEPT[keys[0]]})")
    if "" in keys:
        raise ScenarioError(f"{path!r} has an empty key")
    if keys[0] == "configurations" and keys[2:] == ["name"]:
        raise ScenarioError(f"{path} cannot be swept (the comparison goes by configuration name)")
    free = keys[0] == "link"
    node: Any = tree
    for depth, k in enumerate(keys):
        here = ".".join(keys[: depth + 1])
        last = depth == len(keys) - 1
        index: int | str
        if isinstance(node, list):
            if not k.isdigit() or int(k) >= len(node):
                raise ScenarioError(f"{here}: no item {k} (the list has {len(node)})")
            index = int(k)
        elif isinstance(node, dict):
            if k not in node:
                if not free:
                    raise ScenarioError(f"{here} names no field of the scenario")
                if not last:
                    node[k] = {}
            index = k
        else:
            above = ".".join(keys[:depth])
            raise ScenarioError(
                f"{path} goes through {above}, which is {json.dumps(node)}, not a mapping or list"
            )
        if last:
            node[index] = value
        else:
            node = node[index]


def _point_data(sc: Scenario) -> dict[str, Any]:
    """The scenario as data, without what a single run has no use for."""
    return sc.model_dump(mode="json", exclude={"sweep", "expectations", "reproduction"})


def _parse_point(data: dict[str, Any], where: str) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ValueError(f"{where}: " + format_validation_error(err).replace("\n", "; ")) from None


def check_sweep(sc: Scenario) -> None:
    """Paths that name a field, at most MAX_SWEEP_POINTS points, and every value (alone, then in
    every combination of two dimensions) giving a scenario that still parses."""
    dims = sc.sweeps()
    if not dims:
        return

    def where(i: int) -> str:
        return f"sweep.{i}" if isinstance(sc.sweep, list) else "sweep"

    targets: list[list[str]] = []
    for i, d in enumerate(dims):
        t = sweep_keys(d.path)
        for j, other in enumerate(targets):
            if t[: len(other)] == other or other[: len(t)] == t:
                raise ValueError(f"{where(i)}.path: {d.path} overlaps {where(j)}.path")
        targets.append(t)
        for j, v in enumerate(d.values):
            if any(same_value(v, x) for x in d.values[:j]):
                raise ValueError(f"{where(i)}.values.{j}: {v!r} is there twice")
    points = math.prod(len(d.values) for d in dims)
    if points > MAX_SWEEP_POINTS:
        shape = " x ".join(str(len(d.values)) for d in dims)
        raise ValueError(f"sweep: {shape} = {points} points exceed the limit of {MAX_SWEEP_POINTS}")
    base = _point_data(sc)
    for i, d in enumerate(dims):
        for j, v in enumerate(d.values):
            data = copy.deepcopy(base)
            try:
                set_path(data, d.path, v)
            except ScenarioError as err:
                raise ValueError(f"{where(i)}.path: {err}") from None
            _parse_point(data, f"{where(i)}.values.{j}")
    if len(dims) == 2:  # values that parse alone may not together (a scheme and a host setting)
        for (j0, v0), (j1, v1) in itertools.product(
            enumerate(dims[0].values), enumerate(dims[1].values)
        ):
            data = copy.deepcopy(base)
            set_path(data, dims[0].path, v0)
            set_path(data, dims[1].path, v1)
            _parse_point(data, f"sweep.0.values.{j0}, sweep.1.values.{j1}")


def _check_coordinates(
    where: str, path: str, wanted: list[Any], dims: dict[str, list[Any]]
) -> None:
    if path not in dims:
        have = ", ".join(dims) or "the scenario has no sweep"
        raise ValueError(f"{where}.{path}: not a sweep path as written ({have})")
    if not wanted:
        raise ValueError(f"{where}.{path}: give at least one value")
    for v in wanted:
        if not any(same_value(v, x) for x in dims[path]):
            raise ValueError(f"{where}.{path}: {v!r} is not one of the sweep's values {dims[path]}")


def _check_claims(sc: Scenario) -> None:
    """Expectations name configurations and sweep points of the scenario; the CI subset keeps
    values of its sweep."""
    dims = {d.path: list(d.values) for d in sc.sweeps()}
    names = [c.name for c in sc.configurations]
    ids: set[str] = set()
    for i, e in enumerate(sc.expectations):
        if e.id in ids:
            raise ValueError(f"expectations.{i}.id: {e.id!r} is used twice")
        ids.add(e.id)
        for c in Measure.parse(e.measure).configurations():
            if c not in names:
                raise ValueError(
                    f"expectations.{i}.measure: {c!r} is not a configuration ({', '.join(names)})"
                )
        for path, v in (e.at or {}).items():
            _check_coordinates(f"expectations.{i}.at", path, [v], dims)
    ci = sc.reproduction.ci if sc.reproduction else None
    for path, vs in (ci.sweep_values or {}).items() if ci else ():
        _check_coordinates("reproduction.ci.sweep_values", path, vs, dims)


def sweep_points(sc: Scenario) -> list[SweepValue]:
    """Each sweep point's sweep_value, in run order (the last dimension varies fastest)."""
    dims = sc.sweeps()
    if not dims:
        return [None]
    if len(dims) == 1:
        return list(dims[0].values)
    return [list(p) for p in itertools.product(*(d.values for d in dims))]


def point_scenario(sc: Scenario, value: SweepValue) -> Scenario:
    """The scenario of one sweep point: a copy with the point's values applied, without the
    sweep, the expectations and the reproduction section."""
    dims = sc.sweeps()
    data = _point_data(sc)
    coords = value if len(dims) > 1 and isinstance(value, list) else [value][: len(dims)]
    for d, v in zip(dims, coords, strict=True):
        set_path(data, d.path, v)
    return parse_scenario(data)


def sweep_record(sc: Scenario, value: SweepValue) -> dict[str, Any] | None:
    """A run result's `sweep`: {path, value} for one dimension, {paths, value: [v1, v2]} for two."""
    dims = sc.sweeps()
    if not dims:
        return None
    if len(dims) == 1:
        return {"path": dims[0].path, "value": value}
    return {"paths": [d.path for d in dims], "value": value}


def point_link(sc: Scenario) -> dict[str, Any]:
    """The emulator configuration of a (swept) scenario: its link, with clear_sky_db filled by
    its link budget if it has one."""
    try:
        return linkbudget.apply(sc.link_budget, sc.link)
    except ValueError as err:
        raise ScenarioError(str(err)) from None


def expand_runs(sc: Scenario) -> list[RunSpec]:
    """Every run of the scenario. The seed depends on the repetition only, so all configurations
    (and sweep points) of one repetition see the same channel: same trace, same error pattern."""
    points = [(v, point_scenario(sc, v)) for v in sweep_points(sc)]
    links = [point_link(p) for _, p in points]
    runs = []
    for rep in range(sc.repetitions):
        for (v, point), link in zip(points, links, strict=True):
            for cfg in point.configurations:
                runs.append(
                    RunSpec(
                        configuration=cfg,
                        sweep_value=v,
                        repetition=rep,
                        seed=sc.seed + rep,
                        link=link,
                        scenario=point,
                    )
                )
    return runs


def drop_stale_claims(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a validated scenario as data whose sweep or configurations were then replaced:
    an experiment's override, the CI subset) without the expectations that name a configuration
    it no longer has or a sweep point it no longer runs."""
    sweep = data.get("sweep")
    dims = {d["path"]: d["values"] for d in (sweep if isinstance(sweep, list) else [sweep]) if d}
    names = {c["name"] for c in data["configurations"]}

    def fits(e: dict[str, Any]) -> bool:
        return all(c in names for c in Measure.parse(e["measure"]).configurations()) and all(
            p in dims and any(same_value(v, x) for x in dims[p])
            for p, v in (e.get("at") or {}).items()
        )

    return {**data, "expectations": [e for e in data.get("expectations") or [] if fits(e)]}


def apply_subset(sc: Scenario, subset: Literal["ci"]) -> Scenario:
    """The scenario `satlab reproduce --subset ci` runs: reproduction.ci's duration, repetitions
    and sweep values applied. Expectations at sweep points it no longer runs are left out."""
    if subset != "ci":
        raise ScenarioError(f"subset: {subset!r} is not a subset (ci)")
    ci = sc.reproduction.ci if sc.reproduction else None
    if ci is None:
        raise ScenarioError(f"reproduction.ci: {sc.name} is not in the CI subset (none given)")
    data = sc.model_dump(mode="json")
    if ci.duration_s is not None:
        data["duration_s"] = ci.duration_s
    if ci.repetitions is not None:
        data["repetitions"] = ci.repetitions
    sweep = data["sweep"]
    for d in sweep if isinstance(sweep, list) else [sweep] if sweep else []:
        keep = (ci.sweep_values or {}).get(d["path"])
        if keep is not None:
            d["values"] = [v for v in d["values"] if any(same_value(v, k) for k in keep)]
    return parse_scenario(drop_stale_claims(data))
