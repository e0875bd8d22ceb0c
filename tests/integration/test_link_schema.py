"""The bounds the emulator's configuration schema publishes (`--print-schema`, what the web form
checks as you type) are the ones `--check` enforces: a value just outside one is refused with an
error that names the field, the value at the bound is accepted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from netns import EMULATOR_BIN


def schema() -> dict[str, Any]:
    out = subprocess.run([str(EMULATOR_BIN), "--print-schema"], capture_output=True, check=True)
    s: dict[str, Any] = json.loads(out.stdout)
    return s


def bound(s: dict[str, Any], definition: str, field: str, which: str) -> float:
    prop = s["definitions"][definition]["properties"][field]
    v = prop[which]
    return int(v) if prop.get("type") == "integer" else float(v)


def check(tmp_path: Path, cfg: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "link.yaml"
    f.write_text(yaml.safe_dump(cfg))
    return subprocess.run(
        [str(EMULATOR_BIN), "--config", str(f), "--check"], capture_output=True, text=True
    )


def nest(path: str, value: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cur = out
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    cur[keys[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "definition", "which", "step"),
    [
        ("forward.acm.margin_db", "AcmConfig", "maximum", 0.5),
        ("forward.queue.limit_packets", "QueueConfig", "minimum", -1),
        ("return.reorder.probability", "ReorderConfig", "maximum", 0.25),
        ("forward.bit_errors.ber", "BitErrorConfig", "maximum", 0.1),
        ("forward.downlink.attenuation.value_db", "AttenuationConfig", "maximum", 1),
        ("forward.waterfall_width_db", "DirectionConfig", "minimum", -0.005),
        ("forward.downlink.sky_noise.medium_temp_k", "SkyNoiseConfig", "minimum", -1),
    ],
)
def test_schema_bound_is_the_checked_one(
    tmp_path: Path, path: str, definition: str, which: str, step: float
) -> None:
    s = schema()
    field = path.rsplit(".", 1)[1]
    limit = bound(s, definition, field, which)
    at = check(tmp_path, nest(path, limit))
    assert at.returncode == 0, f"{path} = {limit} (the bound) refused: {at.stderr}"
    beyond = check(tmp_path, nest(path, limit + step))
    assert beyond.returncode == 2, f"{path} = {limit + step} accepted"
    assert f"{path}:" in beyond.stderr, beyond.stderr
    assert "outside the allowed range" in beyond.stderr, beyond.stderr


def test_schema_describes_every_field_the_file_takes() -> None:
    s = schema()
    direction = s["definitions"]["DirectionConfig"]["properties"]
    for key in ("delay_ms", "acm", "uplink", "downlink", "queue", "bit_errors", "reorder"):
        assert key in direction, key
    assert s["definitions"]["DirectionConfig"]["additionalProperties"] is False
    assert "description" in direction["waterfall_width_db"]
