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
//! * no scheduler: requests are served in the order they are booked
//!   (first come, first served into the gaps), not FR-FCFS, which would
//!   let a row hit that arrives later pass a queued conflict; a booking
//!   model cannot do that faithfully (docs/reference/dram-pcie.md, "Why
//!   no FR-FCFS"): the conflict's latency was returned when it was booked;
//! * a bank remembers its last [`BANK_HISTORY`] accesses by start time.
//!   A request is served on the row and readiness its own time finds, in
//!   the first stretch between two accesses where it is done with the bank
//!   before the next one starts (or after the last), so a device request is
//!   not held behind accesses a core booked ahead of it. The accesses
//!   after it keep the row case they were booked with: one from before
//!   them that opens another row does not turn their hits into conflicts
//!   (their latencies were returned). Before stop 33 a bank kept only the
//!   state of the access booked last, and a device request behind a core's
//!   bookings waited for them (0.3–0.6 µs a line in a 4-core l2fwd run
//!   with the buses 0.5 % busy). A request that fits in no stretch before
//!   accesses requested after it still goes after them: it was
//!   overtaken, which [`Banks::access`] reports (`mem.dram.reads_overtaken_*`);
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
}

impl Default for BankState {
    fn default() -> Self {
        BankState { open_row: CLOSED, epoch: 0, cas_ok: 0, pre_ok: 0, req: 0 }
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
/// between two accesses it fits into (done with the bank before the next
/// one starts), or after the last.
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

    /// Serves one line at `now` whose burst takes `burst` ps on the data
    /// bus `bus` of its channel; books every resource it uses. Returns the
    /// end of its data on the bus, the time it waited beyond its unloaded
    /// case (ps), and whether it was overtaken: an access to its bank that
    /// was requested after it, but booked before it, starts between its
    /// request and its own first command.
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
        // access starts, or there is no next access.
        let mut k = self.bank[bi].after.partition_point(|e| e.0 <= now);
        let first = k;
        let (f, base) = loop {
            let b = &self.bank[bi];
            let (from, state) = if k == 0 { (now, b.before) } else { (now.max(b.after[k - 1].0), b.after[k - 1].1) };
            let next = b.after.get(k).map(|e| e.0);
            if let Some(next) = next {
                // Skip a stretch too short for the request at best: a hit
                // at once, or an activate held tRAS (a row a refresh closed).
                let hit = from.max(state.cas_ok) + if write { cas_to_data + burst + t_wr } else { t_rtp };
                let open = from + t_ras;
                let best = if state.open_row == p.row { hit.min(open) } else { open };
                if best > next {
                    k += 1;
                    continue;
                }
            }
            let kept = self.counters;
            let f = self.fit(state, from, &r, bus);
            let Some(next) = next else { break (f, state) };
            if self.release(f.case, f.s + f.pre, f.s + f.pre + f.rcd, write, burst) <= next {
                break (f, state);
            }
            self.counters = kept;
            k += 1;
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
            RowCase::Hit => BankState { open_row: p.row, epoch, cas_ok: base.cas_ok, pre_ok: base.pre_ok.max(release), req: now },
            _ => BankState { open_row: p.row, epoch, cas_ok: act + t_rcd, pre_ok: release, req: now },
        };
        let b = &mut self.bank[bi];
        // The accesses it was put after that start after its request.
        let overtaken = b.after.range(first..k).any(|e| e.1.req > now);
        b.after.insert(k, (s, st));
        if b.after.len() > BANK_HISTORY {
            b.before = b.after.pop_front().unwrap().1;
        }
        match case {
            RowCase::Hit => self.counters.row_hits += 1,
            RowCase::Miss => self.counters.row_misses += 1,
            RowCase::Conflict => self.counters.row_conflicts += 1,
        }
        (end, d - (now + pre + rcd + cas_to_data), overtaken)
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
mod tests {
    use crate::engine::time::Ps;
    use crate::mem::config::{DramConfig, MemConfig};
    use crate::mem::ddr::{AddressMap, DdrTiming, Place};
    use crate::mem::dram::{Agent, Dram};

    /// altra's DDR4-2400 on one channel whose burst is exactly 1 ns (64 GB/s),
    /// one rank, no refresh unless asked; each write booked as it comes (no
    /// write queue), so its timing shows.
    fn cfg(refresh: bool) -> DramConfig {
        let mut c = DramConfig { channels: 1, ranks: 1, channel_bandwidth_bytes_per_s: 64_000_000_000, ..MemConfig::altra().dram };
        c.write_queue.entries = 0;
        if !refresh {
            c.timing.t_rfc_ps = 0;
        }
        c
    }

    /// Lines apart that share a bank but not a row (RoRaBaCoCh, one rank).
    const ROW: u64 = 8192 * 16;

    /// The split with plain divisions: the oracle for the shifted one.
    fn place(line: u64, map: AddressMap, channels: u64, ranks: u64, banks: u64, row_lines: u64) -> Place {
        let channel = (line % channels) as usize;
        let mut r = line / channels;
        let (rank, bank);
        match map {
            AddressMap::RoRaBaCoCh => {
                r /= row_lines;
                bank = r % banks;
                r /= banks;
                rank = r % ranks;
                r /= ranks;
            }
            AddressMap::RoCoRaBaCh => {
                bank = r % banks;
                r /= banks;
                rank = r % ranks;
                r /= ranks;
                r /= row_lines;
            }
        }
        Place { channel, rank: rank as usize, bank: bank as usize, row: r }
    }

    fn split(line: u64, map: AddressMap, channels: u32, ranks: u32, banks: u32, row_bytes: u32) -> Place {
        let b = super::Banks::new(map, channels, ranks, 1, banks, row_bytes, &DdrTiming::ddr4_2400());
        b.place(line)
    }

    #[test]
    fn maps_split_a_line_as_gem5_names_them() {
        // 2 channels, 2 ranks, 16 banks, 128 lines a row.
        let p = |line, map| split(line, map, 2, 2, 16, 8192);
        // RoRaBaCoCh: lines 0, 2, 4 … of channel 0 share one row of bank 0.
        assert_eq!(p(0, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 0 });
        assert_eq!(p(1, AddressMap::RoRaBaCoCh), Place { channel: 1, rank: 0, bank: 0, row: 0 });
        assert_eq!(p(254, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 0 });
        assert_eq!(p(256, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 1, row: 0 });
        assert_eq!(p(256 * 16, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 1, bank: 0, row: 0 });
        assert_eq!(p(256 * 32, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 1 });
        // RoCoRaBaCh: consecutive lines of a channel walk the banks, then the ranks.
        assert_eq!(p(2, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 0, bank: 1, row: 0 });
        assert_eq!(p(32, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 1, bank: 0, row: 0 });
        assert_eq!(p(64 * 128, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 0, bank: 0, row: 1 });
        // Three channels: divisions, not shifts.
        assert_eq!(split(5, AddressMap::RoRaBaCoCh, 3, 2, 16, 8192), Place { channel: 2, rank: 0, bank: 0, row: 0 });
        assert_eq!(split(3 * 128, AddressMap::RoRaBaCoCh, 3, 2, 16, 8192), Place { channel: 0, rank: 0, bank: 1, row: 0 });
    }

    #[test]
    fn the_shifted_split_is_the_address_maps_split() {
        for (channels, ranks, bg, bpg, row) in [(4, 2, 4, 4, 8192), (6, 2, 4, 4, 8192), (3, 3, 1, 8, 1024), (1, 1, 1, 1, 64)] {
            for map in [AddressMap::RoRaBaCoCh, AddressMap::RoCoRaBaCh] {
                let b = super::Banks::new(map, channels, ranks, bg, bpg, row, &DdrTiming::ddr4_2400());
                let mut x: u64 = 0x2545_f491_4f6c_dd1d;
                for _ in 0..10_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let line = x >> 20;
                    let want = place(line, map, channels as u64, ranks as u64, (bg * bpg) as u64, row as u64 / 64);
                    assert_eq!(b.place(line), want, "line {line} {map:?} {channels} ch");
                }
            }
        }
    }

    #[test]
    fn an_idle_request_pays_its_rows_case() {
        let c = cfg(false);
        let (idle, t) = (c.idle_latency_ps, c.timing.clone());
        let mut d = Dram::new(&c);
        assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps, "a precharged bank: activate, read");
        assert_eq!(d.read(64, 2_000_000, Agent::Core), idle - t.t_rp_ps - t.t_rcd_ps, "the open row: read");
        assert_eq!(d.read(ROW, 3_000_000, Agent::Core), idle, "another row: precharge, activate, read");
        let b = d.bank_counters();
        assert_eq!((b.row_misses, b.row_hits, b.row_conflicts, b.activates), (1, 1, 1, 2));
    }

    #[test]
    fn a_stream_hits_open_rows_and_random_lines_conflict() {
        let mut d = Dram::new(&cfg(true));
        for i in 0..20_000u64 {
            d.read(i * 64, i * 5_000, Agent::Core);
        }
        let b = d.bank_counters();
        assert!(b.row_hits as f64 > 0.98 * 20_000.0, "{b:?}");
        // Random lines over 1 GiB: almost every request finds another row open.
        let mut d = Dram::new(&cfg(true));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            d.read((x % (1 << 30)) & !63, i * 50_000, Agent::Core);
        }
        // The rest are misses: each refresh closed the rows.
        let b = d.bank_counters();
        assert!(b.row_conflicts as f64 > 0.85 * 20_000.0, "{b:?}");
        assert!(b.row_hits < 100, "{b:?}");
        assert_eq!(b.activates, 20_000 - b.row_hits);
    }

    #[test]
    fn a_conflict_waits_for_tras_and_write_recovery() {
        let c = cfg(false);
        let (idle, t) = (c.idle_latency_ps, c.timing.clone());
        let mut d = Dram::new(&c);
        let miss = d.read(0, 0, Agent::Core);
        assert_eq!(miss, idle - t.t_rp_ps);
        // ACTIVATE at 0: the precharge for another row waits for tRAS.
        assert_eq!(d.read(ROW, 0, Agent::Core), t.t_ras_ps + idle);
        // A write to the open row at 1 µs, then a conflict: precharge after
        // the write's data and tWR.
        let w = d.write(ROW + 64, 1_000_000, Agent::Device);
        let data_end = 1_000_000 + t.t_cwl_ps + 1_000;
        assert_eq!(w, t.t_cwl_ps + 1_000 + (idle - t.t_rp_ps - t.t_rcd_ps - t.t_cl_ps - 1_000));
        assert_eq!(d.read(0, 1_000_000, Agent::Core), data_end + t.t_wr_ps - 1_000_000 + idle);
    }

    /// Where a request's data started on the bus, from the latency `Dram`
    /// returned (`cfg`: 1 ns bursts).
    fn data_start(c: &DramConfig, now: Ps, latency: Ps) -> Ps {
        let t = &c.timing;
        let fixed = c.idle_latency_ps - (t.t_rp_ps + t.t_rcd_ps + t.t_cl_ps + 1_000);
        now + latency - fixed - 1_000
    }

    #[test]
    fn a_read_after_a_write_waits_twtr_after_the_write_data() {
        let c = cfg(false);
        let t = c.timing.clone();
        // DDR4-2400U: tRCD = CL = 14 167, CWL 10 000, tWTR_S 2 500, tWTR_L 7 500.
        assert_eq!((t.t_cwl_ps, t.t_wtr_s_ps, t.t_wtr_l_ps), (10_000, 2_500, 7_500));
        // Write to bank 0 at 0: ACTIVATE at 0, WRITE at 14 167, data [24 167, 25 167).
        let mut d = Dram::new(&c);
        assert_eq!(data_start(&c, 0, d.write(0, 0, Agent::Device)), 24_167);
        // A read of the same row (same bank group): its READ waits for tWTR_L
        // after the write data, at 32 667; its data come CL later.
        let r = data_start(&c, 0, d.read(64, 0, Agent::Core));
        assert_eq!(r, 25_167 + 7_500 + 14_167);
        // Without the turnaround the READ would go at tCCD_L after the WRITE
        // (19 167) and its data at 33 334.
        assert_eq!(d.bank_counters().turnaround_wait_ps, r - 33_334);
        assert_eq!(d.bank_counters().rw_switches, 1);

        // Bank 1 is in bank group 1: tWTR_S. Its ACTIVATE waits for the
        // four-activate spacing (26 clocks / 4 = 5 417), READ at 19 584,
        // data at 33 751 without the turnaround.
        let mut d = Dram::new(&c);
        d.write(0, 0, Agent::Device);
        let r = data_start(&c, 0, d.read(128 * 64, 0, Agent::Core));
        assert_eq!(r, 25_167 + 2_500 + 14_167);
        assert_eq!(d.bank_counters().turnaround_wait_ps, r - 33_751);

        // Two reads: no turnaround, the second read's data tCCD_L after the first's.
        let mut d = Dram::new(&c);
        assert_eq!(data_start(&c, 0, d.read(0, 0, Agent::Core)), 28_334);
        assert_eq!(data_start(&c, 0, d.read(64, 0, Agent::Core)), 33_334);
        assert_eq!((d.bank_counters().turnaround_wait_ps, d.bank_counters().rw_switches), (0, 0));
    }

    #[test]
    fn a_write_after_a_read_waits_two_clocks_after_the_read_data() {
        let c = cfg(false);
        assert_eq!(c.timing.t_rtw_ps, 1_667, "2 clocks of DDR4-2400");
        let mut d = Dram::new(&c);
        // Read: data [28 334, 29 334). The write to the open row would put
        // its data right after (WRITE at 19 334, data at 29 334); the
        // turnaround puts it 2 clocks later: WRITE at 21 001 = READ
        // (14 167) + CL + burst + 2 tCK - CWL, as JEDEC spaces them.
        d.read(0, 0, Agent::Core);
        let w = data_start(&c, 0, d.write(64, 0, Agent::Device));
        assert_eq!(w, 29_334 + 1_667);
        assert_eq!(w - c.timing.t_cwl_ps, 14_167 + 14_167 + 1_000 + 1_667 - 10_000);
        assert_eq!(d.bank_counters().turnaround_wait_ps, 1_667);
        // And back: write, read, write is two more switches.
        d.read(128, 0, Agent::Core);
        assert_eq!(d.bank_counters().rw_switches, 2);
    }

    #[test]
    fn a_write_booked_before_a_later_read_keeps_the_gap_or_goes_after_it() {
        let c = cfg(false);
        let setup = || {
            let mut d = Dram::new(&c);
            d.read(128 * 64, 0, Agent::Core); // opens a row of bank 1 (group 1)
            // A read booked ahead, bank 0: data [128 334, 129 334).
            assert_eq!(data_start(&c, 100_000, d.read(0, 100_000, Agent::Core)), 128_334);
            d
        };
        // A write hit in bank 1 at 100 000: data [110 000, 111 000), which
        // leaves tWTR_S + CL (16 667) before the read's data: it fits in front.
        let mut d = setup();
        assert_eq!(data_start(&c, 100_000, d.write(129 * 64, 100_000, Agent::Device)), 110_000);
        assert_eq!(d.bank_counters().turnaround_wait_ps, 0);
        // At 105 000 it would end 12 334 before the read's data: too close,
        // so it goes after the read, 2 clocks after its data.
        let mut d = setup();
        assert_eq!(data_start(&c, 105_000, d.write(129 * 64, 105_000, Agent::Device)), 129_334 + 1_667);
    }

    #[test]
    fn a_request_from_before_bookings_made_ahead_is_served_in_time_order() {
        let c = cfg(false);
        let (idle, t) = (c.idle_latency_ps, c.timing.clone());
        let setup = || {
            let mut d = Dram::new(&c);
            // A core ahead of the devices books two rows of bank 0 from 1 µs.
            assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps);
            let second = d.read(ROW * 64, 1_000_000, Agent::Core);
            assert_eq!(second, t.t_ras_ps + idle, "the conflict waits for tRAS");
            (d, data_start(&c, 1_000_000, second))
        };
        // A device's read of a third row at 0 finds bank 0 as it is then,
        // closed: a miss at once, not a wait behind the core's bookings.
        let (mut d, _) = setup();
        let waited = d.counters().queue_wait_ps;
        assert_eq!(d.read(2 * ROW * 64, 0, Agent::Device), idle - t.t_rp_ps);
        assert_eq!(d.counters().queue_wait_ps, waited);
        assert_eq!(d.counters().reads_overtaken, [0, 0, 0], "nothing booked started between its request and its command");
        // At 990 ns its row would have to stay open (tRAS) past the core's
        // first ACTIVATE: it goes after both of the core's accesses.
        let (mut d, second_data) = setup();
        let late = d.read(2 * ROW * 64, 990_000, Agent::Device);
        assert!(data_start(&c, 990_000, late) > second_data, "{late}");
        assert_eq!(d.bank_counters().row_conflicts, 2);
        // Requested before them, it was overtaken (a conflict: its wait is
        // what it took beyond the idle latency); the core's second access
        // was requested with its first, so it was not.
        assert_eq!(d.counters().reads_overtaken, [0, 1, 0]);
        assert_eq!(d.counters().overtaken_wait_ps, [0, late - idle, 0]);
    }

    #[test]
    fn ranks_turn_around_independently() {
        let c = DramConfig { ranks: 2, ..cfg(false) };
        let mut d = Dram::new(&c);
        d.write(0, 0, Agent::Device);
        // Line 2048 is rank 1, bank 0: a miss, not held by rank 0's write.
        assert_eq!(d.read(2048 * 64, 0, Agent::Core), c.idle_latency_ps - c.timing.t_rp_ps);
        assert_eq!((d.bank_counters().turnaround_wait_ps, d.bank_counters().rw_switches), (0, 0));
    }

    #[test]
    fn out_of_order_mixed_traffic_keeps_every_turnaround() {
        // Reads and writes over two ranks, booked out of time order (up to
        // 2 µs back), dense enough that requests queue: no two bursts of a
        // rank are closer than their turnaround, none overlap.
        let t = DdrTiming::ddr4_2400();
        let mut b = super::Banks::new(AddressMap::RoRaBaCoCh, 1, 2, 4, 4, 8192, &t);
        let mut bus = crate::engine::timeline::Timeline::with_min_gap(3_333);
        let mut x: u64 = 0x0123_4567_89ab_cdef;
        for i in 0..5_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = (x >> 8) % (1 << 16);
            let now = (i * 2_000).saturating_sub(x % 2_000_000);
            b.access(line, now, x & 1 == 1, &mut bus, 3_333);
        }
        let bad = b.turn.violations(0);
        assert!(bad.is_empty(), "{} violations, first: {:?}", bad.len(), bad.first());
        assert!(b.counters().turnaround_wait_ps > 0 && b.counters().rw_switches > 1_000, "{:?}", b.counters());
    }

    #[test]
    fn refresh_blocks_its_rank_and_closes_rows() {
        let c = cfg(true);
        let (idle, t) = (c.idle_latency_ps, c.timing.clone());
        let mut d = Dram::new(&c);
        // One rank on one channel: refreshes start at tREFI / 2 + k × tREFI.
        let first = t.t_refi_ps / 2;
        d.read(0, 0, Agent::Core);
        assert_eq!(d.read(64, first - 100_000, Agent::Core), idle - t.t_rp_ps - t.t_rcd_ps, "open row before the refresh");
        let inside = first + 100_000;
        let waited = first + t.t_rfc_ps - inside;
        assert_eq!(d.read(128, inside, Agent::Core), waited + idle - t.t_rp_ps, "after it: the row was closed");
        assert_eq!(d.bank_counters().refresh_wait_ps, waited);
    }

    #[test]
    fn banks_overlap_where_one_bank_serialises() {
        // 64 conflicts in one bank vs spread over 16 banks, all at time 0.
        let run = |stride: u64| -> Ps {
            let mut d = Dram::new(&cfg(false));
            for i in 0..64u64 {
                d.read(i * stride, 0, Agent::Core);
            }
            d.drained_at()
        };
        let one_bank = run(ROW);
        let many = run(ROW + 8192);
        let t = cfg(false).timing;
        assert!(one_bank >= 63 * (t.t_ras_ps.max(t.t_rcd_ps + t.t_rtp_ps) + t.t_rp_ps), "{one_bank}");
        assert!(many * 4 < one_bank, "{many} vs {one_bank}");
    }

    #[test]
    fn a_request_booked_ahead_does_not_delay_an_earlier_one_in_another_bank() {
        let c = cfg(false);
        let mut d = Dram::new(&c);
        for i in 0..10 {
            d.read(i * 64, 500_000, Agent::Core);
        }
        let bank1 = 8192;
        assert_eq!(d.read(bank1, 0, Agent::Device), c.idle_latency_ps - c.timing.t_rp_ps);
    }

    #[test]
    fn the_address_map_decides_which_constraint_binds() {
        // A stream all at time 0: one bank group per channel under RoRaBaCoCh
        // (tCCD_L apart), every bank group in turn under RoCoRaBaCh (the bus:
        // four 3.33 ns bursts are longer than tCCD_L).
        let run = |map| {
            let c = DramConfig { address_map: map, channel_bandwidth_bytes_per_s: 19_200_000_000, ..cfg(false) };
            let mut d = Dram::new(&c);
            for i in 0..1000u64 {
                d.read(i * 64, 0, Agent::Core);
            }
            d.drained_at()
        };
        let t = cfg(false).timing;
        let ccd = run(AddressMap::RoRaBaCoCh);
        let bus = run(AddressMap::RoCoRaBaCh);
        assert!(ccd >= 999 * t.t_ccd_l_ps && ccd < 999 * t.t_ccd_l_ps + 200_000, "{ccd}");
        assert!(bus >= 3_333_333 && bus < 3_333_333 + 200_000, "{bus}");
    }
}
