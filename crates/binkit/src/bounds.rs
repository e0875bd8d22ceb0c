//! The bounds check of the configuration files: one wording of the error for every binary.

use std::fmt::Display;

/// Checks `lo <= v <= hi` for the field `field`; NaN is out of every range. The error reads
/// `{field}: {reason}` with the reason of [`out_of_range`].
pub fn check_range<T>(field: &str, v: T, lo: T, hi: T, unit: &str) -> Result<(), String>
where
    T: PartialOrd + Display + Copy,
{
    match out_of_range(v, lo, hi, unit) {
        Some(reason) => Err(format!("{field}: {reason}")),
        None => Ok(()),
    }
}

/// The range rule without the field name, for callers with their own error type (linkmodel's
/// `config::check_range` puts it in a `ConfigError::Field`): `None` when `lo <= v <= hi`, else
/// `value {v} is outside the allowed range [{lo}, {hi}]{unit}` (`unit` starts with a space, or is
/// empty). NaN is out of every range.
pub fn out_of_range<T>(v: T, lo: T, hi: T, unit: &str) -> Option<String>
where
    T: PartialOrd + Display + Copy,
{
    // partial_cmp is None for NaN (works for integers and floats).
    if v.partial_cmp(&lo).is_none() || v < lo || v > hi {
        return Some(format!(
            "value {v} is outside the allowed range [{lo}, {hi}]{unit}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{check_range, out_of_range};

    #[test]
    fn names_the_field_and_the_bound() {
        assert_eq!(check_range("a.b", 0.5, 0.0, 1.0, ""), Ok(()));
        assert_eq!(
            check_range("a.b", 2.0, 0.0, 1.0, " ms").unwrap_err(),
            "a.b: value 2 is outside the allowed range [0, 1] ms"
        );
        assert!(check_range("a.b", f64::NAN, 0.0, 1.0, "").is_err());
        assert!(check_range("a.b", f64::INFINITY, 0.0, 1e7, "").is_err());
    }

    #[test]
    fn reason_without_the_field() {
        assert_eq!(out_of_range(3u16, 0, 1023, ""), None);
        assert_eq!(
            out_of_range(5000u16, 0, 1023, "").as_deref(),
            Some("value 5000 is outside the allowed range [0, 1023]")
        );
        assert!(out_of_range(f64::NAN, 0.0, 1.0, "").is_some());
    }
}
