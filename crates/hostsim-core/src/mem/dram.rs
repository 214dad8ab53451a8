//! DRAM as independent channels, each a data bus of 64 B line transfers,
//! with the banks, rows and DDR timing behind it (`model = banks`, see
//! [`banks`](super::banks)) or without them (`model = channel`).
//!
//! Line `n` lives on channel `n % channels` (line interleaving). A transfer
//! occupies its channel's bus for 64 B / channel bandwidth; a request that
//! finds the bus (or, with banks, its bank, bank group or rank) busy waits.
//! With `model = channel` a read's latency is the idle (unloaded) latency
//! plus that wait; with banks it depends on the row's state as well. So
//! loaded latency and the bandwidth ceiling — channels × per-channel
//! bandwidth, less what row conflicts, tCCD_L and refresh take — emerge
//! from the queueing rather than being looked up. Write-backs and device
//! writes occupy the same channels.
//!
//! Callers do not come in simulated-time order: a core books its misses
//! from the end of its work unit, ahead of the NIC. So a channel is a
//! [`Timeline`] of busy periods and a request takes the first idle gap at
//! or after its own time, not the end of everything booked so far: it is
//! served as if requests came in time order, except that a booking never
//! moves one already made. Transfer times are whole picoseconds whose
//! rounding is carried from one transfer to the next (a remainder in units
//! of 1 / bandwidth), so N back-to-back transfers take N × 64 B / bandwidth
//! rounded up once, not N times.
//!
//! Writes wait in the controller's write queue
//! ([`write_queue`](super::write_queue); gem5's 64 entries by default, 0 for none).
//!
//! Reads whose requester takes the completion later wait in the
//! controller's read queue ([`read_queue`](super::read_queue)), served
//! first-ready first (FR-FCFS); the rest are booked when made.
//!
//! Simplified: no FR-FCFS reordering of reads booked when made (see [`banks`](super::banks)); with
//! `model = channel` no banks, rows, refresh or read/write turnaround, so that model reaches 100 % of peak where real parts
//! sustain 70–85 % (params.md §4, "Sustained efficiency"). A request booked
//! more than [`HISTORY_PS`](crate::engine::timeline::HISTORY_PS) behind the
//! latest one no longer sees the periods before that. Jacob, Ng & Wang,
//! *Memory Systems: Cache, DRAM, Disk*, ch. 7–13.

use serde_json::{json, Value};

use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_S};
use crate::engine::timeline::Timeline;

use super::cache::{LINE_BYTES, LINE_SHIFT};
use super::banks::{BankCounters, Banks};
use super::config::{DramConfig, Scheduler};
use super::ddr::DramModel;
use super::read_queue::{ReadQueues, Ticket};
use super::write_queue::WriteQueues;

/// Who caused a DRAM transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Core,
    /// A NIC's DMA.
    Device,
    /// The chipset's DMA copy engine (I/OAT, `dma/`).
    Engine,
}

impl Agent {
    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// What [`Dram::read_later`] did with a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Served at once: its latency.
    Done(Ps),
    /// Waiting in the read queue: ask [`Dram::read_done`] with the ticket.
    Queued(Ticket),
}

/// One channel: its busy periods and the rounding carried between transfers.
#[derive(Debug, Clone, Default)]
struct Channel {
    busy: Timeline,
    /// Fraction of a picosecond (in units of 1 / bandwidth) by which the
    /// transfers so far fall short of their rounded-up duration.
    rem: u64,
    busy_ps: Ps,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DramCounters {
    pub bytes_read_core: u64,
    pub bytes_read_device: u64,
    pub bytes_written_core: u64,
    pub bytes_written_device: u64,
    pub bytes_read_engine: u64,
    pub bytes_written_engine: u64,
    /// Sum over requests of the time spent waiting for a busy channel (ps).
    pub queue_wait_ps: u64,
    /// Sum of the latencies `read` returned, by agent (core, device,
    /// engine), reads served from the write queue included; over the bytes
    /// read / 64 it is the mean read latency (gem5's per-requestor
    /// `requestorReadTotalLat`).
    pub read_latency_ps: [u64; 3],
    /// Reads by agent that an access at their bank, requested after them
    /// but booked before them, did not hold back (`model = banks`). A
    /// core books a work unit's misses when it starts the unit, ahead of
    /// the devices; the bank serves a read in request order all the same
    /// (docs/reference/dram-pcie.md).
    pub reads_passing: [u64; 3],
}

pub struct Dram {
    channels: Vec<Channel>,
    bandwidth: u64,
    /// One line's transfer time: `xfer_ps` + `xfer_rem` / bandwidth.
    xfer_ps: Ps,
    xfer_rem: u64,
    idle_latency_ps: Ps,
    /// Banks and rows (`model = banks`), and the fixed part of every
    /// request's latency: the idle latency less a row conflict's DRAM timing.
    banks: Option<(Banks, Ps)>,
    counters: DramCounters,
    /// Start of the first and end of the last transfer booked since the
    /// counters were reset (`Ps::MAX`, 0 before any).
    booked: (Ps, Ps),
    /// The controller's write queues (`write_queue.entries` > 0), and the
    /// lines a drain issues (reused).
    write_queues: Option<WriteQueues>,
    drain: Vec<(u64, Ps)>,
    /// The controller's read queues (`read_queue.entries` > 0, `model = banks`).
    read_queues: Option<ReadQueues>,
    /// How long the last read waited for its channel or bank (ps; 0 when
    /// the write queue served it).
    last_read_wait: Ps,
}

impl Dram {
    /// From a validated config (at least one channel, non-zero bandwidth).
    pub fn new(cfg: &DramConfig) -> Dram {
        let bandwidth = cfg.channel_bandwidth_bytes_per_s;
        assert!(cfg.channels >= 1 && bandwidth > 0, "invalid DRAM config");
        let num = LINE_BYTES as u128 * PS_PER_S as u128;
        Dram {
            // A transfer lasts `num / bandwidth` ps rounded down or up: no
            // shorter gap can take one.
            channels: vec![Channel { busy: Timeline::with_min_gap(cfg.burst_ps()), ..Channel::default() }; cfg.channels as usize],
            bandwidth,
            xfer_ps: (num / bandwidth as u128) as Ps,
            xfer_rem: (num % bandwidth as u128) as u64,
            idle_latency_ps: cfg.idle_latency_ps,
            banks: (cfg.model == DramModel::Banks).then(|| {
                let b = Banks::new(
                    cfg.address_map,
                    cfg.channels,
                    cfg.ranks,
                    cfg.bank_groups,
                    cfg.banks_per_group,
                    cfg.row_bytes,
                    &cfg.timing,
                );
                let fixed = cfg.idle_latency_ps.saturating_sub(b.conflict_ps() + cfg.burst_ps());
                (b, fixed)
            }),
            counters: DramCounters::default(),
            booked: (Ps::MAX, 0),
            write_queues: WriteQueues::new(&cfg.write_queue, cfg.channels as usize),
            drain: Vec::new(),
            read_queues: if cfg.model == DramModel::Banks {
                ReadQueues::new(cfg.channels as usize, cfg.read_queue.entries, cfg.read_queue.scheduler == Scheduler::Frfcfs)
            } else {
                None
            },
            last_read_wait: 0,
        }
    }

    /// The latency of a request the controller serves without DRAM (a
    /// queued write, a read of a queued line): its fixed part with banks
    /// (the idle latency less a row conflict's DRAM timing), the idle
    /// latency without.
    fn controller_ps(&self) -> Ps {
        self.banks.as_ref().map_or(self.idle_latency_ps, |&(_, fixed)| fixed)
    }

    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    pub fn idle_latency_ps(&self) -> Ps {
        self.idle_latency_ps
    }

    /// Channel of a byte address.
    #[inline]
    pub fn channel_of(&self, addr: u64) -> usize {
        ((addr >> LINE_SHIFT) % self.channels.len() as u64) as usize
    }

    /// Books one line transfer at `now`; returns its latency (ps) and
    /// whether it went ahead of a later-requested access at its bank (see
    /// [`DramCounters::reads_passing`]).
    fn occupy(&mut self, addr: u64, now: Ps, write: bool) -> (Ps, bool, Ps, Ps) {
        let ch = self.channel_of(addr);
        let (bw, xfer_ps, xfer_rem) = (self.bandwidth, self.xfer_ps, self.xfer_rem);
        let c = &mut self.channels[ch];
        // The exact durations so far end `rem` / bw before a whole picosecond
        // (none when `rem` is 0); this one's whole-picosecond length takes
        // the rounding up to where the exact sum ends.
        let sum = c.rem + xfer_rem;
        let next = sum % bw;
        let dur = xfer_ps + (sum >= bw) as Ps + (next > 0) as Ps - (c.rem > 0) as Ps;
        c.rem = next;
        c.busy_ps += dur;
        let (latency, wait, end, passing) = match &mut self.banks {
            Some((banks, fixed)) => {
                let (end, wait, passing) = banks.access(addr >> LINE_SHIFT, now, write, &mut c.busy, dur);
                (end - now + *fixed, wait, end, passing)
            }
            None => {
                c.busy.advance(now);
                let wait = c.busy.book(now, dur) - now;
                (self.idle_latency_ps + wait, wait, now + wait + dur, false)
            }
        };
        self.counters.queue_wait_ps += wait;
        self.booked = (self.booked.0.min(end - dur), self.booked.1.max(end));
        (latency, passing, end - dur, wait)
    }

    #[inline]
    fn count_read(&mut self, agent: Agent) {
        match agent {
            Agent::Core => self.counters.bytes_read_core += LINE_BYTES,
            Agent::Device => self.counters.bytes_read_device += LINE_BYTES,
            Agent::Engine => self.counters.bytes_read_engine += LINE_BYTES,
        }
    }

    /// Reads one line; returns its latency (the idle latency, or the row's
    /// case with banks, plus the waits).
    pub fn read(&mut self, addr: u64, now: Ps, agent: Agent) -> Ps {
        self.count_read(agent);
        let queued = self.write_queues.is_some() && {
            let ch = self.channel_of(addr);
            self.write_queues.as_mut().is_some_and(|q| q.holds(ch, addr >> LINE_SHIFT, now))
        };
        let (latency, passing, wait) = if queued {
            (self.controller_ps(), false, 0)
        } else {
            let (l, p, _, w) = self.occupy(addr, now, false);
            (l, p, w)
        };
        self.last_read_wait = wait;
        let c = &mut self.counters;
        c.read_latency_ps[agent.index()] += latency;
        c.reads_passing[agent.index()] += passing as u64;
        latency
    }

    /// A read whose requester takes its completion later: it waits in the
    /// channel's read queue ([`read_queue`](super::read_queue)), or to
    /// enter it if it is full, unless there is none or the write queue
    /// holds the line; then it is served as [`Dram::read`] serves it and
    /// its latency returned.
    pub fn read_later(&mut self, addr: u64, now: Ps, agent: Agent) -> Read {
        let ch = self.channel_of(addr);
        if self.read_queues.is_none() || self.write_queues.as_ref().is_some_and(|w| w.has(ch, addr >> LINE_SHIFT, now)) {
            return Read::Done(self.read(addr, now, agent));
        }
        self.count_read(agent);
        let q = self.read_queues.as_mut().expect("a read queue");
        Read::Queued(q.push(ch, addr >> LINE_SHIFT, now, agent))
    }

    /// Is there a read queue ([`Dram::read_later`] may queue)?
    pub fn has_read_queue(&self) -> bool {
        self.read_queues.is_some()
    }

    /// When the controller next picks a queued read ([`Dram::decide`]).
    pub fn next_decision(&self) -> Option<Ps> {
        self.read_queues.as_ref().and_then(ReadQueues::next_decision)
    }

    /// Makes every pick of the read queues due by `now`, each at its own
    /// decision time: the read is booked on its banks then, and its
    /// completion ([`Dram::read_done`]) known from then on.
    pub fn decide(&mut self, now: Ps) {
        let Some(mut q) = self.read_queues.take() else { return };
        let lead = self.banks.as_ref().map_or(0, |(b, _)| b.conflict_ps());
        for ch in 0..self.channels.len() {
            while let Some(at) = q.decision(ch).filter(|&at| at <= now) {
                let banks = &mut self.banks;
                let p = q.pick(ch, at, |line| banks.as_mut().is_some_and(|(b, _)| b.row_open(line, at)));
                let (latency, passing, _, _) = self.occupy(p.line << LINE_SHIFT, at, false);
                let done = at + latency;
                // With banks a latency is the data's end less `at`, plus the fixed part.
                q.picked(ch, p.ticket, done, done - self.controller_ps(), lead);
                let c = &mut self.counters;
                c.queue_wait_ps += at - p.arrival;
                c.read_latency_ps[p.agent.index()] += done - p.arrival;
                c.reads_passing[p.agent.index()] += passing as u64;
            }
        }
        self.read_queues = Some(q);
    }

    /// A queued read's completion, once the controller has picked it.
    #[inline]
    pub fn read_done(&self, ticket: Ticket) -> Option<Ps> {
        self.read_queues.as_ref().and_then(|q| q.done(ticket))
    }

    /// The requester has taken a queued read's completion.
    pub fn release_read(&mut self, ticket: Ticket) {
        if let Some(q) = &mut self.read_queues {
            q.release(ticket);
        }
    }

    /// A pick made ahead of the event loop, for a requester that could not wait.
    pub(super) fn count_forced(&mut self) {
        if let Some(q) = &mut self.read_queues {
            q.forced += 1;
        }
    }

    /// Reads waiting in the read queues.
    pub fn reads_queued(&self) -> usize {
        self.read_queues.as_ref().map_or(0, ReadQueues::len)
    }

    /// How long the last [`Dram::read`] waited behind other transfers (ps),
    /// the part of its latency that depends on when it was issued.
    #[inline]
    pub(super) fn last_read_wait_ps(&self) -> Ps {
        self.last_read_wait
    }

    /// Writes one line; returns the time until it is in DRAM, measured like a read.
    pub fn write(&mut self, addr: u64, now: Ps, agent: Agent) -> Ps {
        match agent {
            Agent::Core => self.counters.bytes_written_core += LINE_BYTES,
            Agent::Device => self.counters.bytes_written_device += LINE_BYTES,
            Agent::Engine => self.counters.bytes_written_engine += LINE_BYTES,
        }
        if self.write_queues.is_none() {
            return self.occupy(addr, now, true).0;
        }
        // Queued: the writer waits only for the controller; a drain the
        // write sets off is booked now, in the queue's order.
        let line = addr >> LINE_SHIFT;
        let row = self.banks.as_ref().map_or(0, |(b, _)| b.row_key(line));
        let ch = self.channel_of(addr);
        let reads_wait = self.channels[ch].busy.idle_from() > now || self.read_queues.as_ref().is_some_and(|q| q.waiting(ch));
        let mut drain = std::mem::take(&mut self.drain);
        if let Some(q) = &mut self.write_queues {
            q.push(ch, line, row, now, reads_wait, &mut drain);
        }
        for &(l, arrived) in &drain {
            // A write booked ahead of its arrival (callers book ahead) goes no earlier than it arrives.
            let (_, _, start, _) = self.occupy(l << LINE_SHIFT, now.max(arrived), true);
            if let Some(q) = &mut self.write_queues {
                q.issued(ch, l, arrived, start);
            }
        }
        drain.clear();
        self.drain = drain;
        self.controller_ps()
    }

    /// Row hits, misses and conflicts (zero with `model = channel`).
    pub fn bank_counters(&self) -> BankCounters {
        self.banks.as_ref().map(|(b, _)| *b.counters()).unwrap_or_default()
    }

    /// The time every channel has finished the transfers booked so far.
    pub fn drained_at(&self) -> Ps {
        self.channels.iter().map(|c| c.busy.idle_from()).max().unwrap_or(0)
    }

    pub fn counters(&self) -> &DramCounters {
        &self.counters
    }

    /// Total time channels spent transferring (ps, summed over channels).
    pub fn busy_ps(&self) -> Ps {
        self.channels.iter().map(|c| c.busy_ps).sum()
    }

    /// The channels' data-bus utilisation: their busy time over channels ×
    /// `window_ps`, or over the span of the transfers booked if that is
    /// longer (an overload books past the window's end). Transfers on one
    /// channel never overlap, so this is never above 1.
    pub fn util(&self, window_ps: Ps) -> f64 {
        let span = window_ps.max(self.booked.1.saturating_sub(self.booked.0));
        let capacity = self.channels.len() as f64 * span as f64;
        if capacity > 0.0 { self.busy_ps() as f64 / capacity } else { 0.0 }
    }

    pub fn result_json(&self) -> Value {
        let c = &self.counters;
        // The write queue's counters, zero without one.
        let wq = |f: fn(&WriteQueues) -> u64| self.write_queues.as_ref().map_or(0, f);
        let rq = |f: fn(&ReadQueues) -> u64| self.read_queues.as_ref().map_or(0, f);
        json!({
            "bytes_read_core": c.bytes_read_core,
            "bytes_read_device": c.bytes_read_device,
            "bytes_written_core": c.bytes_written_core,
            "bytes_written_device": c.bytes_written_device,
            "bytes_read_engine": c.bytes_read_engine,
            "bytes_written_engine": c.bytes_written_engine,
            "queue_wait_ps": c.queue_wait_ps,
            "read_latency_ps_core": c.read_latency_ps[Agent::Core.index()],
            "read_latency_ps_device": c.read_latency_ps[Agent::Device.index()],
            "read_latency_ps_engine": c.read_latency_ps[Agent::Engine.index()],
            "reads_passing_core": c.reads_passing[Agent::Core.index()],
            "reads_passing_device": c.reads_passing[Agent::Device.index()],
            "reads_passing_engine": c.reads_passing[Agent::Engine.index()],
            "passed_hits": self.bank_counters().passed_hits,
            "busy_ps": self.busy_ps(),
            "row_hits": self.bank_counters().row_hits,
            "row_misses": self.bank_counters().row_misses,
            "row_conflicts": self.bank_counters().row_conflicts,
            "activates": self.bank_counters().activates,
            "refresh_wait_ps": self.bank_counters().refresh_wait_ps,
            "turnaround_wait_ps": self.bank_counters().turnaround_wait_ps,
            "rw_switches": self.bank_counters().rw_switches,
            "read_queue": {
                "queued": rq(|q| q.queued), "passed": rq(|q| q.passed), "full": rq(|q| q.full),
                "wait_ps": rq(|q| q.wait_ps), "waiting": rq(|q| q.len() as u64), "forced": rq(|q| q.forced),
            },
            "write_queue": {
                "drains": wq(|q| q.drains), "drained": wq(|q| q.drained), "merged": wq(|q| q.merged),
                "read_hits": wq(|q| q.read_hits), "queued": wq(|q| q.queued() as u64),
            },
        })
    }
}

impl HasStats for Dram {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let c = &self.counters;
        s.add("bytes_read_core", c.bytes_read_core as f64, "Byte", "Bytes read from DRAM for core misses");
        s.add("bytes_read_device", c.bytes_read_device as f64, "Byte", "Bytes read from DRAM for device (DMA) reads");
        s.add("bytes_written_core", c.bytes_written_core as f64, "Byte", "Bytes written to DRAM: write-backs of core-written lines");
        s.add(
            "bytes_written_device",
            c.bytes_written_device as f64,
            "Byte",
            "Bytes written to DRAM: device writes without DCA and write-backs of device-written lines",
        );
        s.add("bytes_read_engine", c.bytes_read_engine as f64, "Byte", "Bytes read from DRAM by the copy engine");
        s.add("bytes_written_engine", c.bytes_written_engine as f64, "Byte", "Bytes written to DRAM: write-backs of lines the copy engine wrote");
        s.add("queue_wait_ps", c.queue_wait_ps as f64, "Picosecond", "Summed time requests waited for a busy channel");
        let [core, device, engine] = c.read_latency_ps.map(|v| v as f64);
        s.add("read_latency_ps_core", core, "Picosecond", "Summed latency of DRAM reads for core misses, write-queue hits included");
        s.add("read_latency_ps_device", device, "Picosecond", "Summed latency of DRAM reads for device (DMA) reads, write-queue hits included");
        s.add("read_latency_ps_engine", engine, "Picosecond", "Summed latency of DRAM reads by the copy engine, write-queue hits included");
        s.add("busy_ps", self.busy_ps() as f64, "Picosecond", "Summed time channels spent transferring lines");
        if self.banks.is_some() {
            let b = self.bank_counters();
            s.add("row_hits", b.row_hits as f64, "Count", "Requests whose row was open in its bank");
            s.add("row_misses", b.row_misses as f64, "Count", "Requests to a precharged bank (first use, or after a refresh): activate");
            s.add("row_conflicts", b.row_conflicts as f64, "Count", "Requests whose bank had another row open: precharge and activate");
            s.add("activates", b.activates as f64, "Count", "ACTIVATE commands");
            s.add("refresh_wait_ps", b.refresh_wait_ps as f64, "Picosecond", "Summed time requests waited for a refresh to end");
            s.add(
                "turnaround_wait_ps",
                b.turnaround_wait_ps as f64,
                "Picosecond",
                "Summed time a read/write turnaround of a rank (tWTR, tRTW) pushed requests' data",
            );
            s.add("rw_switches", b.rw_switches as f64, "Count", "Data bursts whose rank's previous burst went the other way (read/write switch)");
            let n = c.reads_passing.map(|v| v as f64);
            s.add("reads_passing_core", n[0], "Count", "Core-miss reads not held back at their bank by an access requested after them but booked before them");
            s.add("reads_passing_device", n[1], "Count", "Device (DMA) reads not held back at their bank by an access requested after them but booked before them");
            s.add("reads_passing_engine", n[2], "Count", "Copy-engine reads not held back at their bank by an access requested after them but booked before them");
            s.add("passed_hits", b.passed_hits as f64, "Count", "Row hits passed by an earlier-requested access to another row: conflicts in request order, kept as booked");
        }
        if let Some(q) = &self.read_queues {
            s.add("read_queue_queued", q.queued as f64, "Count", "Reads that waited in the read queue (sim.core_horizon's held unit)");
            s.add("read_queue_passed", q.passed as f64, "Count", "Queued reads picked ahead of an older arrived one (first ready: a row hit)");
            s.add("read_queue_full", q.full as f64, "Count", "Reads that found the read queue full and waited to enter it");
            s.add("read_queue_wait_ps", q.wait_ps as f64, "Picosecond", "Summed time queued reads waited for the controller's pick");
            s.add("read_queue_forced", q.forced as f64, "Count", "Picks made ahead of the event loop for a requester that could not wait");
        }
        if let Some(q) = &self.write_queues {
            s.add("write_queue_drains", q.drains as f64, "Count", "Batches of queued writes the controller issued");
            s.add("write_queue_drained", q.drained as f64, "Count", "Writes the drains issued");
            s.add("write_queue_merged", q.merged as f64, "Count", "Writes merged into one already queued");
            s.add("write_queue_read_hits", q.read_hits as f64, "Count", "Reads served from the write queue");
            s.add("write_queue_queued", q.queued() as f64, "Count", "Writes still queued at the end");
        }
    }

    fn reset_stats(&mut self) {
        self.counters = DramCounters::default();
        if let Some((b, _)) = &mut self.banks {
            b.reset_stats();
        }
        if let Some(q) = &mut self.write_queues {
            q.reset_stats();
        }
        if let Some(q) = &mut self.read_queues {
            q.reset_stats();
        }
        for c in &mut self.channels {
            c.busy_ps = 0;
        }
        self.booked = (Ps::MAX, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dram(channels: u32, bw: u64) -> Dram {
        Dram::new(&DramConfig::flat(channels, bw, 80_000))
    }

    #[test]
    fn idle_request_costs_idle_latency() {
        let mut d = dram(4, 19_200_000_000);
        assert_eq!(d.read(0, 1_000, Agent::Core), 80_000);
        assert_eq!(d.read(64, 1_000, Agent::Core), 80_000, "next line, next channel");
        assert_eq!(d.counters().bytes_read_core, 128);
    }

    #[test]
    fn utilisation_is_the_busy_share_and_an_overload_past_the_window_stays_at_one() {
        // 64 GB/s: 1000 ps a line. Ten lines at once on one of two channels.
        let mut d = dram(2, 64_000_000_000);
        for i in 0..10u64 {
            d.read(i * 128, 0, Agent::Core);
        }
        assert_eq!(d.busy_ps(), 10_000);
        assert_eq!(d.util(20_000), 10_000.0 / (2.0 * 20_000.0));
        // A window shorter than the backlog: the span of the bookings counts.
        assert_eq!(d.util(4_000), 10_000.0 / (2.0 * 10_000.0));
        d.reset_stats();
        assert_eq!(d.util(4_000), 0.0);
    }

    #[test]
    fn one_channel_stream_is_exact() {
        // 64 GB/s: one line per 1000 ps exactly.
        let n = 100u64;
        let mut d = dram(1, 64_000_000_000);
        let lat: Vec<Ps> = (0..n).map(|i| d.read(i * 64, 0, Agent::Core)).collect();
        assert_eq!(lat[0], 80_000);
        assert_eq!(*lat.last().unwrap(), 80_000 + (n - 1) * 1_000);
        assert_eq!(d.drained_at(), n * 1_000, "N lines occupy the channel for N × 64 B / bandwidth");
        assert_eq!(d.counters().queue_wait_ps, (0..n).map(|i| i * 1_000).sum::<u64>());

        // 19.2 GB/s: 3333.33… ps per line; the remainder is carried, not lost.
        let mut d = dram(1, 19_200_000_000);
        let lat: Vec<Ps> = (0..3).map(|i| d.read(i * 64, 0, Agent::Core)).collect();
        assert_eq!(lat, vec![80_000, 83_334, 86_667]);
        assert_eq!(d.drained_at(), 10_000);
        for i in 3..3000 {
            d.read(i * 64, 0, Agent::Core);
        }
        assert_eq!(d.drained_at(), 10_000_000);
    }

    #[test]
    fn channels_raise_the_ceiling_proportionally() {
        let n = 1024u64;
        let mut drained = vec![];
        for ch in [1u32, 2, 4] {
            let mut d = dram(ch, 19_200_000_000);
            for i in 0..n {
                d.read(i * 64, 0, Agent::Core);
            }
            drained.push(d.drained_at());
        }
        // 1024 lines × 3333.33 ps = 3 413 333.3 ps on one channel, halved per doubling.
        assert_eq!(drained, vec![3_413_334, 1_706_667, 853_334]);
        // Throughput = bytes / time: 19.2, 38.4, 76.8 GB/s.
        let gbps: Vec<f64> = drained.iter().map(|&t| (n * 64) as f64 / t as f64 * 1e3).collect();
        for (g, want) in gbps.iter().zip([19.2, 38.4, 76.8]) {
            assert!((g - want).abs() < 1e-3, "{g} vs {want}");
        }
    }

    #[test]
    fn loaded_latency_grows_past_the_ceiling() {
        // 64 GB/s = 1 line/ns. Offering a line every 2 ns never waits;
        // a line every 0.5 ns waits longer and longer.
        let mut d = dram(1, 64_000_000_000);
        let slow: Vec<Ps> = (0..100).map(|i| d.read(i * 64, i * 2_000, Agent::Core)).collect();
        assert!(slow.iter().all(|&l| l == 80_000));
        let mut d = dram(1, 64_000_000_000);
        let fast: Vec<Ps> = (0..100).map(|i| d.read(i * 64, i * 500, Agent::Core)).collect();
        assert_eq!(fast[99], 80_000 + 99 * 1_000 - 99 * 500);
        // The latencies returned are summed by agent.
        assert_eq!(d.counters().read_latency_ps, [fast.iter().sum::<Ps>(), 0, 0]);
        d.read(0, 1_000_000, Agent::Device);
        assert_eq!(d.counters().read_latency_ps[1], 80_000);
    }

    #[test]
    fn a_request_booked_ahead_does_not_delay_an_earlier_one() {
        // 64 GB/s: 1 ns a line. A core books 10 lines from t = 50 ns (the
        // end of its work unit); the NIC then writes at t = 0 and t = 45 ns.
        let mut d = dram(1, 64_000_000_000);
        for i in 0..10 {
            d.read(i * 64, 50_000, Agent::Core);
        }
        assert_eq!(d.write(640, 0, Agent::Device), 80_000, "the channel is idle at 0");
        assert_eq!(d.write(704, 45_000, Agent::Device), 80_000, "and at 45 ns");
        // At 49.5 ns there is no 1 ns gap before the booked run: after it.
        assert_eq!(d.write(768, 49_500, Agent::Device), 80_000 + 10_500);
        assert_eq!(d.drained_at(), 61_000);
        assert_eq!(d.counters().queue_wait_ps, (0..10).map(|i| i * 1_000).sum::<u64>() + 10_500);
    }

    #[test]
    fn writes_share_the_channel_and_count_per_agent() {
        let mut d = dram(1, 64_000_000_000);
        d.write(0, 0, Agent::Device);
        d.write(64, 0, Agent::Core);
        assert_eq!(d.read(128, 0, Agent::Device), 82_000);
        let c = *d.counters();
        assert_eq!((c.bytes_written_device, c.bytes_written_core, c.bytes_read_device), (64, 64, 64));
        d.reset_stats();
        assert_eq!(*d.counters(), DramCounters::default());
        assert_eq!(d.read(0, 0, Agent::Core), 83_000, "reset keeps the queue");
    }

    /// Writes that alternate between two rows of one bank, between reads of
    /// another bank, one request every 5 ns on one DDR4-2400 channel: booked
    /// as they come nearly every write is a row conflict; behind a 64-entry
    /// write queue the writes go out in batches, a row's writes together,
    /// so most are row hits and the bus turns around less often. A queued
    /// write costs the controller's fixed latency.
    #[test]
    fn a_write_queue_batches_writes_row_by_row() {
        use crate::mem::config::{MemConfig, WriteQueueConfig};
        let run = |entries: u32| {
            let mut cfg = MemConfig::altra().dram;
            cfg.channels = 1;
            cfg.write_queue = WriteQueueConfig { entries, ..WriteQueueConfig::default() };
            let mut d = Dram::new(&cfg);
            let mut lat = 0;
            for i in 0..2_000u64 {
                let now = i * 5_000;
                if i % 2 == 0 {
                    // Bank 1 (lines 128.., RoRaBaCoCh: 128 lines a row, 16 banks), a stream.
                    d.read((128 + i / 2 % 128) * 64, now, Agent::Core);
                } else {
                    // Bank 0, rows 0 and 1 (4096 lines apart: 16 banks × 2 ranks × 128).
                    let w = i / 2;
                    lat = d.write((w / 2 % 128 + (w % 2) * 4096) * 64, now, Agent::Device);
                }
            }
            (d.bank_counters(), lat, d.controller_ps())
        };
        let (plain, _, _) = run(0);
        let (queued, lat, fixed) = run(64);
        assert_eq!(lat, fixed);
        assert!(plain.row_conflicts >= 900, "{plain:?}");
        assert!(queued.row_conflicts * 10 < plain.row_conflicts, "{queued:?} vs {plain:?}");
        // Measured: 121 switches against 224, 1.5 µs of turnaround waits
        // against 9.1. The channel is idle at each write (one request every
        // 5 ns), so a drain starts past the low mark, 33 queued, and issues
        // 18: one switch each way per 18 writes, about 111 for the 1,000.
        assert!(queued.rw_switches * 10 < plain.rw_switches * 6, "{queued:?} vs {plain:?}");
        assert!(queued.turnaround_wait_ps * 4 < plain.turnaround_wait_ps, "{queued:?} vs {plain:?}");
    }

    #[test]
    fn a_read_served_from_the_write_queue_costs_the_controller_latency() {
        use crate::mem::config::MemConfig;
        let mut d = Dram::new(&MemConfig::altra().dram);
        d.write(0, 0, Agent::Device);
        let hit = d.read(0, 1_000, Agent::Core);
        assert_eq!(hit, d.controller_ps());
        let miss = d.read(1 << 20, 1_000, Agent::Device);
        assert!(miss > hit);
        assert_eq!(d.counters().read_latency_ps, [hit, miss, 0]);
    }

    /// A core books its reads ahead of the devices' events and the devices
    /// book theirs ahead of their events, so a read may be booked after
    /// the drain that issued a write it came before, or before a write that
    /// arrives after it. The queue answers for the read's own time.
    #[test]
    fn a_read_is_served_from_the_write_queue_as_the_queue_was_at_its_time() {
        use crate::mem::config::{MemConfig, WriteQueueConfig};
        let mut cfg = MemConfig::altra().dram;
        cfg.channels = 1;
        cfg.write_queue = WriteQueueConfig { entries: 8, ..WriteQueueConfig::default() }; // high 6: the 6th write drains
        let mut d = Dram::new(&cfg);
        let fixed = d.controller_ps();
        d.write(0, 10_000, Agent::Device);
        assert!(d.read(0, 9_999, Agent::Core) > fixed, "booked after the write, timed before it arrived");
        assert_eq!(d.read(0, 10_000, Agent::Core), fixed);
        // Five more writes at 20 ns: the 6th reaches the high mark, and a
        // drain takes min_writes (16), so all six go from 20 ns.
        for line in 1..6u64 {
            d.write(line * 64, 20_000, Agent::Device);
        }
        assert_eq!(d.write_queues.as_ref().unwrap().queued(), 0, "drained");
        assert_eq!(d.read(0, 15_000, Agent::Core), fixed, "booked after the drain, timed before it");
        assert!(d.read(0, 200_000, Agent::Core) > fixed, "after the write went to DRAM");
        assert_eq!(d.write_queues.as_ref().unwrap().read_hits, 2);
    }
}
