//! One NIC port: the MAC's RX FIFO and RSS, the RX DMA engine, the TX
//! descriptor engine and payload reads, the TX FIFO and the wire, the drop
//! attribution, and the port's queue pairs.
//!
//! ```text
//! wire ─▶ RSS ─▶ RX FIFO ─▶ DMA engine ──PCIe──▶ buffer (mem/DCA) ─▶ descriptor write-back
//!                              ▲ descriptor prefetch ◀── RX ring of the frame's queue ◀── doorbell
//! wire ◀─ TX FIFO ◀─ payload DMA read ◀─ TX descriptor fetch (per queue) ◀── doorbell
//!                     └─▶ completion write-back (every `rs` descriptors)
//! ```
//!
//! Every step takes the current time and books its transfers on the port's
//! PCIe link and its memory accesses in the memory system; what happens
//! later is an event for the owner of the port ([`super::NicOut`]).
//!
//! Simplified: one DMA write engine per port handles frames in FIFO order —
//! a frame whose queue has no descriptor blocks the frames behind it (as
//! the 82599 does without SRRCTL.DROP_EN, DPDK's default); the TX FIFO
//! reserves a frame's bytes when its payload read is issued and frees them
//! when the frame has left for the wire; with several TX queues the engine
//! takes one frame from each queue that has one, in turn; RX descriptor
//! prefetches may complete out of order; a write-back on the timer does not
//! wait for every pending frame's data (with `sim.dma_at_memory_time` every
//! write-back waits for all the data the port sent before it, of any queue:
//! posted writes do not pass one another). A chip's packet rate
//! (`max_pps`, [`NicDev`]) spaces the frames of all its ports, in each
//! direction, at least 1/max_pps apart.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use super::drop_fsm::DropFsm;
use super::queue::{RxQueue, TxQueue};
use super::ring::DESC_BYTES;
use super::rss::Rss;
use super::rx_fifo::RxFifo;
use super::{Env, NicEvent, NicOut};
use crate::engine::stats::HasStats;
use crate::engine::time::{bits_to_ps, Ps};
use crate::engine::Modulus;
use crate::framebuf::{Fate, FrameId, FramePool};
use crate::mem::{MemSystem, Ticket};
use crate::pcie::Kind;
use crate::wire::ethernet::{Mac, FCS_LEN};

/// What a port's engines need to know of its configuration, in base units.
#[derive(Debug, Clone, Copy)]
pub struct PortParams {
    pub tx_fifo_bytes: u64,
    pub rx_wb_timer_ps: Ps,
    /// Bytes of a received frame not written to its buffer (the stripped FCS: 4, or 0 with `nic.keep_crc`).
    pub rx_strip_bytes: u32,
    pub tx_fetch_batch: u64,
    pub tx_desc_cache: u64,
    /// Payload reads the TX engine has in flight at most (0: no limit).
    pub tx_reads_in_flight: usize,
    /// One-way PCIe latency of the port's link.
    pub pcie_latency_ps: Ps,
    pub wire_rate_bps: u64,
    /// `sim.dma_at_memory_time`: a payload read from host memory is made
    /// (I/O path and memory) at an event when it reaches the memory side,
    /// one request latency after the engine issues it, not at the issue;
    /// and, where posted credits do not wait for the memory, the memory
    /// system takes received data and RX write-backs at an event when they
    /// arrive, not when they are sent.
    pub at_memory: bool,
}

/// A write sent with `PortParams::at_memory`, waiting for its event at the
/// memory side.
#[derive(Debug, Clone, Copy)]
enum RxWrite {
    /// A received frame's data.
    Data { addr: u64, len: u32 },
    /// The write-back of queue `q`'s descriptors `first..first + n`.
    WriteBack { q: u16, first: u64, n: u64 },
}

/// A payload read issued, waiting for its event at the memory side
/// (`PortParams::at_memory`).
#[derive(Debug, Clone, Copy)]
struct TxRead {
    q: u16,
    pos: u64,
    frame: FrameId,
    bytes: u32,
    addr: u64,
    issued: Ps,
}

/// A port's addresses and its peer's.
#[derive(Debug, Clone, Copy)]
pub struct PortAddrs {
    pub mac: Mac,
    pub ip: Ipv4Addr,
    pub peer: Mac,
    pub peer_ip: Ipv4Addr,
}

/// Counters of a port, named as DPDK's xstats name them.
#[derive(Debug, Default, Clone, Copy)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames dropped because the RX FIFO was full.
    pub rx_missed_errors: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

pub struct Port {
    /// The port's number on the host.
    pub id: u16,
    /// The PCIe link (NIC device) the port sits behind.
    pub dev: usize,
    /// The port's MAC and IPv4 address, and those of the station at the other end of its link.
    pub mac: Mac,
    pub ip: Ipv4Addr,
    pub peer: Mac,
    pub peer_ip: Ipv4Addr,
    pub params: PortParams,
    pub fifo: RxFifo,
    pub fsm: DropFsm,
    pub rss: Rss,
    pub rxq: Vec<RxQueue>,
    pub txq: Vec<TxQueue>,
    pub counters: PortCounters,
    dma_free_at: Ps,
    dma_scheduled: bool,
    /// The TX FIFO: (time the frame has left for the wire, bytes), oldest first.
    tx_fifo: VecDeque<(Ps, u32)>,
    tx_fifo_used: u64,
    tx_space_pending: bool,
    /// With `tx_reads_in_flight`: when each payload read in flight is done,
    /// and whether a `TxReadDone` is scheduled.
    tx_reads: Vec<Ps>,
    tx_read_pending: bool,
    /// Payload reads issued and not yet at the memory side, oldest first
    /// (their slots in `tx_reads` are `Ps::MAX` until then).
    tx_at_memory: VecDeque<TxRead>,
    /// Payload reads at the memory side whose lines wait in the DRAM read
    /// queue (or behind one that waits), oldest first: when the other
    /// lines are there, and the queued lines' tickets.
    tx_mem_wait: VecDeque<(TxRead, Ps, Vec<Ticket>)>,
    /// Writes sent and not yet at the memory side, in the order sent (the
    /// order they arrive in: posted writes do not pass one another).
    rx_at_memory: VecDeque<RxWrite>,
    /// When the last of them arrives, and when the data the memory system
    /// has taken so far is all visible.
    rx_at_memory_last: Ps,
    rx_data_visible: Ps,
    /// When the last frame read for transmission is in the TX FIFO (frames leave in order).
    tx_last_ready: Ps,
    /// When the wire is free after the frames already queued.
    wire_free_at: Ps,
    /// The TX queue the payload engine serves next.
    tx_turn: usize,
    /// Bytes the RX DMA engine has moved since it last found no descriptor
    /// because software had not given any back: less than the FIFO holds
    /// means software still shaped the FIFO's fill (a drop's cause).
    rx_bytes_since_starved: u64,
}

impl Port {
    pub fn new(id: usize, dev: usize, addrs: PortAddrs, params: PortParams, rx_fifo_bytes: u64, rss: Rss, rxq: Vec<RxQueue>, txq: Vec<TxQueue>) -> Port {
        Port {
            id: id as u16,
            dev,
            mac: addrs.mac,
            ip: addrs.ip,
            peer: addrs.peer,
            peer_ip: addrs.peer_ip,
            params,
            fifo: RxFifo::new(rx_fifo_bytes),
            fsm: DropFsm::default(),
            rss,
            rxq,
            txq,
            counters: Default::default(),
            dma_free_at: 0,
            dma_scheduled: false,
            tx_fifo: VecDeque::new(),
            tx_fifo_used: 0,
            tx_space_pending: false,
            tx_reads: Vec::new(),
            tx_read_pending: false,
            tx_at_memory: VecDeque::new(),
            tx_mem_wait: VecDeque::new(),
            rx_at_memory: VecDeque::new(),
            rx_at_memory_last: 0,
            rx_data_visible: 0,
            tx_last_ready: 0,
            wire_free_at: 0,
            tx_turn: 0,
            rx_bytes_since_starved: u64::MAX,
        }
    }

    /// A frame arrived whole from the wire at `now`: RSS picks its queue,
    /// the drop FSM sees the port's state, the FIFO takes it or drops it.
    pub fn frame_arrival<O: NicOut>(&mut self, id: FrameId, now: Ps, frames: &mut FramePool, e: &mut Env<'_, O>) {
        let bytes = frames.frame_bytes(id);
        let queue = if self.rss.is_single() { 0 } else { self.rss.queue(frames.data(id)) };
        // The queue that decides whether the FIFO moves: the head frame's.
        let q = &self.rxq[self.fifo.head().map_or(queue, |h| h.2)];
        let fits = self.fifo.fits(bytes);
        // Did software leave the DMA engine without descriptors within the last FIFO's worth of bytes?
        let starved_lately = self.rx_bytes_since_starved < self.fifo.capacity_bytes();
        let short = q.desc.software_short();
        if self.fsm.on_arrival(!fits, self.fifo.is_empty(), short, q.tx_blocked, starved_lately).is_some() {
            self.counters.rx_missed_errors += 1;
            // What keeps the FIFO full now: a core that cannot send,
            // software that starved the engine lately, or else the DMA path.
            // The drop machine above counts the same drop by its episode
            // (a TX chain lasts until the FIFO empties; a core episode starts
            // only when an arrival sees the RX ring full), so the two may
            // split a run differently; both are reported.
            let starved = short || starved_lately;
            let cause = match (q.tx_blocked, starved) {
                (true, _) => Fate::RxFifoTx,
                (false, true) => Fate::RxFifoCore,
                (false, false) => Fate::RxFifoDma,
            };
            frames.end(id, cause);
            return;
        }
        self.fifo.push(id, bytes, queue);
        self.kick_rx_dma(now, e);
    }

    /// Starts the DMA engine on the FIFO's head: at once if it is free (no
    /// event needed), else when it becomes free.
    fn kick_rx_dma<O: NicOut>(&mut self, now: Ps, e: &mut Env<'_, O>) {
        if self.dma_scheduled || self.fifo.is_empty() {
            return;
        }
        let free = self.dma_free_at.max(e.dev.rx_next);
        if free <= now {
            self.rx_dma(now, e);
        } else {
            self.dma_scheduled = true;
            e.out.schedule(free, NicEvent::RxDma { port: self.id as u8 });
        }
    }

    /// The DMA engine moves the FIFO's head frame into its queue's next buffer.
    pub(super) fn rx_dma<O: NicOut>(&mut self, now: Ps, e: &mut Env<'_, O>) {
        self.dma_scheduled = false;
        if e.dev.rx_next > now {
            // Another port of the chip took this slot of its packet rate.
            return self.kick_rx_dma(now, e);
        }
        let Some((id, bytes, q)) = self.fifo.head() else { return };
        let Some(pos) = self.rxq[q].desc.take() else {
            if self.rxq[q].desc.ring_full() {
                self.rx_bytes_since_starved = 0;
            }
            // No descriptor: wait for a prefetch or a doorbell to kick the engine.
            self.prefetch_rx_descs(q, now, e);
            return;
        };
        self.fifo.pop();
        let rq = &mut self.rxq[q];
        let slot = rq.ring.ring.slot(pos);
        rq.ring.ring.slots[slot].frame = id;
        let len = bytes - self.params.rx_strip_bytes;
        let addr = rq.ring.ring.slots[slot].buf_addr;
        let (mem, mut arrive) = (&mut *e.mem, now);
        let at_memory = self.params.at_memory && !e.dev.io.posted_credits_finite();
        let visible = if at_memory {
            arrive = e.dev.io.dma_write(now, len, Kind::Payload);
            write_later(&mut self.rx_at_memory, &mut self.rx_at_memory_last, self.id as u8, arrive, RxWrite::Data { addr, len }, e.out);
            now
        } else {
            e.dev.io.dma_write_to(now, len, Kind::Payload, |at| {
                arrive = at;
                mem.device_write(addr, len, at)
            })
        };
        self.dma_free_at = arrive.saturating_sub(self.params.pcie_latency_ps).max(now);
        if e.dev.frame_interval_ps > 0 {
            e.dev.rx_next = now + e.dev.frame_interval_ps;
        }
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += bytes as u64;
        self.rx_bytes_since_starved = self.rx_bytes_since_starved.saturating_add(bytes as u64);
        rq.counters.packets += 1;
        rq.counters.bytes += bytes as u64;
        if let Some((first, n)) = rq.desc.complete(now) {
            self.write_back_rx(q, now, first, n, visible, e);
        } else if !rq.wb_timer_armed {
            if let Some(t) = rq.desc.wb_deadline(self.params.rx_wb_timer_ps) {
                rq.wb_timer_armed = true;
                e.out.schedule(t, NicEvent::RxWbTimer { port: self.id as u8, queue: q as u16 });
            }
        }
        self.prefetch_rx_descs(q, now, e);
        self.kick_rx_dma(now, e);
    }

    /// The first prefetch of a queue whose ring the driver has just armed.
    pub(super) fn prime<O: NicOut>(&mut self, q: usize, now: Ps, e: &mut Env<'_, O>) {
        self.prefetch_rx_descs(q, now, e);
    }

    fn prefetch_rx_descs<O: NicOut>(&mut self, q: usize, now: Ps, e: &mut Env<'_, O>) {
        let rq = &mut self.rxq[q];
        let Some((first, n)) = rq.desc.start_prefetch() else { return };
        let (mem, base, size) = (&mut *e.mem, rq.ring.ring.base, rq.ring.ring.modulus());
        let done = e.dev.io.dma_read_from(now, (n * DESC_BYTES) as u32, Kind::Descriptor, &mut |off, len, at| {
            at + ring_read_time(mem, base, size, first + off as u64 / DESC_BYTES, len as u64 / DESC_BYTES, at)
        });
        e.out.schedule(done, NicEvent::RxDescFetched { port: self.id as u8, queue: q as u16, n: n as u32 });
    }

    /// The oldest write sent with `at_memory` reaches the memory side at
    /// `now`: the memory system takes it. A write-back is visible once it
    /// and every frame's data taken before it are.
    pub(super) fn rx_write_at_memory<O: NicOut>(&mut self, now: Ps, e: &mut Env<'_, O>) {
        let Some(w) = self.rx_at_memory.pop_front() else { return };
        match w {
            RxWrite::Data { addr, len } => {
                let v = e.mem.device_write(addr, len, now);
                self.rx_data_visible = self.rx_data_visible.max(v);
            }
            RxWrite::WriteBack { q, first, n } => {
                let q = q as usize;
                let rq = &mut self.rxq[q];
                let mut visible = self.rx_data_visible;
                if let Some(cq) = rq.cq {
                    for pos in first..first + n {
                        visible = visible.max(e.mem.device_write(rq.completion_addr(pos), cq.entry_bytes as u32, now));
                    }
                } else {
                    let ring = &rq.ring.ring;
                    let head = (ring.size() - ring.modulus().rem(first)).min(n);
                    visible = visible.max(e.mem.device_write(ring.desc_addr(first), (head * DESC_BYTES) as u32, now));
                    if n > head {
                        visible = visible.max(e.mem.device_write(ring.desc_addr(first + head), ((n - head) * DESC_BYTES) as u32, now));
                    }
                }
                let t = rq.wb_pending.push(visible, first + n);
                e.out.rx_writeback(t, self.id as usize, q);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_back_rx<O: NicOut>(&mut self, q: usize, now: Ps, first: u64, n: u64, data_visible: Ps, e: &mut Env<'_, O>) {
        if self.params.at_memory && !e.dev.io.posted_credits_finite() {
            return self.write_back_rx_later(q, now, first, n, e);
        }
        let rq = &mut self.rxq[q];
        if let Some(cq) = rq.cq {
            // One completion entry per frame, each its own line(s).
            let mut visible = data_visible;
            for pos in first..first + n {
                let (mem, addr) = (&mut *e.mem, rq.completion_addr(pos));
                let v = e.dev.io.dma_write_to(now, cq.entry_bytes as u32, Kind::Descriptor, |at| mem.device_write(addr, cq.entry_bytes as u32, at));
                visible = visible.max(v);
            }
            let t = rq.wb_pending.push(visible, first + n);
            e.out.rx_writeback(t, self.id as usize, q);
            return;
        }
        let ring = &rq.ring.ring;
        let head = (ring.size() - ring.modulus().rem(first)).min(n);
        let (mem, a, b) = (&mut *e.mem, ring.desc_addr(first), ring.desc_addr(first + head));
        let visible = e.dev.io.dma_write_to(now, (n * DESC_BYTES) as u32, Kind::Descriptor, |arrive| {
            let mut visible = mem.device_write(a, (head * DESC_BYTES) as u32, arrive);
            if n > head {
                visible = visible.max(mem.device_write(b, ((n - head) * DESC_BYTES) as u32, arrive));
            }
            visible
        });
        let t = rq.wb_pending.push(visible.max(data_visible), first + n);
        e.out.rx_writeback(t, self.id as usize, q);
    }

    /// [`write_back_rx`](Self::write_back_rx) with `at_memory`: the link
    /// now, the memory system when the write-back arrives.
    #[inline(never)]
    fn write_back_rx_later<O: NicOut>(&mut self, q: usize, now: Ps, first: u64, n: u64, e: &mut Env<'_, O>) {
        let mut arrive = now;
        match self.rxq[q].cq {
            Some(cq) => {
                for _ in 0..n {
                    arrive = arrive.max(e.dev.io.dma_write(now, cq.entry_bytes as u32, Kind::Descriptor));
                }
            }
            None => arrive = e.dev.io.dma_write(now, (n * DESC_BYTES) as u32, Kind::Descriptor),
        }
        write_later(&mut self.rx_at_memory, &mut self.rx_at_memory_last, self.id as u8, arrive, RxWrite::WriteBack { q: q as u16, first, n }, e.out);
    }

    pub(super) fn rx_wb_timer<O: NicOut>(&mut self, q: usize, now: Ps, e: &mut Env<'_, O>) {
        let rq = &mut self.rxq[q];
        rq.wb_timer_armed = false;
        match rq.desc.wb_deadline(self.params.rx_wb_timer_ps) {
            Some(t) if t <= now => {
                if let Some((first, n)) = rq.desc.start_writeback() {
                    self.write_back_rx(q, now, first, n, now, e);
                }
            }
            Some(t) => {
                rq.wb_timer_armed = true;
                e.out.schedule(t, NicEvent::RxWbTimer { port: self.id as u8, queue: q as u16 });
            }
            None => {}
        }
    }

    /// A prefetch of `n` descriptors arrived, or the driver moved the tail
    /// (`tail` given): more descriptors may be fetched and the engine may run.
    pub(super) fn rx_descs_changed<O: NicOut>(&mut self, q: usize, fetched: Option<u64>, tail: Option<u64>, now: Ps, e: &mut Env<'_, O>) {
        if let Some(n) = fetched {
            self.rxq[q].desc.prefetch_done(n);
        }
        if let Some(t) = tail {
            self.rxq[q].desc.doorbell(t);
        }
        self.prefetch_rx_descs(q, now, e);
        self.kick_rx_dma(now, e);
    }

    /// Fetches TX descriptors the doorbell gave, in requests of up to
    /// `tx_fetch_batch`, while the NIC's descriptor cache (`tx_desc_cache`,
    /// fetches in flight included) has room.
    pub(super) fn fetch_tx_descs<O: NicOut>(&mut self, q: usize, now: Ps, e: &mut Env<'_, O>) {
        let (batch, cache) = (self.params.tx_fetch_batch, self.params.tx_desc_cache);
        let tq = &mut self.txq[q];
        loop {
            let room = cache - (tq.fetched - tq.sent);
            let n = (tq.nic_tail - tq.fetched).min(room).min(batch);
            if n == 0 {
                return;
            }
            let (mem, base, size, first) = (&mut *e.mem, tq.ring.ring.base, tq.ring.ring.modulus(), tq.fetched);
            let done = e.dev.io.dma_read_from(now, (n * DESC_BYTES) as u32, Kind::Descriptor, &mut |off, len, at| {
                at + ring_read_time(mem, base, size, first + off as u64 / DESC_BYTES, len as u64 / DESC_BYTES, at)
            });
            let done = done.max(tq.fetch_done);
            tq.fetch_done = done;
            tq.fetched += n;
            e.out.schedule(done, NicEvent::TxDescFetched { port: self.id as u8, queue: q as u16, upto: tq.fetched as u32 });
        }
    }

    pub(super) fn tx_doorbell(&mut self, q: usize, tail: u64) {
        let tq = &mut self.txq[q];
        tq.nic_tail = tq.nic_tail.max(tail);
    }

    pub(super) fn tx_descs_arrived(&mut self, q: usize, upto: u64) {
        let tq = &mut self.txq[q];
        tq.arrived = tq.arrived.max(upto);
    }

    /// The TX engine may go on (`TxFifoSpace`: a frame left the FIFO;
    /// `TxReadDone`: a payload read is done): it reads what it now can and
    /// fetches the descriptors its cache has room for.
    pub(super) fn tx_resume<O: NicOut>(&mut self, read_done: bool, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        if read_done {
            self.tx_read_pending = false;
        } else {
            self.tx_space_pending = false;
        }
        self.tx_read_payloads(now, frames, e);
        for q in 0..self.txq.len() {
            self.fetch_tx_descs(q, now, e);
        }
    }

    /// With `tx_reads_in_flight`, whether the TX engine has a free read at
    /// `now`; if not, it is woken when the first read in flight is done.
    #[inline(never)]
    fn tx_read_slot<O: NicOut>(&mut self, now: Ps, e: &mut Env<'_, O>) -> bool {
        let limit = self.params.tx_reads_in_flight;
        self.tx_reads.retain(|&done| done > now);
        if self.tx_reads.len() < limit {
            return true;
        }
        let first = self.tx_reads.iter().copied().min().unwrap_or(now);
        // A read not yet at the memory side has no end yet: its event goes on.
        if !self.tx_read_pending && first != Ps::MAX {
            self.tx_read_pending = true;
            e.out.schedule(first, NicEvent::TxReadDone { port: self.id as u8 });
        }
        false
    }

    /// The next TX queue with a frame to read, taking the queues in turn.
    #[inline]
    fn next_tx_queue(&mut self) -> Option<usize> {
        let n = self.txq.len();
        if n == 1 {
            return self.txq[0].readable().then_some(0);
        }
        for i in 0..n {
            let q = (self.tx_turn + i) % n;
            if self.txq[q].readable() {
                self.tx_turn = (q + 1) % n;
                return Some(q);
            }
        }
        None
    }

    /// Reads the frames of the arrived descriptors over PCIe while the TX FIFO
    /// has room for them, and queues each on the wire when it is in.
    pub(super) fn tx_read_payloads<O: NicOut>(&mut self, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        while let Some(&(leave, bytes)) = self.tx_fifo.front() {
            if leave > now {
                break;
            }
            self.tx_fifo_used -= bytes as u64;
            self.tx_fifo.pop_front();
        }
        let limited = self.params.tx_reads_in_flight > 0;
        while let Some(q) = self.next_tx_queue() {
            // A frame to read: it waits for a free read (this queue first next time).
            if limited && !self.tx_read_slot(now, e) {
                self.tx_turn = q;
                break;
            }
            let tq = &self.txq[q];
            let pos = tq.sent;
            let i = tq.ring.ring.slot(pos);
            let (s, split) = (tq.ring.ring.slots[i], tq.ring.split[i]);
            let bytes = frames.frame_bytes(s.frame);
            if self.tx_fifo_used + bytes as u64 > self.params.tx_fifo_bytes {
                if let (false, Some(&(leave, _))) = (self.tx_space_pending, self.tx_fifo.front()) {
                    self.tx_space_pending = true;
                    e.out.schedule(leave, NicEvent::TxFifoSpace { port: self.id as u8 });
                }
                // This queue goes first next time.
                self.tx_turn = q;
                break;
            }
            let len = bytes - FCS_LEN as u32;
            let at = now + self.params.pcie_latency_ps;
            if split == 0 && self.params.at_memory {
                // The FIFO's room and the read's slot are taken now, the read made at its event.
                if limited {
                    self.tx_reads.push(Ps::MAX);
                }
                self.tx_fifo_used += bytes as u64;
                self.tx_at_memory.push_back(TxRead { q: q as u16, pos, frame: s.frame, bytes, addr: s.buf_addr, issued: now });
                e.out.schedule(at, NicEvent::TxReadAtMemory { port: self.id as u8 });
                self.txq[q].sent += 1;
                continue;
            }
            if !self.tx_at_memory.is_empty() || !self.tx_mem_wait.is_empty() {
                // A read made at once would overtake those waiting for their events: frames leave in order.
                self.tx_turn = q;
                break;
            }
            // Headers from the buffer, the payload from where it lives.
            let h = (crate::wire::TCP_HEADERS as u32).min(len);
            let done = if split == 0 {
                // The memory system is asked as the read reaches it (line by line on gem5's path).
                let (mem, addr) = (&mut *e.mem, s.buf_addr);
                e.dev.io.dma_read_from(now, len, Kind::Payload, &mut |off, n, t| mem.device_read(addr + off as u64, n, t))
            } else {
                let (host, over_pcie, card) = if let (true, Some(m)) = (super::memory::on_card(split), e.dev.memory.as_mut()) {
                    // The payload is on the card; the host's headers come as the
                    // 64 B line they are padded to, clipped to their length.
                    let line = h.next_multiple_of(crate::mem::LINE_BYTES as u32);
                    m.clipped_bytes += (line - h) as u64;
                    (e.mem.device_read(s.buf_addr, line, at), line, m.read(split, len - h, now))
                } else {
                    (e.mem.device_read(s.buf_addr, h, at).max(e.mem.device_read(split, len - h, at)), len, now)
                };
                e.dev.io.dma_read(now, over_pcie, host.saturating_sub(at), Kind::Payload).max(card)
            };
            if limited {
                self.tx_reads.push(done);
            }
            self.tx_fifo_used += bytes as u64;
            self.tx_queue_frame(q, pos, s.frame, bytes, done, e);
            self.txq[q].sent += 1;
        }
    }

    /// A frame whose payload read is done at `done` (its FIFO room taken)
    /// goes into the TX FIFO in order and onto the wire; every `rs`
    /// descriptors a completion is written back.
    #[inline(always)]
    fn tx_queue_frame<O: NicOut>(&mut self, q: usize, pos: u64, frame: FrameId, bytes: u32, done: Ps, e: &mut Env<'_, O>) {
        let ready = done.max(self.tx_last_ready).max(e.dev.tx_next);
        if e.dev.frame_interval_ps > 0 {
            e.dev.tx_next = ready + e.dev.frame_interval_ps;
        }
        self.tx_last_ready = ready;
        // The frame leaves the FIFO once it is on the wire (same arithmetic as the link).
        let start = ready.max(self.wire_free_at);
        self.wire_free_at = start + bits_to_ps((bytes as u64 + crate::link::WIRE_OVERHEAD_BYTES as u64) * 8, self.params.wire_rate_bps);
        self.tx_fifo.push_back((self.wire_free_at, bytes));
        e.out.to_wire(ready, self.id as usize, frame);
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += bytes as u64;
        let tq = &mut self.txq[q];
        tq.counters.packets += 1;
        tq.counters.bytes += bytes as u64;
        if tq.rs.rem(pos + 1) == 0 {
            let (mem, addr) = (&mut *e.mem, tq.ring.ring.desc_addr(pos));
            let visible = e.dev.io.dma_write_to(ready, DESC_BYTES as u32, Kind::Descriptor, |at| mem.device_write(addr, DESC_BYTES as u32, at));
            let t = tq.wb_pending.push(visible, pos + 1);
            e.out.tx_writeback(t, self.id as usize, q);
        }
    }

    /// The oldest payload read issued with `at_memory` reaches the
    /// memory side at `now`: the I/O path and the memory system take it
    /// now (from its issue time, as if made then), its frame goes into the
    /// FIFO when it is done, and the engine goes on.
    pub(super) fn tx_read_at_memory<O: NicOut>(&mut self, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        let Some(r) = self.tx_at_memory.pop_front() else { return };
        let mem = &mut *e.mem;
        let len = r.bytes - FCS_LEN as u32;
        if mem.has_read_queue() && e.dev.io.answers_later() {
            // Its lines from DRAM wait in the controller's read queue; the
            // link is booked once they are picked (`tx_read_served`).
            let mut tickets = Vec::new();
            let known = mem.device_read_later(r.addr, len, now, &mut tickets);
            if !tickets.is_empty() || !self.tx_mem_wait.is_empty() {
                self.tx_mem_wait.push_back((r, known, tickets));
                self.tx_engine_on(now, frames, e);
                return;
            }
            let done = e.dev.io.dma_read_answered(r.issued, len, Kind::Payload, known);
            return self.tx_read_answered(r, done, now, frames, e);
        }
        let done = e.dev.io.dma_read_from(r.issued, len, Kind::Payload, &mut |off, n, t| mem.device_read(r.addr + off as u64, n, t));
        self.tx_read_answered(r, done, now, frames, e);
    }

    /// Does a payload read wait for the DRAM controller's picks?
    #[inline]
    pub fn waits_on_memory(&self) -> bool {
        !self.tx_mem_wait.is_empty()
    }

    /// The DRAM controller has made picks at `now`: the oldest payload
    /// reads whose queued lines it has all picked are answered, in order.
    pub(super) fn tx_read_served<O: NicOut>(&mut self, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        while let Some((_, _, tickets)) = self.tx_mem_wait.front() {
            if !tickets.iter().all(|&t| e.mem.read_ready(t)) {
                return;
            }
            let (r, known, tickets) = self.tx_mem_wait.pop_front().expect("a waiting read");
            let host = tickets.iter().fold(known, |h, &t| h.max(e.mem.take_read(t, false).expect("picked")));
            let done = e.dev.io.dma_read_answered(r.issued, r.bytes - FCS_LEN as u32, Kind::Payload, host);
            self.tx_read_answered(r, done, now, frames, e);
        }
    }

    /// A payload read at the memory side is answered, its data at the
    /// device at `done`: its frame goes into the FIFO then, and the engine goes on.
    fn tx_read_answered<O: NicOut>(&mut self, r: TxRead, done: Ps, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        if let Some(slot) = self.tx_reads.iter_mut().find(|d| **d == Ps::MAX) {
            *slot = done;
        }
        self.tx_queue_frame(r.q as usize, r.pos, r.frame, r.bytes, done, e);
        self.tx_engine_on(now, frames, e);
    }

    /// As `tx_resume`: the engine goes on, and the descriptor cache may have room.
    fn tx_engine_on<O: NicOut>(&mut self, now: Ps, frames: &FramePool, e: &mut Env<'_, O>) {
        self.tx_read_payloads(now, frames, e);
        for q in 0..self.txq.len() {
            self.fetch_tx_descs(q, now, e);
        }
    }

    /// Bytes in the RX FIFO at most (statistics).
    pub fn rx_fifo_max_bytes(&self) -> u64 {
        self.fifo.max_used_bytes()
    }

    /// Clears the counters (end of warm-up); the state stays.
    pub fn reset_counters(&mut self) {
        self.counters = Default::default();
        self.fsm.reset_stats();
        for q in &mut self.rxq {
            q.counters = Default::default();
        }
        for q in &mut self.txq {
            q.counters = Default::default();
        }
    }
}

/// Queues a write sent with `at_memory` that arrives at `arrive`: its event
/// comes no earlier than those of the writes sent before it (`last`).
#[inline(never)]
fn write_later<O: NicOut>(queue: &mut VecDeque<RxWrite>, last: &mut Ps, port: u8, arrive: Ps, w: RxWrite, out: &mut O) {
    *last = (*last).max(arrive);
    queue.push_back(w);
    out.schedule(*last, NicEvent::RxWriteAtMemory { port });
}

/// Time the host needs to answer a device read of `n` descriptors from
/// position `pos` of a ring at `base` with `size` slots (two pieces if it
/// wraps), reaching it at `at`.
fn ring_read_time(mem: &mut MemSystem, base: u64, size: Modulus, pos: u64, n: u64, at: Ps) -> Ps {
    let addr = |p: u64| base + size.rem(p) * DESC_BYTES;
    let first = (size.get() - size.rem(pos)).min(n);
    let mut t = mem.device_read(addr(pos), (first * DESC_BYTES) as u32, at).saturating_sub(at);
    if n > first {
        t = t.max(mem.device_read(addr(pos + first), ((n - first) * DESC_BYTES) as u32, at).saturating_sub(at));
    }
    t
}
