//! Per-class queues of a direction (`queue.classes`): what an operator's forward-link scheduler
//! does in front of the modulator. Used by `queue.rs` when classes are configured.
//!
//! - **Classification** on arrival, from the packet's headers (Ethernet, 802.1Q/802.1ad tags
//!   skipped; IPv4, or IPv6 without walking extension headers): the first class in list order
//!   whose `dscp` list holds the packet's DSCP or one of whose `flows` rules matches (protocol,
//!   TCP/UDP ports; a later IPv4 fragment has no ports); otherwise the default class (the one
//!   class without `dscp` and `flows`). Non-IP frames go to the default class.
//! - **Limits**: a packet is dropped on arrival (drop-tail) if it would take its class above the
//!   class's `limit_packets` / `limit_bytes`, or the whole queue above `queue.limit_packets` /
//!   `queue.limit_bytes`.
//! - **Service**: strict priority between levels (`priority` 0 first: a level is served only
//!   while every lower number is empty), and deficit round robin (DRR, Shreedhar and Varghese,
//!   "Efficient fair queuing using deficit round robin", SIGCOMM 1995) between the classes of one
//!   level, with a quantum of `weight` x 1518 bytes per round. DRR rather than WFQ: O(1) work per
//!   packet with no virtual clock or sorted heap, shares exact in bytes over a round whatever the
//!   packet sizes, and integer state only, so runs repeat bit for bit. WFQ's finer short-term
//!   ordering buys nothing here: a frame carries several packets and its content is fixed when it
//!   starts, so the frame is the unit of service anyway.
//! - **Counters** per class: enqueued, dropped and sent packets and bytes, and the queueing delay
//!   of the sent packets (from arrival to the start of the frame that carries their first byte).
//!
//! The scheduler asks for the next packet's length, then takes it (`front_len`, `pop`): the DRR
//! choice is settled by the first question and stays the same until the packet is taken, so a
//! packet that does not fit a frame is the first of the next frame (unless a packet of a higher
//! priority level arrives in between, which then goes first).

use std::collections::VecDeque;

use packet::{ethernet, ipv4, ipv6};

use crate::config::{ClassConfig, FlowRule, QueueConfig};
use crate::types::ClassStatus;

/// DRR quantum per unit of weight: one full-size Ethernet frame with an 802.1Q tag, so that every
/// class with data sends at least one packet per round (DRR's O(1) condition).
pub const QUANTUM_BYTES_PER_WEIGHT: u64 = 1518;

/// A class: its queue, limits, DRR state and counters.
#[derive(Debug)]
struct Class {
    name: String,
    priority: u8,
    weight: u32,
    /// Packets with their arrival time.
    packets: VecDeque<(Vec<u8>, u64)>,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
    quantum: u64,
    deficit: u64,
    /// Index of its priority level in `ClassQueues::levels`.
    level: usize,
    enqueued_packets: u64,
    enqueued_bytes: u64,
    dropped_packets: u64,
    dropped_bytes: u64,
    sent_packets: u64,
    sent_bytes: u64,
    delay_sum_ns: u64,
    delay_max_ns: u64,
}

/// One priority level: the classes of that priority with data, in DRR order.
#[derive(Debug, Default)]
struct Level {
    /// Backlogged classes; the front one is being served.
    active: VecDeque<usize>,
    /// The front class has received its quantum for this visit.
    granted: bool,
}

/// Per-class queues; see the module documentation.
#[derive(Debug)]
pub struct ClassQueues {
    classes: Vec<Class>,
    /// DSCP -> class, for the DSCPs some class lists.
    by_dscp: [Option<usize>; 64],
    /// (class, rule) in class order.
    rules: Vec<(usize, FlowRule)>,
    /// The class packets no rule selects.
    default_class: usize,
    /// Levels in service order (ascending priority number).
    levels: Vec<Level>,
    packets: usize,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

/// The fields classification reads from a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub dscp: u8,
    pub protocol: Option<u8>,
    pub ports: Option<(u16, u16)>,
}

impl Header {
    /// Reads DSCP, protocol and TCP/UDP ports from an Ethernet frame (`None` for non-IP or
    /// truncated IP headers).
    pub fn parse(frame: &[u8]) -> Option<Header> {
        let eth = ethernet::Frame::new_checked(frame).ok()?;
        let (dscp, proto, ports) = match eth.payload_ethertype() {
            ethernet::ethertype::IPV4 => {
                let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
                let ports = if ip.is_later_fragment() {
                    None
                } else {
                    ports_of(ip.protocol(), ip.payload())
                };
                (ip.dscp(), ip.protocol(), ports)
            }
            ethernet::ethertype::IPV6 => {
                let ip = ipv6::Packet::new_checked(eth.payload()).ok()?;
                let ports = ports_of(ip.next_header(), ip.payload());
                (ip.traffic_class() >> 2, ip.next_header(), ports)
            }
            _ => return None,
        };
        Some(Header {
            dscp,
            protocol: Some(proto),
            ports,
        })
    }
}

/// TCP or UDP ports at the start of transport header `l4`.
fn ports_of(proto: u8, l4: &[u8]) -> Option<(u16, u16)> {
    match proto {
        6 | 17 if l4.len() >= 4 => Some((
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        )),
        _ => None,
    }
}

/// Whether `h` matches rule `r` (every field the rule gives).
fn rule_matches(r: &FlowRule, h: &Header) -> bool {
    if r.protocol.is_some() && r.protocol != h.protocol {
        return false;
    }
    if r.src_port.is_some() || r.dst_port.is_some() {
        let Some((sport, dport)) = h.ports else {
            return false;
        };
        if r.src_port.is_some_and(|p| p != sport) || r.dst_port.is_some_and(|p| p != dport) {
            return false;
        }
    }
    true
}

/// Whether a class has no selection rule (it is the default class).
pub fn is_default(c: &ClassConfig) -> bool {
    c.dscp.is_empty() && c.flows.is_empty()
}

impl ClassQueues {
    /// Builds the classes of a validated configuration (exactly one default class, names
    /// unique, DSCPs and priorities in range).
    pub fn new(cfg: &QueueConfig) -> Self {
        let mut prios: Vec<u8> = cfg.classes.iter().map(|c| c.priority).collect();
        prios.sort_unstable();
        prios.dedup();
        let mut by_dscp = [None; 64];
        let mut rules = Vec::new();
        let mut default_class = 0;
        let mut classes = Vec::with_capacity(cfg.classes.len());
        for (i, c) in cfg.classes.iter().enumerate() {
            for &d in &c.dscp {
                let slot = &mut by_dscp[usize::from(d & 63)];
                if slot.is_none() {
                    *slot = Some(i);
                }
            }
            rules.extend(c.flows.iter().map(|r| (i, r.clone())));
            if is_default(c) {
                default_class = i;
            }
            classes.push(Class {
                name: c.name.clone(),
                priority: c.priority,
                weight: c.weight,
                packets: VecDeque::new(),
                bytes: 0,
                limit_packets: c.limit_packets.unwrap_or(cfg.limit_packets),
                limit_bytes: c.limit_bytes.unwrap_or(cfg.limit_bytes),
                quantum: u64::from(c.weight.max(1)) * QUANTUM_BYTES_PER_WEIGHT,
                deficit: 0,
                level: prios.binary_search(&c.priority).expect("listed priority"),
                enqueued_packets: 0,
                enqueued_bytes: 0,
                dropped_packets: 0,
                dropped_bytes: 0,
                sent_packets: 0,
                sent_bytes: 0,
                delay_sum_ns: 0,
                delay_max_ns: 0,
            });
        }
        ClassQueues {
            classes,
            by_dscp,
            rules,
            default_class,
            levels: prios.iter().map(|_| Level::default()).collect(),
            packets: 0,
            bytes: 0,
            limit_packets: cfg.limit_packets,
            limit_bytes: cfg.limit_bytes,
        }
    }

    /// The class of a frame: the first class whose DSCP list or flow rules select it, else the
    /// default class.
    pub fn classify(&self, frame: &[u8]) -> usize {
        let Some(h) = Header::parse(frame) else {
            return self.default_class;
        };
        let by_rule = self
            .rules
            .iter()
            .find(|(_, r)| rule_matches(r, &h))
            .map(|(c, _)| *c);
        match (self.by_dscp[usize::from(h.dscp)], by_rule) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => self.default_class,
        }
    }

    /// Queues `p` (arrived at `now_ns`) in its class, or gives it back when its class or the
    /// whole queue would go above a limit.
    pub fn push(&mut self, now_ns: u64, p: Vec<u8>) -> Result<(), Vec<u8>> {
        let i = self.classify(&p);
        let len = p.len() as u64;
        let c = &mut self.classes[i];
        if c.packets.len() as u64 >= c.limit_packets
            || c.bytes + len > c.limit_bytes
            || self.packets as u64 >= self.limit_packets
            || self.bytes + len > self.limit_bytes
        {
            c.dropped_packets += 1;
            c.dropped_bytes += len;
            return Err(p);
        }
        if c.packets.is_empty() {
            c.deficit = 0;
            self.levels[c.level].active.push_back(i);
        }
        c.packets.push_back((p, now_ns));
        c.bytes += len;
        c.enqueued_packets += 1;
        c.enqueued_bytes += len;
        self.packets += 1;
        self.bytes += len;
        Ok(())
    }

    /// The class whose head packet goes next: the first non-empty level, and in it the DRR
    /// choice (settled here: asking again before `pop` gives the same class).
    fn select(&mut self) -> Option<usize> {
        let level = self.levels.iter_mut().find(|l| !l.active.is_empty())?;
        loop {
            let i = *level.active.front().expect("non-empty level");
            let c = &mut self.classes[i];
            if !level.granted {
                c.deficit += c.quantum;
                level.granted = true;
            }
            let head = c.packets.front().expect("active class has packets").0.len() as u64;
            if head <= c.deficit {
                return Some(i);
            }
            level.active.rotate_left(1);
            level.granted = false;
        }
    }

    /// Length of the packet `pop` gives next.
    pub fn front_len(&mut self) -> Option<usize> {
        let i = self.select()?;
        self.classes[i].packets.front().map(|(p, _)| p.len())
    }

    /// Takes the next packet at `now_ns` (counts its queueing delay).
    pub fn pop(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        let i = self.select()?;
        let c = &mut self.classes[i];
        let (p, arrived) = c.packets.pop_front().expect("selected class has packets");
        let len = p.len() as u64;
        c.deficit -= len;
        c.bytes -= len;
        c.sent_packets += 1;
        c.sent_bytes += len;
        let delay = now_ns.saturating_sub(arrived);
        c.delay_sum_ns += delay;
        c.delay_max_ns = c.delay_max_ns.max(delay);
        if c.packets.is_empty() {
            c.deficit = 0;
            let level = &mut self.levels[c.level];
            level.active.pop_front();
            level.granted = false;
        }
        self.packets -= 1;
        self.bytes -= len;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Status and counters of each class, in configuration order.
    pub fn status(&self) -> Vec<ClassStatus> {
        self.classes
            .iter()
            .map(|c| ClassStatus {
                name: c.name.clone(),
                priority: c.priority,
                weight: c.weight,
                queue_packets: c.packets.len() as u64,
                queue_bytes: c.bytes,
                enqueued_packets: c.enqueued_packets,
                enqueued_bytes: c.enqueued_bytes,
                dropped_packets: c.dropped_packets,
                dropped_bytes: c.dropped_bytes,
                sent_packets: c.sent_packets,
                sent_bytes: c.sent_bytes,
                queue_delay_sum_ms: c.delay_sum_ns as f64 / 1e6,
                queue_delay_max_ms: c.delay_max_ns as f64 / 1e6,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An untagged Ethernet frame of `len` bytes carrying IPv4 with `dscp`, protocol `proto` and
    /// (for TCP/UDP) ports `sport` -> `dport`.
    fn frame(len: usize, dscp: u8, proto: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&ethernet::ethertype::IPV4.to_be_bytes());
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = dscp << 2;
        let total = (len - 14) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[8] = 64;
        ip[9] = proto;
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn class(name: &str, prio: u8, weight: u32, dscp: &[u8]) -> ClassConfig {
        ClassConfig {
            name: name.into(),
            dscp: dscp.to_vec(),
            flows: Vec::new(),
            priority: prio,
            weight,
            limit_packets: None,
            limit_bytes: None,
        }
    }

    fn queues(classes: Vec<ClassConfig>) -> ClassQueues {
        ClassQueues::new(&QueueConfig {
            limit_packets: 100_000,
            limit_bytes: 1 << 30,
            classes,
        })
    }

    #[test]
    fn classify_by_dscp_rule_and_default() {
        let mut voice = class("voice", 0, 1, &[46]);
        voice.flows.push(FlowRule {
            protocol: Some(17),
            src_port: None,
            dst_port: Some(5060),
        });
        let mut ssh = class("ssh", 1, 1, &[]);
        ssh.flows.push(FlowRule {
            protocol: Some(6),
            src_port: None,
            dst_port: Some(22),
        });
        let q = queues(vec![voice, ssh, class("bulk", 2, 1, &[])]);
        assert_eq!(q.classify(&frame(100, 46, 17, 1, 2)), 0);
        assert_eq!(q.classify(&frame(100, 0, 17, 1, 5060)), 0);
        assert_eq!(q.classify(&frame(100, 0, 6, 1, 5060)), 2);
        assert_eq!(q.classify(&frame(100, 0, 6, 40000, 22)), 1);
        // both rules select: the first class in list order wins
        assert_eq!(q.classify(&frame(100, 46, 6, 40000, 22)), 0);
        assert_eq!(q.classify(&frame(100, 10, 1, 0, 0)), 2);
        let mut arp = frame(60, 0, 0, 0, 0);
        arp[12..14].copy_from_slice(&ethernet::ethertype::ARP.to_be_bytes());
        assert_eq!(q.classify(&arp), 2);
        // an 802.1Q-tagged frame is classified by the IP header behind the tag
        let plain = frame(100, 46, 17, 1, 2);
        let mut tagged = plain[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&plain[12..]);
        assert_eq!(q.classify(&tagged), 0);
    }

    #[test]
    fn strict_priority_serves_the_lower_number_first() {
        let mut q = queues(vec![class("ef", 0, 1, &[46]), class("be", 1, 1, &[])]);
        for _ in 0..5 {
            q.push(0, frame(1500, 0, 17, 1, 2)).unwrap();
        }
        q.push(10, frame(200, 46, 17, 1, 2)).unwrap();
        // the EF packet arrived last but leaves first
        assert_eq!(q.front_len(), Some(200));
        assert_eq!(q.pop(20).unwrap().len(), 200);
        // a best-effort packet is chosen, then an EF packet arrives: the EF one goes first
        assert_eq!(q.front_len(), Some(1500));
        q.push(30, frame(300, 46, 17, 1, 2)).unwrap();
        assert_eq!(q.pop(40).unwrap().len(), 300);
        let s = q.status();
        assert_eq!(
            (s[0].sent_packets, s[0].queue_delay_max_ms),
            (2, 10.0 / 1e6)
        );
        for _ in 0..5 {
            assert_eq!(q.pop(50).unwrap().len(), 1500);
        }
        assert!(q.pop(60).is_none() && q.is_empty());
        let s = q.status();
        assert_eq!(s[1].sent_packets, 5);
        assert_eq!(s[1].queue_delay_sum_ms, 5.0 * 50.0 / 1e6);
    }

    #[test]
    fn drr_shares_follow_the_weights_in_bytes() {
        // weights 3 : 1, both always backlogged; packet sizes differ (1500 vs 500 bytes), so
        // packet counts do not follow the weights, bytes do.
        let mut q = queues(vec![class("gold", 0, 3, &[10]), class("bronze", 0, 1, &[])]);
        let mut sent = [0u64; 2];
        for _ in 0..3000 {
            q.push(0, frame(1500, 10, 17, 1, 2)).unwrap();
            q.push(0, frame(500, 0, 17, 1, 2)).unwrap();
        }
        for _ in 0..4000 {
            let p = q.pop(0).unwrap();
            sent[usize::from(p.len() == 500)] += p.len() as u64;
        }
        let share = sent[0] as f64 / (sent[0] + sent[1]) as f64;
        assert!(
            (share - 0.75).abs() < 0.01,
            "gold share {share}, bytes {sent:?}"
        );
        // an idle class gives its share away (work conserving)
        let mut q = queues(vec![class("gold", 0, 3, &[10]), class("bronze", 0, 1, &[])]);
        for _ in 0..100 {
            q.push(0, frame(500, 0, 17, 1, 2)).unwrap();
        }
        for _ in 0..100 {
            assert_eq!(q.pop(0).unwrap().len(), 500);
        }
    }

    #[test]
    fn front_len_settles_the_choice_until_pop() {
        let mut q = queues(vec![class("a", 0, 1, &[10]), class("b", 0, 1, &[])]);
        q.push(0, frame(1400, 10, 17, 1, 2)).unwrap();
        q.push(0, frame(600, 0, 17, 1, 2)).unwrap();
        let first = q.front_len();
        assert_eq!(q.front_len(), first);
        assert_eq!(q.front_len(), first);
        assert_eq!(q.pop(0).map(|p| p.len()), first);
    }

    #[test]
    fn class_and_total_limits_drop_tail() {
        let mut small = class("ef", 0, 1, &[46]);
        small.limit_packets = Some(2);
        let mut bulk = class("be", 1, 1, &[]);
        bulk.limit_bytes = Some(3000);
        let mut q = ClassQueues::new(&QueueConfig {
            limit_packets: 4,
            limit_bytes: 1 << 20,
            classes: vec![small, bulk],
        });
        assert!(q.push(0, frame(100, 46, 17, 1, 2)).is_ok());
        assert!(q.push(0, frame(100, 46, 17, 1, 2)).is_ok());
        assert!(q.push(0, frame(100, 46, 17, 1, 2)).is_err()); // class packets
        assert!(q.push(0, frame(1500, 0, 17, 1, 2)).is_ok());
        assert!(q.push(0, frame(1500, 0, 17, 1, 2)).is_ok());
        assert!(q.push(0, frame(100, 0, 17, 1, 2)).is_err()); // class bytes (3100 > 3000)
        q.pop(0).unwrap(); // an EF packet leaves: 3 queued
        assert!(q.push(0, frame(100, 46, 17, 1, 2)).is_ok()); // 4 queued: the total limit
        let mut q2 = q;
        assert_eq!(q2.len(), 4);
        let s = q2.status();
        assert_eq!((s[0].dropped_packets, s[1].dropped_packets), (1, 1));
        assert_eq!((s[0].enqueued_packets, s[1].enqueued_packets), (3, 2));
        assert_eq!(s[1].dropped_bytes, 100);
        // the whole queue's packet limit (4) holds even though each class has room
        let mut big = ClassQueues::new(&QueueConfig {
            limit_packets: 2,
            limit_bytes: 1 << 20,
            classes: vec![class("ef", 0, 1, &[46]), class("be", 1, 1, &[])],
        });
        assert!(big.push(0, frame(100, 46, 17, 1, 2)).is_ok());
        assert!(big.push(0, frame(100, 0, 17, 1, 2)).is_ok());
        assert!(big.push(0, frame(100, 46, 17, 1, 2)).is_err());
        while q2.pop(0).is_some() {}
        assert_eq!((q2.len(), q2.bytes()), (0, 0));
    }
}
