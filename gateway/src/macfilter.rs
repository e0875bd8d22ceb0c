//! The outside port takes only the frames meant for this edge: a classic BPF socket filter on the
//! receive socket accepts a frame whose destination is the local router's MAC (or a group address:
//! broadcast and multicast, ARP requests among them), and the kernel drops every other frame
//! before it reaches the ring, so it is neither forwarded, nor counted, nor a CETEN sample.
//!
//! Why a filter and not simply no promiscuous mode: the port must stay promiscuous. The frames the
//! far edge sends are addressed to the local router's `sat0`, not to `ports.outside` (a NIC's
//! hardware filter would drop them), and a veth delivers every frame whatever its destination
//! anyway. Where several stations share the outside segment (a container testbed's extra
//! terminals: macvlans whose parent is the st box's `wan`), the frames meant for them reach this
//! port too.
//!
//! The router's MAC is learned, not configured: it is the source of the frames read on the inside
//! port (an ARP reply is the router's first frame toward a far end that asks for it). Until the
//! first is seen no filter is attached and every frame is taken, as before. A few routers on the
//! inside segment are all accepted; past [`MAX_ROUTERS`] the inside is no point-to-point link to a
//! router and the filter is removed (said on stderr): taking every frame again is the safe side.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Distinct inside sources the filter accepts before it gives up (keeps jump offsets small too).
pub const MAX_ROUTERS: usize = 8;

// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_LD_H_ABS: u16 = 0x28; // BPF_LD | BPF_H | BPF_ABS
const BPF_LD_B_ABS: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
const BPF_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter accepting group destinations and the unicast destinations `macs` (at most
/// [`MAX_ROUTERS`]); every other frame gets 0 bytes, i.e. is dropped.
pub fn program(macs: &[[u8; 6]]) -> Vec<libc::sock_filter> {
    assert!(macs.len() <= MAX_ROUTERS, "at most {MAX_ROUTERS} MACs");
    let reject = 2 + 4 * macs.len();
    let accept = reject + 1;
    // Jump offsets count from the next instruction.
    let to = |target: usize, at: usize| (target - at - 1) as u8;
    let mut p = vec![
        insn(BPF_LD_B_ABS, 0, 0, 0),
        insn(BPF_JSET_K, to(accept, 1), 0, 1), // I/G bit of the first byte: a group address
    ];
    for mac in macs {
        let at = p.len();
        let low = u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]);
        let high = u32::from(u16::from_be_bytes([mac[0], mac[1]]));
        p.push(insn(BPF_LD_W_ABS, 0, 0, 2));
        p.push(insn(BPF_JEQ_K, 0, 2, low)); // no: the next MAC's first instruction
        p.push(insn(BPF_LD_H_ABS, 0, 0, 0));
        p.push(insn(BPF_JEQ_K, to(accept, at + 3), 0, high));
    }
    p.push(insn(BPF_RET_K, 0, 0, 0));
    p.push(insn(BPF_RET_K, 0, 0, u32::MAX));
    p
}

/// Formats a MAC as `aa:bb:cc:dd:ee:ff`.
fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Learns the local routers' MACs from the inside port's frames and keeps the outside receive
/// socket's filter in step. Runs on the egress thread (which reads the inside port) and holds its
/// own descriptor of the outside receive socket, so the socket outlives either thread's use.
pub struct RouterFilter {
    socket: OwnedFd,
    port: String,
    routers: Vec<[u8; 6]>,
    gave_up: bool,
}

impl RouterFilter {
    /// A filter keeper for the receive socket `socket` of outside port `port` (nothing attached
    /// yet: the port takes every frame until a router is seen).
    pub fn new(socket: OwnedFd, port: &str) -> RouterFilter {
        RouterFilter {
            socket,
            port: port.to_string(),
            routers: Vec::new(),
            gave_up: false,
        }
    }

    /// Looks at the source of one inside frame; a new router re-attaches the filter. Failures are
    /// reported, not fatal: without the filter the gateway forwards as it did before.
    pub fn observe(&mut self, frame: &[u8]) {
        let Some(src) = frame.get(6..12) else { return };
        if self.gave_up || src[0] & 1 != 0 || self.routers.iter().any(|m| m[..] == *src) {
            return;
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(src);
        let who = format!("satlab-gateway: {}", self.port);
        if self.routers.len() == MAX_ROUTERS {
            self.gave_up = true;
            match self.detach() {
                Ok(()) => eprintln!(
                    "{who}: more than {MAX_ROUTERS} sources on the inside port ({} is one): \
                     taking every frame again",
                    mac_text(&mac)
                ),
                Err(e) => eprintln!("{who}: removing the frame filter: {e}"),
            }
            return;
        }
        self.routers.push(mac);
        match self.attach() {
            Ok(()) => eprintln!(
                "{who}: taking only frames to {} and group addresses",
                self.routers
                    .iter()
                    .map(mac_text)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => eprintln!("{who}: attaching the frame filter: {e}"),
        }
    }

    fn attach(&self) -> io::Result<()> {
        let mut prog = program(&self.routers);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_mut_ptr(),
        };
        // fprog points at `prog`, alive for the call; the kernel copies the program and swaps it
        // in atomically (no frame sees a half-made filter).
        let fd = self.socket.as_raw_fd();
        netio::sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
    }

    fn detach(&self) -> io::Result<()> {
        // The option takes (and ignores) an int.
        let fd = self.socket.as_raw_fd();
        netio::sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_DETACH_FILTER, &0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the subset of classic BPF that [`program`] emits, as the kernel does, on `frame`.
    fn run(p: &[libc::sock_filter], frame: &[u8]) -> u32 {
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = p[pc];
            let k = i.k as usize;
            pc += 1;
            match i.code {
                BPF_LD_B_ABS => a = u32::from(frame[k]),
                BPF_LD_H_ABS => a = u32::from(u16::from_be_bytes([frame[k], frame[k + 1]])),
                BPF_LD_W_ABS => a = u32::from_be_bytes(frame[k..k + 4].try_into().unwrap()),
                BPF_JEQ_K | BPF_JSET_K => {
                    let yes = if i.code == BPF_JEQ_K {
                        a == i.k
                    } else {
                        a & i.k != 0
                    };
                    pc += usize::from(if yes { i.jt } else { i.jf });
                }
                BPF_RET_K => return i.k,
                c => panic!("opcode {c:#x} not emitted by program()"),
            }
        }
    }

    fn to(dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 8, 0]);
        f
    }

    #[test]
    fn takes_the_routers_and_group_addresses_only() {
        let r1 = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        let r2 = [0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0x01];
        let p = program(&[r1, r2]);
        assert!(run(&p, &to(r1)) > 0 && run(&p, &to(r2)) > 0);
        assert!(run(&p, &to([0xff; 6])) > 0, "broadcast");
        assert!(run(&p, &to([0x33, 0x33, 0, 0, 0, 1])) > 0, "IPv6 multicast");
        // another station's MAC, and ones that match only half of a router's
        assert_eq!(run(&p, &to([0x02, 0x11, 0x22, 0x33, 0x44, 0x56])), 0);
        assert_eq!(run(&p, &to([0x02, 0x12, 0x22, 0x33, 0x44, 0x55])), 0);
        assert_eq!(run(&p, &to([0x0a, 0xbb, 0x22, 0x33, 0x44, 0x55])), 0);
        let full: Vec<[u8; 6]> = (0..MAX_ROUTERS as u8).map(|i| [2, 0, 0, 0, 0, i]).collect();
        let p = program(&full);
        assert!(full.iter().all(|m| run(&p, &to(*m)) > 0));
        assert_eq!(run(&p, &to([2, 0, 0, 0, 0, MAX_ROUTERS as u8])), 0);
        assert_eq!(
            run(&program(&[]), &to(r1)),
            0,
            "no router: group addresses only"
        );
    }
}
