"""The emulator offered more than one core forwards: the forward thread steps down from SCHED_FIFO
before the kernel's real-time throttling freezes it (emulator/src/rt_guard.rs), keeps forwarding,
and goes back to SCHED_FIFO once the load is gone."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from emuconfig import base_config
from loadgen import cpu_layout, gso_send_argv, gso_to_sink, pinned
from netns import Emulator, Topology

pytestmark = pytest.mark.integration

STEP_DOWN = "forward thread saturated: SCHED_OTHER nice -10"
STEP_UP = "forward thread load fell: back to SCHED_FIFO"


def kernel_throttles_realtime() -> bool:
    return Path("/proc/sys/kernel/sched_rt_runtime_us").read_text().strip() != "-1"


def wait_for_log(emu: Emulator, text: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in emu.log():
            return True
        time.sleep(0.1)
    return False


def test_a_saturated_thread_steps_down_from_realtime_keeps_forwarding_and_steps_back(
    topo: Topology, tmp_path: Path
) -> None:
    gen_cpu, emu_cpu = cpu_layout()
    if emu_cpu is None:
        pytest.skip("needs 2 CPUs: the load must fill a core of the emulator's own")
    if not kernel_throttles_realtime():
        pytest.skip("sched_rt_runtime_us is -1: the kernel never throttles real-time threads")
    sink = gso_to_sink(topo)
    cfg = base_config(tmp_path)
    # a 10 Gbit/s link with a short delay: the emulator's CPU, not the link, is the limit
    cfg["forward"] = {"kind": "fixed", "rate_bps": 1e10, "delay_ms": 5.0}
    with Emulator(topo, cfg, workdir=tmp_path, cpus=emu_cpu) as emu:
        assert "forward thread: SCHED_FIFO" in emu.log()
        # 10 Gbit/s of 1500-byte packets for 3 s, about twice what one core forwards: the guard
        # judges a whole second at more than 85 % of a CPU
        send = topo.spawn(
            topo.gw,
            pinned(gen_cpu, gso_send_argv(topo.st_ip, 10e9, 1500, 3.0)),
            stdout=subprocess.PIPE,
        )
        try:
            send.communicate(timeout=30)
        finally:
            topo.stop(send)
        assert STEP_DOWN in emu.log(), emu.log()
        assert emu.metric("realtime_stepdowns_total", "forward") >= 1
        assert emu.metric("realtime_stepdowns_total", "return") == 0  # the idle direction
        # it kept forwarding at a high rate (the rate itself is the benchmark's business)
        assert sink.packets() > 100_000
        # idle again: back to real time once a second of samples is under 70 %
        assert wait_for_log(emu, STEP_UP, 5.0), emu.log()
        assert emu.status()["forward"]["counters"]["delivered_packets"] > 100_000
