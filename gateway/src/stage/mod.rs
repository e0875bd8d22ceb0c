//! The named stages of the two data planes (`crate::dataplane` runs them), in the order a packet
//! meets them. Each stage says what it reads and writes and which mechanism it implements.
//!
//! Egress (inside -> outside, toward the satellite), per round of the egress thread:
//!
//! | # | stage | mechanism |
//! |---|---|---|
//! | 0 | `dataplane::read_frames` | receive ring; GSO cut, partial checksums completed |
//! | 1 | [`pacing::Pacer::refresh`], [`admission::follow_rate`] | the pacing rate of this round (RED's idle decay follows it) |
//!
//! then per packet:
//!
//! | # | stage | mechanism |
//! |---|---|---|
//! | 2 | [`eten::MacLearner::observe`] | Ethernet addresses for ETEN notices |
//! | 3 | [`ern::ErnRouter::on_packet`] | IP-ERN router: XCP per-packet feedback on ERN traffic |
//! | 4 | [`ceten::egress`] | CETEN: forward congestion survival; reflection on ACKs |
//! | 5 | [`admission::admit`] | AQM (drop-tail / RED / RED+ECN) into the egress queue; CETEN congestion sample |
//! | 6 | [`ern::ErnRouter::observe_queue`] | IP-ERN: the persistent ERN queue |
//!
//! then per round:
//!
//! | # | stage | mechanism |
//! |---|---|---|
//! | 7 | [`eten::enqueue_notices`] | BETEN notices join the egress queue (they cross the return path) |
//! | 8 | [`pacing::Pacer::serve`] | drain the queue at the pacing rate |
//! | 9 | [`ern::ErnRouter::end_round`] | IP-ERN: XCP control interval, capacity = pacing rate |
//! | 10 | `dataplane::send` | sendmmsg |
//! | 11 | [`admission::publish`] | queue gauges for the HTTP endpoint |
//! | 12 | [`pacing::Pacer::sleep`] | wait for input, a notice or the next departure |
//!
//! Ingress (outside -> inside), per packet: [`eten::MacLearner::observe`], [`ceten::ingress`], then
//! `dataplane::send` (no queue).

pub mod admission;
pub mod ceten;
pub mod ern;
pub mod eten;
pub mod pacing;
