//! Configuration text the crate's integration tests and benchmark examples share (an example
//! cannot import a test's helpers). Not part of the model's API.

/// `n` beam terminals as YAML flow mappings joined by ", ": terminal k is `t<k>` behind
/// 10.(k / 256).(k % 256).0/24, followed by `extra(k)` (more entries of its mapping, each
/// starting with ", "; "" for none).
pub fn beam_terminals_yaml(n: usize, extra: impl Fn(usize) -> &'static str) -> String {
    let terminals: Vec<String> = (0..n)
        .map(|k| {
            format!(
                "{{name: t{k}, prefixes: [10.{}.{}.0/24]{}}}",
                k / 256,
                k % 256,
                extra(k)
            )
        })
        .collect();
    terminals.join(", ")
}
