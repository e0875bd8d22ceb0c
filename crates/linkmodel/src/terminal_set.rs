//! A set of a beam's terminals (indices below the beam's size) as a bitset (`beam.rs`): the
//! terminals with data waiting, and those the model must poll. Walking it costs one word per 64
//! terminals plus one step per member, so a beam of 1000 terminals with a few active ones
//! schedules and polls at the cost of the active ones.

#[derive(Debug, Clone)]
pub(crate) struct TerminalSet {
    words: Vec<u64>,
    n: usize,
}

impl TerminalSet {
    /// The empty set of `n` terminals.
    pub(crate) fn new(n: usize) -> Self {
        TerminalSet {
            words: vec![0; n.div_ceil(64)],
            n,
        }
    }

    pub(crate) fn insert(&mut self, k: usize) {
        self.words[k / 64] |= 1 << (k % 64);
    }

    pub(crate) fn remove(&mut self, k: usize) {
        self.words[k / 64] &= !(1 << (k % 64));
    }

    /// Inserts `k` if `member`, else removes it.
    pub(crate) fn set(&mut self, k: usize, member: bool) {
        if member {
            self.insert(k);
        } else {
            self.remove(k);
        }
    }

    /// The smallest member at or after `k`.
    pub(crate) fn next_from(&self, k: usize) -> Option<usize> {
        let mut w = k / 64;
        let mut bits = *self.words.get(w)? & (u64::MAX << (k % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.words.get(w)?;
        }
    }

    /// In turn from `start` (`start`, `start`+1, ..., the last, then 0, ..., `start`-1): the
    /// first member at least `d` steps after `start`, and its steps. Walk a turn with
    /// `d` = 0, then the steps of the member found + 1 (the set may change in between).
    pub(crate) fn next_in_turn(&self, start: usize, d: usize) -> Option<(usize, usize)> {
        let k = start + d;
        let ahead = if k < self.n { self.next_from(k) } else { None };
        match ahead {
            Some(j) => Some((j, j - start)),
            None => self
                .next_from(k.saturating_sub(self.n))
                .filter(|&j| j < start)
                .map(|j| (j, j + self.n - start)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_found_in_order_and_cyclically() {
        let mut s = TerminalSet::new(1000);
        assert_eq!(s.next_in_turn(0, 0), None);
        for k in [3, 64, 700, 999] {
            s.insert(k);
        }
        assert_eq!(s.next_from(0), Some(3));
        assert_eq!(s.next_from(4), Some(64));
        assert_eq!(s.next_from(65), Some(700));
        assert_eq!(s.next_from(1000), None);
        assert_eq!(s.next_in_turn(701, 0), Some((999, 298)));
        s.set(999, false);
        assert_eq!(s.next_in_turn(701, 0), Some((3, 302)));
        // A whole turn from 64: each member once, 64 first.
        let mut turn = Vec::new();
        let mut d = 0;
        while let Some((j, dj)) = s.next_in_turn(64, d) {
            turn.push(j);
            d = dj + 1;
        }
        assert_eq!(turn, [64, 700, 3]);
        s.remove(3);
        assert_eq!(s.next_in_turn(0, 0), Some((64, 64)));
    }
}
