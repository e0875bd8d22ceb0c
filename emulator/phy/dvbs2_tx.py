#!/usr/bin/python3
"""DVB-S2 transmitter and channel in GNU Radio 3.10 (gr-dtv, gr-channels), for the waveform-level
calibration of the emulator's PER(Es/N0) tables (`satlab phy calibrate`, crates/dvbs2phy).

Chain (ETSI EN 302 307-1 V1.4.1, Section 5): random MPEG-2 TS packets -> BBFRAME header (5.1.6)
-> BB scrambler (5.2.2) -> BCH (5.3.1) -> LDPC (5.3.2) -> bit interleaver (5.3.3) -> mapper with
the standard's APSK radii per code rate (5.4) -> PL framing, pilots, PL scrambling (5.5) ->
gr-channels channel model (AWGN at the given Es/N0; frequency offset and phase noise optional).
gr-dtv's PL framer zero-stuffs to 2 samples per symbol (for a pulse-shaping filter); one sample
per symbol is kept, which is the matched-filter output of an ideal Nyquist channel.

Outputs: the received IQ (complex64, GNU Radio's file format: interleaved little-endian
float32 I/Q, one sample per symbol; PAD noise-only symbols, then the PLFRAMEs back to back) and
the reference: every transmitted BBFRAME (before BB scrambling), packed MSB first, K_bch / 8
bytes per frame. A JSON line on stdout gives the frame geometry and the noise added.

Debian's gnuradio is importable only from /usr/bin/python3 (not the project's venv).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

try:
    from gnuradio import blocks, channels, dtv, gr
except ImportError as err:  # pragma: no cover - depends on the machine
    sys.exit(
        f"GNU Radio is not importable ({err}); run with /usr/bin/python3 after scripts/setup.sh"
    )

# EN 302 307-1 Table 13 MODCOD ids (the emulator's dvbs2_modcod.txt numbering).
MODS = ["QPSK"] * 11 + ["8PSK"] * 6 + ["16APSK"] * 6 + ["32APSK"] * 5
RATES = (
    ["1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "4/5", "5/6", "8/9", "9/10"]
    + ["3/5", "2/3", "3/4", "5/6", "8/9", "9/10"]
    + ["2/3", "3/4", "4/5", "5/6", "8/9", "9/10"]
    + ["3/4", "4/5", "5/6", "8/9", "9/10"]
)
# Zero symbols before the first frame (see run()); the receiver finds the first PLHEADER itself.
PAD = 64
BITS = {"QPSK": 2, "8PSK": 3, "16APSK": 4, "32APSK": 5}
CONS = {
    "QPSK": dtv.MOD_QPSK,
    "8PSK": dtv.MOD_8PSK,
    "16APSK": dtv.MOD_16APSK,
    "32APSK": dtv.MOD_32APSK,
}
# K_bch per rate (EN 302 307-1 Tables 5a and 5b).
KBCH_NORMAL = {
    "1/4": 16008, "1/3": 21408, "2/5": 25728, "1/2": 32208, "3/5": 38688, "2/3": 43040,
    "3/4": 48408, "4/5": 51648, "5/6": 53840, "8/9": 57472, "9/10": 58192,
}  # fmt: skip
KBCH_SHORT = {
    "1/4": 3072, "1/3": 5232, "2/5": 6312, "1/2": 7032, "3/5": 9552, "2/3": 10632,
    "3/4": 11712, "4/5": 12432, "5/6": 13152, "8/9": 14232,
}  # fmt: skip


def rate_enum(rate: str) -> object:
    return getattr(dtv, "C" + rate.replace("/", "_"))


def geometry(modcod: int, frame: str, pilots: bool) -> dict[str, int]:
    """Frame geometry of one PLFRAME (EN 302 307-1 5.5): symbols, K_bch."""
    mod, rate = MODS[modcod - 1], RATES[modcod - 1]
    nldpc = 64800 if frame == "normal" else 16200
    kbch = (KBCH_NORMAL if frame == "normal" else KBCH_SHORT).get(rate)
    if kbch is None:
        raise ValueError(
            f"modcod {modcod} ({mod} {rate}) has no {frame} frame (EN 302 307-1 Table 5b)"
        )
    slots = nldpc // BITS[mod] // 90
    pilot_blocks = (slots - 1) // 16 if pilots else 0
    return {"symbols": 90 + slots * 90 + pilot_blocks * 36, "kbch": kbch, "nldpc": nldpc}


def bbframe_to_symbols(modcod: int, frame: str, pilots: bool, goldcode: int) -> list[object]:
    """gr-dtv's chain from BBFRAMEs (unpacked bits) to PL symbols, one sample per symbol: BB
    scrambler, BCH, LDPC, bit interleaver, mapper, PL framing (shared with the PHY loop's
    flowgraph, crates/dvbs2phy/gr/dvbs2_loop.py)."""
    mod, rate = MODS[modcod - 1], RATES[modcod - 1]
    fs = dtv.FECFRAME_NORMAL if frame == "normal" else dtv.FECFRAME_SHORT
    r, cons = rate_enum(rate), CONS[mod]
    return [
        dtv.dvb_bbscrambler_bb(dtv.STANDARD_DVBS2, fs, r),
        dtv.dvb_bch_bb(dtv.STANDARD_DVBS2, fs, r),
        dtv.dvb_ldpc_bb(dtv.STANDARD_DVBS2, fs, r, dtv.MOD_OTHER),
        dtv.dvbs2_interleaver_bb(fs, r, cons),
        dtv.dvbs2_modulator_bc(fs, r, cons, dtv.INTERPOLATION_OFF),
        dtv.dvbs2_physical_cc(fs, r, cons, dtv.PILOTS_ON if pilots else dtv.PILOTS_OFF, goldcode),
        blocks.keep_m_in_n(gr.sizeof_gr_complex, 1, 2, 0),
    ]


def awgn_channel(n0: float, freq_offset: float, seed: int) -> object:
    """gr-channels' channel model: AWGN of complex variance N0 (Es = 1: gr-dtv's constellations
    have unit mean energy, so noise voltage sqrt(N0)), an optional frequency offset."""
    return channels.channel_model(
        noise_voltage=math.sqrt(n0),
        frequency_offset=freq_offset,
        epsilon=1.0,
        taps=[1.0 + 0j],
        noise_seed=seed,
        block_tags=False,
    )


def run(args: argparse.Namespace) -> dict[str, object]:
    mod, rate = MODS[args.modcod - 1], RATES[args.modcod - 1]
    geo = geometry(args.modcod, args.frame, args.pilots)
    fs = dtv.FECFRAME_NORMAL if args.frame == "normal" else dtv.FECFRAME_SHORT
    r = rate_enum(rate)
    # Enough TS packets for the frames asked for plus a few (the chain holds partial frames).
    nbytes = (args.frames + 2) * geo["kbch"] // 8
    npkts = nbytes // 188 + 2
    rng = np.random.default_rng(args.seed)
    ts = rng.integers(0, 256, size=(npkts, 188), dtype=np.uint8)
    ts[:, 0] = 0x47
    tb = gr.top_block()
    src = blocks.vector_source_b(ts.reshape(-1).tolist(), False)
    bbh = dtv.dvb_bbheader_bb(
        dtv.STANDARD_DVBS2, fs, r, dtv.RO_0_20, dtv.INPUTMODE_NORMAL, dtv.INBAND_OFF, 168, 4000000
    )
    chain = bbframe_to_symbols(args.modcod, args.frame, args.pilots, args.goldcode)
    # gr-channels' channel model (its fractional resampler) swallows its first few samples: a
    # lead-in of PAD zero symbols (noise only at the output) keeps the first frame whole.
    lead = blocks.delay(gr.sizeof_gr_complex, PAD)
    # Data symbols have unit mean energy (gr-dtv normalises every constellation): Es = 1.
    n0 = 10 ** (-args.esn0 / 10) if args.esn0 is not None else 0.0
    chan = awgn_channel(n0, args.freq_offset, args.seed + 1)
    head_iq = blocks.head(gr.sizeof_gr_complex, PAD + args.frames * geo["symbols"])
    sink_iq = blocks.file_sink(gr.sizeof_gr_complex, args.out_iq, False)
    sink_iq.set_unbuffered(False)
    pack = blocks.pack_k_bits_bb(8)
    head_ref = blocks.head(gr.sizeof_char, args.frames * geo["kbch"] // 8)
    sink_ref = blocks.file_sink(gr.sizeof_char, args.out_ref, False)
    tb.connect(src, bbh, *chain)
    one = chain[-1]
    if args.phase_noise > 0:
        # gr-channels phase_noise_gen: low-pass filtered Gaussian phase (magnitude in radians,
        # alpha the filter's pole).
        pn = channels.phase_noise_gen(args.phase_noise, args.phase_noise_alpha)
        tb.connect(one, lead, pn, chan)
    else:
        tb.connect(one, lead, chan)
    tb.connect(chan, head_iq, sink_iq)
    tb.connect(bbh, pack, head_ref, sink_ref)
    tb.run()
    sink_iq.close()
    sink_ref.close()
    return {
        "modcod": args.modcod,
        "modulation": mod,
        "rate": rate,
        "frame": args.frame,
        "pilots": args.pilots,
        "frames": args.frames,
        "esn0_db": args.esn0,
        "n0": n0,
        "freq_offset": args.freq_offset,
        "phase_noise": args.phase_noise,
        "lead_in": PAD,
        **geo,
    }


def frame_args(p: argparse.ArgumentParser, frame: str) -> None:
    """The options naming the PLFRAMEs (shared with crates/dvbs2phy/gr/dvbs2_loop.py)."""
    p.add_argument("--modcod", type=int, required=True, help="EN 302 307-1 Table 13 id, 1-28")
    p.add_argument("--frame", choices=["normal", "short"], default=frame)
    p.add_argument("--pilots", action="store_true")
    p.add_argument("--goldcode", type=int, default=0, help="PL scrambling code n, 0-262141")


def check_frame_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses --modcod, --goldcode or --esn0 (when given) out of range."""
    if not 1 <= args.modcod <= 28:
        p.error(f"--modcod {args.modcod} is outside [1, 28]")
    if args.esn0 is not None and not -10.0 <= args.esn0 <= 40.0:
        p.error(f"--esn0 {args.esn0} is outside [-10, 40] dB")
    if not 0 <= args.goldcode <= 262141:
        p.error(f"--goldcode {args.goldcode} is outside [0, 262141]")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    frame_args(p, "short")
    p.add_argument("--esn0", type=float, default=None, help="Es/N0 dB (absent: no noise)")
    p.add_argument("--frames", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--freq-offset", type=float, default=0.0, help="cycles per symbol")
    p.add_argument(
        "--phase-noise", type=float, default=0.0, help="gr-channels phase noise magnitude"
    )
    p.add_argument("--phase-noise-alpha", type=float, default=0.1)
    p.add_argument("--out-iq", required=True)
    p.add_argument("--out-ref", required=True)
    args = p.parse_args(argv)
    check_frame_args(p, args)
    if not 1 <= args.frames <= 1_000_000:
        p.error(f"--frames {args.frames} is outside [1, 1000000]")
    if abs(args.freq_offset) > 0.01:
        p.error(f"--freq-offset {args.freq_offset} is outside [-0.01, 0.01] cycles per symbol")
    try:
        info = run(args)
    except ValueError as err:
        p.error(str(err))
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
