//! The memory system seen by cores: per-core L1D and L2, a shared LLC and
//! DRAM, write-back and write-allocate, with snooping coherence between the
//! cores' private caches. Device (DMA) accesses and DCA are in `dca.rs`.
//!
//! A core access is one 64 B line (split ranges with [`lines`]). It looks in
//! L1, then L2, then — after snooping the other cores — the LLC, then DRAM,
//! and fills the line into every private level on the way back. Victims go
//! down one level: dirty L1 victims into L2; L2 victims into the LLC (dirty
//! only when the LLC is inclusive, dirty or clean when it is a non-inclusive
//! victim cache); dirty LLC victims to DRAM. An inclusive LLC fills on every
//! miss and back-invalidates the private copies of the lines it evicts.
//! With `on_core_read = move` a non-inclusive LLC is mostly exclusive: an
//! L2 miss that hits it takes the line away when no other core holds it,
//! and one that misses it is served by a core holding the line clean;
//! `migrate` does the same except for a line in a DCA way, which moves to
//! the inclusive ways (`dca.held_ways`) and stays. `clean_victims = drop`
//! keeps clean L2 victims out of a non-inclusive LLC.
//!
//! Coherence is MOESI-like with one `EXCL` bit per private line: a store to a
//! line not known to be exclusive snoops the other cores, invalidates their
//! copies and, if there were any, costs a core-to-core transfer; a load that
//! finds another core's dirty copy takes it from there (a transfer) and both
//! keep a shared copy, the owner still dirty. Latencies are load-to-use
//! totals of the level that served the access; the core timing model decides
//! how misses overlap (SPEC §2.7).
//!
//! Each core's L2 may have a stride prefetcher (`prefetch.rs`).
//!
//! Simplified: no MSHR or bandwidth limits between levels, no L1D prefetcher,
//! no L1I, a snoop visits every other core the snoop filter (`filter.rs`)
//! cannot rule out rather than asking a directory, partial
//! writes are whole-line writes. Read first: Sorin, Hill & Wood, *A Primer on
//! Memory Consistency and Cache Coherence*, ch. 7–8; SPEC §2.6.

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};

use super::cache::{flag, Cache, Victim, LINE_BYTES};
use super::code::CodeLru;
use super::config::{CleanVictims, CoreRead, Inclusion, MemConfig};
use super::dram::{Agent, Dram, Read};
use super::read_queue::Ticket;
use super::filter::SnoopFilter;
use super::prefetch::Prefetcher;

/// The level that served an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    /// The LLC, or another core's private cache through it (a coherence transfer).
    Llc,
    Dram,
}

/// Outcome of one core access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub level: Level,
    pub latency_ps: Ps,
    /// Of the latency, the wait behind other transfers at DRAM (served
    /// there: `level` is `Dram`), the part that depends on when it was issued.
    pub queued_ps: Ps,
}

/// Counters of one cache level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounters {
    /// Core accesses that found the line here.
    pub hits: u64,
    pub misses: u64,
    /// Device accesses (LLC only).
    pub device_hits: u64,
    pub device_misses: u64,
    /// Dirty victims sent to the level below.
    pub writebacks: u64,
    /// Valid lines displaced by fills.
    pub evictions: u64,
}

/// Everything the memory system counts besides DRAM traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemCounters {
    /// Instruction lines fetched per core: hits in the L1I and misses to the L2.
    pub l1i: Vec<LevelCounters>,
    pub l1d: Vec<LevelCounters>,
    pub l2: Vec<LevelCounters>,
    pub llc: LevelCounters,
    /// Clean or dirty L2 victims written into a non-inclusive LLC.
    pub llc_victim_fills: u64,
    /// LLC lines handed to the core that read them (`on_core_read = move`).
    pub llc_moves: u64,
    /// Lines a core read in a DCA way, moved to the inclusive ways (`on_core_read = migrate`).
    pub llc_migrations: u64,
    /// Clean L2 victims a non-inclusive LLC did not take (`clean_victims = drop`).
    pub llc_dropped_clean_victims: u64,
    /// Private copies dropped because an inclusive LLC evicted the line.
    pub back_invalidations: u64,
    /// Lines moved between a core's cache and another agent's (snoop hits that cost a transfer).
    pub coherence_transfers: u64,
    /// Device writes that allocated a line in the DCA ways.
    pub dca_allocs: u64,
    /// Of those, writes to a line that a core's private cache held (the
    /// LLC did not): the snoop filter finds it, so the CHA serves the write
    /// with on-die snoops only, which Intel's uncore counts as a hit.
    pub dca_held_writes: u64,
    /// Device writes that updated a line already in the LLC.
    pub dca_updates: u64,
    /// Device-written lines evicted from the LLC before any core touched them.
    pub dca_leaks: u64,
    /// Lines a device wrote only part of (merged with the line's other bytes).
    pub partial_writes: u64,
    /// Partial device writes whose line had to be read from DRAM first.
    pub partial_write_reads: u64,
    /// Lines the L2 prefetchers fetched (`prefetch.rs`); of them, those a
    /// demand access found (on their way or arrived), those a demand
    /// found still on their way, and those evicted unused; and prefetches
    /// not issued because every L2 miss register was busy.
    pub l2_prefetches: u64,
    pub l2_prefetch_hits: u64,
    pub l2_prefetch_late: u64,
    pub l2_prefetch_unused: u64,
    pub l2_prefetch_dropped: u64,
    /// Bytes each agent moved to and from the shared memory system (the
    /// LLC or DRAM), by [`Agent`]: cores' L2 misses and dirty L2 victims,
    /// the devices' reads and writes.
    pub traffic: [Traffic; 3],
}

impl MemCounters {
    fn new(cores: usize) -> MemCounters {
        let per_core = vec![LevelCounters::default(); cores];
        MemCounters { l1i: per_core.clone(), l1d: per_core.clone(), l2: per_core, ..Default::default() }
    }
}

/// Bytes an agent read from and wrote to the shared memory system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Per-core latencies, converted to picoseconds once.
#[derive(Debug, Clone, Copy)]
pub(super) struct CoreLatency {
    l1: Ps,
    l2: Ps,
    llc: Ps,
    transfer: Ps,
}

pub struct MemSystem {
    pub(super) l1: Vec<Cache>,
    /// Each core's L1I (`code.rs`).
    pub(super) l1i: Vec<CodeLru>,
    pub(super) l2: Vec<Cache>,
    /// Which cores may hold a line (kept with every private fill and drop).
    pub(super) filter: SnoopFilter,
    pub(super) llc: Cache<true>,
    pub(super) dram: Dram,
    lat: Vec<CoreLatency>,
    /// LLC and transfer latency seen by the device (core 0's clock).
    pub(super) device_llc_ps: Ps,
    pub(super) device_transfer_ps: Ps,
    pub(super) inclusive: bool,
    /// A core's read takes the LLC's line when no other core holds it (`CoreRead::Move`, `Migrate`).
    moves: bool,
    /// ... except a line in a DCA way, which moves to `dca_held_mask` and stays (`CoreRead::Migrate`).
    migrates: bool,
    /// A non-inclusive LLC takes clean L2 victims (`CleanVictims::Fill`).
    fills_clean: bool,
    pub(super) dca_enabled: bool,
    pub(super) dca_mask: u64,
    /// Where a device write allocates a line a core held (`dca.held_ways`; else `dca_mask`).
    pub(super) dca_held_mask: u64,
    pub(super) llc_mask: u64,
    pub(super) c: MemCounters,
    /// A read from DRAM may wait in the read queue (`later.rs`), and the
    /// tickets of those that did.
    pub(super) defer: bool,
    pub(super) deferred: Vec<Ticket>,
    /// Each core's L2 prefetcher; none when `l2_prefetch.degree` is 0.
    pub(super) pf: Vec<Prefetcher>,
}

impl MemSystem {
    /// A memory system for `cores` cores whose cycle times are `core_cycle_ps`.
    pub fn new(cfg: &MemConfig, cores: usize, core_cycle_ps: &[Ps]) -> Result<MemSystem> {
        cfg.validate()?;
        if !(1..=1024).contains(&cores) {
            return Err(ConfigError::new("cores", cores.to_string(), "1 to 1024").into());
        }
        if core_cycle_ps.len() != cores || core_cycle_ps.contains(&0) {
            return Err(ConfigError::new("core_cycle_ps", format!("{core_cycle_ps:?}"), "one positive cycle time per core").into());
        }
        let lat: Vec<CoreLatency> = core_cycle_ps
            .iter()
            .map(|&cy| CoreLatency {
                l1: cfg.l1d.latency_cycles as Ps * cy,
                l2: cfg.l2.latency_cycles as Ps * cy,
                llc: cfg.llc.latency_cycles as Ps * cy,
                transfer: cfg.transfer_cycles as Ps * cy,
            })
            .collect();
        let llc = Cache::<true>::new(cfg.llc.size_bytes, cfg.llc.ways).with_slices(cfg.llc.slices);
        let dca_ways = if cfg.llc.dca.enabled { cfg.llc.dca.ways as usize } else { 0 };
        let l1: Cache = Cache::new(cfg.l1d.size_bytes, cfg.l1d.ways);
        let l2: Cache = Cache::new(cfg.l2.size_bytes, cfg.l2.ways);
        let filter = SnoopFilter::new(cores, l1.sets() * l1.ways() + l2.sets() * l2.ways(), l1.sets().max(l2.sets()));
        Ok(MemSystem {
            filter,
            l1: (0..cores).map(|_| Cache::new(cfg.l1d.size_bytes, cfg.l1d.ways)).collect(),
            l1i: (0..cores).map(|_| CodeLru::new(cfg.l1i.size_bytes)).collect(),
            l2: (0..cores).map(|_| Cache::new(cfg.l2.size_bytes, cfg.l2.ways)).collect(),
            dca_mask: llc.top_ways(dca_ways),
            dca_held_mask: match cfg.llc.dca.held_ways as usize {
                0 => llc.top_ways(dca_ways),
                n => llc.all_ways() >> (cfg.llc.ways as usize - n),
            },
            llc_mask: llc.all_ways(),
            llc,
            dram: Dram::new(&cfg.dram),
            device_llc_ps: lat[0].llc,
            device_transfer_ps: lat[0].transfer,
            lat,
            inclusive: cfg.llc.inclusion == Inclusion::Inclusive,
            moves: cfg.llc.on_core_read != CoreRead::Copy,
            migrates: cfg.llc.on_core_read == CoreRead::Migrate,
            fills_clean: cfg.llc.inclusion == Inclusion::NonInclusive && cfg.llc.clean_victims == CleanVictims::Fill,
            dca_enabled: cfg.llc.dca.enabled,
            c: MemCounters::new(cores),
            defer: false,
            deferred: Vec::new(),
            pf: if cfg.l2_prefetch.degree == 0 { Vec::new() } else { (0..cores).map(|_| Prefetcher::new(&cfg.l2_prefetch, cfg.l2.mshrs)).collect() },
        })
    }

    pub fn cores(&self) -> usize {
        self.l1.len()
    }

    pub fn counters(&self) -> &MemCounters {
        &self.c
    }

    pub fn dram(&self) -> &Dram {
        &self.dram
    }

    /// Is the line of `addr` in the LLC? (No LRU update; for tests and probes.)
    pub fn llc_contains(&self, addr: u64) -> bool {
        self.llc.contains(addr)
    }

    /// Is the line of `addr` in `core`'s L1D or L2?
    pub fn core_holds(&self, core: usize, addr: u64) -> bool {
        self.l1[core].contains(addr) || self.l2[core].contains(addr)
    }

    /// A load (`write` false) or store of the line holding `addr`, issued by `core` at `now`.
    #[inline]
    pub fn core_access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> Access {
        if let Some(slot) = self.l1[core].lookup(addr) {
            self.c.l1d[core].hits += 1;
            let mut latency_ps = self.lat[core].l1;
            if write {
                let f = self.l1[core].flags(slot);
                if f & flag::EXCL == 0 {
                    latency_ps = latency_ps.max(self.upgrade(core, addr));
                }
                self.l1[core].set_flags(slot, f | flag::DIRTY | flag::EXCL);
            }
            return Access { level: Level::L1, latency_ps, queued_ps: 0 };
        }
        self.c.l1d[core].misses += 1;
        self.l1_miss(core, addr, write, now)
    }

    #[inline(never)]
    fn l1_miss(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> Access {
        let (level, latency_ps, excl) = self.l2_access(core, addr, write, now);
        let dirty = if write { flag::DIRTY } else { 0 };
        self.fill_l1(core, addr, excl | dirty, now);
        if !self.pf.is_empty() {
            self.prefetch_on_access(core, addr, now);
        }
        let queued_ps = if level == Level::Dram { self.dram.last_read_wait_ps() } else { 0 };
        Access { level, latency_ps, queued_ps }
    }

    /// An access that missed the core's L1 (data or instruction) at its L2:
    /// a hit there, or the line from another core, the LLC or DRAM, filled
    /// into the L2. Returns the level, the latency and the `EXCL` bit.
    #[inline(always)]
    pub(super) fn l2_access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> (Level, Ps, u8) {
        if let Some(slot) = self.l2[core].lookup(addr) {
            self.c.l2[core].hits += 1;
            let f = self.l2[core].flags(slot);
            let mut latency = self.lat[core].l2;
            if f & flag::PREFETCHED != 0 {
                self.l2[core].set_flags(slot, f & !flag::PREFETCHED);
                self.c.l2_prefetch_hits += 1;
                if let Some(at) = self.pf[core].arrival(addr / LINE_BYTES, now) {
                    self.c.l2_prefetch_late += 1;
                    latency = latency.max(at - now);
                }
            }
            if write && f & flag::EXCL == 0 {
                latency = latency.max(self.upgrade(core, addr));
            }
            (Level::L2, latency, if write { flag::EXCL } else { f & flag::EXCL })
        } else {
            self.c.l2[core].misses += 1;
            let (level, latency, excl, dirty) = self.fetch_shared(core, addr, write, now);
            self.fill_l2(core, addr, excl | dirty, now);
            (level, latency, excl)
        }
    }

    /// A store to a shared line: take it away from the other cores.
    /// Returns the latency of the transfer, 0 if nobody else had it.
    fn upgrade(&mut self, core: usize, addr: u64) -> Ps {
        let (found, _) = self.snoop(Some(core), addr, true);
        if let Some(s) = self.l2[core].find(addr) {
            let f = self.l2[core].flags(s);
            self.l2[core].set_flags(s, f | flag::EXCL);
        }
        if found {
            self.c.coherence_transfers += 1;
            self.lat[core].transfer
        } else {
            0
        }
    }

    /// Visits every core but `except` that may hold the line: with `invalidate`, drops their copies;
    /// otherwise marks them shared. Returns (any copy, any dirty copy).
    pub(super) fn snoop(&mut self, except: Option<usize>, addr: u64, invalidate: bool) -> (bool, bool) {
        let (mut found, mut dirty) = (false, false);
        // Every core's L1 (and L2) has the same geometry: locate the line once.
        let (at1, at2) = (self.l1[0].locate(addr), self.l2[0].locate(addr));
        for o in 0..self.l1.len() {
            if Some(o) == except || !self.filter.may_hold(o, addr) {
                continue;
            }
            for (cache, at) in [(&mut self.l1[o], at1), (&mut self.l2[o], at2)] {
                if let Some(s) = cache.find_located(at) {
                    let f = cache.flags(s);
                    found = true;
                    dirty |= f & flag::DIRTY != 0;
                    if invalidate {
                        cache.invalidate_slot(s);
                        self.filter.remove(o, addr);
                    } else {
                        cache.set_flags(s, f & !flag::EXCL);
                    }
                }
            }
        }
        (found, dirty)
    }

    /// Serves an L2 miss from another core, the LLC or DRAM.
    /// Returns the level, the latency, the `EXCL` bit for the new private
    /// copy and its `DIRTY` bit (set when a dirty line moved out of the LLC).
    pub(super) fn fetch_shared(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> (Level, Ps, u8, u8) {
        self.c.traffic[Agent::Core.index()].read_bytes += LINE_BYTES;
        let (found, dirty) = if self.l1.len() > 1 { self.snoop(Some(core), addr, write) } else { (false, false) };
        let mut transfer = if write { found } else { dirty };
        let excl = if write || !found { flag::EXCL } else { 0 };
        let lat = self.lat[core];
        let mut moved_dirty = 0;
        let (mut level, mut latency) = if let Some(s) = self.llc.lookup(addr) {
            self.c.llc.hits += 1;
            let f = self.llc.flags(s);
            if self.migrates && excl != 0 && self.in_dca_way(s) {
                // A4's reading: the line leaves its DCA way for the inclusive
                // ways and stays there; the reader's L2 gets a clean copy.
                self.llc.invalidate_slot(s);
                self.c.llc_migrations += 1;
                self.llc_fill(addr, f & !flag::DEV_UNREAD, self.dca_held_mask, now);
            } else if self.moves && excl != 0 {
                // The reader becomes the only holder: the line leaves the LLC
                // (and its DCA way), its data dirty in the L2 if it was here.
                self.llc.invalidate_slot(s);
                self.c.llc_moves += 1;
                moved_dirty = f & flag::DIRTY;
            } else {
                self.llc.set_flags(s, f & !flag::DEV_UNREAD);
            }
            (Level::Llc, lat.llc)
        } else {
            self.c.llc.misses += 1;
            // A mostly exclusive LLC's snoop filter sends the read to the
            // core that holds the line, clean or dirty.
            transfer |= self.moves && found;
            let latency = if transfer {
                lat.transfer
            } else if self.defer {
                match self.dram.read_later(addr, now, Agent::Core) {
                    Read::Done(latency) => latency,
                    Read::Queued(t) => {
                        self.deferred.push(t);
                        0
                    }
                }
            } else {
                self.dram.read(addr, now, Agent::Core)
            };
            if self.inclusive {
                self.llc_fill(addr, 0, self.llc_mask, now);
            }
            (Level::Dram, latency)
        };
        if transfer {
            self.c.coherence_transfers += 1;
            level = Level::Llc;
            latency = latency.max(lat.transfer);
        }
        (level, latency, excl, moved_dirty)
    }

    /// Is LLC slot `s` in one of the DCA ways?
    #[inline]
    fn in_dca_way(&self, s: usize) -> bool {
        self.dca_mask >> (s % self.llc.ways()) & 1 != 0
    }

    /// The LLC way holding `addr`'s line, if any (for tests).
    #[cfg(test)]
    pub(super) fn llc_way(&self, addr: u64) -> Option<usize> {
        self.llc.find(addr).map(|s| s % self.llc.ways())
    }

    /// Puts a line absent from `core`'s L2 into it and sends the victim down.
    pub(super) fn fill_l2(&mut self, core: usize, addr: u64, flags: u8, now: Ps) {
        let mask = self.l2[core].all_ways();
        let (_, victim) = self.l2[core].fill(addr, flags, mask);
        self.filter.add(core, addr);
        if let Some(v) = victim {
            self.filter.remove(core, v.addr);
            self.c.l2[core].evictions += 1;
            if v.flags & flag::PREFETCHED != 0 {
                self.c.l2_prefetch_unused += 1;
            }
            if v.dirty() {
                self.c.l2[core].writebacks += 1;
                self.c.traffic[Agent::Core.index()].write_bytes += LINE_BYTES;
            }
            if v.dirty() || self.fills_clean {
                self.llc_put(v, now);
            } else if !self.inclusive {
                self.c.llc_dropped_clean_victims += 1;
            }
        }
    }

    /// Puts a line absent from `core`'s L1 into it; a dirty victim goes to L2.
    fn fill_l1(&mut self, core: usize, addr: u64, flags: u8, now: Ps) {
        let mask = self.l1[core].all_ways();
        let (_, victim) = self.l1[core].fill(addr, flags, mask);
        self.filter.add(core, addr);
        let Some(v) = victim else { return };
        self.filter.remove(core, v.addr);
        self.c.l1d[core].evictions += 1;
        if !v.dirty() {
            return;
        }
        self.c.l1d[core].writebacks += 1;
        if let Some(s) = self.l2[core].find(v.addr) {
            let f = self.l2[core].flags(s);
            self.l2[core].set_flags(s, f | flag::DIRTY | (v.flags & flag::EXCL));
        } else {
            self.fill_l2(core, v.addr, flag::DIRTY | (v.flags & flag::EXCL), now);
        }
    }

    /// An L2 victim arrives at the LLC: update the copy there or insert it.
    fn llc_put(&mut self, v: Victim, now: Ps) {
        let dirty = v.flags & flag::DIRTY;
        if let Some(s) = self.llc.lookup(v.addr) {
            let f = self.llc.flags(s);
            let f = if dirty != 0 { (f | flag::DIRTY) & !(flag::DEV_DIRTY | flag::ENGINE) } else { f };
            self.llc.set_flags(s, f);
        } else {
            if !self.inclusive {
                self.c.llc_victim_fills += 1;
            }
            self.llc_fill(v.addr, dirty, self.llc_mask, now);
        }
    }

    /// Inserts a line absent from the LLC into the ways of `mask` and
    /// disposes of the victim: leak accounting, back-invalidation, write-back.
    pub(super) fn llc_fill(&mut self, addr: u64, flags: u8, mask: u64, now: Ps) {
        let (_, victim) = self.llc.fill(addr, flags, mask);
        let Some(v) = victim else { return };
        self.c.llc.evictions += 1;
        if v.flags & flag::DEV_UNREAD != 0 {
            self.c.dca_leaks += 1;
        }
        let mut core_dirty = false;
        if self.inclusive {
            for o in 0..self.l1.len() {
                if !self.filter.may_hold(o, v.addr) {
                    continue;
                }
                for cache in [&mut self.l1[o], &mut self.l2[o]] {
                    if let Some(f) = cache.invalidate(v.addr) {
                        self.filter.remove(o, v.addr);
                        self.c.back_invalidations += 1;
                        core_dirty |= f & flag::DIRTY != 0;
                    }
                }
            }
        }
        if v.dirty() || core_dirty {
            self.c.llc.writebacks += 1;
            let agent = match (v.flags & flag::DEV_DIRTY != 0 && !core_dirty, v.flags & flag::ENGINE != 0) {
                (false, _) => Agent::Core,
                (true, false) => Agent::Device,
                (true, true) => Agent::Engine,
            };
            self.dram.write(v.addr, now, agent);
        }
    }

    /// Zeroes every counter; cache contents and DRAM queues stay.
    pub fn reset_counters(&mut self) {
        let cores = self.l1.len();
        self.c = MemCounters::new(cores);
        crate::engine::stats::HasStats::reset_stats(&mut self.dram);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::mem::config::{CacheConfig, DcaConfig, DramConfig, LlcConfig};
    use crate::mem::lines;

    /// 1 GHz cores (1 cycle = 1000 ps). L1 1 KiB 4-way (4 sets), L2 4 KiB 4-way
    /// (16 sets), LLC 16 KiB 8-way (32 sets) with 2 DCA ways, one DRAM channel
    /// at 64 GB/s (1 line per ns) with 50 ns idle latency.
    pub fn tiny(inclusion: Inclusion) -> MemConfig {
        MemConfig {
            l1i: Default::default(),
            l1d: CacheConfig { size_bytes: 1024, ways: 4, latency_cycles: 2, mshrs: 4 },
            l2: CacheConfig { size_bytes: 4096, ways: 4, latency_cycles: 10, mshrs: 8 },
            llc: LlcConfig { size_bytes: 16384, ways: 8, latency_cycles: 30, inclusion, on_core_read: CoreRead::Copy, clean_victims: Default::default(), dca: DcaConfig { enabled: true, ways: 2, held_ways: 0 }, slices: 0 },
            dram: DramConfig::flat(1, 64_000_000_000, 50_000),
            transfer_cycles: 60,
            l2_prefetch: Default::default(),
        }
    }

    pub fn sys(cfg: &MemConfig, cores: usize) -> MemSystem {
        MemSystem::new(cfg, cores, &vec![1_000; cores]).unwrap()
    }

    /// LLC set stride: 32 sets × 64 B. Lines at multiples share a set at every level.
    const LLC_STRIDE: u64 = 2048;

    /// Loads, stores, device writes and reads by three cores over more lines
    /// than the LLC holds, with either inclusion and each LLC policy: after
    /// every step the snoop filter counts exactly the lines each core's L1D
    /// and L2 hold, and no cache holds a line twice.
    #[test]
    fn the_snoop_filter_follows_every_private_fill_and_drop() {
        use CleanVictims::{Drop, Fill};
        use CoreRead::{Copy, Migrate, Move};
        let policies = [
            (Inclusion::Inclusive, Copy, Fill),
            (Inclusion::NonInclusive, Copy, Fill),
            (Inclusion::NonInclusive, Move, Fill),
            (Inclusion::NonInclusive, Move, Drop),
            (Inclusion::NonInclusive, Migrate, Fill),
            (Inclusion::NonInclusive, Migrate, Drop),
        ];
        for (inclusion, on_core_read, clean_victims) in policies {
            let mut cfg = tiny(inclusion);
            cfg.llc.on_core_read = on_core_read;
            cfg.llc.clean_victims = clean_victims;
            cfg.llc.dca.held_ways = if on_core_read == Migrate { 2 } else { 0 };
            let mut m = sys(&cfg, 3);
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for step in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let addr = (x >> 8) % (2 * 16384 / 64) * 64;
                match x % 8 {
                    0 => _ = m.device_write(addr, 64, step),
                    1 => _ = m.device_read(addr, 64, step),
                    k => _ = m.core_access(k as usize % 3, addr, k >= 5, step),
                }
                assert!(m.filter.agrees_with(&m.l1, &m.l2), "{inclusion:?} {on_core_read:?} {clean_victims:?} step {step}");
            }
            let c = m.counters();
            assert!(c.back_invalidations > 0 || inclusion == Inclusion::NonInclusive);
            assert!(c.coherence_transfers > 0);
            assert_eq!(c.llc_moves > 0, on_core_read != Copy, "{on_core_read:?}");
            assert_eq!(c.llc_migrations > 0, on_core_read == Migrate, "{on_core_read:?}");
            assert_eq!(c.llc_dropped_clean_victims > 0, clean_victims == Drop, "{clean_victims:?}");
            for lines in std::iter::once(m.llc.resident().collect::<Vec<_>>())
                .chain(m.l1.iter().chain(&m.l2).map(|c| c.resident().collect::<Vec<_>>()))
            {
                let mut sorted = lines.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), lines.len(), "{inclusion:?} {on_core_read:?} {clean_victims:?}: a line held twice");
            }
        }
    }

    #[test]
    fn miss_then_hits_with_level_latencies() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        assert_eq!(m.core_access(0, 0x40, false, 0), Access { level: Level::Dram, latency_ps: 50_000, queued_ps: 0 });
        assert_eq!(m.core_access(0, 0x7f, false, 0), Access { level: Level::L1, latency_ps: 2_000, queued_ps: 0 });
        let c = m.counters();
        assert_eq!((c.l1d[0].hits, c.l1d[0].misses, c.l2[0].misses, c.llc.misses), (1, 1, 1, 1));
        assert_eq!(m.dram().counters().bytes_read_core, 64);
        // A second line at the same time waits one transfer (64 B at 64 GB/s) for the channel, and says so.
        assert_eq!(m.core_access(0, 0x1000, false, 0), Access { level: Level::Dram, latency_ps: 51_000, queued_ps: 1_000 });
    }

    #[test]
    fn working_set_that_fits_l1_hits_after_warmup() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        for a in lines(0, 1024) {
            m.core_access(0, a, false, 0);
        }
        m.reset_counters();
        for _ in 0..5 {
            for a in lines(0, 1024) {
                assert_eq!(m.core_access(0, a, a % 128 == 0, 0).level, Level::L1);
            }
        }
        assert_eq!((m.counters().l1d[0].hits, m.counters().l1d[0].misses), (80, 0));
    }

    #[test]
    fn l2_serves_what_l1_lost() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        // Five lines in L1 set 0 (stride 256 B): the first falls out of L1 but stays in L2.
        for i in 0..5 {
            m.core_access(0, i * 256, false, 0);
        }
        assert_eq!(m.core_access(0, 0, false, 0), Access { level: Level::L2, latency_ps: 10_000, queued_ps: 0 });
    }

    #[test]
    fn dirty_l1_victim_goes_to_l2_only() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        // Five stores into L1 set 0 (stride 256 B) spread over L2 sets 0, 4, 8, 12:
        // the fifth evicts the first, dirty, into L2 — one write-back, no DRAM write.
        for i in 0..5 {
            m.core_access(0, i * 256, true, 0);
        }
        let c = m.counters();
        assert_eq!((c.l1d[0].writebacks, c.l2[0].writebacks, c.llc.writebacks), (1, 0, 0));
        assert_eq!(m.dram().counters().bytes_written_core, 0);
        // The line is still dirty in L2: forcing it out of L2 (four more lines in its
        // L2 set, stride 1 KiB) writes it back into the LLC, still not to DRAM.
        for i in 1..=4 {
            m.core_access(0, i * 1024 + 4096 * 4, false, 0);
        }
        assert!(!m.l2[0].contains(0) && m.llc_contains(0));
        assert_eq!(m.counters().l2[0].writebacks, 1);
        assert_eq!(m.dram().counters().bytes_written_core, 0);
    }

    #[test]
    fn dirty_lines_leaving_an_inclusive_hierarchy_are_written_once() {
        // Nine stores into one LLC set of 8 ways: exactly one line leaves the
        // (inclusive) hierarchy, and it is dirty: one DRAM write-back.
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        for i in 0..9 {
            m.core_access(0, i * LLC_STRIDE, true, 0);
        }
        assert_eq!(m.counters().llc.writebacks, 1);
        assert_eq!(m.counters().llc.evictions, 1);
        assert!(m.counters().back_invalidations >= 1);
        assert_eq!(m.dram().counters().bytes_written_core, 64);
        assert_eq!((0..9).filter(|i| m.llc_contains(i * LLC_STRIDE)).count(), 8);
        assert!((0..9).all(|i| !m.core_holds(0, i * LLC_STRIDE) || m.llc_contains(i * LLC_STRIDE)), "inclusion");
        // Loads instead of stores: nothing is dirty, nothing is written back.
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        for i in 0..20 {
            m.core_access(0, i * LLC_STRIDE, false, 0);
        }
        assert_eq!(m.counters().llc.writebacks + m.counters().l1d[0].writebacks, 0);
        assert_eq!(m.dram().counters().bytes_written_core, 0);
    }

    #[test]
    fn inclusive_llc_back_invalidates_other_cores() {
        for inclusion in [Inclusion::Inclusive, Inclusion::NonInclusive] {
            let mut m = sys(&tiny(inclusion), 2);
            m.core_access(0, 0, false, 0);
            // Core 1 streams 8 other lines through the same LLC set.
            for i in 1..=8 {
                m.core_access(1, i * LLC_STRIDE, false, 0);
            }
            let level = m.core_access(0, 0, false, 0).level;
            match inclusion {
                Inclusion::Inclusive => {
                    assert_eq!(level, Level::Dram, "core 0's copy was back-invalidated");
                    assert_eq!(m.counters().back_invalidations, 1 + 1);
                }
                Inclusion::NonInclusive => {
                    assert_eq!(level, Level::L1, "a non-inclusive LLC leaves private copies alone");
                    assert_eq!(m.counters().back_invalidations, 0);
                }
            }
        }
    }

    #[test]
    fn non_inclusive_llc_takes_l2_victims() {
        let mut m = sys(&tiny(Inclusion::NonInclusive), 1);
        // DRAM fills bypass the LLC.
        m.core_access(0, 0, false, 0);
        assert!(!m.llc_contains(0));
        // Push line 0 out of L1 and L2 (both have set stride ≤ 1 KiB): 4 more
        // lines in L2 set 0 (stride 1 KiB) evict it, clean, into the LLC.
        for i in 1..=4 {
            m.core_access(0, i * 1024, false, 0);
        }
        assert!(!m.core_holds(0, 0) && m.llc_contains(0));
        assert_eq!(m.counters().llc_victim_fills, 1);
        assert_eq!(m.core_access(0, 0, false, 0).level, Level::Llc);
        // An inclusive LLC drops clean L2 victims (it already has them).
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        for i in 0..=4 {
            m.core_access(0, i * 1024, false, 0);
        }
        assert_eq!(m.counters().llc_victim_fills, 0);
        assert_eq!(m.core_access(0, 0, false, 0).level, Level::Llc);
    }

    #[test]
    fn stores_to_shared_lines_cost_transfers() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 2);
        m.core_access(0, 0, true, 0); // core 0 owns it, dirty
        // Core 1 loads: core 0's dirty copy supplies it.
        assert_eq!(m.core_access(1, 0, false, 0), Access { level: Level::Llc, latency_ps: 60_000, queued_ps: 0 });
        assert_eq!(m.counters().coherence_transfers, 1);
        // Core 1 stores to its shared copy (an L1 hit): invalidates core 0's.
        assert_eq!(m.core_access(1, 0, true, 0).latency_ps, 60_000);
        assert_eq!(m.counters().coherence_transfers, 2);
        assert!(!m.core_holds(0, 0));
        // Now exclusive: further stores are plain L1 hits.
        assert_eq!(m.core_access(1, 0, true, 0).latency_ps, 2_000);
        // Core 0 loads it back from core 1's dirty copy.
        assert_eq!(m.core_access(0, 0, false, 0).latency_ps, 60_000);
        assert_eq!(m.counters().coherence_transfers, 3);
        // Clean sharing is free: both load a fresh line.
        m.core_access(0, 64, false, 0);
        assert_eq!(m.core_access(1, 64, false, 0).level, Level::Llc);
        assert_eq!(m.counters().coherence_transfers, 3);
    }

    #[test]
    fn per_core_cycle_times_scale_latencies() {
        let m = MemSystem::new(&tiny(Inclusion::Inclusive), 2, &[1_000, 500]).unwrap();
        let mut m = m;
        m.core_access(1, 0, false, 0);
        assert_eq!(m.core_access(1, 0, false, 0).latency_ps, 1_000);
        assert!(MemSystem::new(&tiny(Inclusion::Inclusive), 2, &[1_000]).is_err());
        let mut bad = tiny(Inclusion::Inclusive);
        bad.l2.ways = 3;
        assert!(MemSystem::new(&bad, 1, &[1_000]).err().unwrap().to_string().contains("mem.l2.size_bytes"));
    }

    #[test]
    fn presets_build() {
        for cfg in [MemConfig::altra(), MemConfig::xeon_e3_1230v2()] {
            let mut m = MemSystem::new(&cfg, 4, &[333; 4]).unwrap();
            assert_eq!(m.core_access(3, 1 << 30, false, 0).level, Level::Dram);
        }
    }

    /// Run with `--release --nocapture` for a meaningful number.
    #[test]
    fn l1_hit_speed() {
        let mut m = MemSystem::new(&MemConfig::altra(), 4, &[333; 4]).unwrap();
        let lines: Vec<u64> = (0..256).map(|i| 0x10_0000 + i * 64).collect(); // 16 KiB
        for &a in &lines {
            m.core_access(0, a, true, 0);
        }
        let n = 2_000_000;
        let t0 = std::time::Instant::now();
        let mut sum = 0;
        for i in 0..n {
            sum += m.core_access(0, lines[i & 255], i & 3 == 0, 0).latency_ps;
        }
        let ns = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("L1-hit core_access: {ns:.2} ns/access");
        assert_eq!(sum, n as u64 * 666);
    }
}
