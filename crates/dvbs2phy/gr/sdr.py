"""The SDR pair in place of gr-channels on the RF path (dvbs2_loop.py --sdr-tx/--sdr-rx): the
pulse-shaped waveform to a SoapySDR sink, the receive front end fed from a SoapySDR source, both
at the sample rate symbol rate x sps and one centre frequency (gr-soapy, Debian's GNU Radio 3.10).

Wiring (crates/dvbs2phy/README.md, "Real SDRs"): TX port to RX port over coax through 30-60 dB of
fixed attenuation and a DC block; never an antenna. Not run with hardware: this machine has no
SoapySDR device module and no radio, so the one thing tested is the refusal when no device
matches the arguments.
"""

from __future__ import annotations

from gnuradio import blocks, soapy

# The RRC waveform's samples have unit energy per symbol: an 8PSK or APSK frame at 4 samples per
# symbol peaks near 1 after the filter's overshoot; half scale keeps the DAC out of clipping.
TX_SCALE = 0.5


class NoDevice(RuntimeError):
    """No SoapySDR device matches the arguments (or it refused a setting)."""


def _open(  # noqa: ANN202
    option: str,
    block,  # noqa: ANN001
    args: str,
    rate: float,
    freq_hz: float,
    gain_db: float,
):
    """gr-soapy's `block` (soapy.sink or soapy.source: fc32, one channel) tuned to the settings;
    NoDevice naming `option` and the arguments when no device matches or one refuses them."""
    try:
        radio = block(args, "fc32", 1, "", "", [""], [""])
        radio.set_sample_rate(0, rate)
        radio.set_frequency(0, freq_hz)
        radio.set_gain(0, gain_db)
    except RuntimeError as err:
        raise NoDevice(
            f"{option} {args!r}: no SoapySDR device opened ({err}); check the device arguments "
            "(SoapySDRUtil --find) and that the radio is attached"
        ) from err
    return radio


def sink(args: str, rate: float, freq_hz: float, gain_db: float) -> list[object]:
    """The transmit side: scale to TX_SCALE, then the SDR sink."""
    return [
        blocks.multiply_const_cc(TX_SCALE),
        _open("--sdr-tx", soapy.sink, args, rate, freq_hz, gain_db),
    ]


def source(args: str, rate: float, freq_hz: float, gain_db: float) -> object:
    """The receive side: the SDR source."""
    return _open("--sdr-rx", soapy.source, args, rate, freq_hz, gain_db)
