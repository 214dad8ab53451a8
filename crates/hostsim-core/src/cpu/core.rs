//! An interval-style core timing model (SPEC §2.7): a core executes units of
//! [`Work`] — instructions plus the cache-line accesses they make — and its
//! own clock advances by a compute part and a memory-stall part.
//!
//! # The formula
//!
//! For a work unit of `I` instructions on a core at `f` Hz with base CPI `c`
//! (`base_cpi`, or `inorder.base_cpi` for an in-order core; rounded to the
//! nearest 0.001 cycle):
//!
//! ```text
//! elapsed = compute + stall
//! compute = I × c / f                    (ps; truncated, the sub-picosecond
//!                                         remainder carried to the next unit,
//!                                         so a run never drifts)
//! stall   = Σ over miss windows W of max_{i∈W} latency_i
//! ```
//!
//! L1D hits cost nothing beyond the CPI. Load misses (any access the memory
//! system reports as not an L1 hit) are grouped greedily, in program order,
//! into windows that overlap completely: a load miss joins the open window if
//! the window holds fewer than `M` misses and the miss lies fewer than `R`
//! instructions after the window's first miss (both fit in the ROB at once);
//! otherwise the window closes — its slowest miss is charged as stall — and
//! the miss opens a new one. Out-of-order: `M = l1d_mshrs`, `R = rob_entries`.
//! In-order: `M = 1` (every load miss stalls for its full latency).
//!
//! For `n` load misses of equal latency `L`, evenly `s` instructions apart,
//! this gives `stall = ceil(n / MLP) × L` with
//! `MLP = min(l1d_mshrs, ceil(rob_entries / s))` (`MLP = l1d_mshrs` when
//! `s = 0`): misses further apart than the ROB cannot overlap. We charge each
//! window its slowest miss rather than `Σ latency / MLP` because a lone miss
//! must cost its whole latency and because misses that queue in DRAM come back
//! with different latencies; the two agree when `n` is a multiple of `MLP`.
//!
//! Stores do not wait for their line: they go into the store buffer (the
//! store queue of an out-of-order core, `sq_entries`; gem5 MinorCPU's store
//! buffer on an in-order one, `inorder.store_buffer_entries`), which drains
//! into the L1D in program order, as x86's TSO and Minor's store buffer do. A
//! store that misses drains `latency` after it begins, and it begins once
//! fewer than `D` stores before it are still draining (out-of-order:
//! `D = l1d_mshrs`; in-order: `D = inorder.accesses_in_memory`); a store
//! that hits drains right after the store before it (at once into an empty
//! buffer). A store that finds the buffer full stalls the core until the
//! oldest store drains; the open window's load misses return during that
//! wait, so the window is charged only what is left of its latency after it
//! (an in-order core has no open window there: it blocked on its load
//! miss before it reached the store). The memory system sees every store
//! (write-allocate, coherence, DRAM traffic) at its issue time, not when it
//! drains. An atomic
//! (compare-and-swap, [`Access::atomic`]) is the exception: it closes the
//! open window and stalls for its own line's whole latency, as a locked
//! instruction does. A dependent load ([`Access::dependent`]: its address
//! comes from an earlier load's data) closes the open window too: it issues
//! when the misses before it have returned.
//!
//! Each access is issued to the memory system at `start + stall so far +
//! (compute time of the instructions before it)`, so an in-order core spreads
//! its misses over time and an out-of-order core issues a window's misses
//! together — DRAM queueing sees the difference. Windows do not span work
//! units: the boundary between two `exec` calls acts as a serializing point,
//! so put a whole burst in one unit when its misses should overlap.
//!
//! Every picosecond is charged to the work's [`Category`] in the core's
//! [`CycleAccount`]; idle time and spinning are charged too, so the account
//! sums to the core's elapsed time.
//!
//! Simplified away: overlap of compute with miss latency (the ROB fill time
//! before a stall), instruction-cache and TLB misses, branch mispredictions
//! beyond the base CPI, bandwidth limits inside the core, load-queue limits
//! (the MSHRs bind first on every preset), out-of-order store drain (Arm's
//! weaker ordering would allow it), the loads after a full-buffer stall
//! joining the window still open before it, an atomic waiting for the store
//! buffer to drain first (x86's locked instructions do). Read first: Eyerman,
//! Eeckhout, Karkhanis and Smith, "A mechanistic performance model for
//! superscalar out-of-order processors", ACM TOCS 27(2), 2009, and Karkhanis
//! and Smith, "A first-order superscalar processor model", ISCA 2004.

use serde_json::{json, Value};

use super::accounting::{Category, CycleAccount};
use super::config::CoreConfig;
use super::mem_port::MemPort;
use super::work::{Access, Work};
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_NS, PS_PER_S};
use crate::error::Result;

/// Picoseconds per milli-cycle numerator: ps = milli_cycles × 10⁹ / f.
const PS_NUM_PER_MILLI_CYCLE: u64 = 1_000_000_000;

#[derive(Debug, Clone)]
pub struct Core {
    id: usize,
    cfg: CoreConfig,
    cpi_milli: u64,
    /// Picoseconds per milli-cycle in 32.32 fixed point (issue times only).
    ps_per_mc_q32: u64,
    /// Most load misses per window, and the ROB reach (instructions).
    window_misses: u32,
    rob_reach: u64,
    /// Store buffer: when each of the last `sb.len()` (a power of two) stores
    /// that entered it is drained (ring indexed by `sb_stores`); `sb_entries`
    /// of them fit and `sb_drains` drain at once. `sb_last`: when the last drains.
    sb: Vec<Ps>,
    sb_stores: u64,
    sb_last: Ps,
    sb_entries: u64,
    sb_drains: u64,
    now: Ps,
    /// Sub-picosecond remainder of compute time: (milli-cycles × 10⁹) mod f, carried.
    rem: u64,
    account: CycleAccount,
    // statistics
    work_units: u64,
    load_misses: u64,
    store_misses: u64,
    miss_windows: u64,
    stall_ps: Ps,
    sb_full: u64,
    sb_full_ps: Ps,
}

impl Core {
    /// Core number `id` (passed to the memory system with every access), at time 0.
    pub fn new(id: usize, cfg: &CoreConfig) -> Result<Core> {
        cfg.validate()?;
        let f = cfg.freq_hz;
        let ps_per_mc_q32 = (((PS_NUM_PER_MILLI_CYCLE as u128) << 32) + f as u128 / 2) / f as u128;
        let (window_misses, rob_reach) = if cfg.out_of_order { (cfg.l1d_mshrs, cfg.rob_entries as u64) } else { (1, 1) };
        let (sb_entries, sb_drains) =
            if cfg.out_of_order { (cfg.sq_entries, cfg.l1d_mshrs) } else { (cfg.inorder.store_buffer_entries, cfg.inorder.accesses_in_memory) };
        Ok(Core {
            id,
            cfg: cfg.clone(),
            cpi_milli: cfg.base_cpi_milli(),
            ps_per_mc_q32: ps_per_mc_q32 as u64,
            window_misses,
            rob_reach,
            sb: vec![0; sb_entries.max(sb_drains).next_power_of_two() as usize],
            sb_stores: 0,
            sb_last: 0,
            sb_entries: sb_entries as u64,
            sb_drains: sb_drains as u64,
            now: 0,
            rem: 0,
            account: CycleAccount::new(f),
            work_units: 0,
            load_misses: 0,
            store_misses: 0,
            miss_windows: 0,
            stall_ps: 0,
            sb_full: 0,
            sb_full_ps: 0,
        })
    }

    pub fn id(&self) -> usize {
        self.id
    }

    pub fn config(&self) -> &CoreConfig {
        &self.cfg
    }

    /// The core's own clock: when it finishes what it has been given.
    #[inline]
    pub fn now(&self) -> Ps {
        self.now
    }

    pub fn account(&self) -> &CycleAccount {
        &self.account
    }

    pub fn account_mut(&mut self) -> &mut CycleAccount {
        &mut self.account
    }

    /// Duration of `cycles` core cycles, rounded to the nearest picosecond.
    pub fn cycles_to_ps(&self, cycles: u64) -> Ps {
        let f = self.cfg.freq_hz as u128;
        ((cycles as u128 * PS_PER_S as u128 + f / 2) / f) as Ps
    }

    /// Cycles in `ps` picoseconds (fractional).
    pub fn ps_to_cycles(&self, ps: Ps) -> f64 {
        ps as f64 * self.cfg.freq_hz as f64 / PS_PER_S as f64
    }

    /// Compute time of `milli_cycles`, carrying the sub-picosecond remainder.
    #[inline]
    fn compute_ps(&mut self, milli_cycles: u64) -> Ps {
        let f = self.cfg.freq_hz;
        match milli_cycles.checked_mul(PS_NUM_PER_MILLI_CYCLE).and_then(|n| n.checked_add(self.rem)) {
            Some(num) => {
                self.rem = num % f;
                num / f
            }
            None => {
                let num = milli_cycles as u128 * PS_NUM_PER_MILLI_CYCLE as u128 + self.rem as u128;
                self.rem = (num % f as u128) as u64;
                (num / f as u128) as Ps
            }
        }
    }

    /// Approximate compute time of the first `instr` instructions (issue times only).
    #[inline]
    fn issue_offset_ps(&self, instr: u64) -> Ps {
        ((instr as u128 * self.cpi_milli as u128 * self.ps_per_mc_q32 as u128) >> 32) as Ps
    }

    /// Executes `work` from the core's current time; returns the new time.
    #[inline]
    pub fn exec<M: MemPort>(&mut self, work: &Work, mem: &mut M) -> Ps {
        self.run(work.category(), work.instructions(), work.accesses(), mem)
    }

    /// Executes `instructions` instructions making `accesses` (positions as in
    /// [`Work`]), charged to `category`; returns the new time.
    pub fn run<M: MemPort>(&mut self, category: Category, instructions: u64, accesses: &[Access], mem: &mut M) -> Ps {
        let start = self.now;
        let stall = self.stall_ps(start, accesses, mem);
        let compute = self.compute_ps(instructions.saturating_mul(self.cpi_milli));
        let elapsed = compute + stall;
        self.now = start + elapsed;
        self.account.charge(category, elapsed, instructions);
        self.work_units += 1;
        self.stall_ps += stall;
        self.now
    }

    /// Issues the accesses and returns the memory stall (see the module header).
    #[inline]
    fn stall_ps<M: MemPort>(&mut self, start: Ps, accesses: &[Access], mem: &mut M) -> Ps {
        let mut stall: Ps = 0;
        let mut win_n: u32 = 0;
        let mut win_first: u64 = 0;
        let mut win_max: Ps = 0;
        for a in accesses {
            if a.atomic {
                // A locked instruction: the misses before it complete first,
                // then the core waits for the line itself.
                if win_n > 0 {
                    stall += win_max;
                    self.miss_windows += 1;
                    win_n = 0;
                    win_max = 0;
                }
                let t = start + stall + self.issue_offset_ps(a.at_instr);
                let cost = mem.access(self.id, a.addr, true, t);
                if !cost.l1_hit {
                    self.store_misses += 1;
                    stall += cost.latency_ps;
                    self.miss_windows += 1;
                }
                continue;
            }
            if win_n > 0 && (a.dependent || win_n >= self.window_misses || a.at_instr.saturating_sub(win_first) >= self.rob_reach) {
                stall += win_max;
                self.miss_windows += 1;
                win_n = 0;
                win_max = 0;
            }
            let t = start + stall + self.issue_offset_ps(a.at_instr);
            let cost = mem.access(self.id, a.addr, a.write, t);
            if a.write {
                if cost.l1_hit && self.sb_last <= t {
                    continue; // an empty buffer: the store drains at once
                }
                if !cost.l1_hit {
                    self.store_misses += 1;
                }
                let oldest = self.sb_oldest();
                let t = if oldest > t {
                    // Full: wait for the oldest store; the open window's misses return meanwhile.
                    let wait = oldest - t;
                    self.sb_full += 1;
                    self.sb_full_ps += wait;
                    stall += wait;
                    win_max = win_max.saturating_sub(wait);
                    oldest
                } else {
                    t
                };
                self.sb_push(t, if cost.l1_hit { None } else { Some(cost.latency_ps) });
                continue;
            }
            if cost.l1_hit {
                continue;
            }
            self.load_misses += 1;
            if win_n == 0 {
                win_first = a.at_instr;
            }
            win_n += 1;
            win_max = win_max.max(cost.latency_ps);
        }
        if win_n > 0 {
            stall += win_max;
            self.miss_windows += 1;
        }
        stall
    }

    /// When the store buffer's `k`-th most recent store (1 = the last) drains; 0 if none.
    #[inline(always)]
    fn sb_done(&self, k: u64) -> Ps {
        if k > self.sb_stores {
            0
        } else {
            self.sb[((self.sb_stores - k) & (self.sb.len() as u64 - 1)) as usize]
        }
    }

    /// When an entry frees for the next store: the oldest of a full buffer drains.
    #[inline(always)]
    fn sb_oldest(&self) -> Ps {
        self.sb_done(self.sb_entries)
    }

    /// A store enters the buffer at `t`: a miss (`Some(latency)`) begins to
    /// drain once fewer than `sb_drains` stores before it are draining; the
    /// buffer drains in program order.
    #[inline]
    fn sb_push(&mut self, t: Ps, miss: Option<Ps>) {
        let done = match miss {
            Some(latency) => t.max(self.sb_done(self.sb_drains)) + latency,
            None => t,
        };
        let done = done.max(self.sb_last);
        let mask = self.sb.len() as u64 - 1;
        self.sb[(self.sb_stores & mask) as usize] = done;
        self.sb_stores += 1;
        self.sb_last = done;
    }

    /// Spends `cycles` core cycles on `category` with no memory access (e.g. a
    /// fixed cost taken from a measurement); returns the new time.
    pub fn exec_cycles(&mut self, category: Category, cycles: u64) -> Ps {
        let d = self.compute_ps(cycles.saturating_mul(1000));
        self.now += d;
        self.account.charge(category, d, 0);
        self.now
    }

    /// An empty poll: `instructions` instructions and a read of the descriptor
    /// at `desc_addr` that found nothing, charged to [`Category::Idle`].
    pub fn empty_poll<M: MemPort>(&mut self, instructions: u64, desc_addr: u64, mem: &mut M) -> Ps {
        let read = [Access { addr: desc_addr, write: false, atomic: false, dependent: false, at_instr: 0 }];
        self.run(Category::Idle, instructions, &read, mem)
    }

    /// Waits (idle) until `t`; nothing happens if the core is already past it.
    /// Charged to [`Category::Idle`]. Returns the new time.
    pub fn idle_until(&mut self, t: Ps) -> Ps {
        self.wait_until(t, Category::Idle)
    }

    /// Waits until `t`, charging the wait to `category` (e.g. a spin on a lock).
    pub fn wait_until(&mut self, t: Ps, category: Category) -> Ps {
        if t > self.now {
            self.account.charge(category, t - self.now, 0);
            self.now = t;
        }
        self.now
    }

    /// Busy processing for `d` picoseconds (rxptx's per-packet processing
    /// time), charged to [`Category::App`]; no instructions are counted.
    pub fn spin_ps(&mut self, d: Ps) -> Ps {
        self.account.charge(Category::App, d, 0);
        self.now += d;
        self.now
    }

    /// [`Self::spin_ps`] in nanoseconds.
    pub fn spin_ns(&mut self, ns: u64) -> Ps {
        self.spin_ps(ns * PS_PER_NS)
    }

    /// Counters beyond the cycle account, for results.
    pub fn result_json(&self) -> Value {
        json!({
            "account": self.account.result_json(),
            "work_units": self.work_units,
            "load_misses": self.load_misses,
            "store_misses": self.store_misses,
            "miss_windows": self.miss_windows,
            "stall_ps": self.stall_ps,
            "store_buffer_full": self.sb_full,
            "store_buffer_full_ps": self.sb_full_ps,
        })
    }
}

impl HasStats for Core {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        self.account.report_stats(s);
        s.count("work_units", self.work_units, "Work units executed");
        s.count("load_misses", self.load_misses, "Loads that missed the L1D");
        s.count("store_misses", self.store_misses, "Stores that missed the L1D (they wait in the store buffer)");
        s.count("miss_windows", self.miss_windows, "Groups of overlapped load misses, each charged its slowest miss");
        s.add("stall_ps", self.stall_ps as f64, "Picosecond", "Time stalled on load misses and a full store buffer");
        s.count("store_buffer_full", self.sb_full, "Stores that found the store buffer full");
        s.add("store_buffer_full_ps", self.sb_full_ps as f64, "Picosecond", "Time stalled on a full store buffer");
    }

    fn reset_stats(&mut self) {
        self.account.reset();
        self.work_units = 0;
        self.load_misses = 0;
        self.store_misses = 0;
        self.miss_windows = 0;
        self.stall_ps = 0;
        self.sb_full = 0;
        self.sb_full_ps = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::config::InOrderConfig;
    use crate::cpu::mem_port::{FixedMissMemory, IdealMemory};
    use crate::engine::time::PS_PER_NS;

    /// Addresses from here on miss; below it they hit.
    const MISS_BASE: u64 = 1 << 30;
    const LAT_PS: Ps = 100 * PS_PER_NS;

    /// 1 GHz, CPI 1: one instruction is exactly 1 ns, so expectations read off directly.
    fn simple(out_of_order: bool, rob_entries: u32, l1d_mshrs: u32) -> CoreConfig {
        CoreConfig {
            freq_hz: 1_000_000_000,
            issue_width: 4,
            base_cpi: 1.0,
            out_of_order,
            rob_entries,
            l1d_mshrs,
            sq_entries: 64,
            // gem5 Minor's store buffer and drain, at the same CPI as the out-of-order core.
            inorder: InOrderConfig { base_cpi: 1.0, ..Default::default() },
            cores: 1,
        }
    }

    /// `n` load misses, each after `spacing` instructions.
    fn spaced_misses(n: u64, spacing: u64) -> Work {
        let mut w = Work::new(Category::App);
        for i in 0..n {
            w.instr(spacing).read(MISS_BASE + i * 64);
        }
        w
    }

    fn stall_of(cfg: &CoreConfig, w: &Work) -> Ps {
        let mut core = Core::new(0, cfg).unwrap();
        let t = core.exec(w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS));
        t - w.instructions() * PS_PER_NS
    }

    #[test]
    fn pure_compute_is_instructions_times_cpi_over_frequency() {
        let mut cfg = CoreConfig { base_cpi: 0.5, ..CoreConfig::altra() };
        cfg.freq_hz = 2_000_000_000;
        let mut w = Work::new(Category::App);
        w.instr(1000).read(0x40).write(0x80); // L1 hits add nothing
        let mut core = Core::new(0, &cfg).unwrap();
        // 1000 × 0.5 cycles / 2 GHz = 250 ns exactly.
        assert_eq!(core.exec(&w, &mut IdealMemory), 250_000);
        cfg.freq_hz = 4_000_000_000;
        let mut fast = Core::new(0, &cfg).unwrap();
        assert_eq!(fast.exec(&w, &mut IdealMemory), 125_000);
        // 3.3 GHz: 500 cycles = 151 515.15… ps, truncated.
        cfg.freq_hz = 3_300_000_000;
        assert_eq!(Core::new(0, &cfg).unwrap().exec(&w, &mut IdealMemory), 151_515);
    }

    #[test]
    fn sub_picosecond_remainders_carry_without_drift() {
        // 3 GHz, CPI 1: one instruction is 333.33… ps; 3000 of them one at a time are exactly 1 µs.
        let cfg = CoreConfig { freq_hz: 3_000_000_000, base_cpi: 1.0, ..CoreConfig::altra() };
        let mut core = Core::new(0, &cfg).unwrap();
        let mut w = Work::new(Category::Rx);
        w.instr(1);
        assert_eq!(core.exec(&w, &mut IdealMemory), 333);
        assert_eq!(core.exec(&w, &mut IdealMemory), 666);
        assert_eq!(core.exec(&w, &mut IdealMemory), 1_000);
        for _ in 3..3000 {
            core.exec(&w, &mut IdealMemory);
        }
        assert_eq!(core.now(), 1_000_000);
        assert_eq!(core.account().time_ps(Category::Rx), 1_000_000);
        assert_eq!(core.account().total_cycles(), 3000.0);
        assert_eq!(core.cycles_to_ps(3), 1_000);
        assert_eq!(core.exec_cycles(Category::Tx, 3), 1_001_000);
    }

    #[test]
    fn in_order_stalls_for_every_miss_out_of_order_overlaps_them() {
        // 16 independent misses in 64 instructions (one every 4).
        let w = spaced_misses(16, 4);
        assert_eq!(stall_of(&simple(false, 128, 6), &w), 16 * LAT_PS);
        // OoO: ROB 128 reaches ceil(128/4) = 32 misses, so the 6 MSHRs bind:
        // windows of 6, 6, 4 → 3 × 100 ns (≈ 16 × 100 / 6 = 267 ns).
        let ooo = stall_of(&simple(true, 128, 6), &w);
        assert_eq!(ooo, 3 * LAT_PS);
        let ideal = 16 * LAT_PS / 6;
        assert!(ooo.abs_diff(ideal) * 100 / ideal < 15, "{ooo} vs {ideal}");
        // Total elapsed time includes the 64 ns of compute.
        let mut core = Core::new(0, &simple(true, 128, 6)).unwrap();
        assert_eq!(core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS)), 64 * PS_PER_NS + 3 * LAT_PS);
    }

    #[test]
    fn an_atomic_stalls_for_its_line_and_does_not_overlap_other_misses() {
        let ooo = simple(true, 128, 6);
        // A plain store that misses never stalls.
        let mut w = Work::new(Category::Cas);
        w.instr(4).write(MISS_BASE);
        assert_eq!(stall_of(&ooo, &w), 0);
        // A CAS on a missing line stalls for it, and two loads around it
        // cannot overlap it: three whole latencies instead of one window.
        let mut w = Work::new(Category::Cas);
        w.instr(2).read(MISS_BASE + 64).instr(2).atomic(MISS_BASE).instr(2).read(MISS_BASE + 128);
        assert_eq!(stall_of(&ooo, &w), 3 * LAT_PS);
        let mut w = Work::new(Category::Cas);
        w.instr(2).read(MISS_BASE + 64).instr(2).read(MISS_BASE).instr(2).read(MISS_BASE + 128);
        assert_eq!(stall_of(&ooo, &w), LAT_PS, "the same three as loads overlap");
    }

    #[test]
    fn a_dependent_load_waits_for_the_misses_before_it() {
        let ooo = simple(true, 128, 6);
        // Pointer chasing: a bucket, then the entry it names, then a
        // statistics store: two whole latencies, the store free.
        let mut w = Work::new(Category::App);
        w.instr(2).read(MISS_BASE).instr(2).read_after(MISS_BASE + 64).instr(2).write(MISS_BASE + 128);
        assert_eq!(stall_of(&ooo, &w), 2 * LAT_PS);
        // A dependent load with nothing missing before it starts a window
        // like any other, and later independent loads overlap it.
        let mut w = Work::new(Category::App);
        w.instr(2).read(0x40).read_after(MISS_BASE).instr(2).read(MISS_BASE + 64);
        assert_eq!(stall_of(&ooo, &w), LAT_PS);
        // In order it changes nothing: every miss stalls anyway.
        let mut w = Work::new(Category::App);
        w.read(MISS_BASE).read_after(MISS_BASE + 64);
        assert_eq!(stall_of(&simple(false, 128, 6), &w), 2 * LAT_PS);
    }

    #[test]
    fn misses_issue_when_the_core_reaches_them() {
        let w = spaced_misses(8, 4);
        let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
        Core::new(0, &simple(false, 128, 6)).unwrap().exec(&w, &mut mem);
        // In-order: miss i waits for the i misses before it.
        let issue: Vec<Ps> = mem.misses.iter().map(|m| m.0).collect();
        let expect: Vec<Ps> = (0..8).map(|i| i * LAT_PS + 4 * (i + 1) * PS_PER_NS).collect();
        assert_eq!(issue, expect);
        // OoO with 6 MSHRs: the first 6 go out together, the 7th after the first window.
        let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
        Core::new(0, &simple(true, 128, 6)).unwrap().exec(&w, &mut mem);
        let issue: Vec<Ps> = mem.misses.iter().map(|m| m.0).collect();
        let expect: Vec<Ps> = (0..8).map(|i| if i < 6 { 0 } else { LAT_PS } + 4 * (i + 1) * PS_PER_NS).collect();
        assert_eq!(issue, expect);
    }

    #[test]
    fn bigger_rob_or_more_mshrs_help_until_the_other_limit_binds() {
        // 16 misses 64 instructions apart: the ROB limits overlap to ceil(rob / 64).
        let w = spaced_misses(16, 64);
        let by_rob: Vec<Ps> = [64, 128, 256, 384, 1024, 4096].iter().map(|&r| stall_of(&simple(true, r, 6), &w)).collect();
        // MLP 1, 2, 4, 6 (= MSHRs), then the 6 MSHRs bind.
        assert_eq!(by_rob, vec![16 * LAT_PS, 8 * LAT_PS, 4 * LAT_PS, 3 * LAT_PS, 3 * LAT_PS, 3 * LAT_PS]);
        // 16 misses 4 apart with ROB 32: the ROB reaches 8 misses; MSHRs help until 8.
        let w = spaced_misses(16, 4);
        let by_mshr: Vec<Ps> = [1, 2, 4, 8, 16, 32].iter().map(|&m| stall_of(&simple(true, 32, m), &w)).collect();
        assert_eq!(by_mshr, vec![16 * LAT_PS, 8 * LAT_PS, 4 * LAT_PS, 2 * LAT_PS, 2 * LAT_PS, 2 * LAT_PS]);
    }

    #[test]
    fn misses_further_apart_than_the_rob_cannot_overlap() {
        let w = spaced_misses(16, 200);
        assert_eq!(stall_of(&simple(true, 128, 6), &w), 16 * LAT_PS);
        assert_eq!(stall_of(&simple(true, 128, 6), &w), stall_of(&simple(false, 128, 6), &w));
        // Exactly a ROB apart: still no overlap (the second is not in the ROB with the first).
        assert_eq!(stall_of(&simple(true, 128, 6), &spaced_misses(4, 128)), 4 * LAT_PS);
        assert_eq!(stall_of(&simple(true, 128, 6), &spaced_misses(4, 127)), 2 * LAT_PS);
    }

    #[test]
    fn stores_and_hits_do_not_stall() {
        let mut w = Work::new(Category::Copy);
        w.instr(10).write(MISS_BASE).write(MISS_BASE + 64).read(0x40).instr(10);
        for cfg in [simple(false, 128, 6), simple(true, 128, 6)] {
            let mut core = Core::new(3, &cfg).unwrap();
            let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
            assert_eq!(core.exec(&w, &mut mem), 20 * PS_PER_NS);
            assert_eq!(mem.misses.len(), 2, "the memory system still sees the stores");
            assert_eq!(core.result_json()["store_misses"], 2);
            assert_eq!(core.result_json()["load_misses"], 0);
        }
    }

    #[test]
    fn a_full_store_buffer_stalls_until_its_oldest_store_drains() {
        // Eight store misses one instruction apart. In order (gem5 Minor's
        // 5-entry buffer, 2 accesses in memory): they begin to drain two at
        // a time, at 1, 2, 101, 102, 201 ns …; the 6th waits for the 1st
        // (101 ns, 95 ns of stall), the 7th finds the 2nd just drained
        // (102 ns), the 8th waits for the 3rd (201 ns, 98 ns more).
        let mut w = Work::new(Category::Tx);
        for i in 0..8 {
            w.instr(1).write(MISS_BASE + i * 64);
        }
        let mut core = Core::new(0, &simple(false, 128, 6)).unwrap();
        let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
        assert_eq!(core.exec(&w, &mut mem), (8 + 95 + 98) * PS_PER_NS);
        let r = core.result_json();
        assert_eq!((r["store_misses"].as_u64(), r["store_buffer_full"].as_u64()), (Some(8), Some(2)));
        assert_eq!(r["store_buffer_full_ps"].as_u64(), Some(193 * PS_PER_NS));
        // The buffer drains on its own time: the next unit, 400 ns later, finds it empty.
        w.reset(Category::Tx).instr(400);
        core.exec(&w, &mut mem);
        let mut one = Work::new(Category::Tx);
        one.write(MISS_BASE + 4096);
        let before = core.now();
        assert_eq!(core.exec(&one, &mut mem), before, "an empty buffer takes a store at once");
        // Out of order (64 entries): the same eight never wait.
        assert_eq!(stall_of(&simple(true, 128, 6), &w_of_stores(8)), 0);
        // A 4-entry store queue out of order: the 5th waits for the 1st.
        let small = CoreConfig { sq_entries: 4, ..simple(true, 128, 6) };
        assert_eq!(stall_of(&small, &w_of_stores(5)), 96 * PS_PER_NS);
    }

    fn w_of_stores(n: u64) -> Work {
        let mut w = Work::new(Category::Tx);
        for i in 0..n {
            w.instr(1).write(MISS_BASE + i * 64);
        }
        w
    }

    #[test]
    fn store_hits_behind_a_miss_take_buffer_entries() {
        // In order: a miss at 1 ns (drains at 101), then hits; they drain
        // behind it, so the 6th store (the 5th hit, at 6 ns) waits 95 ns.
        let mut w = Work::new(Category::Tx);
        w.instr(1).write(MISS_BASE);
        for _ in 0..5 {
            w.instr(1).write(0x40);
        }
        assert_eq!(stall_of(&simple(false, 128, 6), &w), 95 * PS_PER_NS);
        // Four hits fit beside the miss.
        let mut w = Work::new(Category::Tx);
        w.instr(1).write(MISS_BASE);
        for _ in 0..4 {
            w.instr(1).write(0x40);
        }
        assert_eq!(stall_of(&simple(false, 128, 6), &w), 0);
    }

    #[test]
    fn a_full_store_queue_waits_after_the_load_misses_before_it() {
        // Out of order, 2 store-queue entries: a load miss opens a window at
        // 1 ns; stores miss at 2 and 3 ns (drained at 102, 103); the third
        // store, at 4 ns, finds the queue full and waits 98 ns for the 1st,
        // while the load returns: the window is left 2 ns, one latency of
        // stall in all.
        let cfg = CoreConfig { sq_entries: 2, ..simple(true, 128, 6) };
        let mut w = Work::new(Category::App);
        w.instr(1).read(MISS_BASE).instr(1).write(MISS_BASE + 64).instr(1).write(MISS_BASE + 128).instr(1).write(MISS_BASE + 192);
        let mut core = Core::new(0, &cfg).unwrap();
        assert_eq!(core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS)), (4 + 100) * PS_PER_NS);
        let r = core.result_json();
        assert_eq!((r["store_buffer_full"].as_u64(), r["store_buffer_full_ps"].as_u64()), (Some(1), Some(98 * PS_PER_NS)));
        // In order the load blocks first (100 ns); the stores then miss at
        // 102, 103 and 104 ns, and the third waits 98 ns for the first.
        let minor = CoreConfig { inorder: InOrderConfig { store_buffer_entries: 2, ..simple(false, 128, 6).inorder }, ..simple(false, 128, 6) };
        assert_eq!(stall_of(&minor, &w), (100 + 98) * PS_PER_NS);
    }

    #[test]
    fn cycles_land_in_categories_and_sum_to_elapsed() {
        let cfg = CoreConfig { freq_hz: 2_000_000_000, base_cpi: 1.0, ..CoreConfig::altra() }; // 500 ps/cycle
        let mut core = Core::new(0, &cfg).unwrap();
        let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
        let mut w = Work::with_capacity(Category::Rx, 8);
        w.instr(70).read(MISS_BASE); // 35 ns + 100 ns = 270 cycles
        core.exec(&w, &mut mem);
        w.reset(Category::Tx).instr(40); // 40 cycles
        core.exec(&w, &mut mem);
        w.reset(Category::Mempool).instr(24); // 24 cycles
        core.exec(&w, &mut mem);
        core.empty_poll(10, 0x40, &mut mem); // 10 cycles idle
        core.spin_ns(50); // 100 cycles app
        let before = core.now();
        core.idle_until(before + 25_000); // 50 cycles idle
        assert_eq!(core.idle_until(0), before + 25_000, "idle_until never goes back");
        let a = core.account();
        assert_eq!(a.cycles(Category::Rx), 270.0);
        assert_eq!(a.cycles(Category::Tx), 40.0);
        assert_eq!(a.cycles(Category::Mempool), 24.0);
        assert_eq!(a.cycles(Category::App), 100.0);
        assert_eq!(a.cycles(Category::Idle), 60.0);
        assert_eq!(a.instructions(Category::Rx), 70);
        assert_eq!(a.total_ps(), core.now());
        assert_eq!(a.total_cycles(), core.ps_to_cycles(core.now()));
        let cpp = a.cycles_per_packet(2);
        assert_eq!(cpp.get(Category::Rx), 135.0);
        assert_eq!(cpp.total, 247.0);
        let mut v = vec![];
        core.report_stats(&mut StatSink::new(&mut v));
        assert!(v.iter().any(|s| s.name == "cycles.rx" && s.value.as_f64() == 270.0));
        core.reset_stats();
        assert_eq!(core.account().total_ps(), 0);
        assert_eq!(core.result_json()["load_misses"], 0);
        assert_eq!(core.now(), before + 25_000, "reset clears counters, not time");
    }

    /// Touch every byte of a frame: 16 instructions per 64 B line (eight 8 B
    /// loads and adds), every line a DRAM miss (80 ns, params.md §5).
    fn touch_time(out_of_order: bool, frame_bytes: u64) -> Ps {
        let mut cfg = CoreConfig::altra();
        cfg.out_of_order = out_of_order;
        let mut core = Core::new(0, &cfg).unwrap();
        let mut w = Work::new(Category::App);
        w.read_lines(MISS_BASE, frame_bytes, 16);
        core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, 80 * PS_PER_NS))
    }

    #[test]
    fn reading_every_byte_of_a_big_frame_favours_out_of_order() {
        // 1518 B = 24 lines: in-order 24 × 80 ns; OoO overlaps min(6 MSHRs, ceil(128/16)) = 6 → 4 × 80 ns.
        let (io, ooo) = (touch_time(false, 1518), touch_time(true, 1518));
        let compute = 24 * 16 * 1_000 / 6; // 384 instr × 0.5 cycles at 3 GHz, ps
        // In order at Minor's estimated CPI of 1.0: twice the compute.
        assert_eq!(io, 2 * compute + 24 * 80 * PS_PER_NS);
        assert_eq!(ooo, compute + 4 * 80 * PS_PER_NS);
        assert!(io as f64 / ooo as f64 > 4.0, "OoO only {:.2}× faster", io as f64 / ooo as f64);
        // 64 B = 1 line: nothing to overlap.
        let (io, ooo) = (touch_time(false, 64), touch_time(true, 64));
        assert!((io as f64 / ooo as f64) < 1.1);
    }

    #[test]
    fn invalid_config_is_refused() {
        let bad = CoreConfig { l1d_mshrs: 0, ..CoreConfig::altra() };
        assert!(Core::new(0, &bad).unwrap_err().to_string().starts_with("cpu.l1d_mshrs"));
    }

    /// Speed of `exec` for a 3-access all-L1-hit work unit. Run with
    /// `cargo test --release -p hostsim-core cpu::core::tests::exec_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn exec_speed() {
        let n = 20_000_000u64;
        let mut core = Core::new(0, &CoreConfig::altra()).unwrap();
        let mut w = Work::with_capacity(Category::Rx, 4);
        w.instr(20).read(0x40).instr(10).write(0x1000).read(0x2000);
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            core.exec(std::hint::black_box(&w), &mut IdealMemory);
        }
        let exec_ns = t0.elapsed().as_nanos() as f64 / n as f64;
        let mut mem = FixedMissMemory::new(u64::MAX, LAT_PS);
        let t0 = std::time::Instant::now();
        for i in 0..n {
            w.reset(Category::Rx).instr(20).read(i & 0xfff).instr(10).write(0x1000 + (i & 0xff)).read(0x2000);
            core.exec(std::hint::black_box(&w), &mut mem);
        }
        let built_ns = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("exec of a 3-access all-L1-hit unit: {exec_ns:.1} ns; with the builder refilling it each time: {built_ns:.1} ns");
        assert!(core.now() > 0);
    }
}
