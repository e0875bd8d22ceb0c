//! GNU Radio's complex64 format (files, ZeroMQ streams): interleaved little-endian f32 I and Q.

use std::path::Path;

use crate::constellation::C64;

/// Reads a complex64 file.
pub fn read(path: &Path) -> Result<Vec<C64>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 8 != 0 {
        return Err(format!(
            "{}: {} bytes is not a whole number of complex64 samples (8 bytes each)",
            path.display(),
            bytes.len()
        ));
    }
    Ok(from_le_bytes(&bytes))
}

/// Writes `samples` as a complex64 file.
pub fn write(path: &Path, samples: &[C64]) -> Result<(), String> {
    let bytes: Vec<u8> = samples
        .iter()
        .flat_map(|c| {
            let (re, im) = ((c.re as f32).to_le_bytes(), (c.im as f32).to_le_bytes());
            re.into_iter().chain(im)
        })
        .collect();
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Samples from whole 8-byte groups of `bytes` (interleaved little-endian f32 I and Q).
pub fn from_le_bytes(bytes: &[u8]) -> Vec<C64> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let re = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let im = f32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            C64::new(f64::from(re), f64::from(im))
        })
        .collect()
}
