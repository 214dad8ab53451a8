//! Simulated time: an integer number of picoseconds (`u64`, about 213 days).
//!
//! Conversions from rates to durations round to the nearest picosecond; the
//! serialization time of a frame is computed once per length and cached by
//! the link, so per-packet work is a table lookup.

/// A point in simulated time or a duration, in picoseconds.
pub type Ps = u64;

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Time to move `bits` at `rate_bps`, rounded to the nearest picosecond.
pub fn bits_to_ps(bits: u64, rate_bps: u64) -> Ps {
    debug_assert!(rate_bps > 0);
    let num = bits as u128 * PS_PER_S as u128;
    ((num + rate_bps as u128 / 2) / rate_bps as u128) as Ps
}

/// Picoseconds as seconds (for reporting only).
/// A duration for a message: in the largest unit it reaches (s, ms, us,
/// ns or ps), as a unit string the config accepts (`2 ms`, `1.024 ms`).
pub fn show_ps(t: Ps) -> String {
    let (div, unit) = [(PS_PER_S, "s"), (PS_PER_MS, "ms"), (PS_PER_US, "us"), (PS_PER_NS, "ns")]
        .into_iter()
        .find(|&(d, _)| t >= d)
        .unwrap_or((1, "ps"));
    let v = format!("{:.6}", t as f64 / div as f64);
    format!("{} {unit}", v.trim_end_matches('0').trim_end_matches('.'))
}

pub fn ps_to_s(t: Ps) -> f64 {
    t as f64 / PS_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_to_ps_exact_and_rounded() {
        // 84 B on the wire at 100 Gb/s is 6.72 ns.
        assert_eq!(bits_to_ps(84 * 8, 100_000_000_000), 6_720);
        // 1538 B at 10 Gb/s is 1230.4 ns.
        assert_eq!(bits_to_ps(1538 * 8, 10_000_000_000), 1_230_400);
        // 1 bit at 3 b/s is 333.33… ms: rounds to nearest.
        assert_eq!(bits_to_ps(1, 3), 333_333_333_333);
        assert_eq!(bits_to_ps(2, 3), 666_666_666_667);
    }

    #[test]
    fn a_duration_is_shown_in_the_largest_unit_it_reaches() {
        assert_eq!(show_ps(2 * PS_PER_MS), "2 ms");
        assert_eq!(show_ps(1_024_000_000), "1.024 ms");
        assert_eq!(show_ps(400 * PS_PER_US), "400 us");
        assert_eq!(show_ps(6_720), "6.72 ns");
        assert_eq!(show_ps(999), "999 ps");
        assert_eq!(show_ps(0), "0 ps");
        assert_eq!(show_ps(3 * PS_PER_S + 1), "3 s");
    }
}
