//! GSE packing into real bytes: the BBFRAME a waveform link (`kind: dvbs2_waveform`) encodes,
//! and the inverse, the receiver's parse of a decoded BBFRAME back into PDUs.
//!
//! The packing decisions stay `framing::pack`'s (which packets a frame completes, where a packet
//! is cut): `GseWriter::frame` calls it and writes exactly the GSE packets it counted, so a
//! waveform link and a table link carry the same packets in the same frames.
//!
//! Layout of one BBFRAME (K_bch / 8 bytes):
//! - BBHEADER (ETSI EN 302 307-1 section 5.1.6), 10 bytes: MATYPE-1 = generic continuous stream
//!   (TS/GS 01, the mode GSE uses), single input stream, ACM, no ISSY, no null-packet deletion,
//!   roll-off 0.35; MATYPE-2 0; UPL 0; DFL = the data field in bits; SYNC 0; SYNCD 0; CRC-8 of the
//!   first 9 bytes (normal mode: MODE 0, so the CRC is not altered).
//! - the data field: the GSE packets (ETSI TS 102 606-1 section 4.2): base header S, E, label
//!   type, 12-bit GSE length; fragment id when the PDU is fragmented; total length in the first
//!   fragment; protocol type and label in the first fragment or a complete packet; the PDU bytes;
//!   CRC-32 after the last fragment;
//! - padding: zeros up to K_bch (section 5.2.1), outside DFL.
//!
//! The PDU is the whole Ethernet frame: protocol type 0x0001 (bridged frame, the ULE/GSE type
//! for Ethernet), label the destination MAC (6 bytes) or its last 3 bytes (3-byte label).
//! A complete GSE packet has no check of its own (DVB-S2's BCH is the check), so residual bit
//! errors in its data reach the packet, as on a real receiver; a fragmented PDU is checked by
//! its CRC-32 and dropped when it fails.

use crate::framing::{self, Gse, Packed, PacketSource, Partial};

/// BBHEADER length, bytes.
pub const BBHEADER_BYTES: usize = 10;
/// MATYPE-1: TS/GS 01 (generic continuous), SIS 1, ACM 0, ISSYI 0, NPD 0, RO 00 (0.35).
const MATYPE1: u8 = 0b0110_0000;
/// GSE protocol type of a bridged Ethernet frame.
pub const PROTOCOL_BRIDGED: u16 = 0x0001;
/// The largest GSE length (12 bits).
pub const MAX_GSE_LENGTH: usize = 4095;

/// CRC-8 of the BBHEADER: g(x) = x^8 + x^7 + x^6 + x^4 + x^2 + 1, register starting at 0.
pub fn crc8(bytes: &[u8]) -> u8 {
    let mut crc = 0u8;
    for &b in bytes {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0xD5
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// CRC-32 of a fragmented PDU (TS 102 606-1 5.2.2: the MPEG-2 CRC of ISO/IEC 13818-1,
/// polynomial 0x04C11DB7, register starting at all ones, no reflection, no final inversion).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= (b as u32) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Why a frame or a GSE packet could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GseError {
    #[error("GSE packet of {len} bytes after its base header exceeds the GSE length limit of {MAX_GSE_LENGTH}")]
    TooLong { len: usize },
    #[error("data field of {data} bytes does not fit a BBFRAME of {kbch_bytes} bytes (BBHEADER {BBHEADER_BYTES})")]
    FrameTooSmall { data: usize, kbch_bytes: usize },
    #[error("BBHEADER CRC-8 fails")]
    HeaderCrc,
    #[error(
        "BBHEADER DFL of {dfl_bits} bits is not whole bytes or exceeds the frame's {room} bytes"
    )]
    BadDfl { dfl_bits: u32, room: usize },
}

/// The BBFRAME around a data field: BBHEADER, the data field, zero padding to `kbch_bytes`.
pub fn bbframe(data_field: &[u8], kbch_bytes: usize) -> Result<Vec<u8>, GseError> {
    if BBHEADER_BYTES + data_field.len() > kbch_bytes {
        return Err(GseError::FrameTooSmall {
            data: data_field.len(),
            kbch_bytes,
        });
    }
    let dfl = (data_field.len() * 8) as u16;
    let mut f = Vec::with_capacity(kbch_bytes);
    f.extend_from_slice(&[MATYPE1, 0, 0, 0]);
    f.extend_from_slice(&dfl.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0]);
    f.push(crc8(&f));
    f.extend_from_slice(data_field);
    f.resize(kbch_bytes, 0);
    Ok(f)
}

/// The data field of a BBFRAME whose BBHEADER checks (CRC-8, DFL within the frame).
pub fn data_field(bbframe: &[u8]) -> Result<&[u8], GseError> {
    if bbframe.len() < BBHEADER_BYTES {
        return Err(GseError::HeaderCrc);
    }
    if crc8(&bbframe[..BBHEADER_BYTES - 1]) != bbframe[BBHEADER_BYTES - 1] {
        return Err(GseError::HeaderCrc);
    }
    let dfl_bits = u16::from_be_bytes([bbframe[4], bbframe[5]]) as u32;
    let room = bbframe.len() - BBHEADER_BYTES;
    if !dfl_bits.is_multiple_of(8) || (dfl_bits / 8) as usize > room {
        return Err(GseError::BadDfl { dfl_bits, room });
    }
    Ok(&bbframe[BBHEADER_BYTES..BBHEADER_BYTES + (dfl_bits / 8) as usize])
}

/// Label type field (TS 102 606-1 Table 2) and the label of a PDU.
fn label_type(label_bytes: u32) -> u8 {
    match label_bytes {
        6 => 0b00,
        3 => 0b01,
        _ => 0b10,
    }
}

fn label_len(lt: u8) -> usize {
    match lt {
        0b00 => 6,
        0b01 => 3,
        _ => 0,
    }
}

/// The label of `pdu`: its destination MAC, or the MAC's last 3 bytes.
fn label(pdu: &[u8], label_bytes: u32) -> [u8; 6] {
    let mut mac = [0u8; 6];
    let n = pdu.len().min(6);
    mac[..n].copy_from_slice(&pdu[..n]);
    if label_bytes == 3 {
        [mac[3], mac[4], mac[5], 0, 0, 0]
    } else {
        mac
    }
}

/// One GSE packet's parts.
enum Piece<'a> {
    Complete(&'a [u8]),
    First { pdu: &'a [u8], n: usize },
    Middle { data: &'a [u8] },
    Last { pdu: &'a [u8], data: &'a [u8] },
}

/// Writes the GSE packets of the frames `framing::pack` fills; keeps the fragment id of the
/// PDU being fragmented (one at a time, as in `framing`).
#[derive(Debug, Clone)]
pub struct GseWriter {
    gse: Gse,
    frag_id: u8,
}

impl GseWriter {
    pub fn new(gse: Gse) -> Self {
        GseWriter { gse, frag_id: 0 }
    }

    /// Packs one frame of `room` bytes with `framing::pack` (same arguments, same result) and
    /// returns, with its result, the frame's data field: the GSE packets `pack` counted, in order,
    /// or why they cannot be written (the packing has happened either way).
    pub fn frame<Q: PacketSource>(
        &mut self,
        room: u32,
        partial: &mut Option<Partial>,
        queue: &mut Q,
        completes: &mut Vec<(Vec<u8>, bool)>,
    ) -> (Packed, Result<Vec<u8>, GseError>) {
        let before = partial.as_ref().map(|p| p.remaining as usize);
        let first_new = completes.len();
        let packed = framing::pack(self.gse, room, partial, queue, completes);
        let new = &completes[first_new..];
        let mut pieces = Vec::new();
        let mut whole = new.iter();
        if let Some(r) = before {
            if new.is_empty() {
                // The carried packet is still partial: an intermediate fragment, if any.
                let p = partial.as_ref().expect("still partial");
                let len = p.frame.len();
                let sent = len - r;
                let now = len - p.remaining as usize;
                if now > sent {
                    pieces.push(Piece::Middle {
                        data: &p.frame[sent..now],
                    });
                }
            } else {
                let pdu = &whole.next().expect("the carried packet").0;
                pieces.push(Piece::Last {
                    pdu,
                    data: &pdu[pdu.len() - r..],
                });
            }
        }
        for (pdu, _) in whole {
            pieces.push(Piece::Complete(pdu));
        }
        let starts_new = partial.as_ref().filter(|_| {
            // A partial after `pack` is new when none was carried, or the carried one finished.
            before.is_none() || !new.is_empty()
        });
        if let Some(p) = starts_new {
            pieces.push(Piece::First {
                pdu: &p.frame,
                n: p.frame.len() - p.remaining as usize,
            });
        }
        let mut out = Vec::with_capacity(packed.gse_bytes as usize);
        let written = pieces
            .iter()
            .try_for_each(|piece| self.write(piece, &mut out))
            .map(|()| {
                debug_assert_eq!(out.len(), packed.gse_bytes as usize);
                out
            });
        (packed, written)
    }

    fn write(&mut self, piece: &Piece<'_>, out: &mut Vec<u8>) -> Result<(), GseError> {
        let lt = label_type(self.gse.label_bytes);
        let lb = self.gse.label_bytes as usize;
        let (s, e, lt) = match piece {
            Piece::Complete(_) => (1, 1, lt),
            Piece::First { .. } => (1, 0, lt),
            // No label after the first fragment: LT 11 (no label here); 00 would make an
            // intermediate fragment's first 4 bits zero, which reads as padding.
            Piece::Middle { .. } => (0, 0, 0b11),
            Piece::Last { .. } => (0, 1, 0b11),
        };
        let mut body = Vec::new();
        match piece {
            Piece::Complete(pdu) => {
                body.extend_from_slice(&PROTOCOL_BRIDGED.to_be_bytes());
                body.extend_from_slice(&label(pdu, self.gse.label_bytes)[..lb]);
                body.extend_from_slice(pdu);
            }
            Piece::First { pdu, n } => {
                self.frag_id = self.frag_id.wrapping_add(1);
                let total = 2 + lb + pdu.len();
                body.push(self.frag_id);
                body.extend_from_slice(&(total as u16).to_be_bytes());
                body.extend_from_slice(&PROTOCOL_BRIDGED.to_be_bytes());
                body.extend_from_slice(&label(pdu, self.gse.label_bytes)[..lb]);
                body.extend_from_slice(&pdu[..*n]);
            }
            Piece::Middle { data } => {
                body.push(self.frag_id);
                body.extend_from_slice(data);
            }
            Piece::Last { pdu, data } => {
                body.push(self.frag_id);
                body.extend_from_slice(data);
                body.extend_from_slice(&fragmented_crc(pdu, self.gse.label_bytes).to_be_bytes());
            }
        }
        if body.len() > MAX_GSE_LENGTH {
            return Err(GseError::TooLong { len: body.len() });
        }
        let head = (s << 15) | (e << 14) | ((lt as u16) << 12) | body.len() as u16;
        out.extend_from_slice(&head.to_be_bytes());
        out.extend_from_slice(&body);
        Ok(())
    }
}

/// The CRC-32 of a fragmented PDU: over total length, protocol type, label and the PDU.
fn fragmented_crc(pdu: &[u8], label_bytes: u32) -> u32 {
    let lb = label_bytes as usize;
    let mut covered = Vec::with_capacity(6 + lb + pdu.len());
    covered.extend_from_slice(&((2 + lb + pdu.len()) as u16).to_be_bytes());
    covered.extend_from_slice(&PROTOCOL_BRIDGED.to_be_bytes());
    covered.extend_from_slice(&label(pdu, label_bytes)[..lb]);
    covered.extend_from_slice(pdu);
    crc32(&covered)
}

/// A PDU the receiver completed in a frame (a complete GSE packet or a last fragment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RxPdu {
    /// A complete GSE packet's PDU: unchecked, residual bit errors included.
    Whole(Vec<u8>),
    /// A reassembled PDU whose CRC-32 holds.
    Reassembled(Vec<u8>),
    /// A reassembled PDU whose CRC-32 fails.
    CrcFailed,
    /// A last fragment whose earlier fragments were lost (or whose fragment id does not match).
    MissingFragments,
}

impl RxPdu {
    /// The PDU, when the receiver delivers it.
    pub fn delivered(self) -> Option<Vec<u8>> {
        match self {
            RxPdu::Whole(p) | RxPdu::Reassembled(p) => Some(p),
            RxPdu::CrcFailed | RxPdu::MissingFragments => None,
        }
    }
}

/// What one frame's parse gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The PDUs completed in this frame, in order.
    pub pdus: Vec<RxPdu>,
    /// A GSE header did not parse (length past the data field, a malformed field): the rest of
    /// the data field was dropped, and with it any PDU it held.
    pub truncated: bool,
}

/// A fragmented PDU being reassembled.
#[derive(Debug, Clone)]
struct Reassembly {
    frag_id: u8,
    total: usize,
    /// Protocol type, label and PDU bytes so far (what the total length counts).
    buf: Vec<u8>,
    label_bytes: usize,
}

/// The receiver's side: parses decoded BBFRAMEs, reassembles fragmented PDUs.
#[derive(Debug, Clone, Default)]
pub struct GseReader {
    reassembly: Option<Reassembly>,
}

impl GseReader {
    pub fn new() -> Self {
        GseReader::default()
    }

    /// A frame was erased (or its BBHEADER failed): a PDU being reassembled cannot complete.
    pub fn frame_lost(&mut self) {
        self.reassembly = None;
    }

    /// Parses one decoded BBFRAME. A BBHEADER that fails counts as a lost frame.
    pub fn parse(&mut self, bbframe: &[u8]) -> Result<Parsed, GseError> {
        match data_field(bbframe) {
            Ok(df) => Ok(self.parse_data_field(df)),
            Err(e) => {
                self.frame_lost();
                Err(e)
            }
        }
    }

    /// Parses the GSE packets of one data field.
    pub fn parse_data_field(&mut self, mut df: &[u8]) -> Parsed {
        let mut parsed = Parsed::default();
        while df.len() >= 2 {
            let head = u16::from_be_bytes([df[0], df[1]]);
            let (s, e, lt) = (
                head >> 15 == 1,
                (head >> 14) & 1 == 1,
                ((head >> 12) & 3) as u8,
            );
            if !s && !e && lt == 0 {
                break; // padding (TS 102 606-1 4.2.1: the first 4 bits zero)
            }
            let len = (head & 0x0FFF) as usize;
            if len > df.len() - 2
                || self
                    .packet(s, e, lt, &df[2..2 + len], &mut parsed)
                    .is_none()
            {
                parsed.truncated = true;
                self.reassembly = None;
                break;
            }
            df = &df[2 + len..];
        }
        parsed
    }

    /// One GSE packet's body; `None` when it is malformed.
    fn packet(&mut self, s: bool, e: bool, lt: u8, body: &[u8], parsed: &mut Parsed) -> Option<()> {
        match (s, e) {
            (true, true) => {
                let skip = 2 + label_len(lt);
                parsed.pdus.push(RxPdu::Whole(body.get(skip..)?.to_vec()));
            }
            (true, false) => {
                let (&frag_id, rest) = body.split_first()?;
                let total = u16::from_be_bytes([*rest.first()?, *rest.get(1)?]) as usize;
                let lb = label_len(lt);
                let buf = rest.get(2..)?.to_vec();
                if buf.len() < 2 + lb || buf.len() > total {
                    return None;
                }
                // A PDU still being reassembled is dropped: its last fragment was lost.
                self.reassembly = Some(Reassembly {
                    frag_id,
                    total,
                    buf,
                    label_bytes: lb,
                });
            }
            (false, false) => {
                let (&frag_id, data) = body.split_first()?;
                match self.reassembly.as_mut() {
                    Some(r) if r.frag_id == frag_id && r.buf.len() + data.len() <= r.total => {
                        r.buf.extend_from_slice(data)
                    }
                    _ => self.reassembly = None,
                }
            }
            (false, true) => {
                let (&frag_id, rest) = body.split_first()?;
                let split = rest.len().checked_sub(4)?;
                let (data, crc) = rest.split_at(split);
                let crc = u32::from_be_bytes(crc.try_into().ok()?);
                parsed.pdus.push(match self.reassembly.take() {
                    Some(mut r) if r.frag_id == frag_id && r.buf.len() + data.len() == r.total => {
                        r.buf.extend_from_slice(data);
                        let mut covered = (r.total as u16).to_be_bytes().to_vec();
                        covered.extend_from_slice(&r.buf);
                        if crc32(&covered) == crc {
                            RxPdu::Reassembled(r.buf.split_off(2 + r.label_bytes))
                        } else {
                            RxPdu::CrcFailed
                        }
                    }
                    Some(_) => RxPdu::CrcFailed,
                    None => RxPdu::MissingFragments,
                });
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn pdu(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// Writes frames of `room` bytes until the queue and the carried fragment are empty.
    fn frames(gse: Gse, room: u32, packets: Vec<Vec<u8>>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut q: VecDeque<Vec<u8>> = packets.into();
        let mut w = GseWriter::new(gse);
        let mut partial = None;
        let mut completes = Vec::new();
        let mut out = Vec::new();
        while !q.is_empty() || partial.is_some() {
            let (packed, df) = w.frame(room, &mut partial, &mut q, &mut completes);
            let df = df.unwrap();
            assert_eq!(df.len(), packed.gse_bytes as usize);
            out.push(bbframe(&df, room as usize + BBHEADER_BYTES).unwrap());
        }
        (out, completes.into_iter().map(|(p, _)| p).collect())
    }

    fn parse_all(frames: &[Vec<u8>]) -> Vec<RxPdu> {
        let mut r = GseReader::new();
        frames
            .iter()
            .flat_map(|f| r.parse(f).unwrap().pdus)
            .collect()
    }

    #[test]
    fn crcs_match_their_check_values() {
        // CRC-32/MPEG-2 check value of "123456789".
        assert_eq!(crc32(b"123456789"), 0x0376_E6E7);
        // A header with its CRC-8 appended checks to zero.
        let f = bbframe(&[1, 2, 3], 20).unwrap();
        assert_eq!(crc8(&f[..BBHEADER_BYTES]), 0);
    }

    #[test]
    fn round_trip_with_each_label_size() {
        for label_bytes in [0, 3, 6] {
            let gse = Gse { label_bytes };
            let sent: Vec<Vec<u8>> = (0..40).map(|i| pdu(60 + 37 * i, i as u8)).collect();
            let (fs, completes) = frames(gse, 1500, sent.clone());
            assert_eq!(completes, sent);
            let got: Vec<Vec<u8>> = parse_all(&fs)
                .into_iter()
                .map(|p| p.delivered().expect("intact"))
                .collect();
            assert_eq!(got, sent, "label {label_bytes}");
        }
    }

    #[test]
    fn fragments_across_three_frames_reassemble() {
        let gse = Gse { label_bytes: 3 };
        let sent = vec![pdu(1000, 1), pdu(1400, 2), pdu(100, 3)];
        let (fs, _) = frames(gse, 600, sent.clone());
        let pdus = parse_all(&fs);
        assert!(pdus.iter().any(|p| matches!(p, RxPdu::Reassembled(_))));
        let got: Vec<_> = pdus.into_iter().filter_map(RxPdu::delivered).collect();
        assert_eq!(got, sent);
    }

    #[test]
    fn a_flipped_bit_in_a_fragmented_pdu_fails_only_that_pdu() {
        let gse = Gse { label_bytes: 6 };
        let sent = vec![pdu(500, 1), pdu(1400, 2), pdu(300, 3)];
        let (mut fs, _) = frames(gse, 1000, sent.clone());
        // Frame 0: PDU 0 complete (510), then PDU 1's first fragment; flip a bit in its data.
        let at = BBHEADER_BYTES + 510 + 2 + 1 + 2 + 2 + 6 + 40;
        fs[0][at] ^= 0x10;
        let pdus = parse_all(&fs);
        assert_eq!(pdus.len(), 3);
        assert_eq!(pdus[1], RxPdu::CrcFailed);
        let got: Vec<_> = pdus.into_iter().filter_map(RxPdu::delivered).collect();
        assert_eq!(got, vec![sent[0].clone(), sent[2].clone()]);
    }

    #[test]
    fn a_flipped_bit_in_a_complete_pdu_reaches_that_pdu_only() {
        let gse = Gse { label_bytes: 0 };
        let sent = vec![pdu(200, 1), pdu(200, 2), pdu(200, 3)];
        let (mut fs, _) = frames(gse, 1500, sent.clone());
        // PDU 1's data starts after PDU 0's packet (204) and its own header (4).
        fs[0][BBHEADER_BYTES + 204 + 4 + 7] ^= 0x01;
        let got: Vec<_> = parse_all(&fs)
            .into_iter()
            .filter_map(RxPdu::delivered)
            .collect();
        let mut want = sent.clone();
        want[1][7] ^= 0x01;
        assert_eq!(got, want);
    }

    #[test]
    fn a_lost_frame_fails_the_pdu_it_carried_a_fragment_of() {
        let gse = Gse { label_bytes: 3 };
        let sent = vec![pdu(1400, 1), pdu(200, 2)];
        let (fs, _) = frames(gse, 600, sent.clone());
        assert_eq!(fs.len(), 3);
        let mut r = GseReader::new();
        let mut pdus = r.parse(&fs[0]).unwrap().pdus;
        r.frame_lost(); // frame 1 (the intermediate fragment) erased
        pdus.extend(r.parse(&fs[2]).unwrap().pdus);
        assert_eq!(
            pdus,
            vec![RxPdu::MissingFragments, RxPdu::Whole(sent[1].clone())]
        );
    }

    #[test]
    fn a_bad_bbheader_is_refused_and_a_bad_gse_length_truncates() {
        let gse = Gse { label_bytes: 0 };
        let (mut fs, _) = frames(gse, 1500, vec![pdu(100, 1), pdu(100, 2)]);
        let mut bad = fs[0].clone();
        bad[5] ^= 0x08; // DFL
        assert_eq!(GseReader::new().parse(&bad), Err(GseError::HeaderCrc));
        // First packet's GSE length made larger than the data field.
        fs[0][BBHEADER_BYTES] |= 0x0F;
        let p = GseReader::new().parse(&fs[0]).unwrap();
        assert!(p.truncated && p.pdus.is_empty());
    }
}
