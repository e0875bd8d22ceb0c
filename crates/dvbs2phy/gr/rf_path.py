"""The PHY loop's RF path (dvbs2_loop.py --rf): the PL symbols pulse-shaped to a baseband
waveform, a channel at the sample rate, and a receive front end that brings the waveform back
to one sample per symbol, so the receiver meets what it would meet behind a real tuner.

    PL symbols (1 per symbol) -> root-raised-cosine interpolator (sps samples per symbol,
    EN 302 307-1 5.6 baseband shaping, roll-off 0.35/0.25/0.20)
    -> gr-channels: AWGN at Es/N0, carrier frequency offset, sample-clock offset
                                                                   (an SDR pair would sit here)
    -> [FLL band edge, optional] -> symbol_sync (Gardner timing error detector, polyphase
    matched filter) -> 1 sample per symbol.

The pulse has unit energy, so AWGN of complex variance N0 per sample gives Es/N0 = 1/N0 at the
matched filter's output, as on the symbol-level channel. The receiver then finds the PLHEADER
and tracks the residual carrier phase and frequency from the PLHEADER and pilot blocks
(crates/dvbs2phy/src/receiver.rs, `track_frequency`), so the RF path needs pilots.

Choices (measured on this machine with the loop benchmark, crates/dvbs2phy/README.md "The RF
path", which tabulates the loss per MODCOD):
- 4 samples per symbol by default: the Gardner detector needs 2, the polyphase matched filter
  interpolates between them; 4 leaves the RRC's transition band room at any roll-off.
- symbol_sync loop bandwidth 0.005 (normalised to the symbol rate), damping 1: converges within
  the lead-in and the first frame. Narrower loops did not help (32APSK 8/9 short at 17.5 dB
  lost 2, 4 and 7 of 100 frames at 0.005, 0.002 and 0.001). The front end's loss, 0.1-0.8 dB at
  a carrier offset of 2e-3 cycles per symbol, is the carrier's turn across the known blocks,
  not timing jitter: without an offset the receiver's Es/N0 estimate matches the symbol-level
  channel's (16APSK 4/5 normal frames at 12.5 dB: 12.58 against 12.59 dB).
- Sample clocks: the timing loop absorbs an offset between the transmitter's and the receiver's
  clocks (150 short 8PSK frames at 10 dB with the clocks 100 ppm apart, 125 symbols of drift,
  all delivered): the stream of symbols stays whole, no symbol is slipped or repeated.
- No FLL by default: the receiver's own tracking handles offsets up to 1/90 cycle per symbol
  (the PLHEADER's halves, 45 symbols apart); the band-edge FLL, needed only beyond that, jitters
  by +-5e-4 cycle per symbol at roll-off 0.2 with a loop bandwidth of 0.002-0.01 and converges
  over some 10^5 symbols at 0.0005 (`--fll-bandwidth`, 0 = off). At 0.0005 it removes most of
  a 5e-3 offset before the receiver (16APSK 4/5 normal frames at 12.5 dB: estimate 12.28 dB
  against 10.19 without it, 199 of 200 frames delivered; at 0.002, 34 of 200).
"""

from __future__ import annotations

import math

from gnuradio import channels, digital
from gnuradio import filter as grfilter

# Taps of the RRC pulse: this many symbols long.
SPAN_SYMBOLS = 11
# Polyphase filters of symbol_sync's matched-filter interpolator.
NFILTERS = 32
TIMING_LOOP_BW = 0.005


def rrc_taps(sps: int, rolloff: float) -> list[float]:
    """A root-raised-cosine pulse at `sps` samples per symbol, of unit energy."""
    taps = grfilter.firdes.root_raised_cosine(1.0, sps, 1.0, rolloff, SPAN_SYMBOLS * sps)
    norm = math.sqrt(sum(t * t for t in taps))
    return [t / norm for t in taps]


def shaping(sps: int, rolloff: float) -> object:
    """The transmitter's pulse-shaping interpolator: one symbol in, `sps` samples out."""
    return grfilter.interp_fir_filter_ccf(sps, rrc_taps(sps, rolloff))


def channel(esn0_db: float, freq_offset: float, clock_ppm: float, sps: int, seed: int) -> object:
    """AWGN at Es/N0 (per-sample variance N0 against the unit-energy pulse), a carrier offset in
    cycles per symbol (gr-channels takes it per sample) and the receiver's sample clock off the
    transmitter's by `clock_ppm` parts per million (gr-channels' epsilon, its resampler)."""
    return channels.channel_model(
        noise_voltage=math.sqrt(10 ** (-esn0_db / 10)),
        frequency_offset=freq_offset / sps,
        epsilon=1.0 + clock_ppm * 1e-6,
        taps=[1.0 + 0j],
        noise_seed=seed,
        block_tags=False,
    )


def front_end(sps: int, rolloff: float, fll_bandwidth: float) -> list[object]:
    """The receive front end, `sps` samples per symbol in, one out."""
    blocks = []
    if fll_bandwidth > 0:
        blocks.append(digital.fll_band_edge_cc(sps, rolloff, 2 * sps + 1, fll_bandwidth))
    mf = grfilter.firdes.root_raised_cosine(
        NFILTERS, NFILTERS * sps, 1.0, rolloff, SPAN_SYMBOLS * sps * NFILTERS
    )
    blocks.append(
        digital.symbol_sync_cc(
            digital.TED_GARDNER,
            sps,
            TIMING_LOOP_BW,
            1.0,  # damping
            1.0,  # TED gain
            1.5,  # maximum deviation from sps, samples
            1,  # output samples per symbol
            digital.constellation_qpsk().base(),  # unused by the Gardner detector
            digital.IR_PFB_MF,
            NFILTERS,
            mf,
        )
    )
    return blocks
