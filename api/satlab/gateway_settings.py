"""A scenario's `gateway` section, whose values are the gateway binary's (issue 17: one definition).

The section keeps its flat spelling (`eten`, `eten_hmac_key_hex`, `ceten_alpha`, ...; every stored
scenario reads as before), and each field names the place in satlab-gateway's configuration file
it fills (`x-gateway-path`, e.g. `ceten.alpha`). Its default, bounds and description are read from
there in the gateway's JSON Schema (gateway_schema.json, `satlab-gateway --print-schema`, committed
by `make schemas`), so gateway/src/config.rs is the one place they are set, and the testbed writes
the file from the same paths (satlab.testbed.gateway.gateway_config): nothing is renamed by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

GATEWAY_SCHEMA_FILE = Path(__file__).with_name("gateway_schema.json")
_SCHEMA: dict[str, Any] = json.loads(GATEWAY_SCHEMA_FILE.read_text())

# JSON Schema keyword -> pydantic Field argument, for the keywords the gateway's schema uses.
_CONSTRAINTS = {
    "minimum": "ge",
    "maximum": "le",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
    "pattern": "pattern",
}
PATH_KEY = "x-gateway-path"


def _resolve(prop: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    return _SCHEMA["$defs"][ref.removeprefix("#/$defs/")] if ref else prop


def gateway_property(path: str) -> dict[str, Any]:
    """The gateway schema's property at a dotted file path (`egress.aqm.w_q`)."""
    node = _SCHEMA
    *sections, name = path.split(".")
    for key in sections:
        node = _resolve(node["properties"][key])
    return node["properties"][name]  # type: ignore[no-any-return]


def _constraints(prop: dict[str, Any]) -> dict[str, Any]:
    return {arg: prop[key] for key, arg in _CONSTRAINTS.items() if key in prop}


def _field(path: str) -> Any:
    """A section field that fills the gateway file's `path`, with the binary's default, bounds
    and description."""
    prop = gateway_property(path)
    return Field(
        prop["default"],
        description=prop.get("description"),
        json_schema_extra={PATH_KEY: path},
        **_constraints(prop),
    )


def _items(path: str) -> Any:
    """The bounds of each item of the list at `path` (ern.ports: u16)."""
    return Field(**_constraints(gateway_property(path)["items"]))


def file_path(model: type[BaseModel], name: str) -> str:
    """The gateway file path a section field fills."""
    extra = model.model_fields[name].json_schema_extra
    assert isinstance(extra, dict), name
    return str(extra[PATH_KEY])


class GatewayAqm(BaseModel):
    """The gateway's egress queue toward the satellite (gateway/README.md, "AQM")."""

    model_config = ConfigDict(extra="forbid")

    # The discipline's names are the gateway's AqmKind (a test compares them with the schema).
    kind: Literal["drop_tail", "red", "red_ecn"] = _field("egress.aqm.kind")
    limit_packets: int = _field("egress.aqm.limit_packets")
    limit_bytes: int = _field("egress.aqm.limit_bytes")
    min_th_packets: float = _field("egress.aqm.min_th_packets")
    max_th_packets: float = _field("egress.aqm.max_th_packets")
    max_p: float = _field("egress.aqm.max_p")
    w_q: float = _field("egress.aqm.w_q")

    @model_validator(mode="after")
    def _thresholds(self) -> GatewayAqm:
        # A rule between two fields, which a JSON Schema cannot say: the gateway's validation
        # checks the same (config.rs, Aqm::validate).
        if self.max_th_packets <= self.min_th_packets:
            raise ValueError(
                f"max_th_packets: {self.max_th_packets} must be greater than min_th_packets "
                f"({self.min_th_packets})"
            )
        return self


class GatewaySettings(BaseModel):
    """The edge gateway at both edges (gateway/README.md); absent: no gateway in the path."""

    model_config = ConfigDict(extra="forbid")

    rate_factor: float = _field("egress.rate_factor")
    aqm: GatewayAqm = Field(
        GatewayAqm(),
        description=gateway_property("egress.aqm").get("description"),
        json_schema_extra={PATH_KEY: "egress.aqm"},
    )
    eten: bool = _field("eten.enabled")
    eten_hmac_key_hex: str | None = _field("eten.hmac_key_hex")
    eten_rate_limit_per_s: float = _field("eten.rate_limit_per_s")
    ceten: bool = _field("ceten.enabled")
    ceten_reflect: bool = _field("ceten.reflect")
    ceten_alpha: float = _field("ceten.alpha")
    ern: bool = _field("ern.enabled")
    ern_ports: list[Annotated[int, _items("ern.ports")]] = _field("ern.ports")
