//! The forward link of `kind: dvbs2_waveform`: linkmodel's frame-channel hook
//! (`linkmodel::frame_channel`) filled with dvbs2phy's `WaveformChannel`. Every BBFRAME the
//! forward direction ends is encoded and modulated by GNU Radio's DVB-S2 transmitter (gr-dtv),
//! given AWGN at the Es/N0 of its arrival on the fade, and decoded by the project's receiver
//! (pilot-aided phase, max-log demapper, layered min-sum LDPC, BCH); the erasures and residual bit
//! errors are the decoder's.
//!
//! The decode is synchronous, on the forward direction's thread: a frame's end stalls that
//! thread for one trip through the flowgraph and the receiver (`WaveformChannel::decode_one`:
//! 16 ms for a normal QPSK 1/2 frame at 10 dB on this machine, up to the full 50 LDPC
//! iterations, about 15-30 ms, below the threshold). The stall is absorbed by the propagation
//! delay as long as frames come slower than the decoder finishes them, which the ceiling at load
//! ensures (`check`); meanwhile the thread reads no input, so the gateway's packets wait in the
//! port's ring (not lost) and the packets due at that moment leave late by up to one stall
//! (emulator/CONFIG.md, "kind: dvbs2_waveform"). A MODCOD's first frame starts its flowgraph,
//! 0.25-1.3 s: the CCM or VCM MODCODs are started at load, ACM's on their first frame.

use dvbs2phy::waveform::{ceiling_baud_on, check_ceiling_on};
use dvbs2phy::{ModCod, RfPath, Sdr, WaveformChannel, WaveformConfig};
use linkmodel::config::{
    AcmMode, ConfigError, DirectionConfig, FrameSize, LinkConfig, WaveformPath,
};
use linkmodel::frame_channel::{Decoded, FrameChannel};
use linkmodel::modcod::{dvbs2_shape, ModcodTable};
use linkmodel::{Dir, Direction, Model};

/// The Es/N0 range the waveform channel accepts, dB: a frame's Es/N0 outside it is clamped.
/// Below -10 dB no DVB-S2 MODCOD decodes (the lowest threshold is QPSK 1/4's -2.35 dB), above
/// 40 dB every frame decodes: the clamp changes no frame's fate.
const ESN0_RANGE_DB: (f64, f64) = (-10.0, 40.0);

/// dvbs2phy's frame size of a linkmodel frame size.
fn phy_frame(f: FrameSize) -> dvbs2phy::FrameSize {
    match f {
        FrameSize::Normal => dvbs2phy::FrameSize::Normal,
        FrameSize::Short => dvbs2phy::FrameSize::Short,
    }
}

/// The RF path of forward direction `d` (`waveform: {path: rf, ...}`), None on the symbol-level
/// channel: the direction's roll-off, and its symbol rate as the SDR pair's.
fn rf_path(d: &DirectionConfig) -> Option<RfPath> {
    let w = d.waveform.as_ref().filter(|w| w.path == WaveformPath::Rf)?;
    Some(RfPath {
        sps: w.sps,
        rolloff: d.roll_off,
        freq_offset: w.freq_offset,
        fll_bandwidth: w.fll_bandwidth,
        clock_ppm: w.clock_ppm,
        sdr: w.sdr.as_ref().map(|s| Sdr {
            tx_args: s.tx_args.clone(),
            rx_args: s.rx_args.clone(),
            center_freq_hz: s.center_freq_hz.unwrap_or_default(), // required by linkmodel
            tx_gain_db: s.tx_gain_db,
            rx_gain_db: s.rx_gain_db,
            symbol_rate_baud: d.symbol_rate_baud.unwrap_or(40e6),
        }),
    })
}

/// The decoder behind a waveform link.
pub struct WaveformDecoder {
    channel: WaveformChannel,
}

impl FrameChannel for WaveformDecoder {
    fn decode(
        &mut self,
        modcod_id: u32,
        _frame: FrameSize,
        esn0_db: f64,
        bbframe: &[u8],
    ) -> Result<Decoded, String> {
        let esn0 = esn0_db.clamp(ESN0_RANGE_DB.0, ESN0_RANGE_DB.1);
        let f = self
            .channel
            .decode_one(modcod_id, esn0, bbframe)
            .map_err(|e| e.to_string())?;
        Ok(match f.frame.outcome {
            Ok(bytes) => Decoded::Frame(bytes),
            Err(_) => Decoded::Erased,
        })
    }
}

/// The MODCOD ids forward direction `d` may send: the CCM MODCOD, the VCM cycle, or with ACM
/// every row of its table that has a frame of this size.
fn modcods_in_use(d: &DirectionConfig) -> Result<Vec<u32>, ConfigError> {
    Ok(match d.acm.mode {
        AcmMode::Ccm => d.acm.modcod.into_iter().collect(),
        AcmMode::Vcm => d.acm.vcm_modcods.clone(),
        AcmMode::Acm => {
            let table = match &d.modcod_table {
                Some(path) => ModcodTable::load(path)?,
                None => ModcodTable::dvbs2_default(),
            };
            table
                .rows
                .iter()
                .filter(|m| dvbs2_shape(m, d.frame, d.pilots).is_some())
                .map(|m| m.id)
                .collect()
        }
    })
}

/// At load: a forward link of `kind: dvbs2_waveform` must use EN 302 307-1's MODCODs (ids
/// 1-28, as the decoder numbers them) and a symbol rate whose frames of every MODCOD it may send
/// come no faster than the decoder sustains (`dvbs2phy::waveform::check_ceiling`; the lowest
/// such rate over its MODCODs is the limit named). Other links pass.
pub fn check(link: &LinkConfig) -> Result<(), ConfigError> {
    let d = &link.forward;
    if !d.is_waveform() {
        return Ok(());
    }
    let table = d
        .modcod_table
        .as_ref()
        .map(|p| ModcodTable::load(p))
        .transpose()?;
    let rf = rf_path(d);
    if let Some(r) = &rf {
        // linkmodel checked the same bounds by field; this is the PHY loop's own check.
        r.check()
            .map_err(|e| ConfigError::field("forward.waveform", e.to_string()))?;
    }
    let on_rf = rf.is_some();
    let mut worst: Option<ModCod> = None;
    for id in modcods_in_use(d)? {
        let mc = ModCod::new(id, phy_frame(d.frame), d.pilots).map_err(|e| {
            ConfigError::field(
                "forward.modcod_table",
                format!("kind dvbs2_waveform decodes EN 302 307-1's MODCODs: {e}"),
            )
        })?;
        // A table row must be the code the decoder runs under its id.
        if let Some(row) = table
            .as_ref()
            .and_then(|t| t.rows.iter().find(|r| r.id == id))
        {
            if row.name() != mc.label() {
                return Err(ConfigError::field(
                    "forward.modcod_table",
                    format!(
                        "MODCOD id {id} is {} in EN 302 307-1, the table says {}",
                        mc.label(),
                        row.name()
                    ),
                ));
            }
        }
        if worst.is_none_or(|w| ceiling_baud_on(on_rf, &mc) < ceiling_baud_on(on_rf, &w)) {
            worst = Some(mc);
        }
    }
    let rate = d.symbol_rate_baud.unwrap_or(40e6);
    match worst {
        Some(mc) => check_ceiling_on(on_rf, "forward.symbol_rate_baud", rate, &mc)
            .map_err(|e| ConfigError::field(e.field, e.reason)),
        None => Ok(()),
    }
}

/// The forward model of a `kind: dvbs2_waveform` link: its direction with the decoder attached,
/// the CCM / VCM MODCODs' flowgraphs started (a MODCOD's first frame would wait for its start).
pub fn forward_model(link: &LinkConfig) -> Result<Model, String> {
    let d = &link.forward;
    let mut cfg = WaveformConfig::new(phy_frame(d.frame), d.pilots);
    // The run's seed gives the channel's noise: the same seed, the same frame fates.
    cfg.seed = (link.seed ^ (link.seed >> 32)) as u32;
    cfg.rf = rf_path(d);
    let mut channel = WaveformChannel::new(cfg);
    if d.acm.mode != AcmMode::Acm {
        for id in modcods_in_use(d).map_err(|e| e.to_string())? {
            channel
                .start_loop(id)
                .map_err(|e| format!("forward kind dvbs2_waveform: MODCOD {id}: {e}"))?;
        }
    }
    let decoder = Box::new(WaveformDecoder { channel });
    Direction::with_frame_channel(link, Dir::Forward, decoder)
        .map(Model::One)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dvbs2phy::waveform::ceiling_baud;
    use linkmodel::{LossCause, Outcome};

    /// A forward link of kind dvbs2_waveform: CCM QPSK 1/2 (id 4), short frames with pilots, at
    /// `symbol_rate` baud, a constant Es/N0 of `esn0_db` (the downlink's clear-sky C/N; the
    /// uplink's 60 dB adds 0.0001 dB of noise), 10 ms one way.
    fn link(esn0_db: f64, symbol_rate: f64) -> LinkConfig {
        let yaml = format!(
            "forward:\n  kind: dvbs2_waveform\n  symbol_rate_baud: {symbol_rate}\n  frame: short\n  \
             delay_ms: 10\n  acm: {{mode: ccm, modcod: 4}}\n  \
             uplink: {{clear_sky_db: 60}}\n  downlink: {{clear_sky_db: {esn0_db}}}\n"
        );
        LinkConfig::from_yaml_str(&yaml).unwrap()
    }

    /// The same link over the RF path (RRC at 4 samples per symbol, roll-off 0.35, a carrier
    /// offset of 2e-3 cycles per symbol, timing recovery).
    fn rf_link(esn0_db: f64, symbol_rate: f64) -> LinkConfig {
        let yaml = format!(
            "forward:\n  kind: dvbs2_waveform\n  symbol_rate_baud: {symbol_rate}\n  frame: short\n  \
             delay_ms: 10\n  acm: {{mode: ccm, modcod: 4}}\n  \
             uplink: {{clear_sky_db: 60}}\n  downlink: {{clear_sky_db: {esn0_db}}}\n  \
             waveform: {{path: rf, freq_offset: 0.002}}\n"
        );
        LinkConfig::from_yaml_str(&yaml).unwrap()
    }

    /// Distinct Ethernet frames of 1000 bytes (a MAC header, then a counter pattern).
    fn packets(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut p = vec![0u8; 1000];
                p[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
                p[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental EtherType
                for (k, b) in p[14..].iter_mut().enumerate() {
                    *b = (k as u8).wrapping_mul(7).wrapping_add(i as u8);
                }
                p
            })
            .collect()
    }

    /// Sends `sent` through the forward model of `link` at once and polls until every packet
    /// has its outcome.
    fn run(link: &LinkConfig, sent: &[Vec<u8>]) -> (Vec<Outcome>, linkmodel::Counters) {
        let mut m = forward_model(link).unwrap();
        for p in sent {
            m.enqueue(0, p.clone());
        }
        let mut out = Vec::new();
        let mut t = 0;
        while out.len() < sent.len() {
            t = m.next_wakeup_ns().expect("packets still in the link");
            m.poll(t, &mut out);
        }
        (out, m.status(t).counters)
    }

    #[test]
    fn clean_channel_delivers_every_packet_intact() {
        let sent = packets(30);
        let (out, c) = run(&link(15.0, 100_000.0), &sent);
        let got: Vec<&Vec<u8>> = out
            .iter()
            .map(|o| match o {
                Outcome::Deliver {
                    frame,
                    corrupted: None,
                } => frame,
                other => panic!("a packet not delivered intact at 15 dB: {other:?}"),
            })
            .collect();
        assert_eq!(got, sent.iter().collect::<Vec<_>>());
        assert_eq!((c.frame_erasures, c.delivered_packets), (0, 30));
    }

    #[test]
    fn below_the_threshold_every_frame_is_erased() {
        // QPSK 1/2 needs 1.0 dB (Table 13); at -3 dB the decoder never converges.
        let sent = packets(10);
        let (out, c) = run(&link(-3.0, 100_000.0), &sent);
        for o in &out {
            assert!(
                matches!(
                    o,
                    Outcome::Lost {
                        cause: LossCause::FrameErasure,
                        ..
                    }
                ),
                "{o:?}"
            );
        }
        assert!(c.frame_erasures >= 2, "{c:?}");
        assert_eq!(c.erased_packets, 10);
    }

    #[test]
    fn the_rf_path_delivers_above_the_threshold_and_erases_below() {
        let sent = packets(12);
        let (out, c) = run(&rf_link(15.0, 100_000.0), &sent);
        assert!(
            out.iter().all(|o| matches!(
                o,
                Outcome::Deliver {
                    corrupted: None,
                    ..
                }
            )),
            "{out:?}"
        );
        assert_eq!((c.frame_erasures, c.delivered_packets), (0, 12));
        let (_, c) = run(&rf_link(-3.0, 100_000.0), &packets(6));
        assert_eq!(c.erased_packets, 6, "{c:?}");
    }

    #[test]
    fn the_rf_paths_ceiling_is_lower_and_refused_by_field() {
        let mc = ModCod::new(4, dvbs2phy::FrameSize::Short, true).unwrap();
        let limit = ceiling_baud_on(true, &mc);
        assert!(limit < ceiling_baud(&mc));
        assert!(check(&rf_link(10.0, limit.floor())).is_ok());
        let e = check(&rf_link(10.0, (limit * 1.1).round()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("forward.symbol_rate_baud: ") && e.contains("on the RF path"),
            "{e}"
        );
    }

    #[test]
    fn a_symbol_rate_above_the_decoders_ceiling_is_refused_at_load() {
        let mc = ModCod::new(4, dvbs2phy::FrameSize::Short, true).unwrap();
        let limit = ceiling_baud(&mc);
        assert!(check(&link(10.0, limit.floor())).is_ok());
        let e = check(&link(10.0, (limit * 1.1).round()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("forward.symbol_rate_baud: ") && e.contains(&format!("{limit:.0} baud")),
            "{e}"
        );
        // ACM may use every MODCOD of the table: the lowest ceiling among them is the limit.
        let mut acm = link(10.0, limit.floor());
        acm.forward.acm.mode = AcmMode::Acm;
        let lowest = (1..=28)
            .filter_map(|id| ModCod::new(id, dvbs2phy::FrameSize::Short, true).ok())
            .map(|m| ceiling_baud(&m))
            .fold(f64::INFINITY, f64::min);
        assert!(lowest < limit);
        let e = check(&acm).unwrap_err().to_string();
        assert!(e.contains(&format!("at most {lowest:.0} baud")), "{e}");
    }
}
