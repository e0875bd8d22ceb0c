//! `--print-schema`: a configuration's JSON Schema (draft 2020-12), pretty-printed. Doc comments
//! are the descriptions, `minimum`/`maximum` the fixed bounds the binary's `validate()` checks.

use schemars::JsonSchema;

/// The JSON Schema of `T`, pretty-printed.
pub fn pretty<T: JsonSchema>() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(T)).expect("a JSON Schema serializes")
}
