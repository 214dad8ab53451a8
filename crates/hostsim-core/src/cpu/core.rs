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
//! L1D hits cost nothing beyond the CPI, except to a load that depends on
//! them: a dependent load ([`Access::dependent`]) issues no earlier than
//! the last load before it in the unit has its data (that load's issue time
//! plus its latency; an L1D hit's is the L1D's load-to-use latency), so a
//! pointer chase through the L1D costs the L1D's latency per load, as
//! lmbench's `lat_mem_rd` measures it (the wait is `dependent_wait_ps`).
//! Load misses (any access the memory
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
//! A unit that names its code ([`Work::code`]) first asks the memory
//! system for it: the front end stalls, before any of the unit's
//! instructions issue, for every instruction line the L1I misses, one after
//! the other (Eyerman et al.'s interval model charges an I-cache miss its
//! latency; no instruction prefetch here, so this is an upper bound).
//!
//! A unit may stop part-way ([`Core::exec_until`], `sim.core_horizon`):
//! before an access whose issue time lies past a horizon (the earliest
//! time anything else may touch memory), the walk keeps its state and the
//! accesses left, and [`Core::resume`] goes on from there once the event
//! loop has caught up. Every access is then made after the events before
//! its issue time (a device may still have booked memory for later times
//! at its event); the unit's time and charges are the same as if it had
//! run at once on the memory system as it finds it. Nothing else may run
//! on the core while a unit is pending.
//!
//! Every picosecond is charged to the work's [`Category`] in the core's
//! [`CycleAccount`]; idle time and spinning are charged too, so the account
//! sums to the core's elapsed time.
//!
//! Simplified away: overlap of compute with miss latency (the ROB fill time
//! before a stall), instruction prefetch, TLB misses, branch mispredictions
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
use crate::engine::Ticket;

/// Picoseconds per milli-cycle numerator: ps = milli_cycles × 10⁹ / f.
const PS_NUM_PER_MILLI_CYCLE: u64 = 1_000_000_000;

/// Where a unit's walk over its accesses stands: the stall so far and the
/// open miss window (its size, first miss position and slowest latency).
#[derive(Debug, Clone, Copy, Default)]
struct Walk {
    stall: Ps,
    win_n: u32,
    win_first: u64,
    win_max: Ps,
    /// When the last load's data is there (its issue plus its latency; 0
    /// for a load whose latency the memory's read queue decides).
    ready: Ps,
}

/// A unit stopped before an access whose issue time lay past the horizon.
#[derive(Debug, Clone)]
struct Pending {
    category: Category,
    instructions: u64,
    start: Ps,
    walk: Walk,
    /// The stopped access's issue time, and the accesses from it on.
    at: Ps,
    rest: Vec<Access>,
}

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
    fetch_stall_ps: Ps,
    dependent_wait_ps: Ps,
    mmio_writes: u64,
    pending: Option<Pending>,
    /// A pending unit's buffer of accesses, kept for the next one.
    spare: Vec<Access>,
    /// Units that stopped at a horizon, and the stops (a unit that
    /// stopped before a statistics reset counts its later stops only).
    suspended_units: u64,
    suspensions: u64,
    /// The open window's load misses whose reads wait in the memory's
    /// read queue: their tickets and issue times.
    waiting: Vec<(Ticket, Ps)>,
    /// Stops to wait for such reads, and the time waited for them beyond
    /// the rest of the window (their share of the stall).
    memory_waits: u64,
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
            fetch_stall_ps: 0,
            dependent_wait_ps: 0,
            mmio_writes: 0,
            pending: None,
            spare: Vec::new(),
            suspended_units: 0,
            suspensions: 0,
            waiting: Vec::new(),
            memory_waits: 0,
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
        self.fetch(work, mem);
        self.run(work.category(), work.instructions(), work.accesses(), mem)
    }

    /// The front end waits for each missing instruction line of the unit's
    /// code before its instructions issue (no instruction prefetch).
    #[inline]
    fn fetch<M: MemPort>(&mut self, work: &Work, mem: &mut M) {
        debug_assert!(self.pending.is_none(), "core {}: a unit is pending", self.id);
        if let Some(code) = work.code_region() {
            let fe = mem.fetch_code(self.id, code, self.now);
            if fe > 0 {
                self.now += fe;
                self.account.charge(work.category(), fe, 0);
                self.fetch_stall_ps += fe;
            }
        }
    }

    /// [`exec`](Self::exec), stopping before the first access whose issue
    /// time is past `horizon`. Returns true if the unit ran to its end;
    /// otherwise it is pending ([`pending_at`](Self::pending_at)) until
    /// [`resume`](Self::resume) finishes it.
    pub fn exec_until<M: MemPort>(&mut self, work: &Work, mem: &mut M, horizon: Ps) -> bool {
        self.fetch(work, mem);
        let (category, instructions, accesses) = (work.category(), work.instructions(), work.accesses());
        let start = self.now;
        let mut w = Walk::default();
        match self.walk::<M, true>(start, &mut w, accesses, mem, horizon) {
            None => {
                self.finish(category, instructions, start, w.stall);
                true
            }
            Some((i, at)) => {
                self.suspended_units += 1;
                self.suspensions += 1;
                let mut rest = std::mem::take(&mut self.spare);
                rest.clear();
                rest.extend_from_slice(&accesses[i..]);
                self.pending = Some(Pending { category, instructions, start, walk: w, at, rest });
                false
            }
        }
    }

    /// Goes on with the pending unit up to `horizon`; true once it has
    /// ended (or if none was pending).
    pub fn resume<M: MemPort>(&mut self, mem: &mut M, horizon: Ps) -> bool {
        let Some(mut p) = self.pending.take() else { return true };
        match self.walk::<M, true>(p.start, &mut p.walk, &p.rest, mem, horizon) {
            None => {
                self.finish(p.category, p.instructions, p.start, p.walk.stall);
                self.spare = p.rest;
                true
            }
            Some((i, at)) => {
                self.suspensions += 1;
                p.rest.drain(..i);
                p.at = at;
                self.pending = Some(p);
                false
            }
        }
    }

    /// The issue time of the pending unit's next access, if a unit is
    /// pending; `Ps::MAX` while it waits for loads queued at the memory,
    /// until [`wake`](Self::wake).
    #[inline]
    pub fn pending_at(&self) -> Option<Ps> {
        self.pending.as_ref().map(|p| p.at)
    }

    /// The memory has served queued reads at `now`: a unit waiting for its
    /// loads may go on from `now` (true if one was waiting).
    pub fn wake(&mut self, now: Ps) -> bool {
        match &mut self.pending {
            Some(p) if p.at == Ps::MAX => {
                p.at = now;
                true
            }
            _ => false,
        }
    }

    /// Executes `instructions` instructions making `accesses` (positions as in
    /// [`Work`]), charged to `category`; returns the new time.
    pub fn run<M: MemPort>(&mut self, category: Category, instructions: u64, accesses: &[Access], mem: &mut M) -> Ps {
        debug_assert!(self.pending.is_none(), "core {}: a unit is pending", self.id);
        let start = self.now;
        let mut w = Walk::default();
        self.walk::<M, false>(start, &mut w, accesses, mem, Ps::MAX);
        self.finish(category, instructions, start, w.stall)
    }

    /// A unit's end: compute time on top of its stall, charged to `category`.
    #[inline]
    fn finish(&mut self, category: Category, instructions: u64, start: Ps, stall: Ps) -> Ps {
        let compute = self.compute_ps(instructions.saturating_mul(self.cpi_milli));
        let elapsed = compute + stall;
        self.now = start + elapsed;
        self.account.charge(category, elapsed, instructions);
        self.work_units += 1;
        self.stall_ps += stall;
        self.now
    }

    /// Issues the accesses (see the module header), adding to the walk's
    /// stall and closing its last window at the end. With `HORIZON`, stops
    /// before an access whose issue time is past `horizon`: returns its
    /// index and issue time, the walk kept as it stands before it.
    #[inline]
    fn walk<M: MemPort, const HORIZON: bool>(&mut self, start: Ps, w: &mut Walk, accesses: &[Access], mem: &mut M, horizon: Ps) -> Option<(usize, Ps)> {
        let Walk { mut stall, mut win_n, mut win_first, mut win_max, mut ready } = *w;
        // Before the open window's slowest miss is needed: its reads still
        // in the memory's read queue must have been served, or the walk
        // stops here until the memory's next pick (an access made already
        // is not made again: each stop is before one).
        macro_rules! settle {
            ($at:expr) => {
                if HORIZON && !self.waiting.is_empty() && !self.settle(mem, &mut win_max, horizon == Ps::MAX) {
                    self.memory_waits += 1;
                    *w = Walk { stall, win_n, win_first, win_max, ready };
                    return Some(($at, Ps::MAX));
                }
            };
        }
        let mut it = accesses.iter();
        while let Some(a) = it.next() {
            let here = accesses.len() - it.len() - 1;
            if a.atomic {
                // A locked instruction: the misses before it complete first,
                // then the core waits for the line itself.
                if win_n > 0 {
                    settle!(here);
                    stall += win_max;
                    self.miss_windows += 1;
                    win_n = 0;
                    win_max = 0;
                }
                let t = start + stall + self.issue_offset_ps(a.at_instr);
                if HORIZON && t > horizon {
                    *w = Walk { stall, win_n, win_first, win_max, ready };
                    return Some((accesses.len() - it.len() - 1, t));
                }
                let cost = mem.access(self.id, a.addr, true, t);
                ready = t + cost.latency_ps;
                if !cost.l1_hit {
                    self.store_misses += 1;
                    stall += cost.latency_ps;
                    self.miss_windows += 1;
                }
                continue;
            }
            if win_n > 0 && (a.dependent || win_n >= self.window_misses || a.at_instr.saturating_sub(win_first) >= self.rob_reach) {
                settle!(here);
                stall += win_max;
                self.miss_windows += 1;
                win_n = 0;
                win_max = 0;
            }
            let mut t = start + stall + self.issue_offset_ps(a.at_instr);
            if a.dependent && ready > t {
                // Its address is the last load's data: it issues once that is there.
                self.dependent_wait_ps += ready - t;
                stall += ready - t;
                t = ready;
            }
            if HORIZON && t > horizon {
                *w = Walk { stall, win_n, win_first, win_max, ready };
                return Some((accesses.len() - it.len() - 1, t));
            }
            if HORIZON && a.write && self.sb_oldest() > t {
                settle!(here); // the store will wait for the buffer, the window's misses meanwhile
            }
            let (cost, ticket) = if HORIZON && !a.write { mem.load_later(self.id, a.addr, t) } else { (mem.access(self.id, a.addr, a.write, t), None) };
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
                self.sb_push(t, if cost.l1_hit { None } else { Some((cost.latency_ps, cost.queued_ps)) });
                continue;
            }
            ready = if ticket.is_some() { 0 } else { t + cost.latency_ps };
            if cost.l1_hit {
                continue;
            }
            self.load_misses += 1;
            if win_n == 0 {
                win_first = a.at_instr;
            }
            win_n += 1;
            match ticket {
                Some(k) => self.waiting.push((k, t)),
                None => win_max = win_max.max(cost.latency_ps),
            }
        }
        if win_n > 0 {
            settle!(accesses.len());
            stall += win_max;
            self.miss_windows += 1;
        }
        *w = Walk { stall, win_n: 0, win_first, win_max: 0, ready };
        None
    }

    /// Takes the completions of the window's queued reads that the memory
    /// has served into `win_max` (each its completion less its issue);
    /// true once none waits. With `force` the memory serves them now.
    #[inline(never)]
    fn settle<M: MemPort>(&mut self, mem: &mut M, win_max: &mut Ps, force: bool) -> bool {
        self.waiting.retain(|&(ticket, issued)| match mem.take_read(ticket, force) {
            Some(done) => {
                *win_max = (*win_max).max(done.saturating_sub(issued));
                false
            }
            None => true,
        });
        self.waiting.is_empty()
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

    /// A store enters the buffer at `t`: a miss (`Some((latency, queued))`,
    /// booked at `t`) begins to drain once fewer than `sb_drains` stores
    /// before it are draining; the buffer drains in program order. A miss
    /// that begins at `b` later than `t` finds the queue it was booked
    /// behind (`queued` of its latency) that much further along: it ends
    /// no earlier than booked, and `latency - queued` after `b`.
    #[inline]
    fn sb_push(&mut self, t: Ps, miss: Option<(Ps, Ps)>) {
        let done = match miss {
            Some((latency, queued)) => {
                let begins = self.sb_done(self.sb_drains);
                (t + latency).max(begins + (latency - queued.min(latency)))
            }
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

    /// An uncached store to a device register (a doorbell): the core
    /// stalls `mmio_write_ps`, charged to `category`; returns when the
    /// write leaves the core.
    pub fn mmio_write(&mut self, category: Category) -> Ps {
        let d = self.cfg.mmio_write_ps;
        self.mmio_writes += 1;
        self.account.charge(category, d, 0);
        self.now += d;
        self.now
    }

    /// Waits (idle) until the store buffer has drained (a fence).
    pub fn drain_stores(&mut self) -> Ps {
        self.idle_until(self.sb_last)
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
            "fetch_stall_ps": self.fetch_stall_ps,
            "dependent_wait_ps": self.dependent_wait_ps,
            "mmio_writes": self.mmio_writes,
            "suspended_units": self.suspended_units,
            "suspensions": self.suspensions,
            "memory_waits": self.memory_waits,
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
        s.add("fetch_stall_ps", self.fetch_stall_ps as f64, "Picosecond", "Time the front end stalled on instruction (L1I) misses");
        s.count("mmio_writes", self.mmio_writes, "Uncached stores to device registers (doorbells), each stalling cpu.mmio_write_ps");
        s.add("dependent_wait_ps", self.dependent_wait_ps as f64, "Picosecond", "Time dependent loads waited for the data of the load before them (its L1 load-to-use latency)");
        s.count("suspended_units", self.suspended_units, "Work units that stopped at a horizon (sim.core_horizon)");
        s.count("suspensions", self.suspensions, "Stops of work units at a horizon (sim.core_horizon)");
        s.count("memory_waits", self.memory_waits, "Stops of work units to wait for loads queued at the DRAM controller (sim.core_horizon)");
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
        self.fetch_stall_ps = 0;
        self.dependent_wait_ps = 0;
        self.mmio_writes = 0;
        self.suspended_units = 0;
        self.suspensions = 0;
        self.memory_waits = 0;
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
