//! Read/write turnaround on a DRAM channel's data bus: the bursts booked on
//! each channel, with their rank, bank group and direction, so a new burst
//! keeps the JEDEC spacing from the other direction's bursts of its rank.
//!
//! In data-bus terms (Ramulator 2's DDR4/DDR3 constraints, CMU-SAFARI/ramulator2
//! c5b1c3a `python/ramulator/dram/ddr4.py`, `ddr3.py`):
//! * write then read, same rank: the READ may not be issued before tWTR
//!   after the end of the write data (`WR -> RD: nCWL + nBL + nWTRS`, or
//!   `nWTRL` in the same bank group), so the read data start at least
//!   tWTR + CL after the write data end;
//! * read then write, same rank: `RD -> WR: nCL + nBL + 2 - nCWL`, so the
//!   write data start at least 2 tCK (`t_rtw_ps`) after the read data end.
//!
//! A burst is checked against every burst of its rank near it, before and
//! after (bookings go into gaps, so a burst can land between two booked
//! ones); same-direction bursts add nothing beyond the bus and tCCD_L.
//!
//! Simplified: no rank-to-rank switch (tCS); bursts of other ranks only
//! share the bus. A controller that drains writes in batches (gem5
//! `MemCtrl.min_writes_per_switch`, 16) switches less often than requests
//! booked in arrival order do; that is the write queue (`write_queue.rs`),
//! on by default. Without it (`entries = 0`) mixed traffic pays the
//! turnaround more often than behind such a controller.

use crate::engine::time::Ps;
use crate::engine::timeline::HISTORY_PS;

/// Bursts of a channel searched back for the previous one of a rank.
const SWITCH_LOOKBACK: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Burst {
    start: Ps,
    end: Ps,
    rank: u32,
    group: u32,
    write: bool,
}

impl Burst {
    fn kind(&self) -> Kind {
        Kind { rank: self.rank, group: self.group, write: self.write }
    }
}

/// What a burst is: its rank, bank group and direction.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kind {
    pub rank: u32,
    pub group: u32,
    pub write: bool,
}

/// The bursts of one channel, sorted by start (they never overlap: each
/// one holds the bus).
#[derive(Debug, Clone, Default)]
struct Log {
    bursts: Vec<Burst>,
    /// Bursts before `head` are forgotten (as a `Timeline` forgets).
    head: usize,
    clock: Ps,
}

#[derive(Debug, Clone)]
pub(super) struct Turnaround {
    wtr_s: Ps,
    wtr_l: Ps,
    rtw: Ps,
    /// READ to data (CL): a write-to-read gap on the bus is tWTR + CL.
    cl: Ps,
    /// The longest gap any pair needs: bursts ending further back impose nothing.
    reach: Ps,
    logs: Vec<Log>,
}

impl Turnaround {
    pub fn new(channels: usize, wtr_s: Ps, wtr_l: Ps, rtw: Ps, cl: Ps) -> Turnaround {
        let reach = (wtr_s.max(wtr_l) + cl).max(rtw);
        Turnaround { wtr_s, wtr_l, rtw, cl, reach, logs: vec![Log::default(); channels] }
    }

    /// Idle bus time needed from the end of `a`'s data to the start of
    /// `b`'s when `a` goes first.
    #[inline]
    fn gap(&self, a: Kind, b: Kind) -> Ps {
        if a.rank != b.rank || a.write == b.write {
            0
        } else if a.write {
            (if a.group == b.group { self.wtr_l } else { self.wtr_s }) + self.cl
        } else {
            self.rtw
        }
    }

    /// First live burst that can still constrain a burst starting at `d`.
    #[inline]
    fn first_near(&self, log: &Log, d: Ps) -> usize {
        let live = &log.bursts[log.head..];
        let mut i = live.len();
        let mut steps = 0;
        while i > 0 && live[i - 1].end + self.reach > d {
            i -= 1;
            steps += 1;
            if steps == 16 {
                i = live.partition_point(|b| b.end + self.reach <= d);
                break;
            }
        }
        log.head + i
    }

    /// The earliest data start at or after `d` for a burst of `dur` ps on
    /// `channel` that keeps the turnaround with every booked burst of its
    /// rank. It may overlap other bursts: the caller fits the bus again.
    pub fn fit(&self, channel: usize, k: Kind, d: Ps, dur: Ps) -> Ps {
        let log = &self.logs[channel];
        let mut d = d;
        let mut lo = self.first_near(log, d);
        'scan: loop {
            // `d` only grows, and the bursts' ends are sorted as their
            // starts are: the first burst near it only moves forward.
            while log.bursts.get(lo).is_some_and(|b| b.end + self.reach <= d) {
                lo += 1;
            }
            let mut i = lo;
            while let Some(q) = log.bursts.get(i) {
                if q.start >= d + dur + self.reach {
                    break;
                }
                let (qk, g) = (q.kind(), self.gap(q.kind(), k));
                let ahead = self.gap(k, qk);
                if g == 0 && ahead == 0 {
                    // Another rank or the same direction: only the bus, which the caller fits.
                    i += 1;
                    continue;
                }
                if q.start >= d + dur + ahead {
                    // This burst fits in front of `q` with the gap `q` needs.
                    i += 1;
                    continue;
                }
                let from_q = q.end + g;
                if d < from_q {
                    // Behind `q`: the bursts before it are checked again.
                    d = from_q;
                    continue 'scan;
                }
                i += 1;
            }
            return d;
        }
    }

    /// The earliest data start after every booked burst of `channel`, with
    /// the turnaround kept: what a burst queued behind all of them needs.
    pub fn after_all(&self, channel: usize, k: Kind) -> Ps {
        let log = &self.logs[channel];
        let live = &log.bursts[log.head..];
        let last = live.last().map_or(0, |b| b.end);
        live.iter().rev().take_while(|b| b.end + self.reach > last).map(|b| b.end + self.gap(b.kind(), k)).max().unwrap_or(0)
    }

    /// Records a burst booked at `d`; `now` drives forgetting. Returns
    /// whether the burst before it on its rank (among the channel's
    /// [`SWITCH_LOOKBACK`] before it) went the other way: a read/write switch.
    pub fn book(&mut self, channel: usize, k: Kind, d: Ps, dur: Ps, now: Ps) -> bool {
        let log = &mut self.logs[channel];
        if now > log.clock {
            log.clock = now;
            let cutoff = now.saturating_sub(HISTORY_PS);
            while log.bursts.get(log.head).is_some_and(|b| b.end < cutoff) {
                log.head += 1;
            }
            if log.head >= 64 && log.head * 2 >= log.bursts.len() {
                log.bursts.drain(..log.head);
                log.head = 0;
            }
        }
        let live = &log.bursts[log.head..];
        let mut i = live.len();
        while i > 0 && live[i - 1].start > d {
            i -= 1;
        }
        let switch = live[..i].iter().rev().take(SWITCH_LOOKBACK).find(|b| b.rank == k.rank).is_some_and(|b| b.write != k.write);
        let at = log.head + i;
        log.bursts.insert(at, Burst { start: d, end: d + dur, rank: k.rank, group: k.group, write: k.write });
        switch
    }

    /// Every pair of bursts of one rank on `channel` that is out of its
    /// spacing, and any two bursts that overlap (for tests).
    #[cfg(test)]
    pub fn violations(&self, channel: usize) -> Vec<String> {
        let log = &self.logs[channel];
        let live = &log.bursts[log.head..];
        let mut bad = vec![];
        for (i, a) in live.iter().enumerate() {
            for b in &live[i + 1..] {
                let need = if a.rank == b.rank { self.gap(a.kind(), b.kind()) } else { 0 };
                if b.start < a.end + need {
                    bad.push(format!("{a:?} then {b:?}: {} ps apart, {need} needed", b.start as i128 - a.end as i128));
                }
            }
        }
        bad
    }
}
