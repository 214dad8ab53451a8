//! One RX/TX queue pair of a port: the descriptor rings in host memory and
//! what the NIC keeps for each — the RX descriptor cache and its pending
//! write-backs, the TX fetch and read positions and their completions.
//!
//! Software (a stack) reads and refills the rings directly, as a driver
//! does; the NIC side moves only through the port's engines (`port.rs`).
//! Write-backs are kept as (time visible, position) in order, so software
//! reads them when it polls and needs no event for each.

use std::collections::VecDeque;

use super::desc_cache::RxDescCache;
use super::ring::{RxRing, TxRing};
use crate::engine::time::Ps;
use crate::engine::Modulus;

/// Counters of one receive queue (DPDK's per-queue xstats).
#[derive(Debug, Default, Clone, Copy)]
pub struct RxQueueCounters {
    /// Frames DMA'd into this queue's buffers.
    pub packets: u64,
    pub bytes: u64,
}

/// Counters of one transmit queue.
#[derive(Debug, Default, Clone, Copy)]
pub struct TxQueueCounters {
    /// Frames read from host memory for transmission.
    pub packets: u64,
    pub bytes: u64,
    /// Packets software freed because this ring was full (testpmd's TX-dropped).
    pub ring_full_drops: u64,
}

/// Write-backs the NIC issued to one ring: (time visible, descriptors done
/// up to), in order; each becomes visible no earlier than the one before.
#[derive(Default)]
pub struct Writebacks(VecDeque<(Ps, u64)>);

impl Writebacks {
    /// A write-back of the ring up to `upto`, globally visible at `visible`
    /// (or when the one before it is); returns when software can see it.
    #[inline]
    pub fn push(&mut self, visible: Ps, upto: u64) -> Ps {
        let t = visible.max(self.0.back().map_or(0, |w| w.0));
        self.0.push_back((t, upto));
        t
    }

    /// Those visible by `now` become what software sees: moves `done` on.
    #[inline]
    pub fn see(&mut self, now: Ps, done: &mut u64) {
        while let Some(&(t, upto)) = self.0.front() {
            if t > now {
                break;
            }
            *done = upto;
            self.0.pop_front();
        }
    }

    /// When the next write-back becomes visible, if one is on its way.
    #[inline]
    pub fn next(&self) -> Option<Ps> {
        self.0.front().map(|w| w.0)
    }
}

/// The completion side of a ConnectX-style receive queue (`connectx`): the
/// ring's slots are the work queue (16 B buffer descriptors the driver
/// posts, the NIC fetches) and the driver's software ring of mbufs beside
/// it; the NIC reports each frame with an entry of its own in this
/// completion queue, and learns how far the driver has posted from the
/// doorbell record, a line in host memory the driver writes and the NIC
/// reads (DPDK mlx5: `*rxq->cq_db`, `*rxq->rq_db` after each rx_burst).
#[derive(Debug, Clone, Copy)]
pub struct CompletionQueue {
    pub base: u64,
    pub entry_bytes: u64,
    /// The doorbell record's line.
    pub db_record: u64,
}

pub struct RxQueue {
    pub ring: RxRing,
    /// `connectx`: the completion queue and doorbell record (`None`: ixgbe,
    /// descriptors written back in place, an MMIO tail doorbell).
    pub cq: Option<CompletionQueue>,
    pub desc: RxDescCache,
    pub wb_pending: Writebacks,
    pub wb_timer_armed: bool,
    /// The stream that drains this queue found its TX ring full at its last
    /// transmit (an input of the port's drop attribution).
    pub tx_blocked: bool,
    pub counters: RxQueueCounters,
}

impl RxQueue {
    pub fn new(ring: RxRing, desc: RxDescCache) -> Self {
        RxQueue { ring, cq: None, desc, wb_pending: Writebacks::default(), wb_timer_armed: false, tx_blocked: false, counters: Default::default() }
    }

    /// The queue as a ConnectX-style one, with this completion queue.
    pub fn with_cq(self, cq: CompletionQueue) -> Self {
        RxQueue { cq: Some(cq), ..self }
    }

    /// What the driver reads to learn that position `pos` holds a frame:
    /// its completion entry, or (ixgbe) its written-back descriptor.
    #[inline]
    pub fn completion_addr(&self, pos: u64) -> u64 {
        match &self.cq {
            // As many entries as the work queue has descriptors.
            Some(cq) => cq.base + self.ring.ring.slot(pos) as u64 * cq.entry_bytes,
            None => self.ring.ring.desc_addr(pos),
        }
    }

    /// Write-backs visible by `now` become what software sees.
    #[inline]
    pub fn see_writebacks(&mut self, now: Ps) {
        self.wb_pending.see(now, &mut self.ring.done);
    }

    /// When the next write-back becomes visible, if one is on its way.
    #[inline]
    pub fn next_writeback(&self) -> Option<Ps> {
        self.wb_pending.next()
    }
}

pub struct TxQueue {
    pub ring: TxRing,
    /// A completion write-back every this many descriptors (the PMD's
    /// `tx_rs_thresh`; the kernel driver asks for one per packet).
    pub rs: Modulus,
    /// The tail the NIC was given by doorbells.
    pub(super) nic_tail: u64,
    /// Descriptors fetched (or in flight) up to here.
    pub(super) fetched: u64,
    /// When the last descriptor fetch completes (fetches complete in order).
    pub(super) fetch_done: Ps,
    /// Descriptors that have arrived at the NIC, up to here.
    pub(super) arrived: u64,
    /// Descriptors whose frames the NIC has started to read.
    pub(super) sent: u64,
    /// Completion write-backs issued.
    pub wb_pending: Writebacks,
    pub counters: TxQueueCounters,
}

impl TxQueue {
    pub fn new(ring: TxRing, rs: u64) -> Self {
        TxQueue { ring, rs: Modulus::new(rs), nic_tail: 0, fetched: 0, fetch_done: 0, arrived: 0, sent: 0, wb_pending: Writebacks::default(), counters: Default::default() }
    }

    #[inline]
    pub fn see_writebacks(&mut self, now: Ps) {
        self.wb_pending.see(now, &mut self.ring.done);
    }

    #[inline]
    pub fn next_writeback(&self) -> Option<Ps> {
        self.wb_pending.next()
    }

    /// Frames whose descriptors have arrived and whose payload is not read yet.
    #[inline]
    pub(super) fn readable(&self) -> bool {
        self.sent < self.arrived
    }
}
