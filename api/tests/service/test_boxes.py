"""The hardware box registry (/api/boxes): admins register, list and remove boxes; everyone else is
refused; each invalid registration names its field."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import Tokens

EMU = {
    "name": "emu-a",
    "role": "emu",
    "address": "10.0.0.3:7443",
    "interfaces": ["enp1s0", "enp2s0"],
}


def test_admin_registers_lists_and_removes(client: TestClient, tokens: Tokens) -> None:
    r = client.post("/api/boxes", json=EMU, headers=tokens.h("admin"))
    assert r.status_code == 201, r.text
    srv = {"name": "srv-a", "role": "server", "address": "[fd00::1]:7443", "interfaces": ["eth1"]}
    assert client.post("/api/boxes", json=srv, headers=tokens.h("admin")).status_code == 201
    listed = client.get("/api/boxes", headers=tokens.h("admin")).json()
    assert [(b["name"], b["role"], b["interfaces"]) for b in listed] == [
        ("emu-a", "emu", ["enp1s0", "enp2s0"]),
        ("srv-a", "server", ["eth1"]),
    ]
    assert client.delete("/api/boxes/emu-a", headers=tokens.h("admin")).status_code == 200
    assert [b["name"] for b in client.get("/api/boxes", headers=tokens.h("admin")).json()] == [
        "srv-a"
    ]
    assert client.delete("/api/boxes/emu-a", headers=tokens.h("admin")).status_code == 404


def test_a_hop_box_and_a_gw_box_cabled_to_it(client: TestClient, tokens: Tokens) -> None:
    """Terrestrial hops on hardware: a box of role hop with its three NICs, and a gw box with
    two more (hopup, hoplan) than without hops; the database takes the role (migration 0006)."""
    hop = {"name": "hop-a", "role": "hop", "address": "10.0.0.5:7443"}
    hop["interfaces"] = ["eth1", "eth2", "eth3"]
    gw = {"name": "gw-a", "role": "gw", "address": "10.0.0.6:7443"}
    gw["interfaces"] = ["lan", "sat", "hopup", "hoplan"]
    for body in (hop, gw):
        r = client.post("/api/boxes", json=body, headers=tokens.h("admin"))
        assert r.status_code == 201, r.text
    listed = client.get("/api/boxes", headers=tokens.h("admin")).json()
    assert {(b["name"], b["role"], len(b["interfaces"])) for b in listed} == {
        ("hop-a", "hop", 3),
        ("gw-a", "gw", 4),
    }


@pytest.mark.parametrize("role", ["submitter", "viewer"])
def test_only_admins(client: TestClient, tokens: Tokens, role: str) -> None:
    assert client.post("/api/boxes", json=EMU, headers=tokens.h(role)).status_code == 403
    assert client.get("/api/boxes", headers=tokens.h(role)).status_code == 403
    assert client.delete("/api/boxes/emu-a", headers=tokens.h(role)).status_code == 403
    assert client.get("/api/boxes", headers=tokens.h("admin")).json() == []


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"name": "Emu_A"}, "name", "is not a DNS label"),
        ({"role": "router"}, "role", "is not one of server, client, gw, emu, st, hop"),
        ({"interfaces": ["enp1s0"]}, "interfaces", "a box of role emu needs 2 (got 1)"),
        ({"role": "gw", "interfaces": ["lan0"]}, "interfaces", "a box of role gw needs 2 or 4"),
        ({"role": "hop", "interfaces": ["a", "b"]}, "interfaces", "role hop needs 3 (got 2)"),
        ({"interfaces": ["enp1s0", "enp1s0"]}, "interfaces", "names one NIC twice"),
        ({"interfaces": ["enp1s0", "a/b"]}, "interfaces", "are not interface names"),
        ({"address": "10.0.0.3"}, "address", "is not HOST:PORT"),
        ({"address": "10.0.0.3:70000"}, "address", "is not HOST:PORT"),
        ({"address": "bad host:7443"}, "address", "is not a host name"),
        ({"address": "[zz::1]:7443"}, "address", "is not an IPv6 address"),
    ],
)
def test_invalid_names_the_field(
    client: TestClient, tokens: Tokens, change: dict[str, object], field: str, reason: str
) -> None:
    r = client.post("/api/boxes", json={**EMU, **change}, headers=tokens.h("admin"))
    assert r.status_code == 422, r.text
    (line,) = [e for e in r.json()["errors"] if e.startswith(f"{field}:")]
    assert reason in line


def test_duplicates_refused(client: TestClient, tokens: Tokens) -> None:
    assert client.post("/api/boxes", json=EMU, headers=tokens.h("admin")).status_code == 201
    again = client.post(
        "/api/boxes", json={**EMU, "address": "10.0.0.4:7443"}, headers=tokens.h("admin")
    )
    assert again.status_code == 409 and again.json()["detail"].startswith("name: ")
    other = client.post("/api/boxes", json={**EMU, "name": "emu-b"}, headers=tokens.h("admin"))
    assert other.status_code == 409 and other.json()["detail"].startswith("address: ")
