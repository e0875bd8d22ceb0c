"""An SDR underrun, emulated: a stream block that drops `count` samples once, starting at
sample `at` of its input, and passes everything else through unchanged.

A real SDR loses samples when a USB buffer is dropped or the host does not keep up; the samples
after the gap arrive on time but the stream has lost its frame alignment. The PHY loop's
receiver must then find the next PLHEADER (crates/dvbs2phy/src/phy_loop.rs, `PhyLoop::front`
and `next_start`): this block lets that be tested without a radio (dvbs2_loop.py
--underrun-at/--underrun-samples).
"""

from __future__ import annotations

import numpy as np
from gnuradio import gr


class Underrun(gr.basic_block):
    """Drops input samples [at, at + count) once (complex64)."""

    def __init__(self, at: int, count: int) -> None:
        gr.basic_block.__init__(self, "underrun", [np.complex64], [np.complex64])
        self.at = at
        self.end = at + count
        self.seen = 0  # input samples consumed so far

    def general_work(self, input_items, output_items):  # noqa: ANN001, ANN201
        inp, out = input_items[0], output_items[0]
        n = min(len(inp), len(out))
        lo, hi = self.seen, self.seen + n
        # The part of this call's input inside the gap, as indices into `inp`.
        g0, g1 = max(lo, self.at) - lo, min(hi, self.end) - lo
        if g1 <= g0:  # no overlap: pass through
            out[:n] = inp[:n]
            self.consume(0, n)
            self.seen = hi
            return n
        out[:g0] = inp[:g0]
        kept = n - g1
        out[g0 : g0 + kept] = inp[g1:n]
        self.consume(0, n)
        self.seen = hi
        return g0 + kept
