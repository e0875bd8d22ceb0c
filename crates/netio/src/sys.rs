//! Thin wrappers over the Linux system calls the data plane uses (libc, no extra runtime).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `Err(last_os_error)` when a libc call returned -1.
pub fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `setsockopt(fd, level, opt, &val, sizeof val)`: `val` is the option's C value (an int, a
/// kernel struct with its C layout).
pub fn setsockopt<T: Copy>(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: pointer to a live value of the given size; the kernel only reads it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    })?;
    Ok(())
}

/// Monotonic clock (CLOCK_MONOTONIC) in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// A clock's reading in nanoseconds (e.g. `CLOCK_THREAD_CPUTIME_ID`: the calling thread's CPU time).
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns (to convert kernel packet timestamps), and the
/// uncertainty of that estimate, ns.
///
/// The realtime read is bracketed by two monotonic reads and the tightest of a few tries is kept,
/// so a preemption between the reads cannot skew the offset (it would make packets look older
/// than they are, and leave early).
pub fn realtime_offset_ns() -> (i64, u64) {
    let mut best = (0i64, u64::MAX);
    for _ in 0..4 {
        let m1 = monotonic_ns();
        let mut r = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid pointer to a timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut r) };
        let m2 = monotonic_ns();
        let real = r.tv_sec * 1_000_000_000 + r.tv_nsec;
        let width = m2 - m1;
        if width < best.1 {
            best = (real - (m1 + width / 2) as i64, width);
        }
        if width < 1_000 {
            break;
        }
    }
    best
}

/// The run's time base: `now_ns()` is monotonic nanoseconds since the emulator started.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start_mono_ns: u64,
}

impl Clock {
    /// Starts the clock now.
    pub fn start() -> Clock {
        Clock {
            start_mono_ns: monotonic_ns(),
        }
    }

    /// Nanoseconds since start.
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.start_mono_ns)
    }

    /// Run time of a CLOCK_REALTIME instant, given `realtime_offset_ns()`.
    pub fn run_ns_of_realtime(self, real_ns: u64, offset_ns: i64) -> u64 {
        let mono = real_ns as i64 - offset_ns;
        (mono - self.start_mono_ns as i64).max(0) as u64
    }

    /// CLOCK_MONOTONIC time of run time `t_ns`.
    pub fn mono_ns_of(self, t_ns: u64) -> u64 {
        self.start_mono_ns + t_ns
    }
}

/// An epoll instance with a timerfd (absolute CLOCK_MONOTONIC deadlines) and an eventfd (wake-up
/// from other threads) already registered.
pub struct Waiter {
    epoll: OwnedFd,
    timer: OwnedFd,
    event: OwnedFd,
    armed_at: u64,
}

/// epoll token of the timerfd.
pub const TOKEN_TIMER: u64 = u64::MAX - 1;
/// epoll token of the eventfd.
pub const TOKEN_EVENT: u64 = u64::MAX - 2;

impl Waiter {
    /// Creates the epoll set.
    pub fn new() -> io::Result<Waiter> {
        // SAFETY: plain syscalls; each fd is owned right after it is checked.
        unsafe {
            let epoll = OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?);
            let timer = OwnedFd::from_raw_fd(cvt(libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            ))?);
            let event = OwnedFd::from_raw_fd(cvt(libc::eventfd(
                0,
                libc::EFD_NONBLOCK | libc::EFD_CLOEXEC,
            ))?);
            let w = Waiter {
                epoll,
                timer,
                event,
                armed_at: 0,
            };
            w.add(w.timer.as_raw_fd(), TOKEN_TIMER)?;
            w.add(w.event.as_raw_fd(), TOKEN_EVENT)?;
            Ok(w)
        }
    }

    /// Registers `fd` for readability with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: valid epoll fd and event pointer.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Turns readability interest in `fd` (registered with `add`) on or off.
    pub fn set_interest(&self, fd: RawFd, token: u64, on: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: if on { libc::EPOLLIN as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: valid epoll fd and event pointer.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_MOD, fd, &mut ev) })?;
        Ok(())
    }

    /// A handle other threads use to wake this waiter.
    pub fn notifier(&self) -> io::Result<Notifier> {
        Ok(Notifier {
            fd: self.event.try_clone()?,
        })
    }

    /// Arms the timer at absolute CLOCK_MONOTONIC `mono_ns` (0 disarms).
    pub fn arm(&mut self, mono_ns: u64) {
        if self.armed_at == mono_ns {
            return;
        }
        self.armed_at = mono_ns;
        let its = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (mono_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (mono_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid timerfd and itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.timer.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &its,
                std::ptr::null_mut(),
            );
        }
    }

    /// Blocks until a registered fd is readable or the timer fires; drains the timer and eventfd.
    pub fn wait(&mut self, timeout_ms: i32) {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
        // SAFETY: valid buffer of 8 events.
        let n =
            unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), evs.as_mut_ptr(), 8, timeout_ms) };
        for ev in evs.iter().take(n.max(0) as usize) {
            let token = ev.u64;
            if token == TOKEN_TIMER || token == TOKEN_EVENT {
                let fd = if token == TOKEN_TIMER {
                    self.timer.as_raw_fd()
                } else {
                    self.event.as_raw_fd()
                };
                let mut buf = [0u8; 8];
                // SAFETY: 8-byte buffer.
                unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 8) };
                if token == TOKEN_TIMER {
                    self.armed_at = 0;
                }
            }
        }
    }
}

/// Wakes a [`Waiter`] from another thread.
pub struct Notifier {
    fd: OwnedFd,
}

impl Notifier {
    /// Wakes the waiter (never blocks).
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: 8-byte value to an eventfd.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// Sets this thread's timer slack to 1 ns, so hrtimer wake-ups are not batched (default 50 µs).
pub fn precise_timer_slack() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Sets O_NONBLOCK on `fd`.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid fd.
    unsafe {
        let fl = cvt(libc::fcntl(fd, libc::F_GETFL))?;
        cvt(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Interface index of `name`, with a clear error when it does not exist.
pub fn if_index(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    // SAFETY: valid C string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("interface {name:?} does not exist in this network namespace"),
        ));
    }
    Ok(idx)
}

/// Sets IFF_UP on an interface (used for TAP devices the emulator creates).
pub fn set_link_up(name: &str) -> io::Result<()> {
    interface_ioctl(name, |s, ifr| {
        // SAFETY: ifreq ioctls on a datagram socket; the flags member is the one these set.
        unsafe {
            cvt(libc::ioctl(s, libc::SIOCGIFFLAGS, &mut *ifr))?;
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            cvt(libc::ioctl(s, libc::SIOCSIFFLAGS, &*ifr))?;
        }
        Ok(())
    })
}

/// The MTU of interface `name` (SIOCGIFMTU).
pub fn interface_mtu(name: &str) -> io::Result<usize> {
    interface_ioctl(name, |s, ifr| {
        // SAFETY: SIOCGIFMTU fills the mtu member of the ifreq, which is then read.
        unsafe {
            cvt(libc::ioctl(s, libc::SIOCGIFMTU, &mut *ifr))?;
            Ok(ifr.ifr_ifru.ifru_mtu as usize)
        }
    })
}

/// Runs `f` with a throwaway datagram socket and a zeroed ifreq naming interface `name`
/// (truncated to IFNAMSIZ - 1 bytes).
fn interface_ioctl<T>(
    name: &str,
    f: impl FnOnce(RawFd, &mut libc::ifreq) -> io::Result<T>,
) -> io::Result<T> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let s = unsafe {
        OwnedFd::from_raw_fd(cvt(libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        ))?)
    };
    // SAFETY: ifreq is plain old data; all zeroes is a valid (empty) value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in name.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
        ifr.ifr_name[i] = b as libc::c_char;
    }
    f(s.as_raw_fd(), &mut ifr)
}

/// Raises the calling thread's scheduling priority: SCHED_FIFO at `rt_priority` when given and
/// permitted, else nice -10 (SCHED_OTHER). Returns a description, or the error when neither is
/// permitted.
pub fn raise_thread_priority(rt_priority: Option<i32>) -> io::Result<String> {
    let mut why = String::new();
    // SAFETY: scheduling syscalls on the calling thread with valid arguments.
    unsafe {
        if let Some(p) = rt_priority {
            let param = libc::sched_param { sched_priority: p };
            let r = libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
            if r == 0 {
                return Ok(format!("SCHED_FIFO priority {p}"));
            }
            why = format!(" (SCHED_FIFO refused: {})", io::Error::from_raw_os_error(r));
        }
    }
    nice_self(-10)?;
    Ok(format!("nice -10{why}"))
}

/// Puts the calling thread back under normal scheduling (`SCHED_OTHER`) at nice -10.
pub fn leave_realtime() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: scheduling calls on the calling thread with valid arguments.
    unsafe {
        let r = libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    nice_self(-10)
}

/// Sets the calling thread's nice value.
fn nice_self(nice: libc::c_int) -> io::Result<()> {
    // SAFETY: setpriority on the calling thread's id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        cvt(libc::setpriority(libc::PRIO_PROCESS, tid, nice))?;
    }
    Ok(())
}

/// The running program's name (satlab-emulator, satlab-gateway), for warnings.
pub fn program() -> String {
    std::env::args()
        .next()
        .and_then(|a| a.rsplit('/').next().map(str::to_owned))
        .unwrap_or_else(|| "satlab".into())
}
