//! DVB-S2 MODCODs (ETSI EN 302 307-1 V1.4.1): modulation, code rate, frame sizes, BCH parameters
//! (Tables 5a, 5b) and the APSK ring ratios per code rate (Tables 9, 10).

use ldpc_toolbox::codes::dvbs2::Code;

/// Constellation of a MODCOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modulation {
    Qpsk,
    Psk8,
    Apsk16,
    Apsk32,
}

impl Modulation {
    /// Bits per symbol.
    pub fn bits(self) -> usize {
        match self {
            Modulation::Qpsk => 2,
            Modulation::Psk8 => 3,
            Modulation::Apsk16 => 4,
            Modulation::Apsk32 => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Modulation::Qpsk => "QPSK",
            Modulation::Psk8 => "8PSK",
            Modulation::Apsk16 => "16APSK",
            Modulation::Apsk32 => "32APSK",
        }
    }
}

/// FECFRAME length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameSize {
    /// 64800 bits.
    Normal,
    /// 16200 bits.
    Short,
}

impl FrameSize {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "normal" => Ok(FrameSize::Normal),
            "short" => Ok(FrameSize::Short),
            _ => Err(format!("frame {s:?} is not `normal` or `short`")),
        }
    }

    pub fn nldpc(self) -> usize {
        match self {
            FrameSize::Normal => 64800,
            FrameSize::Short => 16200,
        }
    }
}

/// Code rates in Table 13 order.
const RATES: [&str; 11] = [
    "1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "4/5", "5/6", "8/9", "9/10",
];

/// One MODCOD with one frame size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModCod {
    /// EN 302 307-1 Table 13 id (1-28), the emulator's numbering; also the PLS MODCOD field.
    pub id: u32,
    pub modulation: Modulation,
    pub rate: &'static str,
    pub frame: FrameSize,
    pub pilots: bool,
    /// BCH information bits (the BBFRAME length).
    pub kbch: usize,
    /// BCH codeword bits (= LDPC information bits).
    pub nbch: usize,
    /// BCH error-correction capability.
    pub t: usize,
    /// APSK ring radius ratios (gamma1, gamma2), 0 where not used.
    pub gamma: (f64, f64),
}

impl ModCod {
    /// The MODCOD `id` (1-28) with `frame` size; short frames have no rate 9/10.
    pub fn new(id: u32, frame: FrameSize, pilots: bool) -> Result<Self, String> {
        let (modulation, rate_idx) = match id {
            1..=11 => (Modulation::Qpsk, id as usize - 1),
            12..=17 => (Modulation::Psk8, [4, 5, 6, 8, 9, 10][id as usize - 12]),
            18..=23 => (Modulation::Apsk16, [5, 6, 7, 8, 9, 10][id as usize - 18]),
            24..=28 => (Modulation::Apsk32, [6, 7, 8, 9, 10][id as usize - 24]),
            _ => return Err(format!("modcod {id} is outside [1, 28]")),
        };
        let rate = RATES[rate_idx];
        // (K_bch, N_bch, t): Table 5a (normal) and 5b (short).
        let (kbch, nbch, t) = match frame {
            FrameSize::Normal => [
                (16008, 16200, 12),
                (21408, 21600, 12),
                (25728, 25920, 12),
                (32208, 32400, 12),
                (38688, 38880, 12),
                (43040, 43200, 10),
                (48408, 48600, 12),
                (51648, 51840, 12),
                (53840, 54000, 10),
                (57472, 57600, 8),
                (58192, 58320, 8),
            ][rate_idx],
            FrameSize::Short => {
                if rate_idx == 10 {
                    return Err(format!(
                        "modcod {id} ({} 9/10) has no short frame (EN 302 307-1 Table 5b)",
                        modulation.name()
                    ));
                }
                [
                    (3072, 3240, 12),
                    (5232, 5400, 12),
                    (6312, 6480, 12),
                    (7032, 7200, 12),
                    (9552, 9720, 12),
                    (10632, 10800, 12),
                    (11712, 11880, 12),
                    (12432, 12600, 12),
                    (13152, 13320, 12),
                    (14232, 14400, 12),
                ][rate_idx]
            }
        };
        let gamma = match modulation {
            // Table 9: 16APSK gamma = R2/R1.
            Modulation::Apsk16 => (
                match rate {
                    "2/3" => 3.15,
                    "3/4" => 2.85,
                    "4/5" => 2.75,
                    "5/6" => 2.70,
                    "8/9" => 2.60,
                    _ => 2.57,
                },
                0.0,
            ),
            // Table 10: 32APSK gamma1 = R2/R1, gamma2 = R3/R1.
            Modulation::Apsk32 => match rate {
                "3/4" => (2.84, 5.27),
                "4/5" => (2.72, 4.87),
                "5/6" => (2.64, 4.64),
                "8/9" => (2.54, 4.33),
                _ => (2.53, 4.30),
            },
            _ => (0.0, 0.0),
        };
        Ok(ModCod {
            id,
            modulation,
            rate,
            frame,
            pilots,
            kbch,
            nbch,
            t,
            gamma,
        })
    }

    /// ldpc-toolbox's code for this rate and frame size.
    pub fn ldpc_code(&self) -> Code {
        let normal = [
            Code::R1_4,
            Code::R1_3,
            Code::R2_5,
            Code::R1_2,
            Code::R3_5,
            Code::R2_3,
            Code::R3_4,
            Code::R4_5,
            Code::R5_6,
            Code::R8_9,
            Code::R9_10,
        ];
        let short = [
            Code::R1_4short,
            Code::R1_3short,
            Code::R2_5short,
            Code::R1_2short,
            Code::R3_5short,
            Code::R2_3short,
            Code::R3_4short,
            Code::R4_5short,
            Code::R5_6short,
            Code::R8_9short,
        ];
        let i = RATES
            .iter()
            .position(|r| *r == self.rate)
            .expect("rate in table");
        match self.frame {
            FrameSize::Normal => normal[i],
            FrameSize::Short => short[i],
        }
    }

    /// Data symbols of the XFECFRAME.
    pub fn data_symbols(&self) -> usize {
        self.frame.nldpc() / self.modulation.bits()
    }

    /// Pilot blocks (36 symbols each, one after every 16 slots of 90 symbols, none after the last).
    pub fn pilot_blocks(&self) -> usize {
        if self.pilots {
            (self.data_symbols() / 90 - 1) / 16
        } else {
            0
        }
    }

    /// Symbols of one PLFRAME (PLHEADER + data + pilots).
    pub fn frame_symbols(&self) -> usize {
        90 + self.data_symbols() + 36 * self.pilot_blocks()
    }

    /// `8PSK 3/5`-style label.
    pub fn label(&self) -> String {
        format!("{} {}", self.modulation.name(), self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        let m = ModCod::new(4, FrameSize::Short, true).unwrap();
        assert_eq!(m.frame_symbols(), 8370);
        let m = ModCod::new(28, FrameSize::Normal, false).unwrap();
        assert_eq!(m.frame_symbols(), 90 + 12960);
        assert_eq!(m.kbch, 58192);
        let e = ModCod::new(28, FrameSize::Short, false).unwrap_err();
        assert!(e.contains("no short frame"), "{e}");
        assert!(ModCod::new(29, FrameSize::Short, false).is_err());
        assert_eq!(
            ModCod::new(17, FrameSize::Normal, false).unwrap().rate,
            "9/10"
        );
    }
}
