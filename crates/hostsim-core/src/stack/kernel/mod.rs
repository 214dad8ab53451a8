//! The Linux kernel network stack (SPEC 2.8) on one core, for
//! `stack = "kernel"`, over the same NIC, PCIe, memory system and cores as
//! the poll-mode driver.
//!
//! ```text
//! NIC write-back ─▶ interrupt (ITR) ─▶ NAPI poll ≤ 64 (TX clean, RX: build_skb,
//!   refill, GRO, ip_rcv, udp_rcv) ─▶ socket queue ─▶ wake-up ─▶ recvfrom
//!   (syscall, copy to user, free skb) ─▶ application ─▶ sendto (syscall, skb,
//!   copy from user, UDP/IP output, qdisc + lock, driver xmit, doorbell)
//! ```
//!
//! Each core runs three contexts: the hard interrupt of its queue pair and
//! the softirq it raises (taken between work units, ahead of any thread),
//! and two threads — the application and ksoftirqd — chosen CFS-style by
//! virtual runtime with a minimum granularity. A NAPI round
//! (`net_rx_action`) polls up to `napi_budget` packets at a time until a
//! poll comes back short (NAPI completes, the interrupt is unmasked) or
//! `netdev_budget` packets are done (the rest is left to ksoftirqd, which
//! competes with the application for the core). The interrupt fires when a
//! write-back is visible and at least `irq_interval` after the previous
//! one; a cause latched while NAPI ran fires it again on unmasking. With
//! several cores, each has its own queue pair (its interrupt's affinity),
//! application thread and socket (SO_REUSEPORT), skb slab and qdisc. A
//! core forwarding in the softirq (no socket) may serve several queue
//! pairs: each is a NAPI context with its own interrupt, qdisc and TX
//! ring, and `net_rx_action` polls the scheduled contexts in turn (the
//! per-CPU poll list) until each comes back short or `netdev_budget` is
//! spent.
//!
//! Every stage is a number of instructions plus real memory accesses at
//! simulated addresses — descriptors, the page buffers the NIC wrote (in the
//! LLC with DCA), sk_buff structs from a slab, the socket, the qdisc lock, the
//! application's buffers — so copies cost what the caches make them cost and
//! grow with the datagram. Cycles go to the categories irq, rx, skb, mempool
//! (page buffers), proto (GRO, IP, UDP, socket queues), sched, syscall, copy,
//! app, qdisc and tx.
//!
//! TCP (a bulk receiver such as `--app iperf`): GRO merges consecutive
//! segments of a flow within a NAPI poll up to `gro_max_bytes`; IP and TCP
//! receive run once per merged skb, which is acknowledged at once (one pure
//! ACK through the qdisc and the driver); the application's `recv` copies up
//! to `recv_bytes` per call (`socket.rs`).
//!
//! Files: this one (the core's contexts, NAPI and the receive path),
//! `tx.rs` (freeing skbs, the TX clean, the qdisc and `xmit`), `socket.rs`,
//! `forward.rs` (softirq forwarding), and the TCP sender: `tcp_writer.rs`
//! (the writing thread), `tcp_tx.rs` (segments, window, ACKs, timers) and
//! `tcp_offload.rs` (each transmit scheme's payload work).
//!
//! Simplified: interrupts are taken at work-unit boundaries (after at most
//! one request of the application); one NAPI round runs in interrupt context
//! before deferring to ksoftirqd (the kernel may restart it up to ten times);
//! checksums are offloaded; no adaptive interrupt moderation; the
//! application is a single thread doing blocking recvfrom/sendto (or recv);
//! TCP takes every segment as in order (no handshake, no out-of-order queue,
//! no retransmission, no window: the sender is open loop); one queue pair
//! per core for a socket application.

pub mod config;
mod forward;
mod socket;
mod tcp_tx;
mod tcp_offload;
mod tcp_writer;
mod tx;

use std::collections::VecDeque;

use serde_json::{json, Value};

pub use config::{KernelCode, KernelConfig, KernelCosts, TcpConfig};

/// The kernel's code regions (`host.kernel.code`), by path.
pub(super) mod code {
    use super::KernelConfig;
    use crate::cpu::CodeRegion;

    pub const IRQ: u16 = 1;
    pub const DRIVER_RX: u16 = 2;
    pub const UDP_RX: u16 = 3;
    pub const TCP_RX: u16 = 4;
    pub const UDP_RECV: u16 = 5;
    pub const TCP_RECV: u16 = 6;
    pub const UDP_SEND: u16 = 7;
    pub const XMIT: u16 = 8;
    pub const TX_CLEAN: u16 = 9;
    pub const FORWARD: u16 = 10;

    /// The interrupt, softirq and NAPI loop.
    pub fn irq(cfg: &KernelConfig) -> CodeRegion {
        CodeRegion::kernel(IRQ, cfg.code.irq_bytes)
    }
}

use super::app::{App, Socket, Transport};
use super::mempool::{Mempool, MempoolConfig};
use super::{Event, Out, StackCx, StackDrops, Stream};
use crate::cpu::{Category, CodeRegion, Core, Work};
use crate::engine::stats::StatSink;
use crate::engine::time::Ps;
use crate::framebuf::FrameId;
use crate::nic::{RxQueue, Slot, TxQueue};
use crate::wire::TCP_HEADERS;

/// Simulated addresses of one core's kernel structures and application
/// buffers: core 0 at the historical addresses, each further core in a
/// 256 MiB region of its own above 4 GiB.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The core's sk_buff slab.
    skb: u64,
    /// `struct sock` of the application's socket: lock, receive queue, accounting.
    sock: u64,
    /// The route and neighbour entry towards the peer.
    route: u64,
    /// The TX queue's qdisc: its lock and queue head.
    qdisc: u64,
    /// The application's receive and send buffers (64 KiB each, as memcached's UDP read buffer).
    user_rx: u64,
    user_tx: u64,
    /// The TCP sender's copy descriptors (ioat, nicmem) and their completion status.
    copy_ring: u64,
    copy_status: u64,
}

impl Layout {
    fn of(core: usize) -> Layout {
        let base = if core == 0 { 0x3000_0000 } else { 0x1_0000_0000 + core as u64 * 0x1000_0000 };
        Layout {
            skb: base,
            sock: base + 0x0800_0000,
            route: base + 0x0800_1000,
            qdisc: base + 0x0800_2000,
            user_rx: base + 0x0900_0000,
            user_tx: base + 0x0901_0000,
            copy_ring: base + 0x0800_3000,
            copy_status: base + 0x0800_4000,
        }
    }
}

/// The sk_buff slab as a mempool: objects of `struct sk_buff` (about 232 B,
/// in 192 B of buffer after the pool's headers; estimate), with a per-core
/// cache of 250 as DPDK's mempools (the kernel's per-CPU slab cache differs
/// in detail; estimate).
fn slab_config(skbs: u32) -> MempoolConfig {
    MempoolConfig { mbufs: skbs, cache_size: 250, buf_bytes: 192 }
}

/// `struct sk_buff` is about 232 B (estimate, from its field list in
/// include/linux/skbuff.h): four lines written at allocation.
const SKB_LINES: u64 = 4;
/// build_skb puts `skb_shared_info` (≈ 320 B, estimate) at the end of a 2 KiB buffer.
const SHINFO_OFFSET: u64 = 2048 - 320;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thread {
    App = 0,
    Ksoftirqd = 1,
}

/// A datagram in the socket's receive queue.
#[derive(Debug, Clone, Copy)]
struct Queued {
    skb: u32,
    buf: u32,
    frame: FrameId,
    /// Payload bytes (found by the socket lookup).
    len: u32,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    irqs: u64,
    napi_polls: u64,
    /// Polls that received nothing (no frame ready, or no buffer to refill with).
    empty_polls: u64,
    softirq_rounds: u64,
    ksoftirqd_rounds: u64,
    context_switches: u64,
    wakeups: u64,
    syscalls: u64,
    datagrams_received: u64,
    datagrams_sent: u64,
    /// Datagrams dropped because the socket's receive buffer was full (netstat `RcvbufErrors`).
    rcvbuf_errors: u64,
    /// Datagrams to a port nobody listens on, and frames that are not UDP/IPv4 (`NoPorts`).
    no_ports: u64,
    /// Packets the qdisc dropped (its queue was full), and sends that found no buffer.
    qdisc_drops: u64,
    /// Packets that waited in the qdisc for TX descriptors.
    qdisc_requeues: u64,
    /// TCP: skbs GRO built, ACKs sent, payload bytes copied to the application.
    gro_skbs: u64,
    tcp_acks: u64,
    tcp_bytes: u64,
    sock_queue_max: u64,
    nombuf: u64,
    /// Page-buffer refills that found the pool empty (`rx_nombuf`).
    rx_nombuf: u64,
    /// Packets the application consumed (a TCP receiver).
    app_consumed: u64,
    /// Forwarding in the softirq: packets queued for transmission, and
    /// packets the forwarding decision dropped.
    forwarded: u64,
    not_forwarded: u64,
    /// skb clones a forwarding application sent up the host's stack.
    clones: u64,
}

/// One queue pair's NAPI context: its interrupt (a vector per queue pair,
/// its affinity this core), the qdisc of its TX queue and the skbs on the
/// TX ring.
struct Napi {
    s: Stream,
    /// The queue's interrupt is unmasked (NAPI is not scheduled).
    irq_enabled: bool,
    /// An interrupt is due at this time.
    irq_at: Option<Ps>,
    last_irq: Option<Ps>,
    /// On the core's poll list: its interrupt was taken and its poll has
    /// not yet come back short.
    scheduled: bool,
    /// Packets waiting for TX descriptors, with their skbs.
    qdisc: VecDeque<(Slot, u32)>,
    /// skbs of the descriptors in the TX ring, oldest first.
    tx_skbs: VecDeque<u32>,
}

impl Napi {
    fn new(s: Stream) -> Napi {
        Napi { s, irq_enabled: true, irq_at: None, last_irq: None, scheduled: false, qdisc: VecDeque::new(), tx_skbs: VecDeque::with_capacity(4096) }
    }
}

/// The kernel on one core: the NAPI contexts of its queue pairs (their
/// interrupts, qdiscs and TX rings), its threads, socket and skb slab.
pub struct Kernel {
    cfg: KernelConfig,
    id: usize,
    /// The queue pairs this core serves, and the one being worked on.
    napis: Vec<Napi>,
    cur: usize,
    /// Where the next poll-list walk starts.
    poll_next: usize,
    at: Layout,
    /// The application's socket (port and protocol).
    port: u16,
    tcp: bool,
    /// No socket: the application forwards in the softirq (`forward.rs`).
    forwarder: bool,
    /// Pure ACKs to send, as the headers of the segment they answer
    /// (addresses swapped later), with the acknowledgement number.
    acks: Vec<([u8; TCP_HEADERS], u32)>,
    skbs: Mempool,
    sock_q: VecDeque<Queued>,
    sock_q_bytes: u64,
    /// NAPI left work for ksoftirqd.
    ksoftirqd: bool,
    /// The thread on the core (None: the idle task).
    running: Option<Thread>,
    vruntime: [Ps; 2],
    /// The time of the core's step that is queued, if one is (an event
    /// for any other time is stale).
    pending_at: Option<Ps>,
    /// Instructions per mbuf of a mempool operation, and per line an
    /// application reads (`host.pmd.costs`), for the applications.
    pmd_costs: super::pmd::config::PmdCosts,
    work: Work,
    touched: Vec<u64>,
    scratch: Vec<u32>,
    no_tx: Vec<Slot>,
    no_free: Vec<u32>,
    ids: Vec<u32>,
    ids2: Vec<u32>,
    rcvd: Vec<Queued>,
    /// Packets per NAPI poll.
    burst_hist: Vec<u64>,
    /// A TCP-sending application's writer (`tcp_tx.rs`).
    writer: Option<Box<tcp_writer::Writer>>,
    /// References to each page buffer a TCP segment holds (by mbuf).
    data_refs: Vec<u8>,
    /// Zero-copy: where each frame's payload lives, by frame (0: behind its headers).
    frame_split: Vec<u64>,
    /// Copy descriptors written (ioat, nicmem).
    copy_pos: u64,
    c: Counters,
}

/// What the kernel of a TCP-sending application needs: what it writes,
/// when transmission ends, and its port's addresses (source MAC,
/// destination MAC, source IPv4, destination IPv4).
pub struct WriterEnv {
    pub spec: super::app::WriterSpec,
    pub scheme: config::TxScheme,
    pub tx_end: Ps,
    pub addrs: (crate::wire::ethernet::Mac, crate::wire::ethernet::Mac, std::net::Ipv4Addr, std::net::Ipv4Addr),
}

impl Kernel {
    /// The kernel on core `id`, serving `streams` (one queue pair each) for
    /// an application bound to `socket`.
    pub fn new(cfg: &KernelConfig, pmd_costs: super::pmd::config::PmdCosts, id: usize, streams: &[Stream], socket: Option<Socket>, writer: Option<WriterEnv>) -> Kernel {
        let at = Layout::of(id);
        let slab = slab_config(cfg.skbs);
        Kernel {
            cfg: *cfg,
            id,
            napis: streams.iter().map(|&s| Napi::new(s)).collect(),
            cur: 0,
            poll_next: 0,
            at,
            port: socket.map_or(0, |s| s.port),
            tcp: socket.is_some_and(|s| s.transport == Transport::Tcp),
            forwarder: socket.is_none(),
            acks: Vec::new(),
            skbs: Mempool::new(&slab, 1, at.skb),
            sock_q: VecDeque::with_capacity(256),
            sock_q_bytes: 0,
            ksoftirqd: false,
            running: None,
            vruntime: [0; 2],
            pending_at: Some(0),
            pmd_costs,
            work: Work::with_capacity(Category::Rx, 4096),
            touched: Vec::with_capacity(256),
            scratch: Vec::with_capacity(8),
            no_tx: Vec::new(),
            no_free: Vec::new(),
            ids: Vec::with_capacity(256),
            ids2: Vec::with_capacity(256),
            rcvd: Vec::with_capacity(256),
            burst_hist: vec![0; cfg.napi_budget as usize + 1],
            writer: writer.map(|w| Box::new(tcp_writer::Writer::new(w.spec, cfg.tcp, w.scheme, id, w.tx_end, w.addrs))),
            data_refs: Vec::new(),
            frame_split: Vec::new(),
            copy_pos: 0,
            c: Counters::default(),
        }
    }

    /// The stream of the NAPI context being worked on.
    #[inline]
    fn s(&self) -> Stream {
        self.napis[self.cur].s
    }

    #[inline]
    fn napi(&mut self) -> &mut Napi {
        &mut self.napis[self.cur]
    }

    /// The qdisc's lock and queue head of the current context's TX queue.
    #[inline]
    fn qdisc_addr(&self) -> u64 {
        self.at.qdisc + self.cur as u64 * 0x100
    }

    #[inline]
    fn rxq<'a>(&self, cx: &'a mut StackCx) -> &'a mut RxQueue {
        let s = self.s();
        &mut cx.nic.ports[s.rx_port].rxq[s.rx_queue]
    }

    #[inline]
    fn txq<'a>(&self, cx: &'a mut StackCx) -> &'a mut TxQueue {
        let s = self.s();
        &mut cx.nic.ports[s.tx_port].txq[s.tx_queue]
    }

    /// Sets the drop-attribution input of the queue: the qdisc holds packets
    /// because the TX ring is full.
    #[inline]
    fn set_tx_blocked(&self, cx: &mut StackCx) {
        let blocked = !self.napis[self.cur].qdisc.is_empty();
        self.rxq(cx).tx_blocked = blocked;
    }

    #[inline]
    fn exec(&mut self, cx: &mut StackCx) {
        cx.core.exec(&self.work, cx.mem);
    }

    /// Charges the mempool's touched addresses as one work unit.
    fn exec_touched(&mut self, cx: &mut StackCx, cat: Category, instr: u64) {
        cx.exec_touched(&mut self.work, cat, instr, &self.touched);
    }

    /// The rings of every queue pair: what the NIC has written back by `now`.
    fn see_writebacks(&self, cx: &mut StackCx, now: Ps) {
        for n in &self.napis {
            cx.nic.ports[n.s.rx_port].rxq[n.s.rx_queue].see_writebacks(now);
            cx.nic.ports[n.s.tx_port].txq[n.s.tx_queue].see_writebacks(now);
        }
    }

    /// Asks for context `k`'s interrupt for a cause visible at `t`; returns
    /// its time if one was newly scheduled.
    fn request_irq(&mut self, k: usize, t: Ps) -> Option<Ps> {
        let interval = self.cfg.irq_interval_ps;
        let n = &mut self.napis[k];
        if !n.irq_enabled || n.irq_at.is_some() {
            return None;
        }
        let at = n.last_irq.map_or(t, |l| t.max(l + interval));
        n.irq_at = Some(at);
        Some(at)
    }

    /// An interrupt cause of context `k` became visible at `t` (an RX or TX
    /// write-back); a step is queued for it unless one comes sooner (never
    /// before the core's clock: the core is busy until then).
    fn raise_irq(&mut self, k: Option<usize>, t: Ps, core: &Core, out: &mut Out) {
        let Some(k) = k else { return };
        if let Some(at) = self.request_irq(k, t) {
            let at = at.max(core.now());
            if self.pending_at.map_or(true, |p| at < p) {
                self.pending_at = Some(at);
                out.schedule(at, Event::Core(self.id as u16));
            }
        }
    }

    /// CFS placement of a thread that becomes runnable: no credit beyond one
    /// granularity behind the other thread.
    fn place(&mut self, t: Thread) {
        let other = self.vruntime[1 - t as usize];
        let v = &mut self.vruntime[t as usize];
        *v = (*v).max(other.saturating_sub(self.cfg.sched_granularity_ps));
    }

    /// Queues the next step at the core's time.
    fn next_loop(&mut self, cx: &mut StackCx) {
        let t = cx.core.now();
        self.pending_at = Some(t);
        cx.out.schedule(t, Event::Core(self.id as u16));
    }

    /// One step of the core: an interrupt if one is due, else one unit of
    /// the thread the scheduler picks, else idle.
    fn step(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        if self.pending_at != Some(now) {
            return; // superseded by a sooner step
        }
        self.pending_at = None;
        cx.core.idle_until(now);
        let t = cx.core.now();
        self.see_writebacks(cx, t);
        // Every interrupt that is due: each schedules its NAPI context.
        let mut taken = false;
        for k in 0..self.napis.len() {
            let t = cx.core.now();
            let n = &mut self.napis[k];
            if n.irq_at.is_some_and(|at| at <= t) {
                n.irq_at = None;
                n.irq_enabled = false;
                n.last_irq = Some(t);
                n.scheduled = true;
                self.c.irqs += 1;
                self.work.reset(Category::Irq).code(code::irq(&self.cfg)).instr(self.cfg.costs.irq_instr as u64);
                self.exec(cx);
                taken = true;
            }
        }
        if taken {
            self.net_rx_action(cx, app);
            self.next_loop(cx);
            return;
        }
        // TCP's retransmission timers (the timer softirq).
        if self.writer.as_ref().and_then(|w| w.next_timer()).is_some_and(|at| at <= cx.core.now()) {
            self.tcp_timers(cx);
            self.next_loop(cx);
            return;
        }
        // Offloaded copies the stack waits for to send (ioat, nicmem).
        if self.writer.as_ref().and_then(|w| w.copy_wait).is_some_and(|at| at <= cx.core.now()) {
            self.tcp_copies_done(cx);
            self.next_loop(cx);
            return;
        }
        let app_runnable = !self.sock_q.is_empty() || self.writer.as_ref().is_some_and(|w| w.runnable(cx.core.now()));
        let next = match (app_runnable, self.ksoftirqd) {
            (false, false) => None,
            (true, false) => Some(Thread::App),
            (false, true) => Some(Thread::Ksoftirqd),
            (true, true) => {
                let (a, s) = (self.vruntime[0], self.vruntime[1]);
                let g = self.cfg.sched_granularity_ps;
                Some(match self.running {
                    Some(Thread::App) if a <= s + g => Thread::App,
                    Some(Thread::Ksoftirqd) if s <= a + g => Thread::Ksoftirqd,
                    _ if a <= s => Thread::App,
                    _ => Thread::Ksoftirqd,
                })
            }
        };
        if next != self.running {
            self.running = next;
            self.c.context_switches += 1;
            self.work.reset(Category::Sched).instr(self.cfg.costs.context_switch_instr as u64);
            self.exec(cx);
        }
        let t0 = cx.core.now();
        match next {
            None => {
                // Idle until the next interrupt or timer.
                let timer = self.writer.as_ref().and_then(|w| w.next_timer().into_iter().chain(w.next_wake()).min());
                if let Some(t) = self.napis.iter().filter_map(|n| n.irq_at).chain(timer).min() {
                    let t = t.max(t0);
                    self.pending_at = Some(t);
                    cx.out.schedule(t, Event::Core(self.id as u16));
                }
                return;
            }
            Some(Thread::App) => {
                self.app_iteration(cx, app);
                self.vruntime[0] += cx.core.now() - t0;
            }
            Some(Thread::Ksoftirqd) => {
                self.c.ksoftirqd_rounds += 1;
                self.net_rx_action(cx, app);
                self.vruntime[1] += cx.core.now() - t0;
            }
        }
        self.next_loop(cx);
    }

    /// net_rx_action: polls the scheduled NAPI contexts in turn, up to
    /// `napi_budget` packets each, until every one has come back short
    /// (completed, its interrupt unmasked) or `netdev_budget` packets are
    /// done (the rest is left to ksoftirqd).
    fn net_rx_action(&mut self, cx: &mut StackCx, app: &mut dyn App) {
        self.c.softirq_rounds += 1;
        let budget = self.cfg.napi_budget as u64;
        let mut done = 0u64;
        let n_napis = self.napis.len();
        loop {
            // The poll list: a context that used its whole weight goes to
            // the tail, so the next round starts after it.
            let start = self.poll_next;
            for k in (0..n_napis).map(|i| (start + i) % n_napis) {
                if !self.napis[k].scheduled {
                    continue;
                }
                self.poll_next = (k + 1) % n_napis;
                self.cur = k;
                let t = cx.core.now();
                self.see_writebacks(cx, t);
                let n = self.napi_poll(cx, app, budget);
                done += n;
                if n < budget {
                    self.complete(cx);
                }
                if done >= self.cfg.netdev_budget as u64 && self.napis.iter().any(|n| n.scheduled) {
                    if !self.ksoftirqd {
                        self.ksoftirqd = true;
                        self.place(Thread::Ksoftirqd);
                    }
                    return;
                }
            }
            if !self.napis.iter().any(|n| n.scheduled) {
                self.ksoftirqd = false;
                return;
            }
        }
    }

    /// The current NAPI context completes: its interrupt is unmasked, and a
    /// cause latched while it was masked fires it again.
    fn complete(&mut self, cx: &mut StackCx) {
        let k = self.cur;
        self.napis[k].scheduled = false;
        self.napis[k].irq_enabled = true;
        let now = cx.core.now();
        let (rx_ready, rx_next) = {
            let q = self.rxq(cx);
            (q.ring.ready(), q.next_writeback())
        };
        let (tx_done, tx_next) = {
            let q = self.txq(cx);
            (q.ring.done > q.ring.freed, q.next_writeback())
        };
        let cause = if rx_ready > 0 || tx_done { Some(now) } else { rx_next.into_iter().chain(tx_next).min() };
        if let Some(t) = cause {
            self.request_irq(k, t);
        }
    }

    /// One NAPI poll: clean completed TX descriptors, then receive up to
    /// `budget` packets into the socket. Returns the packets received.
    fn napi_poll(&mut self, cx: &mut StackCx, app: &mut dyn App, budget: u64) -> u64 {
        self.c.napi_polls += 1;
        let n = self.napi_receive(cx, app, budget);
        self.c.empty_polls += (n == 0) as u64;
        n
    }

    /// A NAPI poll's work; returns the packets received.
    fn napi_receive(&mut self, cx: &mut StackCx, app: &mut dyn App, budget: u64) -> u64 {
        let c = self.cfg.costs;
        self.work.reset(Category::Irq).code(code::irq(&self.cfg)).instr(c.napi_poll_instr as u64);
        self.exec(cx);
        self.clean_tx(cx);
        let n = self.rxq(cx).ring.ready().min(budget);
        if n == 0 {
            return 0;
        }
        // Refill first: with no page buffer the packets stay in the ring.
        self.ids.clear();
        self.touched.clear();
        if !cx.mbufs.get_bulk(self.id, n as usize, &mut self.ids, &mut self.touched) {
            self.c.nombuf += 1;
            self.c.rx_nombuf += 1;
            return 0;
        }
        self.exec_touched(cx, Category::Mempool, n * c.buf_instr as u64);
        self.ids2.clear();
        self.touched.clear();
        if !self.skbs.get_bulk(0, n as usize, &mut self.ids2, &mut self.touched) {
            self.c.nombuf += 1;
            cx.mbufs.put_bulk(self.id, &self.ids, &mut self.touched);
            return 0;
        }
        // Driver: descriptors and the first line of each frame (eth_type_trans).
        self.work.reset(Category::Rx).code(CodeRegion::kernel(code::DRIVER_RX, self.cfg.code.driver_rx_bytes));
        let (rp, rq) = (self.s().rx_port, self.s().rx_queue);
        let rxq = &cx.nic.ports[rp].rxq[rq];
        let rx = &rxq.ring;
        for i in 0..n {
            let pos = rx.next + i;
            let s = rx.ring.slots[rx.ring.slot(pos)];
            self.work.instr(c.rx_pkt_instr as u64).read(rxq.completion_addr(pos)).read(s.buf_addr);
        }
        for i in 0..n {
            self.work.instr(c.refill_instr as u64).write(rx.ring.desc_addr(rx.next + i));
        }
        self.exec(cx);
        // build_skb around each buffer.
        self.work.reset(Category::Skb).instr(n * c.skb_alloc_instr as u64);
        for &a in &self.touched {
            self.work.write(a);
        }
        self.rcvd.clear();
        let rx = &mut cx.nic.ports[rp].rxq[rq].ring;
        for i in 0..n {
            let pos = rx.next + i;
            let slot = rx.ring.slot(pos);
            let s = rx.ring.slots[slot];
            let skb = self.ids2[i as usize];
            let sa = self.skbs.mbuf_addr(skb);
            for l in 0..SKB_LINES {
                self.work.write(sa + l * 64);
            }
            self.work.write(s.buf_addr + SHINFO_OFFSET);
            self.rcvd.push(Queued { skb, buf: s.mbuf, frame: s.frame, len: 0 });
            let m = self.ids[i as usize];
            rx.ring.slots[slot].mbuf = m;
            rx.ring.slots[slot].buf_addr = cx.mbufs.data_addr(m);
        }
        rx.next += n;
        self.exec(cx);
        let last = self.burst_hist.len() - 1;
        self.burst_hist[(n as usize).min(last)] += 1;
        cx.core.account_mut().add_packets(n);
        if self.forwarder {
            self.forward(cx, app);
        } else if self.writer.is_some() {
            self.tcp_acks_in(cx);
        } else {
            self.protocols(cx);
        }
        // The refilled descriptors go to the NIC with one tail write per poll.
        let tail = self.rxq(cx).ring.tail();
        cx.rx_doorbell(&mut self.work, Category::Rx, rp, rq, tail);
        n
    }

    pub fn counters_json(&self) -> Value {
        let c = &self.c;
        json!({
            "irqs": c.irqs,
            "napi_polls": c.napi_polls,
            "empty_polls": c.empty_polls,
            "softirq_rounds": c.softirq_rounds,
            "ksoftirqd_rounds": c.ksoftirqd_rounds,
            "context_switches": c.context_switches,
            "wakeups": c.wakeups,
            "syscalls": c.syscalls,
            "datagrams_received": c.datagrams_received,
            "datagrams_sent": c.datagrams_sent,
            "rcvbuf_errors": c.rcvbuf_errors,
            "no_ports": c.no_ports,
            "qdisc_drops": c.qdisc_drops,
            "qdisc_requeues": c.qdisc_requeues,
            "sock_queue_max": c.sock_queue_max,
            "gro_skbs": c.gro_skbs,
            "tcp_acks_sent": c.tcp_acks,
            "tcp_payload_bytes": c.tcp_bytes,
            "nombuf": c.nombuf,
            "forwarded": c.forwarded,
            "not_forwarded": c.not_forwarded,
            "clones": c.clones,
        })
    }
}

impl super::Stack for Kernel {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn run(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        self.step(now, cx, app);
    }

    fn rx_ready(&mut self, t: Ps, q: Option<(usize, usize)>, core: &mut Core, out: &mut Out) {
        let k = self.napis.iter().position(|n| q == Some((n.s.rx_port, n.s.rx_queue)));
        self.raise_irq(k, t, core, out);
    }

    fn tx_done(&mut self, t: Ps, q: (usize, usize), core: &mut Core, out: &mut Out) {
        let k = self.napis.iter().position(|n| q == (n.s.tx_port, n.s.tx_queue));
        self.raise_irq(k, t, core, out);
    }

    fn burst_histogram(&self) -> &[u64] {
        &self.burst_hist
    }

    fn result_json(&self) -> Value {
        let mut v = self.counters_json();
        v["rx_nombuf"] = json!(self.c.rx_nombuf);
        v["app_consumed"] = json!(self.c.app_consumed);
        if let Some(w) = &self.writer {
            v["tcp_send"] = w.result_json();
        }
        v
    }

    fn drops(&self) -> StackDrops {
        StackDrops { socket: self.c.rcvbuf_errors, no_port: self.c.no_ports, qdisc: self.c.qdisc_drops }
    }

    fn report_stats(&self, s: &mut StatSink<'_>) {
        let c = &self.c;
        s.count("irqs", c.irqs, "Hardware interrupts taken");
        s.count("napi_polls", c.napi_polls, "NAPI poll calls");
        s.count("empty_polls", c.empty_polls, "NAPI polls that received nothing");
        s.count("ksoftirqd_rounds", c.ksoftirqd_rounds, "net_rx_action rounds run by ksoftirqd");
        s.count("context_switches", c.context_switches, "Context switches on the core");
        s.count("wakeups", c.wakeups, "Wake-ups of the blocked application");
        s.count("syscalls", c.syscalls, "System calls made by the application");
        s.count("rcvbuf_errors", c.rcvbuf_errors, "Datagrams dropped: socket receive buffer full");
        s.count("no_ports", c.no_ports, "Datagrams to no socket (or not UDP/IPv4)");
        s.count("qdisc_drops", c.qdisc_drops, "Packets dropped by the qdisc or for want of a buffer");
    }

    fn reset_stats(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            w.reset_stats();
        }
        self.c = Counters::default();
        self.burst_hist.iter_mut().for_each(|n| *n = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupts_keep_their_interval() {
        let s = Stream { rx_port: 0, rx_queue: 0, tx_port: 0, tx_queue: 0 };
        let sock = Socket { transport: Transport::Udp, port: 9 };
        let mut k = Kernel::new(&KernelConfig::default(), Default::default(), 0, &[s], Some(sock), None);
        assert_eq!(k.request_irq(0, 5), Some(5));
        assert_eq!(k.request_irq(0, 6), None, "one outstanding");
        k.napis[0].irq_at = None;
        k.napis[0].last_irq = Some(5);
        assert_eq!(k.request_irq(0, 7), Some(5 + 10_000_000));
        k.napis[0].irq_at = None;
        k.napis[0].irq_enabled = false;
        assert_eq!(k.request_irq(0, 1 << 40), None, "masked while NAPI runs");
    }

    #[test]
    fn each_core_has_its_own_addresses() {
        let (a, b) = (Layout::of(0), Layout::of(1));
        assert_eq!((a.skb, a.sock, a.user_rx), (0x3000_0000, 0x3800_0000, 0x3900_0000));
        assert!(b.skb > a.user_tx && Layout::of(2).skb >= b.user_tx + 0x1_0000);
        // The largest slab allowed ends before the socket.
        let slab = Mempool::new(&slab_config(super::config::MAX_SKBS), 1, a.skb);
        assert!(a.skb + slab.bytes() <= a.sock, "slab {} B in {} B", slab.bytes(), a.sock - a.skb);
    }
}
