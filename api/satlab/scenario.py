"""Scenario schema v1: one YAML file that reads like the experiment it describes.

A scenario has a link (the emulator's configuration, see emulator/CONFIG.md), the end hosts and
their TCP settings, the traffic, the transport configurations to compare, how to repeat and sweep.
Every number carries its unit in its name and has bounds; errors name the field and the limit.
`expand_runs` turns a scenario into the list of runs (configuration x sweep value x repetition).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from satlab.schemes import SCHEMES

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


class Hosts(Strict):
    servers: int = Field(1, ge=1, le=16, description="terrestrial hosts behind the gateway")
    clients: int = Field(1, ge=1, le=16, description="hosts behind the satellite terminal")
    mtu_bytes: int = Field(1500, ge=576, le=9000)
    settings: HostSettings = HostSettings()


CC_PATTERN = r"^[a-z0-9_]{1,15}$"
CC_DESCRIPTION = (
    "a kernel algorithm (cubic, reno, bbr) or a project one (satlab.schemes: sl_newreno, "
    "sl_beten, sl_oracle, sl_westwood, ...)"
)


class BulkTcp(Strict):
    """A bulk TCP transfer of an exact byte count, or for a duration."""

    kind: Literal["bulk_tcp"]
    congestion_control: str | None = Field(
        None, pattern=CC_PATTERN, description="this flow's, instead of the configuration's"
    )
    direction: Literal["download", "upload"] = "download"
    bytes: int | None = Field(None, ge=1, le=1 << 40)
    duration_s: float | None = Field(None, gt=0, le=3600)
    parallel: int = Field(1, ge=1, le=64, description="parallel connections for one user")
    client: int = Field(1, ge=1, le=16, description="which client host (1-based)")
    server: int = Field(1, ge=1, le=16)

    @model_validator(mode="after")
    def _one_stop_rule(self) -> BulkTcp:
        if (self.bytes is None) == (self.duration_s is None):
            raise ValueError("give exactly one of bytes or duration_s")
        return self


class ShortFlows(Strict):
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
    client: int = Field(1, ge=1, le=16)
    server: int = Field(1, ge=1, le=16)


class UdpCross(Strict):
    """UDP cross traffic at a constant rate, or exponential on/off (the ETEN report's)."""

    kind: Literal["udp_cbr", "udp_onoff"]
    direction: Literal["download", "upload"] = "download"
    rate_bps: float = Field(gt=0, le=10e9)
    packet_bytes: int = Field(1200, ge=28, le=1472)
    mean_on_s: float = Field(1.0, gt=0, le=600)
    mean_off_s: float = Field(1.0, gt=0, le=600)
    client: int = Field(1, ge=1, le=16)
    server: int = Field(1, ge=1, le=16)


Traffic = Annotated[BulkTcp | ShortFlows | UdpCross, Field(discriminator="kind")]


class EtenSender(Strict):
    """The sender's checks on BETEN notices before one counts (endhosts/bpf/eten.bpf.c; ETEN
    report section 7). The MAC key is the gateway's `eten_hmac_key_hex`: with a key, unsigned or
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


class GatewayAqm(Strict):
    """The gateway's egress queue toward the satellite (gateway/README.md, "AQM")."""

    kind: Literal["drop_tail", "red", "red_ecn"] = "drop_tail"
    limit_packets: int = Field(1000, ge=1, le=10_000_000)
    limit_bytes: int = Field(1_500_000, ge=64, le=1 << 34)
    min_th_packets: float = Field(5, ge=0, le=1e7, description="RED min_th, average packets")
    max_th_packets: float = Field(15, ge=0, le=1e7, description="RED max_th, average packets")
    max_p: float = Field(0.1, ge=0, le=1, description="RED drop/mark probability at max_th")
    w_q: float = Field(0.002, ge=1e-6, le=1, description="RED averaging weight")

    @model_validator(mode="after")
    def _thresholds(self) -> GatewayAqm:
        if self.max_th_packets <= self.min_th_packets:
            raise ValueError(
                f"max_th_packets: {self.max_th_packets} must be greater than min_th_packets "
                f"({self.min_th_packets})"
            )
        return self


class GatewaySettings(Strict):
    """The edge gateway at both edges (gateway/README.md); absent: no gateway in the path."""

    rate_factor: float = Field(
        0.97, ge=0.1, le=1.0, description="egress pacing rate / the link's current useful rate"
    )
    aqm: GatewayAqm = GatewayAqm()
    eten: bool = Field(False, description="BETEN notices for corrupted/erased packets")
    eten_hmac_key_hex: str | None = Field(None, pattern=r"^([0-9a-fA-F]{2}){16,64}$")
    eten_rate_limit_per_s: float = Field(1000, ge=0, le=1e7)
    ceten: bool = Field(False, description="CETEN survival estimates stamped on the TCP option")
    ceten_reflect: bool = Field(False, description="the st/gw edge reflects CETEN on ACKs")
    ceten_alpha: float = Field(
        0.5,
        gt=0,
        le=1,
        description="EWMA weight of the newest packet in the per-link survival estimates (the "
        "ETEN report's 0.5 forgets a corruption within about ten packets; smaller values "
        "remember longer)",
    )
    ern: bool = Field(False, description="IP-ERN router (XCP laws on ERN traffic)")
    ern_ports: list[int] = Field(default_factory=list, max_length=64)


class PepSettings(Strict):
    """The split-TCP PEP (gateway/pep/README.md) at one or both edges; absent: end-to-end TCP."""

    edges: Literal["gw", "st", "both"] = Field(
        "both", description="where connections are split: the gw edge, the st edge, or both"
    )
    congestion_control: str = Field(
        "cubic",
        pattern=r"^[a-z0-9_]{1,15}$",
        description="the satellite leg's TCP_CONGESTION: a kernel or project eBPF algorithm",
    )
    buffer_bytes: int = Field(
        4 << 20,
        description="satellite-leg SO_SNDBUF/SO_RCVBUF; size for the GEO BDP (0: autotuning)",
    )
    initial_window_packets: int = Field(
        10,
        ge=0,
        le=1000,
        description="initcwnd/initrwnd of routes out the satellite side (0: as is)",
    )
    max_connections: int = Field(2048, ge=1, le=100_000, description="more are refused (reset)")
    idle_timeout_s: float = Field(300, ge=0.1, le=86400, description="idle connections are reset")

    @model_validator(mode="after")
    def _buffer(self) -> PepSettings:
        if self.buffer_bytes != 0 and not 65536 <= self.buffer_bytes <= 1073741823:
            raise ValueError("buffer_bytes must be 0 or between 65536 and 1073741823 bytes")
        return self


class Withhold(Strict):
    """Yang's reordering-robust receiver (Yang 2001, section 3.2; endhosts/withhold): the
    receiving host withholds dupACKs up to the largest reordering stride seen, through NFQUEUE.
    The open parameters of the thesis are chosen here (endhosts/README.md)."""

    immediate_dupacks: int = Field(
        2, ge=0, le=2, description="dupACKs sent at once (0 for senders using Limited Transmit)"
    )
    history_episodes: int = Field(
        16, ge=1, le=1024, description="reordering episodes whose largest stride is kept"
    )
    iat_weight: float = Field(
        0.125, ge=0.001, le=1, description="EWMA weight of the newest inter-arrival time"
    )
    initial_threshold_packets: int = Field(
        3, ge=1, le=10000, description="threshold before any reordering is recorded"
    )
    rtt_ms: float = Field(
        600,
        ge=1,
        le=60000,
        description="receiver RTT estimate: a hole filled later was a retransmission",
    )


class ReceiverSettings(Strict):
    """What runs on the receiving hosts of the configuration's TCP flows."""

    withhold: Withhold | None = None


class Configuration(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]{1,40}$")
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


class Sweep(Strict):
    """One link parameter varied over values; `path` is a dotted path into `link`."""

    path: str = Field(pattern=r"^[a-z_][a-z0-9_.]*$", examples=["forward.bit_errors.ber"])
    values: list[float | int | str] = Field(min_length=1, max_length=50)


class Capture(Strict):
    """A size-capped pcap of every end host's interface (headers only by default)."""

    snaplen_bytes: int = Field(128, ge=64, le=65535)
    max_bytes_per_host: int = Field(20_000_000, ge=10_000, le=1_000_000_000)


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
    hosts: Hosts = Hosts()
    traffic: list[Traffic] = Field(min_length=1, max_length=64)
    configurations: list[Configuration] = Field(min_length=1, max_length=32)
    sweep: Sweep | None = None
    capture: Capture | None = None

    @model_validator(mode="after")
    def _references_exist(self) -> Scenario:
        names = [c.name for c in self.configurations]
        if len(set(names)) != len(names):
            raise ValueError("configurations: names must be unique")
        for i, c in enumerate(self.configurations):
            for cc in sorted(c.congestion_controls(self.traffic)):
                _check_project_cc(f"configurations.{i}", cc, c)
                scheme = SCHEMES.get(cc)
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
            if t.client > self.hosts.clients:
                raise ValueError(
                    f"traffic.{i}.client: {t.client} > hosts.clients ({self.hosts.clients})"
                )
            if t.server > self.hosts.servers:
                raise ValueError(
                    f"traffic.{i}.server: {t.server} > hosts.servers ({self.hosts.servers})"
                )
        return self


def _check_project_cc(where: str, cc: str, c: Configuration) -> None:
    """A project congestion control must exist, and BETEN needs the edge's notices."""
    if not cc.startswith("sl_"):
        return  # a kernel one: the sender's setsockopt reports an unknown name at run time
    if cc not in SCHEMES:
        raise ValueError(
            f"{where}: congestion control {cc!r} is not a project scheme "
            f"(one of {', '.join(sorted(SCHEMES))})"
        )
    flag = SCHEMES[cc].needs_gateway
    if flag and (c.gateway is None or not getattr(c.gateway, flag)):
        raise ValueError(
            f"{where}.gateway.{flag}: {cc} needs it from the satellite edges "
            f"(gateway: {{{flag}: true}})"
        )


class ScenarioError(ValueError):
    """A scenario that cannot be used, with every problem as `field: reason` lines."""


# The line boundaries of str.splitlines() (which the API's errors are split on), escaped: a key or
# a tag value of the client's may hold one, and each problem must stay one `field: reason` line.
_LINE_BREAKS = "\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029"
_ONE_LINE = {ord(c): repr(c)[1:-1] for c in _LINE_BREAKS}


def format_validation_error(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(scenario)"
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
    link["default"] = {}
    schema["properties"]["link"] = link
    return schema


def json_schema() -> str:
    return json.dumps(json_schema_dict(), indent=2)


class RunSpec(BaseModel):
    """One run: a configuration on the link with the sweep value applied, one repetition."""

    configuration: Configuration
    sweep_value: float | int | str | None
    repetition: int
    seed: int
    link: dict[str, Any]


def set_path(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ScenarioError(f"sweep.path: {dotted!r} goes through a non-mapping at {k!r}")
    node[keys[-1]] = value


def expand_runs(sc: Scenario) -> list[RunSpec]:
    """Every run of the scenario. The seed depends on the repetition only, so all configurations
    (and sweep points) of one repetition see the same channel: same trace, same error pattern."""
    values: list[float | int | str | None] = list(sc.sweep.values) if sc.sweep else [None]
    runs = []
    for rep in range(sc.repetitions):
        for v in values:
            link = copy.deepcopy(sc.link)
            if sc.sweep is not None and v is not None:
                set_path(link, sc.sweep.path, v)
            for cfg in sc.configurations:
                runs.append(
                    RunSpec(
                        configuration=cfg,
                        sweep_value=v,
                        repetition=rep,
                        seed=sc.seed + rep,
                        link=link,
                    )
                )
    return runs
