//! The `af_xdp` port: one AF_XDP socket bound to one receive queue of an interface, with the
//! XDP program that steers that queue into it.
//!
//! What is set up, in order:
//! - a UMEM (anonymous memory cut into [`CHUNK`]-byte chunks): the first [`RX_CHUNKS`] chunks
//!   circulate between the fill ring and the rx ring, the last [`TX_CHUNKS`] between the tx ring
//!   and the completion ring, so the receiving and the sending half never share a chunk and can
//!   run on different threads;
//! - an XSKMAP and a six-instruction XDP program, `bpf_redirect_map(xskmap, rx_queue_index,
//!   XDP_PASS)`, hand-assembled below and loaded with BPF_PROG_LOAD. Why not a compiled object:
//!   the program is fixed, and an ELF loader (libbpf, or clang in the build) would be a C
//!   toolchain dependency for six instructions, against the raw-syscall approach of `bpfmap`.
//!   Frames of other queues, or arriving before the socket is in the map, go on to the kernel
//!   stack (the XDP_PASS fallback in the flags argument);
//! - a BPF link (BPF_LINK_CREATE) attaching the program to the interface, native (driver) mode
//!   first, generic (skb) mode when the driver has none; the link is a file descriptor, so the
//!   program goes away with the process however it ends;
//! - the socket bound zero-copy where the driver supports it, copy mode otherwise ([`Mode`]).
//!
//! One queue per port: the socket serves queue `queue` only. A multi-queue NIC must steer all the
//! port's traffic into that queue (`ethtool -L NIC combined 1`, or an ntuple/RSS rule); frames of
//! the other queues reach the kernel stack, not the emulator.
//!
//! Frames carry no offload metadata: the virtio header of every frame is all zero (XDP sees
//! frames as they are on the wire, no GSO super-packets: an XDP program on a veth end makes its
//! peer segment in software), but a partial checksum is not flagged either: a veth peer with
//! checksum offload on (`tx on`) hands over frames whose TCP/UDP checksum is unfinished, which
//! the receiving host then drops, so such a peer must send complete checksums (`ethtool -K PEER
//! tx off`; NICs put complete ones on the wire). A VLAN tag a NIC strips into metadata (`rxvlan`
//! offload) is lost, so turn that offload off on a NIC that carries tagged frames. Frames larger than a chunk
//! (jumbo MTUs, LRO/GRO aggregates) cannot be received: `open` refuses an interface whose MTU
//! does not fit.

use crate::bpfmap::{self, bpf};
use crate::port::{RxFrame, BATCH};
use crate::sys::{self, cvt};
use packet::offload::VirtioNetHdr;
use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// UMEM chunk size: one page, the largest the kernel accepts in aligned mode.
pub const CHUNK: usize = 4096;
/// Bytes the kernel keeps in front of every received frame (`XDP_PACKET_HEADROOM`).
const XDP_HEADROOM: usize = 256;
/// Largest frame a chunk holds on receive: 3840 bytes (an MTU of up to 3822 with a VLAN tag).
pub const MAX_RX_FRAME: usize = CHUNK - XDP_HEADROOM;
/// Chunks for receiving (the fill and rx rings have this many slots): 32 MiB, 8192 frames, the
/// memory of an af_packet port's default receive ring (which holds 16384 smaller frames).
const RX_CHUNKS: u32 = 8192;
/// Chunks for sending (the tx and completion rings have this many slots): 8 MiB.
const TX_CHUNKS: u32 = 2048;

/// How the socket is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Zero-copy where the driver supports it, copy mode otherwise.
    Auto,
    /// Zero-copy or fail (drivers with AF_XDP zero-copy support: i40e, ice, ixgbe, mlx5, ...).
    ZeroCopy,
    /// Copy mode: the kernel copies frames between its buffers and the UMEM (any driver).
    Copy,
}

/// What the kernel and driver gave a port (printed at start, asked for by the benchmark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    /// The XDP program runs in the driver (native) rather than on the skb (generic).
    pub native: bool,
    /// The socket is bound zero-copy.
    pub zerocopy: bool,
}

impl std::fmt::Display for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "XDP {}, {}",
            if self.native { "native" } else { "generic" },
            if self.zerocopy {
                "zero-copy"
            } else {
                "copy mode"
            }
        )
    }
}

const AF_XDP: libc::c_int = 44;
const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_PGOFF_RX_RING: libc::off_t = 0;
const XDP_PGOFF_TX_RING: libc::off_t = 0x8000_0000;
const XDP_UMEM_PGOFF_FILL_RING: libc::off_t = 0x1_0000_0000;
const XDP_UMEM_PGOFF_COMPLETION_RING: libc::off_t = 0x1_8000_0000;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// `struct xdp_umem_reg`.
#[repr(C)]
#[derive(Clone, Copy)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

/// `struct xdp_ring_offset`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RingOffset {
    producer: u64,
    consumer: u64,
    desc: u64,
    flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Default)]
struct MmapOffsets {
    rx: RingOffset,
    tx: RingOffset,
    fr: RingOffset,
    cr: RingOffset,
}

/// `struct sockaddr_xdp`.
#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

/// `struct xdp_desc`: a frame in the rx or tx ring.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct XdpDesc {
    addr: u64,
    len: u32,
    options: u32,
}

/// `struct xdp_statistics`.
#[repr(C)]
#[derive(Default)]
struct XdpStatistics {
    rx_dropped: u64,
    rx_invalid_descs: u64,
    tx_invalid_descs: u64,
    rx_ring_full: u64,
    rx_fill_ring_empty_descs: u64,
    tx_ring_empty_descs: u64,
}

/// The `BPF_PROG_LOAD` member of union bpf_attr (leading fields).
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The `BPF_LINK_CREATE` member of union bpf_attr (leading fields).
#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// `struct bpf_insn`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// The XDP program: `return bpf_redirect_map(&xskmap, ctx->rx_queue_index, XDP_PASS);`.
fn redirect_program(xskmap_fd: RawFd) -> [Insn; 6] {
    const BPF_PSEUDO_MAP_FD: u8 = 1;
    const XDP_PASS: i32 = 2;
    const FUNC_REDIRECT_MAP: i32 = 51;
    [
        // r2 = *(u32 *)(r1 + 16): xdp_md.rx_queue_index
        insn(0x61, 2, 1, 16, 0),
        // r1 = &xskmap (a 16-byte ld_imm64 of the map fd, resolved by the verifier)
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, xskmap_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS: the action when the map has no socket for this queue
        insn(0xb7, 3, 0, 0, XDP_PASS),
        // r0 = bpf_redirect_map(r1, r2, r3)
        insn(0x85, 0, 0, 0, FUNC_REDIRECT_MAP),
        // return r0
        insn(0x95, 0, 0, 0, 0),
    ]
}

/// An owned memory mapping.
struct Mmap {
    ptr: *mut u8,
    len: usize,
}

impl Mmap {
    fn anonymous(len: usize) -> io::Result<Mmap> {
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        Self::checked(p, len)
    }

    fn ring(fd: RawFd, len: usize, pgoff: libc::off_t) -> io::Result<Mmap> {
        // SAFETY: mapping a ring of the socket at its documented page offset.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff,
            )
        };
        Self::checked(p, len)
    }

    fn checked(p: *mut libc::c_void, len: usize) -> io::Result<Mmap> {
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap { ptr: p.cast(), len })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One single-producer single-consumer ring shared with the kernel.
struct Ring<T> {
    /// Keeps the ring mapped as long as the pointers below are used.
    _map: Mmap,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    descs: *mut T,
    size: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, off: &RingOffset, size: u32, pgoff: libc::off_t) -> io::Result<Ring<T>> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = Mmap::ring(fd, len, pgoff)?;
        // SAFETY: the offsets the kernel gave lie inside the mapping (len covers desc + entries).
        unsafe {
            Ok(Ring {
                producer: map.ptr.add(off.producer as usize).cast(),
                consumer: map.ptr.add(off.consumer as usize).cast(),
                descs: map.ptr.add(off.desc as usize).cast(),
                size,
                _map: map,
            })
        }
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 in the live mapping, written by one side only.
        unsafe { &*self.producer }
    }

    fn cons(&self) -> &AtomicU32 {
        // SAFETY: as for prod.
        unsafe { &*self.consumer }
    }

    fn get(&self, idx: u32) -> T {
        // SAFETY: index masked into the ring (size is a power of two).
        unsafe { *self.descs.add((idx & (self.size - 1)) as usize) }
    }

    fn set(&self, idx: u32, v: T) {
        // SAFETY: as for get; the slot belongs to the producer until the producer index moves.
        unsafe { *self.descs.add((idx & (self.size - 1)) as usize) = v }
    }
}

/// What both halves share: the socket, the UMEM, and the BPF objects, freed when both are gone.
/// Field order is drop order: the link first (the program stops steering frames to us), the
/// socket, then the memory the kernel was writing into.
struct Xsk {
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
    fd: OwnedFd,
    umem: Mmap,
}

// SAFETY: the rx half touches only the rx chunks and rings, the tx half only the tx ones; the
// socket and mappings live as long as the Arc.
unsafe impl Send for Xsk {}
unsafe impl Sync for Xsk {}

/// The receiving half of an af_xdp port.
pub struct XdpRx {
    xsk: Arc<Xsk>,
    rx: Ring<XdpDesc>,
    fill: Ring<u64>,
    held: Box<[XdpDesc]>,
    n_held: usize,
    /// Kernel drop counters (rx_dropped + rx_ring_full) at the last `take_kernel_drops`.
    drops_seen: Cell<u64>,
}

/// The sending half of an af_xdp port.
pub struct XdpTx {
    xsk: Arc<Xsk>,
    tx: Ring<XdpDesc>,
    comp: Ring<u64>,
    free: Vec<u64>,
}

// SAFETY: each half's rings are used from one thread at a time (`&mut self`).
unsafe impl Send for XdpRx {}
unsafe impl Send for XdpTx {}

fn annotate(ifname: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("port {ifname}: af_xdp: {what}: {e}"))
}

fn getsockopt<T>(fd: RawFd, opt: libc::c_int, val: &mut T) -> io::Result<()> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: pointer to a live value of the given size.
    cvt(unsafe { libc::getsockopt(fd, SOL_XDP, opt, (val as *mut T).cast(), &mut len) })?;
    Ok(())
}

fn owned(r: libc::c_long) -> OwnedFd {
    // SAFETY: a successful bpf(2) object command returns a new descriptor that we now own.
    unsafe { OwnedFd::from_raw_fd(r as RawFd) }
}

/// The error when frames of an `mtu`-byte MTU (Ethernet header and one VLAN tag added) do not
/// fit a UMEM chunk.
fn check_mtu(ifname: &str, mtu: usize) -> io::Result<()> {
    let frame = mtu + 14 + 4;
    if frame <= MAX_RX_FRAME {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "port {ifname}: af_xdp: MTU {mtu} means frames of up to {frame} bytes, more than the \
             {MAX_RX_FRAME} a {CHUNK}-byte UMEM chunk holds after the kernel's {XDP_HEADROOM}-byte \
             headroom; lower the MTU to at most {} or use kind af_packet",
            MAX_RX_FRAME - 18
        ),
    ))
}

/// Opens queue `queue` of interface `ifname` as an af_xdp port; returns its halves and what the
/// kernel gave (native or generic XDP, zero-copy or copy).
pub fn open(ifname: &str, queue: u32, mode: Mode) -> io::Result<(XdpRx, XdpTx, Attached)> {
    let ifindex = prepare_interface(ifname)?;
    let fd = xdp_socket(ifname)?;
    let s = fd.as_raw_fd();
    let umem = register_umem(ifname, s)?;
    let rings = map_rings(ifname, s)?;

    // Every rx chunk goes to the kernel before the socket is bound.
    for i in 0..RX_CHUNKS {
        rings.fill.set(i, u64::from(i) * CHUNK as u64);
    }
    rings.fill.prod().store(RX_CHUNKS, Ordering::Release);

    let (map, prog, link, native) = attach_program(ifname, ifindex, queue)?;
    let zerocopy = bind(ifname, s, ifindex, queue, mode)?;
    let (key, value) = (&queue as *const u32, &s as *const RawFd);
    bpfmap::update_elem(&map, key.cast(), value.cast(), 0)
        .map_err(|e| annotate(ifname, "XSKMAP update", e))?;
    sys::set_nonblocking(s)?;

    let xsk = Arc::new(Xsk {
        _link: link,
        _prog: prog,
        _map: map,
        fd,
        umem,
    });
    let free = (RX_CHUNKS..RX_CHUNKS + TX_CHUNKS)
        .map(|i| u64::from(i) * CHUNK as u64)
        .collect();
    Ok((
        XdpRx {
            xsk: xsk.clone(),
            rx: rings.rx,
            fill: rings.fill,
            held: vec![XdpDesc::default(); BATCH].into_boxed_slice(),
            n_held: 0,
            drops_seen: Cell::new(0),
        },
        XdpTx {
            xsk,
            tx: rings.tx,
            comp: rings.comp,
            free,
        },
        Attached { native, zerocopy },
    ))
}

/// The interface's index, once it is up (a warning if it cannot be set up) and its MTU fits a
/// UMEM chunk.
fn prepare_interface(ifname: &str) -> io::Result<u32> {
    let ifindex = sys::if_index(ifname)
        .map_err(|e| io::Error::new(e.kind(), format!("port {ifname}: {e}")))?;
    if let Err(e) = sys::set_link_up(ifname) {
        eprintln!(
            "{}: warning: could not set {ifname} up: {e}",
            sys::program()
        );
    }
    check_mtu(
        ifname,
        sys::interface_mtu(ifname).map_err(|e| annotate(ifname, "MTU", e))?,
    )?;
    Ok(ifindex)
}

fn xdp_socket(ifname: &str) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall, fd owned at once.
    let raw = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(annotate(
            ifname,
            "socket (needs CAP_NET_RAW and a kernel with CONFIG_XDP_SOCKETS)",
            e,
        ));
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The UMEM (rx chunks, then tx chunks), registered with socket `s`, and the sizes of its rings.
fn register_umem(ifname: &str, s: RawFd) -> io::Result<Mmap> {
    let umem_len = (RX_CHUNKS + TX_CHUNKS) as usize * CHUNK;
    let umem = Mmap::anonymous(umem_len).map_err(|e| annotate(ifname, "UMEM", e))?;
    let reg = UmemReg {
        addr: umem.ptr as u64,
        len: umem_len as u64,
        chunk_size: CHUNK as u32,
        headroom: 0,
        flags: 0,
        tx_metadata_len: 0,
    };
    sys::setsockopt(s, SOL_XDP, XDP_UMEM_REG, &reg)
        .map_err(|e| annotate(ifname, "XDP_UMEM_REG", e))?;
    for (opt, n, what) in [
        (XDP_UMEM_FILL_RING, RX_CHUNKS, "fill ring"),
        (XDP_UMEM_COMPLETION_RING, TX_CHUNKS, "completion ring"),
        (XDP_RX_RING, RX_CHUNKS, "rx ring"),
        (XDP_TX_RING, TX_CHUNKS, "tx ring"),
    ] {
        sys::setsockopt(s, SOL_XDP, opt, &n).map_err(|e| annotate(ifname, what, e))?;
    }
    Ok(umem)
}

/// The socket's four rings, mapped.
struct Rings {
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<XdpDesc>,
    tx: Ring<XdpDesc>,
}

fn map_rings(ifname: &str, s: RawFd) -> io::Result<Rings> {
    let mut off = MmapOffsets::default();
    getsockopt(s, XDP_MMAP_OFFSETS, &mut off)
        .map_err(|e| annotate(ifname, "XDP_MMAP_OFFSETS", e))?;
    let map_err = |e| annotate(ifname, "mmap ring", e);
    Ok(Rings {
        fill: Ring::map(s, &off.fr, RX_CHUNKS, XDP_UMEM_PGOFF_FILL_RING).map_err(map_err)?,
        comp: Ring::map(s, &off.cr, TX_CHUNKS, XDP_UMEM_PGOFF_COMPLETION_RING).map_err(map_err)?,
        rx: Ring::map(s, &off.rx, RX_CHUNKS, XDP_PGOFF_RX_RING).map_err(map_err)?,
        tx: Ring::map(s, &off.tx, TX_CHUNKS, XDP_PGOFF_TX_RING).map_err(map_err)?,
    })
}

/// Creates the XSKMAP, loads the program and links it to the interface (native mode, else
/// generic). Returns (map, program, link, native).
fn attach_program(
    ifname: &str,
    ifindex: u32,
    queue: u32,
) -> io::Result<(OwnedFd, OwnedFd, OwnedFd, bool)> {
    let map = bpfmap::create_map(BPF_MAP_TYPE_XSKMAP, 4, 4, queue + 1)
        .map_err(|e| annotate(ifname, "BPF_MAP_CREATE XSKMAP (needs CAP_BPF)", e))?;
    let insns = redirect_program(map.as_raw_fd());
    let mut log = vec![0u8; 4096];
    let mut name = [0u8; 16];
    name[..9].copy_from_slice(b"satlab_xs");
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: c"GPL".as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        ..Default::default()
    };
    let prog = match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => owned(fd),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let why = String::from_utf8_lossy(&log[..end]);
            return Err(annotate(
                ifname,
                &format!("BPF_PROG_LOAD (verifier: {})", why.trim()),
                e,
            ));
        }
    };
    let mut last = None;
    for (flags, native) in [(XDP_FLAGS_DRV_MODE, true), (XDP_FLAGS_SKB_MODE, false)] {
        let mut attr = LinkCreateAttr {
            prog_fd: prog.as_raw_fd() as u32,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags,
        };
        match bpf(BPF_LINK_CREATE, &mut attr) {
            Ok(fd) => return Ok((map, prog, owned(fd), native)),
            // EBUSY: another XDP program is attached; generic mode would not help.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(annotate(
                    ifname,
                    "attach XDP program (the interface has one already)",
                    e,
                ));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(annotate(
        ifname,
        "attach XDP program (BPF_LINK_CREATE, native and generic)",
        last.expect("two attempts"),
    ))
}

/// Binds the socket to the queue; returns whether it is zero-copy.
fn bind(ifname: &str, s: RawFd, ifindex: u32, queue: u32, mode: Mode) -> io::Result<bool> {
    let try_bind = |flags: u16| {
        let sa = SockaddrXdp {
            family: AF_XDP as u16,
            flags,
            ifindex,
            queue_id: queue,
            shared_umem_fd: 0,
        };
        // SAFETY: a sockaddr_xdp of its size.
        cvt(unsafe {
            libc::bind(
                s,
                (&sa as *const SockaddrXdp).cast(),
                std::mem::size_of::<SockaddrXdp>() as u32,
            )
        })
    };
    let what = format!("bind queue {queue}");
    match mode {
        Mode::Copy => try_bind(XDP_COPY)
            .map(|_| false)
            .map_err(|e| annotate(ifname, &what, e)),
        Mode::ZeroCopy => try_bind(XDP_ZEROCOPY).map(|_| true).map_err(|e| {
            annotate(
                ifname,
                &format!("{what} zero-copy (the driver may not support it: use mode copy or auto)"),
                e,
            )
        }),
        Mode::Auto => match try_bind(XDP_ZEROCOPY) {
            Ok(_) => Ok(true),
            Err(_) => try_bind(XDP_COPY)
                .map(|_| false)
                .map_err(|e| annotate(ifname, &what, e)),
        },
    }
}

impl XdpRx {
    /// Gives the previous batch's chunks back to the kernel and takes up to [`BATCH`] frames.
    pub fn recv_batch(&mut self) -> io::Result<usize> {
        // The fill ring has a slot for every rx chunk, so there is always room for ours.
        let p = self.fill.prod().load(Ordering::Relaxed);
        for (k, d) in self.held[..self.n_held].iter().enumerate() {
            self.fill
                .set(p.wrapping_add(k as u32), d.addr & !(CHUNK as u64 - 1));
        }
        self.fill
            .prod()
            .store(p.wrapping_add(self.n_held as u32), Ordering::Release);
        self.n_held = 0;

        let c = self.rx.cons().load(Ordering::Relaxed);
        let avail = self.rx.prod().load(Ordering::Acquire).wrapping_sub(c) as usize;
        let n = avail.min(BATCH);
        for k in 0..n {
            self.held[k] = self.rx.get(c.wrapping_add(k as u32));
        }
        // The descriptors are copied out; the chunks stay ours until the next call.
        self.rx
            .cons()
            .store(c.wrapping_add(n as u32), Ordering::Release);
        self.n_held = n;
        Ok(n)
    }

    /// Frame `i` of the last batch.
    pub fn frame(&mut self, i: usize) -> Option<RxFrame<'_>> {
        if i >= self.n_held {
            return None;
        }
        let d = self.held[i];
        let (addr, len) = (d.addr as usize, d.len as usize);
        if len < 14 || addr + len > self.xsk.umem.len {
            return None;
        }
        // SAFETY: bytes of an rx chunk the kernel handed us, ours until the next recv_batch,
        // checked to lie inside the UMEM; borrowed mutably through &mut self.
        let data = unsafe { std::slice::from_raw_parts_mut(self.xsk.umem.ptr.add(addr), len) };
        Some(RxFrame {
            data,
            vnet: VirtioNetHdr::default(),
            vlan: None,
            rx_realtime_ns: None,
        })
    }

    /// Frames the kernel dropped (no free chunk in the fill ring, rx ring full) since the last
    /// call.
    pub fn take_kernel_drops(&self) -> u64 {
        let mut st = XdpStatistics::default();
        if getsockopt(self.xsk.fd.as_raw_fd(), XDP_STATISTICS, &mut st).is_err() {
            return 0;
        }
        let total = st.rx_dropped + st.rx_ring_full;
        total.saturating_sub(self.drops_seen.replace(total))
    }

    /// The socket, readable when the rx ring has frames.
    pub fn fd(&self) -> RawFd {
        self.xsk.fd.as_raw_fd()
    }
}

impl XdpTx {
    /// Takes back the chunks of frames the kernel has sent.
    fn reclaim(&mut self) {
        let c = self.comp.cons().load(Ordering::Relaxed);
        let n = self.comp.prod().load(Ordering::Acquire).wrapping_sub(c);
        for k in 0..n {
            self.free.push(self.comp.get(c.wrapping_add(k)));
        }
        self.comp.cons().store(c.wrapping_add(n), Ordering::Release);
    }

    /// Tells the kernel the tx ring has frames. In copy mode the kernel sends them during the
    /// call, at most 32 per call (EAGAIN: more are left), so it is repeated while that is so.
    fn kick(&self) -> io::Result<()> {
        for _ in 0..TX_CHUNKS / 32 + 1 {
            // SAFETY: an empty sendto on our socket.
            let r = unsafe {
                libc::sendto(
                    self.xsk.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => {
                    let c = self.tx.cons().load(Ordering::Acquire);
                    if c == self.tx.prod().load(Ordering::Relaxed) {
                        return Ok(());
                    }
                }
                Some(libc::EINTR) => {}
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends whole frames; returns (sent, failed). Waits while every tx chunk is in flight.
    /// A frame larger than a chunk, or any frame when the interface refuses to send (down,
    /// deleted), fails.
    pub fn send_batch(&mut self, frames: &[Vec<u8>]) -> (usize, usize) {
        let (mut sent, mut failed) = (0, 0);
        let mut queued = 0u32;
        let p0 = self.tx.prod().load(Ordering::Relaxed);
        for f in frames {
            if f.len() > CHUNK || f.is_empty() {
                failed += 1;
                continue;
            }
            if self.free.is_empty() {
                self.reclaim();
            }
            while self.free.is_empty() {
                self.tx
                    .prod()
                    .store(p0.wrapping_add(queued), Ordering::Release);
                if self.kick().is_err() {
                    // Nothing will complete: the frames not yet queued fail.
                    return (sent, failed + frames.len() - sent - failed);
                }
                self.reclaim();
                if self.free.is_empty() {
                    std::thread::yield_now();
                }
            }
            let addr = self.free.pop().expect("checked above");
            // SAFETY: a tx chunk no one else uses until the kernel completes it; f fits.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    f.as_ptr(),
                    self.xsk.umem.ptr.add(addr as usize),
                    f.len(),
                );
            }
            self.tx.set(
                p0.wrapping_add(queued),
                XdpDesc {
                    addr,
                    len: f.len() as u32,
                    options: 0,
                },
            );
            queued += 1;
            sent += 1;
        }
        if queued > 0 {
            self.tx
                .prod()
                .store(p0.wrapping_add(queued), Ordering::Release);
            if self.kick().is_err() {
                return (0, frames.len());
            }
        }
        self.reclaim();
        (sent, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_kernel_uapi() {
        assert_eq!(std::mem::size_of::<UmemReg>(), 32);
        assert_eq!(std::mem::size_of::<MmapOffsets>(), 128);
        assert_eq!(std::mem::size_of::<SockaddrXdp>(), 16);
        assert_eq!(std::mem::size_of::<XdpDesc>(), 16);
        assert_eq!(std::mem::size_of::<XdpStatistics>(), 48);
        assert_eq!(std::mem::size_of::<Insn>(), 8);
        assert_eq!(std::mem::size_of::<ProgLoadAttr>(), 72);
    }

    #[test]
    fn an_mtu_whose_frames_do_not_fit_a_chunk_is_refused_with_the_limits() {
        check_mtu("p0", 1500).unwrap();
        check_mtu("p0", 3822).unwrap();
        let e = check_mtu("p0", 9000).unwrap_err().to_string();
        assert_eq!(
            e,
            "port p0: af_xdp: MTU 9000 means frames of up to 9018 bytes, more than the 3840 a \
             4096-byte UMEM chunk holds after the kernel's 256-byte headroom; lower the MTU to \
             at most 3822 or use kind af_packet"
        );
    }
}
