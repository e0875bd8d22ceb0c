//! Reading the small text files the configuration names (traces, tables, delay files, error
//! patterns): `#` starts a comment (whole line or end of line), blank lines are skipped, fields
//! are separated by whitespace or commas. Errors name the file and the 1-based line number.

use std::path::Path;

use crate::config::ConfigError;

/// Reads a whole file; an empty or missing file is an error naming it.
pub fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, format!("cannot read: {e}")))
}

/// (line number, fields) of every data line.
pub fn data_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let line = match raw.find('#') {
            Some(pos) => &raw[..pos],
            None => raw,
        };
        let fields: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|f| !f.is_empty())
            .collect();
        if fields.is_empty() {
            None
        } else {
            Some((i + 1, fields))
        }
    })
}

/// Parses field `idx` as T, or an error naming file, line and field.
pub fn field<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    fields: &[&str],
    idx: usize,
    what: &str,
) -> Result<T, ConfigError> {
    let s = fields.get(idx).ok_or_else(|| {
        ConfigError::file(path, line, format!("missing field {} ({what})", idx + 1))
    })?;
    s.parse::<T>()
        .map_err(|_| ConfigError::file(path, line, format!("{what} {s:?} is not a valid number")))
}

/// Parses `s` as an unsigned integer T, or an error naming file, line and `what` ("is not an
/// unsigned integer", then `bound`, e.g. " below 2^32" for a u32).
pub fn unsigned<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    s: &str,
    what: &str,
    bound: &str,
) -> Result<T, ConfigError> {
    s.parse::<T>().map_err(|_| {
        ConfigError::file(
            path,
            line,
            format!("{what} {s:?} is not an unsigned integer{bound}"),
        )
    })
}

/// Parses a finite f64 field.
pub fn finite(
    path: &Path,
    line: usize,
    fields: &[&str],
    idx: usize,
    what: &str,
) -> Result<f64, ConfigError> {
    let v: f64 = field(path, line, fields, idx, what)?;
    if !v.is_finite() {
        return Err(ConfigError::file(
            path,
            line,
            format!("{what} {v} is not finite"),
        ));
    }
    Ok(v)
}

/// Parses a finite f64 field within `range`; the error gives the limits followed by `unit`.
pub fn finite_within(
    path: &Path,
    line: usize,
    fields: &[&str],
    idx: usize,
    what: &str,
    range: std::ops::RangeInclusive<f64>,
    unit: &str,
) -> Result<f64, ConfigError> {
    let v = finite(path, line, fields, idx, what)?;
    if !range.contains(&v) {
        return Err(ConfigError::file(
            path,
            line,
            format!(
                "{what} {v} is outside [{}, {}]{unit}",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(v)
}

/// Error if a line has more than `n` fields.
pub fn at_most(path: &Path, line: usize, fields: &[&str], n: usize) -> Result<(), ConfigError> {
    if fields.len() > n {
        return Err(ConfigError::file(
            path,
            line,
            format!(
                "expected {n} fields, found {} ({:?})",
                fields.len(),
                fields[n]
            ),
        ));
    }
    Ok(())
}
