//! The port through which a core's accesses reach the memory system.
//!
//! The core asks, per access, how long it takes and whether it hit in the
//! L1D; the memory system (caches, coherence, DRAM) implements [`MemPort`]
//! and updates its own state as a side effect. Cores take `impl MemPort`
//! (static dispatch: no virtual call per access). Two small implementations
//! live here for tests and for components built before the real memory
//! system: [`IdealMemory`] (every access an L1 hit) and [`FixedMissMemory`]
//! (a fixed latency above an address boundary).

use super::work::CodeRegion;
use crate::engine::time::Ps;
use crate::engine::Ticket;

/// What one access costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AccessCost {
    /// Time from issue until the data is available (ps); ignored on an L1 hit,
    /// whose cost is folded into the core's base CPI.
    pub latency_ps: Ps,
    /// The access hit in the issuing core's L1D.
    pub l1_hit: bool,
    /// The part of `latency_ps` spent queued behind other requests at a
    /// shared resource (DRAM), which depends on when the access is issued:
    /// a store that starts to drain later than it was booked does not wait
    /// that queue again.
    pub queued_ps: Ps,
}

impl AccessCost {
    pub const L1_HIT: AccessCost = AccessCost { latency_ps: 0, l1_hit: true, queued_ps: 0 };

    pub fn miss(latency_ps: Ps) -> Self {
        AccessCost { latency_ps, l1_hit: false, queued_ps: 0 }
    }
}

/// The memory system as seen by a core.
pub trait MemPort {
    /// Core `core` reads (or, if `write`, writes) the line holding `addr`, issued at `now`.
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost;

    /// Core `core` runs the code of `region` from `now`: returns how long its
    /// front end stalls on instruction misses (0: no instruction side).
    #[inline]
    fn fetch_code(&mut self, _core: usize, _region: CodeRegion, _now: Ps) -> Ps {
        0
    }

    /// A load whose latency the core may take later: with a ticket, its
    /// read waits in the memory's read queue and the latency returned is
    /// not its own; [`take_read`](Self::take_read) gives its completion.
    #[inline]
    fn load_later(&mut self, core: usize, addr: u64, now: Ps) -> (AccessCost, Option<Ticket>) {
        (self.access(core, addr, false, now), None)
    }

    /// A queued read's completion time once the memory has served it (the
    /// ticket is then spent); with `force`, the memory serves it now,
    /// ahead of the event loop.
    #[inline]
    fn take_read(&mut self, _ticket: Ticket, _force: bool) -> Option<Ps> {
        None
    }

    /// When the memory next serves a queued read.
    #[inline]
    fn next_pick(&self) -> Option<Ps> {
        None
    }
}

impl<M: MemPort + ?Sized> MemPort for &mut M {
    #[inline]
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        (**self).access(core, addr, write, now)
    }

    #[inline]
    fn fetch_code(&mut self, core: usize, region: CodeRegion, now: Ps) -> Ps {
        (**self).fetch_code(core, region, now)
    }

    #[inline]
    fn load_later(&mut self, core: usize, addr: u64, now: Ps) -> (AccessCost, Option<Ticket>) {
        (**self).load_later(core, addr, now)
    }

    #[inline]
    fn take_read(&mut self, ticket: Ticket, force: bool) -> Option<Ps> {
        (**self).take_read(ticket, force)
    }

    #[inline]
    fn next_pick(&self) -> Option<Ps> {
        (**self).next_pick()
    }
}

/// Every access hits in the L1D.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdealMemory;

impl MemPort for IdealMemory {
    #[inline]
    fn access(&mut self, _core: usize, _addr: u64, _write: bool, _now: Ps) -> AccessCost {
        AccessCost::L1_HIT
    }
}

/// Accesses at or above `miss_from_addr` miss with a fixed latency; the rest
/// hit in the L1D. Records the issue time of every miss, for tests.
#[derive(Debug, Clone, Default)]
pub struct FixedMissMemory {
    pub miss_from_addr: u64,
    pub miss_latency_ps: Ps,
    /// (issue time, address, write) of each miss, in order.
    pub misses: Vec<(Ps, u64, bool)>,
}

impl FixedMissMemory {
    pub fn new(miss_from_addr: u64, miss_latency_ps: Ps) -> Self {
        FixedMissMemory { miss_from_addr, miss_latency_ps, misses: Vec::new() }
    }
}

impl MemPort for FixedMissMemory {
    fn access(&mut self, _core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        if addr >= self.miss_from_addr {
            self.misses.push((now, addr, write));
            AccessCost::miss(self.miss_latency_ps)
        } else {
            AccessCost::L1_HIT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fakes_answer_as_documented() {
        assert_eq!(IdealMemory.access(0, u64::MAX, true, 5), AccessCost::L1_HIT);
        let mut m = FixedMissMemory::new(0x1000, 100_000);
        assert_eq!(m.access(0, 0xfff, false, 1), AccessCost::L1_HIT);
        assert_eq!(m.access(0, 0x1000, true, 2), AccessCost::miss(100_000));
        // through a &mut, as generic callers hold it
        let r = &mut m;
        assert_eq!(MemPort::access(&mut &mut *r, 0, 0x2000, false, 3).latency_ps, 100_000);
        assert_eq!(m.misses, vec![(2, 0x1000, true), (3, 0x2000, false)]);
    }
}
