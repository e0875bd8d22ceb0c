//! The receiver's decisions for one TCP connection (Yang 2001, thesis section 3.2), free of any
//! packet I/O so that it can be tested with plain values.
//!
//! Inputs: every incoming data segment (`data`), every outgoing segment of the connection
//! (`outgoing`), and the clock (`tick`). Outputs: verdicts in `drain()` order, each an outgoing
//! packet accepted as it is, accepted with a rewritten ACK number, or dropped.
//!
//! Choices where the thesis is silent or where Linux differs from FreeBSD 4.1 (each a setting
//! where it is a number; see endhosts/README.md, "Reordering-robust receiver"):
//! - Counting unit. An episode counts the dupACKs the sender sees (same ACK number, no payload,
//!   caused by an out-of-order arrival). Linux acknowledges each out-of-order segment at once
//!   when SACK is off, so this is Yang's count of out-of-order arrivals, and no delayed-ACK
//!   halving applies (n = cnt).
//! - Stride unit. stride = rcv_max_nxt - rcv_nxt in bytes, converted to segments of the largest
//!   payload seen (rounded up), because it is compared with a count of arrivals.
//! - When a stride enters the history. The strides of an episode stay pending and only the
//!   episode's largest one is recorded when the hole is filled within the receiver RTT estimate
//!   (reordering). A hole filled later was a retransmission and its strides are dropped (Yang's
//!   filter). Recording them at once would make the threshold grow with the very episode it has
//!   to bound: a loss would never reach `cnt > threshold`.
//! - Empty history: threshold `initial_threshold` (3 = the sender's dupthresh: behave as a stock
//!   receiver until reordering has been seen).
//! - After a DUP release and until the hole fills, further dupACKs pass at once: the sender is in
//!   fast recovery and needs them (the thesis leaves this open).
//! - SEQ release: the held dupACKs are rewritten into partial ACKs, evenly spaced in
//!   (old rcv_nxt, new rcv_nxt] on segment boundaries, followed by the kernel's own new ACK:
//!   up to cnt ACKs. The first partial ACK covers the hole plus the dupACKs already sent (Linux
//!   Reno forgets only acked - 1 counted dupACKs per new ACK); a held packet left without a
//!   strictly larger ack number is dropped.

use std::collections::VecDeque;

/// Settings of the receiver (bounds are checked by the caller, `main.rs`).
#[derive(Debug, Clone)]
pub struct Params {
    /// DupACKs sent at once at the start of an episode (2, or 0 for Limited Transmit senders).
    pub immediate_dupacks: u32,
    /// Episodes whose largest stride is kept (the circular buffer; Yang does not give its size).
    pub history: usize,
    /// Weight of the newest inter-arrival time in its EWMA (Yang does not give it).
    pub iat_weight: f64,
    /// Threshold (segments) while the history is empty.
    pub initial_threshold: u32,
    /// Receiver RTT estimate: a hole filled later than this after it opened was a retransmission.
    pub rtt_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    AcceptWithAck(u32),
    Drop,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counters {
    pub data_segments: u64,
    pub ooo_arrivals: u64,
    pub acks: u64,
    pub dupacks: u64,
    pub dupacks_immediate: u64,
    pub dupacks_held: u64,
    pub episodes: u64,
    pub released_dup_threshold: u64,
    pub released_dup_timer: u64,
    pub released_seq: u64,
    pub acks_rewritten: u64,
    pub acks_dropped: u64,
    pub filtered_episodes: u64,
    pub strides_recorded: u64,
}

struct Episode<T> {
    t0: u64,
    cnt: u32,
    max_stride: u32,
    held: VecDeque<T>,
    /// A DUP release happened: the sender was told of a loss; later dupACKs pass.
    released: bool,
}

/// `a` after `b` in sequence space.
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

pub struct Flow<T> {
    p: Params,
    last_ack: Option<u32>,
    rcv_max_nxt: Option<u32>,
    mss: u32,
    iat_ewma_ns: Option<f64>,
    last_arrival: Option<u64>,
    /// Next in-order sequence number as far as the arrivals and ACKs tell (the kernel's rcv_nxt
    /// except after a hole filled by a segment that leaves another hole, until the next ACK).
    expected: Option<u32>,
    /// Out-of-order arrivals not yet answered by a dupACK.
    ooo_pending: u32,
    strides: VecDeque<u32>,
    /// The sender's view: the last ACK number let out and the dupACKs its Reno still counts.
    sent_ack: Option<u32>,
    sender_dups: u32,
    episode: Option<Episode<T>>,
    /// Paced packets: due time, packet, verdict. Anything sent while it is not empty queues
    /// behind it, so ACKs are never reordered.
    pace: VecDeque<(u64, T, Verdict)>,
    out: Vec<(T, Verdict)>,
    pub counters: Counters,
}

impl<T> Flow<T> {
    pub fn new(p: Params) -> Self {
        Flow {
            p,
            last_ack: None,
            rcv_max_nxt: None,
            mss: 0,
            iat_ewma_ns: None,
            last_arrival: None,
            expected: None,
            ooo_pending: 0,
            strides: VecDeque::new(),
            sent_ack: None,
            sender_dups: 0,
            episode: None,
            pace: VecDeque::new(),
            out: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Current threshold in segments: the largest recorded stride.
    pub fn threshold(&self) -> u32 {
        self.strides
            .iter()
            .copied()
            .max()
            .unwrap_or(self.p.initial_threshold)
    }

    pub fn iat_ewma_ns(&self) -> Option<f64> {
        self.iat_ewma_ns
    }

    /// An incoming segment carrying `len` bytes from `seq`.
    pub fn data(&mut self, now: u64, seq: u32, len: u32) {
        if len == 0 {
            return;
        }
        self.counters.data_segments += 1;
        if let Some(prev) = self.last_arrival {
            let iat = now.saturating_sub(prev) as f64;
            let w = self.p.iat_weight;
            self.iat_ewma_ns = Some(match self.iat_ewma_ns {
                None => iat,
                Some(e) => (1.0 - w) * e + w * iat,
            });
        }
        self.last_arrival = Some(now);
        self.mss = self.mss.max(len);
        let end = seq.wrapping_add(len);
        if self.rcv_max_nxt.is_none_or(|m| after(end, m)) {
            self.rcv_max_nxt = Some(end);
        }
        // In-order data may not be acknowledged yet (delayed ACKs): `expected` follows it.
        match self.expected {
            Some(e) if after(seq, e) => {
                self.ooo_pending += 1;
                self.counters.ooo_arrivals += 1;
            }
            Some(e) if after(end, e) => self.expected = Some(end),
            _ => {}
        }
    }

    /// An outgoing segment: `ack` its ACK number (None without the ACK flag), `pure` when it
    /// has no payload and no SYN/FIN/RST.
    pub fn outgoing(&mut self, now: u64, pkt: T, ack: Option<u32>, pure: bool) {
        let Some(ack) = ack else {
            self.send(now, pkt, Verdict::Accept);
            return;
        };
        self.counters.acks += 1;
        let prev = self.last_ack;
        // A dupACK while a hole is open, whether an out-of-order or a duplicate segment caused
        // it: the sender counts both alike.
        let hole = self.rcv_max_nxt.is_some_and(|m| after(m, ack));
        let is_dup = pure && prev == Some(ack) && (self.ooo_pending > 0 || hole);
        if is_dup {
            self.ooo_pending = self.ooo_pending.saturating_sub(1);
            self.dupack(now, pkt, ack);
            return;
        }
        if prev.is_none_or(|p| after(ack, p)) {
            self.last_ack = Some(ack);
            if self.expected.is_none_or(|e| after(ack, e)) {
                self.expected = Some(ack);
            }
            self.ooo_pending = 0;
            if let (Some(ep), Some(old)) = (self.episode.take(), prev) {
                self.end_episode(now, ep, old, ack, pkt);
                return;
            }
        }
        self.sender_sees(ack, pure);
        self.send(now, pkt, Verdict::Accept);
    }

    /// Follows the sender's Reno dupACK count as an ACK is let out. Linux counts each dupACK
    /// as a segment that left the network, and a new ACK acking k segments forgets only k - 1
    /// of them (`tcp_remove_reno_sacks`), so the count can carry over from one hole to the next;
    /// FreeBSD, Yang's sender, reset it on every new ACK.
    fn sender_sees(&mut self, ack: u32, pure: bool) {
        match self.sent_ack {
            Some(s) if after(ack, s) => {
                let acked = (ack.wrapping_sub(s) / self.mss.max(1)).max(1);
                self.sender_dups = self.sender_dups.saturating_sub(acked - 1);
                self.sent_ack = Some(ack);
            }
            Some(s) if s == ack && pure => self.sender_dups += 1,
            None => self.sent_ack = Some(ack),
            _ => {}
        }
    }

    fn dupack(&mut self, now: u64, pkt: T, ack: u32) {
        self.counters.dupacks += 1;
        let stride_bytes = self.rcv_max_nxt.map_or(0, |m| m.wrapping_sub(ack));
        let stride = stride_bytes.div_ceil(self.mss.max(1));
        let threshold = self.threshold();
        let ep = self.episode.get_or_insert_with(|| Episode {
            t0: now,
            cnt: 0,
            max_stride: 0,
            held: VecDeque::new(),
            released: false,
        });
        if ep.cnt == 0 {
            self.counters.episodes += 1;
        }
        ep.cnt += 1;
        ep.max_stride = ep.max_stride.max(stride);
        // Yang's "cnt <= 2" is the sender's dupACK count on FreeBSD; on Linux it is followed
        // in `sender_dups`, which may start above 0 (see `sender_sees`).
        if ep.released || self.sender_dups < self.p.immediate_dupacks {
            self.counters.dupacks_immediate += 1;
            self.sender_sees(ack, true);
            self.send(now, pkt, Verdict::Accept);
            return;
        }
        self.counters.dupacks_held += 1;
        ep.held.push_back(pkt);
        if ep.cnt > threshold {
            self.counters.released_dup_threshold += 1;
            self.release_dup(now);
        }
    }

    /// Releases the held dupACKs, spaced by (now - t0) / cnt: the sender learns of a loss.
    fn release_dup(&mut self, now: u64) {
        let Some(ep) = self.episode.as_mut() else {
            return;
        };
        ep.released = true;
        let gap = now.saturating_sub(ep.t0) / u64::from(ep.cnt.max(1));
        let held: Vec<T> = ep.held.drain(..).collect();
        for (i, pkt) in held.into_iter().enumerate() {
            if let Some(a) = self.sent_ack {
                self.sender_sees(a, true);
            }
            self.schedule(now + i as u64 * gap, pkt, Verdict::Accept);
        }
    }

    /// The hole is filled (the ACK number moved from `old` to `new`).
    fn end_episode(&mut self, now: u64, mut ep: Episode<T>, old: u32, new: u32, pkt: T) {
        let elapsed = now.saturating_sub(ep.t0);
        if elapsed > self.p.rtt_ns {
            self.counters.filtered_episodes += 1;
        } else {
            if self.strides.len() == self.p.history.max(1) {
                self.strides.pop_front();
            }
            self.strides.push_back(ep.max_stride);
            self.counters.strides_recorded += 1;
        }
        if ep.released || ep.held.is_empty() {
            self.sender_sees(new, true);
            self.send(now, pkt, Verdict::Accept);
            return;
        }
        // SEQ release: up to cnt ACKs evenly spaced in (old, new], the last one the kernel's.
        // Linux's Reno counts each dupACK as a segment that left the network and a new ACK
        // only forgets (segments acked - 1) of them: the first partial ACK covers the hole and
        // the dupACKs already sent, or they would carry over into the next episode's count.
        // Ack numbers are on segment boundaries and strictly increasing (an equal one would be
        // a dupACK); held packets that find no such number are dropped.
        self.counters.released_seq += 1;
        let gap = elapsed / u64::from(ep.cnt.max(1));
        let span = new.wrapping_sub(old);
        let mss = self.mss.max(1);
        let first = (self.sender_dups + 1).saturating_mul(mss);
        let room = if span > first {
            (span - first) / mss
        } else {
            0
        };
        let wanted = (ep.held.len() as u32).min(ep.cnt.saturating_sub(1));
        let n = wanted.min(room);
        for j in 0..n {
            let pkt_j = ep.held.pop_front().expect("n <= held");
            let step = (u64::from(span - first) * u64::from(j) / u64::from(n)) as u32;
            let ack = old.wrapping_add(first + step / mss * mss);
            self.sender_sees(ack, true);
            self.counters.acks_rewritten += 1;
            self.schedule(now + u64::from(j) * gap, pkt_j, Verdict::AcceptWithAck(ack));
        }
        for surplus in ep.held.drain(..) {
            self.counters.acks_dropped += 1;
            self.out.push((surplus, Verdict::Drop));
        }
        self.sender_sees(new, true);
        self.schedule(now + u64::from(n) * gap, pkt, Verdict::Accept);
    }

    fn schedule(&mut self, due: u64, pkt: T, v: Verdict) {
        let due = self.pace.back().map_or(due, |b| b.0.max(due));
        self.pace.push_back((due, pkt, v));
    }

    /// Sends at once unless paced packets are waiting, then behind them.
    fn send(&mut self, now: u64, pkt: T, v: Verdict) {
        if self.pace.is_empty() {
            self.out.push((pkt, v));
        } else {
            self.schedule(now, pkt, v);
        }
    }

    /// The stall timer: with dupACKs held and no arrival for threshold x EWMA(IAT), release.
    fn stall_deadline(&self) -> Option<u64> {
        let ep = self.episode.as_ref()?;
        if ep.released || ep.held.is_empty() {
            return None;
        }
        let iat = self.iat_ewma_ns?;
        let last = self.last_arrival?;
        Some(last + (f64::from(self.threshold()) * iat).ceil() as u64)
    }

    /// The earliest time `tick` has something to do.
    pub fn deadline(&self) -> Option<u64> {
        let pace = self.pace.front().map(|p| p.0);
        match (pace, self.stall_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn tick(&mut self, now: u64) {
        if self.stall_deadline().is_some_and(|d| d <= now) {
            self.counters.released_dup_timer += 1;
            self.release_dup(now);
        }
        while self.pace.front().is_some_and(|p| p.0 <= now) {
            let (_, pkt, v) = self.pace.pop_front().expect("front exists");
            self.out.push((pkt, v));
        }
    }

    /// Everything held or paced goes out now, in order (at exit).
    pub fn flush(&mut self) {
        if let Some(mut ep) = self.episode.take() {
            for pkt in ep.held.drain(..) {
                self.schedule(0, pkt, Verdict::Accept);
            }
        }
        for (_, pkt, v) in self.pace.drain(..) {
            self.out.push((pkt, v));
        }
    }

    pub fn drain(&mut self) -> Vec<(T, Verdict)> {
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MSS: u32 = 500;

    fn params(immediate: u32) -> Params {
        Params {
            immediate_dupacks: immediate,
            history: 8,
            iat_weight: 0.125,
            initial_threshold: 3,
            rtt_ns: 300 * MS,
        }
    }

    /// A receiver driven segment by segment (segment i = bytes [i*MSS, (i+1)*MSS)): each arrival
    /// is followed by the ACK Linux would send (cumulative ACK of the in-order prefix).
    struct Rx {
        flow: Flow<u32>,
        got: std::collections::BTreeSet<u32>,
        next_id: u32,
        verdicts: Vec<(u32, Verdict)>,
    }

    impl Rx {
        fn new(immediate: u32) -> Self {
            Rx {
                flow: Flow::new(params(immediate)),
                got: Default::default(),
                next_id: 0,
                verdicts: vec![],
            }
        }
        fn rcv_nxt(&self) -> u32 {
            (0..).find(|i| !self.got.contains(i)).unwrap() * MSS
        }
        /// Segment `i` arrives at `now` ms; returns the id of the ACK it caused.
        fn arrive(&mut self, now_ms: u64, i: u32) -> u32 {
            let now = now_ms * MS;
            self.flow.tick(now);
            self.flow.data(now, i * MSS, MSS);
            self.got.insert(i);
            let id = self.next_id;
            self.next_id += 1;
            self.flow.outgoing(now, id, Some(self.rcv_nxt()), true);
            self.verdicts.extend(self.flow.drain());
            id
        }
        fn advance(&mut self, now_ms: u64) {
            self.flow.tick(now_ms * MS);
            self.verdicts.extend(self.flow.drain());
        }
        fn verdict(&self, id: u32) -> Option<Verdict> {
            self.verdicts.iter().find(|v| v.0 == id).map(|v| v.1)
        }
        /// Where ACK `id` stands in the order the ACKs left.
        fn position(&self, id: u32) -> usize {
            self.verdicts.iter().position(|v| v.0 == id).unwrap()
        }
    }

    #[test]
    fn first_two_dupacks_pass_then_held_until_threshold() {
        let mut rx = Rx::new(2);
        for i in 0..10 {
            rx.arrive(i as u64, i);
        }
        // Segment 10 is lost: 11.. arrive out of order.
        let ids: Vec<u32> = (11..15).map(|i| rx.arrive(i as u64, i)).collect();
        assert_eq!(rx.verdict(ids[0]), Some(Verdict::Accept));
        assert_eq!(rx.verdict(ids[1]), Some(Verdict::Accept));
        assert_eq!(rx.verdict(ids[2]), None, "third dupACK held");
        // Threshold 3 (empty history): the 4th dupACK exceeds it and the held ones go out paced.
        assert_eq!(rx.flow.counters.released_dup_threshold, 1);
        rx.advance(100);
        assert_eq!(rx.verdict(ids[2]), Some(Verdict::Accept));
        assert_eq!(rx.verdict(ids[3]), Some(Verdict::Accept));
        // After the release, later dupACKs pass at once.
        let later = rx.arrive(101, 15);
        assert_eq!(rx.verdict(later), Some(Verdict::Accept));
    }

    /// Segments 0..n in order, then segment `hole` missing while `late` more arrive, then the
    /// hole at `fill_ms`. Returns the ids of the ACKs caused by the out-of-order arrivals and
    /// by the hole filling.
    fn episode(rx: &mut Rx, hole: u32, late: u32, t_ms: u64, fill_ms: u64) -> (Vec<u32>, u32) {
        let ids = (1..=late)
            .map(|k| rx.arrive(t_ms + u64::from(k), hole + k))
            .collect();
        let fill = rx.arrive(fill_ms, hole);
        (ids, fill)
    }

    fn in_order(rx: &mut Rx, from: u32, to: u32, t_ms: u64) {
        for i in from..to {
            rx.arrive(t_ms + u64::from(i - from), i);
        }
    }

    /// Episode 1: segment 10 overtaken by 5 (threshold 3: released as a loss), filled after
    /// 20 ms < RTT: its stride (6 segments) is recorded. Then in order up to 30, and 60 ms.
    fn learned_stride_of_six() -> Rx {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 10, 0);
        episode(&mut rx, 10, 5, 10, 30);
        in_order(&mut rx, 16, 30, 40);
        rx.advance(60);
        rx
    }

    #[test]
    fn no_reordering_changes_nothing() {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 200, 0);
        assert_eq!(rx.verdicts.len(), 200);
        assert!(rx.verdicts.iter().all(|v| v.1 == Verdict::Accept));
        assert_eq!(rx.flow.counters.dupacks, 0);
        assert_eq!(rx.flow.deadline(), None);
    }

    #[test]
    fn learned_reordering_is_hidden_and_the_fill_paced() {
        let mut rx = learned_stride_of_six();
        assert_eq!(rx.flow.counters.released_dup_threshold, 1);
        assert_eq!(rx.flow.threshold(), 6);
        // Episode 2, same displacement: only the 2 immediate dupACKs reach the sender.
        let (ids, fill) = episode(&mut rx, 30, 5, 60, 66);
        assert_eq!(
            rx.flow.counters.released_dup_threshold, 1,
            "no second release"
        );
        let accepted_at_once: Vec<_> = ids.iter().map(|i| rx.verdict(*i)).collect();
        assert_eq!(accepted_at_once[..2], [Some(Verdict::Accept); 2]);
        assert!(accepted_at_once[2..].iter().all(|v| v.is_none()));
        // The fill: 3 held dupACKs become partial ACKs between 30 and 36 segments, the first
        // covering the hole and the 2 dupACKs sent, then the kernel's ACK of 36; paced
        // (66 - 61) ms / 5 apart.
        rx.advance(200);
        let acks: Vec<_> = ids[2..].iter().map(|i| rx.verdict(*i).unwrap()).collect();
        assert_eq!(
            acks,
            [
                Verdict::AcceptWithAck(33 * MSS),
                Verdict::AcceptWithAck(34 * MSS),
                Verdict::AcceptWithAck(35 * MSS)
            ]
        );
        assert_eq!(rx.verdict(fill), Some(Verdict::Accept));
        assert!(
            rx.position(ids[2]) < rx.position(ids[3]) && rx.position(ids[4]) < rx.position(fill),
            "paced in order"
        );
        assert_eq!(rx.flow.counters.released_seq, 1);
        assert_eq!(rx.flow.counters.strides_recorded, 2);
    }

    #[test]
    fn acks_sent_while_pacing_queue_behind() {
        let mut rx = learned_stride_of_six();
        let (_, fill) = episode(&mut rx, 30, 5, 60, 66);
        // The fill's ACK is paced 3 gaps of 1 ms later; an ACK sent meanwhile waits for it.
        let next = rx.arrive(66, 36);
        assert_eq!(rx.flow.counters.released_seq, 1);
        assert_eq!(rx.verdict(fill), None);
        assert_eq!(rx.verdict(next), None);
        rx.advance(400);
        assert!(rx.position(fill) < rx.position(next));
    }

    #[test]
    fn retransmission_filter_keeps_loss_strides_out() {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 10, 0);
        // Segment 10 lost, retransmitted 400 ms later (> RTT estimate 300 ms).
        episode(&mut rx, 10, 20, 10, 410);
        assert_eq!(rx.flow.counters.filtered_episodes, 1);
        assert_eq!(rx.flow.counters.strides_recorded, 0);
        assert_eq!(rx.flow.threshold(), 3, "still the initial threshold");
    }

    #[test]
    fn stall_timer_releases_when_arrivals_stop() {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 10, 0);
        // Learn a stride of 11 segments (IAT 1 ms).
        episode(&mut rx, 10, 10, 10, 21);
        assert_eq!(rx.flow.threshold(), 11);
        in_order(&mut rx, 21, 40, 22);
        // Segment 40 lost; 4 arrive, then nothing: cnt 4 < 11, so only the timer can release.
        let ids: Vec<u32> = (41..45).map(|i| rx.arrive(u64::from(i) + 1, i)).collect();
        assert_eq!(rx.verdict(ids[2]), None);
        let deadline = rx.flow.deadline().expect("stall timer armed");
        // threshold 11 x EWMA(IAT) ~ 1 ms after the last arrival at 45 ms.
        assert!((55 * MS..=57 * MS).contains(&deadline), "{deadline}");
        rx.advance(54);
        assert_eq!(rx.verdict(ids[2]), None);
        rx.advance(80);
        rx.advance(100);
        assert_eq!(rx.flow.counters.released_dup_timer, 1);
        assert_eq!(rx.verdict(ids[2]), Some(Verdict::Accept));
        assert_eq!(rx.verdict(ids[3]), Some(Verdict::Accept));
    }

    #[test]
    fn without_immediate_dupacks_all_are_held() {
        let mut rx = Rx::new(0);
        in_order(&mut rx, 0, 10, 0);
        let ids: Vec<u32> = (11..13).map(|i| rx.arrive(u64::from(i), i)).collect();
        assert_eq!(rx.verdict(ids[0]), None);
        assert_eq!(rx.verdict(ids[1]), None);
        let fill = rx.arrive(13, 10);
        rx.advance(100);
        // cnt = 2 ACKs: one held dupACK rewritten, the other dropped, then the kernel's ACK.
        assert_eq!(rx.verdict(ids[0]), Some(Verdict::AcceptWithAck(11 * MSS)));
        assert_eq!(rx.verdict(ids[1]), Some(Verdict::Drop));
        assert_eq!(rx.verdict(fill), Some(Verdict::Accept));
        assert_eq!(rx.flow.counters.acks_dropped, 1);
    }

    #[test]
    fn flush_lets_everything_out() {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 10, 0);
        episode(&mut rx, 10, 3, 10, 500);
        let more: Vec<u32> = (20..23).map(|i| rx.arrive(600 + u64::from(i), i)).collect();
        rx.flow.flush();
        rx.verdicts.extend(rx.flow.drain());
        assert!(more.iter().all(|i| rx.verdict(*i).is_some()));
        assert_eq!(rx.flow.deadline(), None);
    }

    #[test]
    fn dupacks_the_sender_still_counts_are_not_repeated() {
        let mut rx = Rx::new(2);
        in_order(&mut rx, 0, 10, 0);
        // Segments 10 and 11 both late: 12 and 13 arrive (2 dupACKs of 10 go out), then 10
        // alone: the ACK of 11 acks one segment, so Linux Reno still counts 2 dupACKs.
        let ids: Vec<u32> = [12, 13]
            .iter()
            .map(|i| rx.arrive(u64::from(*i), *i))
            .collect();
        assert!(ids.iter().all(|i| rx.verdict(*i) == Some(Verdict::Accept)));
        rx.arrive(14, 10);
        // Another arrival above the hole at 11: a third dupACK now would be a fast retransmit.
        let next = rx.arrive(15, 14);
        assert_eq!(rx.verdict(next), None, "held");
        // 11 arrives: an episode of cnt = 1 releases one ACK, the kernel's ACK of 15 (it acks
        // 4 segments and clears the count); the held dupACK has no place and is dropped.
        let fill = rx.arrive(16, 11);
        rx.advance(100);
        assert_eq!(rx.verdict(next), Some(Verdict::Drop));
        assert_eq!(rx.verdict(fill), Some(Verdict::Accept));
        assert_eq!(rx.flow.sender_dups, 0);
    }
}
