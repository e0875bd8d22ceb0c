"""The JSON Schema of a scenario's `link`: the emulator's own configuration schema
(`satlab-emulator --print-schema`, committed as link_schema.json next to this module and kept
equal to the code by a Rust test in crates/linkmodel), reshaped to the conventions of the
scenario schema pydantic writes, so that the web form reads both alike:

- definitions under `$defs`, prefixed `Link` (no clash with the scenario's own names);
- an optional field as `anyOf: [X, {type: null}]` instead of `type: [X, "null"]`;
- an enum whose variants carry descriptions (schemars: `oneOf` of one-value enums) as one
  `enum` with the descriptions joined into the field's description.

The fields the testbed sets for every run (seed, ports, control, telemetry socket and period)
are left out: the form does not offer what a scenario cannot change."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("link_schema.json")
PREFIX = "Link"
# Set by the testbed for every run (satlab.testbed.runner.emulator_config).
TESTBED_FIELDS = ("seed", "ports", "control", "telemetry")


def _reshape(node: Any) -> Any:
    if isinstance(node, list):
        return [_reshape(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _reshape(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        out["$ref"] = f"#/$defs/{PREFIX}{ref.removeprefix('#/definitions/')}"
    t = out.get("type")
    if isinstance(t, list) and "null" in t and len(t) == 2:
        inner = {k: v for k, v in out.items() if k not in ("type", "default", "description")}
        outer = {k: out[k] for k in ("default", "description") if k in out}
        inner["type"] = next(x for x in t if x != "null")
        out = {**outer, "anyOf": [inner, {"type": "null"}]}
    variants = out.get("oneOf")
    if isinstance(variants, list) and variants and all(_one_value(v) for v in variants):
        values = [v["enum"][0] for v in variants]
        notes = [f"{v['enum'][0]}: {v['description']}" for v in variants if v.get("description")]
        out.pop("oneOf")
        out["type"] = "string"
        out["enum"] = values
        if notes:
            out["description"] = " ".join(filter(None, [out.get("description"), "; ".join(notes)]))
    return out


def _one_value(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("enum"), list) and len(v["enum"]) == 1


@cache
def link_schema() -> dict[str, Any]:
    """`{"root": <schema of link>, "defs": {<LinkName>: <schema>}}` for the scenario schema."""
    raw = json.loads(SCHEMA_FILE.read_text())
    defs = {f"{PREFIX}{name}": _reshape(d) for name, d in raw.get("definitions", {}).items()}
    props = {k: _reshape(v) for k, v in raw["properties"].items() if k not in TESTBED_FIELDS}
    root = {
        "type": "object",
        "title": "Link",
        "description": "The emulator configuration (emulator/CONFIG.md). The testbed sets "
        "seed, ports, control and the telemetry socket of every run.",
        "properties": props,
        # A scenario may still carry the fields the testbed overrides (telemetry.events).
        "additionalProperties": True,
    }
    return {"root": root, "defs": defs}


def embed(scenario_schema: dict[str, Any]) -> dict[str, Any]:
    """The scenario schema with `link` described by the emulator's configuration schema."""
    link = link_schema()
    out = dict(scenario_schema)
    out["$defs"] = {**out.get("$defs", {}), **link["defs"], PREFIX: link["root"]}
    props = dict(out["properties"])
    props["link"] = {**props["link"], "$ref": f"#/$defs/{PREFIX}"}
    props["link"].pop("type", None)
    props["link"].pop("additionalProperties", None)
    out["properties"] = props
    return out
