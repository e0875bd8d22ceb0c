//! Live control (the emulator's `POST /control`): the one definition of the request, its bounds
//! and its JSON Schema (`satlab-emulator --print-schema control`). The emulator parses requests
//! against it, the model applies [`ControlCommand`]s after [`ControlCommand::validate`], and the
//! service and the web UI take the bounds from the printed schema (api/satlab/control_schema.json).

use crate::config::{check_range, ConfigError};
use crate::types::Dir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A bounded number of a control request: its field, range and unit (as `check_range` prints it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub field: &'static str,
    pub lo: f64,
    pub hi: f64,
    pub unit: &'static str,
}

impl Bound {
    /// Err naming the field and the range when `v` is outside it (or not finite).
    pub fn check(&self, v: f64) -> Result<(), ConfigError> {
        check_range(self.field, v, self.lo, self.hi, self.unit)
    }
}

/// Total attenuation override; the same range as an attenuation trace's values.
pub const ATTENUATION_DB: Bound = Bound {
    field: "attenuation_db",
    lo: 0.0,
    hi: 100.0,
    unit: " dB",
};
/// Uniform bit-error rate (0 = no bit errors).
pub const BER: Bound = Bound {
    field: "ber",
    lo: 0.0,
    hi: 0.5,
    unit: "",
};
/// Fixed one-way delay; the same range as a direction's `delay_ms`.
pub const DELAY_MS: Bound = Bound {
    field: "delay_ms",
    lo: 0.0,
    hi: 10_000.0,
    unit: " ms",
};
/// Every bounded field, in the order a request lists them.
pub const BOUNDS: [Bound; 3] = [ATTENUATION_DB, BER, DELAY_MS];

/// Which directions a control request applies to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ControlTarget {
    /// Forward (gateway to terminal) only.
    Forward,
    /// Return (terminal to gateway) only.
    Return,
    /// Both directions.
    #[default]
    Both,
}

impl ControlTarget {
    /// The directions, in application order.
    pub fn dirs(self) -> &'static [Dir] {
        match self {
            ControlTarget::Forward => &[Dir::Forward],
            ControlTarget::Return => &[Dir::Return],
            ControlTarget::Both => &[Dir::Forward, Dir::Return],
        }
    }
}

/// The body of `POST /control`: at least one setting; `attenuation_db` and `resume_trace` exclude
/// each other.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ControlRequest")]
pub struct ControlRequest {
    /// The directions it applies to.
    #[serde(default)]
    pub direction: ControlTarget,
    /// Total attenuation of the direction: replaces the uplink and downlink attenuation sources
    /// (downlink = value, uplink = 0) until `resume_trace`.
    #[serde(default)]
    #[schemars(range(min = ATTENUATION_DB.lo, max = ATTENUATION_DB.hi), extend("x-unit" = "dB"))]
    pub attenuation_db: Option<f64>,
    /// Drop the attenuation override and go back to the configured sources.
    #[serde(default)]
    pub resume_trace: Option<bool>,
    /// Replace the bit-error model by a uniform BER (0 = no bit errors).
    #[serde(default)]
    #[schemars(range(min = BER.lo, max = BER.hi))]
    pub ber: Option<f64>,
    /// Replace the propagation delay source by a fixed one-way delay.
    #[serde(default)]
    #[schemars(range(min = DELAY_MS.lo, max = DELAY_MS.hi), extend("x-unit" = "ms"))]
    pub delay_ms: Option<f64>,
    /// A terminal of the forward beam (`forward.beam.terminals[].name`): the settings apply to
    /// that terminal's link only. `direction` both means its forward link (a return link has
    /// terminals only as a return beam, `forward.beam` with `return.dama`: name `return` for
    /// it). Without it, to every terminal.
    #[serde(default)]
    #[schemars(length(min = 1, max = 32), regex(pattern = r"^[a-z0-9_-]+$"))]
    pub terminal: Option<String>,
}

impl ControlRequest {
    /// The command for the direction threads, after the request's own rules.
    pub fn into_command(self) -> Result<(ControlTarget, ControlCommand), ConfigError> {
        let mut direction = self.direction;
        if self.terminal.is_some() && direction == ControlTarget::Both {
            // Forward, as before return beams existed: a terminal's return link is named alone
            // (a one-terminal return would refuse the terminal).
            direction = ControlTarget::Forward;
        }
        let cmd = ControlCommand {
            attenuation_db: self.attenuation_db,
            resume_trace: self.resume_trace.unwrap_or(false),
            ber: self.ber,
            delay_ms: self.delay_ms,
            terminal: self.terminal,
        };
        cmd.validate()?;
        let settings = ControlCommand {
            terminal: None,
            ..cmd.clone()
        };
        if settings == ControlCommand::default() {
            return Err(ConfigError::field(
                "body",
                "no setting given (attenuation_db, resume_trace, ber or delay_ms)",
            ));
        }
        Ok((direction, cmd))
    }
}

/// A live change of one direction. `None` / `false` leaves a setting as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlCommand {
    /// See [`ControlRequest::attenuation_db`].
    #[serde(default)]
    pub attenuation_db: Option<f64>,
    /// See [`ControlRequest::resume_trace`].
    #[serde(default)]
    pub resume_trace: bool,
    /// See [`ControlRequest::ber`].
    #[serde(default)]
    pub ber: Option<f64>,
    /// See [`ControlRequest::delay_ms`].
    #[serde(default)]
    pub delay_ms: Option<f64>,
    /// See [`ControlRequest::terminal`] (applied by the forward beam, `beam.rs`).
    #[serde(default)]
    pub terminal: Option<String>,
}

impl ControlCommand {
    /// Each value within its [`Bound`]; `attenuation_db` not combined with `resume_trace`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let values = [self.attenuation_db, self.ber, self.delay_ms];
        for (bound, v) in BOUNDS.iter().zip(values) {
            if let Some(v) = v {
                bound.check(v)?;
            }
        }
        if self.attenuation_db.is_some() && self.resume_trace {
            return Err(ConfigError::field(
                "resume_trace",
                "cannot be combined with attenuation_db (one replaces the trace, the other resumes it)",
            ));
        }
        Ok(())
    }
}

/// The JSON Schema of [`ControlRequest`] (`satlab-emulator --print-schema control`).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ControlRequest);
    serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_carries_the_bounds_validate_enforces() {
        let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
        for b in BOUNDS {
            let field = &schema["properties"][b.field];
            assert_eq!(field["minimum"].as_f64(), Some(b.lo), "{}", b.field);
            assert_eq!(field["maximum"].as_f64(), Some(b.hi), "{}", b.field);
            let inside = serde_json::json!({ b.field: b.hi });
            let req: ControlRequest = serde_json::from_value(inside).unwrap();
            assert!(req.into_command().is_ok(), "{}", b.field);
            let outside = serde_json::json!({ b.field: b.hi * 1.5 + 1.0 });
            let req: ControlRequest = serde_json::from_value(outside).unwrap();
            let err = req.into_command().unwrap_err().to_string();
            assert!(err.starts_with(b.field), "{err}");
        }
    }

    #[test]
    fn a_request_needs_a_setting_and_no_conflict() {
        let empty = ControlRequest::default().into_command().unwrap_err();
        assert!(empty.to_string().starts_with("body: no setting given"));
        let both = ControlRequest {
            attenuation_db: Some(3.0),
            resume_trace: Some(true),
            ..Default::default()
        };
        assert!(both
            .into_command()
            .unwrap_err()
            .to_string()
            .starts_with("resume_trace:"));
    }

    #[test]
    fn a_terminal_request_goes_where_it_says_both_meaning_forward() {
        let req = |direction| ControlRequest {
            direction,
            attenuation_db: Some(3.0),
            terminal: Some("a".into()),
            ..Default::default()
        };
        let (t, cmd) = req(ControlTarget::Both).into_command().unwrap();
        assert_eq!(t, ControlTarget::Forward);
        assert_eq!(cmd.terminal.as_deref(), Some("a"));
        let (t, _) = req(ControlTarget::Return).into_command().unwrap();
        assert_eq!(t, ControlTarget::Return);
        let alone = ControlRequest {
            terminal: Some("a".into()),
            ..Default::default()
        };
        let e = alone.into_command().unwrap_err();
        assert!(e.to_string().starts_with("body: no setting given"), "{e}");
    }
}
