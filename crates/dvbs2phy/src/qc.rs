//! The quasi-cyclic structure of the DVB-S2 parity-check matrices (EN 302 307-1 5.3.2.1), which
//! lets a decoder update 360 check rows at once.
//!
//! Information column j has the checks (x + (j mod 360) q) mod m for the addresses x of its
//! table row, m = 360 q parity bits; row r of the accumulator holds the parity bits r - 1 and r.
//! Number the checks r = g + l q (row group g in 0..q, lane l in 0..360) and store parity bit
//! p = g + l q at position k + 360 g + l (the information bits stay where they are): then lane l
//! of row group g reads, for every edge of the group, the bit at `360 block + (l + shift) mod
//! 360` of one 360-bit block, the same block and shift for all 360 lanes. The one exception is
//! row 0, which has no parity bit p - 1: its lane 0 lacks the group's edge to parity block q - 1
//! (every other lane l reads parity bit g - 1 + l q = q - 1 + (l - 1) q there). A table row
//! may hold two addresses of one row group: the group then has two edges to one information
//! block (different shifts), and each bit of that block two rows in the group (`repeat`; 3 to
//! 39 such edges per code).
//!
//! The structure is derived from the matrix itself, not from the standard's tables, so the
//! matrices of ldpc-toolbox and of crate::ldpc are decoded alike; a matrix without it is
//! refused.

use ldpc_toolbox::sparse::SparseMatrix;

/// Rows (lanes) in a row group: the circulant size of the DVB-S2 codes.
pub const LANES: usize = 360;

/// One edge of a row group: lane l reads position `360 block + (l + shift) mod 360`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEdge {
    pub block: usize,
    pub shift: usize,
    /// The lane without this edge (row 0's missing accumulator bit), if any.
    pub missing_lane: Option<usize>,
    /// The group's edge before this one reads the same block: each bit of the block gets two
    /// messages from the layer (some DVB-S2 table rows hold two addresses of one row group).
    pub repeat: bool,
}

/// A parity-check matrix in row groups of 360 lanes.
#[derive(Debug, Clone)]
pub struct QcLayout {
    /// Codeword bits (n) and information bits (k).
    pub n: usize,
    pub k: usize,
    /// Each row group's edges, in (block, shift) order.
    pub groups: Vec<Vec<BlockEdge>>,
}

impl QcLayout {
    /// The layout of `h`, or why `h` has none: its dimensions are not multiples of 360, a row
    /// group's rows are not cyclic shifts of each other, or a group has more than `max_edges`
    /// edges.
    pub fn of(h: &SparseMatrix, max_edges: usize) -> Result<Self, String> {
        let (m, n) = (h.num_rows(), h.num_cols());
        if m % LANES != 0 || n % LANES != 0 || m >= n {
            return Err(format!(
                "a {m} x {n} parity-check matrix is not in blocks of {LANES}"
            ));
        }
        let layout = QcLayout {
            n,
            k: n - m,
            groups: Vec::new(),
        };
        let groups = (0..m / LANES)
            .map(|g| layout.group(h, g, max_edges))
            .collect::<Result<_, _>>()?;
        Ok(QcLayout { groups, ..layout })
    }

    /// Row groups (q).
    fn q(&self) -> usize {
        (self.n - self.k) / LANES
    }

    /// Where codeword bit `col` is stored.
    pub fn position(&self, col: usize) -> usize {
        if col < self.k {
            return col;
        }
        let p = col - self.k;
        self.k + (p % self.q()) * LANES + p / self.q()
    }

    /// The parity-check row of lane `l` of row group `g`.
    pub fn row(&self, g: usize, l: usize) -> usize {
        g + l * self.q()
    }

    fn group(
        &self,
        h: &SparseMatrix,
        g: usize,
        max_edges: usize,
    ) -> Result<Vec<BlockEdge>, String> {
        // (block, shift) -> the lanes that have that edge.
        let mut lanes: std::collections::BTreeMap<(usize, usize), Vec<usize>> = Default::default();
        for l in 0..LANES {
            for &c in h.iter_row(self.row(g, l)) {
                let pos = self.position(c);
                let shift = (pos % LANES + LANES - l) % LANES;
                lanes.entry((pos / LANES, shift)).or_default().push(l);
            }
        }
        let not_qc = |why: &str| format!("row group {g} (rows {g} + {} l): {why}", self.q());
        let mut edges: Vec<BlockEdge> = Vec::with_capacity(lanes.len());
        for ((block, shift), ls) in lanes {
            let missing_lane = match ls.len() {
                LANES => None,
                n if n == LANES - 1 => (0..LANES).find(|l| !ls.contains(l)),
                _ => return Err(not_qc("its rows are not cyclic shifts of each other")),
            };
            let repeat = edges.last().is_some_and(|e| e.block == block);
            edges.push(BlockEdge {
                block,
                shift,
                missing_lane,
                repeat,
            });
        }
        if edges.len() > max_edges {
            return Err(not_qc(&format!(
                "{} edges, at most {max_edges}",
                edges.len()
            )));
        }
        Ok(edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ldpc::parity_check;
    use crate::modcod::{FrameSize, ModCod};

    /// Every DVB-S2 code has the layout, with as many edges as ones, and only row 0 misses one.
    #[test]
    fn every_code_is_quasi_cyclic() {
        for frame in [FrameSize::Normal, FrameSize::Short] {
            for id in 1..=11 {
                let Ok(mc) = ModCod::new(id, frame, false) else {
                    continue;
                };
                let h = parity_check(&mc);
                let qc = QcLayout::of(&h, 32).unwrap_or_else(|e| panic!("{}: {e}", mc.label()));
                let ones: usize = (0..h.num_rows()).map(|r| h.row_weight(r)).sum();
                let mut edges = 0;
                for (g, group) in qc.groups.iter().enumerate() {
                    for e in group {
                        edges += LANES - usize::from(e.missing_lane.is_some());
                        assert_eq!(
                            e.missing_lane.is_some(),
                            g == 0 && e.block == qc.n / LANES - 1
                        );
                    }
                }
                assert_eq!(edges, ones, "{} {frame:?}", mc.label());
            }
        }
    }
}
