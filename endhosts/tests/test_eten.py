"""sl_beten (endhosts/bpf/eten.bpf.c) on the real kernel: loading, notice validation, unloading.

The loader runs inside a fresh namespace with the tc program on `lo`; eten_forge.py opens a real
connection there whose data is dropped on arrival (nftables), then sends it notices: one valid,
and one of each thing the report says a sender must refuse (ETEN report section 7), then a flood.
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import sys
from pathlib import Path

from ca_harness import AVAILABLE, drop_all_segments, run, use_real_segments
from scheme_loader import link_exists, loaded, map_entries

from satlab.schemes import ETEN_STATS

FORGE = Path(__file__).with_name("eten_forge.py")
PORT = 5790
KEY = bytes(range(1, 33))


def config_hex(rate: int, burst: int, key: bytes = b"") -> str:
    return struct.pack("<IIII64s", rate, burst, len(key), 0, key).hex()


def forge(netns: str, ca: str, *extra: str) -> dict[str, object]:
    out = run(
        "ip", "netns", "exec", netns, sys.executable, str(FORGE),
        "--cc", ca, "--port", str(PORT), *extra, timeout=60,
    )  # fmt: skip
    result: dict[str, object] = json.loads(out)
    return result


def test_refuses_forged_notices_and_counts_them(built: Path, netns: str) -> None:
    use_real_segments(netns)
    drop_all_segments(netns, PORT, "sl_eten_test")
    cfg = config_hex(rate=10, burst=12, key=KEY)
    extra = ("--tc-ingress", "lo", "--set", f"eten_config={cfg}")
    with loaded("eten.bpf.o", "sl_beten", netns, *extra, tag="tbeten") as ld:
        sent = forge(netns, ld.ca, "--key", KEY.hex(), "--flood", "100")
        entries = map_entries(ld.pin_dir / "eten_notices")
        final = ld.stop()
    stats = dict(zip(ETEN_STATS, final["stats"]["eten_stats"], strict=True))
    report = f"sent {sent}, counters {stats}, map {entries}"

    # The valid notice and the few flood notices the bucket still admitted were kept.
    assert 1 <= stats["accepted"] <= 1 + 6, report
    # The connection's one loss (the timeout of its first segment, the notified one) was taken
    # as corruption and consumed the notice; the flood's (mid-segment sequences) stay unused.
    assert stats["loss_corruption"] == 1 and stats["loss_congestion"] == 0, report
    assert len(entries) == stats["accepted"] - 1, report
    first = struct.pack("!I", int(sent["first_seq"])).hex()  # type: ignore[call-overload]
    keys = ["".join(b[2:] for b in e["key"])[-8:] for e in entries]
    assert first not in keys, report
    # Each forgery refused for its reason.
    assert stats["duplicate"] == 1, report
    assert stats["out_of_window"] == 2, report
    assert stats["unknown_flow"] == 1, report
    assert stats["malformed"] == 1, report
    assert stats["bad_mac"] == 1, report
    assert stats["no_mac"] == 1, report
    assert stats["rate_limited"] >= 90, report
    assert stats["notices_seen"] == 8 + 100, report


def test_loads_and_unloads_without_a_trace(built: Path, netns: str) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        extra = ("--tc-ingress", "lo", "--set", f"eten_config={config_hex(1000, 100)}")
        with loaded("eten.bpf.o", "sl_beten", netns, *extra, tag="tunload") as ld:
            assert ld.ca in AVAILABLE.read_text().split()
            assert (ld.pin_dir / "eten_notices").exists()
            links = ld.ready["links"]
            assert links["struct_ops"] and links["tcx"], ld.ready
            assert link_exists(links["struct_ops"]) and link_exists(links["tcx"])
            ld.stop(sig)
            assert ld.ca not in AVAILABLE.read_text().split()
            assert not link_exists(links["struct_ops"]) and not link_exists(links["tcx"])
            if sig == signal.SIGTERM:  # a killed loader's pins are the sweeper's job
                assert not ld.pin_dir.exists()
        # the struct_ops map is gone, not lingering
        assert (
            ld.ca
            not in subprocess.run(
                ["bpftool", "struct_ops", "show"], capture_output=True, text=True, check=True
            ).stdout
        )


def test_loader_names_a_bad_argument(built: Path, netns: str) -> None:
    r = subprocess.run(
        [str(built / "sl-scheme"), "--object", str(built / "eten.bpf.o"), "--placeholder",
         "sl_nothere", "--ca-name", "x", "--pin-dir", "/sys/fs/bpf/sltest-bad"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 1
    assert "--placeholder: sl_nothere is not the object's congestion control name" in r.stderr
    assert not Path("/sys/fs/bpf/sltest-bad").exists()
