//! The configuration's JSON Schema: the copy the API serves (api/satlab/link_schema.json) is what
//! the code says, and it carries the bounds `validate` enforces.

use linkmodel::config::{json_schema, EmulatorConfig};

fn committed() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../api/satlab/link_schema.json"
    );
    let text = std::fs::read_to_string(path).expect("api/satlab/link_schema.json");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn committed_schema_is_up_to_date() {
    assert!(
        committed() == json_schema(),
        "api/satlab/link_schema.json is stale: regenerate it with `make link-schema`"
    );
}

#[test]
fn schema_bounds_are_the_validated_ones() {
    let s = json_schema();
    let margin = &s["definitions"]["AcmConfig"]["properties"]["margin_db"];
    assert_eq!(
        (margin["minimum"].as_f64(), margin["maximum"].as_f64()),
        (Some(0.0), Some(20.0))
    );
    let ok = "forward: {acm: {margin_db: 20.0}}\n";
    assert!(EmulatorConfig::from_yaml_str(ok).is_ok());
    let err = EmulatorConfig::from_yaml_str("forward: {acm: {margin_db: 20.5}}\n").unwrap_err();
    assert!(
        err.to_string().starts_with("forward.acm.margin_db:"),
        "{err}"
    );
    // fields the testbed resolves (base_dir) are not part of the file's schema
    assert!(s["properties"].get("base_dir").is_none());
    assert!(s["properties"]["return"].is_object());
}
