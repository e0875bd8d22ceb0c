"""satlab-pep relays correctly: bytes arrive identical (also over a link that corrupts and drops),
half-closes and resets cross in both directions, many connections at once, the cap refuses
cleanly and counts. Real flows through the emulator between the testbed's namespaces."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from peer import payload
from pepnet import PepNet, link

from satlab.scenario import PepSettings

QUICK = link(50e6, 40)  # a short RTT: these tests are about correctness, not the GEO delay


def _server_line(p: Any) -> dict[str, Any]:
    line = p.stdout.readline()
    out: dict[str, Any] = json.loads(line)
    return out


@pytest.mark.parametrize("edges", ["both", "gw"])
def test_files_arrive_identical_with_bit_errors_and_loss(edges: str) -> None:
    # forward: bits flipped (1.2 % of 1514-byte packets fail their checksum); return: packets with
    # an error dropped
    lossy = link(20e6, 100, corrupt_ber=1e-6, drop_ber=1e-6)
    with PepNet(lossy, PepSettings(edges=edges, initial_window_packets=20)) as n:
        sizes = [1, 1460, 100_000, 1_500_000]
        for i, size in enumerate(sizes):
            n.serve("srv1", 7000 + i, f"source:{size}")
            down = n.run("cli1", "get", n.addr("srv1"), 7000 + i)
            assert down["n"] == size
            assert down["sha"] == hashlib.sha256(payload(size)).hexdigest()
        n.serve("srv1", 7100, "sink")
        for size in sizes:
            up = n.run("cli1", "put", n.addr("srv1"), 7100, size)
            assert up["answer"] == {"n": size, "sha": hashlib.sha256(payload(size)).hexdigest()}
            assert up["how"] == "eof"
        for edge in n.edges:
            c = n.pep_get(edge, "/status")["counters"]
            assert c["accepted"] == 2 * len(sizes) and c["connect_failed"] == 0
            assert c["bytes_client_to_server"] == sum(sizes)  # + the sink's short answers:
            assert sum(sizes) < c["bytes_server_to_client"] < sum(sizes) + 1000
        recs = n.pep_get(n.edges[0], "/connections")["connections"]
        assert {r["end"] for r in recs} == {"closed"}
        assert all(r["client"].startswith(n.addr("cli1") + ":") for r in recs)
        assert all(r["server"].startswith(n.addr("srv1") + ":") for r in recs)


def test_half_close_and_reset_cross_in_both_directions() -> None:
    with PepNet(QUICK, PepSettings(edges="both")) as n:
        srv = n.addr("srv1")
        # client half-closes first: the server reads EOF and still answers
        n.serve("srv1", 7000, "sink")
        up = n.run("cli1", "put", srv, 7000, 5000)
        assert up["how"] == "eof" and up["answer"]["n"] == 5000
        # server half-closes first: the client reads EOF and can still send
        hs = n.serve("srv1", 7001, "halfsrv")
        hc = n.run("cli1", "halfcli", srv, 7001)
        assert hc == {"client_got": "hello", "how": "eof"}
        assert _server_line(hs) == {"server_got": "reply", "how": "eof"}
        # client resets: the server sees a reset, not an EOF
        w = n.serve("srv1", 7002, "watch")
        n.run("cli1", "rst", srv, 7002)
        assert _server_line(w) == {"server_saw": "reset"}
        # server resets: the client sees a reset
        n.serve("srv1", 7003, "rst")
        assert n.run("cli1", "watch", srv, 7003) == {"client_saw": "reset"}
        for edge in n.edges:
            c = n.pep_get(edge, "/status")["counters"]
            assert c["reset_by_client"] == 1 and c["reset_by_server"] == 1, (edge, c)
            assert c["closed"] == 2


def test_500_concurrent_connections_and_the_cap() -> None:
    with PepNet(QUICK, PepSettings(edges="both")) as n:
        n.serve("srv1", 7000, "sink")
        out = n.run("cli1", "many", n.addr("srv1"), 7000, 500)
        assert out == {"completed": 500, "refused": 0, "other": 0}
        for edge in n.edges:
            c = n.pep_get(edge, "/status")["counters"]
            assert c["accepted"] == 500 and c["closed"] == 500 and c["refused_cap"] == 0
            assert c["peak_active"] > 1
    with PepNet(QUICK, PepSettings(edges="gw", max_connections=5)) as n:
        n.serve("srv1", 7000, "watch")
        assert n.run("cli1", "hold", n.addr("srv1"), 7000, 5) == {"extra": "reset"}
        c = n.pep_get("gw", "/status")["counters"]
        assert c["refused_cap"] == 1 and c["accepted"] == 6


def test_the_pep_section_is_validated_and_bad_settings_fail_clearly() -> None:
    from satlab.scenario import ScenarioError, parse_scenario

    base: dict[str, Any] = {"name": "v", "traffic": [{"kind": "bulk_tcp", "duration_s": 1}]}
    for pep, field in (
        ({"edges": "middle"}, "configurations.0.pep.edges"),
        ({"buffer_bytes": 10}, "buffer_bytes"),
        ({"initial_window_packets": 5000}, "configurations.0.pep.initial_window_packets"),
        ({"congestion_control": "no such"}, "configurations.0.pep.congestion_control"),
    ):
        with pytest.raises(ScenarioError) as e:
            parse_scenario({**base, "configurations": [{"name": "c", "pep": pep}]})
        assert field in str(e.value), str(e.value)
    from satlab.testbed.pep import PepFailed

    with (
        pytest.raises(PepFailed, match="nosuchcc"),
        PepNet(QUICK, PepSettings(congestion_control="nosuchcc")),
    ):
        pass


def test_an_idle_connection_is_reset_on_both_legs() -> None:
    with PepNet(QUICK, PepSettings(edges="gw", idle_timeout_s=1.0)) as n:
        w = n.serve("srv1", 7000, "watch")
        assert n.run("cli1", "watch", n.addr("srv1"), 7000) == {"client_saw": "reset"}
        assert _server_line(w) == {"server_saw": "reset"}
        c = n.pep_get("gw", "/status")["counters"]
        assert c["idle_timeout"] == 1 and c["active"] == 0
        (rec,) = n.pep_get("gw", "/connections")["connections"]
        assert rec["end"] == "idle_timeout" and rec["bytes_client_to_server"] == 1
        assert rec["end_unix_s"] - rec["start_unix_s"] >= 1.0
