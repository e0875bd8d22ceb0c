//! The receiver's two ways to be configured: its flags and its JSON file (`--config`) say the same
//! thing, and `--check` prints the configuration either one gives.

use std::process::{Command, Output};

fn withhold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_satlab-withhold"))
        .args(args)
        .output()
        .expect("satlab-withhold runs")
}

fn checked(args: &[&str]) -> serde_json::Value {
    let out = withhold(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--check prints JSON")
}

/// A configuration file, removed when dropped.
struct ConfigFile(std::path::PathBuf);

impl ConfigFile {
    fn new(name: &str, text: &str) -> ConfigFile {
        let path =
            std::env::temp_dir().join(format!("withhold-{}-{name}.json", std::process::id()));
        std::fs::write(&path, text).unwrap();
        ConfigFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn flags_and_file_give_the_same_configuration() {
    let flags = checked(&[
        "--check",
        "--port",
        "5001",
        "--port",
        "5002",
        "--queue-out",
        "3",
        "--queue-in",
        "4",
        "--immediate-dupacks",
        "0",
        "--history",
        "64",
        "--iat-weight",
        "0.25",
        "--initial-threshold",
        "5",
        "--rtt-ms",
        "75",
    ]);
    let file = ConfigFile::new(
        "same",
        r#"{"ports": [5001, 5002], "queue_out": 3, "queue_in": 4,
            "withhold": {"immediate_dupacks": 0, "history_episodes": 64, "iat_weight": 0.25,
                         "initial_threshold_packets": 5, "rtt_ms": 75}}"#,
    );
    assert_eq!(checked(&["--check", "--config", file.path()]), flags);
    // Defaults are the same too.
    let file = ConfigFile::new("defaults", r#"{"ports": [5001]}"#);
    assert_eq!(
        checked(&["--check", "--config", file.path()]),
        checked(&["--check", "--port", "5001"])
    );
}

#[test]
fn a_file_excludes_every_setting_flag() {
    let file = ConfigFile::new("excl", r#"{"ports": [5001]}"#);
    for flag in [
        "--port",
        "--queue-out",
        "--queue-in",
        "--immediate-dupacks",
        "--history",
        "--iat-weight",
        "--initial-threshold",
        "--rtt-ms",
    ] {
        let out = withhold(&["--check", "--config", file.path(), flag, "1"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} was accepted beside --config"
        );
    }
}

#[test]
fn an_invalid_file_exits_2_naming_the_field_and_the_limit() {
    let file = ConfigFile::new(
        "bad",
        r#"{"ports": [5001], "withhold": {"history_episodes": 0}}"#,
    );
    let out = withhold(&["--check", "--config", file.path()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("withhold.history_episodes: value 0 is outside the allowed range [1, 1024]"),
        "{err}"
    );
}

#[test]
fn the_schema_describes_the_file_and_the_scenario_section() {
    let out = withhold(&["--print-schema"]);
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["required"], serde_json::json!(["ports"]));
    let w = &schema["$defs"]["Withhold"];
    assert_eq!(w["additionalProperties"], false);
    assert_eq!(w["properties"]["rtt_ms"]["maximum"], 60000.0);
    assert_eq!(w["properties"]["immediate_dupacks"]["default"], 2);
}
