//! A hardware stride prefetcher at each core's L2 (`mem.l2_prefetch`), as
//! gem5's `StridePrefetcher` on the studies' L2 (`O3_ARM_v7a_L2`: degree 8,
//! prefetch on access) and the streamers of Intel and Arm server cores.
//!
//! # The mechanism
//!
//! Every data access that reaches a core's L2 (an L1D miss, load or store,
//! hit or miss at the L2) trains a table of `streams` entries, one per
//! 4 KiB page (the table is least recently used; a page not in it takes the
//! oldest entry). An entry holds the last line accessed in its page, a
//! stride (in lines) and a confidence: an access whose distance from the
//! last equals the stride raises the confidence (to at most 3), another
//! lowers it, and at zero the new distance becomes the stride. With
//! confidence 1 or more (the same stride twice in a row) the access
//! prefetches the lines `line + k × stride` for `k = 1..=degree` that lie in
//! the same page, past the furthest line the stream has asked for already
//! (a new stride starts from the access), and are not in the core's L1D or
//! L2, at most `per_access` of them (0: `degree`), while the L2 has a miss
//! register free: prefetches in flight are bounded by the L2's `mshrs`
//! (gem5 queues the prefetches it cannot issue; here they are dropped and
//! the next access asks again).
//!
//! A prefetch reads its line as an L2 miss would (the LLC, another core or
//! DRAM, with the same coherence and traffic), at the time of the access
//! that triggered it, and fills it into the L2 at once; it is marked on its
//! way until its latency has passed. A demand access that finds the line on
//! its way waits for it (a late prefetch: `max(L2 latency, arrival − now)`);
//! one that finds it arrived costs an L2 hit.
//!
//! Simplified: no program counters (gem5 indexes its table by PC, Intel's
//! streamer by page: streams here are per page), no prefetch into the L1D,
//! no throttling by accuracy, and a demand L2 miss does not take an MSHR
//! from the prefetcher.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;

use super::cache::{flag, LINE_BYTES};
use super::hierarchy::MemSystem;

/// Lines per page, the region a stream lives in.
const PAGE_LINES: u64 = 4096 / LINE_BYTES;

/// The L2's hardware prefetcher.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PrefetchConfig {
    /// How many strides ahead of an access the prefetcher fetches (gem5's
    /// `degree`); 0: no prefetcher. At most 64.
    #[serde(default)]
    pub degree: u32,
    /// New prefetches one access may issue at most; 0: `degree`.
    #[serde(default)]
    pub per_access: u32,
    /// Pages tracked at once, 1 to 64.
    #[serde(default = "default_streams")]
    pub streams: u32,
}

fn default_streams() -> u32 {
    16
}

impl Default for PrefetchConfig {
    fn default() -> Self {
        PrefetchConfig { degree: 0, per_access: 0, streams: default_streams() }
    }
}

impl PrefetchConfig {
    pub(super) fn validate(&self) -> crate::error::Result<()> {
        use crate::error::ConfigError;
        if self.degree > 64 {
            return Err(ConfigError::new("mem.l2_prefetch.degree", self.degree.to_string(), "0 (off) to 64").into());
        }
        if self.per_access > 64 {
            return Err(ConfigError::new("mem.l2_prefetch.per_access", self.per_access.to_string(), "0 (the degree) to 64").into());
        }
        if !(1..=64).contains(&self.streams) {
            return Err(ConfigError::new("mem.l2_prefetch.streams", self.streams.to_string(), "1 to 64").into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Stream {
    page: u64,
    last: u64,
    stride: i64,
    conf: u8,
    used: u64,
    /// The furthest line asked for along the stride (the next prefetch
    /// starts past it).
    ahead: i64,
}

/// One core's prefetcher: its stream table and the prefetches in flight.
#[derive(Debug, Clone)]
pub(super) struct Prefetcher {
    degree: u32,
    per_access: u32,
    mshrs: usize,
    table: Vec<Stream>,
    /// The entry of the last access.
    last: usize,
    clock: u64,
    /// Lines on their way and when each arrives.
    inflight: Vec<(u64, Ps)>,
}

impl Prefetcher {
    pub(super) fn new(cfg: &PrefetchConfig, mshrs: u32) -> Prefetcher {
        Prefetcher {
            degree: cfg.degree,
            per_access: if cfg.per_access == 0 { cfg.degree } else { cfg.per_access.min(cfg.degree) },
            mshrs: mshrs.max(1) as usize,
            table: vec![Stream { page: u64::MAX, ..Default::default() }; cfg.streams as usize],
            last: 0,
            clock: 0,
            inflight: Vec::with_capacity(mshrs as usize),
        }
    }

    /// Trains on an access to `line`; if the stream is confident, its
    /// entry, its stride and the first `k` (in strides from `line`) not
    /// asked for yet.
    fn train(&mut self, line: u64) -> Option<(usize, i64, i64)> {
        let page = line / PAGE_LINES;
        self.clock += 1;
        // Most accesses stay in the page of the one before: look there first.
        let found = if self.table[self.last].page == page { Some(self.last) } else { self.table.iter().position(|s| s.page == page) };
        let i = match found {
            Some(i) => i,
            None => {
                let i = (0..self.table.len()).min_by_key(|&i| self.table[i].used).unwrap_or(0);
                self.table[i] = Stream { page, last: line, stride: 0, conf: 0, used: self.clock, ahead: line as i64 };
                self.last = i;
                return None;
            }
        };
        self.last = i;
        let e = &mut self.table[i];
        e.used = self.clock;
        let d = line as i64 - e.last as i64;
        if d == 0 {
            return None;
        }
        e.last = line;
        if d == e.stride {
            e.conf = (e.conf + 1).min(3);
        } else if e.conf > 0 {
            e.conf -= 1;
        } else {
            e.stride = d;
            e.ahead = line as i64;
        }
        if e.conf == 0 || d != e.stride {
            return None;
        }
        // Lines up to `ahead` were asked for already (if it lies ahead of this access).
        let k = (e.ahead - line as i64) / d;
        Some((i, d, k.max(0) + 1))
    }

    /// When `line`, on its way, arrives (None: not on its way at `now`).
    #[inline]
    pub(super) fn arrival(&mut self, line: u64, now: Ps) -> Option<Ps> {
        if self.inflight.is_empty() {
            return None;
        }
        self.inflight.retain(|&(_, t)| t > now);
        self.inflight.iter().find(|&&(l, _)| l == line).map(|&(_, t)| t)
    }
}

impl MemSystem {
    /// A data access of `core` to `addr` reached its L2 at `now`: train the
    /// core's prefetcher and issue what it asks for.
    #[inline(never)]
    pub(super) fn prefetch_on_access(&mut self, core: usize, addr: u64, now: Ps) {
        let line = addr / LINE_BYTES;
        let Some((entry, stride, first)) = self.pf[core].train(line) else { return };
        let (degree, per_access) = (self.pf[core].degree as i64, self.pf[core].per_access);
        let page = line / PAGE_LINES;
        let mut issued = 0;
        for k in first..=degree {
            if issued >= per_access {
                break;
            }
            let target = line as i64 + k * stride;
            if target < 0 || target as u64 / PAGE_LINES != page {
                break;
            }
            let a = target as u64 * LINE_BYTES;
            if !self.l2[core].contains(a) && !self.l1[core].contains(a) {
                // (An entry of this line left from a copy that was since taken away goes too.)
                let p = &mut self.pf[core];
                p.inflight.retain(|&(l, t)| t > now && l != target as u64);
                if p.inflight.len() >= p.mshrs {
                    self.c.l2_prefetch_dropped += 1;
                    break;
                }
                // A prefetch never waits in the controller's read queue: the core does not wait for it.
                let defer = std::mem::replace(&mut self.defer, false);
                let (_, latency, excl, dirty) = self.fetch_shared(core, a, false, now);
                self.defer = defer;
                self.fill_l2(core, a, excl | dirty | flag::PREFETCHED, now);
                self.pf[core].inflight.push((target as u64, now + latency));
                self.c.l2_prefetches += 1;
                issued += 1;
            }
            self.pf[core].table[entry].ahead = target;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::hierarchy::tests::{sys, tiny};
    use crate::mem::Inclusion;

    fn with_prefetch(degree: u32) -> crate::mem::MemConfig {
        let mut c = tiny(Inclusion::Inclusive);
        c.l2_prefetch = PrefetchConfig { degree, ..Default::default() };
        c
    }

    #[test]
    fn a_stride_seen_twice_prefetches_degree_lines_ahead_in_the_page() {
        let mut m = sys(&with_prefetch(4), 1);
        // Lines 0, 2, 4: the stride 2 seen twice; 6, 8, 10, 12 come.
        for (i, l) in [0u64, 2, 4].iter().enumerate() {
            m.core_access(0, 0x10_0000 + l * 64, false, i as Ps * 1000);
        }
        assert_eq!(m.counters().l2_prefetches, 4);
        for l in [6u64, 8, 10, 12] {
            assert!(m.core_holds(0, 0x10_0000 + l * 64), "line {l}");
        }
        assert!(!m.core_holds(0, 0x10_0000 + 14 * 64));
        // Nothing crosses the page: a stream at its end asks for nothing.
        let mut m = sys(&with_prefetch(4), 1);
        for (i, l) in [61u64, 62, 63].iter().enumerate() {
            m.core_access(0, 0x10_0000 + l * 64, false, i as Ps * 1000);
        }
        assert_eq!(m.counters().l2_prefetches, 0);
    }

    #[test]
    fn a_demand_for_a_line_on_its_way_waits_for_it_and_one_that_arrived_hits_the_l2() {
        let cfg = with_prefetch(1);
        let mut m = sys(&cfg, 1);
        for (i, l) in [0u64, 1, 2].iter().enumerate() {
            m.core_access(0, l * 64, false, i as Ps * 1000);
        }
        // Line 3 was asked for from DRAM (50 ns idle) at 2 ns: at 10 ns it is 42 ns away.
        let a = m.core_access(0, 3 * 64, false, 10_000);
        assert_eq!(a.level, Level::L2);
        let dram = m.counters().l2_prefetches;
        assert_eq!(dram, 2, "line 4 asked for at the demand of line 3");
        assert!(a.latency_ps > 30_000 && a.latency_ps < 50_000, "{a:?}");
        // Line 4 asked for at 10 ns arrives by 200 ns: an L2 hit.
        let b = m.core_access(0, 4 * 64, false, 200_000);
        assert_eq!((b.level, b.latency_ps), (Level::L2, 10_000));
        assert_eq!(m.counters().l2_prefetch_hits, 2);
    }

    #[test]
    fn prefetches_in_flight_are_bounded_by_the_l2_miss_registers() {
        let mut cfg = with_prefetch(32);
        cfg.l2.mshrs = 3;
        let mut m = sys(&cfg, 1);
        for (i, l) in [0u64, 1, 2].iter().enumerate() {
            m.core_access(0, l * 64, false, i as Ps);
        }
        assert_eq!(m.counters().l2_prefetches, 3);
        assert_eq!(m.counters().l2_prefetch_dropped, 1);
    }

    #[test]
    fn off_by_default_and_out_of_range_refused_by_name() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        for l in 0..8u64 {
            m.core_access(0, l * 64, false, l as Ps);
        }
        assert_eq!(m.counters().l2_prefetches, 0);
        let e = PrefetchConfig { degree: 65, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.starts_with("mem.l2_prefetch.degree: invalid value '65'"), "{e}");
        let e = PrefetchConfig { streams: 0, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.starts_with("mem.l2_prefetch.streams"), "{e}");
    }

    use crate::mem::Level;
}
