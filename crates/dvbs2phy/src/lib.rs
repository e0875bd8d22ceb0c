//! A DVB-S2 receiver (ETSI EN 302 307-1 V1.4.1) for the waveform-level calibration of the
//! emulator's PER(Es/N0) tables: the transmitter and channel are GNU Radio's gr-dtv and
//! gr-channels (emulator/phy/dvbs2_tx.py); this crate demodulates and decodes their IQ and
//! counts frame errors against the transmitted BBFRAMEs (`satlab-phy`).

pub mod bch;
pub mod constellation;
pub mod iq;
pub mod ldpc;
pub mod minsum;
pub mod minsum_qc;
pub mod modcod;
pub mod plframe;
pub mod qc;
pub mod receiver;

pub use modcod::{FrameSize, ModCod, Modulation};
pub use receiver::{Config, Decoder, FrameResult, Receiver};
