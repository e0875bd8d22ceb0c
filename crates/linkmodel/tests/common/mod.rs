//! What the link model's integration tests share: virtual time in nanoseconds and the loading of
//! a YAML configuration that must load, or must be refused.

// Each test file is its own crate and uses only a part of this module.
#![allow(dead_code)]

use linkmodel::LinkConfig;

/// One millisecond of virtual time, ns.
pub const MS: u64 = 1_000_000;

/// The configuration `yaml` describes; panics with the error if it is refused.
pub fn cfg(yaml: &str) -> LinkConfig {
    LinkConfig::from_yaml_str(yaml).unwrap_or_else(|e| panic!("{e}"))
}

/// The error `yaml` is refused with; panics if it loads.
pub fn err(yaml: &str) -> String {
    LinkConfig::from_yaml_str(yaml)
        .expect_err(&format!("{yaml} should be refused"))
        .to_string()
}
