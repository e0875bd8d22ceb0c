//! Thin wrappers over the socket calls the relay needs (libc; each returns io::Result).

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

// The socket calls shared with the emulator and the gateway.
use netio::sys::{cvt, setsockopt as setopt};

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn from_sockaddr(s: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr)),
        u16::from_be(s.sin_port),
    )
}

/// A new IPv4 TCP socket with IP_TRANSPARENT (it may bind and accept foreign addresses).
pub fn transparent_tcp() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned at once.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    setopt(fd.as_raw_fd(), libc::SOL_IP, libc::IP_TRANSPARENT, &1i32)?;
    setopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, &1i32)?;
    Ok(fd)
}

pub fn bind(fd: &OwnedFd, a: SocketAddrV4) -> io::Result<()> {
    let s = sockaddr(a);
    // SAFETY: s is a valid sockaddr_in.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &s as *const _ as *const libc::sockaddr,
            size_of::<libc::sockaddr_in>() as u32,
        )
    })
    .map(|_| ())
}

pub fn listen(fd: &OwnedFd, backlog: i32) -> io::Result<()> {
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) }).map(|_| ())
}

/// Blocking connect (bounded by SO_SNDTIMEO when set).
pub fn connect(fd: &OwnedFd, a: SocketAddrV4) -> io::Result<()> {
    let s = sockaddr(a);
    loop {
        // SAFETY: s is a valid sockaddr_in.
        let r = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &s as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as u32,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Blocking accept: the connection, its peer (the client) and its local address (for a TPROXY'd
/// connection, the original destination).
pub fn accept(fd: &OwnedFd) -> io::Result<(OwnedFd, SocketAddrV4, SocketAddrV4)> {
    let mut peer: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_in>() as u32;
    // SAFETY: peer/len describe a writable sockaddr_in.
    let c = cvt(unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            &mut peer as *mut _ as *mut libc::sockaddr,
            &mut len,
            libc::SOCK_CLOEXEC,
        )
    })?;
    let c = unsafe { OwnedFd::from_raw_fd(c) };
    let local = local_addr(&c)?;
    Ok((c, from_sockaddr(&peer), local))
}

pub fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddrV4> {
    let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_in>() as u32;
    // SAFETY: s/len describe a writable sockaddr_in.
    cvt(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            &mut s as *mut _ as *mut libc::sockaddr,
            &mut len,
        )
    })?;
    Ok(from_sockaddr(&s))
}

/// TCP_CONGESTION; the error names the algorithm (ENOENT: not loaded / not registered).
pub fn set_congestion(fd: &OwnedFd, name: &str) -> io::Result<()> {
    // SAFETY: name is a valid buffer of the given length.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as u32,
        )
    })
    .map(|_| ())
    .map_err(|e| io::Error::new(e.kind(), format!("congestion control {name:?}: {e}")))
}

/// SO_SNDBUF/SO_RCVBUF, forced past net.core.{w,r}mem_max (the PEP runs with CAP_NET_ADMIN).
pub fn set_buffers(fd: &OwnedFd, bytes: u64) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u64) as i32;
    setopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &v)?;
    setopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v)
}

fn timeval(d: Duration) -> libc::timeval {
    libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    }
}

/// SO_RCVTIMEO and SO_SNDTIMEO: blocking calls (splice, connect) return EAGAIN after `d`.
pub fn set_timeouts(fd: &OwnedFd, d: Duration) -> io::Result<()> {
    setopt(
        fd.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVTIMEO,
        &timeval(d),
    )?;
    setopt(
        fd.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_SNDTIMEO,
        &timeval(d),
    )
}

/// SO_LINGER {1, 0}: close() then sends a reset instead of a FIN.
pub fn set_abortive_close(fd: RawFd) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = setopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, &l);
}

pub fn shutdown(fd: RawFd, how: i32) {
    // SAFETY: shutdown on an fd this process owns; errors (ENOTCONN) are irrelevant here.
    unsafe { libc::shutdown(fd, how) };
}

/// SO_ERROR (pending socket error), 0 when none.
pub fn take_error(fd: RawFd) -> i32 {
    let mut v = 0i32;
    let mut len = size_of::<i32>() as u32;
    // SAFETY: v/len describe a writable int.
    unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut v as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    v
}

/// poll() one fd for `events`; returns revents (0 on timeout).
pub fn poll_one(fd: RawFd, events: i16, timeout: Duration) -> i16 {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
    if r > 0 {
        p.revents
    } else {
        0
    }
}

/// A pipe (the splice buffer of one direction), its capacity set with F_SETPIPE_SZ.
pub struct Pipe {
    pub r: OwnedFd,
    pub w: OwnedFd,
}

impl Pipe {
    pub fn new(bytes: u32) -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: fds is a writable [c_int; 2].
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
        let p = unsafe {
            Pipe {
                r: OwnedFd::from_raw_fd(fds[0]),
                w: OwnedFd::from_raw_fd(fds[1]),
            }
        };
        // A smaller pipe than asked (pipe-max-size) still works; only throughput differs.
        unsafe { libc::fcntl(p.w.as_raw_fd(), libc::F_SETPIPE_SZ, bytes as libc::c_int) };
        Ok(p)
    }
}

/// splice(2) without offsets; returns bytes moved (0 = end of file on a socket).
pub fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: both fds are owned by the caller; null offsets are allowed for pipes and sockets.
    let r = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_MORE,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
pub fn raise_fd_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: l is a writable rlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
    }
    l.rlim_cur
}
