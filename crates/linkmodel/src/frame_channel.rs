//! The PHY-in-the-loop hook: a frame's fate from a real decoder instead of a PER table.
//!
//! A forward link of `kind: dvbs2_waveform` packs each frame into real bytes when it starts
//! (`gse::GseWriter`, the scheduler), and when it ends hands the BBFRAME to a `FrameChannel` with
//! the frame's MODCOD and the Es/N0 at its arrival (`WaveformReceiver`, the direction), then parses
//! what comes back: the PDUs that parse intact are delivered, residual bit errors in complete GSE
//! packets included (as on a real receiver), and a PDU whose CRC-32 fails, whose fragments were
//! lost or that sat in an erased frame is lost. `WaveformFrames` is both halves in one call. The
//! emulator fills the hook with dvbs2phy's `WaveformChannel` (GNU Radio transmitter and channel,
//! this project's LDPC/BCH receiver; emulator/src/waveform_channel.rs).

use crate::config::{
    check_range, ConfigError, DirectionConfig, FrameSize, ModcodSet, SdrConfig,
    WaveformChannelConfig, WaveformPath,
};
use crate::framing::{Gse, Packed, PacketSource, Partial};
use crate::gse::{self, GseError, GseReader, GseWriter, RxPdu};

/// What the channel did with one BBFRAME.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The decoder's output: K_bch / 8 bytes, possibly with residual bit errors.
    Frame(Vec<u8>),
    /// The decoder gave up on the frame (LDPC did not converge, BCH failed, no sync).
    Erased,
}

/// A physical layer that encodes, transmits and decodes one BBFRAME at a time. `Send`: it runs
/// on the direction's thread.
pub trait FrameChannel: Send {
    /// Sends `bbframe` (K_bch / 8 bytes of DVB-S2 MODCOD `modcod_id`, `frame` size) through the
    /// channel at `esn0_db` and returns the decoder's verdict; `Err` names the failed part.
    fn decode(
        &mut self,
        modcod_id: u32,
        frame: FrameSize,
        esn0_db: f64,
        bbframe: &[u8],
    ) -> Result<Decoded, String>;
}

/// Why a waveform frame could not be sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WaveformError {
    #[error("GSE: {0}")]
    Gse(#[from] GseError),
    #[error("frame channel: {0}")]
    Channel(String),
}

/// One frame's outcome: per PDU the frame completed (in `completes` order), the delivered bytes
/// or `None` when the receiver lost it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameOutcome {
    pub packed: Packed,
    pub erased: bool,
    pub delivered: Vec<Option<Vec<u8>>>,
}

/// What the receiver made of one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The decoder erased the frame or its BBHEADER failed: nothing of it was delivered.
    pub erased: bool,
    /// Per packet the frame completed, in order: the delivered bytes or `None`.
    pub delivered: Vec<Option<Vec<u8>>>,
}

/// The receiver's side of a waveform link: the channel and the GSE reassembly state.
pub struct WaveformReceiver {
    reader: GseReader,
    channel: Box<dyn FrameChannel>,
    frame: FrameSize,
}

impl std::fmt::Debug for WaveformReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaveformReceiver")
            .field("frame", &self.frame)
            .finish_non_exhaustive()
    }
}

impl WaveformReceiver {
    pub fn new(frame: FrameSize, channel: Box<dyn FrameChannel>) -> Self {
        WaveformReceiver {
            reader: GseReader::new(),
            channel,
            frame,
        }
    }

    /// Sends data field `df` as a BBFRAME of `kbch_bytes` at MODCOD `modcod_id` through the
    /// channel at `esn0_db`, parses what the decoder gives back and matches the parsed PDUs to
    /// the `completed` packets the frame completed (position i of the parse is packet i; a
    /// truncated parse loses the rest).
    pub fn receive(
        &mut self,
        modcod_id: u32,
        esn0_db: f64,
        kbch_bytes: usize,
        df: &[u8],
        completed: usize,
    ) -> Result<Received, WaveformError> {
        let bb = gse::bbframe(df, kbch_bytes)?;
        let decoded = self
            .channel
            .decode(modcod_id, self.frame, esn0_db, &bb)
            .map_err(WaveformError::Channel)?;
        let pdus = match decoded {
            Decoded::Frame(bytes) => self.reader.parse(&bytes).map(|p| p.pdus).ok(),
            Decoded::Erased => {
                self.reader.frame_lost();
                None
            }
        };
        let erased = pdus.is_none();
        let mut pdus = pdus.unwrap_or_default().into_iter();
        let delivered = (0..completed)
            .map(|_| pdus.next().and_then(RxPdu::delivered))
            .collect();
        Ok(Received { erased, delivered })
    }

    /// A frame that never reached the channel (its GSE packets could not be written): a PDU
    /// being reassembled cannot complete.
    pub fn frame_lost(&mut self) {
        self.reader.frame_lost();
    }
}

/// The transmitter's and the receiver's GSE state around a `FrameChannel`.
pub struct WaveformFrames {
    writer: GseWriter,
    receiver: WaveformReceiver,
}

impl WaveformFrames {
    pub fn new(gse: Gse, frame: FrameSize, channel: Box<dyn FrameChannel>) -> Self {
        WaveformFrames {
            writer: GseWriter::new(gse),
            receiver: WaveformReceiver::new(frame, channel),
        }
    }

    /// Packs one frame of `room` data bytes (as `framing::pack`), encodes it as a BBFRAME of
    /// `room` + BBHEADER bytes at MODCOD `modcod_id`, sends it through the channel at `esn0_db`,
    /// and matches the parsed PDUs to the packets the frame completed.
    pub fn send<Q: PacketSource>(
        &mut self,
        modcod_id: u32,
        esn0_db: f64,
        room: u32,
        partial: &mut Option<Partial>,
        queue: &mut Q,
        completes: &mut Vec<(Vec<u8>, bool)>,
    ) -> Result<FrameOutcome, WaveformError> {
        let first_new = completes.len();
        let (packed, df) = self.writer.frame(room, partial, queue, completes);
        let df = df?;
        let r = self.receiver.receive(
            modcod_id,
            esn0_db,
            room as usize + gse::BBHEADER_BYTES,
            &df,
            completes.len() - first_new,
        )?;
        Ok(FrameOutcome {
            packed,
            erased: r.erased,
            delivered: r.delivered,
        })
    }
}

/// The rules of a `kind: dvbs2_waveform` direction `p` (`forward` / `return`): the forward link
/// of one terminal, DVB-S2 MODCODs, the decoder alone deciding each frame. The decoder's ceiling
/// on the symbol rate is the emulator's check (it knows the decoder).
pub(crate) fn validate_waveform(d: &DirectionConfig, p: &str) -> Result<(), ConfigError> {
    if let Some(w) = &d.waveform {
        waveform_bounds(w, &format!("{p}.waveform"))?;
    }
    if !d.is_waveform() {
        if d.waveform.is_some() {
            return Err(ConfigError::field(
                format!("{p}.waveform"),
                "only with kind dvbs2_waveform",
            ));
        }
        return Ok(());
    }
    let refuse = |field: &str, why: &str| Err(ConfigError::field(format!("{p}.{field}"), why));
    if p != "forward" {
        return refuse(
            "kind",
            "dvbs2_waveform is a forward link kind (the decoder is DVB-S2's)",
        );
    }
    if d.beam.is_some() {
        return refuse(
            "beam",
            "not with kind dvbs2_waveform (one decoder per link, one terminal)",
        );
    }
    if d.modcod_set == Some(ModcodSet::Dvbs2x) {
        return refuse(
            "modcod_set",
            "dvbs2x is not with kind dvbs2_waveform: the decoder has EN 302 307-1's 28 MODCODs",
        );
    }
    if d.failed_frames.is_some() {
        return refuse(
            "failed_frames",
            "not with kind dvbs2_waveform: the decoder decides which frames fail and with which bit errors",
        );
    }
    if d.per_table.is_some() {
        return refuse(
            "per_table",
            "not with kind dvbs2_waveform: the decoder decides which frames fail, no PER table",
        );
    }
    match &d.waveform {
        Some(w) => validate_waveform_channel(d, w, p),
        None => Ok(()),
    }
}

/// The bounds of direction `p`'s waveform channel `w`: dvbs2phy's RF path ranges
/// (crates/dvbs2phy/src/phy_loop.rs `RfPath::check`, which the emulator runs again at load).
fn validate_waveform_channel(
    d: &DirectionConfig,
    w: &WaveformChannelConfig,
    p: &str,
) -> Result<(), ConfigError> {
    let wp = format!("{p}.waveform");
    if w.path == WaveformPath::Symbol {
        // The RF settings would be ignored: refused rather than silently dropped.
        let default = WaveformChannelConfig::default();
        for (field, set) in [
            ("sps", w.sps != default.sps),
            ("freq_offset", w.freq_offset != 0.0),
            ("clock_ppm", w.clock_ppm != 0.0),
            ("fll_bandwidth", w.fll_bandwidth != 0.0),
            ("sdr", w.sdr.is_some()),
        ] {
            if set {
                return Err(ConfigError::field(
                    format!("{wp}.{field}"),
                    "only with path rf",
                ));
            }
        }
        return Ok(());
    }
    if !d.pilots {
        return Err(ConfigError::field(
            format!("{p}.pilots"),
            "must be true with waveform.path rf: the receiver tracks the carrier on the pilot blocks",
        ));
    }
    if ![0.2, 0.25, 0.35].contains(&d.roll_off) {
        return Err(ConfigError::field(
            format!("{p}.roll_off"),
            format!(
                "{} is not one of 0.2, 0.25, 0.35 (EN 302 307-1 section 5.6), which waveform.path rf shapes",
                d.roll_off
            ),
        ));
    }
    match &w.sdr {
        Some(sdr) => validate_sdr(d, w, sdr, p),
        None => Ok(()),
    }
}

/// The ranges of a waveform channel's numbers (dvbs2phy's `RfPath` and `Sdr` limits), checked
/// before the other rules so that a value out of range is named as such.
fn waveform_bounds(w: &WaveformChannelConfig, wp: &str) -> Result<(), ConfigError> {
    check_range(&format!("{wp}.sps"), w.sps, 2, 16, " samples per symbol")?;
    check_range(
        &format!("{wp}.freq_offset"),
        w.freq_offset,
        -0.01,
        0.01,
        " cycles per symbol",
    )?;
    check_range(
        &format!("{wp}.clock_ppm"),
        w.clock_ppm,
        -200.0,
        200.0,
        " ppm",
    )?;
    check_range(
        &format!("{wp}.fll_bandwidth"),
        w.fll_bandwidth,
        0.0,
        0.05,
        "",
    )?;
    if let Some(sdr) = &w.sdr {
        let sp = format!("{wp}.sdr");
        if let Some(f) = sdr.center_freq_hz {
            check_range(&format!("{sp}.center_freq_hz"), f, 1e6, 6e9, " Hz")?;
        }
        check_range(
            &format!("{sp}.tx_gain_db"),
            sdr.tx_gain_db,
            0.0,
            90.0,
            " dB",
        )?;
        check_range(
            &format!("{sp}.rx_gain_db"),
            sdr.rx_gain_db,
            0.0,
            90.0,
            " dB",
        )?;
    }
    Ok(())
}

/// The bounds of direction `p`'s SDR pair: device arguments, centre frequency, gains, sample
/// rate; no simulated offsets (the radios' own apply).
fn validate_sdr(
    d: &DirectionConfig,
    w: &WaveformChannelConfig,
    sdr: &SdrConfig,
    p: &str,
) -> Result<(), ConfigError> {
    let wp = format!("{p}.waveform");
    for (field, set) in [("freq_offset", w.freq_offset), ("clock_ppm", w.clock_ppm)] {
        if set != 0.0 {
            return Err(ConfigError::field(
                format!("{wp}.{field}"),
                "gr-channels' setting, not with sdr (the radios' own offsets apply)",
            ));
        }
    }
    for (field, args) in [("tx_args", &sdr.tx_args), ("rx_args", &sdr.rx_args)] {
        if args.trim().is_empty() {
            return Err(ConfigError::field(
                format!("{wp}.sdr.{field}"),
                "must name a SoapySDR device (driver=...)",
            ));
        }
    }
    if sdr.center_freq_hz.is_none() {
        return Err(ConfigError::field(
            format!("{wp}.sdr.center_freq_hz"),
            "required with sdr (the radios' centre frequency, 1e6 to 6e9 Hz)",
        ));
    }
    let rate = d.symbol_rate_baud.unwrap_or(40e6) * f64::from(w.sps);
    if !(1e3..=1e8).contains(&rate) {
        return Err(ConfigError::field(
            format!("{p}.symbol_rate_baud"),
            format!(
                "times waveform.sps is the SDR's sample rate, {rate} samples/s, outside [1e3, 1e8]"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A channel that passes frames, or erases them, or flips one bit at a given byte: the
    /// three outcomes a decoder has.
    struct Scripted(VecDeque<Option<Option<usize>>>);

    impl FrameChannel for Scripted {
        fn decode(&mut self, _: u32, _: FrameSize, _: f64, bb: &[u8]) -> Result<Decoded, String> {
            match self.0.pop_front().ok_or("no more frames scripted")? {
                None => Ok(Decoded::Erased),
                Some(flip) => {
                    let mut out = bb.to_vec();
                    if let Some(at) = flip {
                        out[at] ^= 0x04;
                    }
                    Ok(Decoded::Frame(out))
                }
            }
        }
    }

    fn run(script: Vec<Option<Option<usize>>>, packets: Vec<Vec<u8>>) -> Vec<Option<Vec<u8>>> {
        let mut w = WaveformFrames::new(
            Gse { label_bytes: 3 },
            FrameSize::Short,
            Box::new(Scripted(script.into())),
        );
        let mut q: VecDeque<Vec<u8>> = packets.into();
        let (mut partial, mut completes, mut out) = (None, Vec::new(), Vec::new());
        while !q.is_empty() || partial.is_some() {
            let o = w
                .send(4, 5.0, 700, &mut partial, &mut q, &mut completes)
                .unwrap();
            out.extend(o.delivered);
        }
        out
    }

    /// The configuration error of a link whose forward direction is `fwd` (YAML lines) and
    /// whose return direction is `ret`.
    fn config_error(fwd: &str, ret: &str) -> String {
        let yaml = format!("forward:\n{fwd}\nreturn:\n{ret}\n");
        crate::LinkConfig::from_yaml_str(&yaml)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_waveform_link_is_one_forward_dvbs2_link_its_decoder_decides() {
        let wf = "  kind: dvbs2_waveform\n  symbol_rate_baud: 100000";
        let rcs2 = "  kind: rcs2";
        let cfg = crate::LinkConfig::from_yaml_str(&format!("forward:\n{wf}\n")).unwrap();
        assert!(cfg.forward.is_waveform());
        assert_eq!(cfg.forward.link_kind(), crate::config::LinkKind::Dvbs2);
        // Without its decoder the direction cannot be built.
        let e = crate::Direction::new(&cfg, crate::Dir::Forward).unwrap_err();
        assert!(e.to_string().starts_with("forward.kind: "), "{e}");
        for (fwd, ret, want) in [
            (rcs2.to_string(), wf.to_string(), "return.kind: "),
            (
                format!("{wf}\n  modcod_set: dvbs2x"),
                rcs2.to_string(),
                "forward.modcod_set: ",
            ),
            (
                format!("{wf}\n  failed_frames: {{}}"),
                rcs2.to_string(),
                "forward.failed_frames: ",
            ),
            (
                format!("{wf}\n  per_table: x.csv"),
                rcs2.to_string(),
                "forward.per_table: ",
            ),
        ] {
            let e = config_error(&fwd, &ret);
            assert!(e.starts_with(want), "{want} expected: {e}");
        }
    }

    #[test]
    fn the_waveform_channel_settings_name_the_field_and_the_limit() {
        let wf = "  kind: dvbs2_waveform\n  symbol_rate_baud: 100000";
        let rcs2 = "  kind: rcs2";
        let rf = |extra: &str| format!("{wf}\n  waveform: {{path: rf{extra}}}");
        let sdr = ", sdr: {tx_args: 'driver=a', rx_args: 'driver=b', center_freq_hz: 1e9}";
        // Accepted: the RF path with its defaults, with offsets, with an SDR pair.
        for fwd in [
            rf(""),
            rf(", sps: 8, freq_offset: 0.002, clock_ppm: 50"),
            rf(sdr),
        ] {
            let cfg = crate::LinkConfig::from_yaml_str(&format!("forward:\n{fwd}\n")).unwrap();
            assert_eq!(cfg.forward.waveform.unwrap().path, WaveformPath::Rf);
        }
        for (fwd, want) in [
            (
                "  symbol_rate_baud: 100000\n  waveform: {path: rf}".to_string(),
                "forward.waveform: only with kind dvbs2_waveform",
            ),
            (
                format!("{wf}\n  waveform: {{sps: 8}}"),
                "forward.waveform.sps: only with path rf",
            ),
            (
                format!("{}\n  pilots: false", rf("")),
                "forward.pilots: must be true",
            ),
            (
                format!("{}\n  roll_off: 0.3", rf("")),
                "forward.roll_off: 0.3 is not one of 0.2, 0.25, 0.35",
            ),
            (
                rf(", sps: 1"),
                "forward.waveform.sps: value 1 is outside the allowed range [2, 16]",
            ),
            (
                rf(", freq_offset: 0.02"),
                "forward.waveform.freq_offset: value 0.02 is outside the allowed range [-0.01, 0.01]",
            ),
            (
                rf(", clock_ppm: 300"),
                "forward.waveform.clock_ppm: value 300 is outside the allowed range [-200, 200]",
            ),
            (
                rf(", fll_bandwidth: 0.1"),
                "forward.waveform.fll_bandwidth: value 0.1 is outside",
            ),
            (
                rf(&format!(", freq_offset: 0.001{sdr}")),
                "forward.waveform.freq_offset: gr-channels' setting, not with sdr",
            ),
            (
                rf(", sdr: {tx_args: '', rx_args: 'driver=b', center_freq_hz: 1e9}"),
                "forward.waveform.sdr.tx_args: must name a SoapySDR device",
            ),
            (
                rf(", sdr: {tx_args: 'a', rx_args: 'b', center_freq_hz: 1e10}"),
                "forward.waveform.sdr.center_freq_hz: value 10000000000 is outside the allowed range",
            ),
            (
                rf(", sdr: {tx_args: 'a', rx_args: 'b', center_freq_hz: 1e9, rx_gain_db: 95}"),
                "forward.waveform.sdr.rx_gain_db: value 95 is outside the allowed range [0, 90]",
            ),
            (
                format!("{}\n  symbol_rate_baud: 5e7", rf(sdr)).replace("  symbol_rate_baud: 100000\n", ""),
                "forward.symbol_rate_baud: times waveform.sps is the SDR's sample rate, 200000000",
            ),
        ] {
            let e = config_error(&fwd, rcs2);
            assert!(e.starts_with(want), "{want} expected: {e}");
        }
    }

    #[test]
    fn clean_frames_deliver_every_packet() {
        let sent: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8; 400]).collect();
        let got = run(vec![Some(None); 4], sent.clone());
        assert_eq!(got, sent.into_iter().map(Some).collect::<Vec<_>>());
    }

    #[test]
    fn an_erased_frame_loses_its_packets_and_the_fragment_it_carried() {
        // 700-byte frames of 407-byte complete packets: [P0 | P1 first 283], [P1 last 117 |
        // P2 | P3 first 159], [P3 last 241 | P4].
        let sent: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8 + 1; 400]).collect();
        let got = run(vec![Some(None), None, Some(None)], sent.clone());
        let want = vec![
            Some(sent[0].clone()),
            None,
            None,
            None,
            Some(sent[4].clone()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_residual_bit_error_reaches_the_complete_packet() {
        let sent: Vec<Vec<u8>> = (0..2).map(|i| vec![i as u8; 100]).collect();
        // Frame 0: BBHEADER 10, P0's GSE header 2 + protocol 2 + label 3, then P0's data.
        let got = run(vec![Some(Some(10 + 7 + 5))], sent.clone());
        let mut want = sent[0].clone();
        want[5] ^= 0x04;
        assert_eq!(got, vec![Some(want), Some(sent[1].clone())]);
    }
}
