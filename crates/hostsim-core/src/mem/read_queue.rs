//! The controller's read queue per channel (`host.mem.dram.read_queue`):
//! reads wait in it and the controller picks which one goes next, first
//! ready, first come, first served (FR-FCFS), as gem5's `MemCtrl` does
//! with `mem_sched_policy = frfcfs`.
//!
//! Only a requester that can take its read's completion later, as an
//! event, may queue a read ([`Dram::read_later`](super::Dram::read_later)):
//! its latency is not known when it asks. A work unit held to the event
//! loop (`sim.core_horizon`) is such a requester: its load misses wait in
//! the queue and the core waits for them when its miss window closes
//! (`cpu/core.rs`). So is a NIC's payload read made at the memory side
//! (`sim.dma_at_memory_time`) on a PCIe link (`nic/port.rs`). Every other read is booked when it is made and
//! returns its latency at once, as before; the queue's picks are booked
//! around those bookings and never move one.
//!
//! # When the controller picks, and what
//!
//! gem5 (`src/mem/mem_ctrl.cc`, `dram_interface.cc`, v24.0.0.1) picks the
//! next request `tRP + tRCD` before the next burst could start seamlessly
//! (`nextReqTime = nextBurstAt - commandOffset()`, `nextBurstAt` one burst
//! after the last column command), so that even a row conflict picked then
//! has its data ready when the bus is. Here, a channel picks at
//!
//! ```text
//! decide = max(oldest queued read's arrival, last pick's data end - (tRP + tRCD + CL))
//! ```
//!
//! (`last pick's data end - CL` is gem5's `nextBurstAt`), among the reads
//! arrived by then: the oldest whose row is open in its bank, else the
//! oldest (`scheduler = fcfs`: always the oldest). The pick is booked on
//! the banks at `decide` ([`Banks`](super::banks::Banks): its activate,
//! column command and burst fitted around everything booked), and the
//! next decision follows from its data end. While the channel is busy,
//! reads gather in the queue and a row hit that came later goes before
//! an older conflict, which is FR-FCFS's effect; on an idle channel a read
//! is picked when it arrives and pays nothing for the queue.
//!
//! Simplified: gem5 also prefers a hit that can issue seamlessly and,
//! among misses, the bank that can be prepared first (`minBankPrep`);
//! here a pick is the oldest hit, else the oldest. No cap on hits passing
//! an older read (gem5 has none; its `max_accesses_per_row` closes a row
//! after 16 accesses under its adaptive page policies, and the model keeps
//! rows open). A read that finds the queue full waits outside it, in
//! arrival order, and enters when a pick makes room (counted:
//! `read_queue_full`), as gem5 makes its requester retry; the requester's
//! other requests are not held back meanwhile.

use std::collections::VecDeque;

use crate::engine::time::Ps;

use super::dram::Agent;

pub use crate::engine::Ticket;

/// A read waiting for the controller (and, once picked, the pick).
#[derive(Debug, Clone, Copy)]
pub(super) struct Queued {
    pub line: u64,
    pub arrival: Ps,
    /// When it entered the queue: its arrival, or the pick that made room.
    entered: Ps,
    pub ticket: Ticket,
    pub agent: Agent,
}

#[derive(Debug, Clone, Default)]
pub struct ReadQueues {
    queues: Vec<VecDeque<Queued>>,
    /// Per channel: reads kept out of a full queue, in arrival order.
    outside: Vec<VecDeque<Queued>>,
    /// Per channel: the earliest time of its next pick (gem5's `nextReqTime`).
    next_req: Vec<Ps>,
    entries: usize,
    first_ready: bool,
    /// Reads queued in all channels.
    total: usize,
    /// By ticket: the read's completion once picked (`Ps::MAX` until then);
    /// a freed ticket is reused.
    done: Vec<Ps>,
    free: Vec<Ticket>,
    // statistics
    /// Reads queued, picked ahead of an older arrived read, turned away
    /// by a full queue; summed time from arrival to pick; picks made ahead
    /// of the event loop (`MemSystem::take_read` with `force`).
    pub(super) queued: u64,
    pub(super) passed: u64,
    pub(super) full: u64,
    pub(super) wait_ps: u64,
    pub(super) forced: u64,
}

impl ReadQueues {
    /// `entries` reads per channel at most; `first_ready`: FR-FCFS, else FCFS.
    pub(super) fn new(channels: usize, entries: u32, first_ready: bool) -> Option<ReadQueues> {
        (entries > 0).then(|| ReadQueues {
            queues: vec![VecDeque::new(); channels],
            outside: vec![VecDeque::new(); channels],
            next_req: vec![0; channels],
            entries: entries as usize,
            first_ready,
            ..ReadQueues::default()
        })
    }

    /// Does a read wait on channel `ch`?
    #[inline]
    pub(super) fn waiting(&self, ch: usize) -> bool {
        !self.queues[ch].is_empty()
    }

    /// Queues a read of `line` on channel `ch`, arrived at `arrival`; a
    /// full queue keeps it out until a pick makes room (`full`).
    pub(super) fn push(&mut self, ch: usize, line: u64, arrival: Ps, agent: Agent) -> Ticket {
        let ticket = match self.free.pop() {
            Some(t) => {
                self.done[t as usize] = Ps::MAX;
                t
            }
            None => {
                self.done.push(Ps::MAX);
                (self.done.len() - 1) as Ticket
            }
        };
        let e = Queued { line, arrival, entered: arrival, ticket, agent };
        if self.queues[ch].len() < self.entries {
            self.queues[ch].push_back(e);
        } else {
            self.full += 1;
            self.outside[ch].push_back(e);
        }
        self.queued += 1;
        self.total += 1;
        ticket
    }

    /// When channel `ch` picks next, if a read waits.
    #[inline]
    pub(super) fn decision(&self, ch: usize) -> Option<Ps> {
        self.queues[ch].front().map(|q| q.entered.max(self.next_req[ch]))
    }

    /// The earliest pick of any channel.
    #[inline]
    pub(super) fn next_decision(&self) -> Option<Ps> {
        if self.total == 0 {
            return None;
        }
        (0..self.queues.len()).filter_map(|ch| self.decision(ch)).min()
    }

    /// Channel `ch`'s pick at `at` (its decision time): among the reads
    /// arrived by then, the oldest whose row `open` says is open, else
    /// the oldest. Taken out of the queue.
    pub(super) fn pick(&mut self, ch: usize, at: Ps, mut open: impl FnMut(u64) -> bool) -> Queued {
        let q = &mut self.queues[ch];
        // The front has arrived (a channel decides no earlier); so may others.
        let i = if self.first_ready { q.iter().position(|e| e.entered <= at && open(e.line)).unwrap_or(0) } else { 0 };
        let e = q.remove(i).expect("a pick from a non-empty queue");
        if let Some(mut w) = self.outside[ch].pop_front() {
            // It enters the queue when the pick makes room.
            w.entered = w.arrival.max(at);
            q.push_back(w);
        }
        self.total -= 1;
        self.passed += (i > 0) as u64;
        self.wait_ps += at - e.arrival;
        e
    }

    /// Channel `ch`'s pick is done at `done`, its data on the bus until
    /// `data_end`: the next pick comes `lead` (tRP + tRCD + CL) before that.
    pub(super) fn picked(&mut self, ch: usize, ticket: Ticket, done: Ps, data_end: Ps, lead: Ps) {
        self.done[ticket as usize] = done;
        self.next_req[ch] = data_end.saturating_sub(lead);
    }

    /// The read's completion, once picked.
    #[inline]
    pub(super) fn done(&self, ticket: Ticket) -> Option<Ps> {
        self.done.get(ticket as usize).copied().filter(|&d| d != Ps::MAX)
    }

    /// The requester has taken the read's completion: its ticket may be reused.
    pub(super) fn release(&mut self, ticket: Ticket) {
        debug_assert!(self.done(ticket).is_some(), "ticket {ticket} released before its read was picked");
        self.free.push(ticket);
    }

    /// Reads still queued.
    pub(super) fn len(&self) -> usize {
        self.total
    }

    pub(super) fn reset_stats(&mut self) {
        (self.queued, self.passed, self.full, self.wait_ps, self.forced) = (0, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::{DramConfig, ReadQueueConfig, Scheduler};
    use super::super::ddr::DdrTiming;
    use super::super::dram::{Agent, Dram, Read};
    use super::Ticket;
    use crate::engine::time::Ps;

    /// One DDR4-2400 channel (19.2 GB/s), 80 ns idle latency, no write
    /// queue, and the given read queue.
    fn dram(entries: u32, scheduler: Scheduler) -> Dram {
        let mut cfg = DramConfig::ddr4(1, 19_200_000_000, 80_000, DdrTiming::ddr4_2400());
        cfg.write_queue.entries = 0;
        cfg.read_queue = ReadQueueConfig { entries, scheduler };
        Dram::new(&cfg)
    }

    /// The address of column line `col` of `row` in bank `bank` of rank 0
    /// (one channel, RoRaBaCoCh: 128 lines a row, 16 banks, 2 ranks).
    fn addr(row: u64, bank: u64, col: u64) -> u64 {
        ((row * 2 * 16 + bank) * 128 + col) * 64
    }

    fn queued(r: Read) -> Ticket {
        match r {
            Read::Queued(t) => t,
            Read::Done(l) => panic!("served at once ({l} ps), not queued"),
        }
    }

    #[test]
    fn a_read_on_an_idle_channel_is_picked_when_it_arrives_and_costs_what_a_booked_read_costs() {
        let mut booked = dram(0, Scheduler::Frfcfs);
        let latency = booked.read(addr(3, 2, 0), 1_000, Agent::Core);
        let mut d = dram(32, Scheduler::Frfcfs);
        let t = queued(d.read_later(addr(3, 2, 0), 1_000, Agent::Core));
        assert_eq!(d.next_decision(), Some(1_000));
        assert_eq!(d.read_done(t), None, "not picked before its decision");
        d.decide(999);
        assert_eq!(d.read_done(t), None);
        d.decide(1_000);
        assert_eq!(d.read_done(t), Some(1_000 + latency));
        assert_eq!(d.next_decision(), None);
        assert_eq!(d.counters().read_latency_ps[0], latency);
        assert_eq!(d.counters().bytes_read_core, 64);
        d.release_read(t);
        let t2 = queued(d.read_later(addr(4, 2, 0), 200_000, Agent::Core));
        assert_eq!(t2, t, "a released ticket is reused");
        assert_eq!(d.read_done(t2), None, "and pending again");
    }

    /// Bank 1's row 0 is opened at time 0; twenty reads to other rows of
    /// bank 0 arrive at 100 ns, then at 150 ns a read of bank 1's row 5
    /// (a conflict) and one of its open row 0 (a hit). Returns the
    /// completions of the conflict, the hit and the last of the twenty,
    /// and the row hits.
    fn conflict_then_hit(scheduler: Scheduler) -> (Ps, Ps, Ps, u64) {
        let mut d = dram(32, scheduler);
        d.read(addr(0, 1, 0), 0, Agent::Core);
        let backlog: Vec<Ticket> = (0..20).map(|i| queued(d.read_later(addr(10 + i, 0, 0), 100_000, Agent::Core))).collect();
        d.decide(100_000);
        let conflict = queued(d.read_later(addr(5, 1, 0), 150_000, Agent::Core));
        let hit = queued(d.read_later(addr(0, 1, 1), 150_001, Agent::Core));
        while let Some(t) = d.next_decision() {
            assert!(t >= 100_000, "a decision is never before the event that made it ({t})");
            d.decide(t);
        }
        assert_eq!(d.reads_queued(), 0);
        let done = |t: Ticket| d.read_done(t).expect("picked");
        (done(conflict), done(hit), backlog.iter().map(|&t| done(t)).max().unwrap(), d.bank_counters().row_hits)
    }

    #[test]
    fn first_ready_serves_a_later_row_hit_before_older_reads_and_in_order_does_not() {
        let (conflict, hit, backlog, hits) = conflict_then_hit(Scheduler::Frfcfs);
        assert!(hit < conflict, "FR-FCFS: the hit ({hit}) before the older conflict ({conflict})");
        assert!(hit < backlog, "FR-FCFS: the hit ({hit}) before the older backlog ({backlog})");
        assert_eq!(hits, 1);
        let (conflict, hit, backlog, hits) = conflict_then_hit(Scheduler::Fcfs);
        assert!(backlog < conflict && conflict < hit, "FCFS: backlog {backlog}, conflict {conflict}, then the (former) hit {hit}");
        assert_eq!(hits, 0, "in arrival order the conflict closed the hit's row first");
    }

    #[test]
    fn the_controller_picks_lead_before_the_last_picks_data_end() {
        // Twenty conflicts on one bank arrive together. Each is picked at
        // tRP + tRCD + CL before the previous pick's data end, but not
        // before it arrived: the first few at once, the rest one a row cycle.
        let mut d = dram(32, Scheduler::Frfcfs);
        let t: Vec<Ticket> = (0..20).map(|i| queued(d.read_later(addr(i, 0, 0), 1_000, Agent::Core))).collect();
        let mut picked_at = vec![None; t.len()];
        while let Some(at) = d.next_decision() {
            d.decide(at);
            for (k, &tk) in t.iter().enumerate() {
                if picked_at[k].is_none() && d.read_done(tk).is_some() {
                    picked_at[k] = Some(at);
                }
            }
        }
        let picked_at: Vec<Ps> = picked_at.into_iter().map(Option::unwrap).collect();
        let timing = DdrTiming::ddr4_2400();
        let lead = timing.t_rp_ps + timing.t_rcd_ps + timing.t_cl_ps;
        let burst = DramConfig::ddr4(1, 19_200_000_000, 80_000, timing).burst_ps();
        let fixed = 80_000 - (lead + burst); // the idle latency less a conflict's DRAM timing
        assert_eq!(picked_at[0], 1_000);
        for k in 1..t.len() {
            let data_end = d.read_done(t[k - 1]).unwrap() - fixed;
            assert_eq!(picked_at[k], data_end.saturating_sub(lead).max(1_000), "pick {k}");
        }
        assert!(picked_at[1] == 1_000 && picked_at[19] > 1_000, "{picked_at:?}");
    }

    #[test]
    fn a_read_that_finds_the_queue_full_enters_when_a_pick_makes_room() {
        // Two entries; three conflicts on one bank at 1 µs. The third waits
        // outside, enters at the first pick (at once, the channel idle),
        // and is picked after the second; its latency counts from its arrival.
        let mut d = dram(2, Scheduler::Frfcfs);
        let t: Vec<Ticket> = (1..=3).map(|row| queued(d.read_later(addr(row, 0, 0), 1_000_000, Agent::Core))).collect();
        assert_eq!(d.reads_queued(), 3);
        assert_eq!(d.result_json()["read_queue"]["full"], 1);
        while let Some(at) = d.next_decision() {
            d.decide(at);
        }
        let done: Vec<Ps> = t.iter().map(|&k| d.read_done(k).unwrap()).collect();
        assert!(done[0] < done[1] && done[1] < done[2], "{done:?}");
        let latency: Ps = done.iter().map(|&x| x - 1_000_000).sum();
        assert_eq!(d.counters().read_latency_ps[0], latency);
        assert_eq!(d.counters().bytes_read_core, 3 * 64);
    }

    /// Mean latency (ps) of 8 frames' payload reads (1,536 B, 24 lines
    /// each, buffers 2 KiB apart, so all in one row of one bank per channel)
    /// on the `altra` DRAM without a write queue, frame `f` arriving at
    /// 1 µs + `f × gap`: booked when made (`entries = 0`) or through an
    /// FCFS read queue, the controller deciding as the frames arrive.
    fn frames_mean_latency(entries: u32, gap: Ps) -> f64 {
        let mut cfg = crate::mem::config::MemConfig::altra().dram;
        cfg.write_queue.entries = 0;
        cfg.read_queue = ReadQueueConfig { entries, scheduler: Scheduler::Fcfs };
        let mut d = Dram::new(&cfg);
        let (mut sum, mut tickets) = (0, Vec::new());
        for f in 0..8u64 {
            let at = 1_000_000 + f * gap;
            d.decide(at);
            for l in 0..24 {
                match d.read_later(f * 2048 + l * 64, at, Agent::Device) {
                    Read::Done(lat) => sum += lat,
                    Read::Queued(t) => tickets.push((t, at)),
                }
            }
        }
        while let Some(t) = d.next_decision() {
            d.decide(t);
        }
        sum += tickets.iter().map(|&(t, at)| d.read_done(t).unwrap() - at).sum::<Ps>();
        sum as f64 / (8.0 * 24.0)
    }

    /// The device's reads were 35 % faster with a read queue in the
    /// `altra` TestPMD run (docs/reference/dram-pcie.md): not the queue's
    /// doing. On the same arrivals the queue is never faster; what changed
    /// was the arrivals. Frames released together (their TX descriptors
    /// arriving in one clump) put all their lines on one bank group of each
    /// channel, one column command per tCCD_L (5 ns), so a clump of 8 costs
    /// far more than the same frames spread at 7 Mpps.
    #[test]
    fn a_read_queue_is_no_faster_on_the_same_arrivals_and_clumped_frames_cost_tccd_l() {
        let spread = 142_857; // 7 Mpps
        let (booked_clumped, queued_clumped) = (frames_mean_latency(0, 0), frames_mean_latency(32, 0));
        let (booked_spread, queued_spread) = (frames_mean_latency(0, spread), frames_mean_latency(32, spread));
        assert!(queued_clumped >= booked_clumped, "clumped: queued {queued_clumped} vs booked {booked_clumped}");
        assert!(queued_spread >= booked_spread, "spread: queued {queued_spread} vs booked {booked_spread}");
        // 48 lines a channel one tCCD_L apart: the mean read waits about 23 × 5 ns more.
        assert!(booked_clumped > booked_spread + 100_000.0, "clumped {booked_clumped} vs spread {booked_spread}");
    }

    #[test]
    fn without_banks_or_entries_there_is_no_queue() {
        let mut d = dram(0, Scheduler::Frfcfs);
        assert!(matches!(d.read_later(addr(1, 0, 0), 0, Agent::Core), Read::Done(_)));
        let mut flat = Dram::new(&DramConfig::flat(1, 19_200_000_000, 80_000));
        assert_eq!(flat.read_later(0, 0, Agent::Core), Read::Done(80_000));
        assert_eq!(flat.next_decision(), None);
    }
}
