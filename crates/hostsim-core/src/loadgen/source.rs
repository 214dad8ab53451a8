//! When the load generator sends and how big each frame is: the offered rate
//! turned into departure times (constant spacing or a Poisson process) and
//! the frame-size distribution.
//!
//! Rates in bps count Ethernet frame bits (FCS included, no preamble or gap),
//! the unit in which the literature reports MSB; percent of line rate counts
//! the 20 B of preamble and gap too. A rate in bps or percent paces bytes, as
//! a hardware rate limiter (token bucket) does: the gap after a frame is that
//! frame's own bits over the rate, so mixed sizes, and a memcached client
//! whose sets outsize its gets, offer exactly the rate whatever the mix of
//! the run. A rate in pps paces frames. The distribution's mean converts
//! between the two for the figures printed (`requested_pps`, line rate).
//! Constant departures are computed as `start + round(bytes sent / mean × period)`
//! (frames sent × period when pacing frames), so the rate is exact over any
//! run length, with no accumulated rounding.

use crate::loadgen::config::{Interarrival, Rate, RateUnit, SizeDist};
use crate::engine::time::{Ps, PS_PER_S};
use crate::engine::SimRng;
use crate::link::WIRE_OVERHEAD_BYTES;

/// Simple IMIX (64, 594, 1518 B in the ratio 7:4:1), as TRex and Spirent use it.
pub const IMIX: [(u32, f64); 3] = [(64, 7.0), (594, 4.0), (1518, 1.0)];

pub struct SizeSampler {
    dist: SizeDist,
    /// Cumulative weights for List/Imix.
    table: Vec<(f64, u32)>,
    rng: SimRng,
}

impl SizeSampler {
    pub fn new(dist: &SizeDist, rng: SimRng) -> Self {
        let pairs: Vec<(u32, f64)> = match dist {
            SizeDist::List { bytes, weights } if weights.is_empty() => bytes.iter().map(|&b| (b, 1.0)).collect(),
            SizeDist::List { bytes, weights } => bytes.iter().copied().zip(weights.iter().copied()).collect(),
            SizeDist::Imix => IMIX.to_vec(),
            _ => vec![],
        };
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        let mut acc = 0.0;
        let table = pairs
            .iter()
            .map(|&(b, w)| {
                acc += w / total;
                (acc, b)
            })
            .collect();
        SizeSampler { dist: dist.clone(), table, rng }
    }

    /// Mean frame size in bytes (FCS included).
    pub fn mean_bytes(&self) -> f64 {
        match &self.dist {
            SizeDist::Fixed { bytes } => *bytes as f64,
            SizeDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            _ => {
                let mut prev = 0.0;
                self.table.iter().map(|&(c, b)| {
                    let p = c - prev;
                    prev = c;
                    p * b as f64
                }).sum()
            }
        }
    }

    pub fn max_bytes(&self) -> u32 {
        match &self.dist {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Uniform { max, .. } => *max,
            _ => self.table.iter().map(|p| p.1).max().unwrap_or(64),
        }
    }

    #[inline]
    pub fn next(&mut self) -> u32 {
        match &self.dist {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Uniform { min, max } => self.rng.range_inclusive(*min, *max),
            _ => {
                let u = self.rng.unit();
                self.table.iter().find(|&&(c, _)| u < c).or(self.table.last()).map(|p| p.1).unwrap_or(64)
            }
        }
    }
}

/// Offered load in frames per second, and whether it had to be capped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OfferedRate {
    pub requested_pps: f64,
    pub pps: f64,
    pub line_rate_pps: f64,
    pub capped: bool,
}

/// Converts a rate to frames per second for frames of `mean_bytes` on a link of `link_bps`.
pub fn offered_rate(rate: &Rate, mean_bytes: f64, link_bps: u64) -> OfferedRate {
    let line_rate_pps = link_bps as f64 / ((mean_bytes + WIRE_OVERHEAD_BYTES as f64) * 8.0);
    let requested_pps = match rate.unit {
        RateUnit::Pps => rate.value,
        RateUnit::Bps => rate.value / (mean_bytes * 8.0),
        RateUnit::Percent => rate.value / 100.0 * line_rate_pps,
    };
    // A relative slack of 1e-9 keeps "100%" and its bps equivalent from being
    // said to be capped; a request within it is still offered at line rate.
    let capped = requested_pps > line_rate_pps * (1.0 + 1e-9);
    OfferedRate { requested_pps, pps: requested_pps.min(line_rate_pps), line_rate_pps, capped }
}

/// What one period of the schedule stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// One frame, whatever its size (a rate in pps).
    Frames,
    /// A frame of the mean size: a frame of `b` bytes takes
    /// `(b + overhead) / (mean + overhead)` periods (a rate in bps, overhead
    /// 0, or in percent of line rate, overhead the 20 B of preamble and gap).
    Bytes { overhead: u32, mean: f64 },
}

impl Pacing {
    /// The pacing a rate asks for; a rate capped at line rate paces wire bytes.
    pub fn of(rate: &Rate, offered: &OfferedRate, mean_bytes: f64) -> Pacing {
        match rate.unit {
            _ if offered.capped => Pacing::Bytes { overhead: WIRE_OVERHEAD_BYTES, mean: mean_bytes },
            RateUnit::Pps => Pacing::Frames,
            RateUnit::Bps => Pacing::Bytes { overhead: 0, mean: mean_bytes },
            RateUnit::Percent => Pacing::Bytes { overhead: WIRE_OVERHEAD_BYTES, mean: mean_bytes },
        }
    }
}

/// Departure times of successive frames.
pub struct Departures {
    start: Ps,
    period_ps: f64,
    poisson: bool,
    pacing: Pacing,
    /// Frames sent (pacing frames) or their bytes with overhead (pacing bytes).
    units: u64,
    acc: f64,
    rng: SimRng,
}

impl Departures {
    pub fn new(pps: f64, kind: Interarrival, start: Ps, rng: SimRng) -> Self {
        Self::paced(pps, kind, Pacing::Frames, start, rng)
    }

    /// Departures at `pps` frames of the mean size a second, paced by `pacing`.
    pub fn paced(pps: f64, kind: Interarrival, pacing: Pacing, start: Ps, rng: SimRng) -> Self {
        let poisson = kind == Interarrival::Poisson;
        Departures { start, period_ps: PS_PER_S as f64 / pps, poisson, pacing, units: 0, acc: 0.0, rng }
    }

    /// The time of the next departure: the frames sent so far (each told by
    /// [`sent`](Self::sent)) have used their share of the schedule.
    #[inline]
    pub fn next(&self) -> Ps {
        let offset = match self.pacing {
            _ if self.poisson => self.acc,
            Pacing::Frames => self.units as f64 * self.period_ps,
            // For one size, units / mean is the frame count exactly.
            Pacing::Bytes { overhead, mean } => self.units as f64 / (mean + overhead as f64) * self.period_ps,
        };
        self.start + offset.round() as Ps
    }

    /// A frame of `bytes` left at the departure [`next`](Self::next) gave;
    /// the following one leaves its share of the schedule later.
    #[inline]
    pub fn sent(&mut self, bytes: u32) {
        let (units, weight) = match self.pacing {
            Pacing::Frames => (1, 1.0),
            Pacing::Bytes { overhead, mean } => {
                let b = (bytes + overhead) as u64;
                (b, b as f64 / (mean + overhead as f64))
            }
        };
        self.units += units;
        if self.poisson {
            self.acc += self.rng.exp(self.period_ps * weight);
        }
    }

    /// The next departure, taken as sent at `bytes` (a schedule of one size).
    #[cfg(test)]
    fn take(&mut self, bytes: u32) -> Ps {
        let t = self.next();
        self.sent(bytes);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_units() {
        let r = |unit, value| offered_rate(&Rate { unit, value }, 64.0, 100_000_000_000);
        assert!((r(RateUnit::Percent, 100.0).pps - 148_809_523.8).abs() < 1.0);
        assert!((r(RateUnit::Bps, 10e9).pps - 19_531_250.0).abs() < 1e-6);
        assert_eq!(r(RateUnit::Pps, 1e6).pps, 1e6);
        let over = r(RateUnit::Pps, 200e6);
        assert!(over.capped && over.pps == over.line_rate_pps);
        assert!(!r(RateUnit::Bps, 148_809_523.809_523_8 * 64.0 * 8.0).capped);
        // Within the slack: not said to be capped, and still offered at no more than line rate.
        let hair = r(RateUnit::Percent, 100.000_000_1);
        assert!(!hair.capped && hair.requested_pps > hair.line_rate_pps && hair.pps == hair.line_rate_pps);
    }

    #[test]
    fn constant_departures_are_exact() {
        let mut d = Departures::new(19_531_250.0, Interarrival::Constant, 1_000, SimRng::new(1, 1));
        let t: Vec<Ps> = (0..4).map(|_| d.take(64)).collect();
        assert_eq!(t, vec![1_000, 52_200, 103_400, 154_600]);
    }

    #[test]
    fn a_bit_rate_paces_each_frame_by_its_own_size() {
        // 10 Gb/s of frame bits, mean 100 B: 64 B takes 51.2 ns, 136 B 108.8 ns.
        let rate = Rate { unit: RateUnit::Bps, value: 10e9 };
        let offered = offered_rate(&rate, 100.0, 100_000_000_000);
        let pacing = Pacing::of(&rate, &offered, 100.0);
        let mut d = Departures::paced(offered.pps, Interarrival::Constant, pacing, 0, SimRng::new(1, 1));
        let t: Vec<Ps> = [64, 136, 64, 64].iter().map(|&b| d.take(b)).collect();
        assert_eq!(t, vec![0, 51_200, 160_000, 211_200]);
        assert_eq!(d.next(), 262_400);
        // Percent of line rate counts preamble and gap: 100 % is back to back.
        let full = Rate { unit: RateUnit::Percent, value: 100.0 };
        let offered = offered_rate(&full, 100.0, 100_000_000_000);
        let mut d = Departures::paced(offered.pps, Interarrival::Constant, Pacing::of(&full, &offered, 100.0), 0, SimRng::new(1, 1));
        let t: Vec<Ps> = [64, 1518, 64].iter().map(|&b| d.take(b)).collect();
        assert_eq!(t, vec![0, 6_720, 129_760]);
        // A rate in pps paces frames, whatever their size.
        let pps = Rate { unit: RateUnit::Pps, value: 1e6 };
        let offered = offered_rate(&pps, 100.0, 100_000_000_000);
        let mut d = Departures::paced(offered.pps, Interarrival::Constant, Pacing::of(&pps, &offered, 100.0), 0, SimRng::new(1, 1));
        let t: Vec<Ps> = [64, 1518, 64].iter().map(|&b| d.take(b)).collect();
        assert_eq!(t, vec![0, 1_000_000, 2_000_000]);
    }

    #[test]
    fn poisson_bytes_keep_the_bit_rate() {
        // Alternating 64 B and 1518 B at 10 Gb/s of frame bits: the mean gap per byte is the rate's.
        let rate = Rate { unit: RateUnit::Bps, value: 10e9 };
        let offered = offered_rate(&rate, 791.0, 100_000_000_000);
        let mut d = Departures::paced(offered.pps, Interarrival::Poisson, Pacing::of(&rate, &offered, 791.0), 0, SimRng::new(7, 2));
        let n = 200_000u64;
        let mut bytes = 0u64;
        for k in 0..n {
            let b = if k % 2 == 0 { 64 } else { 1518 };
            d.take(b);
            bytes += b as u64;
        }
        let bps = bytes as f64 * 8.0 / (d.next() as f64 * 1e-12);
        assert!((bps / 10e9 - 1.0).abs() < 0.01, "{bps}");
    }

    #[test]
    fn poisson_mean_and_cv() {
        // Exponential gaps: mean within 1 % and coefficient of variation within 2 % of 1.
        let n = 100_000;
        let pps = 10e6;
        let mut d = Departures::new(pps, Interarrival::Poisson, 0, SimRng::new(42, 2));
        let times: Vec<Ps> = (0..=n).map(|_| d.take(64)).collect();
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
        let cv = var.sqrt() / mean;
        assert!((mean / 100_000.0 - 1.0).abs() < 0.01, "mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
    }

    #[test]
    fn size_distributions() {
        let mut s = SizeSampler::new(&SizeDist::Imix, SimRng::new(3, 3));
        assert!((s.mean_bytes() - (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0).abs() < 1e-9);
        let n = 120_000;
        let small = (0..n).filter(|_| s.next() == 64).count() as f64 / n as f64;
        assert!((small - 7.0 / 12.0).abs() < 0.01);
        let mut u = SizeSampler::new(&SizeDist::Uniform { min: 64, max: 67 }, SimRng::new(3, 4));
        let xs: Vec<u32> = (0..1000).map(|_| u.next()).collect();
        assert!(xs.iter().all(|&x| (64..=67).contains(&x)) && xs.contains(&64) && xs.contains(&67));
        let l = SizeSampler::new(&SizeDist::List { bytes: vec![64, 128], weights: vec![3.0, 1.0] }, SimRng::new(1, 1));
        assert_eq!(l.mean_bytes(), 80.0);
        assert_eq!(l.max_bytes(), 128);
    }
}
