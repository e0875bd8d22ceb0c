//! Prometheus text exposition (format 0.0.4): one HELP, one TYPE and one sample line per family.

use std::fmt::{Display, Write};

/// The Content-Type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// Appends a family's HELP and TYPE lines; `kind` is "counter", "gauge" or "histogram".
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Appends one sample; `labels` is empty or a label set with its braces (`{edge="gw"}`).
pub fn sample(out: &mut String, name: &str, labels: &str, v: impl Display) {
    let _ = writeln!(out, "{name}{labels} {v}");
}

/// Appends one family with a single sample.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str, labels: &str, v: impl Display) {
    header(out, name, kind, help);
    sample(out, name, labels, v);
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_family_is_three_lines() {
        let mut o = String::new();
        super::family(&mut o, "x_total", "counter", "things", "{edge=\"gw\"}", 3);
        assert_eq!(
            o,
            "# HELP x_total things\n# TYPE x_total counter\nx_total{edge=\"gw\"} 3\n"
        );
    }
}
