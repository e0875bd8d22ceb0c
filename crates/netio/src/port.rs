//! Ports: where frames enter and leave the emulator.
//!
//! - `af_packet`: a network interface (veth end, physical NIC) opened with two AF_PACKET sockets:
//!   an rx socket (`ETH_P_ALL`, promiscuous, `PACKET_IGNORE_OUTGOING` so our own transmissions are
//!   never read back, `PACKET_VNET_HDR` so GSO super-packets and partial checksums are described,
//!   `PACKET_AUXDATA` so stripped VLAN tags can be put back), read through a `PACKET_RX_RING`
//!   (TPACKET_V2, see [`PacketRx`]) in batches; and
//!   a tx socket (protocol 0, so it receives nothing, `PACKET_QDISC_BYPASS`) written with `sendmmsg`.
//! - `af_xdp`: one receive queue of an interface through an AF_XDP socket (see `afxdp`).
//! - `tap`: a TAP device (`IFF_TAP | IFF_NO_PI | IFF_VNET_HDR`, TSO/USO/checksum offload enabled so
//!   the host hands over super-packets, which we segment), read and written with one call per frame.
//!
//! Every received frame comes with its [`VirtioNetHdr`]; the data plane completes partial checksums
//! and segments super-packets before the link model sees anything (see `dataplane.rs`).

use crate::afxdp::{self, XdpRx, XdpTx};
use crate::sys::{self, cvt};
use packet::ethernet::VlanTag;
use packet::offload::{VirtioNetHdr, VNET_HDR_LEN};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Largest frame we accept: a 64 KiB GSO super-packet plus headers.
pub const MAX_FRAME: usize = 65536 + 256;
/// Frames per receive batch and per sendmmsg call.
pub const BATCH: usize = 32;

const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_AUXDATA: libc::c_int = 8;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const ETH_P_ALL: u16 = 0x0003;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TpacketAuxdata {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

fn packet_socket(ifname: &str, what: &str) -> io::Result<OwnedFd> {
    // Protocol 0: nothing is queued until bind() names the interface and protocol.
    // SAFETY: plain syscall, fd owned at once.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
            return Err(io::Error::new(
                e.kind(),
                format!("port {ifname}: cannot open an AF_PACKET {what} socket: {e} (needs CAP_NET_RAW: run as root)"),
            ));
        }
        return Err(e);
    }
    // SAFETY: fd is a fresh, valid descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind_packet(fd: RawFd, ifindex: u32, proto: u16) -> io::Result<()> {
    // SAFETY: zeroed sockaddr_ll filled with family, protocol and ifindex.
    unsafe {
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto.to_be();
        sll.sll_ifindex = ifindex as i32;
        cvt(libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ))?;
    }
    Ok(())
}

fn set_buf(fd: RawFd, force: libc::c_int, plain: libc::c_int, bytes: libc::c_int) {
    if sys::setsockopt(fd, libc::SOL_SOCKET, force, &bytes).is_err() {
        let _ = sys::setsockopt(fd, libc::SOL_SOCKET, plain, &bytes);
    }
}

/// One received frame: the bytes after the virtio header, the header, and a stripped VLAN tag.
pub struct RxFrame<'a> {
    /// The frame (Ethernet header first), writable so checksums can be completed in place.
    pub data: &'a mut [u8],
    /// Offload description (all zero when the frame is complete).
    pub vnet: VirtioNetHdr,
    /// A VLAN tag the kernel moved out of the frame into metadata, to be put back.
    pub vlan: Option<VlanTag>,
    /// Kernel receive time (CLOCK_REALTIME, ns), when the port gives one.
    pub rx_realtime_ns: Option<u64>,
}

/// The receiving half of a port.
pub enum RxPort {
    /// AF_PACKET socket read through its `PACKET_RX_RING`.
    Packet(PacketRx),
    /// TAP device.
    Tap(TapRx),
    /// AF_XDP socket.
    Xdp(XdpRx),
}

/// The sending half of a port.
pub enum TxPort {
    /// AF_PACKET socket written with sendmmsg.
    Packet(PacketTx),
    /// TAP device.
    Tap(TapTx),
    /// AF_XDP socket.
    Xdp(XdpTx),
}

/// sendmmsg state for one AF_PACKET tx socket.
pub struct PacketTx {
    fd: OwnedFd,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

// SAFETY: iovs/msgs are filled and used within one send_batch call.
unsafe impl Send for PacketTx {}

/// Opens interface `ifname` as an AF_PACKET port.
pub fn open_af_packet(ifname: &str) -> io::Result<(RxPort, TxPort)> {
    let ifindex = sys::if_index(ifname)
        .map_err(|e| io::Error::new(e.kind(), format!("port {ifname}: {e}")))?;
    if let Err(e) = sys::set_link_up(ifname) {
        eprintln!(
            "{}: warning: could not set {ifname} up: {e}",
            sys::program()
        );
    }
    let rx = packet_socket(ifname, "rx")?;
    let r = rx.as_raw_fd();
    sys::setsockopt(r, SOL_PACKET, PACKET_VNET_HDR, &1)
        .map_err(|e| annotate(ifname, "PACKET_VNET_HDR", e))?;
    sys::setsockopt(r, SOL_PACKET, PACKET_AUXDATA, &1)
        .map_err(|e| annotate(ifname, "PACKET_AUXDATA", e))?;
    // Kernel receive timestamps: a frame's arrival time does not depend on when we wake up.
    sys::setsockopt(r, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1)
        .map_err(|e| annotate(ifname, "SO_TIMESTAMPNS", e))?;
    if let Err(e) = sys::setsockopt(r, SOL_PACKET, PACKET_IGNORE_OUTGOING, &1) {
        // Kernels before 4.20: our own transmissions would be read back as input.
        return Err(annotate(
            ifname,
            "PACKET_IGNORE_OUTGOING (kernel >= 4.20 needed)",
            e,
        ));
    }
    // Frames too big for a ring frame are queued whole on the socket (PACKET_COPY_THRESH).
    set_buf(r, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, COPY_RCVBUF);
    sys::setsockopt(r, SOL_PACKET, PACKET_COPY_THRESH, &1)
        .map_err(|e| annotate(ifname, "PACKET_COPY_THRESH", e))?;
    // The ring exists before bind, so no frame is ever queued outside it.
    let ring = Ring::new(r, rx_ring_bytes()?)
        .map_err(|e| annotate(ifname, "PACKET_RX_RING (TPACKET_V2)", e))?;
    bind_packet(r, ifindex, ETH_P_ALL).map_err(|e| annotate(ifname, "bind", e))?;
    // SAFETY: packet_mreq is plain integers and bytes, valid zeroed.
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = ifindex as i32;
    mr.mr_type = PACKET_MR_PROMISC;
    sys::setsockopt(r, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr)
        .map_err(|e| annotate(ifname, "promiscuous mode", e))?;
    sys::set_nonblocking(r)?;

    let tx = packet_socket(ifname, "tx")?;
    let t = tx.as_raw_fd();
    // Bypassing the qdisc saves a little per frame but hides our output from tcpdump on the port;
    // off unless asked for.
    if std::env::var("SATLAB_QDISC_BYPASS").is_ok_and(|v| v == "1") {
        if let Err(e) = sys::setsockopt(t, SOL_PACKET, PACKET_QDISC_BYPASS, &1) {
            eprintln!(
                "{}: warning: {ifname}: PACKET_QDISC_BYPASS: {e}",
                sys::program()
            );
        }
    }
    set_buf(t, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, 8 << 20);
    bind_packet(t, ifindex, 0).map_err(|e| annotate(ifname, "bind tx", e))?;

    Ok((
        RxPort::Packet(PacketRx::new(rx, ring)),
        TxPort::Packet(PacketTx::new(tx)),
    ))
}

/// Opens queue `queue` of interface `ifname` as an AF_XDP port, and says on stderr what the
/// kernel gave (native or generic XDP, zero-copy or copy mode).
pub fn open_af_xdp(ifname: &str, queue: u32, mode: afxdp::Mode) -> io::Result<(RxPort, TxPort)> {
    let (rx, tx, got) = afxdp::open(ifname, queue, mode)?;
    eprintln!(
        "{}: port {ifname}: af_xdp queue {queue}: {got}",
        sys::program()
    );
    Ok((RxPort::Xdp(rx), TxPort::Xdp(tx)))
}

fn annotate(ifname: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("port {ifname}: {what}: {e}"))
}

impl PacketTx {
    fn new(fd: OwnedFd) -> PacketTx {
        PacketTx {
            fd,
            iovs: Vec::with_capacity(BATCH),
            msgs: Vec::with_capacity(BATCH),
        }
    }

    /// Sends `frames`; returns (sent, failed). Blocks while the socket's send buffer is full.
    fn send_batch(&mut self, frames: &[Vec<u8>]) -> (usize, usize) {
        let (mut sent, mut failed) = (0, 0);
        for chunk in frames.chunks(BATCH) {
            self.iovs.clear();
            self.msgs.clear();
            for f in chunk {
                self.iovs.push(libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                });
            }
            for i in 0..chunk.len() {
                // SAFETY: zeroed msghdr is valid.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = &mut self.iovs[i];
                h.msg_hdr.msg_iovlen = 1;
                self.msgs.push(h);
            }
            let mut at = 0;
            while at < chunk.len() {
                // SAFETY: msgs[at..] valid, pointing into frames that outlive the call.
                let n = unsafe {
                    libc::sendmmsg(
                        self.fd.as_raw_fd(),
                        self.msgs[at..].as_mut_ptr(),
                        (chunk.len() - at) as u32,
                        0,
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    // The frame at `at` was refused (too big for the MTU, interface down, ...): skip it.
                    failed += 1;
                    at += 1;
                } else {
                    sent += n as usize;
                    at += n as usize;
                }
            }
        }
        (sent, failed)
    }
}

// ---------------------------------------------------------------------------------------------
// AF_PACKET receive ring

/// Bytes per ring frame. A frame's data starts at `tp_mac` (76 with the V2 header, the sockaddr_ll
/// and the 10-byte virtio header in front of it), so a ring frame holds up to 1972 bytes of frame:
/// every 1500-MTU frame, tagged or not. Larger frames (GSO super-packets, jumbo frames) do not fit;
/// with `PACKET_COPY_THRESH` the kernel then also queues the whole frame on the socket and flags the
/// ring frame `TP_STATUS_COPY`, and we read that copy with `recvmsg` (see [`PacketRx::recv_batch`]).
const RING_FRAME_SIZE: usize = 2048;
/// Bytes per ring block (kernel allocation unit; a multiple of the page and frame sizes).
const RING_BLOCK_SIZE: usize = 1 << 20;
/// Default ring size per rx socket, MiB (`SATLAB_RX_RING_MB`): 16384 frames, 65 ms of 1500-byte
/// frames at 3 Gbit/s, for the data plane's scheduling hiccups on a loaded machine.
const RX_RING_MB_DEFAULT: usize = 32;
/// Accepted range of `SATLAB_RX_RING_MB`.
const RX_RING_MB_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;
/// Receive buffer for the frames too big for a ring frame (queued whole on the socket; only
/// allocated while such frames wait): 8 MiB, about 120 64-KiB super-packets.
const COPY_RCVBUF: libc::c_int = 8 << 20;

// Blocks hold whole frames (frame i is at i * RING_FRAME_SIZE) and are whole pages; a 1500-MTU
// frame with an inline VLAN tag fits a ring frame (tp_mac of a V2 frame with a virtio header:
// align16(52 + 16) + 10 - 14 = 76); the kernel structures have their C sizes.
const _: () = {
    assert!(
        RING_BLOCK_SIZE.is_multiple_of(RING_FRAME_SIZE) && RING_BLOCK_SIZE.is_multiple_of(4096)
    );
    assert!(76 + 1514 + 4 <= RING_FRAME_SIZE);
    assert!(std::mem::size_of::<Tpacket2Hdr>() == 32 && std::mem::size_of::<TpacketReq>() == 16);
};

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_COPY_THRESH: libc::c_int = 7;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1 << 0;
const TP_STATUS_COPY: u32 = 1 << 1;

/// `struct tpacket_req`.
#[repr(C)]
#[derive(Clone, Copy)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

/// `struct tpacket2_hdr`, at the start of every ring frame.
#[repr(C)]
#[derive(Clone, Copy)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

/// The ring size asked for with `SATLAB_RX_RING_MB` (MiB per af_packet rx socket), in bytes.
fn rx_ring_bytes() -> io::Result<usize> {
    parse_rx_ring_mb(std::env::var("SATLAB_RX_RING_MB").ok().as_deref())
}

/// `SATLAB_RX_RING_MB`'s value (unset: the default) in bytes; outside the range is an error
/// naming the variable and the limits.
fn parse_rx_ring_mb(v: Option<&str>) -> io::Result<usize> {
    let Some(v) = v else {
        return Ok(RX_RING_MB_DEFAULT << 20);
    };
    match v.trim().parse::<usize>() {
        Ok(mb) if RX_RING_MB_RANGE.contains(&mb) => Ok(mb << 20),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "SATLAB_RX_RING_MB: {v:?} is not a whole number of MiB in [{}, {}]",
                RX_RING_MB_RANGE.start(),
                RX_RING_MB_RANGE.end()
            ),
        )),
    }
}

/// The mmap'd `PACKET_RX_RING` of one socket: `frames` frames of [`RING_FRAME_SIZE`] bytes.
struct Ring {
    base: *mut u8,
    bytes: usize,
    frames: usize,
}

impl Ring {
    /// Sets up a TPACKET_V2 ring of `bytes` on `fd` (before bind, after `PACKET_VNET_HDR`) and maps it.
    fn new(fd: RawFd, bytes: usize) -> io::Result<Ring> {
        sys::setsockopt(fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V2)?;
        let blocks = bytes.div_ceil(RING_BLOCK_SIZE);
        let frames = blocks * (RING_BLOCK_SIZE / RING_FRAME_SIZE);
        let req = TpacketReq {
            tp_block_size: RING_BLOCK_SIZE as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: RING_FRAME_SIZE as u32,
            tp_frame_nr: frames as u32,
        };
        sys::setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req)?;
        let bytes = blocks * RING_BLOCK_SIZE;
        // SAFETY: mapping the ring the kernel just allocated for this socket; unmapped in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            bytes,
            frames,
        })
    }

    fn frame_ptr(&self, idx: usize) -> *mut u8 {
        debug_assert!(idx < self.frames);
        // SAFETY: idx < frames, and frames * RING_FRAME_SIZE == bytes (blocks hold whole frames).
        unsafe { self.base.add(idx * RING_FRAME_SIZE) }
    }

    /// The status word of frame `idx`, shared with the kernel.
    fn status(&self, idx: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned field of the frame header; the kernel
        // writes it after the frame's data (smp_wmb), we read it with Acquire before the data.
        unsafe { AtomicU32::from_ptr(self.frame_ptr(idx).cast()) }
    }

    fn header(&self, idx: usize) -> Tpacket2Hdr {
        // SAFETY: the header of a frame the kernel handed to us (TP_STATUS_USER seen).
        unsafe { std::ptr::read_volatile(self.frame_ptr(idx).cast()) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in Ring::new.
        unsafe { libc::munmap(self.base.cast(), self.bytes) };
    }
}

/// A frame too big for the ring, read from the socket queue with `recvmsg`.
struct CopySlot {
    buf: Box<[u8]>,
    ctrl: [u64; 16],
    /// Bytes read (virtio header included); `None` when the copy was missing or truncated.
    len: Option<usize>,
    vlan: Option<VlanTag>,
    rx_realtime_ns: Option<u64>,
}

/// One AF_PACKET rx socket with its receive ring.
pub struct PacketRx {
    fd: OwnedFd,
    ring: Ring,
    /// Ring index of the first frame of the current batch.
    batch_start: usize,
    /// Frames in the current batch, still owned by us (given back at the next `recv_batch`).
    held: usize,
    /// Per batch position: the `recvmsg` copy of a `TP_STATUS_COPY` frame.
    copies: Vec<CopySlot>,
    /// Frames dropped because they did not fit (neither a ring frame nor a queued copy).
    pub truncated: u64,
    /// Reads that found the ring empty (the socket error is checked on some of them).
    empty_reads: u64,
}

/// A pending socket error is looked for on the first of every this many empty reads.
const ERROR_CHECK_EVERY: u64 = 64;

// SAFETY: the ring mapping and the copy slots are owned by this struct and move with it.
unsafe impl Send for PacketRx {}

impl PacketRx {
    fn new(fd: OwnedFd, ring: Ring) -> PacketRx {
        let copies = (0..BATCH)
            .map(|_| CopySlot {
                // Zeroed allocation: pages are only touched when a big frame arrives.
                buf: vec![0u8; MAX_FRAME + VNET_HDR_LEN].into_boxed_slice(),
                ctrl: [0; 16],
                len: None,
                vlan: None,
                rx_realtime_ns: None,
            })
            .collect();
        PacketRx {
            fd,
            ring,
            batch_start: 0,
            held: 0,
            copies,
            truncated: 0,
            empty_reads: 0,
        }
    }

    /// Gives the previous batch back to the kernel and takes the frames waiting in the ring now
    /// (up to [`BATCH`]); the whole-frame copies of frames too big for the ring are read here, in
    /// ring order, which is the order the kernel queued them in.
    fn recv_batch(&mut self) -> io::Result<usize> {
        let frames = self.ring.frames;
        for k in 0..self.held {
            // Release: our reads of the frame are done before the kernel may overwrite it.
            self.ring
                .status((self.batch_start + k) % frames)
                .store(TP_STATUS_KERNEL, Ordering::Release);
        }
        self.batch_start = (self.batch_start + self.held) % frames;
        self.held = 0;
        let mut n = 0;
        while n < BATCH {
            let idx = (self.batch_start + n) % frames;
            let st = self.ring.status(idx).load(Ordering::Acquire);
            if st & TP_STATUS_USER == 0 {
                break;
            }
            if st & TP_STATUS_COPY != 0 {
                self.read_copy(n);
            }
            n += 1;
        }
        self.held = n;
        self.empty_reads += u64::from(n == 0);
        if n == 0 && self.empty_reads % ERROR_CHECK_EVERY == 1 {
            // Nothing in the ring: report a pending socket error (interface down or deleted) as a
            // read would, so the data plane pauses instead of polling a dead fd (epoll keeps
            // signalling EPOLLERR until the error is read). Not on every empty read: a data plane
            // busy-polling before a deadline reads an empty ring thousands of times a second,
            // and the getsockopt was 8 % of its time at 3.5 Gbit/s; a dead fd's EPOLLERR storm
            // lasts at most ERROR_CHECK_EVERY wake-ups.
            let mut err: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: reading an int socket option into an int.
            cvt(unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    (&mut err as *mut libc::c_int).cast(),
                    &mut len,
                )
            })?;
            if err != 0 {
                return Err(io::Error::from_raw_os_error(err));
            }
        }
        Ok(n)
    }

    /// Reads the queued whole copy of the `TP_STATUS_COPY` frame at batch position `n`.
    fn read_copy(&mut self, n: usize) {
        let fd = self.fd.as_raw_fd();
        let slot = &mut self.copies[n];
        slot.len = None;
        slot.vlan = None;
        slot.rx_realtime_ns = None;
        let mut iov = libc::iovec {
            iov_base: slot.buf.as_mut_ptr().cast(),
            iov_len: slot.buf.len(),
        };
        // SAFETY: zeroed msghdr is valid; pointers set to the slot's buffers.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        h.msg_control = slot.ctrl.as_mut_ptr().cast();
        // A pending socket error is returned before the queued frame: retry once after it.
        for _ in 0..2 {
            h.msg_controllen = std::mem::size_of_val(&slot.ctrl);
            h.msg_flags = 0;
            // SAFETY: h points at live buffers of the given sizes.
            let r = unsafe { libc::recvmsg(fd, &mut h, libc::MSG_DONTWAIT) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EAGAIN) {
                    break;
                }
                continue;
            }
            if h.msg_flags & libc::MSG_TRUNC != 0 {
                break;
            }
            let (vlan, ts) = parse_cmsgs(&h);
            slot.len = Some(r as usize);
            slot.vlan = vlan;
            slot.rx_realtime_ns = ts;
            break;
        }
    }

    fn frame(&mut self, i: usize) -> Option<RxFrame<'_>> {
        if i >= self.held {
            return None;
        }
        let idx = (self.batch_start + i) % self.ring.frames;
        let h = self.ring.header(idx);
        if h.tp_status & TP_STATUS_COPY != 0 {
            let slot = &mut self.copies[i];
            let Some(len) = slot.len else {
                self.truncated += 1;
                return None;
            };
            if len < VNET_HDR_LEN + 14 {
                return None;
            }
            let buf = &mut slot.buf[..len];
            let vnet = VirtioNetHdr::parse(buf).ok()?;
            return Some(RxFrame {
                data: &mut buf[VNET_HDR_LEN..],
                vnet,
                vlan: slot.vlan,
                rx_realtime_ns: slot.rx_realtime_ns,
            });
        }
        let (mac, snap) = (usize::from(h.tp_mac), h.tp_snaplen as usize);
        if snap < h.tp_len as usize {
            // Did not fit and no whole copy could be queued (receive buffer full).
            self.truncated += 1;
            return None;
        }
        if snap < 14
            || mac < VNET_HDR_LEN + std::mem::size_of::<Tpacket2Hdr>()
            || mac + snap > RING_FRAME_SIZE
        {
            return None;
        }
        // SAFETY: bytes [mac - 10, mac + snap) of a frame we own until the next recv_batch,
        // checked to lie inside the frame; borrowed mutably through &mut self.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(
                self.ring.frame_ptr(idx).add(mac - VNET_HDR_LEN),
                VNET_HDR_LEN + snap,
            )
        };
        let vnet = VirtioNetHdr::parse(buf).ok()?;
        let vlan = vlan_of(h.tp_status, h.tp_vlan_tci, h.tp_vlan_tpid);
        // The kernel always stamps ring frames (the skb's software timestamp when it has one, as
        // SO_TIMESTAMPNS on the socket makes sure, otherwise the time of the copy), CLOCK_REALTIME.
        let rx_realtime_ns = Some(u64::from(h.tp_sec) * 1_000_000_000 + u64::from(h.tp_nsec));
        Some(RxFrame {
            data: &mut buf[VNET_HDR_LEN..],
            vnet,
            vlan,
            rx_realtime_ns,
        })
    }

    /// Frames the kernel dropped because the ring (or, for whole copies, the receive buffer) was
    /// full, since the last call.
    fn take_kernel_drops(&self) -> u64 {
        let mut st = [0u32; 2];
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: tpacket_stats is two u32 (tp_packets, tp_drops); reading resets them.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if r == 0 {
            u64::from(st[1])
        } else {
            0
        }
    }
}

/// A VLAN tag the kernel moved into metadata (`tp_status` flags, TCI and TPID).
fn vlan_of(status: u32, tci: u16, tpid: u16) -> Option<VlanTag> {
    if status & TP_STATUS_VLAN_VALID == 0 {
        return None;
    }
    let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
        tpid
    } else {
        0x8100
    };
    Some(VlanTag::from_tci(tpid, tci))
}

/// The VLAN tag (`PACKET_AUXDATA`) and kernel receive time (`SCM_TIMESTAMPNS`) of a `recvmsg`.
fn parse_cmsgs(h: &libc::msghdr) -> (Option<VlanTag>, Option<u64>) {
    let (mut vlan, mut ts_ns) = (None, None);
    // SAFETY: walking the control messages the kernel wrote into h's control buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == SOL_PACKET && (*c).cmsg_type == PACKET_AUXDATA {
                let aux: TpacketAuxdata = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                vlan = vlan_of(aux.tp_status, aux.tp_vlan_tci, aux.tp_vlan_tpid);
            } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                ts_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (vlan, ts_ns)
}

// ---------------------------------------------------------------------------------------------
// TAP

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;

/// Receiving half of a TAP device.
pub struct TapRx {
    fd: OwnedFd,
    bufs: Vec<Box<[u8]>>,
    lens: Vec<usize>,
}

/// Sending half of a TAP device.
pub struct TapTx {
    fd: OwnedFd,
}

/// Opens (creating it if needed) TAP device `name` with offloads, and sets it up.
pub fn open_tap(name: &str) -> io::Result<(RxPort, TxPort)> {
    // SAFETY: open + ioctls on the tun control device with a zeroed ifreq.
    let fd = unsafe {
        let raw = libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("port {name}: cannot open /dev/net/tun: {e}"),
            ));
        }
        let fd = OwnedFd::from_raw_fd(raw);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in name.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
        if libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut ifr) < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("port {name}: TUNSETIFF (create/attach TAP): {e} (needs CAP_NET_ADMIN; an existing device must be a TAP with vnet_hdr)"),
            ));
        }
        let sz: libc::c_int = VNET_HDR_LEN as libc::c_int;
        cvt(libc::ioctl(fd.as_raw_fd(), TUNSETVNETHDRSZ, &sz))?;
        let full = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6;
        if libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, full as libc::c_ulong) < 0 {
            cvt(libc::ioctl(
                fd.as_raw_fd(),
                TUNSETOFFLOAD,
                (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN) as libc::c_ulong,
            ))?;
        }
        fd
    };
    sys::set_link_up(name).map_err(|e| annotate(name, "set up", e))?;
    sys::set_nonblocking(fd.as_raw_fd())?;
    let txfd = fd.try_clone()?;
    let bufs = (0..BATCH)
        .map(|_| vec![0u8; MAX_FRAME + VNET_HDR_LEN].into_boxed_slice())
        .collect();
    Ok((
        RxPort::Tap(TapRx {
            fd,
            bufs,
            lens: vec![0; BATCH],
        }),
        TxPort::Tap(TapTx { fd: txfd }),
    ))
}

impl TapRx {
    fn recv_batch(&mut self) -> io::Result<usize> {
        let mut n = 0;
        while n < BATCH {
            // SAFETY: reading into an owned buffer of the given length.
            let r = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.bufs[n].as_mut_ptr().cast(),
                    self.bufs[n].len(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => break,
                    _ if n > 0 => break,
                    _ => return Err(e),
                }
            }
            self.lens[n] = r as usize;
            n += 1;
        }
        Ok(n)
    }

    fn frame(&mut self, i: usize) -> Option<RxFrame<'_>> {
        let len = self.lens[i];
        if len < VNET_HDR_LEN + 14 {
            return None;
        }
        let buf = &mut self.bufs[i][..len];
        let vnet = VirtioNetHdr::parse(buf).ok()?;
        Some(RxFrame {
            data: &mut buf[VNET_HDR_LEN..],
            vnet,
            vlan: None,
            rx_realtime_ns: None,
        })
    }
}

impl TapTx {
    fn send_batch(&mut self, frames: &[Vec<u8>]) -> (usize, usize) {
        let hdr = [0u8; VNET_HDR_LEN];
        let (mut sent, mut failed) = (0, 0);
        for f in frames {
            let iov = [
                libc::iovec {
                    iov_base: hdr.as_ptr() as *mut libc::c_void,
                    iov_len: hdr.len(),
                },
                libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                },
            ];
            // SAFETY: two valid iovecs.
            let r = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), 2) };
            if r < 0 {
                failed += 1;
            } else {
                sent += 1;
            }
        }
        (sent, failed)
    }
}

impl RxPort {
    /// Reads up to [`BATCH`] frames without blocking; returns how many (0 = nothing waiting).
    /// The previous batch is gone after this call (an af_packet port gives its ring frames back
    /// to the kernel here), so copy what is needed out of [`RxPort::frame`] before calling again.
    pub fn recv_batch(&mut self) -> io::Result<usize> {
        match self {
            RxPort::Packet(p) => p.recv_batch(),
            RxPort::Tap(t) => t.recv_batch(),
            RxPort::Xdp(x) => x.recv_batch(),
        }
    }

    /// Frame `i` of the last batch (`None` when it was truncated or too short).
    pub fn frame(&mut self, i: usize) -> Option<RxFrame<'_>> {
        match self {
            RxPort::Packet(p) => p.frame(i),
            RxPort::Tap(t) => t.frame(i),
            RxPort::Xdp(x) => x.frame(i),
        }
    }

    /// Frames the kernel dropped before we could read them, since the last call.
    pub fn take_kernel_drops(&self) -> u64 {
        match self {
            RxPort::Packet(p) => p.take_kernel_drops(),
            RxPort::Tap(_) => 0,
            RxPort::Xdp(x) => x.take_kernel_drops(),
        }
    }

    /// The descriptor to wait on for readability.
    pub fn fd(&self) -> RawFd {
        match self {
            RxPort::Packet(p) => p.fd.as_raw_fd(),
            RxPort::Tap(t) => t.fd.as_raw_fd(),
            RxPort::Xdp(x) => x.fd(),
        }
    }
}

impl TxPort {
    /// Sends whole frames; returns (sent, failed).
    pub fn send_batch(&mut self, frames: &[Vec<u8>]) -> (usize, usize) {
        match self {
            TxPort::Packet(p) => p.send_batch(frames),
            TxPort::Tap(t) => t.send_batch(frames),
            TxPort::Xdp(x) => x.send_batch(frames),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_ring_size_defaults_and_rejects_values_outside_its_range() {
        assert_eq!(parse_rx_ring_mb(None).unwrap(), 32 << 20);
        assert_eq!(parse_rx_ring_mb(Some("8")).unwrap(), 8 << 20);
        for bad in ["0", "1025", "-1", "2.5", "lots", ""] {
            let e = parse_rx_ring_mb(Some(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with("SATLAB_RX_RING_MB:") && e.contains("[1, 1024]"),
                "{bad}: {e}"
            );
        }
    }
}
