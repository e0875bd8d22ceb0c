"""The stored time series of a run's telemetry: per-class queues give one series per class, a
beam's terminals one series per terminal and field."""

from __future__ import annotations

from typing import Any

import pytest

from satlab.service.results import series_of


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


def _terminal(name: str, modcod: int, queued: int, granted_kbps: float | None) -> dict[str, Any]:
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
        }
    return term


def test_each_beam_terminal_gets_its_link_and_its_dama_grant() -> None:
    def record(t: float, direction: str, terminals: list[dict[str, Any]]) -> dict[str, Any]:
        return {"t": t, "direction": direction, "queue_packets": 0, "terminals": terminals}

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


def test_a_link_without_a_beam_has_no_terminal_series() -> None:
    doc = {"timeseries": {"link": [{"t": 0.1, "direction": "return", "queue_packets": 2}]}}
    assert all(".terminal." not in name for name in series_of(doc))
