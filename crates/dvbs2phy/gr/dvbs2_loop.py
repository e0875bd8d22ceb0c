#!/usr/bin/python3
"""The long-running GNU Radio flowgraph of the PHY loop (crates/dvbs2phy/src/phy_loop.rs).

One flowgraph per MODCOD, frame size, pilots and Es/N0, kept running: gr-dtv's blocks are built
for one MODCOD (CCM) and reconfiguring them means stopping the stream; starting a flowgraph takes
about 0.25 s on this machine (process start included), fine for a MODCOD change every few seconds,
not per frame. A loop at another Es/N0 is another flowgraph.

    BBFRAMEs in (a pipe, --in-fd: K_bch bytes per frame, one bit per byte, MSB first: the
    BBHEADER and data field as the emulator builds them)
    -> BB scrambler (EN 302 307-1 5.2.2) -> BCH (5.3.1) -> LDPC (5.3.2) -> bit interleaver (5.3.3)
    -> mapper (5.4) -> PL framing, pilots, PL scrambling (5.5) -> gr-channels AWGN at --esn0
    -> IQ out (ZeroMQ PUSH, --out: complex64, one sample per symbol).

The chain after the BBHEADER inserter is the calibration's (emulator/phy/dvbs2_tx.py), so the loop
meets the channel the PER tables were measured on. The IQ is a stream: the frames come out in the
order they went in, after PAD noise-only symbols (less the few the channel's resampler holds
back); the Rust side finds the first PLHEADER and cuts the stream into frames, so frame k of the
output is BBFRAME k of the input. The last frame's tail stays in the channel until more input
arrives: the Rust side pushes filler frames when it waits (PhyLoop's flush).

--rf replaces the symbol-level channel with the RF path (rf_path.py): RRC pulse shaping at --sps
samples per symbol (--rolloff), AWGN at --esn0, a carrier offset (--freq-offset, cycles per
symbol) and a sample-clock offset (--clock-ppm) at the sample rate, and a receive front end
(timing recovery, optional FLL) back to one sample per symbol. Pilots are required (the receiver
tracks the carrier on them).

--sigmf PATH also writes the IQ to PATH.sigmf-data (cf32_le) with its PATH.sigmf-meta (SigMF 1.0
core fields): the channel's output, one sample per symbol, or with --rf the transmitted waveform
(before the channel, --sps samples per symbol, sample rate --symbol-rate x --sps), which an SDR
can transmit as it is.

--underrun-at N --underrun-samples D drops D samples once, from sample N of the stream after the
channel (at the sample rate on the RF path, before the front end): an SDR's underrun or dropped
USB buffer, emulated (underrun.py); the Rust side then searches the next PLHEADER.

--sdr-tx ARGS --sdr-rx ARGS (with --rf) replace gr-channels by a SoapySDR sink and source
(sdr.py) at --center-freq-hz, sample rate --symbol-rate x --sps, gains --tx-gain-db and
--rx-gain-db; no noise is added (the link's own). Exits at once, naming the arguments, when no
device matches. Never run with hardware here.

--continuous DUMMY sends the dummy PLFRAME in file DUMMY (cf32, built by the Rust side) whenever
no data frame is ready, paced at --symbol-rate (continuous.py): an SDR sink is fed without gaps,
as by a real modulator (EN 302 307-1 section 5.5.1); the Rust side skips the dummies.

Prints one JSON line on stdout once the flowgraph runs ({"ready": true, ...}); exits when stdin
closes (the Rust side's end). Debian's gnuradio imports only in /usr/bin/python3.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import numpy as np

try:
    from gnuradio import blocks, gr, zeromq
except ImportError as err:  # pragma: no cover - depends on the machine
    sys.exit(f"GNU Radio is not importable ({err}); run with /usr/bin/python3 (scripts/setup.sh)")

# The calibration transmitter's tables (MODCOD ids, constellations, frame geometry).
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "emulator" / "phy"))
import continuous  # noqa: E402
import dvbs2_tx as tx  # noqa: E402
import rf_path  # noqa: E402
import sdr  # noqa: E402
import underrun  # noqa: E402


def sigmf_meta(args: argparse.Namespace, geo: dict[str, int]) -> dict[str, object]:
    mod, rate = tx.MODS[args.modcod - 1], tx.RATES[args.modcod - 1]
    sps = args.sps if args.rf else 1
    what = (
        f"the transmitted waveform (before the channel), RRC roll-off {args.rolloff}, "
        f"{sps} samples per symbol"
        if args.rf
        else f"the channel's output (AWGN Es/N0 {args.esn0} dB), one sample per symbol"
    )
    return {
        "global": {
            "core:datatype": "cf32_le",
            "core:sample_rate": args.symbol_rate * sps,
            "core:version": "1.0.0",
            "core:recorder": "satlab dvbs2_loop.py (GNU Radio 3.10 gr-dtv, gr-channels)",
            "core:description": (
                f"DVB-S2 MODCOD {args.modcod} ({mod} {rate}), {args.frame} frames, pilots "
                f"{'on' if args.pilots else 'off'}, PLFRAME {geo['symbols']} symbols, gold code "
                f"{args.goldcode}: {what}"
            ),
        },
        "captures": [{"core:sample_start": 0}],
        "annotations": [],
    }


def build(args: argparse.Namespace) -> gr.top_block:
    geo = tx.geometry(args.modcod, args.frame, args.pilots)
    tb = gr.top_block()
    # The BBFRAMEs come through a pipe, read by a blocking read(): a frame enters the chain the
    # moment it is written. gr-zeromq's pull_source (used before) returns empty after its
    # receive timeout, and in GNU Radio 3.10 a frame pushed after about 50 ms of silence then
    # waited for the scheduler's next wake-up: 100-320 ms late, whatever the timeout.
    src = blocks.file_descriptor_source(gr.sizeof_char, args.in_fd, False)
    chain = tx.bbframe_to_symbols(args.modcod, args.frame, args.pilots, args.goldcode)
    # Dummy PLFRAMEs between the data frames (continuous.py), before the lead-in so the block
    # counts whole frames from its first symbol.
    fill = []
    if args.continuous:
        dummy = np.fromfile(args.continuous, dtype=np.complex64)
        fill = [continuous.Continuous(geo["symbols"], dummy, args.symbol_rate)]
    chain = [*chain, *fill]
    lead = blocks.delay(gr.sizeof_gr_complex, tx.PAD)
    sink = zeromq.push_sink(gr.sizeof_gr_complex, 1, args.output, 100, False, -1)
    # An emulated SDR underrun after the channel (before the front end on the RF path).
    gap = [underrun.Underrun(args.underrun_at, args.underrun_samples)]
    gap = gap if args.underrun_samples > 0 else []
    # A Python block must stay referenced from Python while the flowgraph runs (else it is
    # collected and the scheduler calls into freed memory: a segmentation fault).
    tb.keep = gap + fill
    if args.sdr_tx:
        # The SDR pair in place of gr-channels (sdr.py): the waveform leaves through the sink
        # and comes back through the source; the two streams are not connected here.
        rate = args.symbol_rate * args.sps
        shape = rf_path.shaping(args.sps, args.rolloff)
        tx_side = sdr.sink(args.sdr_tx, rate, args.center_freq_hz, args.tx_gain_db)
        rx_side = sdr.source(args.sdr_rx, rate, args.center_freq_hz, args.rx_gain_db)
        rx = rf_path.front_end(args.sps, args.rolloff, args.fll_bandwidth)
        tb.connect(src, *chain, lead, shape, *tx_side)
        tb.connect(rx_side, *gap, *rx, sink)
        recorded = shape
    elif args.rf:
        chan = rf_path.channel(args.esn0, args.freq_offset, args.clock_ppm, args.sps, args.seed)
        shape = rf_path.shaping(args.sps, args.rolloff)
        rx = rf_path.front_end(args.sps, args.rolloff, args.fll_bandwidth)
        tb.connect(src, *chain, lead, shape, chan, *gap, *rx, sink)
        recorded = shape
    else:
        chan = tx.awgn_channel(10 ** (-args.esn0 / 10), 0.0, args.seed)
        tb.connect(src, *chain, lead, chan, *gap, sink)
        recorded = chan
    if args.sigmf:
        data = blocks.file_sink(gr.sizeof_gr_complex, args.sigmf + ".sigmf-data", False)
        data.set_unbuffered(False)
        tb.connect(recorded, data)
        Path(args.sigmf + ".sigmf-meta").write_text(json.dumps(sigmf_meta(args, geo), indent=2))
    return tb


def check_rf_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses RF settings out of range (the Rust side checks them first: loop errors)."""
    if not args.rf:
        return
    if not args.pilots:
        p.error("--rf needs --pilots: the receiver tracks the carrier on the pilot blocks")
    if not 2 <= args.sps <= 16:
        p.error(f"--sps {args.sps} is outside [2, 16]")
    if args.rolloff not in (0.2, 0.25, 0.35):
        p.error(f"--rolloff {args.rolloff} is not one of 0.2, 0.25, 0.35 (EN 302 307-1 5.6)")
    if abs(args.freq_offset) > 0.01:
        p.error(f"--freq-offset {args.freq_offset} is outside [-0.01, 0.01] cycles per symbol")
    if not 0 <= args.fll_bandwidth <= 0.05:
        p.error(f"--fll-bandwidth {args.fll_bandwidth} is outside [0, 0.05]")
    if abs(args.clock_ppm) > 200:
        p.error(f"--clock-ppm {args.clock_ppm} is outside [-200, 200]")


def check_sdr_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses SDR settings out of range (the Rust side checks them first: loop errors)."""
    if not (args.sdr_tx or args.sdr_rx):
        return
    if not (args.sdr_tx and args.sdr_rx):
        p.error("--sdr-tx and --sdr-rx go together (the RF path's two ends)")
    if not args.rf:
        p.error("--sdr-tx/--sdr-rx need --rf (the SDR pair replaces the RF path's channel)")
    if args.freq_offset or args.clock_ppm:
        p.error("--freq-offset/--clock-ppm are gr-channels' settings, not with --sdr-tx")
    if not 1e6 <= args.center_freq_hz <= 6e9:
        p.error(f"--center-freq-hz {args.center_freq_hz} is outside [1e6, 6e9]")
    for name, gain in (("--tx-gain-db", args.tx_gain_db), ("--rx-gain-db", args.rx_gain_db)):
        if not 0 <= gain <= 90:
            p.error(f"{name} {gain} is outside [0, 90]")
    if not 1e3 <= args.symbol_rate * args.sps <= 1e8:
        p.error(f"--symbol-rate x --sps = {args.symbol_rate * args.sps} is outside [1e3, 1e8]")


def check_underrun_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not 0 <= args.underrun_at <= 10**9:
        p.error(f"--underrun-at {args.underrun_at} is outside [0, 1e9] samples")
    if not 0 <= args.underrun_samples <= 10**7:
        p.error(f"--underrun-samples {args.underrun_samples} is outside [0, 1e7]")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    tx.frame_args(p, "normal")
    p.add_argument("--esn0", type=float, required=True, help="Es/N0 dB, -10 to 40")
    p.add_argument("--seed", type=int, default=1, help="the channel's noise seed")
    p.add_argument("--in-fd", type=int, required=True, help="the pipe the BBFRAMEs come on")
    p.add_argument("--out", dest="output", required=True, help="ZeroMQ address for the IQ")
    p.add_argument("--sigmf", help="also write the IQ to SIGMF.sigmf-data/.sigmf-meta")
    p.add_argument(
        "--symbol-rate", type=float, default=1e6, help="symbol rate, Hz (SigMF, --continuous)"
    )
    p.add_argument(
        "--continuous",
        metavar="DUMMY",
        help="send the dummy PLFRAME in file DUMMY (cf32) whenever no frame is ready",
    )
    p.add_argument("--rf", action="store_true", help="the RF path (rf_path.py), needs --pilots")
    p.add_argument("--sps", type=int, default=4, help="--rf: samples per symbol, 2-16")
    p.add_argument("--rolloff", type=float, default=0.2, help="--rf: 0.2, 0.25 or 0.35")
    p.add_argument("--freq-offset", type=float, default=0.0, help="--rf: cycles per symbol")
    p.add_argument("--fll-bandwidth", type=float, default=0.0, help="--rf: 0 (off) to 0.05")
    p.add_argument("--clock-ppm", type=float, default=0.0, help="--rf: -200 to 200")
    p.add_argument(
        "--underrun-at",
        type=int,
        default=0,
        help="emulated SDR underrun: drop samples from this one on (after the channel)",
    )
    p.add_argument(
        "--underrun-samples", type=int, default=0, help="how many samples it drops (0: none)"
    )
    p.add_argument("--sdr-tx", help="--rf: SoapySDR device arguments of the transmitter")
    p.add_argument("--sdr-rx", help="--rf: SoapySDR device arguments of the receiver")
    p.add_argument("--center-freq-hz", type=float, default=0.0, help="--sdr-*: 1e6 to 6e9")
    p.add_argument("--tx-gain-db", type=float, default=0.0, help="--sdr-tx: 0 to 90")
    p.add_argument("--rx-gain-db", type=float, default=0.0, help="--sdr-rx: 0 to 90")
    args = p.parse_args(argv)
    tx.check_frame_args(p, args)
    check_rf_args(p, args)
    check_sdr_args(p, args)
    check_underrun_args(p, args)
    try:
        geo = tx.geometry(args.modcod, args.frame, args.pilots)
    except ValueError as err:
        p.error(str(err))
    try:
        tb = build(args)
    except sdr.NoDevice as err:
        sys.exit(str(err))  # the Rust side shows the end of stderr
    tb.start()
    print(json.dumps({"ready": True, "lead_in": tx.PAD, **geo}), flush=True)
    with contextlib.suppress(ValueError, OSError):
        sys.stdin.read()  # until the Rust side closes its end (or dies)
    tb.stop()
    tb.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
