//! A DRAM controller's write queue per channel, drained in batches
//! (`host.mem.dram.write_queue`; gem5 `MemCtrl` and `MemInterface`).
//!
//! A write is posted: whoever wrote the line does not wait for DRAM, only
//! for the controller to take it. So the controller may hold writes and
//! issue them in an order of its own without changing a latency already
//! returned, which reads do not allow (docs/reference/dram-pcie.md, "Why
//! no FR-FCFS"). Writes wait in the queue, and the channel turns to them
//! as gem5's `MemCtrl` does (`mem_ctrl.cc`, `processNextReqEvent`): when
//! the queue holds `high_percent` of its entries, or, with no read
//! waiting, more than `low_percent`. A drain turns back to reads after
//! `min_writes` writes when reads wait, and otherwise once the queue is
//! below `low_percent` less `min_writes` (gem5's `write_high_thresh_perc`,
//! `write_low_thresh_perc`, `min_writes_per_switch`). "A read waiting" is
//! the channel having transfers booked past the write's time: the model
//! has no read queue. Within a drain the order is first-ready: the
//! oldest queued write's row goes first with every queued write to that
//! row (after the first, row hits), then the next oldest row, as an
//! FR-FCFS scheduler picks row hits before older row misses. A write to a
//! line already queued merges with it (gem5 merges writes to one burst).
//!
//! Simplified:
//! * a drain is booked at the time of the write that sets it off, as one
//!   batch, and a read is "waiting" when the channel is booked past that
//!   time (bookings, not a queue: cores book reads ahead of the devices,
//!   and a channel idle then may get a read a moment later);
//! * reads are still served in the order they are booked; a read is
//!   served from the queue when, at the read's own time, a write of its
//!   line had arrived and had not yet been issued: each queued write keeps
//!   its arrival time, and the last write of a line issued keeps both
//!   times in a table of [`ISSUED_LINES`] lines per channel (direct-mapped:
//!   a read far behind the drains may miss a hit). Callers book out of
//!   time order (cores ahead of the devices, the devices ahead of their
//!   events), so what the queue holds when a read is booked is not what it
//!   held at the read's time;
//! * writes still queued when the run ends are never issued (their bytes
//!   are counted; their bus time is not).

use super::config::WriteQueueConfig;
use crate::engine::time::Ps;

/// Lines per channel whose last issued write a read can still find
/// (a power of two; an estimate of enough: 16 drains of gem5's 64 entries).
pub(super) const ISSUED_LINES: usize = 1024;

/// One channel's queued writes.
#[derive(Debug, Clone, Default)]
struct Queue {
    /// (line number, row key, arrival time), oldest first.
    lines: Vec<(u64, u64, Ps)>,
    /// By line number modulo [`ISSUED_LINES`]: (line, arrival, issue time)
    /// of the last write of the line that left the queue.
    issued: Vec<(u64, Ps, Ps)>,
}

/// Every channel's write queue.
#[derive(Debug, Clone)]
pub(super) struct WriteQueues {
    queues: Vec<Queue>,
    high: usize,
    low: usize,
    min_writes: usize,
    /// Writes merged into one already queued.
    pub merged: u64,
    /// Reads of a queued line, served from the queue.
    pub read_hits: u64,
    /// Drains issued, and the writes they issued.
    pub drains: u64,
    pub drained: u64,
}

impl WriteQueues {
    /// Write queues for `channels` channels; `None` when `cfg.entries` is 0.
    pub(super) fn new(cfg: &WriteQueueConfig, channels: usize) -> Option<WriteQueues> {
        if cfg.entries == 0 {
            return None;
        }
        let n = cfg.entries as usize;
        // At least one queued write forces a drain, and a drain leaves fewer.
        let high = (n * cfg.high_percent as usize / 100).clamp(1, n);
        let low = (n * cfg.low_percent as usize / 100).min(high - 1);
        Some(WriteQueues {
            queues: vec![Queue { lines: Vec::new(), issued: vec![(u64::MAX, 0, 0); ISSUED_LINES] }; channels],
            high,
            low,
            min_writes: cfg.min_writes as usize,
            merged: 0,
            read_hits: 0,
            drains: 0,
            drained: 0,
        })
    }

    /// Queues a write of line `line` (row key `row`: its rank, bank and row)
    /// arriving at `now` on `channel`; `reads_wait`: the channel has a read
    /// to serve (is booked past the write's time). When the channel turns
    /// to writes, the writes of the drain are appended to `out` as (line,
    /// arrival), in the order to issue; the caller gives each one's issue
    /// time to [`issued`](Self::issued).
    pub(super) fn push(&mut self, channel: usize, line: u64, row: u64, now: Ps, reads_wait: bool, out: &mut Vec<(u64, Ps)>) {
        let q = &mut self.queues[channel];
        if let Some(w) = q.lines.iter_mut().find(|w| w.0 == line) {
            // Merged: the line is queued from the earlier of the two arrivals.
            w.2 = w.2.min(now);
            self.merged += 1;
            return;
        }
        q.lines.push((line, row, now));
        let n = q.lines.len();
        if n < self.high && (reads_wait || n <= self.low) {
            return;
        }
        // Back to reads once `min_writes` went if reads wait, and in any
        // case when fewer than `low - min_writes` remain (gem5's hysteresis:
        // queued + min_writes < low).
        let floor = self.low.saturating_sub(self.min_writes + 1);
        let count = if reads_wait { self.min_writes.min(n - floor) } else { n - floor };
        // First-ready order: rows by their oldest write, each row's writes
        // by arrival (a stable sort on the row's first position).
        let mut first: Vec<(u64, usize)> = Vec::new();
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(q.lines.len());
        for (i, &(_, row, _)) in q.lines.iter().enumerate() {
            let rank = match first.iter().position(|&(r, _)| r == row) {
                Some(k) => first[k].1,
                None => {
                    first.push((row, i));
                    i
                }
            };
            order.push((rank, i));
        }
        order.sort_unstable();
        let mut issued: Vec<usize> = order[..count].iter().map(|&(_, i)| i).collect();
        out.extend(issued.iter().map(|&i| (q.lines[i].0, q.lines[i].2)));
        issued.sort_unstable();
        for &i in issued.iter().rev() {
            q.lines.remove(i);
        }
        self.drains += 1;
        self.drained += count as u64;
    }

    /// A write of `line` that arrived at `arrived` left `channel`'s queue
    /// for DRAM at `at` (its data burst's start).
    pub(super) fn issued(&mut self, channel: usize, line: u64, arrived: Ps, at: Ps) {
        let slot = self.slot(line);
        self.queues[channel].issued[slot] = (line, arrived, at);
    }

    /// A line's slot in its channel's table: channels interleave lines, so
    /// the line number over the channel count spreads a channel's lines over
    /// every slot.
    #[inline]
    fn slot(&self, line: u64) -> usize {
        (line / self.queues.len() as u64) as usize & (ISSUED_LINES - 1)
    }

    /// Did `channel`'s queue hold line `line` at `now`: a write of it
    /// arrived by then and not issued before? (A read of it is served from
    /// the queue.)
    pub(super) fn holds(&mut self, channel: usize, line: u64, now: Ps) -> bool {
        let hit = self.has(channel, line, now);
        self.read_hits += hit as u64;
        hit
    }

    /// [`holds`](Self::holds) without counting a read hit.
    pub(super) fn has(&self, channel: usize, line: u64, now: Ps) -> bool {
        let q = &self.queues[channel];
        let (l, arrived, left) = q.issued[self.slot(line)];
        q.lines.iter().any(|&(l, _, t)| l == line && t <= now) || (l == line && arrived <= now && now < left)
    }

    /// Writes waiting in every queue.
    pub(super) fn queued(&self) -> usize {
        self.queues.iter().map(|q| q.lines.len()).sum()
    }

    pub(super) fn reset_stats(&mut self) {
        (self.merged, self.read_hits, self.drains, self.drained) = (0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(out: &[(u64, Ps)]) -> Vec<u64> {
        out.iter().map(|w| w.0).collect()
    }

    fn queues(entries: u32, min_writes: u32) -> WriteQueues {
        WriteQueues::new(&WriteQueueConfig { entries, high_percent: 85, low_percent: 50, min_writes }, 1).unwrap()
    }

    #[test]
    fn off_without_entries() {
        assert!(WriteQueues::new(&WriteQueueConfig { entries: 0, ..WriteQueueConfig::default() }, 4).is_none());
        assert!(WriteQueues::new(&WriteQueueConfig::default(), 4).is_some(), "gem5's 64 entries by default");
    }

    /// 64 entries, reads waiting: the 54th write (85 %) sets off a drain of
    /// 16 (`min_writes`), and the next is at 54 again.
    #[test]
    fn under_reads_a_full_queue_issues_min_writes() {
        let mut q = queues(64, 16);
        let mut out = Vec::new();
        for line in 0..53 {
            q.push(0, line, line, 0, true, &mut out);
        }
        assert!(out.is_empty());
        q.push(0, 53, 53, 0, true, &mut out);
        assert_eq!(lines(&out), (0..16).collect::<Vec<_>>(), "all rows differ: oldest first");
        assert_eq!((q.queued(), q.drains, q.drained), (38, 1, 16));
        for line in 54..69 {
            q.push(0, line, line, 0, true, &mut out);
        }
        assert_eq!((q.queued(), q.drains), (53, 1));
        q.push(0, 69, 69, 0, true, &mut out);
        assert_eq!((q.queued(), q.drains, q.drained), (38, 2, 32));
    }

    /// No read waiting: the 33rd write (over 50 %) sets off a drain down to
    /// 15, where 15 + 16 < 32.
    #[test]
    fn an_idle_channel_drains_past_the_low_mark() {
        let mut q = queues(64, 16);
        let mut out = Vec::new();
        for line in 0..32 {
            q.push(0, line, line, 0, false, &mut out);
        }
        assert!(out.is_empty(), "at 50 % exactly: no drain");
        q.push(0, 32, 32, 0, false, &mut out);
        assert_eq!(lines(&out), (0..18).collect::<Vec<_>>());
        assert_eq!((q.queued(), q.drains, q.drained), (15, 1, 18));
        // min_writes above the low mark: an idle drain empties the queue.
        let mut q = queues(20, 16); // high 17, low 10
        out.clear();
        for line in 0..11 {
            q.push(0, line, 0, 0, false, &mut out);
        }
        assert_eq!((out.len(), q.queued()), (11, 0));
    }

    /// Rows A (lines 0, 3, 6, …) and B (1, 4, …) and C (2, 5, …)
    /// interleaved: a drain issues A's queued writes first, then B's.
    #[test]
    fn a_drain_takes_a_rows_writes_together() {
        let mut q = queues(20, 7); // high 17, low 10: reads waiting, a drain of 7 at the 17th write
        let mut out = Vec::new();
        for line in 0..17u64 {
            q.push(0, line, line % 3, 0, true, &mut out);
        }
        assert_eq!(lines(&out), vec![0, 3, 6, 9, 12, 15, 1]);
        assert_eq!(q.queued(), 10);
    }

    /// A small queue still issues `min_writes` a drain; a rewrite merges; a
    /// read of a queued line hits.
    #[test]
    fn small_queues_merges_and_read_hits() {
        let mut q = queues(8, 16); // high 6, low 4: min_writes (16) caps at the 6 queued
        let mut out = Vec::new();
        q.push(0, 7, 0, 0, true, &mut out);
        q.push(0, 7, 0, 0, true, &mut out);
        assert_eq!((q.merged, q.queued()), (1, 1));
        assert!(q.holds(0, 7, 0) && !q.holds(0, 8, 0));
        assert_eq!(q.read_hits, 1);
        for line in 0..5 {
            q.push(0, line, 1, 0, true, &mut out);
        }
        assert_eq!(lines(&out), vec![7, 0, 1, 2, 3, 4]);
        assert_eq!(q.queued(), 0);
    }

    /// A write is in the queue from its arrival to its issue, whenever
    /// either was booked: a read is served from it only in between. A
    /// rewrite keeps the earlier arrival; a line a table slot further on
    /// takes the slot.
    #[test]
    fn a_read_finds_a_write_only_between_its_arrival_and_its_issue() {
        let mut q = queues(8, 16); // high 6
        let mut out = Vec::new();
        q.push(0, 7, 0, 1_000, true, &mut out);
        q.push(0, 7, 0, 800, true, &mut out);
        assert!(!q.holds(0, 7, 799) && q.holds(0, 7, 800));
        for line in 0..5 {
            q.push(0, line, 1, 2_000, true, &mut out);
        }
        assert_eq!(out, vec![(7, 800), (0, 2_000), (1, 2_000), (2, 2_000), (3, 2_000), (4, 2_000)]);
        for &(l, arrived) in &out {
            q.issued(0, l, arrived, 5_000);
        }
        assert!(q.holds(0, 7, 4_999) && q.holds(0, 4, 2_000));
        assert!(!q.holds(0, 7, 5_000) && !q.holds(0, 7, 799) && !q.holds(0, 4, 1_999));
        q.issued(0, 7 + ISSUED_LINES as u64, 6_000, 7_000);
        assert!(!q.holds(0, 7, 4_999), "its slot taken by another line");
        assert_eq!(q.read_hits, 3);
    }
}
