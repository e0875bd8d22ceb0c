"""Contention access on a DAMA return link (satlab.contention): which links have it, and each
terminal's split of its contention requests as the emulator's Prometheus counters give it."""

from __future__ import annotations

from typing import Any

from satlab import contention


def test_only_a_return_dama_with_a_contention_section_has_contention_access() -> None:
    assert contention.configured({"return": {"dama": {"contention": {}}}})
    assert contention.configured({"return": {"dama": {"contention": {"background_load": 0.0}}}})
    assert not contention.configured({"return": {"dama": {"cra_kbps": 64}}})
    assert not contention.configured({"return": {"dama": {"contention": None}}})
    assert not contention.configured({"return": {"delay_ms": 250}})
    assert not contention.configured({"forward": {"dama": {"contention": {}}}})
    assert not contention.configured({})


def _dama(tries: int, collisions: int, beam: int | None) -> dict[str, Any]:
    d = {"granted_kbps": 64.0, "contention_attempts": tries, "contention_collisions": collisions}
    return d if beam is None else {**d, "contention_beam_collisions": beam}


def test_the_split_is_the_emulators_four_counters() -> None:
    # 9 tries, 4 lost: 3 met another beam terminal, 1 only the background load
    assert contention.split(_dama(9, 4, 3)) == {
        "tries": 9,
        "successes": 5,
        "beam_collisions": 3,
        "background_collisions": 1,
    }
    # an emulator without the beam/background split: every collision is background
    assert contention.split(_dama(5, 2, None))["background_collisions"] == 2


def _record(direction: str, terminals: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "telemetry", "direction": direction, "t": 1.0, "terminals": terminals}


def test_the_final_split_is_the_newest_return_record_s() -> None:
    records = [
        _record("return", [{"name": "a", "dama": _dama(1, 0, 0)}]),
        _record("return", [{"name": "a", "dama": _dama(6, 2, 1)}, {"name": "b"}]),
        _record("forward", [{"name": "a"}, {"name": "b"}]),  # the forward beam has no DAMA
    ]
    assert contention.final_split(records) == [
        {
            "terminal": "a",
            "tries": 6,
            "successes": 4,
            "beam_collisions": 1,
            "background_collisions": 1,
        }
    ]
    no_beam = [{"type": "telemetry", "direction": "return", "dama": _dama(3, 1, 0)}]
    assert contention.final_split(no_beam) == []
