//! The benchmark baseline: a deliberately naive user-space forwarder between two TUN devices.
//!
//! One thread; `poll()` on both TUN file descriptors; for every readable descriptor one blocking
//! `read()` of one packet followed by one `write()` of that packet to the other device. No batching,
//! no offloads (IFF_NO_PI, no IFF_VNET_HDR), no multi-queue. This is the "naive one-read-one-write
//! per packet TUN forwarder" that the emulator's throughput is compared against.
//!
//! Usage: `naive-forwarder TUN_A TUN_B` (attaches to existing TUN devices, e.g. made with
//! `ip tuntap add mode tun name TUN_A`, or creates non-persistent ones). Prints `ready` on stdout
//! once both are attached; on SIGTERM/SIGINT prints packet counters and exits.

use std::ffi::CString;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn open_tun(name: &str) -> io::Result<libc::c_int> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    let path = CString::new("/dev/net/tun").expect("static path");
    // SAFETY: plain libc calls on a valid C string and a properly sized, zeroed ifreq.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _pad: [0; 22],
        };
        for (dst, src) in req.name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        if libc::ioctl(fd, TUNSETIFF as _, &mut req as *mut IfReq) < 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: {} TUN_A TUN_B", args[0]);
        std::process::exit(2);
    }
    let fds = match (open_tun(&args[1]), open_tun(&args[2])) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("naive-forwarder: cannot attach TUN devices: {e}");
            std::process::exit(1);
        }
    };
    // SAFETY: installing an async-signal-safe handler that only stores an atomic.
    unsafe {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGTERM, h);
        libc::signal(libc::SIGINT, h);
    }
    println!("ready");
    let _ = io::stdout().flush();

    let mut buf = vec![0u8; 65536];
    let mut packets = [0u64; 2];
    let mut write_errors = 0u64;
    let mut pfds = [
        libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: fds[1],
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    while !STOP.load(Ordering::Relaxed) {
        // SAFETY: pfds is a valid array of two pollfd structs.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), 2, 500) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            eprintln!("naive-forwarder: poll: {e}");
            std::process::exit(1);
        }
        for i in 0..2 {
            if pfds[i].revents & libc::POLLIN == 0 {
                continue;
            }
            // One read of one packet ...
            // SAFETY: buf is a valid writable buffer of buf.len() bytes.
            let len = unsafe { libc::read(fds[i], buf.as_mut_ptr().cast(), buf.len()) };
            if len <= 0 {
                continue;
            }
            // ... and one write of that packet to the other device.
            // SAFETY: buf holds len initialised bytes.
            let w = unsafe { libc::write(fds[1 - i], buf.as_ptr().cast(), len as usize) };
            if w < 0 {
                write_errors += 1;
            } else {
                packets[i] += 1;
            }
        }
    }
    println!(
        "a_to_b_packets={} b_to_a_packets={} write_errors={}",
        packets[0], packets[1], write_errors
    );
}
