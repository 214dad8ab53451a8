//! The instruction side: each core's L1I and the misses it sends to the L2.
//!
//! Code is fetched by region — the executed footprint of one path (a
//! driver's receive routine, the UDP send path, memcached's GET), laid out
//! contiguously. A region is always run whole, so a fully associative LRU
//! L1I holds it exactly when the distinct code run since it last ran, plus
//! itself, fits in the L1I: then every line hits. Otherwise its oldest line
//! was evicted first, and re-fetching each line evicts the next one it is
//! about to need (LRU under a loop larger than the cache), so every line
//! misses. [`CodeLru`] keeps the regions in recency order and applies that
//! rule; it costs a few comparisons per region run, not one per line.
//!
//! A missing line is read from the core's L2 (or, missing there, the LLC,
//! another core or DRAM, and filled into the L2), where code competes with
//! data; the front end waits for each line in turn.
//!
//! Simplified: whole-region hit or miss (a real L1I is set-associative and
//! a region may partly survive); no instruction prefetch; code lines are
//! never written, so they take no part in coherence beyond the L2's.

use crate::engine::time::Ps;

use super::cache::LINE_BYTES;
use super::hierarchy::MemSystem;

/// One core's L1I as recency-ordered regions (the most recent last).
#[derive(Debug, Clone)]
pub(super) struct CodeLru {
    size_bytes: u64,
    /// (region id, bytes in whole lines)
    regions: Vec<(u16, u64)>,
}

impl CodeLru {
    pub(super) fn new(size_bytes: u64) -> CodeLru {
        CodeLru { size_bytes, regions: Vec::new() }
    }

    /// Runs region `id` of `bytes` (whole lines): true if it hits.
    pub(super) fn run(&mut self, id: u16, bytes: u64) -> bool {
        // The same region again (a poll loop): nothing else ran since.
        if self.regions.last().is_some_and(|&(r, _)| r == id) {
            return bytes <= self.size_bytes;
        }
        let mut distance = bytes;
        let mut found = None;
        for (i, &(r, b)) in self.regions.iter().enumerate().rev() {
            if r == id {
                found = Some(i);
                break;
            }
            distance += b;
        }
        if let Some(i) = found {
            self.regions.remove(i);
        }
        self.regions.push((id, bytes));
        // Regions beyond the capacity from the most recent end would miss
        // anyway: forget them, so the list stays short.
        let mut held = 0;
        let keep = self.regions.iter().rev().take_while(|&&(_, b)| {
            held += b;
            held <= self.size_bytes
        });
        let drop = self.regions.len() - keep.count().max(1);
        self.regions.drain(..drop);
        found.is_some() && distance <= self.size_bytes
    }
}

impl MemSystem {
    /// Core `core` runs the `bytes` of code at `addr` (region `id`) from
    /// `now`: returns the front end's stall on L1I misses.
    pub fn fetch_code(&mut self, core: usize, id: u16, addr: u64, bytes: u32, now: Ps) -> Ps {
        let size = self.l1i[core].size_bytes;
        if size == 0 || bytes == 0 {
            return 0;
        }
        let first = addr / LINE_BYTES;
        let lines = (addr + bytes as u64 - 1) / LINE_BYTES - first + 1;
        if self.l1i[core].run(id, lines * LINE_BYTES) {
            self.c.l1i[core].hits += lines;
            return 0;
        }
        self.c.l1i[core].misses += lines;
        let mut stall = 0;
        for l in 0..lines {
            stall += self.l2_access(core, (first + l) * LINE_BYTES, false, now + stall).1;
        }
        stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::config::{Inclusion, L1iConfig};
    use crate::mem::hierarchy::tests::{sys, tiny};

    #[test]
    fn a_region_hits_while_what_ran_since_fits() {
        let mut l = CodeLru::new(4096);
        assert!(!l.run(1, 2048), "cold");
        assert!(l.run(1, 2048));
        assert!(!l.run(2, 1024));
        // 1: itself 2048 + region 2's 1024 since = 3072 <= 4096.
        assert!(l.run(1, 2048));
        assert!(!l.run(3, 1536));
        // 2: 1024 + 3's 1536 + 1's 2048 = 4608 > 4096: evicted.
        assert!(!l.run(2, 1024));
        // 1: 2048 + 1024 + 1536 = 4608: evicted too (LRU under a loop).
        assert!(!l.run(1, 2048));
        // A region larger than the cache never hits.
        assert!(!l.run(9, 8192) && !l.run(9, 8192));
        assert!(l.regions.len() <= 2, "{:?}", l.regions);
    }

    #[test]
    fn misses_come_from_the_l2_then_the_llc_and_dram_line_by_line() {
        // tiny(): 1 GHz, L2 10 cycles; L1I 1 KiB.
        let mut cfg = tiny(Inclusion::Inclusive);
        cfg.l1i = L1iConfig { size_bytes: 1024 };
        let mut m = sys(&cfg, 1);
        let base = 0xF000_0000_0000;
        // Cold: 4 lines from DRAM (each its own read), none from the L2.
        let cold = m.fetch_code(0, 1, base, 256, 0);
        assert_eq!(cold, 4 * 50_000, "tiny()'s DRAM idle latency, one line after another");
        assert_eq!((m.counters().l1i[0].misses, m.counters().l2[0].misses), (4, 4));
        // Warm: hits, no stall.
        assert_eq!(m.fetch_code(0, 1, base, 256, cold), 0);
        assert_eq!(m.counters().l1i[0].hits, 4);
        // Another region of 1 KiB pushes it out of the L1I; it is still in the L2.
        m.fetch_code(0, 2, base + 0x10_0000, 1024, cold);
        // tiny()'s L2: 10 cycles at 1 GHz.
        assert_eq!(m.fetch_code(0, 1, base, 256, cold), 4 * 10_000);
        // A region not starting on a line boundary counts every line it touches.
        let before = m.counters().l1i[0].misses;
        m.fetch_code(0, 3, base + 0x20_0000 + 32, 64, cold);
        assert_eq!(m.counters().l1i[0].misses - before, 2);
        // No L1I: nothing is fetched.
        cfg.l1i.size_bytes = 0;
        let mut off = sys(&cfg, 1);
        assert_eq!(off.fetch_code(0, 1, base, 256, 0), 0);
        assert_eq!(off.counters().l1i[0], Default::default());
    }
}
