//! A simulated host (SPEC 2.4–2.9), wired from its config: NIC devices and
//! their ports and queue pairs, PCIe, the memory system with DCA, the
//! cores, one stack per core bound to its streams, the mbuf mempool, and
//! the application. This is the one place that knows how the parts fit;
//! the parts know only the parts below them.
//!
//! ```text
//! wire ─▶ nic (ports, queues, DMA) ─PCIe─▶ mem (LLC/DCA, DRAM) ◀─ cores ─ stacks (pmd | kernel) ─ app
//! ```
//!
//! Events: the NIC's own ([`NicEvent`]) and each core's next step
//! ([`Event::Core`]). A NIC write-back is routed at once to the stack of the
//! core that serves the queue (a poll-mode core wakes, a kernel core gets
//! its interrupt), so everything a step causes is queued in the order it
//! happened.

pub mod config;

use serde_json::{json, Value};

use crate::apps::Registry;
use crate::config::SimConfig;
use crate::cpu::{AccessCost, Category, Core, MemPort};
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Error, Result};
use crate::framebuf::{FrameId, FramePool};
use crate::mem::{Level, MemSystem};
use crate::nic::rss::Rss;
use crate::nic::{Nic, NicDev, NicEvent, NicOut, Port, PortAddrs, PortParams, RxDescCache, RxQueue, RxRing, TxQueue, TxRing};
use crate::pcie::PcieLink;
use crate::stack::kernel::Kernel;
use crate::stack::pmd::Pmd;
use crate::stack::{App, Event, Mempool, Out, Stack, StackCx, Stream};
use crate::wire::ethernet::{parse_mac, FCS_LEN};
pub use config::HostConfig;

/// Simulated physical addresses of the driver's structures: queue k's RX
/// ring at `RX_RING_BASE + k × RING_STRIDE`, its TX ring 1 MiB above.
const RX_RING_BASE: u64 = 0x1000_0000;
const TX_RING_OFFSET: u64 = 0x10_0000;
const RING_STRIDE: u64 = 0x20_0000;
const MEMPOOL_BASE: u64 = 0x2000_0000;
/// Where the kernel's structures start: the mempool must end below.
const MEMPOOL_END: u64 = 0x3000_0000;

impl MemPort for MemSystem {
    #[inline]
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        let a = self.core_access(core, addr, write, now);
        AccessCost { latency_ps: a.latency_ps, l1_hit: a.level == Level::L1 }
    }
}

pub struct Host {
    stack_name: &'static str,
    nic: Nic,
    pub mem: MemSystem,
    pub cores: Vec<Core>,
    stacks: Vec<Box<dyn Stack>>,
    app: Box<dyn App>,
    mbufs: Mempool,
    /// The core serving each (port, queue): RX write-backs and TX completions go to it.
    rx_owner: Vec<Vec<u16>>,
    tx_owner: Vec<Vec<u16>>,
    /// What handling an event produced: events, frames for the wire, frames consumed.
    pub out: Out,
}

/// Routes the NIC's consequences: events and frames into `out`, write-backs
/// to the stack of the core that serves the queue.
struct Sink<'a> {
    out: &'a mut Out,
    stacks: &'a mut [Box<dyn Stack>],
    cores: &'a mut [Core],
    rx_owner: &'a [Vec<u16>],
    tx_owner: &'a [Vec<u16>],
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
        let c = self.rx_owner[port][queue] as usize;
        self.stacks[c].rx_writeback(t, port, queue, &mut self.cores[c], self.out);
    }

    #[inline]
    fn tx_writeback(&mut self, t: Ps, port: usize, queue: usize) {
        let c = self.tx_owner[port][queue] as usize;
        self.stacks[c].tx_writeback(t, port, queue, &mut self.cores[c], self.out);
    }
}

fn field_err(field: &str, value: impl ToString, allowed: &str) -> Error {
    ConfigError::new(field, value.to_string(), allowed).into()
}

impl Host {
    /// `max_frame_bytes`: the largest frame (FCS included) the host will see
    /// or build; every mbuf must hold it.
    pub fn new(sim: &SimConfig, cfg: &HostConfig, max_frame_bytes: u32) -> Result<Host> {
        cfg.validate()?;
        let registry = Registry::builtin();
        let entry = registry.lookup(&sim.app)?.clone();
        let app = (entry.ctor)(&cfg.app)?;
        let kernel = sim.stack == crate::config::Stack::Kernel;
        let cores = vec![Core::new(0, &cfg.cpu)?];
        let cycle_ps = PS_PER_S / cfg.cpu.freq_hz.max(1);
        let mem = MemSystem::new(&cfg.mem, cores.len(), &vec![cycle_ps; cores.len()])?;
        let p = &cfg.pmd;
        let mut mbufs = Mempool::new(&p.mempool, cores.len(), MEMPOOL_BASE);
        if MEMPOOL_BASE + mbufs.bytes() > MEMPOOL_END {
            return Err(field_err("host.pmd.mempool.mbufs", p.mempool.mbufs, &format!("a pool that fits {} MiB of simulated memory", (MEMPOOL_END - MEMPOOL_BASE) >> 20)));
        }
        let need = max_frame_bytes.max((entry.max_frame_bytes)(&cfg.app)) as u64 - FCS_LEN as u64;
        if mbufs.data_room() < need {
            return Err(field_err("host.pmd.mempool.buf_bytes", p.mempool.buf_bytes, &format!(">= {} (headroom 128 B + the largest frame without FCS, {need} B)", need + 128)));
        }
        // The ports and their queue pairs; the driver arms every RX slot at start (rte_eth_dev_start).
        let n = &cfg.nic;
        let pcie = PcieLink::new(&cfg.pcie)?;
        let params = PortParams {
            tx_fifo_bytes: n.tx_fifo_bytes,
            rx_wb_timer_ps: n.rx_wb_timer_ps,
            tx_fetch_batch: n.tx_fetch_batch as u64,
            tx_desc_cache: n.tx_desc_cache as u64,
            pcie_latency_ps: cfg.pcie.latency_ps,
            wire_rate_bps: sim.link.rate_bps,
        };
        let tx_rs = if kernel { 1 } else { p.tx_rs_thresh as u64 };
        let (mut armed, mut touched) = (Vec::new(), Vec::new());
        let k = 0u64;
        if !mbufs.get_bulk(0, p.rxd as usize, &mut armed, &mut touched) {
            return Err(field_err("host.pmd.mempool.mbufs", p.mempool.mbufs, "enough mbufs to fill the RX rings"));
        }
        let rx_base = RX_RING_BASE + k * RING_STRIDE;
        let ring = RxRing::new(rx_base, armed.iter().map(|&m| (m, mbufs.data_addr(m))));
        let desc = RxDescCache::new(p.rxd, n.rx_desc_cache, n.rx_prefetch_threshold, n.rx_wb_threshold, ring.tail());
        let rxq = vec![RxQueue::new(ring, desc)];
        let txq = vec![TxQueue::new(TxRing::new(rx_base + TX_RING_OFFSET, p.txd), tx_rs)];
        let mac = |s: &str| parse_mac(s).unwrap_or_default();
        let ip = |s: &str| s.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
        let lg = &sim.loadgen;
        let addrs = PortAddrs { mac: mac(&lg.dst_mac), ip: ip(&lg.dst_ip), peer: mac(&lg.src_mac), peer_ip: ip(&lg.src_ip) };
        let port = Port::new(0, addrs, params, n.rx_fifo_bytes, Rss::single(), rxq, txq);
        let nic = Nic { devs: vec![NicDev::new(pcie, 0)], ports: vec![port] };
        let stream = Stream { rx_port: 0, rx_queue: 0, tx_port: 0, tx_queue: 0 };
        let stack: Box<dyn Stack> = if kernel {
            let socket = app.socket().ok_or_else(|| field_err("stack", "kernel", &format!("pmd for app {} (it binds no socket)", sim.app)))?;
            Box::new(Kernel::new(&cfg.kernel, p.costs, 0, stream, socket))
        } else {
            Box::new(Pmd::new(p, 0, vec![stream]))
        };
        let mut h = Host {
            stack_name: stack.name(),
            nic,
            mem,
            cores,
            stacks: vec![stack],
            app,
            mbufs,
            rx_owner: vec![vec![0]],
            tx_owner: vec![vec![0]],
            out: Out::default(),
        };
        h.start();
        Ok(h)
    }

    /// The NIC's first descriptor prefetches, then every core's first step.
    fn start(&mut self) {
        let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner };
        self.nic.start(0, &mut self.mem, &mut sink);
        for c in 0..self.cores.len() {
            self.out.schedule(0, Event::Core(c as u16));
        }
    }

    /// A frame arrived whole from the wire at `port` at `now`.
    #[inline]
    pub fn frame_arrival(&mut self, port: usize, frames: &mut FramePool, id: FrameId, now: Ps) {
        let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner };
        self.nic.frame_arrival(port, id, now, frames, &mut self.mem, &mut sink);
    }

    pub fn handle(&mut self, now: Ps, ev: Event, frames: &mut FramePool) {
        match ev {
            Event::Nic(ev) => {
                let mut sink = Sink { out: &mut self.out, stacks: &mut self.stacks, cores: &mut self.cores, rx_owner: &self.rx_owner, tx_owner: &self.tx_owner };
                self.nic.handle(now, ev, frames, &mut self.mem, &mut sink);
            }
            Event::Core(c) => {
                let c = c as usize;
                let mut cx = StackCx { core: &mut self.cores[c], nic: &mut self.nic, mem: &mut self.mem, mbufs: &mut self.mbufs, frames, out: &mut self.out };
                self.stacks[c].run(now, &mut cx, &mut *self.app);
            }
        }
    }

    /// The host's part of the JSON result, over a measured window of `window_ps`.
    pub fn result_json(&self, window_ps: Ps) -> Value {
        let port = &self.nic.ports[0];
        let pc = port.counters;
        let core = &self.cores[0];
        let acct = core.account();
        let cpp = acct.cycles_per_packet(acct.packets());
        let cat = |c: Category| cpp.get(c);
        let stack = self.stacks[0].result_json();
        let sd = self.stacks[0].drops();
        let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let app = self.app.result_json();
        let ring_full: u64 = port.txq.iter().map(|q| q.counters.ring_full_drops).sum();
        json!({
            "nic": {
                "rx_packets": pc.rx_packets,
                "rx_bytes": pc.rx_bytes,
                "rx_missed_errors": pc.rx_missed_errors,
                "rx_nombuf": num(&stack, "rx_nombuf"),
                "tx_packets": pc.tx_packets,
                "tx_bytes": pc.tx_bytes,
                "rx_fifo_max_bytes": port.rx_fifo_max_bytes(),
            },
            "drops": {
                "dma": port.fsm.dma,
                "core": port.fsm.core,
                "tx": port.fsm.tx + ring_full,
                "fifo_tx": port.fsm.tx,
                "tx_ring_full": ring_full,
                "socket": sd.socket,
                "no_port": sd.no_port,
                "qdisc": sd.qdisc,
            },
            "stack": self.stack_name,
            "kernel": stack.get("kernel").cloned().unwrap_or(Value::Null),
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
                "core0": core.result_json(),
            },
            "pmd": {
                "rx_burst_packets": self.stacks[0].burst_histogram(),
                "empty_polls": num(&stack, "empty_polls"),
                "app_consumed": num(&stack, "app_consumed"),
                "txonly_built": num(&app, "txonly_built"),
                "txonly_unsent": num(&stack, "txonly_unsent"),
                "touch_digest": num(&app, "touch_digest"),
                "mempool_available": self.mbufs.available(),
            },
            "mem": self.mem.result_json(),
            "pcie": self.nic.devs[0].pcie.result_json(window_ps),
            "kvs": if self.app.name() == "memcached" { app } else { Value::Null },
        })
    }
}

impl HasStats for Host {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let port = &self.nic.ports[0];
        let k = port.counters;
        let mut nic = s.scope("nic0");
        nic.count("rx_packets", k.rx_packets, "Frames DMA'd to host memory");
        nic.count("rx_missed_errors", k.rx_missed_errors, "Frames dropped because the RX FIFO was full");
        nic.count("tx_packets", k.tx_packets, "Frames read from host memory for transmission");
        port.fsm.report_stats(&mut nic);
        self.stacks[0].report_stats(&mut s.scope(self.stack_name));
        self.cores[0].report_stats(&mut s.scope("cpu0"));
        self.mem.report_stats(&mut s.scope("mem"));
        self.nic.devs[0].pcie.report_stats(&mut s.scope("pcie"));
    }

    fn reset_stats(&mut self) {
        self.nic.reset_counters();
        for st in &mut self.stacks {
            st.reset_stats();
        }
        self.app.reset_stats();
        for c in &mut self.cores {
            c.reset_stats();
        }
        self.mem.reset_stats();
    }
}
