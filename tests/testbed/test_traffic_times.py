"""Traffic start and stop times and UDP load as a share of capacity, through the real emulator.

The path is geo_path.py's GEO-like one: 135 ms each way (270 ms RTT), a 10 Mbit/s forward link
whose queue holds 300 packets (0.36 s at 10 Mbit/s), and a 4 Mbit/s return link. The senders wait
for their start and stop times themselves (absolute CLOCK_MONOTONIC times from the runner), so the
sender's own times are within 50 ms of the scenario's (scheduling on a loaded 2-core machine); what
the receiver sees adds the path: a download's first byte comes after the handshake and one more
one-way trip, 1.5 RTT = 405 ms after the start.
"""

from pathlib import Path
from typing import Any

import pytest
from geo_path import geo_link

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed.runner import run_one

LINK = geo_link(return_rate_bps=4e6)
RTT_S = 0.270
QUEUE_S = 300 * 1500 * 8 / 10e6  # the forward queue, full, drained at the link's rate
SLACK_S = 0.05  # a sender's wake-up and a sink's read on a loaded machine
# A flow at 0 s starts on time when its process is up within the runner's lead (2 s); on a machine
# under a load of 20 an interpreter can take longer. Later flows have seconds to spare.
LATE_UP_S = 1.0


def run(**over: Any) -> dict[str, Any]:
    sc = parse_scenario({"name": "t", "link": LINK, "configurations": [{"name": "cubic"}], **over})
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    return res


def test_flows_start_and_stop_at_their_times(emulator_bin: Path) -> None:
    res = run(
        duration_s=7,
        traffic=[
            # Two connections from 0 s to 3 s (a duration that would run to the run's end).
            {"kind": "bulk_tcp", "duration_s": 7, "parallel": 2, "stop_s": 3},
            # Two objects from 3.5 s, alone on the link: done long before 5 s.
            {
                "kind": "short_flows",
                "count": 2,
                "size_distribution": "fixed",
                "mean_size_bytes": 20000,
                "start_s": 3.5,
            },
            # A gigabyte from 5 s, stopped at 6.5 s long before it could finish.
            {"kind": "bulk_tcp", "bytes": 10**9, "start_s": 5, "stop_s": 6.5},
        ],
    )
    early, short, late = res["flows"]

    assert 0 <= early["start_s"] < LATE_UP_S and early["parallel"] == 2
    assert 3 <= early["stop_s"] < 3 + SLACK_S
    # Each connection's reset follows the data it had in the network: the last byte arrives at
    # most one one-way delay and a full queue after the stop, and not before the stop (both
    # connections sent until then).
    assert 3 + RTT_S / 2 <= early["last_byte_s"] < 3 + RTT_S / 2 + QUEUE_S + SLACK_S
    assert not early["complete"]

    assert 3.5 <= short["start_s"] < 3.5 + SLACK_S and short["completed"] == 2
    assert 3.5 + 1.5 * RTT_S <= short["first_byte_s"] < 3.5 + 1.5 * RTT_S + SLACK_S

    # The link is idle at 5 s (the others are done), so no queue delays the handshake.
    assert 5 <= late["start_s"] < 5 + SLACK_S
    assert 5 + 1.5 * RTT_S <= late["first_byte_s"] < 5 + 1.5 * RTT_S + SLACK_S
    assert 6.5 <= late["stop_s"] < 6.5 + SLACK_S
    assert 6.5 + RTT_S / 2 <= late["last_byte_s"] < 6.5 + RTT_S / 2 + QUEUE_S + SLACK_S
    assert not late["complete"] and 0 < late["bytes_received"] < 10**9  # stop_s came first
    assert late["completion_s"] is None


def test_udp_rate_share_is_of_the_capacity_in_its_direction(emulator_bin: Path) -> None:
    res = run(
        duration_s=3,
        traffic=[
            {"kind": "udp_cbr", "rate_share": 0.1, "packet_bytes": 1000},
            {"kind": "udp_cbr", "rate_share": 0.25, "direction": "upload", "start_s": 0.5},
        ],
    )
    down, up = res["flows"]
    for flow, capacity, share, size, start in (
        (down, 10e6, 0.1, 1000, 0),
        (up, 4e6, 0.25, 1200, 0.5),
    ):
        assert flow["capacity_bps"] == capacity and flow["rate_share"] == share
        # The IP packets (payload + 28 bytes of IP and UDP headers) fill the share.
        assert flow["rate_bps"] == pytest.approx(share * capacity * size / (size + 28))
        # Sent at that rate from its start to the run's end (3 s), and all of it crossed the link.
        # (Arrival times do not give the rate: the first datagram across the link waits for the
        # edge routers' ARP exchange over it, a round trip, and those behind it arrive bunched.)
        assert start <= flow["start_s"] < start + (SLACK_S if start else LATE_UP_S)
        sent_bps = 8 * size * flow["packets_sent"] / (3 - flow["start_s"])
        assert sent_bps == pytest.approx(flow["rate_bps"], rel=0.02)
        assert flow["packets_received"] == flow["packets_sent"]
        assert 3 + RTT_S / 2 - 0.02 <= flow["last_byte_s"] < 3 + RTT_S / 2 + SLACK_S  # 0.02: a gap
