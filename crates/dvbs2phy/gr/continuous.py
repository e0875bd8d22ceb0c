"""Continuous transmission: dummy PLFRAMEs whenever the modulator has no frame to send.

A DVB-S2 modulator never stops: when no BBFRAME is ready it sends a dummy PLFRAME (EN 302 307-1
section 5.5.1: a PLHEADER with the dummy PLS code, MODCOD 0, and 36 slots of unmodulated
symbols (1 + j)/sqrt 2, PL-scrambled; 3330 symbols). An SDR sink must be fed at its sample rate:
the PHY loop pushes frames on demand, so without dummies the sink underruns between frames and
the receiver meets gaps of noise.

This block sits after gr-dtv's PL framer: data PLFRAMEs pass through as they come; when its
input is empty at a frame boundary and the stream is behind the wall clock at the symbol rate
(`baud`), it sends a dummy (the symbols the Rust side built, crates/dvbs2phy/src/plframe.rs
`dummy_plframe`, read from a file). A frame that arrives while a dummy is out waits for the
dummy's end, as in a real modulator. With an SDR sink the sink's clock paces the stream; on a
simulated channel the wall clock does (one dummy per 3330 symbol times while idle). After a
stall (the receiving side did not read for a while) the clock restarts from now instead of
sending a burst of dummies to catch up.
"""

from __future__ import annotations

import time

import numpy as np
from gnuradio import gr

# Longest sleep while ahead of the clock: the scheduler calls again afterwards, so a data frame
# that arrives meanwhile waits at most this long (well under a frame's time).
MAX_SLEEP_S = 0.002


class Continuous(gr.basic_block):
    """Data PLFRAMEs of `frame_len` symbols through; `dummy` (complex64) when idle."""

    def __init__(self, frame_len: int, dummy: np.ndarray, baud: float) -> None:
        gr.basic_block.__init__(self, "continuous", [np.complex64], [np.complex64])
        self.frame_len = frame_len
        self.dummy = dummy.astype(np.complex64)
        self.baud = baud
        self.in_frame = 0  # symbols of the current data frame already out (0: at a boundary)
        self.in_dummy = 0  # symbols of the current dummy already out (0: none under way)
        self.clock0 = None  # wall time the clock counts from
        self.sent = 0  # symbols out since `start`
        self.dummies = 0

    def forecast(self, noutput_items, ninputs):  # noqa: ANN001, ANN201
        # No input needed: general_work must run when the input is empty to send a dummy.
        return [0] * ninputs

    def general_work(self, input_items, output_items):  # noqa: ANN001, ANN201
        inp, out = input_items[0], output_items[0]
        now = time.monotonic()
        if self.clock0 is None:
            self.clock0 = now
        if self.in_dummy == 0 and len(inp) > 0:
            n = min(len(inp), len(out))
            out[:n] = inp[:n]
            self.consume(0, n)
            self.in_frame = (self.in_frame + n) % self.frame_len
            self.sent += n
            return n
        if self.in_frame != 0:
            # Inside a data frame whose rest has not come yet: never cut a frame with a dummy.
            time.sleep(MAX_SLEEP_S / 4)
            return 0
        due = (now - self.clock0) * self.baud
        if self.in_dummy == 0:
            if self.sent > due:
                time.sleep(min((self.sent - due) / self.baud, MAX_SLEEP_S))
                return 0
            # More than a dummy behind: the reader stalled; restart the clock, no burst.
            if due - self.sent > 2 * len(self.dummy):
                self.clock0, self.sent = now, 0
            self.dummies += 1
        n = min(len(self.dummy) - self.in_dummy, len(out))
        out[:n] = self.dummy[self.in_dummy : self.in_dummy + n]
        self.in_dummy = (self.in_dummy + n) % len(self.dummy)
        self.sent += n
        return n
