//! A server whose busy periods are booked arithmetically (no events): a
//! transfer ready at time t takes the first idle gap of its length at or
//! after t. One direction of a PCIe link and one DRAM channel are each one.
//!
//! A plain FIFO (`free_at`) is not enough for either: callers do not come
//! in simulated-time order. PCIe read completions are booked when the read
//! is issued, hundreds of nanoseconds ahead (request, latency and host
//! time); a core books its misses from the end of its current work unit,
//! ahead of the devices; a copy engine books copies queued behind others.
//! With a FIFO, every later transfer would queue behind those future
//! bookings although the server is idle now. Booking into gaps keeps a
//! transfer's start as early as the server allows, so requests are served
//! as if in simulated-time order, except that a booking never moves one
//! already made; transfers ready at the same time still go in call order.
//!
//! Simplification: busy periods that ended more than [`HISTORY_PS`] before
//! the latest `now` any caller passed are forgotten, so callers may book up
//! to that far behind one another (e.g. a write-back chained to a DMA
//! completion) but not further.

use crate::engine::time::Ps;

/// How far behind the latest `now` a booking may still see earlier ones (ps).
/// Only device-side calls move that clock (a core's doorbells, which may
/// come from far ahead, do not: see `PcieLink::mmio_write`).
pub const HISTORY_PS: Ps = 100_000_000;

#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Busy periods [start, end) from `head` on: sorted, disjoint, touching
    /// ones merged. Forgotten periods stay before `head` until compacted (a
    /// plain vector indexes faster than a ring buffer).
    busy: Vec<(Ps, Ps)>,
    head: usize,
    /// Latest `now` seen (drives forgetting).
    clock: Ps,
    /// Gaps shorter than this are merged into their neighbours (0: only
    /// touching periods merge).
    min_gap: Ps,
}

impl Timeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// A timeline whose bookings all last at least `min_gap`: a shorter
    /// gap can never take one, so it is merged away, which changes no
    /// booking and keeps the periods to walk few.
    pub fn with_min_gap(min_gap: Ps) -> Self {
        Timeline { min_gap, ..Self::default() }
    }

    /// Whether a gap of `gap` ps is merged away.
    #[inline(always)]
    fn closes(&self, gap: Ps) -> bool {
        gap < self.min_gap.max(1)
    }

    /// Busy time booked after `t` (the parts of periods that end later).
    pub fn busy_after(&self, t: Ps) -> Ps {
        self.busy[self.head..].iter().filter(|&&(_, end)| end > t).map(|&(start, end)| end - start.max(t)).sum()
    }

    /// Tells the timeline the caller's current time; forgets old busy periods.
    #[inline]
    pub fn advance(&mut self, now: Ps) {
        if now > self.clock {
            self.clock = now;
            let cutoff = now.saturating_sub(HISTORY_PS);
            while self.busy.get(self.head).is_some_and(|&(_, end)| end < cutoff) {
                self.head += 1;
            }
            if self.head >= 64 && self.head * 2 >= self.busy.len() {
                self.busy.drain(..self.head);
                self.head = 0;
            }
        }
    }

    /// Books `dur` ps of wire time at the first gap at or after `ready`;
    /// returns the start.
    pub fn book(&mut self, ready: Ps, dur: Ps) -> Ps {
        if dur == 0 {
            return ready;
        }
        let head = self.head;
        let any = self.busy.len() > head;
        // Fast path: at or after the last busy period.
        match self.busy.last_mut() {
            Some(last) if any => {
                if ready >= last.0 && ready <= last.1 {
                    let start = last.1;
                    last.1 += dur;
                    return start;
                }
                if ready > last.1 {
                    if ready - last.1 < self.min_gap {
                        last.1 = ready + dur;
                    } else {
                        self.busy.push((ready, ready + dur));
                    }
                    return ready;
                }
            }
            _ => {
                self.busy.push((ready, ready + dur));
                return ready;
            }
        }
        let (i, t) = self.find(ready, dur);
        self.insert(self.head + i, t, t + dur);
        t
    }

    /// The first gap of `dur` at or after `ready`: its start, and the index
    /// (from `head`) of the first live period after it.
    #[inline]
    fn find(&self, ready: Ps, dur: Ps) -> (usize, Ps) {
        // First period ending after `ready`: bookings land near the end, so
        // walk back a few periods before falling back to a binary search.
        let live = &self.busy[self.head..];
        let mut i = live.len();
        let mut steps = 0;
        while i > 0 && live[i - 1].1 > ready && steps < 16 {
            i -= 1;
            steps += 1;
        }
        if steps == 16 && i > 0 && live[i - 1].1 > ready {
            i = live.partition_point(|&(_, end)| end <= ready);
        }
        let mut t = ready;
        while let Some(&(s, e)) = live.get(i) {
            if t + dur <= s {
                break;
            }
            t = t.max(e);
            i += 1;
        }
        (i, t)
    }

    /// Where `book(ready, dur)` would start, without booking: lets a caller
    /// fit one request into several servers before it books any of them.
    #[inline]
    pub fn fit(&self, ready: Ps, dur: Ps) -> Ps {
        if dur == 0 || self.busy[self.head..].last().is_none_or(|&(_, e)| ready >= e) {
            return ready;
        }
        self.find(ready, dur).1
    }

    /// Inserts [s, e) before absolute index `i`, merging with live
    /// neighbours it touches or leaves a gap shorter than `min_gap` to.
    fn insert(&mut self, i: usize, s: Ps, e: Ps) {
        let joins_prev = i > self.head && self.closes(s - self.busy[i - 1].1);
        let joins_next = self.busy.get(i).is_some_and(|&(ns, _)| self.closes(ns - e));
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = e,
            (false, true) => self.busy[i].0 = s,
            (false, false) => self.busy.insert(i, (s, e)),
        }
    }

    /// End of the last booked period (the wire is idle from then on).
    pub fn idle_from(&self) -> Ps {
        self.busy[self.head..].last().map_or(0, |&(_, e)| e)
    }

    /// Number of separate busy periods remembered (for tests).
    pub fn periods(&self) -> usize {
        self.busy.len() - self.head
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn busy_after_counts_only_what_lies_past_the_time() {
        let mut t = Timeline::new();
        t.book(0, 100);
        t.book(300, 100);
        assert_eq!((t.busy_after(0), t.busy_after(50), t.busy_after(350), t.busy_after(400)), (200, 150, 50, 0));
    }

    use super::*;

    #[test]
    fn merging_short_gaps_changes_no_booking() {
        // Random bookings of 100–103 ps, out of order: a timeline that merges
        // gaps under 100 ps starts every one where the plain one does, and
        // fit() agrees with book() on both.
        let (mut plain, mut merged) = (Timeline::new(), Timeline::with_min_gap(100));
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ready = i * 60 + x % 5_000;
            let dur = 100 + x % 4;
            let fit = merged.fit(ready, dur);
            assert_eq!(plain.fit(ready, dur), fit);
            assert_eq!(plain.book(ready, dur), merged.book(ready, dur), "booking {i}");
        }
        assert!(merged.periods() * 4 < plain.periods(), "{} vs {}", merged.periods(), plain.periods());
    }

    #[test]
    fn fifo_when_booked_in_order() {
        let mut t = Timeline::new();
        assert_eq!(t.book(0, 10), 0);
        assert_eq!(t.book(5, 10), 10);
        assert_eq!(t.book(5, 10), 20);
        assert_eq!(t.book(100, 10), 100);
        assert_eq!(t.periods(), 2);
        assert_eq!(t.idle_from(), 110);
    }

    #[test]
    fn future_booking_leaves_the_present_free() {
        let mut t = Timeline::new();
        assert_eq!(t.book(1_000, 100), 1_000); // a completion booked ahead
        assert_eq!(t.book(0, 50), 0); // a doorbell now does not wait for it
        assert_eq!(t.book(960, 50), 1_100); // does not fit in [960, 1000): goes after
        assert_eq!(t.book(50, 950), 50); // exactly fills [50, 1000): all merged
        assert_eq!(t.periods(), 1);
        assert_eq!(t.idle_from(), 1_150);
    }

    #[test]
    fn old_periods_are_forgotten() {
        let mut t = Timeline::new();
        t.book(0, 10);
        t.book(100, 10);
        t.advance(HISTORY_PS + 50);
        assert_eq!(t.periods(), 1);
        t.advance(HISTORY_PS + 200);
        assert_eq!(t.periods(), 0);
    }
}
