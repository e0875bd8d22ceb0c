//! The packet parsers (crates/packet) and linkmodel's frame classifiers on arbitrary bytes.
//!
//! One input is tried as every format at once: an Ethernet frame (flow key, IPv4/IPv6, TCP, UDP,
//! ICMP, ETEN notice, CETEN and IP-ERN options), a bare IP packet, a TCP option list, and a
//! `virtio_net_hdr` followed by a frame (checksum completion, GSO segmentation). Beyond "no
//! panic", accepted views must decode, and decoded forms must encode back to what was decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packet::FlowKey;
use packet::{ceten, ern, eten, ethernet, icmp, ip_proto, ipv4, ipv6, offload, tcp, tcpopt, udp};
use std::net::IpAddr;

fuzz_target!(|data: &[u8]| {
    flow_keys(data);
    if let Ok(f) = ethernet::Frame::new_checked(data) {
        ethernet_frame(&f);
        ip_packet(f.payload_ethertype(), f.payload());
    }
    ip_packet(ethernet::ethertype::IPV4, data);
    ip_packet(ethernet::ethertype::IPV6, data);
    icmp_message(data);
    tcp_options(data);
    vnet_frame(data);
    linkmodel_classifiers(data);
});

fn flow_keys(data: &[u8]) {
    let plain = FlowKey::parse(data);
    // The verified parse only adds a check: it accepts a subset, with the same key.
    if let Some(k) = FlowKey::parse_verified(data) {
        assert_eq!(plain, Some(k));
    }
    let _ = FlowKey::parse_ip(data);
}

fn ethernet_frame(f: &ethernet::Frame<&[u8]>) {
    let _ = (
        f.dst_addr(),
        f.src_addr(),
        f.ethertype(),
        f.vlan(),
        f.raw_payload(),
    );
    assert_eq!(
        f.header_len() + f.payload().len(),
        f.clone().into_inner().len()
    );
    let repr = ethernet::Repr::parse(f).expect("a checked frame decodes");
    // A payload EtherType that is itself a VLAN TPID (a third tag) would read as a tag again.
    if matches!(
        repr.ethertype,
        ethernet::ethertype::VLAN | ethernet::ethertype::QINQ
    ) {
        return;
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
    let back = ethernet::Frame::new_checked(&buf[..]).expect("an emitted header is checked");
    assert_eq!(ethernet::Repr::parse(&back), Ok(repr));
}

fn ip_packet(ethertype: u16, bytes: &[u8]) {
    match ethertype {
        ethernet::ethertype::IPV4 => {
            let Ok(ip) = ipv4::Packet::new_checked(bytes) else {
                return;
            };
            let _ = (
                ip.dscp(),
                ip.ecn(),
                ip.ident(),
                ip.dont_frag(),
                ip.more_frags(),
            );
            let _ = (ip.frag_offset(), ip.ttl(), ip.checksum(), ip.options());
            if let Ok(repr) = ipv4::Repr::parse(&ip) {
                let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
                repr.emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]));
                let back =
                    ipv4::Packet::new_checked(&buf[..]).expect("an emitted header is checked");
                assert_eq!(ipv4::Repr::parse(&back), Ok(repr));
            }
            let mut copy = bytes.to_vec();
            let mut w = ipv4::Packet::new_unchecked(&mut copy[..]);
            w.fill_checksum();
            assert!(w.verify_checksum());
            if !ip.is_later_fragment() {
                let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
                transport(src, dst, ip.protocol(), ip.payload());
            }
        }
        ethernet::ethertype::IPV6 => {
            let Ok(ip) = ipv6::Packet::new_checked(bytes) else {
                return;
            };
            let _ = (ip.traffic_class(), ip.flow_label(), ip.hop_limit());
            let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
            transport(src, dst, ip.next_header(), ip.payload());
        }
        _ => {}
    }
}

fn transport(src: IpAddr, dst: IpAddr, proto: u8, l4: &[u8]) {
    match proto {
        ip_proto::TCP => tcp_segment(src, dst, l4),
        ip_proto::UDP => udp_datagram(src, dst, l4),
        ip_proto::ICMP => icmp_message(l4),
        _ => {}
    }
}

fn tcp_segment(src: IpAddr, dst: IpAddr, bytes: &[u8]) {
    let Ok(t) = tcp::Packet::new_checked(bytes) else {
        return;
    };
    let _ = (
        t.src_port(),
        t.dst_port(),
        t.seq_number(),
        t.ack_number(),
        t.flags(),
    );
    let _ = (
        t.window_len(),
        t.urgent_at(),
        t.segment_len(),
        t.ece(),
        t.cwr(),
    );
    let _ = tcp::Repr::parse(&t, src, dst);
    tcp_options(t.options());
    // A filled checksum verifies, and RFC 1624's incremental update of a rewritten option (what
    // the gateway does to CETEN / IP-ERN fields) gives a checksum that verifies too.
    let mut seg = bytes.to_vec();
    let mut w = tcp::Packet::new_unchecked(&mut seg[..]);
    w.fill_checksum(src, dst);
    assert!(w.verify_checksum(src, dst));
    let opts = tcp::HEADER_LEN..usize::from(w.header_len());
    if opts.is_empty() {
        return;
    }
    let start = opts.start + usize::from(bytes[0]) % opts.len();
    let end = (start + 1 + usize::from(bytes[1]) % 64).min(opts.end);
    let old = seg[start..end].to_vec();
    let new: Vec<u8> = old.iter().map(|b| b.rotate_left(3) ^ 0xa5).collect();
    seg[start..end].copy_from_slice(&new);
    let mut w = tcp::Packet::new_unchecked(&mut seg[..]);
    let c = tcpopt::checksum_adjust(w.checksum(), start, &old, &new);
    w.set_checksum(c);
    assert!(
        w.verify_checksum(src, dst),
        "checksum_adjust at {start}..{end}"
    );
}

fn udp_datagram(src: IpAddr, dst: IpAddr, bytes: &[u8]) {
    let Ok(u) = udp::Packet::new_checked(bytes) else {
        return;
    };
    let _ = (u.src_port(), u.dst_port(), u.checksum(), u.payload());
    if let Ok(repr) = udp::Repr::parse(&u, src, dst) {
        let mut copy = bytes[..usize::from(u.len())].to_vec();
        let mut w = udp::Packet::new_unchecked(&mut copy[..]);
        repr.emit(&mut w, src, dst);
        let back = udp::Packet::new_checked(&copy[..]).expect("an emitted datagram is checked");
        assert_eq!(udp::Repr::parse(&back, src, dst), Ok(repr));
    }
}

fn icmp_message(bytes: &[u8]) {
    if let Ok(i) = icmp::Packet::new_checked(bytes) {
        let _ = (
            i.msg_type(),
            i.msg_code(),
            i.echo_ident(),
            i.echo_seq_no(),
            i.data(),
        );
        if let Ok(repr) = icmp::Repr::parse(&i) {
            let mut copy = bytes.to_vec();
            repr.emit(&mut icmp::Packet::new_unchecked(&mut copy[..]));
            let back = icmp::Packet::new_checked(&copy[..]).expect("an emitted message is checked");
            assert_eq!(icmp::Repr::parse(&back), Ok(repr));
        }
    }
    if let Ok(n) = eten::Packet::new_checked(bytes) {
        let _ = (
            n.msg_type(),
            n.code(),
            n.checksum(),
            n.version(),
            n.notice_seq(),
        );
        let _ = (n.mac(), n.mac_input(), n.quoted_src(), n.quoted_dst());
        if let Ok(repr) = eten::Repr::parse(&n) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut eten::Packet::new_unchecked(&mut buf[..]));
            let back = eten::Packet::new_checked(&buf[..]).expect("an emitted notice is checked");
            assert_eq!(eten::Repr::parse(&back), Ok(repr));
        }
    }
}

/// A TCP option list: a CETEN or IP-ERN option found in it (kind 253 or 254, RFC 6994) decodes
/// and encodes back to the same bytes; the views accept kind 254 only, which SatLab writes.
fn tcp_options(opts: &[u8]) {
    if let Some(at) = ceten::find(opts) {
        let bytes = &opts[at..at + ceten::LEN];
        match ceten::Opt::new_checked(bytes) {
            Ok(o) => {
                let mut buf = [0u8; ceten::LEN];
                ceten::Repr::parse(&o).emit(&mut ceten::Opt::new_unchecked(&mut buf[..]));
                assert_eq!(&buf[..], bytes);
            }
            Err(_) => assert_eq!(bytes[0], tcpopt::kind::EXP1),
        }
    }
    if let Some((at, _first)) = ern::find(opts) {
        let bytes = &opts[at..at + ern::LEN];
        match ern::Opt::new_checked(bytes) {
            Ok(o) => {
                let mut buf = [0u8; ern::LEN];
                ern::Repr::parse(&o).emit(&mut ern::Opt::new_unchecked(&mut buf[..]));
                assert_eq!(&buf[..], bytes);
            }
            Err(_) => assert_eq!(bytes[0], tcpopt::kind::EXP1),
        }
    }
}

/// A `virtio_net_hdr` and the frame after it, as a packet socket with PACKET_VNET_HDR gives them.
fn vnet_frame(data: &[u8]) {
    let Ok(hdr) = offload::VirtioNetHdr::parse(data) else {
        return;
    };
    let mut raw = [0u8; offload::VNET_HDR_LEN];
    hdr.emit(&mut raw);
    assert_eq!(&raw[..], &data[..offload::VNET_HDR_LEN]);
    let frame = &data[offload::VNET_HDR_LEN..];
    let _ = offload::complete_if_partial(&mut frame.to_vec(), &hdr);
    let Ok(gso) = offload::Gso::new(frame, &hdr) else {
        return;
    };
    let mss = usize::from(hdr.gso_size);
    let mut out = Vec::new();
    // Segments are cheap but a 1-byte MSS makes thousands: a few from each end are enough.
    let n = gso.count();
    for i in (0..n.min(8)).chain(n.saturating_sub(8).max(8)..n) {
        gso.write_segment(i, &mut out);
        assert!(out.len() <= gso.header_len() + mss);
        let _ = FlowKey::parse(&out);
    }
}

fn linkmodel_classifiers(data: &[u8]) {
    let (ip_end, tr_end) = linkmodel::bit_errors::header_bounds(data);
    assert!(ip_end <= tr_end && tr_end <= data.len());
    let _ = linkmodel::segment::tcp_data_key(data);
}
