//! Banks, rows and DDR timing behind each channel's data bus.
//!
//! A line is placed by the address map ([`AddressMap`](super::ddr::AddressMap))
//! on a channel, rank, bank and row. Each bank keeps its row open after an
//! access (open-page policy), so a request finds one of three cases:
//! * **row hit**: the row is open; READ/WRITE at once;
//! * **row miss**: the bank is precharged (never used, or closed by a
//!   refresh); ACTIVATE, wait tRCD, then READ/WRITE;
//! * **row conflict**: another row is open; PRECHARGE (not before tRAS
//!   after its ACTIVATE, tRTP after its last read, tWR after its last
//!   write data), wait tRP, ACTIVATE, wait tRCD, then READ/WRITE.
//!
//! The data follow the column command by CL (reads) or CWL (writes) and
//! occupy the channel's data bus for one burst (64 B / channel bandwidth,
//! tCCD_S). Shared resources are [`Timeline`]s booked into gaps, as the
//! data bus always was: column commands of one bank group are tCCD_L apart;
//! ACTIVATEs of one rank are max(tRRD, tFAW / 4) apart (the four-activate
//! window as an even spacing); the data bus carries one burst at a time,
//! and a rank's bursts keep the read/write turnaround
//! ([`turnaround`](super::turnaround): a READ tWTR after the end of write
//! data, write data 2 tCK after the end of read data). A request's start
//! is moved until all of them fit at once. Every rank is refreshed for
//! tRFC every tREFI, the ranks staggered evenly over the interval (none at
//! time 0); a command cannot start inside a refresh, and a refresh closes
//! the rank's rows.
//!
//! Latency: the unloaded latency of a row conflict (precharge, activate,
//! read, one burst) is the configured idle latency, which is what a random
//! pointer chase over a large buffer measures; what remains of it after the
//! DRAM timing is the controller and interconnect, a fixed part every
//! request pays. So a row hit costs tRP + tRCD less than the idle latency.
//!
//! Simplified, as the model stands:
//! * no scheduler of its own: requests are served first come, first served
//!   into the gaps (at the bank in request order, below; on the shared
//!   activate, column and bus timelines in booking order). A read booked
//!   when it is made cannot be passed by a row hit that comes later, as
//!   FR-FCFS would: its latency was returned. Reads that wait in the
//!   controller's read queue ([`read_queue`](super::read_queue), a held
//!   core's loads) are picked first-ready first and booked here when
//!   picked (docs/reference/dram-pcie.md, "FR-FCFS: the read queue");
//! * a bank remembers its last [`BANK_HISTORY`] accesses by start time.
//!   A request is served on the row and readiness its own time finds, in
//!   the first stretch between two accesses where it is done with the bank
//!   before the next one starts (or after the last). Accesses requested
//!   after it do not hold it back, though they were booked first (a core
//!   books a work unit's misses when it starts the unit, ahead of the
//!   devices): the bank serves requests in request order. The accesses
//!   after it keep the row case they were booked with: one from before
//!   them that opens another row does not turn their hits into conflicts
//!   (their latencies were returned); such passed hits are counted
//!   (`mem.dram.passed_hits`, each once; a passed miss, which in request
//!   order would also have been a conflict, is not counted). A request
//!   that starts after later-requested accesses it did not wait for is
//!   served on the state before them, and the accesses after it see its
//!   state, not theirs. An access older than the history is known only by
//!   the state it left: a request from before it still waits for that
//!   state, even if the access was requested after the request. The
//!   rank's activates, the bank group's column commands and the data bus
//!   are still booked in booking order.
//!   Before stop 33 a bank kept only the state of the access booked last;
//!   before stop 47 a request that fitted in no stretch before accesses
//!   requested after it went after them (docs/reference/dram-pcie.md);
//! * writes are booked as they come when the controller's write queue
//!   is off (`write_queue.rs`, on by default); no rank-to-rank
//!   switch (tCS); tRRD_L is not
//!   separate from tRRD;
//! * refresh is all-bank (REFab) at fixed times, never postponed.

use std::collections::VecDeque;

use crate::engine::time::Ps;
use crate::engine::timeline::Timeline;

use super::ddr::{AddressMap, DdrTiming, Place};
use super::turnaround::{Kind, Turnaround};

/// Accesses per bank remembered by start time: a request from before all
/// of them is served on the state before the oldest (a simulation setting:
/// cores run ahead of the devices by one work unit, a few accesses per bank).
const BANK_HISTORY: usize = 16;
/// No row open.
const CLOSED: u64 = u64::MAX;
/// Fits tried before a request goes after everything booked.
const MAX_TRIES: u32 = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowCase {
    Hit,
    Miss,
    Conflict,
}

/// A bank's row and readiness after an access.
#[derive(Debug, Clone, Copy)]
struct BankState {
    open_row: u64,
    /// Refresh epoch of the last access (a later refresh closed the row).
    epoch: u64,
    /// Earliest column command to the open row (ACTIVATE + tRCD).
    cas_ok: Ps,
    /// Earliest PRECHARGE.
    pre_ok: Ps,
    /// When the access that left this state was requested.
    req: Ps,
    /// It was booked as a row hit, and no request has been counted passing
    /// it with another row (`passed_hits`).
    hit: bool,
}

impl Default for BankState {
    fn default() -> Self {
        BankState { open_row: CLOSED, epoch: 0, cas_ok: 0, pre_ok: 0, req: 0, hit: false }
    }
}

/// One request's place and timing, for [`Banks::fit`].
struct Req {
    row: u64,
    /// Rank (channel × ranks + rank) and bank group indices.
    ri: usize,
    gi: usize,
    channel: usize,
    kind: Kind,
    cas_to_data: Ps,
    burst: Ps,
}

/// Where a request fits: its first command's time, its row case, the
/// precharge and activate delays it pays, and the refresh epoch.
#[derive(Debug, Clone, Copy)]
struct Fit {
    s: Ps,
    case: RowCase,
    pre: Ps,
    rcd: Ps,
    epoch: u64,
}

/// A bank's accesses by start time: the state after each of the last
/// [`BANK_HISTORY`] to start, and the state before the first of them. A
/// request is served on the state its time finds, in the first stretch
/// between two accesses requested no later than it that it fits into
/// (done with the bank before the next one starts), or after the last.
#[derive(Debug, Clone, Default)]
struct Bank {
    before: BankState,
    /// (start of the access's first command, the state after it), by start.
    after: VecDeque<(Ps, BankState)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BankCounters {
    pub row_hits: u64,
    pub row_misses: u64,
    pub row_conflicts: u64,
    pub activates: u64,
    /// Summed time requests waited for a refresh to end (ps).
    pub refresh_wait_ps: u64,
    /// Summed time a read/write turnaround (tWTR, tRTW) pushed requests'
    /// data (ps; each push counted, as `refresh_wait_ps`).
    pub turnaround_wait_ps: u64,
    /// Data bursts whose rank's previous burst went the other way.
    pub rw_switches: u64,
    /// Accesses booked as row hits that an access requested before them,
    /// but booked after them, went ahead of with another row: in request
    /// order they would have been row conflicts; they keep the latency
    /// they were given.
    pub passed_hits: u64,
}

#[derive(Debug, Clone)]
pub struct Banks {
    map: AddressMap,
    channels: u64,
    ranks: u64,
    banks: u64,
    groups: u64,
    row_lines: u64,
    t: DdrTiming,
    act_slot: Ps,
    bank: Vec<Bank>,
    /// Column commands per (channel, rank, bank group).
    group_cas: Vec<Timeline>,
    /// ACTIVATEs per (channel, rank).
    rank_act: Vec<Timeline>,
    /// Each channel's bursts, for the read/write turnaround.
    turn: Turnaround,
    /// Per (channel, rank): the refresh window `t` fell in last time (its
    /// start and epoch), so most lookups need no division.
    refresh_at: Vec<(Ps, u64)>,
    /// Shifts for the divisors that are powers of two (`NO_SHIFT` if not):
    /// channels, row lines, banks, ranks.
    shifts: [u32; 4],
    counters: BankCounters,
}

const NO_SHIFT: u32 = u32::MAX;

/// `x / d` and `x % d`, by a shift when `d` is a power of two.
#[inline(always)]
fn divmod(x: u64, d: u64, shift: u32) -> (u64, u64) {
    if shift != NO_SHIFT {
        (x >> shift, x & (d - 1))
    } else {
        (x / d, x % d)
    }
}

fn shift_of(d: u64) -> u32 {
    if d.is_power_of_two() {
        d.trailing_zeros()
    } else {
        NO_SHIFT
    }
}

impl Banks {
    /// From a validated config.
    pub fn new(
        map: AddressMap,
        channels: u32,
        ranks: u32,
        bank_groups: u32,
        banks_per_group: u32,
        row_bytes: u32,
        t: &DdrTiming,
    ) -> Banks {
        let (channels, ranks, groups) = (channels as u64, ranks as u64, bank_groups as u64);
        let banks = groups * banks_per_group as u64;
        let ranks_total = (channels * ranks) as usize;
        let row_lines = (row_bytes as u64 / super::cache::LINE_BYTES).max(1);
        let act_slot = t.t_rrd_ps.max(t.t_faw_ps.div_ceil(4));
        Banks {
            map,
            channels,
            ranks,
            banks,
            groups,
            row_lines,
            t: t.clone(),
            act_slot,
            bank: vec![Bank::default(); ranks_total * banks as usize],
            // Every booking of a timeline has the same length, so no gap
            // shorter than it is ever used.
            group_cas: vec![Timeline::with_min_gap(t.t_ccd_l_ps); ranks_total * groups as usize],
            rank_act: vec![Timeline::with_min_gap(act_slot); ranks_total],
            turn: Turnaround::new(channels as usize, t.t_wtr_s_ps, t.t_wtr_l_ps, t.t_rtw_ps, t.t_cl_ps),
            refresh_at: vec![(Ps::MAX, 0); ranks_total],
            shifts: [shift_of(channels), shift_of(row_lines), shift_of(banks), shift_of(ranks)],
            counters: BankCounters::default(),
        }
    }

    /// DRAM timing of a row conflict up to its data (tRP + tRCD + CL).
    pub fn conflict_ps(&self) -> Ps {
        self.t.t_rp_ps + self.t.t_rcd_ps + self.t.t_cl_ps
    }

    /// `t` moved past a refresh of rank `ri` if it falls inside one, and
    /// the refresh epoch it is in (refreshes started so far).
    #[inline]
    fn refresh(&mut self, ri: usize, t: Ps) -> (Ps, u64) {
        let (refi, rfc) = (self.t.t_refi_ps, self.t.t_rfc_ps);
        if rfc == 0 {
            return (t, 0);
        }
        let (mut start, mut epoch) = self.refresh_at[ri];
        if !(t >= start && t - start < refi) {
            let offset = (2 * ri as u64 + 1) * refi / (2 * self.channels * self.ranks);
            if t < offset {
                return (t, 0);
            }
            let k = (t - offset) / refi;
            (start, epoch) = (offset + k * refi, k + 1);
            self.refresh_at[ri] = (start, epoch);
        }
        let phase = t - start;
        if phase < rfc {
            (t + rfc - phase, epoch)
        } else {
            (t, epoch)
        }
    }

    /// Splits a line number (address / 64) by the address map, most
    /// significant field first (see [`AddressMap`]); shifts where a divisor
    /// is a power of two.
    #[inline]
    fn place(&self, line: u64) -> Place {
        let [sc, sl, sb, sr] = self.shifts;
        let (mut r, channel) = divmod(line, self.channels, sc);
        let (rank, bank);
        match self.map {
            AddressMap::RoRaBaCoCh => {
                r = divmod(r, self.row_lines, sl).0;
                let (q, b) = divmod(r, self.banks, sb);
                let (q, k) = divmod(q, self.ranks, sr);
                (bank, rank, r) = (b, k, q);
            }
            AddressMap::RoCoRaBaCh => {
                let (q, b) = divmod(r, self.banks, sb);
                let (q, k) = divmod(q, self.ranks, sr);
                (bank, rank, r) = (b, k, divmod(q, self.row_lines, sl).0);
            }
        }
        Place { channel: channel as usize, rank: rank as usize, bank: bank as usize, row: r }
    }

    /// The rank, bank and row of a line, as one key (a write queue groups
    /// its writes by it).
    pub(super) fn row_key(&self, line: u64) -> u64 {
        let p = self.place(line);
        ((p.row * self.ranks + p.rank as u64) * self.banks) + p.bank as u64
    }

    /// Would a request to `line` at `at` find its row open: the state the
    /// bank's accesses that start by `at` leave, the row not closed by a
    /// refresh since (a read queue's first-ready pick; nothing is booked).
    pub fn row_open(&mut self, line: u64, at: Ps) -> bool {
        let p = self.place(line);
        let ri = p.channel * self.ranks as usize + p.rank;
        let b = &self.bank[ri * self.banks as usize + p.bank];
        let k = b.after.partition_point(|e| e.0 <= at);
        let state = if k == 0 { b.before } else { b.after[k - 1].1 };
        state.open_row == p.row && self.refresh(ri, at).1 == state.epoch
    }

    /// Serves one line at `now` whose burst takes `burst` ps on the data
    /// bus `bus` of its channel; books every resource it uses. Returns the
    /// end of its data on the bus, the time it waited beyond its unloaded
    /// case (ps), and whether it went ahead of an access to its bank that
    /// was requested after it but booked before it (it starts before it, or
    /// did not wait for it).
    pub fn access(&mut self, line: u64, now: Ps, write: bool, bus: &mut Timeline, burst: Ps) -> (Ps, Ps, bool) {
        let p = self.place(line);
        let ri_us = p.channel * self.ranks as usize + p.rank;
        let ri = ri_us as u64;
        let bi = (ri * self.banks) as usize + p.bank;
        let gi = (ri * self.groups + p.bank as u64 % self.groups) as usize;
        let t = &self.t;
        let (t_rcd, t_ras, t_rtp, t_wr, ccd) = (t.t_rcd_ps, t.t_ras_ps, t.t_rtp_ps, t.t_wr_ps, t.t_ccd_l_ps);
        let cas_to_data = if write { t.t_cwl_ps } else { t.t_cl_ps };
        let act_slot = self.act_slot;
        let r = Req { row: p.row, ri: ri_us, gi, channel: p.channel, kind: Kind { rank: p.rank as u32, group: (p.bank as u64 % self.groups) as u32, write }, cas_to_data, burst };

        // The stretch `now` falls in, then later ones, until the request is
        // done with the bank (its precharge allowed again) before the next
        // access starts, or there is no next access. Accesses requested
        // after it do not hold it back, so a stretch runs from one access
        // requested no later than it to the next such one. (An access that
        // starts before `now` was requested before it.)
        let mut k = self.bank[bi].after.partition_point(|e| e.0 <= now);
        let (f, base) = loop {
            let b = &self.bank[bi];
            let (from, state) = if k == 0 { (now, b.before) } else { (now.max(b.after[k - 1].0), b.after[k - 1].1) };
            let j = (k..b.after.len()).find(|&i| b.after[i].1.req <= now);
            let next = j.map(|i| b.after[i].0);
            if let (Some(next), Some(j)) = (next, j) {
                // Skip a stretch too short for the request at best: a hit
                // at once, or an activate held tRAS (a row a refresh closed).
                let hit = from.max(state.cas_ok) + if write { cas_to_data + burst + t_wr } else { t_rtp };
                let open = from + t_ras;
                let best = if state.open_row == p.row { hit.min(open) } else { open };
                if best > next {
                    k = j + 1;
                    continue;
                }
            }
            let kept = self.counters;
            let f = self.fit(state, from, &r, bus);
            let (Some(next), Some(j)) = (next, j) else { break (f, state) };
            if self.release(f.case, f.s + f.pre, f.s + f.pre + f.rcd, write, burst) <= next {
                break (f, state);
            }
            self.counters = kept;
            k = j + 1;
        };
        let Fit { s, case, pre, rcd, epoch } = f;

        let act = s + pre;
        let c = act + rcd;
        if case != RowCase::Hit {
            self.rank_act[ri_us].advance(now);
            self.rank_act[ri_us].book(act, act_slot);
            self.counters.activates += 1;
        }
        self.group_cas[gi].advance(now);
        let c = self.group_cas[gi].book(c, ccd);
        bus.advance(now);
        let d = bus.book(c + cas_to_data, burst);
        let end = d + burst;
        if self.turn.book(p.channel, r.kind, d, burst, now) {
            self.counters.rw_switches += 1;
        }

        // The fit found every resource free where it put the request, so
        // the column command and the data are where the fit said.
        debug_assert_eq!(d, c + cas_to_data);
        let release = self.release(case, act, c, write, burst);
        let st = match case {
            RowCase::Hit => BankState { open_row: p.row, epoch, cas_ok: base.cas_ok, pre_ok: base.pre_ok.max(release), req: now, hit: true },
            _ => BankState { open_row: p.row, epoch, cas_ok: act + t_rcd, pre_ok: release, req: now, hit: false },
        };
        let b = &mut self.bank[bi];
        // By start: it may start after accesses requested after it that it
        // did not wait for (they were booked first).
        let at = b.after.partition_point(|e| e.0 <= s);
        let next = b.after.get(at).map(|e| e.1);
        let passing = next.is_some_and(|n| n.req > now) || b.after.range(k..at).any(|e| e.1.req > now);
        if next.is_some_and(|n| n.req > now && n.hit && n.open_row != p.row) {
            // Counted once: a later request that passes it again changes nothing more.
            self.counters.passed_hits += 1;
            b.after[at].1.hit = false;
        }
        b.after.insert(at, (s, st));
        if b.after.len() > BANK_HISTORY {
            b.before = b.after.pop_front().unwrap().1;
        }
        match case {
            RowCase::Hit => self.counters.row_hits += 1,
            RowCase::Miss => self.counters.row_misses += 1,
            RowCase::Conflict => self.counters.row_conflicts += 1,
        }
        (end, d - (now + pre + rcd + cas_to_data), passing)
    }

    /// When the bank may precharge after an access with its column command
    /// at `c` (and its ACTIVATE at `act` unless a hit): tRTP after a read,
    /// tWR after a write's data, tRAS after an ACTIVATE.
    #[inline]
    fn release(&self, case: RowCase, act: Ps, c: Ps, write: bool, burst: Ps) -> Ps {
        let t = &self.t;
        let free = if write { c + t.t_cwl_ps + burst + t.t_wr_ps } else { c + t.t_rtp_ps };
        if case == RowCase::Hit { free } else { free.max(act + t.t_ras_ps) }
    }

    /// The earliest start at or after `now` at which a request finding the
    /// bank in state `b` can issue its commands and put its data on the bus:
    /// the bank ready, the rank's activate spacing, the bank group's column
    /// spacing, the bus and the read/write turnaround all kept at once.
    fn fit(&mut self, b: BankState, now: Ps, r: &Req, bus: &Timeline) -> Fit {
        let (t_rp, t_rcd) = (self.t.t_rp_ps, self.t.t_rcd_ps);
        let (act_slot, cas_to_data) = (self.act_slot, r.cas_to_data);
        let mut s = now;
        let mut tries = 0;
        loop {
            tries += 1;
            let (s2, epoch) = self.refresh(r.ri, s);
            self.counters.refresh_wait_ps += s2 - s;
            s = s2;
            let case = if b.open_row == CLOSED || b.epoch != epoch {
                RowCase::Miss
            } else if b.open_row == r.row {
                RowCase::Hit
            } else {
                RowCase::Conflict
            };
            let pre = if case == RowCase::Conflict { t_rp } else { 0 };
            let rcd = if case == RowCase::Hit { 0 } else { t_rcd };
            if tries > MAX_TRIES {
                // A long backlog with many small gaps: after everything
                // booked so far, where every resource is free.
                let ready = (self.rank_act[r.ri].idle_from().saturating_sub(pre))
                    .max(self.group_cas[r.gi].idle_from().saturating_sub(pre + rcd))
                    .max(bus.idle_from().saturating_sub(pre + rcd + cas_to_data))
                    .max(self.turn.after_all(r.channel, r.kind).saturating_sub(pre + rcd + cas_to_data));
                if s < ready {
                    s = ready;
                    continue;
                }
                return Fit { s, case, pre, rcd, epoch };
            }
            let bank_ready = match case {
                RowCase::Hit => b.cas_ok,
                RowCase::Conflict => b.pre_ok,
                RowCase::Miss => 0,
            };
            if s < bank_ready {
                s = bank_ready;
                continue;
            }
            if case != RowCase::Hit {
                let a = self.rank_act[r.ri].fit(s + pre, act_slot);
                if a > s + pre {
                    s = a - pre;
                    continue;
                }
            }
            let c = s + pre + rcd;
            let c2 = self.group_cas[r.gi].fit(c, self.t.t_ccd_l_ps);
            if c2 > c {
                s += c2 - c;
                continue;
            }
            let d0 = c + cas_to_data;
            let d = self.fit_bus(bus, r.channel, r.kind, d0, r.burst);
            if d > d0 {
                s += d - d0;
                continue;
            }
            return Fit { s, case, pre, rcd, epoch };
        }
    }

    /// The first data start at or after `d` where the bus is free and the
    /// rank's read/write turnaround is kept: both fitted in turn until
    /// neither moves it (one step of the request's fit, so a busy bus of
    /// mixed bursts does not use up its tries). Counts the turnaround's pushes.
    fn fit_bus(&mut self, bus: &Timeline, channel: usize, kind: Kind, d: Ps, burst: Ps) -> Ps {
        let mut d = d;
        for _ in 0..MAX_TRIES {
            let on_bus = bus.fit(d, burst);
            let kept = self.turn.fit(channel, kind, on_bus, burst);
            self.counters.turnaround_wait_ps += kept - on_bus;
            if kept == on_bus {
                return on_bus;
            }
            d = kept;
        }
        // Many short gaps: after every burst booked.
        let after = bus.idle_from().max(self.turn.after_all(channel, kind));
        self.counters.turnaround_wait_ps += after.saturating_sub(bus.idle_from().max(d));
        after.max(d)
    }

    pub fn counters(&self) -> &BankCounters {
        &self.counters
    }

    pub fn reset_stats(&mut self) {
        self.counters = BankCounters::default();
    }
}


#[cfg(test)]
#[path = "banks_tests.rs"]
mod tests;
