//! The PHY-in-the-loop hook: a frame's fate from a real decoder instead of a PER table.
//!
//! `WaveformFrames` turns each frame `framing::pack` fills into BBFRAME bytes (crate::gse),
//! hands them to a `FrameChannel` with the frame's MODCOD and Es/N0, and parses what comes back:
//! the PDUs that parse intact are delivered, residual bit errors in complete GSE packets included
//! (as on a real receiver), and a PDU whose CRC-32 fails, whose fragments were lost or that sat
//! in an erased frame is lost. The emulator fills the hook with dvbs2phy's `WaveformChannel`
//! (GNU Radio transmitter and channel, this project's LDPC/BCH receiver).

use crate::config::FrameSize;
use crate::framing::{Gse, Packed, PacketSource, Partial};
use crate::gse::{self, GseError, GseReader, GseWriter, RxPdu};

/// What the channel did with one BBFRAME.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The decoder's output: K_bch / 8 bytes, possibly with residual bit errors.
    Frame(Vec<u8>),
    /// The decoder gave up on the frame (LDPC did not converge, BCH failed, no sync).
    Erased,
}

/// A physical layer that encodes, transmits and decodes one BBFRAME at a time.
pub trait FrameChannel {
    /// Sends `bbframe` (K_bch / 8 bytes of DVB-S2 MODCOD `modcod_id`, `frame` size) through the
    /// channel at `esn0_db` and returns the decoder's verdict; `Err` names the failed part.
    fn decode(
        &mut self,
        modcod_id: u32,
        frame: FrameSize,
        esn0_db: f64,
        bbframe: &[u8],
    ) -> Result<Decoded, String>;
}

/// Why a waveform frame could not be sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WaveformError {
    #[error("GSE: {0}")]
    Gse(#[from] GseError),
    #[error("frame channel: {0}")]
    Channel(String),
}

/// One frame's outcome: per PDU the frame completed (in `completes` order), the delivered bytes
/// or `None` when the receiver lost it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameOutcome {
    pub packed: Packed,
    pub erased: bool,
    pub delivered: Vec<Option<Vec<u8>>>,
}

/// The transmitter's and the receiver's GSE state around a `FrameChannel`.
pub struct WaveformFrames<C: FrameChannel> {
    writer: GseWriter,
    reader: GseReader,
    channel: C,
    frame: FrameSize,
}

impl<C: FrameChannel> WaveformFrames<C> {
    pub fn new(gse: Gse, frame: FrameSize, channel: C) -> Self {
        WaveformFrames {
            writer: GseWriter::new(gse),
            reader: GseReader::new(),
            channel,
            frame,
        }
    }

    /// Packs one frame of `room` data bytes (as `framing::pack`), encodes it as a BBFRAME of
    /// `room` + BBHEADER bytes at MODCOD `modcod_id`, sends it through the channel at `esn0_db`,
    /// and matches the parsed PDUs to the packets the frame completed.
    pub fn send<Q: PacketSource>(
        &mut self,
        modcod_id: u32,
        esn0_db: f64,
        room: u32,
        partial: &mut Option<Partial>,
        queue: &mut Q,
        completes: &mut Vec<(Vec<u8>, bool)>,
    ) -> Result<FrameOutcome, WaveformError> {
        let first_new = completes.len();
        let (packed, df) = self.writer.frame(room, partial, queue, completes)?;
        let bb = gse::bbframe(&df, room as usize + gse::BBHEADER_BYTES)?;
        let decoded = self
            .channel
            .decode(modcod_id, self.frame, esn0_db, &bb)
            .map_err(WaveformError::Channel)?;
        let n = completes.len() - first_new;
        let pdus = match decoded {
            Decoded::Frame(bytes) => self.reader.parse(&bytes).map(|p| p.pdus).ok(),
            Decoded::Erased => {
                self.reader.frame_lost();
                None
            }
        };
        let erased = pdus.is_none();
        let mut pdus = pdus.unwrap_or_default().into_iter();
        // Position i of the parse is packet i the frame completed; a truncated parse loses the
        // rest.
        let delivered = (0..n)
            .map(|_| pdus.next().and_then(RxPdu::delivered))
            .collect();
        Ok(FrameOutcome {
            packed,
            erased,
            delivered,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A channel that passes frames, or erases them, or flips one bit at a given byte: the
    /// three outcomes a decoder has.
    struct Scripted(VecDeque<Option<Option<usize>>>);

    impl FrameChannel for Scripted {
        fn decode(&mut self, _: u32, _: FrameSize, _: f64, bb: &[u8]) -> Result<Decoded, String> {
            match self.0.pop_front().ok_or("no more frames scripted")? {
                None => Ok(Decoded::Erased),
                Some(flip) => {
                    let mut out = bb.to_vec();
                    if let Some(at) = flip {
                        out[at] ^= 0x04;
                    }
                    Ok(Decoded::Frame(out))
                }
            }
        }
    }

    fn run(script: Vec<Option<Option<usize>>>, packets: Vec<Vec<u8>>) -> Vec<Option<Vec<u8>>> {
        let mut w = WaveformFrames::new(
            Gse { label_bytes: 3 },
            FrameSize::Short,
            Scripted(script.into()),
        );
        let mut q: VecDeque<Vec<u8>> = packets.into();
        let (mut partial, mut completes, mut out) = (None, Vec::new(), Vec::new());
        while !q.is_empty() || partial.is_some() {
            let o = w
                .send(4, 5.0, 700, &mut partial, &mut q, &mut completes)
                .unwrap();
            out.extend(o.delivered);
        }
        out
    }

    #[test]
    fn clean_frames_deliver_every_packet() {
        let sent: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8; 400]).collect();
        let got = run(vec![Some(None); 4], sent.clone());
        assert_eq!(got, sent.into_iter().map(Some).collect::<Vec<_>>());
    }

    #[test]
    fn an_erased_frame_loses_its_packets_and_the_fragment_it_carried() {
        // 700-byte frames of 407-byte complete packets: [P0 | P1 first 283], [P1 last 117 |
        // P2 | P3 first 159], [P3 last 241 | P4].
        let sent: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8 + 1; 400]).collect();
        let got = run(vec![Some(None), None, Some(None)], sent.clone());
        let want = vec![
            Some(sent[0].clone()),
            None,
            None,
            None,
            Some(sent[4].clone()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_residual_bit_error_reaches_the_complete_packet() {
        let sent: Vec<Vec<u8>> = (0..2).map(|i| vec![i as u8; 100]).collect();
        // Frame 0: BBHEADER 10, P0's GSE header 2 + protocol 2 + label 3, then P0's data.
        let got = run(vec![Some(Some(10 + 7 + 5))], sent.clone());
        let mut want = sent[0].clone();
        want[5] ^= 0x04;
        assert_eq!(got, vec![Some(want), Some(sent[1].clone())]);
    }
}
