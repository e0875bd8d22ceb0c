"""A scenario's `gateway` section: the gateway binary's own settings types (issue 17: one
definition).

The section is the part of satlab-gateway's configuration file (gateway/src/config.rs `Config`)
a scenario chooses, in the file's own nested names: `egress`, `eten`, `ceten` and `ern`, each the
Rust type generated into satlab.records.gateway by `make schemas` (scripts/schemas.sh, from
`satlab-gateway --print-schema`), so the binary's fields, bounds and defaults are the section's.
What the testbed sets per edge is not in it: `role`, `ports`, `seed`, `telemetry`, `http`, and
the notices' addresses (`eten.source_ip`, `eten.src_mac`, `eten.dst_mac`); a scenario that names
one of those is refused. The testbed writes the file from the section's dump
(satlab.testbed.gateway.gateway_config): what a scenario leaves unset stays the binary's default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from satlab.records.gateway import Ceten, Config, Egress, Ern, Eten

# The eten fields the testbed sets at each edge (satlab.testbed.gateway.gateway_config: the
# edge router's address; the MACs are learned from forwarded frames).
TESTBED_ETEN = {
    "source_ip": "the testbed sets it to each edge router's address",
    "src_mac": "the gateway learns it from the frames it forwards",
    "dst_mac": "the gateway learns it from the frames it forwards",
}

if TYPE_CHECKING:
    EtenSettings = Eten
else:
    # The gateway's Eten without the fields the testbed owns (a generated type cannot lose
    # fields by subclassing).
    EtenSettings = create_model(
        "EtenSettings",
        __config__=ConfigDict(extra="forbid"),
        __doc__=Eten.__doc__,
        **{
            name: (field.annotation, field)
            for name, field in Eten.model_fields.items()
            if name not in TESTBED_ETEN
        },
    )


def _description(name: str) -> str | None:
    return Config.model_fields[name].description


class GatewaySettings(BaseModel):
    """The edge gateway at both edges (gateway/README.md); absent: no gateway in the path."""

    model_config = ConfigDict(extra="forbid")

    egress: Egress = Field(default_factory=Egress, description=_description("egress"))
    eten: EtenSettings = Field(default_factory=EtenSettings, description=_description("eten"))
    ceten: Ceten = Field(default_factory=Ceten, description=_description("ceten"))
    ern: Ern = Field(default_factory=Ern, description=_description("ern"))

    @model_validator(mode="before")
    @classmethod
    def _testbed_fields(cls, data: Any) -> Any:
        eten = data.get("eten") if isinstance(data, dict) else None
        if isinstance(eten, dict):
            for name, why in TESTBED_ETEN.items():
                if name in eten:
                    raise ValueError(f"eten.{name}: not a scenario's to set ({why})")
        return data

    @model_validator(mode="after")
    def _between_fields(self) -> GatewaySettings:
        # Rules between two fields, which a JSON Schema cannot say: the gateway's validation
        # checks the same (config.rs, Aqm::validate and Ern::validate).
        aqm = self.egress.aqm
        if aqm is not None and aqm.max_th_packets <= aqm.min_th_packets:
            raise ValueError(
                f"egress.aqm.max_th_packets: {aqm.max_th_packets} must be greater than "
                f"min_th_packets ({aqm.min_th_packets})"
            )
        ern = self.ern
        if ern.max_interval_ms < ern.min_interval_ms:
            raise ValueError(
                f"ern.max_interval_ms: {ern.max_interval_ms} must be at least min_interval_ms "
                f"({ern.min_interval_ms})"
            )
        if not ern.min_interval_ms <= ern.initial_interval_ms <= ern.max_interval_ms:
            raise ValueError(
                f"ern.initial_interval_ms: {ern.initial_interval_ms} must be within "
                f"[min_interval_ms, max_interval_ms] ({ern.min_interval_ms}, "
                f"{ern.max_interval_ms})"
            )
        return self

    def file_sections(self) -> dict[str, Any]:
        """The section as the gateway file's sections: what the scenario set, the binary's
        defaults for the rest. A None is left out too: in these sections it is always the
        binary's default (an optional's absence, or `egress.aqm` not given, which the file's
        type does not take as null), and a stored spec has every field set."""
        return self.model_dump(mode="json", exclude_unset=True, exclude_none=True)
