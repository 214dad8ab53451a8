//! The poll-mode driver on one core (SPEC 2.8), with DPDK semantics, run
//! to completion: each loop iteration polls the core's streams in turn —
//! rx_burst on the stream's RX queue (read the written-back descriptors and
//! the mbuf headers, refill the slots from the mempool's per-core cache,
//! ring the tail doorbell every `rx_free_thresh` refills), the application
//! on the burst, tx_burst on the stream's TX queue (in chunks of
//! `tx_rs_thresh`, freeing sent mbufs when short of descriptors, one tail
//! doorbell per chunk).
//!
//! An application that transmits through TX buffers (`rte_eth_tx_buffer`:
//! l2fwd, l3fwd; `App::tx_buffering`) gathers each port's packets until
//! `tx_buffer` of them are there, then one tx_burst sends them; the drain
//! timer, checked at the start of each iteration, flushes every buffer
//! each `tx_drain_ps` (l2fwd's `BURST_TX_DRAIN_US`). A core with
//! packets in a buffer and nothing to receive polls until that time.
//!
//! An empty poll costs cycles. When a whole iteration finds nothing, the
//! core skips its empty polls arithmetically (same cost and phase as
//! polling) until the next write-back of one of its queues can be seen, or
//! sleeps until one is issued (`rx_ready` wakes it at the next poll
//! boundary). The driver's state is read at the start of each stream's
//! poll; the memory system sees its accesses at their issue times.
//!
//! Pipeline mode: a receiving core hands each burst, after rx_burst and
//! the refill, to the ring of the next worker in turn (what does not fit is
//! freed and counted); a worker polls its ring instead of a NIC queue,
//! runs the application on what it dequeues and transmits on its own TX
//! queue of the port each packet leaves from. A worker sleeps when its ring
//! has nothing on the way and is woken by the enqueue that fills it.
//!
//! Read first: DPDK Programmer's Guide, "Poll Mode Driver" and "Ring
//! Library", and the ixgbe driver's receive and transmit paths; params.md
//! §6a for the defaults.

pub mod config;
pub mod shared;

use serde_json::{json, Value};

use super::app::{App, AppCx, TxBuffering, Verdict};
use super::ring::Entry;
use super::{Event, Out, StackCx, StackDrops, Stream};
use crate::cpu::{Category, CodeRegion, Core, Work};
use crate::engine::stats::StatSink;
use crate::engine::time::Ps;
use crate::framebuf::Fate;
use crate::nic::{NicEvent, Slot};
use config::PmdConfig;

/// The code region of the poll loop (rx_burst, tx_burst, the mempool).
pub(crate) const PMD_CODE: u16 = 256;

#[derive(Debug, Default, Clone)]
struct Counters {
    /// rx_burst calls that found no mbuf to refill with.
    rx_nombuf: u64,
    /// rx_burst calls that returned nothing.
    empty_polls: u64,
    /// Packets consumed by the application (rxonly, touchdrop).
    app_consumed: u64,
    /// Generated frames freed because the TX ring was full (testpmd txonly).
    txonly_unsent: u64,
    /// TX buffers sent because they were full, and flushed by the drain timer.
    tx_buffer_sends: u64,
    tx_drain_flushes: u64,
}

/// How a stream's poll ended.
enum Polled {
    Packets,
    /// No mbuf to refill with: the iteration ends early.
    NoMbuf,
    /// The application's work unit is pending at the horizon
    /// (`sim.core_horizon`): the rest of the iteration waits for it.
    Suspended(Verdict, TxBuffering),
}

/// What is left of an iteration suspended in the application's work unit
/// on stream `stream`: the application's verdict, then the rest of the poll
/// and the streams after it. The step that resumes it is at the core's
/// `pending_at()`.
#[derive(Debug, Clone, Copy)]
struct Resume {
    stream: usize,
    verdict: Verdict,
    buffering: TxBuffering,
}

pub struct Pmd {
    cfg: PmdConfig,
    id: usize,
    streams: Vec<Stream>,
    sleeping: bool,
    /// Duration of one empty iteration, measured at the last one.
    poll_ps: Ps,
    work: Work,
    mbufs: Vec<u32>,
    touched: Vec<u64>,
    batch: Vec<Slot>,
    tx: Vec<Slot>,
    free: Vec<u32>,
    bufs: Vec<(u32, u64)>,
    /// Packets per rx_burst, by count.
    burst_hist: Vec<u64>,
    c: Counters,
    /// Pipeline, receiving core: the workers' rings it feeds, and the next one.
    feeds: Vec<usize>,
    next_feed: usize,
    /// Pipeline, worker: the ring it drains, and its TX queue on every port.
    drains: Option<usize>,
    tx_queue: usize,
    entries: Vec<Entry>,
    /// A ConnectX-style queue: which of the host's shared queues this core polls (`shared.rs`).
    shared: Option<usize>,
    positions: Vec<u64>,
    /// An iteration suspended in the application's work unit.
    resume: Option<Resume>,
    /// The core's part in sharing its queue (`parent`, `worker`, `claimant`, …), if it shares one.
    share_role: Option<&'static str>,
    /// Each port's TX buffer (by port), and the stream that last filled it.
    tx_buffers: Vec<(Stream, Vec<Slot>)>,
    /// When the drain timer last ticked.
    last_drain: Ps,
    /// A sleeping core's wake-up for its drain timer, if it has one, and
    /// such wake-ups made moot by a write-back that woke the core sooner
    /// (their events run nothing).
    drain_wake: Option<Ps>,
    moot_wakes: Vec<Ps>,
}

impl Pmd {
    pub fn new(cfg: &PmdConfig, id: usize, streams: Vec<Stream>) -> Pmd {
        Pmd {
            cfg: *cfg,
            id,
            streams,
            sleeping: false,
            poll_ps: 1,
            work: Work::with_capacity(Category::Rx, 4096),
            mbufs: Vec::with_capacity(cfg.burst as usize),
            touched: Vec::with_capacity(256),
            batch: Vec::with_capacity(cfg.burst as usize),
            tx: Vec::with_capacity(cfg.burst as usize),
            free: Vec::with_capacity(cfg.burst as usize),
            bufs: Vec::with_capacity(cfg.burst as usize),
            burst_hist: vec![0; cfg.burst as usize + 1],
            c: Counters::default(),
            feeds: Vec::new(),
            next_feed: 0,
            drains: None,
            tx_queue: 0,
            entries: Vec::with_capacity(cfg.burst as usize),
            shared: None,
            positions: Vec::with_capacity(cfg.rxd as usize),
            resume: None,
            share_role: None,
            tx_buffers: Vec::new(),
            last_drain: 0,
            drain_wake: None,
            moot_wakes: Vec::new(),
        }
    }

    /// A core on the ConnectX-style queue `k` of the host's shared queues
    /// (`shared.rs`), counting up to `max_batch` packets per loop.
    /// `role` names its part when several cores share the queue.
    pub fn on_shared(self, k: usize, max_batch: usize, role: Option<&'static str>) -> Pmd {
        Pmd { shared: Some(k), burst_hist: vec![0; max_batch + 1], share_role: role, ..self }
    }

    /// A receiving core of a pipeline: polls `streams`, feeds the `rings` in turn.
    pub fn receiver(cfg: &PmdConfig, id: usize, streams: Vec<Stream>, rings: Vec<usize>) -> Pmd {
        Pmd { feeds: rings, ..Pmd::new(cfg, id, streams) }
    }

    /// A worker of a pipeline: drains `ring`, transmits on queue `tx_queue` of each port.
    pub fn worker(cfg: &PmdConfig, id: usize, ring: usize, tx_queue: usize) -> Pmd {
        Pmd { drains: Some(ring), tx_queue, ..Pmd::new(cfg, id, Vec::new()) }
    }

    /// "rx", "worker", or "run-to-completion".
    pub fn role(&self) -> &'static str {
        if let Some(r) = self.share_role {
            return r;
        }
        match (self.drains, self.feeds.is_empty()) {
            (Some(_), _) => "worker",
            (None, false) => "rx",
            (None, true) => "run-to-completion",
        }
    }

    #[inline]
    fn exec(&mut self, cx: &mut StackCx) {
        cx.core.exec(&self.work, cx.mem);
    }

    /// Charges the mempool's touched addresses as one work unit.
    fn exec_touched(&mut self, cx: &mut StackCx, cat: Category, instr: u64) {
        cx.exec_touched(&mut self.work, cat, instr, &self.touched);
    }

    fn schedule_loop(&self, cx: &mut StackCx, t: Ps) {
        // `Ps::MAX`: the unit waits for loads queued at the memory, which wakes it.
        if t != Ps::MAX {
            cx.out.schedule(t, Event::Core(self.id as u16));
        }
    }

    /// One loop iteration over the core's streams.
    fn iteration(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        if let Some(r) = self.drains {
            return self.drain_ring(r, now, cx, app);
        }
        if self.shared.is_some() {
            return self.shared_iteration(now, cx, app);
        }
        let start = cx.core.now();
        self.streams_from(0, now, start, false, cx, app);
    }

    /// The iteration's polls from stream `from` on (it began at `start`;
    /// `busy`: an earlier poll found packets).
    fn streams_from(&mut self, from: usize, now: Ps, start: Ps, mut busy: bool, cx: &mut StackCx, app: &mut dyn App) {
        for i in from..self.streams.len() {
            let s = self.streams[i];
            let t = if i == 0 { now } else { cx.core.now() };
            cx.nic.ports[s.rx_port].rxq[s.rx_queue].see_writebacks(t);
            cx.nic.ports[s.tx_port].txq[s.tx_queue].see_writebacks(t);
            let rxq = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
            let n = rxq.ring.ready().min(self.cfg.burst as u64) as usize;
            if n == 0 {
                let addr = rxq.completion_addr(rxq.ring.next);
                cx.core.empty_poll(self.cfg.costs.empty_poll_instr as u64, addr, cx.mem);
                self.c.empty_polls += 1;
                continue;
            }
            match self.poll_stream(s, n, cx, app) {
                Polled::Packets => busy = true,
                Polled::NoMbuf => {
                    self.retry_poll(s, cx);
                    return;
                }
                Polled::Suspended(verdict, buffering) => {
                    self.resume = Some(Resume { stream: i, verdict, buffering });
                    self.schedule_loop(cx, cx.core.pending_at().unwrap_or(now));
                    return;
                }
            }
        }
        if busy {
            self.schedule_loop(cx, cx.core.now());
        } else {
            self.idle(start, cx);
        }
    }

    /// rx_burst of `n` packets on the stream, the application, tx_burst.
    fn poll_stream(&mut self, s: Stream, n: usize, cx: &mut StackCx, app: &mut dyn App) -> Polled {
        let c = self.cfg.costs;
        // rx_burst: read the written-back descriptors and the mbuf headers.
        self.work.reset(Category::Rx).code(CodeRegion::user(PMD_CODE, c.code_bytes)).instr(c.rx_burst_instr as u64);
        self.batch.clear();
        let rxq = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        let rx = &rxq.ring;
        for i in 0..n as u64 {
            let pos = rx.next + i;
            let slot = rx.ring.slots[rx.ring.slot(pos)];
            self.work.read(rxq.completion_addr(pos)).instr(c.rx_pkt_instr as u64).write(cx.mbufs.mbuf_addr(slot.mbuf));
            self.batch.push(slot);
        }
        self.exec(cx);
        // Refill the slots with fresh mbufs.
        self.mbufs.clear();
        self.touched.clear();
        if !cx.mbufs.get_bulk(self.id, n, &mut self.mbufs, &mut self.touched) {
            self.c.rx_nombuf += 1;
            return Polled::NoMbuf;
        }
        self.exec_touched(cx, Category::Mempool, n as u64 * c.mempool_instr as u64);
        self.work.reset(Category::Rx);
        let rx = &mut cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring;
        for i in 0..n {
            let pos = rx.next + i as u64;
            let slot = rx.ring.slot(pos);
            let m = self.mbufs[i];
            rx.ring.slots[slot].mbuf = m;
            rx.ring.slots[slot].buf_addr = cx.mbufs.data_addr(m);
            self.work.instr(c.refill_instr as u64).write(rx.ring.desc_addr(pos));
        }
        rx.next += n as u64;
        rx.hold += n as u32;
        self.exec(cx);
        self.burst_hist[n] += 1;
        cx.core.account_mut().add_packets(n as u64);
        if self.feeds.is_empty() {
            // What the core's own earlier steps of this call scheduled
            // (another stream's doorbells) bounds its horizon too.
            let horizon = match cx.horizon {
                Ps::MAX => Ps::MAX,
                h => cx.out.events.iter().fold(h, |h, e| h.min(e.0)),
            };
            if let Some((verdict, buffering)) = self.run_app(s, cx, app, horizon) {
                return Polled::Suspended(verdict, buffering);
            }
        } else {
            self.hand_off(s, cx);
        }
        self.poll_tail(s, cx);
        Polled::Packets
    }

    /// The end of a stream's poll: the RX tail doorbell, every
    /// `rx_free_thresh` refills.
    fn poll_tail(&mut self, s: Stream, cx: &mut StackCx) {
        let rx = &mut cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring;
        if rx.hold > self.cfg.rx_free_thresh {
            rx.hold = 0;
            let tail = rx.tail();
            cx.rx_doorbell(&mut self.work, Category::Rx, s.rx_port, s.rx_queue, tail);
        }
    }

    /// The context the application runs in, for packets of stream `s`.
    fn app_cx<'a>(&'a mut self, cx: &'a mut StackCx, s: Stream, horizon: Ps) -> AppCx<'a> {
        let port = &cx.nic.ports[s.tx_port];
        let (port_mac, peer_mac, port_ip, peer_ip) = (port.mac, port.peer, port.ip, port.peer_ip);
        let rx_port_mac = cx.nic.ports[s.rx_port].mac;
        AppCx {
            core: cx.core,
            mem: cx.mem,
            frames: cx.frames,
            mbufs: cx.mbufs,
            work: &mut self.work,
            costs: &self.cfg.costs,
            core_id: self.id,
            rx_port: s.rx_port,
            rx_port_mac,
            port_mac,
            peer_mac,
            port_ip,
            peer_ip,
            tx: &mut self.tx,
            free: &mut self.free,
            nombuf: &mut self.c.rx_nombuf,
            user_rx: 0,
            user_tx: 0,
            kernel_app_instr: 0,
            scratch: &mut self.mbufs,
            touched: &mut self.touched,
            horizon,
        }
    }

    /// The application on the received batch, then the mbufs it frees go
    /// back and what it sends goes to tx_burst. With a `horizon` (not
    /// `Ps::MAX`), the application's last work unit may still be pending
    /// when it returns: then its verdict is returned, for
    /// [`after_app`](Self::after_app) once the unit ends.
    fn run_app(&mut self, s: Stream, cx: &mut StackCx, app: &mut dyn App, horizon: Ps) -> Option<(Verdict, TxBuffering)> {
        self.tx.clear();
        self.free.clear();
        let batch = std::mem::take(&mut self.batch);
        let verdict = app.burst(&mut self.app_cx(cx, s, horizon), &batch);
        let buffering = app.tx_buffering();
        self.batch = batch;
        if cx.core.pending_at().is_some() {
            return Some((verdict, buffering));
        }
        self.after_app(s, verdict, buffering, cx);
        None
    }

    /// What becomes of the batch once the application has said.
    fn after_app(&mut self, s: Stream, verdict: Verdict, buffering: TxBuffering, cx: &mut StackCx) {
        let batch = std::mem::take(&mut self.batch);
        match verdict {
            Verdict::Forward => self.send(s, &batch, cx, buffering),
            Verdict::Consume => {
                let t = cx.core.now();
                self.c.app_consumed += batch.len() as u64;
                cx.out.consumed.extend(batch.iter().map(|p| (t, p.frame)));
                self.mbufs.clear();
                self.mbufs.extend(batch.iter().map(|p| p.mbuf));
                self.put_mbufs(cx);
            }
            Verdict::Listed => {
                if !self.free.is_empty() {
                    self.mbufs.clear();
                    self.mbufs.append(&mut self.free);
                    self.put_mbufs(cx);
                }
                if !self.tx.is_empty() {
                    let tx = std::mem::take(&mut self.tx);
                    self.send(s, &tx, cx, buffering);
                    self.tx = tx;
                }
            }
        }
        self.batch = batch;
    }

    /// Hands the application's packets for the stream's port to tx_burst,
    /// at once or through the port's TX buffer.
    fn send(&mut self, s: Stream, pkts: &[Slot], cx: &mut StackCx, buffering: TxBuffering) {
        let size = self.cfg.tx_buffer as usize;
        let port = s.tx_port;
        let direct = match buffering {
            _ if size == 0 => true,
            TxBuffering::None => true,
            TxBuffering::All => false,
            TxBuffering::SmallBursts { direct_from } => {
                pkts.len() >= direct_from as usize && self.tx_buffers.get(port).is_none_or(|b| b.1.is_empty())
            }
        };
        if direct {
            return self.tx_burst(s, pkts, cx, false);
        }
        if self.tx_buffers.len() <= port {
            self.tx_buffers.resize_with(port + 1, || (s, Vec::with_capacity(size)));
        }
        self.tx_buffers[port].0 = s;
        for &p in pkts {
            self.tx_buffers[port].1.push(p);
            if self.tx_buffers[port].1.len() >= size {
                self.c.tx_buffer_sends += 1;
                self.flush(port, cx);
            }
        }
    }

    /// tx_burst of what port `port`'s TX buffer holds.
    fn flush(&mut self, port: usize, cx: &mut StackCx) {
        let s = self.tx_buffers[port].0;
        let mut pkts = std::mem::take(&mut self.tx_buffers[port].1);
        self.tx_burst(s, &pkts, cx, false);
        pkts.clear();
        self.tx_buffers[port].1 = pkts;
    }

    /// The drain timer: at least `tx_drain_ps` since its last tick, every
    /// TX buffer goes to tx_burst. The loop checks the timer every
    /// iteration, so it ticks every `tx_drain_ps` (plus up to one
    /// iteration, neglected) whether or not the core had work: a core that
    /// slept past ticks resumes on their grid.
    fn drain_tx_buffers(&mut self, now: Ps, cx: &mut StackCx) {
        let period = self.cfg.tx_drain_ps;
        if self.tx_buffers.is_empty() || now < self.last_drain + period {
            return;
        }
        self.last_drain += (now - self.last_drain) / period * period;
        for port in 0..self.tx_buffers.len() {
            if !self.tx_buffers[port].1.is_empty() {
                self.c.tx_drain_flushes += 1;
                self.flush(port, cx);
            }
        }
    }

    /// When the drain timer next flushes, if a TX buffer holds packets.
    fn next_drain(&self) -> Option<Ps> {
        self.tx_buffers.iter().any(|b| !b.1.is_empty()).then(|| self.last_drain + self.cfg.tx_drain_ps)
    }

    /// Returns the mbufs gathered in `self.mbufs` to the mempool (one bulk put).
    fn put_mbufs(&mut self, cx: &mut StackCx) {
        self.touched.clear();
        let n = self.mbufs.len() as u64;
        cx.mbufs.put_bulk(self.id, &self.mbufs, &mut self.touched);
        self.exec_touched(cx, Category::Mempool, n * self.cfg.costs.mempool_instr as u64);
    }

    /// tx_burst with ixgbe semantics: a burst goes out in chunks of
    /// `tx_rs_thresh` (as ixgbe's vector and simple transmit paths split
    /// it), each freeing done mbufs when short of descriptors, writing its
    /// descriptors and ringing the tail doorbell; what finds the ring full
    /// is freed by the application (testpmd).
    fn tx_burst(&mut self, s: Stream, batch: &[Slot], cx: &mut StackCx, generated: bool) {
        let mut sent = 0;
        for part in batch.chunks(self.cfg.tx_rs_thresh as usize) {
            let k = self.tx_chunk(s, part, cx);
            sent += k;
            if k < part.len() {
                break;
            }
        }
        let full = sent < batch.len();
        if self.drains.is_none() {
            cx.nic.ports[s.rx_port].rxq[s.rx_queue].tx_blocked = full;
        }
        if full {
            // testpmd frees what it could not send.
            let dropped = &batch[sent..];
            if generated {
                self.c.txonly_unsent += dropped.len() as u64;
            } else {
                cx.nic.ports[s.tx_port].txq[s.tx_queue].counters.ring_full_drops += dropped.len() as u64;
            }
            for d in dropped {
                cx.frames.end(d.frame, Fate::TxRing);
            }
            self.mbufs.clear();
            self.mbufs.extend(dropped.iter().map(|d| d.mbuf));
            self.put_mbufs(cx);
        }
    }

    /// One chunk of a tx_burst; returns how many packets it placed.
    fn tx_chunk(&mut self, s: Stream, part: &[Slot], cx: &mut StackCx) -> usize {
        let p = self.cfg;
        let rs = p.tx_rs_thresh as u64;
        let tx = &mut cx.nic.ports[s.tx_port].txq[s.tx_queue].ring;
        if tx.free() < p.tx_free_thresh as u64 && tx.done >= tx.freed + rs {
            // The descriptor with the RS bit says the whole batch is done.
            self.work.reset(Category::Tx).instr(rs * p.costs.tx_free_instr as u64).read(tx.ring.desc_addr(tx.freed + rs - 1));
            self.mbufs.clear();
            for pos in tx.freed..tx.freed + rs {
                self.mbufs.push(tx.ring.slots[tx.ring.slot(pos)].mbuf);
            }
            tx.freed += rs;
            self.exec(cx);
            self.put_mbufs(cx);
        }
        let tx = &mut cx.nic.ports[s.tx_port].txq[s.tx_queue].ring;
        let k = (part.len() as u64).min(tx.free()) as usize;
        self.work.reset(Category::Tx).instr(p.costs.tx_burst_instr as u64);
        for slot in &part[..k] {
            let pos = tx.tail;
            let i = tx.ring.slot(pos);
            tx.ring.slots[i] = *slot;
            self.work.instr(p.costs.tx_pkt_instr as u64).write(tx.ring.desc_addr(pos));
            tx.tail += 1;
        }
        let tail = tx.tail;
        self.exec(cx);
        if k > 0 {
            let t = cx.nic.io_of(s.tx_port).mmio_write(cx.core.mmio_write(Category::Tx), 4);
            cx.out.schedule(t, Event::Nic(NicEvent::TxDoorbell { port: s.tx_port as u8, queue: s.tx_queue as u16, tail: tail as u32 }));
        }
        k
    }

    /// An application that generates its frames (testpmd txonly): each
    /// iteration takes a burst of mbufs per stream, has frames written into
    /// them, and transmits them, without polling RX.
    fn generate(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        for i in 0..self.streams.len() {
            let s = self.streams[i];
            let t = if i == 0 { now } else { cx.core.now() };
            cx.nic.ports[s.rx_port].rxq[s.rx_queue].see_writebacks(t);
            cx.nic.ports[s.tx_port].txq[s.tx_queue].see_writebacks(t);
            let n = self.cfg.burst as usize;
            self.mbufs.clear();
            self.touched.clear();
            if !cx.mbufs.get_bulk(self.id, n, &mut self.mbufs, &mut self.touched) {
                self.c.rx_nombuf += 1;
                self.retry_poll(s, cx);
                return;
            }
            self.exec_touched(cx, Category::Mempool, n as u64 * self.cfg.costs.mempool_instr as u64);
            self.bufs.clear();
            for &m in &self.mbufs {
                self.bufs.push((m, cx.mbufs.data_addr(m)));
            }
            let bufs = std::mem::take(&mut self.bufs);
            let mut out = std::mem::take(&mut self.batch);
            out.clear();
            app.generate(&mut self.app_cx(cx, s, Ps::MAX), &bufs, &mut out);
            debug_assert_eq!(out.len(), bufs.len(), "an application builds a packet in every mbuf it is given");
            self.bufs = bufs;
            cx.core.account_mut().add_packets(out.len() as u64);
            self.tx_burst(s, &out, cx, true);
            self.batch = out;
        }
        self.schedule_loop(cx, cx.core.now());
    }

    /// Pipeline, receiving core: the burst goes to the next worker's ring;
    /// what does not fit is freed. The worker wakes if it sleeps.
    fn hand_off(&mut self, s: Stream, cx: &mut StackCx) {
        let r = self.feeds[self.next_feed];
        self.next_feed = (self.next_feed + 1) % self.feeds.len();
        let n = self.batch.len();
        self.work.reset(Category::Ring);
        let k = cx.rings[r].enqueue_work(&mut self.work, &self.cfg.costs.ring, n);
        self.exec(cx);
        let t = cx.core.now();
        let tx_port = s.tx_port as u16;
        cx.rings[r].commit(t, self.batch[..k].iter().map(|&slot| Entry { slot, tx_port }));
        if k > 0 {
            cx.out.wakes.push((t, cx.rings[r].consumer as u16));
        }
        if k < n {
            cx.rings[r].counters.full_drops += (n - k) as u64;
            self.mbufs.clear();
            for d in &self.batch[k..] {
                cx.frames.end(d.frame, Fate::SwRing);
                self.mbufs.push(d.mbuf);
            }
            self.put_mbufs(cx);
        }
    }

    /// Pipeline, worker: one burst from the ring, the application on each
    /// run of packets leaving from the same port, tx_burst on this worker's queue.
    fn drain_ring(&mut self, r: usize, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        let start = cx.core.now();
        let n = cx.rings[r].ready(now, self.cfg.burst as usize);
        if n == 0 {
            let addr = cx.rings[r].poll_addr();
            cx.core.empty_poll(self.cfg.costs.empty_poll_instr as u64, addr, cx.mem);
            self.c.empty_polls += 1;
            return self.idle(start, cx);
        }
        self.work.reset(Category::Ring);
        self.entries.clear();
        cx.rings[r].dequeue(&mut self.work, &self.cfg.costs.ring, n, &mut self.entries);
        self.exec(cx);
        self.burst_hist[n] += 1;
        cx.core.account_mut().add_packets(n as u64);
        let entries = std::mem::take(&mut self.entries);
        for run in entries.chunk_by(|a, b| a.tx_port == b.tx_port) {
            let port = run[0].tx_port as usize;
            self.batch.clear();
            self.batch.extend(run.iter().map(|e| e.slot));
            let s = Stream { rx_port: port, rx_queue: self.tx_queue, tx_port: port, tx_queue: self.tx_queue };
            self.run_app(s, cx, app, Ps::MAX);
        }
        self.entries = entries;
        self.schedule_loop(cx, cx.core.now());
    }

    /// No mbuf to work with: poll again (never sleep: packets may be waiting).
    #[cold]
    #[inline(never)]
    fn retry_poll(&mut self, s: Stream, cx: &mut StackCx) {
        let rxq = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        let addr = rxq.completion_addr(rxq.ring.next);
        let t = cx.core.empty_poll(self.cfg.costs.empty_poll_instr as u64, addr, cx.mem);
        self.schedule_loop(cx, t);
    }

    /// A whole iteration found nothing (it began at `start`): skip the
    /// polls until the next write-back is visible, or sleep.
    fn idle(&mut self, start: Ps, cx: &mut StackCx) {
        let after = cx.core.now();
        self.poll_ps = (after - start).max(1);
        if let Some(k) = self.shared {
            if self.id != 0 && cx.shared[k].design == config::RxSharing::ParentWorker {
                // A worker waits for the parent's publication, which wakes it.
                self.sleeping = true;
                return;
            }
        }
        let next = match self.drains {
            Some(r) => cx.rings[r].next_visible(self.cfg.burst as usize),
            None => self.streams.iter().filter_map(|s| cx.nic.ports[s.rx_port].rxq[s.rx_queue].next_writeback()).min(),
        };
        // Polls until a write-back is visible (the last one before it), or
        // until the drain timer is due (the first one at or after it).
        let drain = self.next_drain().map(|t| t.saturating_sub(after).div_ceil(self.poll_ps));
        let polls = match next {
            Some(t) => Some(drain.unwrap_or(u64::MAX).min(t.saturating_sub(after) / self.poll_ps)),
            None => drain,
        };
        match polls {
            // Nothing in flight but the drain timer: sleep until it is due;
            // a write-back issued before then wakes the core sooner
            // (`rx_ready`; the polls are charged when it wakes).
            Some(polls) if next.is_none() => {
                let resume = after + polls * self.poll_ps;
                self.schedule_loop(cx, resume);
                self.sleeping = true;
                self.drain_wake = Some(resume);
            }
            Some(polls) => {
                self.c.empty_polls += polls * self.streams.len().max(1) as u64;
                let resume = cx.core.idle_until(after + polls * self.poll_ps);
                self.schedule_loop(cx, resume);
            }
            // Nothing in flight: sleep until a write-back is issued.
            None => self.sleeping = true,
        }
    }
}

impl super::Stack for Pmd {
    fn name(&self) -> &'static str {
        "pmd"
    }

    fn run(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        if let Some(i) = self.moot_wakes.iter().position(|&t| t == now) {
            self.moot_wakes.swap_remove(i);
            return;
        }
        if let Some(r) = self.resume {
            // The application's unit, pending at the horizon, goes on; the
            // iteration after it once it ends. Only the step scheduled for
            // that resumes it: any other is moot (none is scheduled today).
            if cx.core.pending_at() != Some(now) {
                return;
            }
            if !cx.core.resume(cx.mem, cx.horizon) {
                return self.schedule_loop(cx, cx.core.pending_at().unwrap_or(now));
            }
            self.resume = None;
            let s = self.streams[r.stream];
            self.after_app(s, r.verdict, r.buffering, cx);
            self.poll_tail(s, cx);
            // A poll found packets, so the iteration's start is not needed (no idle skip).
            return self.streams_from(r.stream + 1, now, now, true, cx, app);
        }
        if self.drain_wake.take() == Some(now) {
            // Woken by the drain timer: it polled until now.
            self.c.empty_polls += now.saturating_sub(cx.core.now()) / self.poll_ps * self.streams.len().max(1) as u64;
        }
        self.sleeping = false;
        cx.core.idle_until(now);
        self.drain_tx_buffers(cx.core.now(), cx);
        if app.generates() {
            self.generate(now, cx, app);
        } else {
            self.iteration(now, cx, app);
        }
    }

    /// Wakes a sleeping core at the first poll boundary at or after `t`,
    /// charging the polls it skipped as idle.
    fn rx_ready(&mut self, t: Ps, _q: Option<(usize, usize)>, core: &mut Core, out: &mut Out) {
        if !self.sleeping {
            return;
        }
        self.sleeping = false;
        let now = core.now();
        let polls = t.saturating_sub(now).div_ceil(self.poll_ps);
        self.c.empty_polls += polls * self.streams.len().max(1) as u64;
        let wake = now + polls * self.poll_ps;
        if let Some(d) = self.drain_wake.take() {
            if wake >= d {
                // The drain timer's wake-up comes first (the core polls until then).
                return;
            }
            self.moot_wakes.push(d);
        }
        core.idle_until(wake);
        out.schedule(wake, Event::Core(self.id as u16));
    }

    fn tx_done(&mut self, _t: Ps, _q: (usize, usize), _core: &mut Core, _out: &mut Out) {}

    fn burst_histogram(&self) -> &[u64] {
        &self.burst_hist
    }

    fn result_json(&self) -> Value {
        json!({
            "role": self.role(),
            "rx_nombuf": self.c.rx_nombuf,
            "empty_polls": self.c.empty_polls,
            "app_consumed": self.c.app_consumed,
            "txonly_unsent": self.c.txonly_unsent,
            "tx_buffer_sends": self.c.tx_buffer_sends,
            "tx_drain_flushes": self.c.tx_drain_flushes,
        })
    }

    fn drops(&self) -> StackDrops {
        StackDrops::default()
    }

    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("empty_polls", self.c.empty_polls, "rx_burst calls that returned nothing");
        s.count("rx_nombuf", self.c.rx_nombuf, "rx_burst calls that found no mbuf to refill with");
    }

    fn reset_stats(&mut self) {
        self.c = Counters::default();
        self.burst_hist.iter_mut().for_each(|n| *n = 0);
    }
}
