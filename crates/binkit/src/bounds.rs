//! The bounds check of the configuration files: one wording of the error for every binary.

use std::fmt::Display;

/// Checks `lo <= v <= hi` for the field `field`; NaN is out of every range. The error reads
/// `{field}: value {v} is outside the allowed range [{lo}, {hi}]{unit}` (`unit` starts with a
/// space, or is empty). linkmodel's `config::check_range` writes the same words into its own
/// error type.
pub fn check_range<T>(field: &str, v: T, lo: T, hi: T, unit: &str) -> Result<(), String>
where
    T: PartialOrd + Display + Copy,
{
    // partial_cmp is None for NaN (works for integers and floats).
    if v.partial_cmp(&lo).is_none() || v < lo || v > hi {
        return Err(format!(
            "{field}: value {v} is outside the allowed range [{lo}, {hi}]{unit}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_range;

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
}
