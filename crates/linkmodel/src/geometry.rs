//! GEO geometry: slant ranges from a ground station on the WGS84 ellipsoid to a geostationary
//! satellite (equatorial orbit, radius 42164 km from the Earth's centre, at its slot longitude),
//! and the propagation delay they give.
//!
//! The one-way delay of a direction is (uplink slant range + downlink slant range) / c: forward
//! gateway -> satellite -> terminal, return terminal -> satellite -> gateway; both are the same sum.
//! A station that does not see the satellite (elevation below 0 deg) is a configuration error.

use crate::config::{check_range, ConfigError, GeometryConfig, GroundStation};

/// Geostationary orbit radius, m.
pub const GEO_RADIUS_M: f64 = 42_164_000.0;
/// Speed of light in vacuum, m/s.
pub const C_M_PER_S: f64 = 299_792_458.0;
const WGS84_A: f64 = 6_378_137.0;
const WGS84_F: f64 = 1.0 / 298.257_223_563;

fn ecef(st: &GroundStation) -> [f64; 3] {
    let e2 = WGS84_F * (2.0 - WGS84_F);
    let (lat, lon) = (st.lat_deg.to_radians(), st.lon_deg.to_radians());
    let n = WGS84_A / (1.0 - e2 * lat.sin().powi(2)).sqrt();
    [
        (n + st.alt_m) * lat.cos() * lon.cos(),
        (n + st.alt_m) * lat.cos() * lon.sin(),
        (n * (1.0 - e2) + st.alt_m) * lat.sin(),
    ]
}

fn satellite(lon_deg: f64) -> [f64; 3] {
    let l = lon_deg.to_radians();
    [GEO_RADIUS_M * l.cos(), GEO_RADIUS_M * l.sin(), 0.0]
}

/// (slant range in m, elevation in degrees) from a station to the satellite at `sat_lon_deg`.
pub fn slant_range(st: &GroundStation, sat_lon_deg: f64) -> (f64, f64) {
    let g = ecef(st);
    let s = satellite(sat_lon_deg);
    let d = [s[0] - g[0], s[1] - g[1], s[2] - g[2]];
    let range = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let (lat, lon) = (st.lat_deg.to_radians(), st.lon_deg.to_radians());
    let up = [lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()];
    let el = ((up[0] * d[0] + up[1] * d[1] + up[2] * d[2]) / range)
        .asin()
        .to_degrees();
    (range, el)
}

/// One-way propagation delay of either direction, ms.
pub fn one_way_delay_ms(g: &GeometryConfig) -> f64 {
    let (r_gw, _) = slant_range(&g.gateway, g.satellite_longitude_deg);
    let (r_st, _) = slant_range(&g.terminal, g.satellite_longitude_deg);
    (r_gw + r_st) / C_M_PER_S * 1e3
}

/// Bounds and visibility of the geometry section.
pub fn validate(g: &GeometryConfig) -> Result<(), ConfigError> {
    check_range(
        "geometry.satellite_longitude_deg",
        g.satellite_longitude_deg,
        -180.0,
        180.0,
        " deg",
    )?;
    for (name, st) in [("gateway", &g.gateway), ("terminal", &g.terminal)] {
        check_range(
            &format!("geometry.{name}.lat_deg"),
            st.lat_deg,
            -90.0,
            90.0,
            " deg",
        )?;
        check_range(
            &format!("geometry.{name}.lon_deg"),
            st.lon_deg,
            -180.0,
            180.0,
            " deg",
        )?;
        check_range(
            &format!("geometry.{name}.alt_m"),
            st.alt_m,
            -500.0,
            10_000.0,
            " m",
        )?;
        let (_, el) = slant_range(st, g.satellite_longitude_deg);
        if el < 0.0 {
            return Err(ConfigError::field(
                format!("geometry.{name}"),
                format!("the satellite is below the horizon (elevation {el:.1} deg, must be >= 0)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(lat: f64, lon: f64) -> GroundStation {
        GroundStation {
            lat_deg: lat,
            lon_deg: lon,
            alt_m: 0.0,
        }
    }

    #[test]
    fn sub_satellite_point() {
        let (r, el) = slant_range(&st(0.0, 13.0), 13.0);
        assert!((r - (GEO_RADIUS_M - WGS84_A)).abs() < 1.0, "{r}");
        assert!((el - 90.0).abs() < 1e-6);
        let g = GeometryConfig {
            satellite_longitude_deg: 13.0,
            gateway: st(0.0, 13.0),
            terminal: st(0.0, 13.0),
        };
        let d = one_way_delay_ms(&g);
        assert!((d - 238.74).abs() < 0.01, "{d}");
    }

    #[test]
    fn toulouse_paris_at_13e() {
        // Toulouse gateway, Paris terminal, Eutelsat 13E: elevation ~ 35 deg, ~ 38 000 km each.
        let g = GeometryConfig {
            satellite_longitude_deg: 13.0,
            gateway: st(43.6, 1.44),
            terminal: st(48.86, 2.35),
        };
        let (r, el) = slant_range(&g.gateway, 13.0);
        assert!(r > 37_500e3 && r < 38_500e3, "{r}");
        assert!(el > 35.0 && el < 42.0, "{el}");
        let d = one_way_delay_ms(&g);
        assert!(d > 250.0 && d < 258.0, "{d}");
        validate(&g).unwrap();
    }

    #[test]
    fn below_horizon() {
        let g = GeometryConfig {
            satellite_longitude_deg: 13.0,
            gateway: st(43.6, 1.44),
            terminal: st(40.0, -150.0),
        };
        let e = validate(&g).unwrap_err().to_string();
        assert!(
            e.starts_with("geometry.terminal: the satellite is below the horizon"),
            "{e}"
        );
    }
}
