//! netio: the packet I/O the emulator and the gateway share: AF_PACKET, AF_XDP (`afxdp`) and TAP
//! ports with batched receive/send and the virtio-net offload header (`port`), and the Linux
//! plumbing around them:
//! clocks, epoll/timerfd waiting, eventfd notification, thread priority (`sys`); and updates of a
//! pinned BPF map through the raw bpf(2) syscall (`bpfmap`, the Oracle ETEN notices).

pub mod afxdp;
pub mod bpfmap;
pub mod port;
pub mod sys;
