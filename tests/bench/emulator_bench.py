"""Emulator benchmark (issue 3, "Benchmark"): prints a table of figures next to their targets and
writes them as JSON.

  (0) the traffic generator itself over a plain veth (it must not be the bottleneck)
  (a) largest zero-loss throughput of 1500-byte IP packets, 270 ms one way, no impairment, a
      10 Gbit/s fixed-rate link (the link is not the limit): emulator vs the naive TUN forwarder
      (ratio; 3 alternating rounds, median, 1 with --quick). Harness of its own, so that it is
      the system under test that is measured, not the traffic hosts sharing its 2 cores (see
      `Bench.throughput`): the system under test pinned to the last CPU and the generator to
      CPU 0; the generator sends with UDP GSO; the receiving host counts and drops the packets
      at its interface's ingress (nftables) instead of running a UDP socket.
  (b) one-way delay error p50/p99 at 50% load and for idle probes (270 ms, 100 Msym/s): the
      emulator's release error against each packet's model delivery time (the target), and the
      end-to-end error against delay + 1 frame (adds the generator's path and, at load, up to one
      133 us frame of the model's own alignment)
  (c) rate accuracy vs the configured MODCOD's rate (saturated, 1500-byte packets)
  (d) emulator RSS after 30 s and at the end of 5 minutes saturated (--quick: 60 s)
  (e) 40 Msym/s 32APSK 9/10 offered 110% of the MODCOD ceiling: delivered fraction for IP packet
      sizes 64, 200, 576, 1000, 1400, 1500 ((c) and (e) through (a)'s harness)
  (f) emulator CPU seconds per delivered gigabit (/proc/PID/stat), saturated and at (a)'s rate
  (p) port kinds: the emulator with af_packet ports, then with af_xdp ports, on the same veth
      topology and (a)'s harness, offered more than it carries (a fixed 10 Gbit/s link, 5 ms):
      delivered Mpkt/s and Gbit/s of 1500- and 64-byte IP packets and the emulator's CPU time per
      delivered packet, and the ratios af_xdp / af_packet

Traffic: tests/bench/build/udpblast (C, sendmmsg/recvmmsg, paced, kernel receive timestamps; the
sender in gw-host, the receiver in st-host, one host clock so one-way delay is direct); for (a) the
same sender with UDP GSO into the counting sink.

Usage: run-emulator-bench.sh [--quick] [--json FILE] [--only a,b,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from linkcalc import ETH_HEADER, expected_l2_rate, frame_time_s  # noqa: E402
from loadgen import (  # noqa: E402
    GSO_SEGMENTS,
    CountingSink,
    cpu_layout,
    gso_send_argv,
    gso_to_sink,
    pinned,
    udpblast,
)
from netns import Emulator, Topology, proc_stat, sweep_stale, unique_prefix  # noqa: E402

TAG = "satbench"
SIZES = (64, 200, 576, 1000, 1400, 1500)
DELAY_BAUD = 100e6
#: (a)'s link: a fixed rate well above what any system here forwards (a 1 Gbaud 32APSK 9/10
#: carrier, 4.4 Gbit/s, is within reach of the emulator now and its queue would set the figure)
A_LINK_BPS = 10e9
A_LINK: dict[str, Any] = {"kind": "fixed", "rate_bps": A_LINK_BPS, "symbol_rate_baud": None,
                          "acm": None}  # fmt: skip
TARGETS = {
    "ratio": 2.0,
    "delay_err_p99_ms": 0.2,
    "rate_err_pct": 1.0,
    "ceiling_fraction_pct": 99.0,
    "rss_growth_pct": 5.0,
}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class Trial:
    offered_bps: float
    size: int
    sent: int
    received: int
    send_rate_bps: float
    recv: dict[str, Any]
    send: dict[str, Any]
    emu_cpu_s: float | None = None

    @property
    def lost(self) -> int:
        return self.sent - self.received

    def steady_rate_bps(self, extra_bytes: int = 0) -> float:
        """IP (+extra per packet) bits/s over the receiver's 100 ms bins, ramp bins excluded (or
        the counting sink's steady rate)."""
        if "steady_bps" in self.recv:
            return float(self.recv["steady_bps"]) * (self.size + extra_bytes) / self.size
        bins: list[int] = self.recv.get("bins", [])
        ms = int(self.recv.get("bin_ms", 100))
        core = bins[3:-3] if len(bins) > 10 else bins[1:-1]
        if not core:
            return 0.0
        rate = sum(core) * 8 / (len(core) * ms / 1000)
        return rate * (self.size + extra_bytes) / self.size


def trial(
    topo: Topology,
    rate_bps: float,
    size: int,
    duration_s: float,
    emu_pid: int | None = None,
    idle_ms: int = 1500,
    during: Callable[[float], None] | None = None,
) -> Trial:
    """One paced UDP run gw-host -> st-host; returns what was sent and received."""
    rx = topo.spawn(
        topo.st,
        [str(udpblast()), "recv", "5001", str(idle_ms), str(duration_s + 60)],
        stdout=subprocess.PIPE,
    )
    assert rx.stdout is not None
    if rx.stdout.readline().strip() != b"ready":
        raise RuntimeError("udpblast recv did not start")
    cpu0 = proc_stat(emu_pid)[0] if emu_pid else 0.0
    argv = [str(udpblast()), "send", topo.st_ip, "5001", f"{rate_bps:.0f}", str(size),
            str(duration_s)]  # fmt: skip
    tx = topo.spawn(topo.gw, argv, stdout=subprocess.PIPE)
    if during is not None:
        during(duration_s)
    out_tx, _ = tx.communicate(timeout=duration_s + 30)
    topo.procs.remove(tx)
    out_rx, _ = rx.communicate(timeout=duration_s + 90)
    topo.procs.remove(rx)
    cpu1 = proc_stat(emu_pid)[0] if emu_pid else 0.0
    s = json.loads(out_tx)
    r = json.loads(out_rx)
    return Trial(
        rate_bps,
        size,
        int(s["sent_packets"]),
        int(r["packets"]),
        float(s["rate_bps"]),
        r,
        s,
        (cpu1 - cpu0) if emu_pid else None,
    )


# --- (a)'s harness: tests/integration/loadgen.py ---------------------------------------------


def sink_trial(
    topo: Topology,
    sink: CountingSink,
    rate_bps: float,
    duration_s: float,
    sut_pid: int | None,
    gen_cpu: str | None,
    size: int = 1500,
    steady_after_s: float | None = None,
    argv: list[str] | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> Trial:
    """One paced GSO run of `size`-byte IP packets gw-host -> sink, with the CPU time of the
    system under test (`sut_pid`) when given. `argv`: the generator's command when not the
    default (to st-host's address).

    With `steady_after_s`, the sink's counter is also sampled every 250 ms while the sender runs,
    and the rate counted from that many seconds after the start to the sender's end (the link's
    delay and the ramp excluded) is the trial's steady rate; `on_tick(seconds since the start)`
    is called at each sample."""
    c0 = sink.packets()
    cpu0 = proc_stat(sut_pid)[0] if sut_pid else 0.0
    argv = argv or gso_send_argv(topo.st_ip, rate_bps, size, duration_s)
    t0 = time.monotonic()
    tx = topo.spawn(topo.gw, pinned(gen_cpu, argv), stdout=subprocess.PIPE)
    samples: list[tuple[float, int]] = []
    if steady_after_s is not None:
        while tx.poll() is None:
            time.sleep(0.25)
            before = time.monotonic()
            count = sink.packets()  # an nft call: stamp the sample with the middle of it
            samples.append(((before + time.monotonic()) / 2 - t0, count))
            if on_tick is not None:
                on_tick(time.monotonic() - t0)
    out_tx, _ = tx.communicate(timeout=duration_s + 30)
    topo.procs.remove(tx)
    s = json.loads(out_tx)
    sent = int(s["sent_packets"])
    got = sink.settle(sent, c0)
    cpu = proc_stat(sut_pid)[0] - cpu0 if sut_pid else None
    recv: dict[str, Any] = {"packets": got, "counted_by": "nftables ingress"}
    steady = [x for x in samples[:-1] if x[0] >= (steady_after_s or 0.0)]
    if len(steady) >= 2:
        (ta, ca), (tb, cb) = steady[0], steady[-1]
        recv["steady_bps"] = (cb - ca) * size * 8 / (tb - ta)
    return Trial(rate_bps, size, sent, got, float(s["rate_bps"]), recv, s, cpu)


def emulator_losses(emu: Emulator) -> dict[str, int]:
    """The emulator's forward-direction loss counters, by where the packet was lost."""
    return {
        "rx ring full": int(emu.metric("rx_kernel_drops_total", "forward")),
        "queue full": int(emu.metric("queue_drops_total", "forward")),
        "tx refused": int(emu.metric("tx_errors_total", "forward")),
    }


def zero_loss_bisect(
    run: Callable[[float], Trial],
    start_bps: float,
    ceiling_bps: float,
    steps: int = 5,
) -> tuple[float, bool, list[dict[str, Any]]]:
    """Largest rate (1500-byte packets) carried with no loss: double the offered rate from
    start_bps until a trial fails (or the ceiling), then bisect `steps` times; `run(rate)` is
    one trial.

    A trial fails when packets were lost, or when the generator sent less than 98 % of the offered
    rate. The figure is the highest rate the generator actually sent in a loss-free trial;
    `generator_limited` is true when no trial lost a packet, so the system's own limit was never
    reached and the figure is a lower bound. Returns (rate, generator_limited, trial log)."""
    hist: list[dict[str, Any]] = []

    def ok(rate: float) -> bool:
        t = run(rate)
        short = t.send_rate_bps < 0.98 * rate
        good = t.lost == 0 and not short
        causes = t.recv.get("loss_causes")
        hist.append(
            {
                "offered_bps": rate,
                "sent_rate_bps": t.send_rate_bps,
                "lost": t.lost,
                "sent": t.sent,
                "zero_loss": t.lost == 0,
                "generator_short": short,
                "loss_causes": causes,
            }
        )
        verdict = "ok" if good else ("LOSS" if t.lost else "generator short")
        where = (
            f" ({', '.join(f'{k} {v}' for k, v in causes.items())})" if causes and t.lost else ""
        )
        log(
            f"  offered {rate / 1e9:.3f} Gbit/s: sent {t.send_rate_bps / 1e9:.3f}, "
            f"lost {t.lost}/{t.sent} -> {verdict}{where}"
        )
        return good

    lo, hi = 0.0, None
    r = start_bps
    while r <= ceiling_bps:
        if ok(r):
            lo = r
            r *= 2
        else:
            hi = r
            break
    if hi is None:
        hi = ceiling_bps
        if lo < hi and ok(hi):
            lo = hi
    if lo < hi:
        for _ in range(steps):
            mid = (lo + hi) / 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
    carried = [h["sent_rate_bps"] for h in hist if h["zero_loss"]]
    never_lost = all(h["lost"] == 0 for h in hist)
    return max(carried, default=0.0), never_lost, hist


def ceiling_ip_bps(useful_bps: float, frame_time: float, size: int) -> float:
    """IP bits/s of `size`-byte packets a carrier of `useful_bps` carries (BBFrame packing)."""
    l2 = size + ETH_HEADER
    return float(expected_l2_rate(useful_bps, l2, frame_time=frame_time) * size / l2)


def emu_config(work: Path, port_kind: str = "af_packet", **fwd: Any) -> dict[str, Any]:
    forward: dict[str, Any] = {
        "delay_ms": 270.0,
        "symbol_rate_baud": 40e6,
        "acm": {"mode": "acm", "refresh_ms": 100},
        # default queue (1000 packets / 1.5 MB): memory must stay flat when saturated
    }
    forward.update(fwd)
    forward = {k: v for k, v in forward.items() if v is not None}  # None: leave the key out
    return {
        "seed": 1,
        "ports": {
            "gw": {"kind": port_kind, "interface": "egw"},
            "st": {"kind": port_kind, "interface": "est"},
        },
        "telemetry": {"socket": str(work / "telemetry.sock"), "period_ms": 100, "events": "none"},
        "control": {"listen": "127.0.0.1:8781"},
        "forward": forward,
        "return": {"delay_ms": 270.0},
    }


class Bench:
    def __init__(self, quick: bool, only: set[str], workdir: Path) -> None:
        self.quick = quick
        self.only = only
        self.work = workdir
        self.res: dict[str, Any] = {"quick": quick, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.n_emu = 0

    def want(self, key: str) -> bool:
        return not self.only or key in self.only

    def emulator(
        self, topo: Topology, cpus: str | None = None, port_kind: str = "af_packet", **fwd: Any
    ) -> Emulator:
        self.n_emu += 1
        w = self.work / f"emu{self.n_emu}"
        w.mkdir(parents=True, exist_ok=True)
        return Emulator(topo, emu_config(w, port_kind, **fwd), workdir=w, cpus=cpus).start()

    # (0) ----------------------------------------------------------------------------------
    def generator(self) -> None:
        log("(0) traffic generator over a plain veth")
        with Topology("veth", prefix=unique_prefix(TAG)) as t:
            top = trial(t, 20e9, 1500, 2.0)  # as fast as it can
            ceiling = top.send_rate_bps
            chk = trial(t, 0.9 * ceiling, 1500, 2.0)
            small = trial(t, 2e9, 64, 2.0)
            probes = trial(t, 200 * 1500 * 8.0, 1500, 4.0)  # host noise floor of OWD
            if self.want("a"):
                # (a)'s harness on one core: GSO sender on CPU 0, sink on st0 (whose work, on a
                # plain veth, is done in the sender's call: a lower bound of what it offers)
                gen_cpu, _ = cpu_layout()
                sink = gso_to_sink(t)
                a_top = sink_trial(t, sink, A_LINK_BPS, 2.0, None, gen_cpu)
                self.res["generator_a_harness"] = {
                    "max_send_rate_bps": a_top.send_rate_bps,
                    "lost": a_top.lost,
                    "cpu": gen_cpu,
                    "sender_cpu_s": a_top.send.get("cpu_s"),
                }
                log(f"    (a)'s GSO generator on CPU {gen_cpu} into the sink: "
                    f"{a_top.send_rate_bps / 1e9:.2f} Gbit/s, lost {a_top.lost}")  # fmt: skip
        ceiling = float(ceiling)
        self.res["generator"] = {
            "max_send_rate_bps": ceiling,
            "max_send_lost": top.lost,
            "at_90pct_lost": chk.lost,
            "at_90pct_rate_bps": chk.send_rate_bps,
            "max_64B_send_rate_bps": small.send_rate_bps,
            "max_64B_pps": small.send_rate_bps / 512,
            "max_64B_lost": small.lost,
            "veth_probe_owd_p50_ms": probes.recv["delay_p50_us"] / 1e3,
            "veth_probe_owd_p99_ms": probes.recv["delay_p99_us"] / 1e3,
            "veth_probe_owd_max_ms": probes.recv["delay_max_ns"] / 1e6,
        }
        log(
            f"    generator: {ceiling / 1e9:.2f} Gbit/s max (1500 B), loss at 90% of it: "
            f"{chk.lost}; 64 B: {small.send_rate_bps / 512 / 1e3:.0f} kpps"
        )

    # (a) ----------------------------------------------------------------------------------
    def throughput(self) -> None:
        """Zero-loss throughput of the emulator and of the naive TUN forwarder, same harness.

        The 2 cores are split: the system under test (its process; the kernel work its own
        send calls do) on the last CPU, the generator on CPU 0. Measured before this harness,
        with a UDP socket receiver and nothing pinned, the emulator never lost a packet: the
        generator and the receiver ran out of CPU first (2.4 Gbit/s) and the figure measured
        the test bed. The generator's UDP GSO and the ingress sink (`CountingSink`) are what
        let one core offer more than the emulator carries."""
        trial_s = 2.0
        gen_cpu, sut_cpu = cpu_layout()
        # A round's ratio moves from run to run: rounds alternate naive/emulator and the median
        # ratio counts.
        rounds = 1 if self.quick else 3
        naive_rates: list[float] = []
        emu_rates: list[float] = []
        emu_limited: list[bool] = []
        nh: list[list[dict[str, Any]]] = []
        eh: list[list[dict[str, Any]]] = []
        for k in range(rounds):
            log(f"(a) round {k + 1}/{rounds}: naive TUN forwarder, zero-loss bisection "
                f"(generator on CPU {gen_cpu}, forwarder on CPU {sut_cpu})")  # fmt: skip
            with Topology("l3", prefix=unique_prefix(TAG)) as t:
                sink = gso_to_sink(t)
                fwd = t.start_naive_forwarder(cpus=sut_cpu)

                def naive_trial(rate: float, dur: float = trial_s) -> Trial:
                    return sink_trial(t, sink, rate, dur, fwd.pid, gen_cpu)  # noqa: B023

                naive, _, h = zero_loss_bisect(naive_trial, 200e6, A_LINK_BPS)
                naive_rates.append(naive)
                nh.append(h)
                ntr = naive_trial(naive, 4.0)
            log(f"(a) round {k + 1}/{rounds}: emulator (270 ms, fixed 10 Gbit/s, no impairment)")
            with Topology("l2", prefix=unique_prefix(TAG)) as t:
                sink = gso_to_sink(t)
                emu = self.emulator(t, cpus=sut_cpu, **A_LINK)

                def emu_trial(rate: float, dur: float = trial_s) -> Trial:
                    before = emulator_losses(emu)  # noqa: B023
                    tr = sink_trial(t, sink, rate, dur, emu.pid, gen_cpu)  # noqa: B023
                    after = emulator_losses(emu)  # noqa: B023
                    tr.recv["loss_causes"] = {k: after[k] - before[k] for k in after}
                    tr.recv["realtime_stepdowns"] = emu.metric(  # noqa: B023
                        "realtime_stepdowns_total", "forward"
                    )
                    return tr

                emu_rate, limited, h = zero_loss_bisect(emu_trial, 400e6, A_LINK_BPS)
                emu_limited.append(limited)
                emu_rates.append(emu_rate)
                eh.append(h)
                # CPU per delivered gigabit at that rate
                tr = emu_trial(emu_rate, 4.0)
                _, rss = proc_stat(emu.pid)
                emu.stop()
            log(
                f"    round {k + 1}: ratio {emu_rate / naive:.2f}" if naive else "    no naive rate"
            )
        ngbit = ntr.received * 1500 * 8 / 1e9
        self.res.setdefault("f", {})["naive_at_its_rate"] = {
            "delivered_bps": ntr.received * 1500 * 8 / 4.0,
            "cpu_s": ntr.emu_cpu_s,
            "cpu_s_per_gbit": (ntr.emu_cpu_s or 0) / ngbit if ngbit else None,
            "lost": ntr.lost,
        }
        ratios = [e / n for e, n in zip(emu_rates, naive_rates, strict=True) if n]
        gbit = tr.received * 1500 * 8 / 1e9
        self.res["a"] = {
            "rounds": rounds,
            "harness": {
                "generator_cpu": gen_cpu,
                "system_under_test_cpu": sut_cpu,
                "gso_segments": GSO_SEGMENTS,
                "sink": "nftables netdev ingress counter + drop on st0",
                "link": A_LINK,
            },
            "naive_zero_loss_bps": statistics.median(naive_rates),
            "emulator_zero_loss_bps": statistics.median(emu_rates),
            "ratio": statistics.median(ratios) if ratios else None,
            "round_ratios": ratios,
            "naive_rounds_bps": naive_rates,
            "emulator_rounds_bps": emu_rates,
            # no emulator trial lost a packet: the generator, not the emulator, set the figure
            "limited_by_generator": all(emu_limited),
            "rounds_limited_by_generator": emu_limited,
            "naive_trials": nh,
            "emulator_trials": eh,
            "emulator_rss_bytes": rss,
        }
        self.res.setdefault("f", {})["at_a_rate"] = {
            "delivered_bps": tr.received * 1500 * 8 / 4.0,
            "cpu_s": tr.emu_cpu_s,
            "cpu_s_per_gbit": (tr.emu_cpu_s or 0) / gbit if gbit else None,
            "lost": tr.lost,
        }

    # (b) ----------------------------------------------------------------------------------
    def delay(self) -> None:
        """One-way delay on a 100 Msym/s link (436 Mbit/s; frame time 133 us), 1500-byte packets:
        idle probes (each starts a frame: the model delivers at arrival + one frame time + delay
        exactly) and a stream at 50% of the useful rate (218 Mbit/s, well inside what the
        emulator forwards without loss; the model then adds one to two frame times).

        Two errors per trial:
        - release error (the target): how late the emulator handed each packet to its output
          port against the model's delivery time of that packet (emulator /status
          `release_error`, 1-us buckets): the emulator's own delay error, free of the model's
          frame alignment and of the generator's path;
        - end to end: receiver kernel timestamp - sender clock - (delay + 1 frame time). It adds
          the generator's and receiver's paths (the plain-veth floor of (0)) and, at load, up to
          one 133 us frame of the model's own alignment.
        Each trial runs on a fresh emulator so its release figures are its own."""
        baud = DELAY_BAUD
        out: dict[str, Any] = {"symbol_rate_baud": baud}
        for name, fraction, dur in (("idle_probes", None, 4.0), ("load_50pct", 0.5, 10.0)):
            with Topology("l2", prefix=unique_prefix(TAG)) as t:
                emu = self.emulator(t, symbol_rate_baud=baud)
                st = emu.status()["forward"]
                useful = float(st["useful_rate_bps"])
                ft = frame_time_s(st["modcod"], baud)
                model_ms = 270.0 + ft * 1e3
                out.update(frame_time_ms=ft * 1e3, model_owd_ms=model_ms)
                rate = 200 * 1500 * 8.0 if fraction is None else fraction * useful
                tr = trial(t, rate, 1500, dur, emu.pid)
                rel = emu.status()["release_error"]["forward"]
                emu.stop()
            r = tr.recv
            o = out[name] = {
                "offered_bps": rate,
                "lost": tr.lost,
                "owd_min_ms": r["delay_min_ns"] / 1e6,
                "owd_p50_ms": r["delay_p50_us"] / 1e3,
                "owd_p99_ms": r["delay_p99_us"] / 1e3,
                "owd_p999_ms": r["delay_p999_us"] / 1e3,
                "owd_max_ms": r["delay_max_ns"] / 1e6,
                "err_p50_ms": r["delay_p50_us"] / 1e3 - model_ms,
                "err_p99_ms": r["delay_p99_us"] / 1e3 - model_ms,
                "release_count": rel["count"],
                "release_p50_ms": rel["p50_us"] / 1e3,
                "release_p99_ms": rel["p99_us"] / 1e3,
                "release_p999_ms": rel["p999_us"] / 1e3,
                "release_max_ms": rel["max_us"] / 1e3,
            }
            log(
                f"    {name}: OWD p50 {o['owd_p50_ms']:.3f} p99 {o['owd_p99_ms']:.3f} ms, "
                f"end-to-end error p50 {o['err_p50_ms']:+.3f} p99 {o['err_p99_ms']:+.3f} ms; "
                f"release error p50 {o['release_p50_ms']:.3f} p99 {o['release_p99_ms']:.3f} "
                f"max {o['release_max_ms']:.3f} ms ({rel['count']} packets); lost {tr.lost}"
            )
        self.res["b"] = out

    # (c)(d)(e)(f) on OpenSAND's carrier ---------------------------------------------------
    def carrier_emulator(self, t: Topology, baud: float, cpus: str | None = None) -> Emulator:
        # a queue ~190 ms deep at every packet size (4 MB, 100 000 packets), so a scheduling
        # hiccup of the generator does not idle the link
        queue = {"limit_packets": 100_000, "limit_bytes": 4_000_000 if baud >= 40e6 else 1_000_000}
        return self.emulator(t, cpus=cpus, symbol_rate_baud=baud, queue=queue)

    def carrier_rates(self) -> None:
        """(c)/(e): 110% of the ceiling per packet size, through (a)'s harness (pinned, GSO
        sender, counting sink): a UDP receiver and the generator sharing the emulator's 2 cores
        could not offer 110% of this carrier in 64-byte packets (282 kpps)."""
        gen_cpu, sut_cpu = cpu_layout()
        with Topology("l2", prefix=unique_prefix(TAG)) as t:
            sink = gso_to_sink(t)
            emu = self.carrier_emulator(t, 40e6, sut_cpu)
            st = emu.status()["forward"]
            useful = float(st["useful_rate_bps"])
            mc = st["modcod"]
            ft = frame_time_s(mc, 40e6)
            self.res["carrier"] = {"modcod": mc, "useful_rate_bps": useful, "frame_time_s": ft}
            log(f"carrier: {mc['name']} useful {useful / 1e6:.2f} Mbit/s, frame {ft * 1e3:.3f} ms")
            log("(c)/(e) saturated at 110% of the ceiling, per packet size")

            def row(size: int, useful: float, ft: float, pid: int) -> dict[str, Any]:
                ceil = ceiling_ip_bps(useful, ft, size)
                tr = sink_trial(t, sink, 1.1 * ceil, 4.0, pid, gen_cpu, size, steady_after_s=1.0)
                got = tr.steady_rate_bps()
                log(f"    {size:5d} B: ceiling {ceil / 1e6:.2f} Mbit/s, sent "
                    f"{tr.send_rate_bps / 1e6:.2f}, delivered {got / 1e6:.2f} "
                    f"({100 * got / ceil:.2f}%)")  # fmt: skip
                return {
                    "ceiling_ip_bps": ceil,
                    "offered_bps": tr.offered_bps,
                    "sent_rate_bps": tr.send_rate_bps,
                    "delivered_ip_bps": got,
                    "fraction_pct": 100 * got / ceil,
                    "delivered_of_offered_pct": 100 * got / min(tr.send_rate_bps, ceil),
                    "lost_packets": tr.lost,
                    "generator_short": tr.send_rate_bps < 1.05 * ceil,
                }

            rows = {
                str(n): row(n, useful, ft, emu.pid) for n in (SIZES if self.want("e") else (1500,))
            }
            self.res["e"] = rows
            if self.want("e") and rows["64"]["generator_short"]:
                # the generator could not offer 110% of 40 Msym/s in 64-byte packets; the same
                # MODCOD at 10 Msym/s (a quarter of the packet rate) still checks the packing
                emu.stop()
                emu = self.carrier_emulator(t, 10e6, sut_cpu)
                st10 = emu.status()["forward"]
                u10, ft10 = float(st10["useful_rate_bps"]), frame_time_s(st10["modcod"], 10e6)
                self.res["e_64B_at_10Msym"] = row(64, u10, ft10, emu.pid)
            emu.stop()
            r1500 = rows["1500"]
            self.res["c"] = {
                "configured_useful_rate_bps": useful,
                "expected_ip_bps": r1500["ceiling_ip_bps"],
                "delivered_ip_bps": r1500["delivered_ip_bps"],
                "err_pct": 100 * (r1500["delivered_ip_bps"] / r1500["ceiling_ip_bps"] - 1),
            }

    def carrier_saturated(self) -> None:
        """(d)/(f): the carrier saturated (110%, 1500 B) for 5 minutes (60 s with --quick), default
        queue (1000 packets / 1.5 MB), a UDP socket receiver, nothing pinned: RSS and CPU."""
        with Topology("l2", prefix=unique_prefix(TAG)) as t:
            emu = self.emulator(t, symbol_rate_baud=40e6)
            st = emu.status()["forward"]
            ceil = ceiling_ip_bps(
                float(st["useful_rate_bps"]), frame_time_s(st["modcod"], 40e6), 1500
            )
            total = 60.0 if self.quick else 300.0
            log(f"(d)/(f) {total:.0f} s saturated (110%, 1500 B): RSS and CPU")
            samples: list[tuple[float, int]] = []

            def sample(duration: float) -> None:
                t0 = time.monotonic()
                while time.monotonic() - t0 < duration:
                    time.sleep(5.0)
                    samples.append((time.monotonic() - t0, proc_stat(emu.pid)[1]))

            _, rss0 = proc_stat(emu.pid)
            tr = trial(t, 1.1 * ceil, 1500, total, emu.pid, during=sample)
            rss30 = min(samples, key=lambda s: abs(s[0] - 30))[1] if samples else rss0
            rss_end = samples[-1][1] if samples else rss0
            self.res["d"] = {
                "duration_s": total,
                "rss_start_bytes": rss0,
                "rss_30s_bytes": rss30,
                "rss_end_bytes": rss_end,
                "growth_30s_to_end_pct": 100 * (rss_end / rss30 - 1),
                "samples": samples,
            }
            gbit = tr.received * 1500 * 8 / 1e9
            self.res.setdefault("f", {})["saturated_carrier"] = {
                "delivered_bps": tr.steady_rate_bps(),
                "cpu_s": tr.emu_cpu_s,
                "cpu_s_per_gbit": (tr.emu_cpu_s or 0) / gbit if gbit else None,
            }
            self.res["emulator_counters"] = emu.status()["forward"]["counters"]
            emu.stop()

    # (p) ----------------------------------------------------------------------------------
    def ports(self) -> None:
        """af_packet vs af_xdp ports: the emulator saturated (offered more than it carries; what
        it cannot read in time the kernel drops), delivered rate and CPU time per packet.

        (a)'s harness: generator on CPU 0, emulator on the last CPU, the sink at st0's ingress.
        The link is not the limit (fixed 10 Gbit/s) and the delay short (5 ms), so the figure is
        the ports and the data plane. The generator's sends carry partial checksums
        (`gso_to_sink`); the sink counts before any checksum check, so both kinds are counted
        alike."""
        dur = 2.0 if self.quick else 4.0
        gen_cpu, sut_cpu = cpu_layout()
        link = {**A_LINK, "delay_ms": 5.0}
        # Offered: more than either kind carried in trial runs (1500 B: the generator's maximum;
        # 64 B: 2.5 Mpkt/s, the GSO generator's ceiling on one core).
        offered = {1500: A_LINK_BPS, 64: 2.5e6 * 64 * 8}
        out: dict[str, Any] = {}
        for kind in ("af_packet", "af_xdp"):
            for size, rate in offered.items():
                with Topology("l2", prefix=unique_prefix(TAG)) as t:
                    sink = gso_to_sink(t)
                    emu = self.emulator(t, cpus=sut_cpu, port_kind=kind, **link)
                    got = [ln for ln in emu.log().splitlines() if "af_xdp queue" in ln]
                    tr = sink_trial(t, sink, rate, dur, emu.pid, gen_cpu, size=size)
                    causes = emulator_losses(emu)
                    emu.stop()
                pps = tr.received / dur
                row = {
                    "offered_bps": rate,
                    "sent_pps": tr.sent / dur,
                    "delivered_pps": pps,
                    "delivered_bps": pps * size * 8,
                    "cpu_s": tr.emu_cpu_s,
                    "cpu_ns_per_packet": (tr.emu_cpu_s or 0) / tr.received * 1e9
                    if tr.received
                    else None,
                    "attached": got,
                    "loss_causes": causes,
                    # nothing lost: the generator, not the emulator, set the rate (a lower bound)
                    "generator_limited": tr.lost == 0,
                }
                out.setdefault(kind, {})[size] = row
                log(f"(p) {kind} {size} B: sent {tr.sent / dur / 1e6:.3f} Mpkt/s, delivered "
                    f"{pps / 1e6:.3f} Mpkt/s = {pps * size * 8 / 1e9:.3f} Gbit/s, "
                    f"{row['cpu_ns_per_packet'] or 0:.0f} ns CPU/packet, lost "
                    f"{tr.lost} ({causes}) {got}")  # fmt: skip
        for size in offered:
            x, p = out["af_xdp"][size], out["af_packet"][size]
            out.setdefault("ratio", {})[size] = {
                "throughput": x["delivered_pps"] / p["delivered_pps"]
                if p["delivered_pps"]
                else None,
                "cpu_per_packet": (x["cpu_ns_per_packet"] or 0) / p["cpu_ns_per_packet"]
                if p["cpu_ns_per_packet"]
                else None,
            }
        self.res["p"] = out

    def load(self, tag: str) -> None:
        """This machine may be shared: record the load average next to each section."""
        self.res.setdefault("loadavg", {})[tag] = os.getloadavg()

    def run(self) -> dict[str, Any]:
        sweep_stale(TAG)
        self.load("start")
        self.generator()
        if self.want("a"):
            self.throughput()
            self.load("after_a")
        self.load("after_generator")
        if self.want("b"):
            self.delay()
            self.load("after_b")
        if self.want("c") or self.want("e"):
            self.carrier_rates()
        if self.want("d") or self.want("f"):
            self.carrier_saturated()
        if self.want("p"):
            self.ports()
            self.load("after_p")
        self.load("end")
        return self.res


def fmt_table(res: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str, str]] = []

    def add(name: str, value: str, target: str, ok: bool | None) -> None:
        rows.append((name, value, target, "" if ok is None else ("PASS" if ok else "FAIL")))

    la = res.get("loadavg", {})
    if la:
        add("load average (start / end)", f"{la['start'][0]:.2f} / {la.get('end', [0])[0]:.2f}",
            "", None)  # fmt: skip
    g = res.get("generator", {})
    if g:
        gen = f"{g['max_send_rate_bps'] / 1e9:.2f} Gbit/s; 64 B: {g['max_64B_pps'] / 1e3:.0f} kpps"
        add("(0) generator max over plain veth", gen, "", None)
        floor = f"{g['veth_probe_owd_p50_ms']:.3f} / {g['veth_probe_owd_p99_ms']:.3f} ms"
        add("(0) OWD p50 / p99 over plain veth (floor)", floor, "", None)
    ga = res.get("generator_a_harness")
    if ga:
        add(f"(0) (a)'s GSO generator on CPU {ga['cpu']} into the sink",
            f"{ga['max_send_rate_bps'] / 1e9:.2f} Gbit/s", "", None)  # fmt: skip
    a = res.get("a")
    if a:
        add(
            "(a) naive TUN forwarder zero-loss (median)",
            " / ".join(f"{r / 1e9:.3f}" for r in a["naive_rounds_bps"]) + " Gbit/s",
            "",
            None,
        )
        add(
            "(a) emulator zero-loss, 270 ms (median)",
            " / ".join(f"{r / 1e9:.3f}" for r in a["emulator_rounds_bps"]) + " Gbit/s",
            "",
            None,
        )
        ratio = a["ratio"] or 0.0
        note = " (emulator never lost a packet: a lower bound)" if a["limited_by_generator"] else ""
        rounds = " / ".join(f"{r:.2f}" for r in a["round_ratios"])
        add("(a) ratio emulator / naive, median of rounds", f"{ratio:.2f} ({rounds}){note}",
            ">= 2.0", ratio >= TARGETS["ratio"])  # fmt: skip
    b = res.get("b")
    if b:
        for key, label in (("idle_probes", "idle probes"), ("load_50pct", "50% load")):
            if key in b:
                x = b[key]
                ok = x["release_p99_ms"] <= TARGETS["delay_err_p99_ms"]
                val = f"{x['release_p50_ms']:.3f} / {x['release_p99_ms']:.3f} ms"
                add(f"(b) release error p50 / p99, {label}", val, "p99 <= 0.2 ms", ok)
                val = f"{x['err_p50_ms']:+.3f} / {x['err_p99_ms']:+.3f} ms"
                add(f"(b) end-to-end error p50 / p99, {label}", val, "", None)
    c = res.get("c")
    if c:
        add("(c) rate vs MODCOD rate (1500 B)", f"{c['err_pct']:+.2f}%", "within 1%",
            abs(c["err_pct"]) <= TARGETS["rate_err_pct"])  # fmt: skip
    d = res.get("d")
    if d:
        add(f"(d) RSS at 30 s / at {d['duration_s']:.0f} s",
            f"{d['rss_30s_bytes'] / 2**20:.1f} / {d['rss_end_bytes'] / 2**20:.1f} MiB "
            f"({d['growth_30s_to_end_pct']:+.1f}%)", "no growth",
            d["growth_30s_to_end_pct"] <= TARGETS["rss_growth_pct"])  # fmt: skip
    e = res.get("e")
    if e and len(e) > 1:
        for size, r in e.items():
            note = (
                f" (generator short: {r['delivered_of_offered_pct']:.1f}% of what it sent)"
                if r["generator_short"]
                else ""
            )
            add(f"(e) {size:>4} B delivered / ceiling", f"{r['fraction_pct']:.2f}%{note}", ">= 99%",
                r["fraction_pct"] >= TARGETS["ceiling_fraction_pct"])  # fmt: skip
    e64 = res.get("e_64B_at_10Msym")
    if e64:
        ok = e64["fraction_pct"] >= TARGETS["ceiling_fraction_pct"]
        add("(e)   64 B, same MODCOD at 10 Msym/s", f"{e64['fraction_pct']:.2f}%", ">= 99%", ok)
    f = res.get("f", {})
    for key, label in (
        ("saturated_carrier", "saturated carrier"),
        ("at_a_rate", "at (a) rate"),
        ("naive_at_its_rate", "naive forwarder"),
    ):
        if key in f and f[key]["cpu_s_per_gbit"] is not None:
            add(
                f"(f) CPU s per delivered Gbit, {label}",
                f"{f[key]['cpu_s_per_gbit']:.2f} s",
                "",
                None,
            )
    p = res.get("p")
    if p:
        for size, r in p["ratio"].items():
            for kind in ("af_packet", "af_xdp"):
                x = p[kind][size]
                note = " (nothing lost: generator-limited)" if x["generator_limited"] else ""
                add(f"(p) {kind}, {size} B: delivered, CPU per packet",
                    f"{x['delivered_pps'] / 1e6:.3f} Mpkt/s = {x['delivered_bps'] / 1e9:.3f} "
                    f"Gbit/s, {x['cpu_ns_per_packet'] or 0:.0f} ns{note}", "", None)  # fmt: skip
            ratios = f"{r['throughput'] or 0:.2f}, {r['cpu_per_packet'] or 0:.2f}"
            add(f"(p) af_xdp / af_packet, {size} B: throughput, CPU per packet", ratios, "", None)
    w = [max(len(r[i]) for r in rows) for i in range(4)] if rows else [0, 0, 0, 0]
    head = ("figure", "measured", "target", "")
    w = [max(w[i], len(head[i])) for i in range(4)]
    lines = ["  ".join(h.ljust(w[i]) for i, h in enumerate(head)), "  ".join("-" * x for x in w)]
    lines += ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="(d) runs 60 s instead of 5 minutes")
    ap.add_argument("--json", default=str(HERE / "results" / "emulator-bench.json"))
    ap.add_argument("--only", default="", help="comma-separated subset of a,b,c,d,e,f,p")
    a = ap.parse_args(argv)
    only = {x.strip() for x in a.only.split(",") if x.strip()}
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / "work"
    bench = Bench(a.quick, only, work)
    try:
        res = bench.run()
    finally:
        partial = bench.res
        partial["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        partial["targets"] = TARGETS
        out.write_text(json.dumps(partial, indent=2))
    print()
    print(fmt_table(res))
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
