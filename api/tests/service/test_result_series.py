"""The stored time series of a run's telemetry: per-class queues give one series per class, a
beam's terminals one series per terminal and field, and with contention access each return
terminal's contention split, which the API serves with the run's final split."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from satlab import contention, db
from satlab.service import runs
from satlab.service.results import series_of

from .conftest import Tokens
from .runhelpers import ME, run_ids


def _class(
    name: str, queued: int, sent: int, delay_sum_ms: float, dropped: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "priority": 0 if name == "ef" else 1,
        "weight": 1,
        "queue_packets": queued,
        "queue_bytes": queued * 1500,
        "enqueued_packets": sent + queued + dropped,
        "enqueued_bytes": (sent + queued + dropped) * 1500,
        "dropped_packets": dropped,
        "dropped_bytes": dropped * 1500,
        "sent_packets": sent,
        "sent_bytes": sent * 1500,
        "queue_delay_sum_ms": delay_sum_ms,
        "queue_delay_max_ms": 40.0,
    }


def _status(t: float, classes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"t": t, "direction": "forward", "modcod": 13, "queue_packets": 7, "classes": classes}


def test_each_class_gets_its_depth_counters_and_delay_between_samples() -> None:
    doc = {
        "timeseries": {
            "link": [
                _status(0.5, [_class("ef", 0, 10, 300.0), _class("bulk", 5, 100, 25_000.0)]),
                # ef sent 20 more in 30 ms each; bulk 50 more in 290 ms each, and dropped 3
                _status(1.0, [_class("ef", 1, 30, 900.0), _class("bulk", 6, 150, 39_500.0, 3)]),
                # ef sent nothing: no delay sample for it
                _status(1.5, [_class("ef", 0, 30, 900.0), _class("bulk", 4, 160, 42_500.0, 3)]),
            ]
        }
    }
    s = series_of(doc)
    assert s["link.forward.queue_packets"] == ([0.5, 1.0, 1.5], [7.0, 7.0, 7.0])
    assert s["link.forward.class.ef.queue_packets"] == ([0.5, 1.0, 1.5], [0.0, 1.0, 0.0])
    assert s["link.forward.class.bulk.dropped_packets"][1] == [0.0, 3.0, 3.0]
    assert s["link.forward.class.bulk.sent_bytes"][1] == [150_000.0, 225_000.0, 240_000.0]
    ef_t, ef_delay = s["link.forward.class.ef.queue_delay_ms"]
    assert ef_t == [0.5, 1.0] and ef_delay == pytest.approx([30.0, 30.0])
    assert s["link.forward.class.bulk.queue_delay_ms"][1] == pytest.approx([250.0, 290.0, 300.0])


def test_a_link_without_classes_has_no_class_series() -> None:
    doc = {"timeseries": {"link": [{"t": 0.1, "direction": "forward", "queue_packets": 2}]}}
    assert all(".class." not in name for name in series_of(doc))


def _terminal(
    name: str,
    modcod: int,
    queued: int,
    granted_kbps: float | None,
    tries_collisions_beam: tuple[int, int, int] = (0, 0, 0),
) -> dict[str, Any]:
    term: dict[str, Any] = {
        "name": name,
        "modcod": {"id": modcod, "name": "x", "efficiency": 1.0, "required_esn0_db": 1.0},
        "esn0_db": 10.0 + modcod,
        "attenuation_db": 0.0,
        "useful_rate_bps": 1e6 * modcod,
        "queue_packets": queued,
        "queue_bytes": queued * 1500,
    }
    if granted_kbps is not None:
        term["dama"] = {
            "requested_rbdc_kbps": 2 * granted_kbps,
            "requested_vbdc_bytes": 0,
            "granted_kbps": granted_kbps,
            "granted_slots": 3,
            "contention_attempts": tries_collisions_beam[0],
            "contention_collisions": tries_collisions_beam[1],
            "contention_beam_collisions": tries_collisions_beam[2],
        }
    return term


def _record(t: float, direction: str, terminals: list[dict[str, Any]]) -> dict[str, Any]:
    return {"t": t, "direction": direction, "queue_packets": 0, "terminals": terminals}


def test_a_beam_has_its_carrier_rate_beside_the_first_terminals() -> None:
    fwd = _record(0.1, "forward", [_terminal("clear", 27, 4, None)])
    fwd |= {"useful_rate_bps": 15e6, "carrier_useful_rate_bps": 21e6}
    s = series_of({"timeseries": {"link": [fwd]}})
    assert s["link.forward.useful_rate_bps"] == ([0.1], [15e6])
    assert s["link.forward.carrier_useful_rate_bps"] == ([0.1], [21e6])


def test_each_beam_terminal_gets_its_link_and_its_dama_grant() -> None:
    record = _record
    doc = {
        "timeseries": {
            "link": [
                record(
                    0.1,
                    "forward",
                    [_terminal("clear", 27, 4, None), _terminal("rainy", 9, 0, None)],
                ),
                record(
                    0.1, "return", [_terminal("clear", 7, 0, 64.0), _terminal("rainy", 7, 2, 0.0)]
                ),
                record(
                    0.2, "return", [_terminal("clear", 7, 1, 512.0), _terminal("rainy", 7, 0, 64.0)]
                ),
            ]
        }
    }
    s = series_of(doc)
    assert s["link.forward.terminal.clear.modcod"] == ([0.1], [27.0])
    assert s["link.forward.terminal.rainy.modcod"] == ([0.1], [9.0])
    assert s["link.forward.terminal.rainy.esn0_db"] == ([0.1], [19.0])
    assert s["link.forward.terminal.clear.queue_packets"] == ([0.1], [4.0])
    assert s["link.return.terminal.clear.granted_kbps"] == ([0.1, 0.2], [64.0, 512.0])
    assert s["link.return.terminal.rainy.requested_rbdc_kbps"] == ([0.1, 0.2], [0.0, 128.0])
    assert s["link.return.terminal.rainy.queue_packets"] == ([0.1, 0.2], [2.0, 0.0])
    # the forward link has no DAMA: no grant series there
    assert not any(n.startswith("link.forward.") and n.endswith("kbps") for n in s)
    # a link without contention access (no inputs.link here) stores no contention split
    assert not any(".contention_" in n for n in s)


# A two-terminal beam with a DAMA return beam and contention access (slotted ALOHA requests).
CONTENTION_LINK: dict[str, Any] = {
    "forward": {
        "delay_ms": 250.0,
        "symbol_rate_baud": 5.0e6,
        "beam": {"terminals": [{"name": "clear"}, {"name": "rainy"}]},
    },
    "return": {
        "delay_ms": 250.0,
        "dama": {
            "carriers": 4,
            "cra_kbps": 0,
            "rbdc_max_kbps": 2048,
            "contention": {"slots_per_superframe": 4, "background_load": 0.5},
        },
    },
}


def _contention_records() -> list[dict[str, Any]]:
    """Two return records: by the second, clear tried 7 times and lost 3 (2 against rainy), rainy
    tried 5 times and lost 2 (both against clear)."""
    return [
        _record(
            0.1,
            "return",
            [_terminal("clear", 7, 0, 0.0, (2, 1, 1)), _terminal("rainy", 7, 0, 0.0, (1, 1, 1))],
        ),
        _record(
            0.2,
            "return",
            [_terminal("clear", 7, 0, 64.0, (7, 3, 2)), _terminal("rainy", 7, 0, 0.0, (5, 2, 2))],
        ),
    ]


def test_with_contention_access_each_return_terminal_gets_its_contention_split() -> None:
    doc = {"inputs": {"link": CONTENTION_LINK}, "timeseries": {"link": _contention_records()}}
    s = series_of(doc)
    clear = "link.return.terminal.clear.contention_"
    assert s[clear + "tries"] == ([0.1, 0.2], [2.0, 7.0])
    assert s[clear + "successes"] == ([0.1, 0.2], [1.0, 4.0])
    assert s[clear + "beam_collisions"] == ([0.1, 0.2], [1.0, 2.0])
    assert s[clear + "background_collisions"] == ([0.1, 0.2], [0.0, 1.0])
    assert s["link.return.terminal.rainy.contention_background_collisions"][1] == [0.0, 0.0]


def _finish(run_id: int, doc: dict[str, Any]) -> None:
    with db.new_session() as s:
        assert runs.claim(s, run_id, ME) is not None
    with db.new_session() as s:
        runs.finish(s, run_id, ME, doc, None)


def _beam_run(client: TestClient, tokens: Tokens, name: str, link: dict[str, Any]) -> int:
    """The one run of a saved and submitted two-terminal beam scenario with this link."""
    scenario = {
        "name": name,
        "duration_s": 5,
        "link": link,
        "hosts": {"terminals": [{"name": "clear", "clients": 1}, {"name": "rainy", "clients": 1}]},
        "traffic": [{"kind": "bulk_tcp", "client": 1, "duration_s": 5}],
        "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
    }
    h = tokens.h("submitter")
    r = client.post("/api/scenarios", json={"yaml": yaml.safe_dump(scenario)}, headers=h)
    assert r.status_code == 201, r.text
    r = client.post("/api/experiments", json={"scenario_id": r.json()["id"]}, headers=h)
    assert r.status_code == 201, r.text
    (run_id,) = run_ids(r.json()["experiment"]["id"])
    return run_id


def test_the_api_stores_and_serves_each_terminals_contention_split(
    client: TestClient, tokens: Tokens
) -> None:
    run_id = _beam_run(client, tokens, "contention-beam", CONTENTION_LINK)
    records = _contention_records()
    # what the runner writes: its inputs, the telemetry, and the final split it took from it
    doc = {
        "schema": "satlab.run/1",
        "status": "ok",
        "inputs": {"link": CONTENTION_LINK},
        "contention": contention.final_split(records),
        "timeseries": {"link": records},
    }
    _finish(run_id, doc)
    h = tokens.h("viewer")
    assert client.get(f"/api/runs/{run_id}", headers=h).json()["return_contention"] is True
    names = {x["name"] for x in client.get(f"/api/runs/{run_id}/series", headers=h).json()}
    for f in contention.SPLIT_FIELDS:
        assert f"link.return.terminal.rainy.contention_{f}" in names
    beam = client.get(
        f"/api/runs/{run_id}/series/link.return.terminal.clear.contention_beam_collisions",
        params={"buckets": 1},
        headers=h,
    ).json()
    assert beam["buckets"][0]["max"] == 2.0  # the cumulative counter's last value
    served = client.get(f"/api/runs/{run_id}/result", headers=h).json()["contention"]
    assert served == [
        {
            "terminal": "clear",
            "tries": 7,
            "successes": 4,
            "beam_collisions": 2,
            "background_collisions": 1,
        },
        {
            "terminal": "rainy",
            "tries": 5,
            "successes": 3,
            "beam_collisions": 2,
            "background_collisions": 0,
        },
    ]


def test_a_run_without_contention_access_says_so_and_stores_no_split(
    client: TestClient, tokens: Tokens
) -> None:
    link = {**CONTENTION_LINK, "return": {"delay_ms": 250.0, "dama": {"carriers": 4}}}
    run_id = _beam_run(client, tokens, "plain-beam", link)
    doc = {
        "schema": "satlab.run/1",
        "status": "ok",
        "inputs": {"link": link},
        "timeseries": {"link": _contention_records()},
    }
    _finish(run_id, doc)
    h = tokens.h("viewer")
    assert client.get(f"/api/runs/{run_id}", headers=h).json()["return_contention"] is False
    names = {x["name"] for x in client.get(f"/api/runs/{run_id}/series", headers=h).json()}
    assert "link.return.terminal.clear.granted_kbps" in names
    assert not any(".contention_" in n for n in names)


def test_a_link_without_a_beam_has_no_terminal_series() -> None:
    doc = {"timeseries": {"link": [{"t": 0.1, "direction": "return", "queue_packets": 2}]}}
    assert all(".terminal." not in name for name in series_of(doc))
