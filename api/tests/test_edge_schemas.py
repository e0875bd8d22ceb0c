"""The gateway's, the PEP's and the withholding receiver's configurations are owned by their Rust
types (gateway/src/config.rs, gateway/pep/src/config.rs, endhosts/withhold/src/config.rs), whose
JSON Schemas `make schemas` commits (gateway_schema.json, pep_schema.json, withhold_schema.json).
A scenario's `pep` section is the PEP's own settings type plus `edges` (the generated
records/pep.py), `receiver.withhold` the receiver's (records/withhold.py), the `gateway` section
the gateway's file sections but what the testbed sets (records/gateway.py,
satlab.gateway_settings). Every value a scenario accepts must give a file the binary's own
`--check` accepts, and a value past a bound names the field and the binary's limit."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import annotated_types
import pytest
import yaml
from pydantic import BaseModel, RootModel, ValidationError

from satlab.gateway_settings import TESTBED_ETEN, EtenSettings, GatewaySettings
from satlab.records.gateway import Aqm, Ceten, Config, Egress, Ern
from satlab.records.withhold import Withhold
from satlab.scenario import PepSettings, parse_scenario
from satlab.settings import GATEWAY_BIN, PEP_BIN, WITHHOLD_BIN
from satlab.testbed import withhold
from satlab.testbed.gateway import gateway_config
from satlab.testbed.pep import pep_config

SCHEMAS = Path(__file__).parents[1] / "satlab"


def _bounds(model: type[BaseModel]) -> list[tuple[str, float]]:
    """(field, value) at each numeric bound the scenario model enforces (just inside a `gt`)."""
    out = []
    for name, f in model.model_fields.items():
        for m in f.metadata:
            if isinstance(m, annotated_types.Ge):
                out.append((name, float(m.ge)))  # type: ignore[arg-type]
            elif isinstance(m, annotated_types.Gt):
                out.append((name, float(m.gt) + 1e-9))  # type: ignore[arg-type]
            elif isinstance(m, annotated_types.Le):
                out.append((name, float(m.le)))  # type: ignore[arg-type]
    return out


def _check(binary: Path, config: dict[str, Any], tmp_path: Path) -> None:
    assert binary.exists(), f"{binary} is missing: cargo build --release"
    path = tmp_path / "edge.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    r = subprocess.run(
        [str(binary), "--config", str(path), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, f"{binary.name} refused {config}: {r.stderr}"


def _gateway(settings: GatewaySettings) -> dict[str, Any]:
    return gateway_config(settings, "gw", "10.0.0.1", Path("/tmp/telemetry.sock"), 1)


GATEWAY_SECTIONS: dict[str, type[BaseModel]] = {
    "egress": Egress,
    "egress.aqm": Aqm,
    "eten": EtenSettings,
    "ceten": Ceten,
    "ern": Ern,
}
GATEWAY_CASES = [
    (f"{section}.{n}", v) for section, model in GATEWAY_SECTIONS.items() for n, v in _bounds(model)
]


@pytest.mark.parametrize(("field", "value"), GATEWAY_CASES)
def test_every_gateway_bound_of_the_scenario_is_accepted_by_the_gateway(
    field: str, value: float, tmp_path: Path
) -> None:
    *sections, name = field.split(".")
    leaf: dict[str, Any] = {name: value}
    if sections == ["egress", "aqm"]:
        # RED's thresholds keep max_th > min_th: the other one at its far end.
        other = {"min_th_packets": ("max_th_packets", 1e7), "max_th_packets": ("min_th_packets", 0)}
        if name in other:
            leaf = dict([(name, value), other[name]])
    if field == "ern.min_interval_ms":
        # The intervals nest (min <= initial <= max): the others at the far end.
        leaf |= {"initial_interval_ms": 6e4, "max_interval_ms": 6e4}
    data: dict[str, Any] = leaf
    for section in reversed(sections):
        data = {section: data}
    try:
        settings = GatewaySettings.model_validate(data)
    except ValidationError:
        pytest.skip("the scenario refuses it too (a cross-field rule)")
    _check(GATEWAY_BIN, _gateway(settings), tmp_path)


@pytest.mark.parametrize(("field", "value"), _bounds(PepSettings))
def test_every_pep_bound_of_the_scenario_is_accepted_by_the_pep(
    field: str, value: float, tmp_path: Path
) -> None:
    settings = PepSettings.model_validate({field: value})
    _check(PEP_BIN, pep_config(settings, "st", gateway=True), tmp_path)


def test_the_testbed_writes_only_fields_the_binaries_declare() -> None:
    """Every key the testbed writes is a property of the binary's schema (which denies unknown
    fields), so a renamed Rust field fails here rather than at a run's start."""

    def walk(doc: dict[str, Any], node: dict[str, Any], root: dict[str, Any], at: str) -> None:
        for key, value in doc.items():
            assert key in node.get("properties", {}), f"{at}{key} is not in the schema"
            sub = node["properties"][key]
            ref = sub.get("$ref") or next(
                (v["$ref"] for v in sub.get("anyOf", []) if "$ref" in v), None
            )
            if isinstance(value, dict) and ref:
                walk(value, root["$defs"][ref.removeprefix("#/$defs/")], root, f"{at}{key}.")

    for name, config in [
        (
            "gateway",
            _gateway(
                GatewaySettings.model_validate(
                    {s: {"enabled": True} for s in ("eten", "ceten", "ern")}
                    | {"egress": {"aqm": {"kind": "red_ecn"}, "rate_bps": 1e6}}
                )
            ),
        ),
        ("pep", pep_config(PepSettings(), "gw", gateway=True)),
    ]:
        schema = json.loads((SCHEMAS / f"{name}_schema.json").read_text())
        assert schema["additionalProperties"] is False
        walk(config, schema, schema, "")


# The withholding receiver's settings type is generated from its schema (records/withhold.py);
# the testbed passes it as flags (satlab.testbed.withhold.args): the binary must read them back
# as the same settings, at every bound and with the defaults.
WITHHOLD_CASES = [*_bounds(Withhold), ("defaults", 0.0)]


@pytest.mark.parametrize(("field", "value"), WITHHOLD_CASES)
def test_the_receivers_flags_say_what_the_scenario_gave(field: str, value: float) -> None:
    settings = Withhold.model_validate({} if field == "defaults" else {field: value})
    assert WITHHOLD_BIN.exists(), f"{WITHHOLD_BIN} is missing: cargo build --release"
    r = subprocess.run(
        [str(WITHHOLD_BIN), "--check", *withhold.args(settings, [5001, 5002])],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["withhold"] == settings.model_dump()


def test_the_scenario_refuses_withhold_settings_outside_the_binarys_bounds() -> None:
    schema = json.loads((SCHEMAS / "withhold_schema.json").read_text())
    rtt = schema["$defs"]["Withhold"]["properties"]["rtt_ms"]
    base = {
        "name": "w",
        "hosts": {"settings": {"sack": False}},
        "traffic": [{"kind": "bulk_tcp", "duration_s": 1}],
        "configurations": [{"name": "c", "receiver": {"withhold": {"rtt_ms": rtt["maximum"]}}}],
    }
    assert parse_scenario(base).configurations[0].receiver.withhold is not None
    base["configurations"][0]["receiver"]["withhold"]["rtt_ms"] = rtt["maximum"] + 1
    with pytest.raises(ValueError, match=r"receiver.withhold.rtt_ms: Input should be less"):
        parse_scenario(base)


def _configuration(section: str, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "e",
        "traffic": [{"kind": "bulk_tcp", "duration_s": 1}],
        "configurations": [{"name": "c", section: value}],
    }


# (section, field as the scenario spells it, its place in the binary's schema, a value past it)
OUT_OF_BOUNDS = [
    ("gateway", "ceten.alpha", ("gateway", "Ceten", "alpha", "minimum"), 0),
    ("gateway", "egress.rate_factor", ("gateway", "Egress", "rate_factor", "maximum"), 1.5),
    ("gateway", "eten.rate_limit_per_s", ("gateway", "Eten", "rate_limit_per_s", "maximum"), 1e9),
    ("gateway", "egress.aqm.w_q", ("gateway", "Aqm", "w_q", "minimum"), 0),
    ("pep", "idle_timeout_s", ("pep", "PepRelay", "idle_timeout_s", "maximum"), 1e6),
    ("pep", "max_connections", ("pep", "PepRelay", "max_connections", "minimum"), 0),
]


@pytest.mark.parametrize(("section", "field", "where", "value"), OUT_OF_BOUNDS)
def test_a_bad_edge_setting_names_the_field_and_the_binarys_limit(
    section: str, field: str, where: tuple[str, str, str, str], value: float
) -> None:
    binary, definition, name, keyword = where
    schema = json.loads((SCHEMAS / f"{binary}_schema.json").read_text())
    limit = schema["$defs"][definition]["properties"][name][keyword]
    *sections, key = field.split(".")
    data: dict[str, Any] = {key: value}
    for s in reversed(sections):
        data = {s: data}
    with pytest.raises(ValueError) as e:
        parse_scenario(_configuration(section, data))
    message = str(e.value)
    assert f"configurations.0.{section}.{field}:" in message, message
    # the bound as pydantic prints it (0.000001, 86400, 10000000.0): the message's last number
    assert float(re.findall(r"[0-9][0-9.e+-]*", message)[-1]) == limit, (limit, message)


def test_the_pep_buffer_is_zero_or_the_binarys_least() -> None:
    schema = json.loads((SCHEMAS / "pep_schema.json").read_text())
    least = schema["$defs"]["PepRelay"]["properties"]["buffer_bytes"]["x-minimum-unless-zero"]
    for ok in (0, least):
        assert parse_scenario(_configuration("pep", {"buffer_bytes": ok})).configurations[0].pep
    with pytest.raises(
        ValueError, match=rf"pep: .*buffer_bytes: {least - 1} must be 0 or at least {least}"
    ):
        parse_scenario(_configuration("pep", {"buffer_bytes": least - 1}))


def _fields(model: type[BaseModel], at: str = "") -> set[str]:
    """Every leaf field of a model as a dotted path (a nested model's fields, not the model)."""
    out = set()
    for name, f in model.model_fields.items():
        nested = [
            t
            for t in (f.annotation, *getattr(f.annotation, "__args__", ()))
            if isinstance(t, type) and issubclass(t, BaseModel) and not issubclass(t, RootModel)
        ]
        out |= _fields(nested[0], f"{at}{name}.") if nested else {f"{at}{name}"}
    return out


def test_the_gateway_section_is_the_gateway_file_but_what_the_testbed_owns() -> None:
    """The section's fields are exactly the gateway file's (its Config) but the ones the testbed
    sets per edge, and a scenario naming one of those is refused with the field's name."""
    testbed = {"role", "ports", "seed", "telemetry", "http"}
    owned = {f for f in _fields(Config) if f.split(".")[0] in testbed}
    owned |= {f"eten.{n}" for n in TESTBED_ETEN}
    assert _fields(GatewaySettings) == _fields(Config) - owned
    for name in TESTBED_ETEN:
        with pytest.raises(ValueError, match=rf"gateway: .*eten\.{name}: not a scenario's to set"):
            parse_scenario(_configuration("gateway", {"eten": {name: "02:00:00:00:00:01"}}))


def test_the_gateway_file_keeps_the_binarys_defaults_and_the_testbeds_part() -> None:
    """What a scenario leaves unset is not written (the binary's default holds); what it sets is
    written at its own place; the testbed's part wins."""
    g = GatewaySettings.model_validate(
        {"eten": {"enabled": True}, "ern": {"ports": [9]}, "egress": {"aqm": {"kind": "red"}}}
    )
    written = _gateway(g)
    assert written["eten"] == {"enabled": True, "source_ip": "10.0.0.1"}
    assert written["ern"] == {"ports": [9]}
    assert written["egress"] == {"aqm": {"kind": "red"}}
    assert "ceten" not in written and written["role"] == "gw"
    assert _gateway(GatewaySettings())["eten"] == {"source_ip": "10.0.0.1"}


def test_a_stored_section_gives_a_file_the_gateway_reads(tmp_path: Path) -> None:
    """A run's spec is stored with every field set (None included, e.g. `egress.aqm`, which the
    file's type does not take as null): read back, it still gives a file the binary accepts."""
    stored = GatewaySettings.model_validate({"ern": {"enabled": True}}).model_dump(mode="json")
    assert stored["egress"]["aqm"] is None
    _check(GATEWAY_BIN, _gateway(GatewaySettings.model_validate(stored)), tmp_path)


def test_rules_between_fields_are_checked_as_the_gateway_does() -> None:
    with pytest.raises(ValueError, match=r"egress.aqm.max_th_packets: 15.0 must be greater"):
        parse_scenario(_configuration("gateway", {"egress": {"aqm": {"min_th_packets": 20}}}))
    with pytest.raises(ValueError, match=r"ern.max_interval_ms: 5000.0 must be at least"):
        parse_scenario(_configuration("gateway", {"ern": {"min_interval_ms": 6000}}))
    with pytest.raises(ValueError, match=r"ern.initial_interval_ms: 5.0 must be within"):
        parse_scenario(_configuration("gateway", {"ern": {"initial_interval_ms": 5}}))
