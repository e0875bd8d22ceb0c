//! A DVB-S2 receiver (ETSI EN 302 307-1 V1.4.1) for the waveform-level calibration of the
//! emulator's PER(Es/N0) tables: the transmitter and channel are GNU Radio's gr-dtv and
//! gr-channels (emulator/phy/dvbs2_tx.py); this crate demodulates and decodes their IQ and
//! counts frame errors against the transmitted BBFRAMEs (`satlab-phy`). `PhyLoop` runs the
//! same transmitter and channel as a long-running flowgraph (gr/dvbs2_loop.py) fed over ZeroMQ:
//! BBFRAMEs in, decoded BBFRAMEs or erasures out (`satlab-phy --loop-bench`).

pub mod awgn;
pub mod bch;
pub mod constellation;
pub mod cpu;
pub mod iq;
pub mod ldpc;
pub mod loop_bench;
pub mod minsum;
pub mod minsum_qc;
pub mod modcod;
pub mod phy_loop;
pub mod plframe;
pub mod qc;
pub mod receiver;
pub mod waveform;

pub use modcod::{FrameSize, ModCod, Modulation};
pub use phy_loop::{Erasure, LoopConfig, LoopError, LoopFrame, PhyLoop, RfPath, Sdr, Underrun};
pub use receiver::{Config, Decoder, Delivered, FrameResult, Receiver};
pub use waveform::{WaveformChannel, WaveformConfig, WaveformFrame};
