"""A configuration's `gateway` section in the gateway's own nested names (issue 17: the section is
satlab-gateway's configuration types, satlab.gateway_settings): `eten: true` becomes
`eten: {enabled: true}`, `ceten_alpha` `ceten: {alpha: ...}`, `aqm` and `rate_factor` move under
`egress`, and so on (OLD_TO_NEW, a frozen copy: the application no longer knows the old names).

Rewritten: scenario_revisions.spec and .yaml, experiments.scenario_spec and .matrix, runs.spec
(each configuration's gateway section, and the sweep paths that point into one:
`configurations.N.gateway.ceten_alpha` -> `configurations.N.gateway.ceten.alpha`, in `sweep`,
in the expectations' `at` and in `reproduction.ci.sweep_values`).

The stored YAML (kept verbatim, comments and all) is rewritten as text: each configuration's
`gateway:` mapping, flow style on one line or a block, is replaced by the converted mapping in
the same style (a comment inside a block gateway mapping is lost; comments elsewhere stay), and
the sweep paths are replaced in place. The result is checked: it must load to the converted data
of the original; when it does not (a layout the rewrite does not know), that revision's YAML is
re-dumped from its converted spec instead (comments lost, defaults written out).

Downgrade is the inverse; fields the old section had no name for (e.g. `eten.burst`,
`egress.overhead_bytes`, `ern.alpha`) are dropped, as the old service could not store them.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
import yaml
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Old flat field -> (section, field) of the new section. Frozen: do not import the application's.
OLD_TO_NEW: dict[str, tuple[str, str]] = {
    "rate_factor": ("egress", "rate_factor"),
    "aqm": ("egress", "aqm"),
    "eten": ("eten", "enabled"),
    "eten_hmac_key_hex": ("eten", "hmac_key_hex"),
    "eten_rate_limit_per_s": ("eten", "rate_limit_per_s"),
    "ceten": ("ceten", "enabled"),
    "ceten_reflect": ("ceten", "reflect"),
    "ceten_alpha": ("ceten", "alpha"),
    "ern": ("ern", "enabled"),
    "ern_ports": ("ern", "ports"),
}
NEW_TO_OLD = {new: old for old, new in OLD_TO_NEW.items()}
SECTIONS = ("egress", "eten", "ceten", "ern")
Gateway = dict[str, Any]


def _is_old(g: Any) -> bool:
    return (
        isinstance(g, dict)
        and set(g) <= set(OLD_TO_NEW)
        and not any(isinstance(g.get(k), dict) for k in ("eten", "ceten", "ern"))
    )


def _is_new(g: Any) -> bool:
    return (
        isinstance(g, dict)
        and set(g) <= set(SECTIONS)
        and all(isinstance(v, dict) for v in g.values())
    )


def up_gateway(g: Gateway) -> Gateway:
    out: Gateway = {}
    for old, value in g.items():
        section, key = OLD_TO_NEW[old]
        out.setdefault(section, {})[key] = value
    return out


def down_gateway(g: Gateway) -> Gateway:
    out: Gateway = {}
    for section, fields in g.items():
        for key, value in fields.items():
            old = NEW_TO_OLD.get((section, key))
            if old is not None and not (old == "aqm" and value is None):
                out[old] = value
    return out


_PATH = re.compile(r"\b(configurations\.\d+\.gateway\.)([a-z_]+(?:\.[a-z_]+)?)")


def up_path(path: str) -> str:
    def sub(m: re.Match[str]) -> str:
        first, _, rest = m.group(2).partition(".")
        if first not in OLD_TO_NEW or (rest and first != "aqm"):
            return m.group(0)  # not an old name (only aqm had fields of its own)
        section, key = OLD_TO_NEW[first]
        return m.group(1) + ".".join([section, key, *([rest] if rest else [])])

    return _PATH.sub(sub, path)


def down_path(path: str) -> str:
    def sub(m: re.Match[str]) -> str:
        section, _, key = m.group(2).partition(".")
        old = NEW_TO_OLD.get((section, key))
        return m.group(1) + old if old else m.group(0)

    # egress.aqm.kind: the pattern takes egress.aqm, `.kind` stays.
    return _PATH.sub(sub, path)


def _spec(
    spec: Any,
    gateway: Callable[[Gateway], Gateway],
    is_shape: Callable[[Any], bool],
    path: Callable[[str], str],
) -> Any:
    """A scenario (or an experiment's matrix, or a run's spec) with its gateway sections and
    sweep paths converted; anything else as it was."""
    if not isinstance(spec, dict):
        return spec
    out = dict(spec)
    if isinstance(out.get("configurations"), list):
        out["configurations"] = [
            _configuration(c, gateway, is_shape) for c in out["configurations"]
        ]
    if isinstance(out.get("configuration"), dict):  # a run's spec
        out["configuration"] = _configuration(out["configuration"], gateway, is_shape)
    if isinstance(out.get("scenario"), dict):  # a run's own scenario
        out["scenario"] = _spec(out["scenario"], gateway, is_shape, path)
    sweep = out.get("sweep")
    for d in sweep if isinstance(sweep, list) else [sweep]:
        if isinstance(d, dict) and isinstance(d.get("path"), str):
            d["path"] = path(d["path"])
    if isinstance(sweep, (dict, list)):
        out["sweep"] = sweep
    for e in out.get("expectations") or []:
        if isinstance(e, dict) and isinstance(e.get("at"), dict):
            e["at"] = {path(k): v for k, v in e["at"].items()}
    ci = (
        (out.get("reproduction") or {}).get("ci")
        if isinstance(out.get("reproduction"), dict)
        else None
    )
    if isinstance(ci, dict) and isinstance(ci.get("sweep_values"), dict):
        ci["sweep_values"] = {path(k): v for k, v in ci["sweep_values"].items()}
    return out


def _configuration(
    c: Any, gateway: Callable[[Gateway], Gateway], is_shape: Callable[[Any], bool]
) -> Any:
    if isinstance(c, dict) and is_shape(c.get("gateway")):
        return {**c, "gateway": gateway(c["gateway"])}
    return c


def _flow(g: Gateway) -> str:
    return yaml.safe_dump(g, default_flow_style=True, sort_keys=False, width=10**6).strip()


_FLOW = re.compile(r"^(?P<head>\s*(?:- )?gateway:[ \t]*)(?P<map>\{.*\})(?P<tail>[ \t]*(?:#.*)?)$")
_BLOCK = re.compile(r"^(?P<indent>\s*)(?P<dash>- )?gateway:[ \t]*(?:#.*)?$")


def _text(
    text: str,
    gateway: Callable[[Gateway], Gateway],
    is_shape: Callable[[Any], bool],
    path: Callable[[str], str],
) -> str:
    """The YAML text with each gateway mapping of the old shape (`is_shape`) converted in its
    own style, and the sweep paths converted."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FLOW.match(line)
        if m:
            try:
                g = yaml.safe_load(m.group("map"))
            except yaml.YAMLError:
                g = None
            if is_shape(g) and g:
                out.append(m.group("head") + _flow(gateway(g)) + m.group("tail"))
                i += 1
                continue
        b = _BLOCK.match(line)
        if b:
            own = len(b.group("indent")) + (2 if b.group("dash") else 0)
            j = i + 1
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > own
            ):
                j += 1
            while j > i + 1 and not lines[j - 1].strip():
                j -= 1  # trailing blank lines belong to what follows
            try:
                g = yaml.safe_load("\n".join(lines[i + 1 : j]))
            except yaml.YAMLError:
                g = None
            if is_shape(g) and g:
                body = yaml.safe_dump(
                    gateway(g), default_flow_style=None, sort_keys=False, width=10**6
                )
                pad = " " * (own + 2)
                out.append(line)
                out.extend(pad + s for s in body.rstrip("\n").split("\n"))
                i = j
                continue
        out.append(line)
        i += 1
    return path("\n".join(out))


def _yaml(
    text: str,
    converted_spec: Any,
    gateway: Callable[[Gateway], Gateway],
    is_shape: Callable[[Any], bool],
    path: Callable[[str], str],
) -> str:
    new = _text(text, gateway, is_shape, path)
    try:
        ok = yaml.safe_load(new) == _spec(yaml.safe_load(text), gateway, is_shape, path)
    except yaml.YAMLError:
        ok = False
    return new if ok else yaml.safe_dump(converted_spec, sort_keys=False)


def _migrate(
    gateway: Callable[[Gateway], Gateway],
    is_shape: Callable[[Any], bool],
    path: Callable[[str], str],
) -> None:
    conn = op.get_bind()

    def spec(v: Any) -> Any:
        return _spec(json.loads(json.dumps(v)), gateway, is_shape, path)  # a deep copy

    for rid, s, text in conn.execute(
        sa.text("SELECT id, spec, yaml FROM scenario_revisions")
    ).all():
        new = spec(s)
        if new != s:
            conn.execute(
                sa.text(
                    "UPDATE scenario_revisions SET spec = CAST(:s AS jsonb), yaml = :y "
                    "WHERE id = :id"
                ),
                {"s": json.dumps(new), "y": _yaml(text, new, gateway, is_shape, path), "id": rid},
            )
    for eid, s, m in conn.execute(
        sa.text("SELECT id, scenario_spec, matrix FROM experiments")
    ).all():
        new_s, new_m = spec(s), spec(m)
        if (new_s, new_m) != (s, m):
            conn.execute(
                sa.text(
                    "UPDATE experiments SET scenario_spec = CAST(:s AS jsonb), "
                    "matrix = CAST(:m AS jsonb) "
                    "WHERE id = :id"
                ),
                {"s": json.dumps(new_s), "m": json.dumps(new_m), "id": eid},
            )
    for rid, s in conn.execute(sa.text("SELECT id, spec FROM runs")).all():
        new = spec(s)
        if new != s:
            conn.execute(
                sa.text("UPDATE runs SET spec = CAST(:s AS jsonb) WHERE id = :id"),
                {"s": json.dumps(new), "id": rid},
            )


def upgrade() -> None:
    _migrate(up_gateway, _is_old, up_path)


def downgrade() -> None:
    _migrate(down_gateway, _is_new, down_path)
