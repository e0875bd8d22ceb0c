"""Beam benchmark on real namespaces (issue 20, "Performance"): the emulator binary forwarding a
500 Msym/s forward carrier (HTS class, about 2.2 Gbit/s at 32APSK 9/10) to one terminal and to a
beam of 100 terminals, offered 1500-byte IP packets at 99 % of the carrier's MODCOD-weighted
ceiling, and a beam of 1000 terminals configured, timed from start to its control endpoint.

Per row (a fresh topology and emulator each):
  - delivered fraction of the ceiling (steady rate at the receiver, the link's delay excluded),
  - emulator-caused loss (its counters: receive ring full, queue full, transmit refused),
  - the emulator's release error p50/p99 (`/status` release_error: how late each packet left
    against the model's delivery time; the delay error that is the emulator's own),
  - emulator CPU seconds per delivered Gbit and that over the one-terminal row's ("x 1"),
  - for the 100-terminal beam: RSS and the forward queues' backlog sampled every 5 s over the
    run (`--minutes`, default 5).

The beams use `mixed_frames` (see `forward()`): without it the generator's per-terminal bursts
leave padding that makes the offered 99 % slightly more than the carrier carries.

The ceiling: equal offers per terminal, each taking airtime in proportion to 1 / its useful rate,
so the carrier carries the harmonic mean of the terminals' rates (clear sky: one MODCOD, the
harmonic mean is that rate; `--rain`: every other terminal under 6 dB, a lower MODCOD).

Harness (tests/integration/loadgen.py, as the emulator benchmark's (a)): the generator pinned to
CPU 0 sending with UDP GSO, its messages in turn to the terminals' addresses (udpblast NDST: one
/32 per terminal, 10.250.1.100 upwards, permanent neighbours on the gateway host), the emulator on
the last CPU, the receiving host counting and dropping the load at its interface's ingress. The
model-only figures of the same beams (no I/O) are crates/linkmodel/examples/beam_speed.rs.

Usage: `make bench-beam` runs both; this script alone:
  .venv/bin/python tests/bench/beam_bench.py [--quick] [--rain] [--minutes M] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
sys.path.insert(0, str(HERE))

from emulator_bench import (  # noqa: E402
    ceiling_ip_bps,
    emu_config,
    emulator_losses,
    log,
    sink_trial,
)
from linkcalc import frame_time_s  # noqa: E402
from loadgen import cpu_layout, gso_send_argv, gso_to_sink  # noqa: E402
from netns import MAC_ST, Emulator, Topology, proc_stat, unique_prefix  # noqa: E402

TAG = "satbeam"
BAUD = 500e6
SIZE = 1500
#: 99 % of the ceiling offered, as the issue's target
FILL = 0.99
#: the terminals' addresses: 10.250.1.100, .101, ... (one /32 each; 100 fit below .255)
FIRST_HOST = 100
RAIN_DB = 6.0


def terminal_ip(k: int) -> str:
    n = FIRST_HOST + k
    return f"10.250.{1 + n // 256}.{n % 256}"


def forward(terminals: int, rain: bool) -> dict[str, Any]:
    fwd: dict[str, Any] = {
        "delay_ms": 270.0,
        "symbol_rate_baud": BAUD,
        "acm": {"mode": "acm", "refresh_ms": 100},
        # about 190 ms of the carrier: a scheduling hiccup of the generator does not idle it
        "queue": {"limit_packets": 100_000, "limit_bytes": 50_000_000},
    }
    if terminals > 1:
        fwd["beam"] = {
            # The generator sends GSO bursts of 32 packets to one terminal at a time, and a frame
            # is not held for data: without mixed frames the last frame of each burst leaves
            # part of its data field as padding, which at 99 % of the ceiling costs about 0.1 %
            # of the carrier and makes the backlog grow for the whole run (measured: RSS follows
            # it). Filling that room with other terminals' packets is what an ACM gateway does.
            "mixed_frames": True,
            "terminals": [
                {
                    "name": f"t{k + 1}",
                    "prefixes": [f"{terminal_ip(k)}/32"],
                    **(
                        {"attenuation": {"type": "constant", "value_db": RAIN_DB}}
                        if rain and k % 2
                        else {}
                    ),
                }
                for k in range(terminals)
            ],
        }
    return fwd


def emulator(t: Topology, work: Path, terminals: int, rain: bool, cpus: str | None) -> Emulator:
    w = work / f"emu-{terminals}-{int(rain)}"
    w.mkdir(parents=True, exist_ok=True)
    config = emu_config(w, **forward(terminals, rain))
    return Emulator(t, config, workdir=w, cpus=cpus).start(timeout=30.0)


def ceiling(status: dict[str, Any]) -> tuple[float, str]:
    """IP bit/s of 1500-byte packets the carrier carries with equal offers per terminal (harmonic
    mean of their useful rates, each packed into its own MODCOD's frames), and the MODCODs."""
    fwd = status["forward"]
    links = fwd.get("terminals") or [fwd]
    per = [ceiling_ip_bps(float(x["useful_rate_bps"]), frame_time_s(x["modcod"], BAUD), SIZE)
           for x in links]  # fmt: skip
    names = sorted({x["modcod"]["name"] for x in links})
    return len(per) / sum(1.0 / r for r in per), ", ".join(names)


def row(
    work: Path, terminals: int, rain: bool, seconds: float, rss_every_s: float | None
) -> dict[str, Any]:
    gen_cpu, sut_cpu = cpu_layout()
    with Topology("l2", prefix=unique_prefix(TAG)) as t:
        for k in range(terminals if terminals > 1 else 0):
            t.sh(t.gw, ["ip", "neigh", "replace", terminal_ip(k), "lladdr", MAC_ST, "dev", "gw0"])
        sink = gso_to_sink(t)
        emu = emulator(t, work, terminals, rain, sut_cpu)
        ceil, modcods = ceiling(emu.status())
        rss: list[tuple[float, int]] = []
        queued: list[int] = []  # the forward queues' bytes at each RSS sample

        def sample_rss(elapsed: float) -> None:
            if rss_every_s and elapsed >= (len(rss) + 1) * rss_every_s:
                rss.append((round(elapsed, 1), proc_stat(emu.pid)[1]))
                queued.append(int(emu.status()["forward"]["queue_bytes"]))

        dst = terminal_ip(0) if terminals > 1 else t.st_ip
        argv = [*gso_send_argv(dst, FILL * ceil, SIZE, seconds), str(max(terminals, 1))]
        tr = sink_trial(t, sink, FILL * ceil, seconds, emu.pid, gen_cpu, SIZE, 2.0, argv=argv,
                        on_tick=sample_rss)  # fmt: skip
        rel = emu.status()["release_error"]["forward"]
        losses = emulator_losses(emu)
        emu.stop()
    got = tr.steady_rate_bps()
    gbit = tr.received * SIZE * 8 / 1e9
    out = {
        "terminals": terminals,
        "rain": rain,
        "modcods": modcods,
        "ceiling_ip_bps": ceil,
        "offered_bps": FILL * ceil,
        "sent_rate_bps": tr.send_rate_bps,
        "delivered_ip_bps": got,
        "fill_pct": 100 * got / ceil,
        "emulator_losses": losses,
        "release_p50_ms": rel["p50_us"] / 1e3,
        "release_p99_ms": rel["p99_us"] / 1e3,
        "release_count": rel["count"],
        "cpu_s_per_gbit": (tr.emu_cpu_s or 0.0) / gbit if gbit else None,
        "rss": rss,
        "queue_bytes": queued,
    }
    log(
        f"  {terminals:5d} terminals{' rain' if rain else ''} ({modcods}): ceiling "
        f"{ceil / 1e9:.3f} Gbit/s, delivered {got / 1e9:.3f} ({out['fill_pct']:.2f} %), "
        f"losses {losses}, release error p99 {out['release_p99_ms']:.3f} ms, "
        f"CPU {out['cpu_s_per_gbit']:.3f} s/Gbit"
    )
    return out


def start_time(work: Path, terminals: int) -> float:
    """Seconds from the emulator's start to its control endpoint answering, `terminals` in
    the beam."""
    with Topology("l2", prefix=unique_prefix(TAG)) as t:
        t0 = time.monotonic()
        emu = emulator(t, work, terminals, False, None)
        took = time.monotonic() - t0
        emu.stop()
    return took


def rss_growth_pct(samples: list[tuple[float, int]]) -> float | None:
    """RSS at the end over RSS at 30 s (the queue is full by then), percent."""
    if len(samples) < 2:
        return None
    at30 = min(samples, key=lambda s: abs(s[0] - 30))[1]
    return 100 * (samples[-1][1] / at30 - 1)


def memory(r: dict[str, Any], seconds: float) -> dict[str, float]:
    """RSS and the forward queues' backlog at 30 s and at the end of a row sampled for memory:
    the frames a queue holds are part of the RSS, so a growing backlog shows as growth."""
    samples, queued = r["rss"], r["queue_bytes"]
    if not samples:
        return {"seconds": seconds}
    i30 = min(range(len(samples)), key=lambda i: abs(samples[i][0] - 30))
    mb = 2**20
    return {
        "seconds": seconds,
        "rss_30s_mb": samples[i30][1] / mb,
        "rss_end_mb": samples[-1][1] / mb,
        "queued_30s_mb": queued[i30] / mb,
        "queued_peak_mb": max(queued) / mb,
    }


def table(res: dict[str, Any]) -> str:
    base = res["rows"][0]["cpu_s_per_gbit"]
    lines = [
        "| terminals | MODCODs | ceiling Gbit/s | delivered Gbit/s | fill % (>= 99) | emulator "
        "losses (0) | release error p50 / p99 ms (p99 <= 0.2) | CPU s/Gbit | x 1 (<= 1.5) |",
        "|---:|---|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in res["rows"]:
        lost = sum(r["emulator_losses"].values())
        lines.append(
            f"| {r['terminals']}{' (rain)' if r['rain'] else ''} | {r['modcods']} | "
            f"{r['ceiling_ip_bps'] / 1e9:.3f} | {r['delivered_ip_bps'] / 1e9:.3f} | "
            f"{r['fill_pct']:.2f} | {lost} | {r['release_p50_ms']:.3f} / "
            f"{r['release_p99_ms']:.3f} | {r['cpu_s_per_gbit']:.3f} | "
            f"{r['cpu_s_per_gbit'] / base:.2f} |"
        )
    g = res["rss_growth_pct"]
    mem = res["memory"]
    lines.append(
        f"\nRSS of the 100-terminal emulator over {mem['seconds']:.0f} s: "
        f"{mem['rss_30s_mb']:.1f} MB at 30 s, {mem['rss_end_mb']:.1f} MB at the end "
        f"({'n/a' if g is None else f'{g:+.2f} %'}); its forward queues held "
        f"{mem['queued_30s_mb']:.1f} MB at 30 s, {mem['queued_peak_mb']:.1f} MB at the most; "
        f"1000 terminals configured: control "
        f"endpoint up {res['start_1000_s']:.2f} s after start (target < 2 s)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20-s rows, 60 s of memory")
    ap.add_argument("--rain", action="store_true", help="also 100 terminals, half under rain")
    ap.add_argument("--minutes", type=float, default=5.0, help="the 100-terminal run's length")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    work = Path(f"/tmp/satlab-beam-bench-{int(time.time())}")
    seconds = 20.0 if args.quick else 60.0
    long_s = 60.0 if args.quick else 60.0 * args.minutes
    log(f"beam benchmark: {BAUD / 1e6:.0f} Msym/s, {SIZE}-byte packets, {FILL:.0%} of the ceiling")
    rows = [row(work, 1, False, seconds, None), row(work, 100, False, long_s, 5.0)]
    if args.rain:
        rows.append(row(work, 100, True, seconds, None))
    samples = rows[1]["rss"]
    res: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "rows": rows,
        "memory": memory(rows[1], long_s),
        "rss_growth_pct": rss_growth_pct(samples),
        "start_1000_s": statistics.median(start_time(work, 1000) for _ in range(3)),
    }
    print(table(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
