//! `satlab-emulator --print-schema`: the configuration's JSON Schema on stdout, no configuration
//! file needed, with the bounds `--check` enforces.

use std::process::Command;

#[test]
fn print_schema_is_json_with_the_bounds_of_validate() {
    let out = Command::new(env!("CARGO_BIN_EXE_satlab-emulator"))
        .arg("--print-schema")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let defs = &schema["$defs"];
    // validate(): forward.acm.margin_db in [0, 20] dB, telemetry.period_ms in [10, 60000] ms
    let margin = &defs["AcmConfig"]["properties"]["margin_db"];
    assert_eq!(margin["minimum"], 0.0);
    assert_eq!(margin["maximum"], 20.0);
    assert_eq!(margin["x-unit"], "dB");
    let period = &defs["TelemetryConfig"]["properties"]["period_ms"];
    assert_eq!(
        (period["minimum"].as_u64(), period["maximum"].as_u64()),
        (Some(10), Some(60_000))
    );
    // a field used under one kind only, and a description from the doc comment
    let file = &defs["AttenuationConfig"]["properties"]["file"];
    assert_eq!(file["x-when"]["type"][0], "file");
    assert!(schema["properties"]["forward"]["description"]
        .as_str()
        .unwrap()
        .contains("Gateway -> terminal"));
}
