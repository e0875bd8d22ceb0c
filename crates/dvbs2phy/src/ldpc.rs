//! Parity-check matrices of the DVB-S2 LDPC codes (EN 302 307-1 5.3.2).
//!
//! ldpc-toolbox 0.12.0 builds them all except one: for the short-frame rate 3/4 code (LDPC rate
//! 11/15) its `Code::m()` returns n * 14/15 parity bits instead of n * 4/15, so the matrix has
//! the wrong size and gr-dtv's codewords do not satisfy it. That code is built here with the
//! same construction (5.3.2.1: information column j has the checks (x + (j mod 360) q) mod m for
//! the addresses x of row floor(j / 360) of Table C.7, then the accumulator's staircase) and the
//! Table C.7 addresses (as listed in ldpc-toolbox, whose table is right).

use ldpc_toolbox::codes::dvbs2::Code;
use ldpc_toolbox::sparse::SparseMatrix;

use crate::modcod::ModCod;

/// EN 302 307-1 Table C.7 (short FECFRAME, rate 3/4).
const TABLE_C7: [&[usize]; 33] = [
    &[
        3, 3198, 478, 4207, 1481, 1009, 2616, 1924, 3437, 554, 683, 1801,
    ],
    &[4, 2681, 2135],
    &[5, 3107, 4027],
    &[6, 2637, 3373],
    &[7, 3830, 3449],
    &[8, 4129, 2060],
    &[9, 4184, 2742],
    &[10, 3946, 1070],
    &[11, 2239, 984],
    &[0, 1458, 3031],
    &[1, 3003, 1328],
    &[2, 1137, 1716],
    &[3, 132, 3725],
    &[4, 1817, 638],
    &[5, 1774, 3447],
    &[6, 3632, 1257],
    &[7, 542, 3694],
    &[8, 1015, 1945],
    &[9, 1948, 412],
    &[10, 995, 2238],
    &[11, 4141, 1907],
    &[0, 2480, 3079],
    &[1, 3021, 1088],
    &[2, 713, 1379],
    &[3, 997, 3903],
    &[4, 2323, 3361],
    &[5, 1110, 986],
    &[6, 2532, 142],
    &[7, 1690, 2405],
    &[8, 1298, 1881],
    &[9, 615, 174],
    &[10, 1648, 3112],
    &[11, 1415, 2808],
];

/// The parity-check matrix of `mc`'s LDPC code (rows: checks, columns: codeword bits).
pub fn parity_check(mc: &ModCod) -> SparseMatrix {
    let code = mc.ldpc_code();
    if code != Code::R3_4short {
        return code.h();
    }
    let (n, k, q) = (16200usize, 11880usize, 12usize);
    let m = n - k;
    let mut h = SparseMatrix::new(m, n);
    for j in 0..k {
        let (t, w) = (j / 360, j % 360);
        h.insert_col(j, TABLE_C7[t].iter().map(|x| (x + w * q) % m));
    }
    h.insert(0, k);
    for r in 1..m {
        h.insert(r, r + k);
        h.insert(r, r + k - 1);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modcod::FrameSize;

    /// Every code's matrix has N_bch information columns and full size.
    #[test]
    fn dimensions_match_bch() {
        for frame in [FrameSize::Normal, FrameSize::Short] {
            for id in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] {
                let Ok(mc) = ModCod::new(id, frame, false) else {
                    continue;
                };
                let h = parity_check(&mc);
                assert_eq!(h.num_cols(), frame.nldpc(), "{}", mc.label());
                assert_eq!(
                    h.num_cols() - h.num_rows(),
                    mc.nbch,
                    "{} {frame:?}",
                    mc.label()
                );
            }
        }
    }
}
