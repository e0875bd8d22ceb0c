//! Zero-copy views of the packets a satellite edge handles, in the style of smoltcp's `wire` module.
//!
//! Each protocol has its own module with a `Packet<T: AsRef<[u8]>>` (or `Frame`) view over a byte
//! buffer, a private `field` module of byte ranges, getters and setters named after the header
//! fields, checksum helpers where the protocol has one, and a `Repr` for the decoded form:
//!
//! | module        | what                                                                        |
//! |---------------|-----------------------------------------------------------------------------|
//! | [`ethernet`]  | Ethernet II frames, including 802.1Q / 802.1ad VLAN tags                    |
//! | [`ipv4`]      | IPv4 header, header checksum verify/fill                                    |
//! | [`ipv6`]      | IPv6 fixed header (enough for flow identification and segmentation)         |
//! | [`tcp`]       | TCP segments, checksum over the IPv4/IPv6 pseudo-header                     |
//! | [`udp`]       | UDP datagrams, checksum over the IPv4/IPv6 pseudo-header                    |
//! | [`icmp`]      | ICMPv4 messages (echo, errors)                                              |
//! | [`flow`]      | [`FlowKey`]: addresses, protocol, ports and TCP sequence of a frame         |
//! | [`offload`]   | `virtio_net_hdr` (PACKET_VNET_HDR / IFF_VNET_HDR), checksum completion, GSO segmentation |
//! | [`checksum`]  | the Internet checksum (RFC 1071) and pseudo-header sums                     |
//! | [`tcpopt`]    | TCP option walking, RFC 6994 experimental options, RFC 1624 checksum update |
//! | [`eten`]      | ETEN notice (BETEN): ICMP type 253 toward the sender of a damaged packet    |
//! | [`ceten`]     | CETEN survival-probability fields (TCP option, ExID 0x4345)                 |
//! | [`ern`]       | IP-ERN / XCP congestion header (TCP option, ExID 0x4552)                    |
//!
//! Views never copy or allocate. Constructors come in two forms, as in smoltcp: `new_unchecked`
//! (no length check; getters may panic on a short buffer) and `new_checked` (verifies that every
//! header field the getters read is inside the buffer, and that length fields are consistent).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ceten;
pub mod checksum;
pub mod ern;
pub mod eten;
pub mod ethernet;
pub mod flow;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod offload;
pub mod tcp;
pub mod tcpopt;
pub mod udp;

pub use flow::FlowKey;

use core::fmt;

/// Why a buffer could not be viewed as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the header, or than a length field says.
    Truncated,
    /// A field holds a value this code does not accept (bad version, header length, ...).
    Malformed,
    /// The checksum does not verify.
    Checksum,
    /// A well-formed packet this code does not handle (for example an unknown GSO type).
    Unsupported,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => write!(f, "truncated packet"),
            Error::Malformed => write!(f, "malformed packet"),
            Error::Checksum => write!(f, "checksum error"),
            Error::Unsupported => write!(f, "unsupported packet"),
        }
    }
}

impl std::error::Error for Error {}

/// Result of parsing a packet.
pub type Result<T> = core::result::Result<T, Error>;

/// IP protocol numbers (the IPv4 `protocol` field, the IPv6 `next header` field).
pub mod ip_proto {
    /// ICMP for IPv4.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMP for IPv6.
    pub const ICMPV6: u8 = 58;
}

/// A range of bytes in a header.
pub(crate) type Field = core::ops::Range<usize>;
/// The bytes from an offset to the end of the buffer.
pub(crate) type Rest = core::ops::RangeFrom<usize>;
