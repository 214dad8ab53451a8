//! A simulated host (SPEC 2.4–2.8): one NIC port with one RX/TX queue pair,
//! PCIe, the memory system with DCA, one core running a poll-mode driver and
//! an application, run to completion.
//!
//! ```text
//! wire ─▶ RX FIFO ─▶ DMA engine ──PCIe──▶ mbuf (mem/DCA) ─▶ descriptor write-back
//!                       ▲ descriptor prefetch ◀── RX ring ◀── refill + tail doorbell ◀─┐
//!                                                                                      │ core: rx_burst,
//! wire ◀─ link queue ◀─ payload DMA read ◀─ TX descriptor fetch ◀── tail doorbell ◀────┤ app, tx_burst
//!                        └─▶ completion write-back (every tx_rs_thresh) ──▶ tx_free ───┘
//! ```
//!
//! The NIC and the DMA engine are event driven; the core runs one loop
//! iteration (rx_burst, the application on each packet, tx_burst) per event,
//! its timing from the core model over the memory accesses each step makes at
//! real simulated addresses. The driver's state is read at the start of the
//! iteration; the memory system sees its accesses at their issue times.
//!
//! Simplified: the TX FIFO reserves a frame's bytes when its payload read is
//! issued and frees them when the frame has left for the wire; one DMA write
//! engine handles frames in order; an idle core skips its empty polls
//! arithmetically (same cost and phase as polling) until the next write-back
//! can be seen.

pub mod app;
pub mod config;
pub mod kernel;
pub mod kvs_app;
pub mod rings;

use serde_json::{json, Value};

use crate::config::SimConfig;
use crate::cpu::{AccessCost, Category, Core, MemPort, Work};
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{bits_to_ps, Ps, PS_PER_S};
use crate::link::WIRE_OVERHEAD_BYTES;
use crate::error::{Error, Result};
use crate::framebuf::{FrameId, FramePool};
use crate::mem::{Level, MemSystem};
use crate::nic::config::DESC_BYTES;
use crate::nic::{DropFsm, RxDescCache, RxFifo};
use crate::pcie::{Kind, PcieLink};
use crate::stack::pmd::Mempool;
use crate::wire::ethernet::{parse_mac, Mac, FCS_LEN};
use app::{AppKind, TxTemplate};
use config::ForwardMode;
pub use config::HostConfig;
use rings::{RxRing, Slot, TxRing};

/// Simulated physical addresses of the driver's structures.
const RX_RING_BASE: u64 = 0x1000_0000;
const TX_RING_BASE: u64 = 0x1010_0000;
const MEMPOOL_BASE: u64 = 0x2000_0000;
const CORE: usize = 0;

/// The host's own events; the system builder queues them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEvent {
    /// The RX DMA engine may take the next frame from the FIFO.
    RxDma,
    /// A prefetch of RX descriptors arrived.
    RxDescFetched(u64),
    /// The RX write-back timer fires.
    RxWbTimer,
    /// An RX tail doorbell reaches the NIC.
    RxDoorbell(u64),
    /// The core runs one loop iteration.
    CoreLoop,
    /// A TX tail doorbell reaches the NIC.
    TxDoorbell(u64),
    /// TX descriptors up to this position arrived at the NIC.
    TxDescFetched(u64),
    /// A frame left the TX FIFO for the wire: there may be room to read more.
    TxFifoSpace,
}

impl MemPort for MemSystem {
    #[inline]
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        let a = self.core_access(core, addr, write, now);
        AccessCost { latency_ps: a.latency_ps, l1_hit: a.level == Level::L1 }
    }
}

/// NIC and driver counters, named as DPDK's xstats name them.
#[derive(Debug, Default, Clone)]
struct Counters {
    rx_packets: u64,
    rx_bytes: u64,
    rx_missed_errors: u64,
    rx_nombuf: u64,
    tx_packets: u64,
    tx_bytes: u64,
    /// Packets the application could not transmit because the TX ring was full.
    tx_ring_full_drops: u64,
    /// Packets consumed by the application (rxonly, touchdrop).
    app_consumed: u64,
    /// testpmd txonly: frames built, and frames freed because the TX ring was full.
    txonly_built: u64,
    txonly_unsent: u64,
    empty_polls: u64,
    /// XOR of the touch digests of every packet read whole (touchfwd, touchdrop).
    touch_digest: u64,
    /// rx_burst calls by number of packets returned.
    burst_hist: Vec<u64>,
}

pub struct Host {
    cfg: HostConfig,
    app: AppKind,
    port_mac: Mac,
    peer_mac: Mac,
    pub core: Core,
    pub mem: MemSystem,
    pub pcie: PcieLink,
    pool: Mempool,
    // NIC receive side
    fifo: RxFifo,
    desc: RxDescCache,
    fsm: DropFsm,
    dma_free_at: Ps,
    dma_scheduled: bool,
    wb_timer_armed: bool,
    /// RX write-backs issued: (time visible, descriptors done up to), in order.
    /// Software reads them when it polls, so they need no events.
    wb_pending: std::collections::VecDeque<(Ps, u64)>,
    /// TX completion write-backs issued, likewise.
    tx_wb_pending: std::collections::VecDeque<(Ps, u64)>,
    // NIC transmit side
    nic_tx_tail: u64,
    tx_fetched: u64,
    /// When the last TX descriptor fetch completes (fetches complete in order).
    tx_fetch_done: Ps,
    /// TX descriptors that have arrived at the NIC, up to here.
    tx_arrived: u64,
    /// TX descriptors whose frames the NIC has started to read.
    tx_sent: u64,
    tx_last_ready: Ps,
    /// The TX FIFO: (time the frame has left for the wire, bytes), oldest first.
    /// Space is taken when the payload read is issued.
    tx_fifo: std::collections::VecDeque<(Ps, u32)>,
    tx_fifo_used: u64,
    tx_space_pending: bool,
    /// When the wire is free after the frames already queued, and its rate.
    wire_free_at: Ps,
    wire_rate_bps: u64,
    // driver
    rx: RxRing,
    tx: TxRing,
    tx_ring_full: bool,
    core_sleeping: bool,
    poll_ps: Ps,
    work: Work,
    mbufs: Vec<u32>,
    touched: Vec<u64>,
    batch: Vec<Slot>,
    tx_template: TxTemplate,
    /// The store, for `--app memcached`.
    kvs: Option<Box<kvs_app::KvsApp>>,
    /// The kernel stack (`stack = "kernel"`); None on the poll-mode driver.
    kernel: Option<Box<kernel::Kernel>>,
    /// A TX completion write-back every this many descriptors (the PMD's
    /// `tx_rs_thresh`; the kernel driver asks for one per packet).
    tx_rs: u64,
    counters: Counters,
    /// Events to queue, frames to put on the wire, frames the application consumed.
    pub out_events: Vec<(Ps, HostEvent)>,
    pub out_frames: Vec<(Ps, FrameId)>,
    pub consumed: Vec<(Ps, FrameId)>,
}

impl Host {
    /// `max_frame_bytes`: the largest frame (FCS included) the host will see
    /// or build; every mbuf must hold it.
    pub fn new(sim: &SimConfig, cfg: &HostConfig, max_frame_bytes: u32) -> Result<Host> {
        cfg.validate()?;
        let app = AppKind::from_config(&sim.app, &cfg.app)?;
        let core = Core::new(CORE, &cfg.cpu)?;
        let cycle_ps = PS_PER_S / cfg.cpu.freq_hz.max(1);
        let mem = MemSystem::new(&cfg.mem, 1, &[cycle_ps])?;
        let pcie = PcieLink::new(&cfg.pcie)?;
        let p = &cfg.pmd;
        let mut pool = Mempool::new(&p.mempool, 1, MEMPOOL_BASE);
        let mut need = max_frame_bytes.max(cfg.app.tx_frame_bytes) as u64 - FCS_LEN as u64;
        if app == AppKind::Memcached {
            need = need.max(kvs_app::MAX_REPLY_FRAME_BYTES as u64 - FCS_LEN as u64);
        }
        if pool.data_room() < need {
            return Err(Error::Config(crate::error::ConfigError::new(
                "host.pmd.mempool.buf_bytes",
                p.mempool.buf_bytes.to_string(),
                &format!(">= {} (headroom 128 B + the largest frame without FCS, {need} B)", need + 128),
            )));
        }
        // The driver arms every RX slot at start (rte_eth_dev_start).
        let (mut mbufs, mut touched) = (Vec::new(), Vec::new());
        if !pool.get_bulk(CORE, p.rxd as usize, &mut mbufs, &mut touched) {
            return Err(crate::error::ConfigError::new("host.pmd.mempool.mbufs", p.mempool.mbufs.to_string(), "enough mbufs to fill the RX ring").into());
        }
        let rx = RxRing::new(RX_RING_BASE, &mbufs);
        let n = &cfg.nic;
        let desc = RxDescCache::new(p.rxd, n.rx_desc_cache, n.rx_prefetch_threshold, n.rx_wb_threshold, rx.tail());
        let mac = |s: &str| parse_mac(s).unwrap_or_default();
        let mut h = Host {
            cfg: cfg.clone(),
            app,
            port_mac: mac(&sim.loadgen.dst_mac),
            peer_mac: mac(&sim.loadgen.src_mac),
            core,
            mem,
            pcie,
            pool,
            fifo: RxFifo::new(n.rx_fifo_bytes),
            desc,
            fsm: DropFsm::default(),
            dma_free_at: 0,
            dma_scheduled: false,
            wb_timer_armed: false,
            wb_pending: Default::default(),
            tx_wb_pending: Default::default(),
            nic_tx_tail: 0,
            tx_fetched: 0,
            tx_fetch_done: 0,
            tx_arrived: 0,
            tx_sent: 0,
            tx_last_ready: 0,
            tx_fifo: Default::default(),
            tx_fifo_used: 0,
            tx_space_pending: false,
            wire_free_at: 0,
            wire_rate_bps: sim.link.rate_bps,
            rx,
            tx: TxRing::new(TX_RING_BASE, p.txd),
            tx_ring_full: false,
            core_sleeping: false,
            poll_ps: 1,
            work: Work::with_capacity(Category::Rx, 4096),
            mbufs: Vec::with_capacity(p.burst as usize),
            touched: Vec::with_capacity(256),
            batch: Vec::with_capacity(p.burst as usize),
            tx_template: TxTemplate::new(
                mac(&sim.loadgen.dst_mac),
                mac(&sim.loadgen.src_mac),
                sim.loadgen.dst_ip.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
                sim.loadgen.src_ip.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
            ),
            kvs: if app == AppKind::Memcached { Some(Box::new(kvs_app::KvsApp::new(&cfg.app.kvs)?)) } else { None },
            kernel: (sim.stack == crate::config::Stack::Kernel).then(|| {
                let port = match app {
                    AppKind::Memcached => cfg.app.kvs.udp_port,
                    AppKind::Iperf => cfg.app.iperf_port,
                    _ => cfg.app.echo_port,
                };
                Box::new(kernel::Kernel::new(&cfg.kernel, port, app == AppKind::Iperf))
            }),
            tx_rs: if sim.stack == crate::config::Stack::Kernel { 1 } else { p.tx_rs_thresh as u64 },
            // Packets per rx_burst (or, on the kernel, per NAPI poll).
            counters: Counters {
                burst_hist: vec![0; if sim.stack == crate::config::Stack::Kernel { cfg.kernel.napi_budget } else { p.burst } as usize + 1],
                ..Default::default()
            },
            out_events: Vec::with_capacity(16),
            out_frames: Vec::with_capacity(p.burst as usize),
            consumed: Vec::with_capacity(p.burst as usize),
        };
        h.prefetch_rx_descs(0);
        h.out_events.push((0, HostEvent::CoreLoop));
        if let Some(k) = h.kernel.as_mut() {
            k.loop_pending = true;
        }
        Ok(h)
    }

    #[inline]
    fn schedule(&mut self, t: Ps, ev: HostEvent) {
        self.out_events.push((t, ev));
    }

    /// A frame arrived whole from the wire at `now`.
    pub fn frame_arrival(&mut self, pool: &mut FramePool, id: FrameId, now: Ps) {
        let bytes = pool.frame_bytes(id);
        let fits = self.fifo.fits(bytes);
        if self.fsm.on_arrival(!fits, self.fifo.is_empty(), self.desc.ring_full(), self.tx_ring_full).is_some() {
            self.counters.rx_missed_errors += 1;
            pool.free(id);
            return;
        }
        self.fifo.push(id, bytes);
        self.kick_rx_dma(now);
    }

    /// Starts the DMA engine on the FIFO's head: at once if it is free (no
    /// event needed), else when it becomes free.
    fn kick_rx_dma(&mut self, now: Ps) {
        if self.dma_scheduled || self.fifo.is_empty() {
            return;
        }
        if self.dma_free_at <= now {
            self.rx_dma(now);
        } else {
            self.dma_scheduled = true;
            self.schedule(self.dma_free_at, HostEvent::RxDma);
        }
    }

    pub fn handle(&mut self, now: Ps, ev: HostEvent, pool: &mut FramePool) {
        match ev {
            HostEvent::RxDma => self.rx_dma(now),
            HostEvent::RxDescFetched(n) => {
                self.desc.prefetch_done(n);
                self.prefetch_rx_descs(now);
                self.kick_rx_dma(now);
            }
            HostEvent::RxWbTimer => self.rx_wb_timer(now),
            HostEvent::RxDoorbell(tail) => {
                self.desc.doorbell(tail);
                self.prefetch_rx_descs(now);
                self.kick_rx_dma(now);
            }
            HostEvent::CoreLoop if self.kernel.is_some() => self.kernel_loop(now, pool),
            HostEvent::CoreLoop => self.core_loop(now, pool),
            HostEvent::TxDoorbell(tail) => {
                self.nic_tx_tail = self.nic_tx_tail.max(tail);
                self.fetch_tx_descs(now);
            }
            HostEvent::TxDescFetched(upto) => {
                self.tx_arrived = self.tx_arrived.max(upto);
                self.tx_read_payloads(now, pool);
                self.fetch_tx_descs(now);
            }
            HostEvent::TxFifoSpace => {
                self.tx_space_pending = false;
                self.tx_read_payloads(now, pool);
                self.fetch_tx_descs(now);
            }
        }
    }

    /// Time the host needs to answer a device read of [addr, addr+len) that
    /// reaches it at `at`.
    fn host_read_time(&mut self, addr: u64, len: u32, at: Ps) -> Ps {
        self.mem.device_read(addr, len, at).saturating_sub(at)
    }

    /// Reads `n` descriptors from `pos` of a ring (two pieces if it wraps).
    fn ring_read_time(&mut self, base_pos_addr: impl Fn(u64) -> u64, ring: u64, pos: u64, n: u64, at: Ps) -> Ps {
        let first = (ring - pos % ring).min(n);
        let mut t = self.host_read_time(base_pos_addr(pos), (first * DESC_BYTES) as u32, at);
        if n > first {
            t = t.max(self.host_read_time(base_pos_addr(pos + first), ((n - first) * DESC_BYTES) as u32, at));
        }
        t
    }

    fn prefetch_rx_descs(&mut self, now: Ps) {
        let Some((first, n)) = self.desc.start_prefetch() else { return };
        let at = now + self.cfg.pcie.latency_ps;
        let base = self.rx.ring.base;
        let ring = self.cfg.pmd.rxd as u64;
        let host = self.ring_read_time(|p| base + (p % ring) * DESC_BYTES, ring, first, n, at);
        let done = self.pcie.dma_read(now, (n * DESC_BYTES) as u32, host, Kind::Descriptor);
        self.schedule(done, HostEvent::RxDescFetched(n));
    }

    /// The DMA engine moves the FIFO's head frame into its mbuf.
    fn rx_dma(&mut self, now: Ps) {
        self.dma_scheduled = false;
        let Some((id, bytes)) = self.fifo.head() else { return };
        let Some(pos) = self.desc.take() else {
            // No descriptor: wait for a prefetch or a doorbell to kick the engine.
            self.prefetch_rx_descs(now);
            return;
        };
        self.fifo.pop();
        let slot = self.rx.ring.slot(pos);
        self.rx.ring.slots[slot].frame = id;
        let len = bytes - FCS_LEN as u32;
        let addr = self.pool.data_addr(self.rx.ring.slots[slot].mbuf);
        let arrive = self.pcie.dma_write(now, len, Kind::Payload);
        let visible = self.mem.device_write(addr, len, arrive);
        self.dma_free_at = arrive.saturating_sub(self.cfg.pcie.latency_ps).max(now);
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += bytes as u64;
        if let Some((first, n)) = self.desc.complete(now) {
            self.write_back_rx(now, first, n, visible);
        } else if !self.wb_timer_armed {
            if let Some(t) = self.desc.wb_deadline(self.cfg.nic.rx_wb_timer_ps) {
                self.wb_timer_armed = true;
                self.schedule(t, HostEvent::RxWbTimer);
            }
        }
        self.prefetch_rx_descs(now);
        self.kick_rx_dma(now);
    }

    fn write_back_rx(&mut self, now: Ps, first: u64, n: u64, data_visible: Ps) {
        let arrive = self.pcie.dma_write(now, (n * DESC_BYTES) as u32, Kind::Descriptor);
        let ring = self.cfg.pmd.rxd as u64;
        let head = (ring - first % ring).min(n);
        let mut visible = self.mem.device_write(self.rx.ring.desc_addr(first), (head * DESC_BYTES) as u32, arrive);
        if n > head {
            visible = visible.max(self.mem.device_write(self.rx.ring.desc_addr(first + head), ((n - head) * DESC_BYTES) as u32, arrive));
        }
        let t = visible.max(data_visible);
        let t = t.max(self.wb_pending.back().map_or(0, |w| w.0));
        self.wb_pending.push_back((t, first + n));
        if self.kernel.is_some() {
            self.raise_irq(t);
        } else if self.core_sleeping {
            self.wake_core(t);
        }
    }

    fn rx_wb_timer(&mut self, now: Ps) {
        self.wb_timer_armed = false;
        match self.desc.wb_deadline(self.cfg.nic.rx_wb_timer_ps) {
            Some(t) if t <= now => {
                if let Some((first, n)) = self.desc.start_writeback() {
                    self.write_back_rx(now, first, n, now);
                }
            }
            Some(t) => {
                self.wb_timer_armed = true;
                self.schedule(t, HostEvent::RxWbTimer);
            }
            None => {}
        }
    }

    /// Wakes a sleeping core at the first poll boundary at or after `t`,
    /// charging the polls it skipped as idle.
    fn wake_core(&mut self, t: Ps) {
        self.core_sleeping = false;
        let now = self.core.now();
        let polls = t.saturating_sub(now).div_ceil(self.poll_ps);
        self.counters.empty_polls += polls;
        let wake = now + polls * self.poll_ps;
        self.core.idle_until(wake);
        self.schedule(wake, HostEvent::CoreLoop);
    }

    fn core_loop(&mut self, now: Ps, pool: &mut FramePool) {
        self.core.idle_until(now);
        if self.app == AppKind::Testpmd(ForwardMode::Txonly) {
            self.tx_only(now, pool);
            return;
        }
        self.see_writebacks(now);
        let burst = self.cfg.pmd.burst as u64;
        let n = self.rx.ready().min(burst) as usize;
        if n == 0 {
            self.empty_poll();
            return;
        }
        let c = self.cfg.pmd.costs;
        // rx_burst: read the written-back descriptors and the mbuf headers.
        self.work.reset(Category::Rx).instr(c.rx_burst_instr as u64);
        self.batch.clear();
        for i in 0..n as u64 {
            let pos = self.rx.next + i;
            let s = self.rx.ring.slots[self.rx.ring.slot(pos)];
            self.work.read(self.rx.ring.desc_addr(pos)).instr(c.rx_pkt_instr as u64).write(self.pool.mbuf_addr(s.mbuf));
            self.batch.push(s);
        }
        self.core.exec(&self.work, &mut self.mem);
        // Refill the slots with fresh mbufs.
        self.mbufs.clear();
        self.touched.clear();
        if !self.pool.get_bulk(CORE, n, &mut self.mbufs, &mut self.touched) {
            self.counters.rx_nombuf += 1;
            self.retry_poll();
            return;
        }
        self.exec_touched(Category::Mempool, n as u64 * c.mempool_instr as u64);
        self.work.reset(Category::Rx);
        for i in 0..n {
            let pos = self.rx.next + i as u64;
            let slot = self.rx.ring.slot(pos);
            self.rx.ring.slots[slot].mbuf = self.mbufs[i];
            self.work.instr(c.refill_instr as u64).write(self.rx.ring.desc_addr(pos));
        }
        self.core.exec(&self.work, &mut self.mem);
        self.rx.next += n as u64;
        self.rx.hold += n as u32;
        self.counters.burst_hist[n] += 1;
        self.core.account_mut().add_packets(n as u64);
        self.run_app(pool);
        if self.rx.hold > self.cfg.pmd.rx_free_thresh {
            self.rx.hold = 0;
            let t = self.pcie.mmio_write(self.core.now(), 4);
            self.schedule(t, HostEvent::RxDoorbell(self.rx.tail()));
        }
        self.schedule(self.core.now(), HostEvent::CoreLoop);
    }

    /// What the NIC has written back by `now` is what software can see.
    fn see_writebacks(&mut self, now: Ps) {
        while let Some(&(t, upto)) = self.wb_pending.front() {
            if t > now {
                break;
            }
            self.rx.done = upto;
            self.wb_pending.pop_front();
        }
        while let Some(&(t, upto)) = self.tx_wb_pending.front() {
            if t > now {
                break;
            }
            self.tx.done = upto;
            self.tx_wb_pending.pop_front();
        }
    }

    /// testpmd's txonly engine: take a burst of mbufs, write a frame into
    /// each (Ethernet/IPv4/UDP from the port to its peer), transmit.
    fn tx_only(&mut self, now: Ps, pool: &mut FramePool) {
        self.see_writebacks(now);
        let n = self.cfg.pmd.burst as usize;
        self.mbufs.clear();
        self.touched.clear();
        if !self.pool.get_bulk(CORE, n, &mut self.mbufs, &mut self.touched) {
            self.counters.rx_nombuf += 1;
            self.retry_poll();
            return;
        }
        self.exec_touched(Category::Mempool, n as u64 * self.cfg.pmd.costs.mempool_instr as u64);
        let bytes = self.cfg.app.tx_frame_bytes;
        let c = self.cfg.pmd.costs;
        self.work.reset(Category::App);
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for i in 0..n {
            let frame = pool.alloc(bytes);
            self.tx_template.build(pool.data_mut(frame), bytes, self.counters.txonly_built);
            self.counters.txonly_built += 1;
            let addr = self.pool.data_addr(self.mbufs[i]);
            self.work.instr(c.header_instr as u64).write_lines(addr, crate::loadgen::frame::header_len(crate::config::Protocol::Udp) as u64, 0);
            batch.push(Slot { mbuf: self.mbufs[i], frame });
        }
        self.core.exec(&self.work, &mut self.mem);
        self.core.account_mut().add_packets(n as u64);
        self.tx_burst(&batch, pool);
        self.batch = batch;
        self.schedule(self.core.now(), HostEvent::CoreLoop);
    }

    /// No mbuf to work with: poll again (never sleep: packets may be waiting).
    fn retry_poll(&mut self) {
        let addr = self.rx.ring.desc_addr(self.rx.next);
        let t = self.core.empty_poll(self.cfg.pmd.costs.empty_poll_instr as u64, addr, &mut self.mem);
        self.schedule(t, HostEvent::CoreLoop);
    }

    fn empty_poll(&mut self) {
        let addr = self.rx.ring.desc_addr(self.rx.next);
        let before = self.core.now();
        let after = self.core.empty_poll(self.cfg.pmd.costs.empty_poll_instr as u64, addr, &mut self.mem);
        self.poll_ps = (after - before).max(1);
        self.counters.empty_polls += 1;
        match self.wb_pending.front().map(|w| w.0) {
            // A write-back is on its way: poll until it is visible.
            Some(t) => {
                let polls = t.saturating_sub(after) / self.poll_ps;
                self.counters.empty_polls += polls;
                let resume = self.core.idle_until(after + polls * self.poll_ps);
                self.schedule(resume, HostEvent::CoreLoop);
            }
            // Nothing in flight: sleep until a write-back is issued.
            None => self.core_sleeping = true,
        }
    }

    /// Charges the mempool's touched addresses as one work unit.
    fn exec_touched(&mut self, cat: Category, instr: u64) {
        self.work.reset(cat).instr(instr);
        for &a in &self.touched {
            self.work.write(a);
        }
        self.core.exec(&self.work, &mut self.mem);
    }

    /// The application on the received batch, then tx_burst or free.
    fn run_app(&mut self, pool: &mut FramePool) {
        if self.app == AppKind::Memcached {
            let batch = std::mem::take(&mut self.batch);
            self.serve_kvs(&batch, pool);
            self.batch = batch;
            return;
        }
        let c = self.cfg.pmd.costs;
        self.work.reset(Category::App);
        let batch = std::mem::take(&mut self.batch);
        for s in &batch {
            self.counters.touch_digest ^= app::process(self.app, &c, &mut self.work, self.pool.data_addr(s.mbuf), pool.data_mut(s.frame), self.port_mac, self.peer_mac);
        }
        self.core.exec(&self.work, &mut self.mem);
        if let AppKind::RxpTx { proc_time_ps } = self.app {
            self.core.spin_ps(proc_time_ps * batch.len() as u64);
        }
        if self.app.forwards() {
            self.tx_burst(&batch, pool);
        } else {
            let t = self.core.now();
            self.counters.app_consumed += batch.len() as u64;
            self.consumed.extend(batch.iter().map(|s| (t, s.frame)));
            self.free_mbufs(batch.iter().map(|s| s.mbuf));
        }
        self.batch = batch;
    }

    fn free_mbufs(&mut self, mbufs: impl Iterator<Item = u32>) {
        self.mbufs.clear();
        self.mbufs.extend(mbufs);
        self.put_mbufs();
    }

    /// Returns the mbufs gathered in `self.mbufs` to the mempool (one bulk put).
    fn put_mbufs(&mut self) {
        self.touched.clear();
        let n = self.mbufs.len() as u64;
        let m = std::mem::take(&mut self.mbufs);
        self.pool.put_bulk(CORE, &m, &mut self.touched);
        self.mbufs = m;
        self.exec_touched(Category::Mempool, n * self.cfg.pmd.costs.mempool_instr as u64);
    }

    /// tx_burst with ixgbe semantics: a burst goes out in chunks of
    /// `tx_rs_thresh` (as ixgbe's vector and simple transmit paths split
    /// it), each freeing done mbufs when short of descriptors, writing its
    /// descriptors and ringing the tail doorbell; what finds the ring full
    /// is freed by the application (testpmd).
    fn tx_burst(&mut self, batch: &[Slot], pool: &mut FramePool) {
        let mut sent = 0;
        for part in batch.chunks(self.cfg.pmd.tx_rs_thresh as usize) {
            let k = self.tx_chunk(part);
            sent += k;
            if k < part.len() {
                break;
            }
        }
        self.tx_ring_full = sent < batch.len();
        if self.tx_ring_full {
            // testpmd frees what it could not send.
            let dropped = &batch[sent..];
            if self.app == AppKind::Testpmd(ForwardMode::Txonly) {
                self.counters.txonly_unsent += dropped.len() as u64;
            } else {
                self.counters.tx_ring_full_drops += dropped.len() as u64;
            }
            for s in dropped {
                pool.free(s.frame);
            }
            self.free_mbufs(dropped.iter().map(|s| s.mbuf));
        }
    }

    /// One chunk of a tx_burst; returns how many packets it placed.
    fn tx_chunk(&mut self, part: &[Slot]) -> usize {
        let p = self.cfg.pmd;
        let rs = p.tx_rs_thresh as u64;
        if self.tx.free() < p.tx_free_thresh as u64 && self.tx.done >= self.tx.freed + rs {
            // The descriptor with the RS bit says the whole batch is done.
            self.work.reset(Category::Tx).instr(rs * p.costs.tx_free_instr as u64).read(self.tx.ring.desc_addr(self.tx.freed + rs - 1));
            self.core.exec(&self.work, &mut self.mem);
            self.mbufs.clear();
            for pos in self.tx.freed..self.tx.freed + rs {
                self.mbufs.push(self.tx.ring.slots[self.tx.ring.slot(pos)].mbuf);
            }
            self.tx.freed += rs;
            self.put_mbufs();
        }
        let k = (part.len() as u64).min(self.tx.free()) as usize;
        self.work.reset(Category::Tx).instr(p.costs.tx_burst_instr as u64);
        for s in &part[..k] {
            let pos = self.tx.tail;
            let slot = self.tx.ring.slot(pos);
            self.tx.ring.slots[slot] = *s;
            self.work.instr(p.costs.tx_pkt_instr as u64).write(self.tx.ring.desc_addr(pos));
            self.tx.tail += 1;
        }
        self.core.exec(&self.work, &mut self.mem);
        if k > 0 {
            let t = self.pcie.mmio_write(self.core.now(), 4);
            self.schedule(t, HostEvent::TxDoorbell(self.tx.tail));
        }
        k
    }

    /// Fetches TX descriptors the doorbell gave, in requests of up to
    /// `tx_fetch_batch`, while the NIC's descriptor cache (`tx_desc_cache`,
    /// fetches in flight included) has room.
    fn fetch_tx_descs(&mut self, now: Ps) {
        let (batch, cache) = (self.cfg.nic.tx_fetch_batch as u64, self.cfg.nic.tx_desc_cache as u64);
        loop {
            let room = cache - (self.tx_fetched - self.tx_sent);
            let n = (self.nic_tx_tail - self.tx_fetched).min(room).min(batch);
            if n == 0 {
                return;
            }
            let at = now + self.cfg.pcie.latency_ps;
            let base = self.tx.ring.base;
            let ring = self.tx.ring.size();
            let host = self.ring_read_time(|p| base + (p % ring) * DESC_BYTES, ring, self.tx_fetched, n, at);
            let done = self.pcie.dma_read(now, (n * DESC_BYTES) as u32, host, Kind::Descriptor).max(self.tx_fetch_done);
            self.tx_fetch_done = done;
            self.tx_fetched += n;
            self.schedule(done, HostEvent::TxDescFetched(self.tx_fetched));
        }
    }

    /// Reads the frames of the arrived descriptors over PCIe while the TX FIFO
    /// has room for them, and queues each on the wire when it is in.
    fn tx_read_payloads(&mut self, now: Ps, pool: &FramePool) {
        while let Some(&(leave, bytes)) = self.tx_fifo.front() {
            if leave > now {
                break;
            }
            self.tx_fifo_used -= bytes as u64;
            self.tx_fifo.pop_front();
        }
        let rs = self.tx_rs;
        while self.tx_sent < self.tx_arrived {
            let pos = self.tx_sent;
            let s = self.tx.ring.slots[self.tx.ring.slot(pos)];
            let bytes = pool.frame_bytes(s.frame);
            if self.tx_fifo_used + bytes as u64 > self.cfg.nic.tx_fifo_bytes {
                if let (false, Some(&(leave, _))) = (self.tx_space_pending, self.tx_fifo.front()) {
                    self.tx_space_pending = true;
                    self.schedule(leave, HostEvent::TxFifoSpace);
                }
                break;
            }
            let len = bytes - FCS_LEN as u32;
            let at = now + self.cfg.pcie.latency_ps;
            let host = self.host_read_time(self.pool.data_addr(s.mbuf), len, at);
            let done = self.pcie.dma_read(now, len, host, Kind::Payload);
            let ready = done.max(self.tx_last_ready);
            self.tx_last_ready = ready;
            // The frame leaves the FIFO once it is on the wire (same arithmetic as the link).
            let start = ready.max(self.wire_free_at);
            self.wire_free_at = start + bits_to_ps((bytes as u64 + WIRE_OVERHEAD_BYTES as u64) * 8, self.wire_rate_bps);
            self.tx_fifo.push_back((self.wire_free_at, bytes));
            self.tx_fifo_used += bytes as u64;
            self.out_frames.push((ready, s.frame));
            self.counters.tx_packets += 1;
            self.counters.tx_bytes += bytes as u64;
            if (pos + 1) % rs == 0 {
                let arrive = self.pcie.dma_write(ready, DESC_BYTES as u32, Kind::Descriptor);
                let visible = self.mem.device_write(self.tx.ring.desc_addr(pos), DESC_BYTES as u32, arrive);
                let t = visible.max(self.tx_wb_pending.back().map_or(0, |w| w.0));
                self.tx_wb_pending.push_back((t, pos + 1));
                self.raise_irq(t);
            }
            self.tx_sent += 1;
        }
    }
}

impl Host {
    /// The host's part of the JSON result, over a measured window of `window_ps`.
    pub fn result_json(&self, window_ps: Ps) -> Value {
        let k = &self.counters;
        let acct = self.core.account();
        let cpp = acct.cycles_per_packet(acct.packets());
        let cat = |c: Category| cpp.get(c);
        let kd = self.kernel.as_ref().map_or((0, 0, 0), |k| k.drops());
        json!({
            "nic": {
                "rx_packets": k.rx_packets,
                "rx_bytes": k.rx_bytes,
                "rx_missed_errors": k.rx_missed_errors,
                "rx_nombuf": k.rx_nombuf,
                "tx_packets": k.tx_packets,
                "tx_bytes": k.tx_bytes,
                "rx_fifo_max_bytes": self.fifo.max_used_bytes(),
            },
            "drops": {
                "dma": self.fsm.dma,
                "core": self.fsm.core,
                "tx": self.fsm.tx + k.tx_ring_full_drops,
                "fifo_tx": self.fsm.tx,
                "tx_ring_full": k.tx_ring_full_drops,
                "socket": kd.0,
                "no_port": kd.1,
                "qdisc": kd.2,
            },
            "stack": if self.kernel.is_some() { "kernel" } else { "pmd" },
            "kernel": self.kernel.as_ref().map(|k| k.result_json()),
            "cpu": {
                "cycles_per_packet": {
                    "rx": cat(Category::Rx),
                    "tx": cat(Category::Tx),
                    "mempool": cat(Category::Mempool),
                    "app": cat(Category::App),
                    "idle": cat(Category::Idle),
                    "irq": cat(Category::Irq),
                    "skb": cat(Category::Skb),
                    "proto": cat(Category::Proto),
                    "sched": cat(Category::Sched),
                    "syscall": cat(Category::Syscall),
                    "copy": cat(Category::Copy),
                    "qdisc": cat(Category::Qdisc),
                    "total": cpp.total,
                },
                "packets": acct.packets(),
                "core0": self.core.result_json(),
            },
            "pmd": {
                "rx_burst_packets": k.burst_hist,
                "empty_polls": k.empty_polls,
                "app_consumed": k.app_consumed,
                "txonly_built": k.txonly_built,
                "txonly_unsent": k.txonly_unsent,
                "touch_digest": k.touch_digest,
                "mempool_available": self.pool.available(),
            },
            "mem": self.mem.result_json(),
            "pcie": self.pcie.result_json(window_ps),
            "kvs": self.kvs.as_ref().map(|k| k.result_json()),
        })
    }
}

impl HasStats for Host {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let k = &self.counters;
        let mut nic = s.scope("nic0");
        nic.count("rx_packets", k.rx_packets, "Frames DMA'd to host memory");
        nic.count("rx_missed_errors", k.rx_missed_errors, "Frames dropped because the RX FIFO was full");
        nic.count("rx_nombuf", k.rx_nombuf, "rx_burst calls that found no mbuf to refill with");
        nic.count("tx_packets", k.tx_packets, "Frames read from host memory for transmission");
        self.fsm.report_stats(&mut nic);
        let mut pmd = s.scope("pmd");
        pmd.count("tx_ring_full_drops", k.tx_ring_full_drops, "Packets freed because the TX ring was full");
        pmd.count("empty_polls", k.empty_polls, "rx_burst calls that returned nothing");
        if let Some(k) = &self.kernel {
            k.report_stats(&mut s.scope("kernel"));
        }
        self.core.report_stats(&mut s.scope("cpu0"));
        self.mem.report_stats(&mut s.scope("mem"));
        self.pcie.report_stats(&mut s.scope("pcie"));
    }

    fn reset_stats(&mut self) {
        let hist = vec![0; self.counters.burst_hist.len()];
        self.counters = Counters { burst_hist: hist, ..Default::default() };
        self.fsm.reset_stats();
        if let Some(k) = self.kernel.as_mut() {
            k.reset_stats();
        }
        if let Some(k) = self.kvs.as_mut() {
            k.reset_counters();
        }
        self.core.reset_stats();
        self.mem.reset_stats();
        self.pcie.reset_stats();
    }
}
