//! A simulated host (SPEC 2.4–2.9), wired from its config: NIC devices and
//! their ports and queue pairs, a PCIe link per device, the memory system
//! with DCA, the cores, one stack per core bound to its queue pairs, the
//! mbuf mempool, and the application. This is the one place that knows how
//! the parts fit; the parts know only the parts below them.
//!
//! ```text
//! wire ─▶ nic (devices ▸ ports ▸ queue pairs, RSS, DMA) ─PCIe─▶ mem (LLC/DCA, DRAM)
//!                                   ▲                              ▲
//!                      stacks (one per core: pmd | kernel) ─ cores ┘ ─ app
//! ```
//!
//! Binding: each core serves the queue pairs `HostConfig::core_queues`
//! gives it (testpmd's map, or `host.bind`); what it receives on (port,
//! queue) leaves on queue `queue` of the port the application's port
//! topology names — the same port for applications that answer the sender.
//!
//! Events: the NIC's own ([`NicEvent`]), each core's next step
//! ([`Event::Core`]) and the DRAM controller's next pick of a queued read
//! ([`Event::DramPick`], `mem/read_queue.rs`), after which the cores and
//! ports waiting for their reads look again. A NIC write-back is routed at once to the stack of the
//! core that serves the queue (a poll-mode core wakes, a kernel core gets
//! its interrupt), so everything a step causes is queued in the order it
//! happened. Results and statistics are in `report.rs`.

pub mod config;
pub mod fitted;
mod report;

use crate::apps::Registry;
use crate::cpu::{AccessCost, CodeRegion, Core, MemPort};
use crate::dma::CopyEngine;
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Error, Result};
use crate::framebuf::{FrameId, FramePool};
use crate::mem::{Level, MemSystem, Ticket};
use crate::nic::rss::{self, Rss};
use crate::nic::{CompletionQueue, Nic, NicDev, NicEvent, NicOut, Port, PortAddrs, PortParams, QueueModel, RxDescCache, RxQueue, RxRing, TxQueue, TxRing};
use crate::io::IoPath;
use crate::stack::kernel::{Kernel, WriterEnv};
use crate::stack::pmd::config::RxSharing;
use crate::stack::pmd::shared::SharedRx;
use crate::stack::pmd::Pmd;
use crate::stack::ring::SwRing;
use crate::stack::{App, CoreStack, Event, Mempool, MempoolConfig, Out, Stack, StackCx, StackKind, Stream};
use crate::wire::ethernet::FCS_LEN;
pub use config::HostConfig;

/// Simulated physical addresses of the driver's structures: queue pair k
/// (port × queues + queue) has its RX ring at `RX_RING_BASE + k ×
/// RING_STRIDE` (at most 4096 × 16 B) and its TX ring 1 MiB above; a
/// ConnectX-style queue has its doorbell record, its software ring and
/// shared lines, and its completion queue (at most 4096 × 128 B) at the
/// offsets below, between the two.
///
/// The regions follow one another as DPDK's memzones do, each the 1 MiB +
/// 64 KiB it needs plus the 512 B ixgbe's RX ring zone holds beyond its
/// largest ring (`RX_RING_SZ`: (4096 + 32) × 16 B, drivers/net/ixgbe/
/// ixgbe_rxtx.h). A power-of-two stride would put the same slot of every
/// queue's rings in one cache set: a core polling many idle queues would
/// then miss in its L1D and L2 on each poll, which real rings, 66 KiB
/// apart, do not do.
const RX_RING_BASE: u64 = 0x1000_0000;
const TX_RING_OFFSET: u64 = 0x10_0000;
const DB_RECORD_OFFSET: u64 = 0x1_0000;
const SHARED_OFFSET: u64 = 0x2_0000;
const CQ_OFFSET: u64 = 0x8_0000;
const RING_STRIDE: u64 = TX_RING_OFFSET + 4096 * 16 + 32 * 16;
const MEMPOOL_BASE: u64 = 0x2000_0000;
const _: () = assert!(RX_RING_BASE + config::MAX_QUEUE_PAIRS as u64 * RING_STRIDE <= MEMPOOL_BASE, "the rings end below the mempool");
/// The rings between cores (pipeline mode), far above the rest, one after
/// another as rte_ring_create's memzones are: each its two header lines
/// and its slots (`SwRing`), and one line between them for the allocator's
/// element header (estimate). A power-of-two stride would put every
/// worker's ring heads in one cache set.
const SW_RING_BASE: u64 = 0x20_0000_0000;
fn sw_ring_stride(slots: u32) -> u64 {
    128 + slots as u64 * 8 + 64
}
/// Where the kernel's structures start: the mempool must end below.
const MEMPOOL_END: u64 = 0x3000_0000;

impl MemPort for MemSystem {
    #[inline]
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        let a = self.core_access(core, addr, write, now);
        AccessCost { latency_ps: a.latency_ps, l1_hit: a.level == Level::L1, queued_ps: a.queued_ps }
    }

    #[inline]
    fn fetch_code(&mut self, core: usize, r: CodeRegion, now: Ps) -> Ps {
        MemSystem::fetch_code(self, core, r.id, r.addr, r.bytes, now)
    }

    #[inline]
    fn load_later(&mut self, core: usize, addr: u64, now: Ps) -> (AccessCost, Option<Ticket>) {
        let (a, ticket) = MemSystem::load_later(self, core, addr, now);
        (AccessCost { latency_ps: a.latency_ps, l1_hit: a.level == Level::L1, queued_ps: a.queued_ps }, ticket)
    }

    #[inline]
    fn take_read(&mut self, ticket: Ticket, force: bool) -> Option<Ps> {
        MemSystem::take_read(self, ticket, force)
    }

    #[inline]
    fn next_pick(&self) -> Option<Ps> {
        MemSystem::next_pick(self)
    }
}

/// What a host needs to know of the rest of the system.
pub struct HostEnv<'a> {
    /// The application, by its registered name, and the stack it runs on.
    pub app: &'a str,
    pub stack: StackKind,
    pub registry: &'a Registry,
    /// Line rate of every port's link.
    pub link_rate_bps: u64,
    /// When transmission ends (`sim.duration`): an application that writes
    /// starts no write after it.
    pub tx_end_ps: Ps,
    /// Port 0's addresses and its peer's; port p's are these plus p × 256
    /// (`wire::port_mac`, `wire::port_ip`), as the load generator's ports.
    pub base: PortAddrs,
    /// `sim.dma_at_memory_time`: the NICs make their payload reads at the memory side's time.
    pub dma_at_memory_time: bool,
    /// The fields the user set (`SimConfig::given`): a pool they did not size grows to fill the rings.
    pub given: &'a [String],
}

pub struct Host {
    stack_name: &'static str,
    nic: Nic,
    pub mem: MemSystem,
    /// The chipset's DMA copy engine.
    dma: CopyEngine,
    pub cores: Vec<Core>,
    stacks: Vec<CoreStack>,
    /// Each core's streams, for reports.
    streams: Vec<Vec<Stream>>,
    app: Box<dyn App>,
    mbufs: Mempool,
    /// Pipeline mode: each worker's ring, and how many cores receive.
    rings: Vec<SwRing>,
    rx_cores: usize,
    /// The ConnectX-style queues' software state, by queue pair (empty with ixgbe queues).
    shared: Vec<SharedRx>,
    /// A write-back of the shared queue wakes every core (arbitration, range).
    rx_all: bool,
    /// The core serving each (port, queue), at port × queues + queue: RX
    /// write-backs and TX completions go to it.
    rx_owner: Vec<u16>,
    tx_owner: Vec<u16>,
    queues: usize,
    tx_queues: usize,
    /// What handling an event produced: events, frames for the wire, frames consumed.
    pub out: Out,
    /// When the DRAM controller's next pick is scheduled (`Event::DramPick`).
    pick_at: Option<Ps>,
}

/// Routes the NIC's consequences: events and frames into `out`, write-backs
/// to the stack of the core that serves the queue.
struct Sink<'a> {
    out: &'a mut Out,
    stacks: &'a mut [CoreStack],
    cores: &'a mut [Core],
    rx_owner: &'a [u16],
    tx_owner: &'a [u16],
    queues: usize,
    tx_queues: usize,
    rx_all: bool,
}

impl NicOut for Sink<'_> {
    #[inline]
    fn schedule(&mut self, t: Ps, ev: NicEvent) {
        self.out.events.push((t, Event::Nic(ev)));
    }

    #[inline]
    fn to_wire(&mut self, t: Ps, port: usize, frame: FrameId) {
        self.out.wire.push((t, port as u16, frame));
    }

    #[inline]
    fn rx_writeback(&mut self, t: Ps, port: usize, queue: usize) {
        if self.rx_all {
            for c in 0..self.stacks.len() {
                self.stacks[c].rx_ready(t, Some((port, queue)), &mut self.cores[c], self.out);
            }
            return;
        }
        let c = self.rx_owner[port * self.queues + queue] as usize;
        self.stacks[c].rx_ready(t, Some((port, queue)), &mut self.cores[c], self.out);
    }

    #[inline]
    fn tx_writeback(&mut self, t: Ps, port: usize, queue: usize) {
        let c = self.tx_owner[port * self.tx_queues + queue] as usize;
        self.stacks[c].tx_done(t, (port, queue), &mut self.cores[c], self.out);
    }
}

fn field_err(field: &str, value: impl ToString, allowed: &str) -> Error {
    ConfigError::new(field, value.to_string(), allowed).into()
}

impl Host {
    /// `max_frame_bytes`: the largest frame (FCS included) the host will see
    /// or build; every mbuf must hold it.
    pub fn new(env: &HostEnv, cfg: &HostConfig, max_frame_bytes: u32) -> Result<Host> {
        cfg.validate()?;
        // The app and its stack were checked with the config (`SimConfig::validate_with`).
        let entry = env.registry.lookup(env.app)?;
        let kernel = env.stack == StackKind::Kernel;
        let app = (entry.ctor)(&cfg.app)?;
        let (nports, nqueues, ncores) = (cfg.ports as usize, cfg.queues as usize, cfg.cores as usize);
        let ntx = cfg.tx_queues() as usize;
        let cores = (0..ncores).map(|c| Core::new(c, &cfg.cpu)).collect::<Result<Vec<_>>>()?;
        let cycle_ps = PS_PER_S / cfg.cpu.freq_hz.max(1);
        let mem = MemSystem::new(&cfg.mem, ncores, &vec![cycle_ps; ncores])?;
        let mut mbufs = Self::mempool(cfg, env.given, ncores)?;
        let strip = if cfg.nic.keep_crc { 0 } else { FCS_LEN as u64 };
        let need = max_frame_bytes.max((entry.max_frame_bytes)(&cfg.app)) as u64 - strip;
        if mbufs.data_room() < need {
            let p = &cfg.pmd.mempool;
            let what = if strip == 0 { "with its FCS (nic.keep_crc)" } else { "without FCS" };
            return Err(field_err("host.pmd.mempool.buf_bytes", p.buf_bytes, &format!(">= {} (headroom 128 B + the largest frame {what}, {need} B)", need + 128)));
        }
        // Who serves what: streams per receiving core, owners per queue; in
        // pipeline mode the first cores receive and the others work.
        let map = cfg.core_queues();
        let rx_cores = map.len();
        let workers = ncores - rx_cores;
        if kernel && workers > 0 {
            return Err(field_err("host.pipeline.rx_cores", cfg.pipeline.rx_cores, "0 with the kernel stack (pipeline mode is the poll-mode driver's)"));
        }
        let sharing = cfg.rx_sharing;
        if kernel && sharing != RxSharing::None {
            return Err(field_err("host.rx_sharing", sharing.name(), "none with the kernel stack (the designs are the poll-mode driver's)"));
        }
        if workers > 0 && app.generates() {
            return Err(field_err("host.pipeline.rx_cores", cfg.pipeline.rx_cores, &format!("0 for app {} (it generates, it does not receive)", env.app)));
        }
        if sharing != RxSharing::None && app.generates() {
            return Err(field_err("host.rx_sharing", sharing.name(), &format!("none for app {} (it generates, it does not receive)", env.app)));
        }
        let topology = cfg.app.port_topology;
        let stream = |(p, q): (usize, usize)| {
            let tx_port = if app.replies() { p } else { topology.tx_port(p, nports) };
            Stream { rx_port: p, rx_queue: q, tx_port, tx_queue: q }
        };
        let mut streams: Vec<Vec<Stream>> = map.iter().map(|qs| qs.iter().map(|&pq| stream(pq)).collect()).collect();
        if sharing != RxSharing::None {
            // Every core polls queue 0 and transmits on a queue of its own.
            for (c, list) in streams.iter_mut().enumerate() {
                list[0].tx_queue = c;
            }
        }
        let (mut rx_owner, mut tx_owner) = (vec![0u16; nports * nqueues], vec![0u16; nports * ntx]);
        // From the last core down: a queue several cores share is owned by
        // the first (the parent, which takes its write-backs).
        for (c, list) in streams.iter().enumerate().rev() {
            for s in list {
                rx_owner[s.rx_port * nqueues + s.rx_queue] = c as u16;
                tx_owner[s.tx_port * ntx + s.tx_queue] = c as u16;
            }
        }
        for w in 0..workers {
            for p in 0..nports {
                tx_owner[p * ntx + w] = (rx_cores + w) as u16;
            }
        }
        let rings: Vec<SwRing> = (0..workers)
            .map(|w| SwRing::new(SW_RING_BASE + w as u64 * sw_ring_stride(cfg.pipeline.ring_size), cfg.pipeline.ring_size, rx_cores > 1, false, rx_cores + w).bulk(cfg.pipeline.bulk))
            .collect();
        let nic = Self::nic(env, cfg, &mut mbufs, kernel)?;
        // ConnectX-style queues: their software state, shared by the cores
        // that poll them; a core polling one such queue alone or with others
        // runs the driver of `pmd/shared.rs`.
        let connectx = cfg.nic.queue_model == QueueModel::Connectx && !kernel && workers == 0;
        let shared: Vec<SharedRx> = if connectx {
            (0..nports * nqueues)
                .map(|k| {
                    let n = if sharing == RxSharing::None { 1 } else { ncores };
                    SharedRx::new(sharing, n, cfg.pmd.rxd as u64, RX_RING_BASE + k as u64 * RING_STRIDE + SHARED_OFFSET)
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut stacks: Vec<CoreStack> = Vec::with_capacity(ncores);
        for (c, list) in streams.iter().enumerate() {
            stacks.push(if kernel {
                // No socket: the application forwards in the softirq (the
                // registry has already refused applications the kernel does not run).
                // A socket application's thread serves one queue pair; a
                // forwarding softirq serves the NAPI contexts of several.
                let socket = app.socket();
                if list.is_empty() || (socket.is_some() && list.len() > 1) {
                    return Err(field_err("host.bind", format!("{} queue pairs on core {c}", list.len()), "one queue pair per core with the kernel stack and a socket application (its interrupt's affinity); one or more for a forwarding application"));
                }
                let writer = app.writer().map(|spec| {
                    let port = &nic.ports[list[0].tx_port];
                    WriterEnv { spec, scheme: cfg.tx_scheme, tx_end: env.tx_end_ps, addrs: (port.mac, port.peer, port.ip, port.peer_ip) }
                });
                CoreStack::Kernel(Box::new(Kernel::new(&cfg.kernel, cfg.pmd.costs, c, list, socket, writer)))
            } else if workers > 0 {
                CoreStack::Pmd(Pmd::receiver(&cfg.pmd, c, list.clone(), (0..workers).collect()))
            } else if connectx && list.len() == 1 {
                let (k, burst) = (list[0].rx_port * nqueues + list[0].rx_queue, cfg.pmd.burst as usize);
                let (batch, role) = match sharing {
                    RxSharing::None => (burst, None),
                    RxSharing::ParentWorker if c == 0 => (cfg.pmd.rxd as usize, Some("parent")),
                    RxSharing::ParentWorker => (burst, Some("worker")),
                    RxSharing::Arbitration => (burst, Some("claimant")),
                    RxSharing::Range => (burst, Some("area")),
                };
                CoreStack::Pmd(Pmd::new(&cfg.pmd, c, list.clone()).on_shared(k, batch, role))
            } else {
                CoreStack::Pmd(Pmd::new(&cfg.pmd, c, list.clone()))
            });
        }
        for w in 0..workers {
            stacks.push(CoreStack::Pmd(Pmd::worker(&cfg.pmd, rx_cores + w, w, w)));
        }
        streams.resize(ncores, Vec::new());
        let mut h = Host {
            stack_name: if kernel { "kernel" } else { "pmd" },
            nic,
            mem,
            dma: CopyEngine::new(&cfg.copy_engine),
            cores,
            stacks,
            streams,
            app,
            mbufs,
            rings,
            rx_cores,
            shared,
            rx_all: matches!(sharing, RxSharing::Arbitration | RxSharing::Range),
            rx_owner,
            tx_owner,
            queues: nqueues,
            tx_queues: ntx,
            out: Out::default(),
            pick_at: None,
        };
        h.start();
        Ok(h)
    }

    /// The mbuf pool: `HostConfig::pool_mbufs` per port (testpmd sizes its
    /// pool per port), with a cache per core; it fills every RX ring and
    /// leaves room for the TX rings and the cores' caches. Too large for the
    /// simulated memory, it is refused by the field the user set that made
    /// it so (`pool_sizer`).
    fn mempool(cfg: &HostConfig, given: &[String], cores: usize) -> Result<Mempool> {
        let total = cfg.pool_mbufs(given)? * cfg.ports as u64;
        let pool = MempoolConfig { mbufs: total.min(u32::MAX as u64) as u32, ..cfg.pmd.mempool };
        // Bounded before anything is allocated.
        if total > u32::MAX as u64 || MEMPOOL_BASE + Mempool::bytes_for(&pool, cores) > MEMPOOL_END {
            let (field, value) = cfg.pool_sizer(given);
            let mib = (MEMPOOL_END - MEMPOOL_BASE) >> 20;
            let allowed = if field == "host.pmd.mempool.mbufs" {
                format!("a pool of at most {mib} MiB of simulated memory in all ports")
            } else {
                format!(
                    "less: the rings and the cores' mempool caches would hold {} mbufs (ports × (queues × rxd + TX queues × txd) + cores × (2 × cache + burst)), more than fit the {mib} MiB of simulated memory the pool has",
                    cfg.mbufs_needed()
                )
            };
            return Err(field_err(field, value, &allowed));
        }
        Ok(Mempool::new(&pool, cores, MEMPOOL_BASE))
    }

    /// The NIC devices and ports; the driver arms every RX slot (rte_eth_dev_start).
    fn nic(env: &HostEnv, cfg: &HostConfig, mbufs: &mut Mempool, kernel: bool) -> Result<Nic> {
        let (n, p) = (&cfg.nic, &cfg.pmd);
        let (nports, nqueues, ntx) = (cfg.ports as usize, cfg.queues as usize, cfg.tx_queues() as usize);
        let per_dev = n.ports_per_nic as usize;
        let devs = (0..nports.div_ceil(per_dev))
            .map(|_| {
                let mut d = NicDev::new(IoPath::new(&cfg.io, &cfg.pcie)?, n.max_pps);
                d.memory = n.memory.as_ref().map(crate::nic::memory::NicMemory::new);
                Ok(d)
            })
            .collect::<Result<Vec<_>>>()?;
        let params = PortParams {
            tx_fifo_bytes: n.tx_fifo_bytes,
            rx_wb_timer_ps: n.rx_wb_timer_ps,
            rx_strip_bytes: if n.keep_crc { 0 } else { FCS_LEN as u32 },
            tx_fetch_batch: n.tx_fetch_batch as u64,
            tx_desc_cache: n.tx_desc_cache as u64,
            tx_reads_in_flight: n.tx_reads_in_flight as usize,
            pcie_latency_ps: cfg.io_request_latency_ps(),
            wire_rate_bps: env.link_rate_bps,
            at_memory: env.dma_at_memory_time,
        };
        let key = rss::parse_key(&n.rss_key).ok_or_else(|| field_err("host.nic.rss_key", &n.rss_key, "40 bytes as 80 hex digits"))?;
        let tx_rs = if kernel { 1 } else { p.tx_rs_thresh as u64 };
        let (mut armed, mut touched) = (Vec::new(), Vec::new());
        let mut ports = Vec::with_capacity(nports);
        for port in 0..nports {
            let (mut rxq, mut txq) = (Vec::new(), Vec::new());
            for q in 0..nqueues {
                let base = RX_RING_BASE + (port * nqueues + q) as u64 * RING_STRIDE;
                armed.clear();
                if !mbufs.get_bulk(0, p.rxd as usize, &mut armed, &mut touched) {
                    return Err(field_err("host.pmd.mempool.mbufs", p.mempool.mbufs, "enough mbufs to fill the RX rings"));
                }
                let ring = RxRing::new(base, armed.iter().map(|&m| (m, mbufs.data_addr(m))));
                let desc = RxDescCache::new(p.rxd, n.rx_desc_cache, n.rx_prefetch_threshold, n.rx_wb_threshold, ring.tail());
                let queue = RxQueue::new(ring, desc);
                rxq.push(match n.queue_model {
                    QueueModel::Ixgbe => queue,
                    QueueModel::Connectx => queue.with_cq(CompletionQueue { base: base + CQ_OFFSET, entry_bytes: n.cqe_bytes as u64, db_record: base + DB_RECORD_OFFSET }),
                });
            }
            for q in 0..ntx {
                let base = RX_RING_BASE + (port * ntx + q) as u64 * RING_STRIDE;
                txq.push(TxQueue::new(TxRing::new(base + TX_RING_OFFSET, p.txd), tx_rs));
            }
            let b = env.base;
            let addrs = PortAddrs {
                mac: crate::wire::port_mac(b.mac, port),
                ip: crate::wire::port_ip(b.ip, port),
                peer: crate::wire::port_mac(b.peer, port),
                peer_ip: crate::wire::port_ip(b.peer_ip, port),
            };
            let rss = if nqueues > 1 { Rss::new(key, n.reta_size as usize, nqueues) } else { Rss::single() };
            ports.push(Port::new(port, port / per_dev, addrs, params, n.rx_fifo_bytes, rss, rxq, txq));
        }
        Ok(Nic { devs, ports })
    }

    /// The NIC's first descriptor prefetches, then every core's first step.
    fn start(&mut self) {
        let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner, queues: self.queues, tx_queues: self.tx_queues, rx_all: self.rx_all };
        self.nic.start(0, &mut self.mem, &mut sink);
        for c in 0..self.cores.len() {
            self.out.schedule(0, Event::Core(c as u16));
        }
    }

    /// A frame arrived whole from the wire at `port` at `now`.
    #[inline]
    pub fn frame_arrival(&mut self, port: usize, frames: &mut FramePool, id: FrameId, now: Ps) {
        let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner, queues: self.queues, tx_queues: self.tx_queues, rx_all: self.rx_all };
        self.nic.frame_arrival(port, id, now, frames, &mut self.mem, &mut sink);
    }

    /// The run is over: a work unit still pending at a horizon
    /// (`sim.core_horizon`) makes the rest of its accesses and is charged,
    /// as it would have been had it run at once; what the core would do
    /// after it is not run (its frames stay in flight).
    pub fn finish_units(&mut self) {
        for c in &mut self.cores {
            c.resume(&mut self.mem, Ps::MAX);
        }
    }

    /// The run ended at `end`: I/O-path work booked after it leaves the busy times.
    pub fn clip_io_at(&mut self, end: Ps) {
        for dev in &mut self.nic.devs {
            dev.io.clip_busy_at(end);
        }
    }

    /// Entries of the application's tables (`App::table_entries`).
    pub fn table_entries(&self) -> u64 {
        self.app.table_entries()
    }

    /// Handles `ev` at `now`; `horizon` is [`StackCx::horizon`] for a core's step.
    pub fn handle(&mut self, now: Ps, ev: Event, frames: &mut FramePool, horizon: Ps) {
        match ev {
            Event::Nic(ev) => {
                let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner, queues: self.queues, tx_queues: self.tx_queues, rx_all: self.rx_all };
                self.nic.handle(now, ev, frames, &mut self.mem, &mut sink);
                self.schedule_pick(now);
            }
            Event::Core(c) => {
                let c = c as usize;
                let mut cx = StackCx {
                    core: &mut self.cores[c],
                    nic: &mut self.nic,
                    rings: &mut self.rings,
                    shared: &mut self.shared,
                    mem: &mut self.mem,
                    dma: &mut self.dma,
                    mbufs: &mut self.mbufs,
                    frames,
                    out: &mut self.out,
                    horizon,
                };
                self.stacks[c].run(now, &mut cx, &mut *self.app);
                // Ring entries another core may now see: it wakes if it sleeps.
                let mut wakes = std::mem::take(&mut self.out.wakes);
                for &(t, w) in &wakes {
                    let w = w as usize;
                    self.stacks[w].rx_ready(t, None, &mut self.cores[w], &mut self.out);
                }
                wakes.clear();
                self.out.wakes = wakes;
                self.schedule_pick(now);
            }
            Event::DramPick => {
                if self.pick_at == Some(now) {
                    self.pick_at = None;
                }
                self.mem.pick_reads(now);
                // A core waiting for its loads looks again, and so does a
                // port waiting for its payload reads.
                for (c, core) in self.cores.iter_mut().enumerate() {
                    if core.wake(now) {
                        self.out.schedule(now, Event::Core(c as u16));
                    }
                }
                for p in self.nic.ports.iter().filter(|p| p.waits_on_memory()) {
                    self.out.schedule(now, Event::Nic(NicEvent::TxReadServed { port: p.id as u8 }));
                }
                self.schedule_pick(now);
            }
        }
    }

    /// Schedules the DRAM controller's next pick of a queued read (no
    /// earlier than `now`) unless one as soon is scheduled.
    #[inline]
    fn schedule_pick(&mut self, now: Ps) {
        let Some(t) = self.mem.next_pick() else { return };
        let t = t.max(now);
        if self.pick_at.map_or(true, |p| t < p) {
            self.pick_at = Some(t);
            self.out.schedule(t, Event::DramPick);
        }
    }
}

impl HasStats for Host {
    /// Under the system's scope: `nic.port{p}.…` (with `rxq{q}`/`txq{q}`),
    /// `nic.dev{d}.pcie.…` (or `.iobus.…`), `cpu{c}.…` (with the core's stack), `mem.…`.
    fn report_stats(&self, s: &mut StatSink<'_>) {
        self.report(s);
    }

    fn reset_stats(&mut self) {
        self.nic.reset_counters();
        for r in &mut self.rings {
            r.counters = Default::default();
        }
        for sh in &mut self.shared {
            sh.counters = Default::default();
        }
        for st in &mut self.stacks {
            st.reset_stats();
        }
        self.app.reset_stats();
        for c in &mut self.cores {
            c.reset_stats();
        }
        self.mem.reset_stats();
        self.dma.reset_stats();
    }
}
