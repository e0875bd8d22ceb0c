"""Live control has one owner, the emulator (linkmodel::control; its committed schema is checked by
test_generated_contracts): the API's ControlIn has exactly its fields and bounds, and a value the
emulator refuses is refused by the API before any run is touched (it accepted -50 dB before)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from satlab.service.control import CONTROL_SCHEMA, ControlIn


def test_control_in_has_the_emulators_fields_and_bounds() -> None:
    ours = ControlIn.model_json_schema()["properties"]
    theirs = CONTROL_SCHEMA["properties"]
    assert set(ours) == set(theirs)
    for name, prop in theirs.items():
        if "minimum" in prop:
            bounds = ours[name]["anyOf"][0]
            assert (bounds["minimum"], bounds["maximum"]) == (prop["minimum"], prop["maximum"])


@pytest.mark.parametrize(
    ("field", "value"),
    [("attenuation_db", -50), ("attenuation_db", 100.5), ("ber", 0.6), ("terminal", "Bad name")],
)
def test_values_the_emulator_refuses_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValidationError) as err:
        ControlIn.model_validate({field: value})
    assert err.value.errors()[0]["loc"] == (field,)
