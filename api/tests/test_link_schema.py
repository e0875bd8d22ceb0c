"""The link's JSON Schema (api/satlab/link_schema.json) is the emulator's own (`--print-schema`),
the scenario schema embeds it, and its bounds are the ones the emulator's `--check` enforces."""

from __future__ import annotations

import json
from typing import Any

import pytest

from satlab.linkcheck import LinkConfigError, check_link
from satlab.scenario import LINK_DEF_PREFIX, json_schema_dict, link_json_schema
from satlab.settings import EMULATOR_BIN


def _emulator() -> str:
    assert EMULATOR_BIN.exists(), (
        f"{EMULATOR_BIN} is missing: cargo build --release -p satlab-emulator"
    )
    return str(EMULATOR_BIN)


def test_scenario_schema_describes_the_link() -> None:
    schema = json_schema_dict()
    link = schema["properties"]["link"]
    assert link["properties"]["forward"]["$ref"] == f"#/$defs/{LINK_DEF_PREFIX}DirectionConfig"
    acm = schema["$defs"][f"{LINK_DEF_PREFIX}AcmConfig"]["properties"]
    assert acm["margin_db"]["maximum"] == 20.0
    assert acm["margin_db"]["x-unit"] == "dB"
    refs = json.dumps(schema).split('"$ref": "')[1:]
    for r in refs:  # every reference resolves
        name = r.split('"')[0].removeprefix("#/$defs/")
        assert name in schema["$defs"], name


def _leaf(path: str) -> dict[str, Any]:
    """The schema of a dotted link path (following $ref and nullable anyOf)."""
    root = link_json_schema()
    node: dict[str, Any] = root
    for key in path.split("."):
        node = node["properties"][key]
        while True:
            if "$ref" in node:
                node = root["$defs"][node["$ref"].removeprefix("#/$defs/")]
            elif "anyOf" in node:
                node = next(v for v in node["anyOf"] if v.get("type") != "null")
            else:
                break
    return node


def _nest(path: str, value: Any) -> dict[str, Any]:
    doc: Any = value
    for key in reversed(path.split(".")):
        doc = {key: doc}
    return dict(doc)


# A handful of representative fields: floats and integers, per direction, hops, attenuation,
# bit errors, reordering, sky noise, queue, telemetry.
FIELDS = [
    "forward.delay_ms",
    "forward.symbol_rate_baud",
    "forward.acm.margin_db",
    "forward.acm.refresh_ms",
    "forward.downlink.clear_sky_db",
    "forward.downlink.attenuation.value_db",
    "forward.downlink.sky_noise.medium_temp_k",
    "forward.bit_errors.ber",
    "forward.reorder.probability",
    "return.queue.limit_packets",
    "telemetry.period_ms",
]


@pytest.mark.parametrize("path", FIELDS)
def test_values_just_outside_a_schema_bound_are_refused_by_the_emulator(path: str) -> None:
    _emulator()
    s = _leaf(path)
    lo, hi = s["minimum"], s["maximum"]
    integer = "integer" in json.dumps(s.get("type"))
    step = 1 if integer else max(abs(hi), 1.0) * 1e-6
    check_link(_nest(path, hi))  # the bound itself is allowed
    for outside in (hi + step, lo - step):
        if integer and outside < 0:
            continue  # an unsigned field: the type itself refuses it
        with pytest.raises(LinkConfigError) as e:
            check_link(_nest(path, outside))
        assert path in str(e.value), str(e.value)
        assert "outside the allowed range" in str(e.value)
