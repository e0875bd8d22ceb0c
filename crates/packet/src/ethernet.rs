//! Ethernet II frames (IEEE 802.3 with an EtherType), including 802.1Q and 802.1ad (QinQ) tags.
//!
//! ```text
//!  0                   6                  12        14
//! +-------------------+-------------------+---------+----------
//! | destination MAC   | source MAC        | type    | payload
//! +-------------------+-------------------+---------+----------
//! With one 802.1Q tag: type = 0x8100, then TCI (PCP:3 DEI:1 VID:12) and the inner type at 14..18.
//! ```

use crate::{Error, Result};
use core::fmt;

mod field {
    use crate::{Field, Rest};
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = 14;
/// Length of one VLAN tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;

/// EtherType values this crate knows by name.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
}

/// A MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Address(pub [u8; 6]);

impl Address {
    /// The broadcast address ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: Address = Address([0xff; 6]);

    /// Whether the group bit (multicast or broadcast) is set.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 == 1
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// One 802.1Q / 802.1ad tag control information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// Tag protocol identifier (0x8100 or 0x88a8).
    pub tpid: u16,
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
}

impl VlanTag {
    /// Builds a tag from its TPID and 16-bit TCI.
    pub fn from_tci(tpid: u16, tci: u16) -> VlanTag {
        VlanTag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }

    /// The 16-bit tag control information.
    pub fn tci(&self) -> u16 {
        (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff)
    }
}

fn is_vlan_tpid(t: u16) -> bool {
    t == ethertype::VLAN || t == ethertype::QINQ
}

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer and checks that the header, including any VLAN tags, is inside it.
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks that the header (including up to two VLAN tags) fits in the buffer.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if len < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> Address {
        let mut a = [0u8; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        Address(a)
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> Address {
        let mut a = [0u8; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        Address(a)
    }

    /// The EtherType field at bytes 12..14 (0x8100 / 0x88a8 when the frame is tagged).
    pub fn ethertype(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::ETHERTYPE];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Number of VLAN tags (0, 1 or 2; a third stacked tag is treated as payload).
    pub fn vlan_count(&self) -> usize {
        let d = self.buffer.as_ref();
        let mut n = 0;
        let mut off = 12;
        while n < 2 && d.len() >= off + 2 && is_vlan_tpid(u16::from_be_bytes([d[off], d[off + 1]]))
        {
            n += 1;
            off += VLAN_TAG_LEN;
        }
        n
    }

    /// The outer VLAN tag, if the frame carries one.
    pub fn vlan(&self) -> Option<VlanTag> {
        if self.vlan_count() == 0 {
            return None;
        }
        let d = self.buffer.as_ref();
        Some(VlanTag::from_tci(
            self.ethertype(),
            u16::from_be_bytes([d[14], d[15]]),
        ))
    }

    /// Header length: 14 bytes plus 4 per VLAN tag.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + VLAN_TAG_LEN * self.vlan_count()
    }

    /// The header counting the outer VLAN tag only, as (length, EtherType that ends it): (14,
    /// EtherType) untagged; (18, the EtherType after the tag) when the EtherType at 12 is a VLAN
    /// TPID (0x8100, 0x88a8). What follows, an inner tag included, is the payload as a device
    /// that strips one tag (a packet socket, into `PACKET_AUXDATA`) sees it. `None` when the
    /// buffer is shorter than that header.
    pub fn outer_header(&self) -> Option<(usize, u16)> {
        let d = self.buffer.as_ref();
        let at = |i: usize| Some(u16::from_be_bytes([*d.get(i)?, *d.get(i + 1)?]));
        let t = at(field::ETHERTYPE.start)?;
        if !is_vlan_tpid(t) {
            return Some((HEADER_LEN, t));
        }
        Some((HEADER_LEN + VLAN_TAG_LEN, at(HEADER_LEN + 2)?))
    }

    /// The EtherType of the payload, after any VLAN tags.
    pub fn payload_ethertype(&self) -> u16 {
        let off = 12 + VLAN_TAG_LEN * self.vlan_count();
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[off], d[off + 1]])
    }

    /// The payload after the header and any VLAN tags.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// The bytes after the untagged 14-byte header (the first tag's TCI when tagged).
    pub fn raw_payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }

    /// Sets the source MAC address.
    pub fn set_src_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }

    /// Sets the EtherType field at bytes 12..14.
    pub fn set_ethertype(&mut self, t: u16) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.to_be_bytes());
    }

    /// Mutable payload after the header and any VLAN tags.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[h..]
    }
}

/// Inserts a VLAN tag after the MAC addresses of `frame` (a whole frame in a `Vec`).
///
/// Packet sockets hand over frames whose tag the driver stripped into metadata
/// (`PACKET_AUXDATA`); a transparent bridge puts it back with this.
pub fn insert_vlan_tag(frame: &mut Vec<u8>, tag: VlanTag) {
    let at = 12;
    let mut bytes = [0u8; VLAN_TAG_LEN];
    bytes[0..2].copy_from_slice(&tag.tpid.to_be_bytes());
    bytes[2..4].copy_from_slice(&tag.tci().to_be_bytes());
    frame.splice(at..at, bytes);
}

/// The decoded form of an Ethernet header (without VLAN tags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source MAC address.
    pub src_addr: Address,
    /// Destination MAC address.
    pub dst_addr: Address,
    /// EtherType of the payload.
    pub ethertype: u16,
}

impl Repr {
    /// Decodes an untagged or tagged frame's addresses and payload EtherType.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.payload_ethertype(),
        })
    }

    /// Header length when emitted (always untagged).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes an untagged header into `frame`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_src_addr(self.src_addr);
        frame.set_dst_addr(self.dst_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static FRAME_BYTES: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd,
    ];

    static TAGGED_BYTES: [u8; 22] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, //
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x81, 0x00, 0xa0, 0x64, // 802.1Q, PCP 5, VID 100
        0x86, 0xdd, // IPv6
        0x60, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let f = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(f.dst_addr(), Address([2, 0, 0, 0, 0, 2]));
        assert_eq!(f.src_addr(), Address([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.ethertype(), ethertype::IPV4);
        assert_eq!(f.vlan(), None);
        assert_eq!(f.header_len(), 14);
        assert_eq!(f.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(f.src_addr().to_string(), "02:00:00:00:00:01");
    }

    #[test]
    fn deconstruct_tagged() {
        let f = Frame::new_checked(&TAGGED_BYTES[..]).unwrap();
        assert!(f.dst_addr().is_multicast());
        assert_eq!(f.ethertype(), ethertype::VLAN);
        assert_eq!(
            f.vlan(),
            Some(VlanTag {
                tpid: 0x8100,
                pcp: 5,
                dei: false,
                vid: 100
            })
        );
        assert_eq!(f.payload_ethertype(), ethertype::IPV6);
        assert_eq!(f.header_len(), 18);
        assert_eq!(f.payload(), &[0x60, 0, 0, 0]);
    }

    #[test]
    fn outer_tag_only() {
        let f = Frame::new_unchecked(&FRAME_BYTES[..]);
        assert_eq!(f.outer_header(), Some((14, ethertype::IPV4)));
        let f = Frame::new_unchecked(&TAGGED_BYTES[..]);
        assert_eq!(f.outer_header(), Some((18, ethertype::IPV6)));
        // Double-tagged: the inner tag is payload here (header_len looks through both).
        let mut qinq = TAGGED_BYTES.to_vec();
        insert_vlan_tag(
            &mut qinq,
            VlanTag {
                tpid: ethertype::QINQ,
                pcp: 0,
                dei: false,
                vid: 7,
            },
        );
        let f = Frame::new_unchecked(&qinq[..]);
        assert_eq!(f.outer_header(), Some((18, ethertype::VLAN)));
        assert_eq!(f.header_len(), 22);
        // Shorter than the header: no answer.
        assert_eq!(
            Frame::new_unchecked(&TAGGED_BYTES[..17]).outer_header(),
            None
        );
        assert_eq!(
            Frame::new_unchecked(&FRAME_BYTES[..13]).outer_header(),
            None
        );
        assert_eq!(
            Frame::new_unchecked(&FRAME_BYTES[..14]).outer_header(),
            Some((14, 0x0800))
        );
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 18];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_dst_addr(Address([2, 0, 0, 0, 0, 2]));
        f.set_src_addr(Address([2, 0, 0, 0, 0, 1]));
        f.set_ethertype(ethertype::IPV4);
        f.payload_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(buf, FRAME_BYTES);
    }

    #[test]
    fn repr_roundtrip() {
        let repr = Repr::parse(&Frame::new_checked(&FRAME_BYTES[..]).unwrap()).unwrap();
        let mut buf = FRAME_BYTES;
        buf[..14].fill(0);
        repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, FRAME_BYTES);
    }

    #[test]
    fn insert_tag() {
        let mut v = FRAME_BYTES.to_vec();
        insert_vlan_tag(
            &mut v,
            VlanTag {
                tpid: 0x8100,
                pcp: 5,
                dei: false,
                vid: 100,
            },
        );
        assert_eq!(&v[12..18], &[0x81, 0x00, 0xa0, 0x64, 0x08, 0x00]);
        assert_eq!(
            Frame::new_checked(&v[..]).unwrap().payload_ethertype(),
            ethertype::IPV4
        );
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Frame::new_checked(&FRAME_BYTES[..13]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Frame::new_checked(&TAGGED_BYTES[..15]).unwrap_err(),
            Error::Truncated
        );
    }
}
