//! The PHY loop's benchmark (`satlab-phy --loop-bench`): N BBFRAMEs through a running loop,
//! `in_flight` ahead of the decoder, compared with what was sent.

use std::time::{Duration, Instant};

use crate::modcod::ModCod;
use crate::phy_loop::{Erasure, LoopConfig, LoopError, PhyLoop};

/// A BBFRAME as the emulator builds one (EN 302 307-1 5.1.6): BBHEADER for a generic continuous
/// stream (MATYPE-1 0x70: GS continuous, single stream, CCM, no ISSY, no NPD, roll-off 0.35;
/// UPL 0, DFL = K_bch - 80, SYNC 0, SYNCD 0, CRC-8) and a pseudo-random data field from `state`.
pub fn bbframe(mc: &ModCod, state: &mut u64) -> Vec<u8> {
    let dfl = (mc.kbch - 80) as u16;
    let mut f = vec![
        0x70,
        0x00,
        0x00,
        0x00,
        (dfl >> 8) as u8,
        dfl as u8,
        0x00,
        0x00,
        0x00,
    ];
    f.push(crc8(&f));
    while f.len() < mc.kbch / 8 {
        // xorshift64* (Marsaglia, "Xorshift RNGs"; Vigna's multiplier).
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        f.push((state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8);
    }
    f
}

/// The BBHEADER's CRC-8 (EN 302 307-1 5.1.4: g(X) = X^8 + X^7 + X^6 + X^4 + X^2 + 1), MSB first.
fn crc8(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |mut crc, &b| {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0xD5
            } else {
                crc << 1
            };
        }
        crc
    })
}

/// What a run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchResult {
    pub frames: usize,
    /// Delivered bit-exact.
    pub ok: usize,
    pub ldpc_not_converged: usize,
    pub bch_failed: usize,
    /// Delivered with bits that differ from those sent (BCH miscorrection).
    pub residual_errors: usize,
    /// Reported lost (`Erasure::Lost`: samples dropped, or not identified after a resync).
    pub lost: usize,
    /// Times the loop lost the frame alignment and found it again (`PhyLoop::resyncs`).
    pub resyncs: u64,
    /// Dummy PLFRAMEs skipped (continuous transmission, `PhyLoop::dummies`).
    pub dummies: u64,
    /// One frame at a time: the longest time from a frame's submission to its verdict, s (the
    /// first frame, which waits for the stream's synchronisation, left out).
    pub max_round_trip_s: f64,
    /// Frames whose link noise was above their Es/N0's (`PhyLoop::fade_floor_frames`: RF path
    /// with per-frame Es/N0 only).
    pub fade_floor_frames: u64,
    pub mean_iterations: f64,
    /// The receiver's Es/N0 estimate (from the known symbols), mean over the frames decoded, dB.
    pub mean_esn0_est_db: f64,
    /// Start of the first push to the last frame decoded, s (the flowgraph's start excluded).
    pub wall_s: f64,
    /// Wall and CPU time in the receiver (demapping, LDPC, BCH), s.
    pub decode_s: f64,
    pub decode_cpu_s: f64,
    /// The flowgraph's start (process and flowgraph up), s.
    pub start_s: f64,
}

impl BenchResult {
    /// Frames through the loop per second.
    pub fn frames_per_s(&self) -> f64 {
        self.frames as f64 / self.wall_s
    }

    /// Useful rate: data-field bits (K_bch - 80) of the frames delivered bit-exact, per second.
    pub fn useful_bit_per_s(&self, mc: &ModCod) -> f64 {
        (self.ok * (mc.kbch - 80)) as f64 / self.wall_s
    }
}

/// How the bench submits its frames.
#[derive(Debug, Clone, Copy, Default)]
pub struct Submit {
    /// The emulator's synchronous use (`kind: dvbs2_waveform`), each frame submitted with its
    /// filler and decoded before the next (`PhyLoop::submit_flushed_at`; needs
    /// `per_frame_esn0`), `in_flight` unused.
    pub one_at_a_time: bool,
    /// A pause before each frame after the first: an idle modulator, which continuous
    /// transmission (`LoopConfig::continuous`) fills with dummy PLFRAMEs.
    pub pause: Duration,
}

/// Pushes `frames` BBFRAMEs through a new loop and counts what comes back.
pub fn run(cfg: LoopConfig, frames: usize, how: Submit) -> Result<BenchResult, LoopError> {
    let esn0_db = cfg.esn0_db;
    let mc = cfg.modcod;
    let window = cfg.in_flight;
    let t_start = Instant::now();
    let mut lp = PhyLoop::start(cfg)?;
    let mut r = BenchResult {
        start_s: t_start.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let t0 = Instant::now();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut sent = std::collections::VecDeque::new();
    let mut iterations = 0usize;
    for i in 0..frames {
        if i > 0 && !how.pause.is_zero() {
            std::thread::sleep(how.pause);
        }
        let f = bbframe(&mc, &mut state);
        let submitted = Instant::now();
        if how.one_at_a_time {
            lp.submit_flushed_at(&f, esn0_db)?;
        } else {
            lp.submit(&f)?;
        }
        sent.push_back(f);
        if how.one_at_a_time {
            iterations += tally(&mut r, &mut lp, &mut sent)?;
            if i > 0 {
                r.max_round_trip_s = r.max_round_trip_s.max(submitted.elapsed().as_secs_f64());
            }
        } else if lp.outstanding() >= window {
            iterations += tally(&mut r, &mut lp, &mut sent)?;
        }
    }
    while lp.outstanding() > 0 {
        iterations += tally(&mut r, &mut lp, &mut sent)?;
    }
    r.wall_s = t0.elapsed().as_secs_f64();
    r.resyncs = lp.resyncs();
    r.dummies = lp.dummies();
    r.fade_floor_frames = lp.fade_floor_frames();
    r.mean_iterations = iterations as f64 / r.frames.max(1) as f64;
    r.mean_esn0_est_db /= (r.frames - r.lost).max(1) as f64;
    Ok(r)
}

/// Takes the oldest frame from the loop and counts it against the one sent; returns its LDPC
/// iterations.
fn tally(
    r: &mut BenchResult,
    lp: &mut PhyLoop,
    sent: &mut std::collections::VecDeque<Vec<u8>>,
) -> Result<usize, LoopError> {
    let got = lp.next_frame()?;
    let want = sent.pop_front().expect("a frame sent per frame back");
    r.decode_s += got.decode_s;
    r.decode_cpu_s += got.cpu_s;
    if got.outcome != Err(Erasure::Lost) {
        r.mean_esn0_est_db += got.esn0_est_db;
    }
    match got.outcome {
        Ok(bb) if bb == want => r.ok += 1,
        Ok(_) => r.residual_errors += 1,
        Err(Erasure::LdpcNotConverged) => r.ldpc_not_converged += 1,
        Err(Erasure::BchFailed) => r.bch_failed += 1,
        Err(Erasure::Lost) => r.lost += 1,
    }
    r.frames += 1;
    Ok(got.iterations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc8_of_the_check_string() {
        // CRC-8 with polynomial 0xD5, initial 0, no reflection: "123456789" -> 0xBC
        // (the catalogue's CRC-8/DVB-S2 check value).
        assert_eq!(crc8(b"123456789"), 0xBC);
    }
}
