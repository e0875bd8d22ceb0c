//! MODCOD choice: the ACM loop (and CCM / VCM).
//!
//! ACM: the receiver measures its Es/N0 (the total C/N of `channel::Channel`) at every multiple of
//! `refresh_ms` and reports it; the report travels over the other direction and reaches the
//! transmitter after that direction's one-way propagation delay at the report's time. The
//! transmitter uses the latest report it has received when it starts a frame. Rule (OpenSAND
//! `FmtDefinitionTable::getRequiredModcod`): the MODCOD with the highest required Es/N0 that is
//! <= reported - margin_db; if none qualifies, the most robust MODCOD (lowest requirement). Note
//! that this literal rule can prefer a less efficient MODCOD with a higher threshold (8PSK 9/10 at
//! 10.98 dB over 16APSK 3/4 at 10.21 dB): kept for OpenSAND compatibility.
//!
//! Hysteresis (`hysteresis_db`, default 0): a step down happens as soon as the rule picks a lower
//! threshold; a step up only to the MODCOD the rule picks for reported - margin - hysteresis, i.e.
//! only when the margin is exceeded by the hysteresis.
//!
//! Before the first report arrives, the transmitter uses the MODCOD the rule gives for the Es/N0
//! at time 0 (as if the link had been up before the run). Reports are not lost or queued (an
//! out-of-band signalling channel). When more than 10 000 reports are pending (a long idle gap
//! with a short refresh), only the last 10 000 are replayed.
//!
//! CCM: always `acm.modcod`. VCM: frame n uses `acm.vcm_modcods[n mod len]`.

use crate::channel::Channel;
use crate::delay::DelaySource;

/// Index (into the MODCOD table rows) of the MODCOD the rule picks for `available_db`.
/// `by_threshold` lists (required Es/N0, row index) in increasing Es/N0.
pub fn select(by_threshold: &[(f64, usize)], available_db: f64) -> usize {
    let n = by_threshold.partition_point(|&(thr, _)| thr <= available_db);
    if n == 0 {
        by_threshold[0].1
    } else {
        by_threshold[n - 1].1
    }
}

/// How frames get their MODCOD.
#[derive(Debug, Clone)]
pub enum Mode {
    Acm,
    Ccm(usize),
    Vcm { cycle: Vec<usize>, pos: usize },
}

/// The transmitter's MODCOD state.
#[derive(Debug, Clone)]
pub struct AcmLoop {
    mode: Mode,
    by_threshold: Vec<(f64, usize)>,
    refresh_ns: u64,
    margin_db: f64,
    hysteresis_db: f64,
    /// The delay of the direction that carries the reports.
    feedback: DelaySource,
    current: usize,
    next_report: u64,
    last_reported_db: f64,
}

const MAX_PENDING_REPORTS: u64 = 10_000;

impl AcmLoop {
    /// `by_threshold`: usable MODCODs as (required Es/N0, row index), any order, not empty.
    pub fn new(
        mode: Mode,
        mut by_threshold: Vec<(f64, usize)>,
        refresh_ms: u64,
        margin_db: f64,
        hysteresis_db: f64,
        feedback: DelaySource,
        channel: &Channel,
    ) -> Self {
        by_threshold.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let esn0 = channel.esn0_db(0);
        let current = match &mode {
            Mode::Acm => select(&by_threshold, esn0 - margin_db),
            Mode::Ccm(i) => *i,
            Mode::Vcm { cycle, .. } => cycle[0],
        };
        AcmLoop {
            mode,
            by_threshold,
            refresh_ns: refresh_ms.max(1) * 1_000_000,
            margin_db,
            hysteresis_db,
            feedback,
            current,
            next_report: 0,
            last_reported_db: esn0,
        }
    }

    fn threshold_of(&self, idx: usize) -> f64 {
        self.by_threshold
            .iter()
            .find(|&&(_, i)| i == idx)
            .map(|&(t, _)| t)
            .unwrap_or(f64::MIN)
    }

    fn apply_report(&mut self, reported_db: f64) {
        self.last_reported_db = reported_db;
        let target = select(&self.by_threshold, reported_db - self.margin_db);
        let cur_thr = self.threshold_of(self.current);
        let target_thr = self.threshold_of(target);
        if target_thr < cur_thr {
            self.current = target;
        } else if target_thr > cur_thr {
            let up = select(
                &self.by_threshold,
                reported_db - self.margin_db - self.hysteresis_db,
            );
            if self.threshold_of(up) > cur_thr {
                self.current = up;
            }
        }
    }

    /// Applies every report that has reached the transmitter by `t_ns`.
    pub fn update(&mut self, t_ns: u64, channel: &Channel) {
        if !matches!(self.mode, Mode::Acm) {
            return;
        }
        let last_possible = t_ns / self.refresh_ns;
        if last_possible > self.next_report + MAX_PENDING_REPORTS {
            self.next_report = last_possible - MAX_PENDING_REPORTS;
        }
        loop {
            let t_meas = self.next_report * self.refresh_ns;
            if t_meas > t_ns || t_meas + self.feedback.at(t_meas) > t_ns {
                break;
            }
            self.apply_report(channel.esn0_db(t_meas));
            self.next_report += 1;
        }
    }

    /// When the next report reaches the transmitter (ACM only).
    pub fn next_report_arrival_ns(&self) -> Option<u64> {
        match self.mode {
            Mode::Acm => {
                let t = self.next_report * self.refresh_ns;
                Some(t + self.feedback.at(t))
            }
            _ => None,
        }
    }

    /// MODCOD (row index) in use now, for status.
    pub fn current(&self) -> usize {
        match &self.mode {
            Mode::Vcm { cycle, pos } => cycle[*pos % cycle.len()],
            _ => self.current,
        }
    }

    /// MODCOD (row index) of the next frame; advances the VCM cycle.
    pub fn next_frame_modcod(&mut self) -> usize {
        match &mut self.mode {
            Mode::Vcm { cycle, pos } => {
                let m = cycle[*pos % cycle.len()];
                *pos = (*pos + 1) % cycle.len();
                m
            }
            _ => self.current,
        }
    }

    /// The Es/N0 of the last report applied, dB.
    pub fn last_reported_db(&self) -> f64 {
        self.last_reported_db
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::combine_db;
    use crate::modcod::ModcodTable;

    fn thresholds() -> (ModcodTable, Vec<(f64, usize)>) {
        let t = ModcodTable::dvbs2_default();
        let v = t
            .rows
            .iter()
            .enumerate()
            .map(|(i, m)| (m.esn0_db, i))
            .collect();
        (t, v)
    }

    fn id_for(db: f64) -> u32 {
        let (t, v) = thresholds();
        let mut v = v;
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        t.rows[select(&v, db)].id
    }

    #[test]
    fn worked_examples() {
        // OpenSAND clear sky: 20 dB up, 20 dB down -> 16.99 dB -> 32APSK 9/10.
        assert_eq!(id_for(combine_db(20.0, 20.0)), 28);
        assert_eq!(id_for(16.99), 28);
        // 6 dB on the downlink -> 13.03 dB -> 16APSK 8/9 (OpenSAND measured 22).
        assert_eq!(id_for(combine_db(20.0, 14.0)), 22);
        // 12 dB -> 7.73 dB -> 8PSK 2/3 (OpenSAND measured 13).
        assert_eq!(id_for(combine_db(20.0, 8.0)), 13);
        // Exactly at a threshold qualifies.
        assert_eq!(id_for(16.05), 28);
        assert_eq!(id_for(16.04), 27);
        // Below every threshold: most robust.
        assert_eq!(id_for(-10.0), 1);
        // OpenSAND's literal rule: 11.0 dB -> 8PSK 9/10 (10.98) although 16APSK 3/4 is more efficient.
        assert_eq!(id_for(11.0), 17);
    }

    fn acm(margin: f64, hyst: f64, ch: &Channel) -> AcmLoop {
        let (_, v) = thresholds();
        AcmLoop::new(
            Mode::Acm,
            v,
            100,
            margin,
            hyst,
            DelaySource::fixed_ms(250.0),
            ch,
        )
    }

    #[test]
    fn margin() {
        let (t, _) = thresholds();
        let ch = Channel::constant(20.0, 20.0, 0.0, 0.0);
        // 16.99 - 1 = 15.99 -> 16APSK... highest <= 15.99 is 32APSK 8/9 (15.69).
        let a = acm(1.0, 0.0, &ch);
        assert_eq!(t.rows[a.current()].id, 27);
        let a = acm(3.0, 0.0, &ch); // 13.99 -> 32APSK 4/5 (13.64)
        assert_eq!(t.rows[a.current()].id, 25);
    }

    #[test]
    fn hysteresis() {
        let (t, _) = thresholds();
        let ch = Channel::constant(20.0, 20.0, 0.0, 0.0);
        let mut a = acm(0.0, 0.5, &ch);
        assert_eq!(t.rows[a.current()].id, 28);
        a.apply_report(13.0); // down at once: 16APSK 8/9 (12.89)
        assert_eq!(t.rows[a.current()].id, 22);
        a.apply_report(13.2); // would be 23 (13.13) but 13.2 - 0.5 = 12.7 < 13.13: stay
        assert_eq!(t.rows[a.current()].id, 22);
        a.apply_report(13.7); // 13.7 - 0.5 = 13.2 -> 23
        assert_eq!(t.rows[a.current()].id, 23);
        a.apply_report(16.2); // 16.2 - 0.5 = 15.7 -> 27 (15.69), not 28
        assert_eq!(t.rows[a.current()].id, 27);
        a.apply_report(16.05); // rule says 28, hysteresis keeps 27; no step down either
        assert_eq!(t.rows[a.current()].id, 27);
    }

    #[test]
    fn reports_arrive_after_feedback_delay() {
        let (t, _) = thresholds();
        // Step of 6 dB at t = 1 s on the downlink.
        let mut ch = Channel::constant(20.0, 20.0, 0.0, 0.0);
        ch.set_override(1_000_000_000, 6.0);
        let mut a = acm(0.0, 0.0, &ch);
        a.update(1_249_999_999, &ch);
        assert_eq!(t.rows[a.current()].id, 28);
        assert_eq!(a.next_report_arrival_ns(), Some(1_250_000_000));
        a.update(1_250_000_000, &ch);
        assert_eq!(t.rows[a.current()].id, 22);
    }
}
