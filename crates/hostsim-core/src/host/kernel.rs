//! The Linux kernel network stack (SPEC 2.8) on the same NIC, PCIe, memory
//! system and core as the poll-mode driver, for `stack = "kernel"`.
//!
//! ```text
//! NIC write-back ─▶ interrupt (ITR) ─▶ NAPI poll ≤ 64 (TX clean, RX: build_skb,
//!   refill, GRO, ip_rcv, udp_rcv) ─▶ socket queue ─▶ wake-up ─▶ recvfrom
//!   (syscall, copy to user, free skb) ─▶ application ─▶ sendto (syscall, skb,
//!   copy from user, UDP/IP output, qdisc + lock, driver xmit, doorbell)
//! ```
//!
//! One core runs three contexts: the hard interrupt and the softirq it raises
//! (taken between work units, ahead of any thread), and two threads — the
//! application and ksoftirqd — chosen CFS-style by virtual runtime with a
//! minimum granularity. A NAPI round (`net_rx_action`) polls up to
//! `napi_budget` packets at a time until a poll comes back short (NAPI
//! completes, the interrupt is unmasked) or `netdev_budget` packets are done
//! (the rest is left to ksoftirqd, which competes with the application for
//! the core). The interrupt fires when a write-back is visible and at least
//! `irq_interval` after the previous one; a cause latched while NAPI ran
//! fires it again on unmasking.
//!
//! Every stage is a number of instructions plus real memory accesses at
//! simulated addresses — descriptors, the page buffers the NIC wrote (in the
//! LLC with DCA), sk_buff structs from a slab, the socket, the qdisc lock, the
//! application's buffers — so copies cost what the caches make them cost and
//! grow with the datagram. Cycles go to the categories irq, rx, skb, mempool
//! (page buffers), proto (GRO, IP, UDP, socket queues), sched, syscall, copy,
//! app, qdisc and tx.
//!
//! TCP (`--app iperf`, a bulk receiver): GRO merges consecutive segments of
//! a flow within a NAPI poll up to `gro_max_bytes`; IP and TCP receive run
//! once per merged skb, which is acknowledged at once (one pure ACK through
//! the qdisc and the driver); the application's `recv` copies up to
//! `recv_bytes` per call.
//!
//! Simplified: interrupts are taken at work-unit boundaries (after at most
//! one request of the application); one NAPI round runs in interrupt context
//! before deferring to ksoftirqd (the kernel may restart it up to ten times);
//! checksums are offloaded; no adaptive interrupt moderation; the
//! application is a single thread doing blocking recvfrom/sendto (or recv);
//! TCP takes every segment as in order (no handshake, no out-of-order queue,
//! no retransmission, no window: the sender is open loop).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::app::{swap_endpoints, AppKind};
use super::kvs_app::{reply_frame_bytes, write_reply, Served};
use super::rings::Slot;
use super::{Host, HostEvent, CORE};
use crate::config::Protocol;
use crate::cpu::Category;
use crate::loadgen::frame::header_len;
use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::framebuf::{FrameId, FramePool};
use crate::stack::pmd::{Mempool, MempoolConfig};
use crate::wire::ethernet;
use crate::wire::{ipv4, tcp, udp};

/// Simulated addresses of the kernel's structures and the application's buffers.
const SKB_BASE: u64 = 0x3000_0000;
/// `struct sock` of the application's socket: lock, receive queue, accounting.
const SOCK_BASE: u64 = 0x3800_0000;
/// The route and neighbour entry towards the peer.
const ROUTE_BASE: u64 = 0x3800_1000;
/// The device's qdisc: its lock and queue head.
const QDISC_BASE: u64 = 0x3800_2000;
/// The application's receive and send buffers (64 KiB each, as memcached's UDP read buffer).
const USER_RX: u64 = 0x3900_0000;
const USER_TX: u64 = 0x3901_0000;
/// `struct sk_buff` is about 232 B: four lines written at allocation.
const SKB_LINES: u64 = 4;
/// build_skb puts `skb_shared_info` (≈ 320 B) at the end of a 2 KiB buffer.
const SHINFO_OFFSET: u64 = 2048 - 320;
/// Ethernet + IPv4 + UDP (TCP) headers in front of a datagram's (segment's) payload.
const HEADERS: usize = header_len(Protocol::Udp);
const TCP_HEADERS: usize = header_len(Protocol::Tcp);
/// A pure ACK: the headers, padded to the 64 B minimum with the FCS.
const ACK_FRAME_BYTES: u32 = 64;

/// The kernel stack's parameters (`host.kernel.*`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// Minimum time between two interrupts of the queue (the ITR of
    /// ixgbe/i40e): 10 µs is ixgbe's 100K ints/s setting (params.md §7a,
    /// ITR constants); adaptive moderation is not modelled.
    pub irq_interval_ps: Ps,
    /// Packets per NAPI poll (`NAPI_POLL_WEIGHT` 64, params.md §7a).
    pub napi_budget: u32,
    /// Packets per `net_rx_action` round before the rest is left to
    /// ksoftirqd (`netdev_budget` 300, params.md §7a).
    pub netdev_budget: u32,
    /// Socket receive buffer, in bytes of skb truesize
    /// (`net.core.rmem_default` 212992; from the kernel docs, not re-read here).
    pub rcvbuf_bytes: u32,
    /// truesize of one received datagram: a 2 KiB half-page buffer and the
    /// sk_buff (estimate, after ixgbe's buffer layout).
    pub skb_truesize_bytes: u32,
    /// Packets the qdisc holds while the TX ring is full (`txqueuelen` 1000;
    /// the iproute2 default, not re-read here).
    pub txqueuelen: u32,
    /// CFS: a running thread keeps the core until its virtual runtime is
    /// this far ahead of the other runnable thread's (the scheduler's
    /// minimum granularity, 0.75 ms on one CPU; not re-read here).
    pub sched_granularity_ps: Ps,
    /// sk_buff structs in the slab.
    pub skbs: u32,
    /// TCP receive buffer (`tcp_rmem` max 6 MiB, the autotuning limit; not re-read here).
    pub tcp_rcvbuf_bytes: u32,
    /// Largest skb GRO builds (`GRO_LEGACY_MAX_SIZE` 65536, params.md §7a).
    pub gro_max_bytes: u32,
    /// Bytes the receiving application asks for per `recv` (iperf3's 128 KiB; not re-read here).
    pub recv_bytes: u32,
    pub costs: KernelCosts,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            irq_interval_ps: 10_000_000,
            napi_budget: 64,
            netdev_budget: 300,
            rcvbuf_bytes: 212_992,
            skb_truesize_bytes: 2304,
            txqueuelen: 1000,
            sched_granularity_ps: 750_000_000,
            skbs: 8192,
            tcp_rcvbuf_bytes: 6 << 20,
            gro_max_bytes: 65536,
            recv_bytes: 128 << 10,
            costs: KernelCosts::default(),
        }
    }
}

/// Instructions per stage; memory accesses come on top, at their addresses.
///
/// Estimates, tuned once so that on `xeon-e3-1230v2` (the machine of
/// Emmerich et al., params.md §7b) at 64 B below the knee the per-packet
/// RX, TX, memory and skb cycles land near the Linux rows of their Table II
/// (RX ≈ 450, TX ≈ 460, memory ≈ 100–180, skb ≈ 290–310 cycles), and a
/// receive-to-drop path (interrupt, NAPI, skb, IP) costs several hundred
/// cycles as the XDP paper's ~750 cycles for a raw-table drop (§7b). The
/// counts absorb the kernel's lower IPC (instruction-cache and branch misses
/// are not modelled). The protocol, scheduler, system-call and copy stages
/// have no published per-stage figure here; their counts are estimates of
/// the same order (a system call ≈ 0.1 µs, a thread switch ≈ 1 µs, §7b).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// Hard interrupt: entry, handler (mask, schedule NAPI), EOI, exit.
    pub irq_instr: u32,
    /// One NAPI poll call (driver poll routine, net_rx_action bookkeeping).
    pub napi_poll_instr: u32,
    /// Driver RX per packet: descriptor, DMA sync, eth_type_trans.
    pub rx_pkt_instr: u32,
    /// Driver per refilled descriptor.
    pub refill_instr: u32,
    /// sk_buff allocation and initialisation (build_skb).
    pub skb_alloc_instr: u32,
    /// sk_buff release (kfree_skb / consume_skb).
    pub skb_free_instr: u32,
    /// Page-buffer allocation or free (page pool / frag allocator).
    pub buf_instr: u32,
    /// GRO receive (no merge for UDP).
    pub gro_instr: u32,
    /// ip_rcv and ip_rcv_finish: header checks, netfilter hooks, route lookup.
    pub ip_rcv_instr: u32,
    /// udp_rcv: socket lookup, queueing, memory accounting.
    pub udp_rcv_instr: u32,
    /// Waking the blocked application (try_to_wake_up).
    pub wakeup_instr: u32,
    /// One context switch (schedule, switch_to).
    pub context_switch_instr: u32,
    /// System-call entry and exit.
    pub syscall_instr: u32,
    /// udp_recvmsg: dequeue, address copy-out, accounting.
    pub sock_recv_instr: u32,
    /// Copy per 64 B line (copy_to_user / copy_from_user).
    pub copy_instr_per_line: u32,
    /// udp_sendmsg: route, skb set-up, UDP and IP output, neighbour output.
    pub udp_send_instr: u32,
    /// Qdisc enqueue, dequeue and the lock around them.
    pub qdisc_instr: u32,
    /// Driver xmit: DMA map, descriptor, tail doorbell.
    pub xmit_instr: u32,
    /// Per transmitted descriptor cleaned in NAPI.
    pub tx_clean_instr: u32,
    /// The application per datagram (udp-echo: take the source address, send back).
    pub app_instr: u32,
    /// tcp_v4_rcv and tcp_rcv_established per (GRO-merged) skb.
    pub tcp_rcv_instr: u32,
    /// Building and sending one ACK (tcp_send_ack down to the qdisc).
    pub tcp_ack_instr: u32,
    /// tcp_recvmsg per skb consumed.
    pub tcp_recv_skb_instr: u32,
}

impl Default for KernelCosts {
    fn default() -> Self {
        KernelCosts {
            irq_instr: 1500,
            napi_poll_instr: 300,
            rx_pkt_instr: 700,
            refill_instr: 60,
            skb_alloc_instr: 350,
            skb_free_instr: 200,
            buf_instr: 60,
            gro_instr: 150,
            ip_rcv_instr: 400,
            udp_rcv_instr: 400,
            wakeup_instr: 800,
            context_switch_instr: 1500,
            syscall_instr: 300,
            sock_recv_instr: 300,
            copy_instr_per_line: 6,
            udp_send_instr: 800,
            qdisc_instr: 300,
            xmit_instr: 600,
            tx_clean_instr: 200,
            app_instr: 100,
            tcp_rcv_instr: 900,
            tcp_ack_instr: 600,
            tcp_recv_skb_instr: 150,
        }
    }
}

impl KernelConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |f: &str, v: u64, allowed: &str| -> Result<()> { Err(ConfigError::new(f, v.to_string(), allowed).into()) };
        if self.napi_budget == 0 || self.napi_budget > 4096 {
            return bad("kernel.napi_budget", self.napi_budget as u64, "1..=4096");
        }
        if self.netdev_budget < self.napi_budget {
            return bad("kernel.netdev_budget", self.netdev_budget as u64, &format!(">= kernel.napi_budget ({})", self.napi_budget));
        }
        if self.skb_truesize_bytes == 0 || self.rcvbuf_bytes < self.skb_truesize_bytes {
            return bad("kernel.rcvbuf_bytes", self.rcvbuf_bytes as u64, &format!(">= kernel.skb_truesize_bytes ({}) > 0", self.skb_truesize_bytes));
        }
        if self.skbs < 64 || self.skbs > 1 << 22 {
            return bad("kernel.skbs", self.skbs as u64, "64..=4194304");
        }
        if self.irq_interval_ps > 10_000_000_000 {
            return bad("kernel.irq_interval", self.irq_interval_ps, "<= 10 ms");
        }
        if self.sched_granularity_ps == 0 {
            return bad("kernel.sched_granularity", 0, "> 0");
        }
        if self.tcp_rcvbuf_bytes < self.skb_truesize_bytes {
            return bad("kernel.tcp_rcvbuf_bytes", self.tcp_rcvbuf_bytes as u64, &format!(">= kernel.skb_truesize_bytes ({})", self.skb_truesize_bytes));
        }
        if !(1500..=1 << 20).contains(&self.gro_max_bytes) {
            return bad("kernel.gro_max_bytes", self.gro_max_bytes as u64, "1500..=1048576");
        }
        if !(1..=1 << 24).contains(&self.recv_bytes) {
            return bad("kernel.recv_bytes", self.recv_bytes as u64, "1..=16777216");
        }
        Ok(())
    }
}

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
}

/// The kernel's state beside the driver rings the host owns.
pub struct Kernel {
    cfg: KernelConfig,
    /// The port the application's socket is bound to, and its protocol.
    port: u16,
    tcp: bool,
    /// Pure ACKs to send, as the headers of the segment they answer
    /// (addresses swapped later), with the acknowledgement number.
    acks: Vec<([u8; TCP_HEADERS], u32)>,
    skbs: Mempool,
    sock_q: VecDeque<Queued>,
    sock_q_bytes: u64,
    /// The queue's interrupt is unmasked (NAPI is not scheduled).
    irq_enabled: bool,
    /// An interrupt is due at this time.
    irq_at: Option<Ps>,
    last_irq: Option<Ps>,
    /// NAPI left work for ksoftirqd.
    ksoftirqd: bool,
    /// The thread on the core (None: the idle task).
    running: Option<Thread>,
    vruntime: [Ps; 2],
    /// Packets waiting for TX descriptors, with their skbs.
    qdisc: VecDeque<(Slot, u32)>,
    /// skbs of the descriptors in the TX ring, oldest first.
    tx_skbs: VecDeque<u32>,
    /// A CoreLoop event is queued.
    pub(super) loop_pending: bool,
    ids: Vec<u32>,
    ids2: Vec<u32>,
    rcvd: Vec<Queued>,
    c: Counters,
}

impl Kernel {
    pub fn new(cfg: &KernelConfig, port: u16, tcp: bool) -> Kernel {
        let slab = MempoolConfig { mbufs: cfg.skbs, cache_size: 250, buf_bytes: 192 };
        Kernel {
            cfg: *cfg,
            port,
            tcp,
            acks: Vec::new(),
            skbs: Mempool::new(&slab, 1, SKB_BASE),
            sock_q: VecDeque::with_capacity(256),
            sock_q_bytes: 0,
            irq_enabled: true,
            irq_at: None,
            last_irq: None,
            ksoftirqd: false,
            running: None,
            vruntime: [0; 2],
            qdisc: VecDeque::new(),
            tx_skbs: VecDeque::with_capacity(4096),
            loop_pending: false,
            ids: Vec::with_capacity(256),
            ids2: Vec::with_capacity(256),
            rcvd: Vec::with_capacity(256),
            c: Counters::default(),
        }
    }

    /// Asks for an interrupt for a cause visible at `t`; returns its time if
    /// one was newly scheduled.
    fn request_irq(&mut self, t: Ps) -> Option<Ps> {
        if !self.irq_enabled || self.irq_at.is_some() {
            return None;
        }
        let at = self.last_irq.map_or(t, |l| t.max(l + self.cfg.irq_interval_ps));
        self.irq_at = Some(at);
        Some(at)
    }

    /// CFS placement of a thread that becomes runnable: no credit beyond one
    /// granularity behind the other thread.
    fn place(&mut self, t: Thread) {
        let other = self.vruntime[1 - t as usize];
        let v = &mut self.vruntime[t as usize];
        *v = (*v).max(other.saturating_sub(self.cfg.sched_granularity_ps));
    }

    pub fn result_json(&self) -> Value {
        let c = &self.c;
        json!({
            "irqs": c.irqs,
            "napi_polls": c.napi_polls,
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
        })
    }

    /// Drops the kernel counted (socket, no port, qdisc), for the result's `drops`.
    pub fn drops(&self) -> (u64, u64, u64) {
        (self.c.rcvbuf_errors, self.c.no_ports, self.c.qdisc_drops)
    }

    pub fn report_stats(&self, s: &mut crate::engine::stats::StatSink<'_>) {
        let c = &self.c;
        s.count("irqs", c.irqs, "Hardware interrupts taken");
        s.count("napi_polls", c.napi_polls, "NAPI poll calls");
        s.count("ksoftirqd_rounds", c.ksoftirqd_rounds, "net_rx_action rounds run by ksoftirqd");
        s.count("context_switches", c.context_switches, "Context switches on the core");
        s.count("wakeups", c.wakeups, "Wake-ups of the blocked application");
        s.count("syscalls", c.syscalls, "System calls made by the application");
        s.count("rcvbuf_errors", c.rcvbuf_errors, "Datagrams dropped: socket receive buffer full");
        s.count("no_ports", c.no_ports, "Datagrams to no socket (or not UDP/IPv4)");
        s.count("qdisc_drops", c.qdisc_drops, "Packets dropped by the qdisc or for want of a buffer");
    }

    pub fn reset_stats(&mut self) {
        self.c = Counters::default();
    }
}

/// What the socket lookup needs of an Ethernet/IPv4 frame: UDP or TCP, the
/// destination and source ports, the payload length, and for TCP the
/// sequence number just after the payload.
#[derive(Debug, Clone, Copy)]
struct L4 {
    tcp: bool,
    dst_port: u16,
    src_port: u16,
    len: usize,
    end_seq: u32,
}

fn l4(frame: &[u8]) -> Option<L4> {
    let eth = ethernet::Packet::new_checked(frame).ok()?;
    if ethernet::Repr::parse(&eth).ok()?.ethertype != ethernet::ETHERTYPE_IPV4 {
        return None;
    }
    let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
    match ip.protocol() {
        ipv4::PROTO_UDP => {
            let u = udp::Packet::new_checked(ip.payload()).ok()?;
            Some(L4 { tcp: false, dst_port: u.dst_port(), src_port: u.src_port(), len: u.payload().len(), end_seq: 0 })
        }
        ipv4::PROTO_TCP => {
            let t = tcp::Packet::new_checked(ip.payload()).ok()?;
            let len = t.payload().len();
            Some(L4 { tcp: true, dst_port: t.dst_port(), src_port: t.src_port(), len, end_seq: t.seq().wrapping_add(len as u32) })
        }
        _ => None,
    }
}

/// Writes a pure ACK answering the segment whose headers are `seg` into
/// `buf` (a 64 B frame without FCS).
fn write_ack(buf: &mut [u8], seg: &[u8; TCP_HEADERS], ack: u32) {
    let l3 = ethernet::HEADER_LEN;
    buf.fill(0);
    buf[..TCP_HEADERS].copy_from_slice(seg);
    swap_endpoints(buf);
    let mut ip = ipv4::Packet::new_unchecked(&mut buf[l3..]);
    ip.set_total_len((ipv4::HEADER_LEN + tcp::HEADER_LEN) as u16);
    ip.fill_checksum();
    let s = tcp::Packet::new_unchecked(&buf[l3 + ipv4::HEADER_LEN..]);
    let (sport, dport, seq) = (s.src_port(), s.dst_port(), tcp::Packet::new_unchecked(&seg[l3 + ipv4::HEADER_LEN..]).ack());
    tcp::Packet::new_unchecked(&mut buf[l3 + ipv4::HEADER_LEN..]).emit(sport, dport, seq, ack, tcp::FLAG_ACK, 65535);
}

impl Host {
    /// An interrupt cause became visible at `t` (an RX or TX write-back).
    pub(super) fn raise_irq(&mut self, t: Ps) {
        let Some(k) = self.kernel.as_mut() else { return };
        if let Some(at) = k.request_irq(t) {
            if !k.loop_pending {
                k.loop_pending = true;
                self.out_events.push((at, HostEvent::CoreLoop));
            }
        }
    }

    /// Queues the next CoreLoop at the core's time.
    fn next_loop(&mut self, k: &mut Kernel) {
        k.loop_pending = true;
        self.out_events.push((self.core.now(), HostEvent::CoreLoop));
    }

    /// One step of the core under the kernel: an interrupt if one is due,
    /// else one unit of the thread the scheduler picks, else idle.
    pub(super) fn kernel_loop(&mut self, now: Ps, pool: &mut FramePool) {
        let Some(mut k) = self.kernel.take() else { return };
        k.loop_pending = false;
        self.core.idle_until(now);
        self.see_writebacks(self.core.now());
        if k.irq_at.is_some_and(|t| t <= self.core.now()) {
            k.irq_at = None;
            k.irq_enabled = false;
            k.last_irq = Some(self.core.now());
            k.c.irqs += 1;
            self.work.reset(Category::Irq).instr(k.cfg.costs.irq_instr as u64);
            self.core.exec(&self.work, &mut self.mem);
            self.net_rx_action(&mut k, pool);
            self.next_loop(&mut k);
            self.kernel = Some(k);
            return;
        }
        let app = !k.sock_q.is_empty();
        let next = match (app, k.ksoftirqd) {
            (false, false) => None,
            (true, false) => Some(Thread::App),
            (false, true) => Some(Thread::Ksoftirqd),
            (true, true) => {
                let (a, s) = (k.vruntime[0], k.vruntime[1]);
                let g = k.cfg.sched_granularity_ps;
                Some(match k.running {
                    Some(Thread::App) if a <= s + g => Thread::App,
                    Some(Thread::Ksoftirqd) if s <= a + g => Thread::Ksoftirqd,
                    _ if a <= s => Thread::App,
                    _ => Thread::Ksoftirqd,
                })
            }
        };
        if next != k.running {
            k.running = next;
            k.c.context_switches += 1;
            self.work.reset(Category::Sched).instr(k.cfg.costs.context_switch_instr as u64);
            self.core.exec(&self.work, &mut self.mem);
        }
        let t0 = self.core.now();
        match next {
            None => {
                // Idle until the next interrupt.
                if let Some(t) = k.irq_at {
                    k.loop_pending = true;
                    self.out_events.push((t.max(t0), HostEvent::CoreLoop));
                }
                self.kernel = Some(k);
                return;
            }
            Some(Thread::App) => {
                self.app_iteration(&mut k, pool);
                k.vruntime[0] += self.core.now() - t0;
            }
            Some(Thread::Ksoftirqd) => {
                k.c.ksoftirqd_rounds += 1;
                self.net_rx_action(&mut k, pool);
                k.vruntime[1] += self.core.now() - t0;
            }
        }
        self.next_loop(&mut k);
        self.kernel = Some(k);
    }

    /// net_rx_action: NAPI polls until one comes back short (NAPI completes,
    /// the interrupt is unmasked) or `netdev_budget` packets are done (the
    /// rest is left to ksoftirqd).
    fn net_rx_action(&mut self, k: &mut Kernel, pool: &mut FramePool) {
        k.c.softirq_rounds += 1;
        let budget = k.cfg.napi_budget as u64;
        let mut done = 0u64;
        loop {
            self.see_writebacks(self.core.now());
            let n = self.napi_poll(k, pool, budget);
            done += n;
            if n < budget {
                k.ksoftirqd = false;
                k.irq_enabled = true;
                // A cause latched while the interrupt was masked fires it again.
                let now = self.core.now();
                let cause = if self.rx.ready() > 0 || self.tx.done > self.tx.freed {
                    Some(now)
                } else {
                    let rx = self.wb_pending.front().map(|w| w.0);
                    let tx = self.tx_wb_pending.front().map(|w| w.0);
                    rx.into_iter().chain(tx).min()
                };
                if let Some(t) = cause {
                    k.request_irq(t);
                }
                return;
            }
            if done >= k.cfg.netdev_budget as u64 {
                if !k.ksoftirqd {
                    k.ksoftirqd = true;
                    k.place(Thread::Ksoftirqd);
                }
                return;
            }
        }
    }

    /// One NAPI poll: clean completed TX descriptors, then receive up to
    /// `budget` packets into the socket. Returns the packets received.
    fn napi_poll(&mut self, k: &mut Kernel, pool: &mut FramePool, budget: u64) -> u64 {
        let c = k.cfg.costs;
        k.c.napi_polls += 1;
        self.work.reset(Category::Irq).instr(c.napi_poll_instr as u64);
        self.core.exec(&self.work, &mut self.mem);
        self.clean_tx(k);
        let n = self.rx.ready().min(budget);
        if n == 0 {
            return 0;
        }
        // Refill first: with no page buffer the packets stay in the ring.
        k.ids.clear();
        self.touched.clear();
        if !self.pool.get_bulk(CORE, n as usize, &mut k.ids, &mut self.touched) {
            k.c.nombuf += 1;
            self.counters.rx_nombuf += 1;
            return 0;
        }
        self.exec_touched(Category::Mempool, n * c.buf_instr as u64);
        k.ids2.clear();
        self.touched.clear();
        if !k.skbs.get_bulk(CORE, n as usize, &mut k.ids2, &mut self.touched) {
            k.c.nombuf += 1;
            self.pool.put_bulk(CORE, &k.ids, &mut self.touched);
            return 0;
        }
        // Driver: descriptors and the first line of each frame (eth_type_trans).
        self.work.reset(Category::Rx);
        for i in 0..n {
            let pos = self.rx.next + i;
            let s = self.rx.ring.slots[self.rx.ring.slot(pos)];
            self.work.instr(c.rx_pkt_instr as u64).read(self.rx.ring.desc_addr(pos)).read(self.pool.data_addr(s.mbuf));
        }
        for i in 0..n {
            self.work.instr(c.refill_instr as u64).write(self.rx.ring.desc_addr(self.rx.next + i));
        }
        self.core.exec(&self.work, &mut self.mem);
        // build_skb around each buffer.
        self.work.reset(Category::Skb).instr(n * c.skb_alloc_instr as u64);
        for &a in &self.touched {
            self.work.write(a);
        }
        k.rcvd.clear();
        for i in 0..n {
            let pos = self.rx.next + i;
            let slot = self.rx.ring.slot(pos);
            let s = self.rx.ring.slots[slot];
            let skb = k.ids2[i as usize];
            let sa = k.skbs.mbuf_addr(skb);
            for l in 0..SKB_LINES {
                self.work.write(sa + l * 64);
            }
            self.work.write(self.pool.data_addr(s.mbuf) + SHINFO_OFFSET);
            k.rcvd.push(Queued { skb, buf: s.mbuf, frame: s.frame, len: 0 });
            self.rx.ring.slots[slot].mbuf = k.ids[i as usize];
        }
        self.core.exec(&self.work, &mut self.mem);
        self.rx.next += n;
        let last = self.counters.burst_hist.len() - 1;
        self.counters.burst_hist[(n as usize).min(last)] += 1;
        self.core.account_mut().add_packets(n);
        // GRO, IP, UDP or TCP: socket lookup and queueing. TCP segments of a
        // flow merge into one skb (up to gro_max_bytes) that IP and TCP
        // process once and acknowledge.
        let udp_cost = (c.gro_instr + c.ip_rcv_instr + c.udp_rcv_instr) as u64;
        let tcp_cost = (c.ip_rcv_instr + c.tcp_rcv_instr) as u64;
        self.work.reset(Category::Proto);
        let was_empty = k.sock_q.is_empty();
        k.ids.clear();
        k.ids2.clear();
        k.acks.clear();
        // The open GRO skb: (flow's source port, bytes, headers of its last segment, ack number).
        let mut gro: Option<(u16, u64, [u8; TCP_HEADERS], u32)> = None;
        let rcvd = std::mem::take(&mut k.rcvd);
        for q in &rcvd {
            // The socket lookup: a segment or datagram to the application's port.
            let ours = l4(pool.data(q.frame)).filter(|s| s.dst_port == k.port && s.tcp == k.tcp);
            if let Some(s) = ours.filter(|s| s.tcp) {
                self.work.instr(c.gro_instr as u64);
                let mut hdr = [0u8; TCP_HEADERS];
                hdr.copy_from_slice(&pool.data(q.frame)[..TCP_HEADERS]);
                match gro.as_mut() {
                    Some(g) if g.0 == s.src_port && g.1 + s.len as u64 <= k.cfg.gro_max_bytes as u64 => {
                        g.1 += s.len as u64;
                        g.2 = hdr;
                        g.3 = s.end_seq;
                    }
                    _ => {
                        if let Some(g) = gro.take() {
                            k.acks.push((g.2, g.3));
                        }
                        // A new skb for IP and TCP.
                        k.c.gro_skbs += 1;
                        self.work.instr(tcp_cost).read(SOCK_BASE).write(SOCK_BASE + 64);
                        gro = Some((s.src_port, s.len as u64, hdr, s.end_seq));
                    }
                }
            } else {
                self.work.instr(udp_cost).read(SOCK_BASE).write(SOCK_BASE + 64);
            }
            let limit = if k.tcp { k.cfg.tcp_rcvbuf_bytes } else { k.cfg.rcvbuf_bytes } as u64;
            let fits = k.sock_q_bytes + k.cfg.skb_truesize_bytes as u64 <= limit;
            if let (Some(s), true) = (ours, fits) {
                k.sock_q.push_back(Queued { len: s.len as u32, ..*q });
                k.sock_q_bytes += k.cfg.skb_truesize_bytes as u64;
            } else {
                if ours.is_some() {
                    k.c.rcvbuf_errors += 1;
                } else {
                    k.c.no_ports += 1;
                }
                pool.free(q.frame);
                k.ids.push(q.skb);
                k.ids2.push(q.buf);
            }
        }
        k.rcvd = rcvd;
        if let Some(g) = gro.take() {
            k.acks.push((g.2, g.3));
        }
        k.c.sock_queue_max = k.c.sock_queue_max.max(k.sock_q.len() as u64);
        self.core.exec(&self.work, &mut self.mem);
        if !k.ids.is_empty() {
            self.free_skbs(k);
        }
        let acks = std::mem::take(&mut k.acks);
        for (hdr, ack) in &acks {
            self.send_ack(k, hdr, *ack, pool);
        }
        k.acks = acks;
        if was_empty && !k.sock_q.is_empty() {
            // The application sleeps in recvfrom: wake it.
            k.c.wakeups += 1;
            k.place(Thread::App);
            self.work.reset(Category::Sched).instr(c.wakeup_instr as u64).write(SOCK_BASE + 128);
            self.core.exec(&self.work, &mut self.mem);
        }
        // The refilled descriptors go to the NIC with one tail write per poll.
        let t = self.pcie.mmio_write(self.core.now(), 4);
        self.schedule(t, HostEvent::RxDoorbell(self.rx.tail()));
        n
    }

    /// Frees the skbs in `k.ids` and the page buffers in `k.ids2`.
    fn free_skbs(&mut self, k: &mut Kernel) {
        let c = k.cfg.costs;
        self.touched.clear();
        k.skbs.put_bulk(CORE, &k.ids, &mut self.touched);
        self.exec_touched(Category::Skb, k.ids.len() as u64 * c.skb_free_instr as u64);
        self.touched.clear();
        self.pool.put_bulk(CORE, &k.ids2, &mut self.touched);
        self.exec_touched(Category::Mempool, k.ids2.len() as u64 * c.buf_instr as u64);
        k.ids.clear();
        k.ids2.clear();
    }

    /// Frees what the NIC has sent, then moves waiting packets from the
    /// qdisc to the ring.
    fn clean_tx(&mut self, k: &mut Kernel) {
        let done = self.tx.done;
        if done > self.tx.freed {
            let n = done - self.tx.freed;
            self.work.reset(Category::Tx).instr(n * k.cfg.costs.tx_clean_instr as u64);
            k.ids.clear();
            k.ids2.clear();
            for pos in self.tx.freed..done {
                self.work.read(self.tx.ring.desc_addr(pos));
                k.ids2.push(self.tx.ring.slots[self.tx.ring.slot(pos)].mbuf);
                k.ids.push(k.tx_skbs.pop_front().unwrap_or_default());
            }
            self.core.exec(&self.work, &mut self.mem);
            self.tx.freed = done;
            self.free_skbs(k);
        }
        while self.tx.free() > 0 {
            let Some((slot, skb)) = k.qdisc.pop_front() else { break };
            self.work.reset(Category::Qdisc).instr(k.cfg.costs.qdisc_instr as u64 / 2).write(QDISC_BASE);
            self.core.exec(&self.work, &mut self.mem);
            self.xmit(k, slot, skb);
        }
        self.tx_ring_full = !k.qdisc.is_empty();
    }

    /// The driver puts one packet on the TX ring and rings the doorbell.
    fn xmit(&mut self, k: &mut Kernel, slot: Slot, skb: u32) {
        let pos = self.tx.tail;
        let i = self.tx.ring.slot(pos);
        self.tx.ring.slots[i] = slot;
        self.tx.tail += 1;
        k.tx_skbs.push_back(skb);
        self.work.reset(Category::Tx).instr(k.cfg.costs.xmit_instr as u64).read(k.skbs.mbuf_addr(skb)).write(self.tx.ring.desc_addr(pos));
        self.core.exec(&self.work, &mut self.mem);
        let t = self.pcie.mmio_write(self.core.now(), 4);
        self.schedule(t, HostEvent::TxDoorbell(self.tx.tail));
    }

    /// The application: one recvfrom, its processing, a sendto per reply
    /// datagram; then, if the socket is empty, the recvfrom that blocks.
    fn app_iteration(&mut self, k: &mut Kernel, pool: &mut FramePool) {
        if k.tcp {
            self.tcp_recv(k);
            return;
        }
        let c = k.cfg.costs;
        let Some(q) = k.sock_q.pop_front() else { return };
        k.sock_q_bytes -= k.cfg.skb_truesize_bytes as u64;
        k.c.datagrams_received += 1;
        let len = q.len as u64;
        // recvfrom: system call, dequeue, copy to user, free the skb.
        k.c.syscalls += 1;
        self.work.reset(Category::Syscall).instr(c.syscall_instr as u64);
        self.core.exec(&self.work, &mut self.mem);
        self.work.reset(Category::Proto).instr(c.sock_recv_instr as u64).read(SOCK_BASE).write(SOCK_BASE + 64);
        self.core.exec(&self.work, &mut self.mem);
        let data = self.pool.data_addr(q.buf) + HEADERS as u64;
        self.work.reset(Category::Copy).copy_lines(data, USER_RX, len, c.copy_instr_per_line as u64);
        self.core.exec(&self.work, &mut self.mem);
        k.ids.clear();
        k.ids2.clear();
        k.ids.push(q.skb);
        k.ids2.push(q.buf);
        self.free_skbs(k);
        match self.app {
            AppKind::Memcached => self.kernel_kvs(k, q.frame, len, pool),
            _ => {
                // udp-echo: send the payload back to where it came from.
                self.work.reset(Category::App).instr(c.app_instr as u64).read(USER_RX).write(USER_TX);
                self.core.exec(&self.work, &mut self.mem);
                swap_endpoints(pool.data_mut(q.frame));
                self.sendto(k, q.frame, len, pool);
            }
        }
        if k.sock_q.is_empty() {
            // The next recvfrom finds nothing and blocks.
            k.c.syscalls += 1;
            self.work.reset(Category::Syscall).instr(c.syscall_instr as u64).read(SOCK_BASE);
            self.core.exec(&self.work, &mut self.mem);
        }
    }

    /// iperf: one `recv` of up to `recv_bytes`: the queued segments' payloads
    /// copied to the user buffer, their skbs freed; then, if the socket is
    /// empty, the `recv` that blocks.
    fn tcp_recv(&mut self, k: &mut Kernel) {
        let c = k.cfg.costs;
        k.c.syscalls += 1;
        self.work.reset(Category::Syscall).instr(c.syscall_instr as u64);
        self.core.exec(&self.work, &mut self.mem);
        let want = k.cfg.recv_bytes as u64;
        let mut got = 0u64;
        k.ids.clear();
        k.ids2.clear();
        k.rcvd.clear();
        self.work.reset(Category::Copy);
        while got < want {
            let Some(q) = k.sock_q.front().copied() else { break };
            let len = q.len as u64;
            // A segment larger than what is left stays (partly read) for the next call; simplified: taken whole.
            k.sock_q.pop_front();
            k.sock_q_bytes -= k.cfg.skb_truesize_bytes as u64;
            let data = self.pool.data_addr(q.buf) + TCP_HEADERS as u64;
            self.work.copy_lines(data, USER_RX + got % want, len, c.copy_instr_per_line as u64);
            got += len;
            k.ids.push(q.skb);
            k.ids2.push(q.buf);
            k.rcvd.push(q);
        }
        self.core.exec(&self.work, &mut self.mem);
        let n = k.rcvd.len() as u64;
        self.work.reset(Category::Proto).instr(c.sock_recv_instr as u64 + n * c.tcp_recv_skb_instr as u64).read(SOCK_BASE).write(SOCK_BASE + 64);
        self.core.exec(&self.work, &mut self.mem);
        let t = self.core.now();
        self.consumed.extend(k.rcvd.iter().map(|q| (t, q.frame)));
        k.c.datagrams_received += n;
        k.c.tcp_bytes += got;
        self.counters.app_consumed += n;
        self.free_skbs(k);
        if k.sock_q.is_empty() {
            k.c.syscalls += 1;
            self.work.reset(Category::Syscall).instr(c.syscall_instr as u64).read(SOCK_BASE);
            self.core.exec(&self.work, &mut self.mem);
        }
    }

    /// MemcachedKernel: the store serves the request from the user buffer;
    /// each reply datagram is built in the send buffer and sent.
    fn kernel_kvs(&mut self, k: &mut Kernel, frame: FrameId, len: u64, pool: &mut FramePool) {
        let Some(mut kv) = self.kvs.take() else { return };
        let per_line = self.cfg.pmd.costs.touch_instr_per_line as u64;
        self.work.reset(Category::App);
        let served = kv.serve(pool.data(frame), USER_RX, len, per_line, &mut self.work);
        self.core.exec(&self.work, &mut self.mem);
        match served {
            Served::Reply(peer) => {
                for i in 0..kv.reply_count() {
                    let payload = kv.reply(i);
                    let bytes = reply_frame_bytes(payload.len());
                    let f = if i == 0 { frame } else { pool.alloc(bytes) };
                    let fits = pool.resize(f, bytes);
                    debug_assert!(fits, "frame buffers hold full reply datagrams");
                    write_reply(pool.data_mut(f), &peer, payload);
                    self.work.reset(Category::App).write_lines(USER_TX, payload.len() as u64, per_line);
                    self.core.exec(&self.work, &mut self.mem);
                    let n = payload.len() as u64;
                    self.sendto(k, f, n, pool);
                }
            }
            Served::NoReply | Served::NotRequest => pool.free(frame),
        }
        self.kvs = Some(kv);
    }

    /// sendto: system call, skb and buffer, copy from user, UDP/IP output,
    /// qdisc, driver. `frame` already holds the datagram's bytes.
    fn sendto(&mut self, k: &mut Kernel, frame: FrameId, len: u64, pool: &mut FramePool) {
        let c = k.cfg.costs;
        k.c.syscalls += 1;
        self.work.reset(Category::Syscall).instr(c.syscall_instr as u64);
        self.core.exec(&self.work, &mut self.mem);
        self.work.reset(Category::Proto).instr(c.udp_send_instr as u64).read(SOCK_BASE).read(ROUTE_BASE).read(ROUTE_BASE + 64);
        self.core.exec(&self.work, &mut self.mem);
        let Some((skb, buf)) = self.alloc_tx(k, frame, pool) else { return };
        let data = self.pool.data_addr(buf);
        self.work.reset(Category::Copy).copy_lines(USER_TX, data + HEADERS as u64, len, c.copy_instr_per_line as u64);
        self.core.exec(&self.work, &mut self.mem);
        // UDP and IP headers in front of the data.
        self.work.reset(Category::Proto).write(data);
        self.core.exec(&self.work, &mut self.mem);
        k.c.datagrams_sent += 1;
        self.queue_xmit(k, Slot { mbuf: buf, frame }, skb, pool);
    }

    /// TCP: one pure ACK for a GRO skb, from the softirq (no system call, no copy).
    fn send_ack(&mut self, k: &mut Kernel, seg: &[u8; TCP_HEADERS], ack: u32, pool: &mut FramePool) {
        let frame = pool.alloc(ACK_FRAME_BYTES);
        write_ack(pool.data_mut(frame), seg, ack);
        self.work.reset(Category::Proto).instr(k.cfg.costs.tcp_ack_instr as u64).read(SOCK_BASE).read(ROUTE_BASE);
        self.core.exec(&self.work, &mut self.mem);
        let Some((skb, buf)) = self.alloc_tx(k, frame, pool) else { return };
        self.work.reset(Category::Proto).write(self.pool.data_addr(buf));
        self.core.exec(&self.work, &mut self.mem);
        k.c.tcp_acks += 1;
        self.queue_xmit(k, Slot { mbuf: buf, frame }, skb, pool);
    }

    /// An skb and a data buffer for a packet to send; None (the frame
    /// dropped and counted) if either pool is empty.
    fn alloc_tx(&mut self, k: &mut Kernel, frame: FrameId, pool: &mut FramePool) -> Option<(u32, u32)> {
        let c = k.cfg.costs;
        k.ids.clear();
        k.ids2.clear();
        self.touched.clear();
        if !k.skbs.get_bulk(CORE, 1, &mut k.ids, &mut self.touched) {
            k.c.nombuf += 1;
            k.c.qdisc_drops += 1;
            pool.free(frame);
            return None;
        }
        self.work.reset(Category::Skb).instr(c.skb_alloc_instr as u64);
        for &a in &self.touched {
            self.work.write(a);
        }
        let skb = k.ids[0];
        for l in 0..SKB_LINES {
            self.work.write(k.skbs.mbuf_addr(skb) + l * 64);
        }
        self.core.exec(&self.work, &mut self.mem);
        self.touched.clear();
        if !self.pool.get_bulk(CORE, 1, &mut k.ids2, &mut self.touched) {
            k.c.nombuf += 1;
            k.c.qdisc_drops += 1;
            pool.free(frame);
            k.ids2.clear();
            self.free_skbs(k);
            return None;
        }
        let buf = k.ids2[0];
        self.exec_touched(Category::Mempool, c.buf_instr as u64);
        Some((skb, buf))
    }

    /// The qdisc (with its lock), then the driver, or the qdisc's backlog
    /// while the TX ring is full, or a drop when that is full too.
    fn queue_xmit(&mut self, k: &mut Kernel, slot: Slot, skb: u32, pool: &mut FramePool) {
        let c = k.cfg.costs;
        self.work.reset(Category::Qdisc).instr(c.qdisc_instr as u64).write(QDISC_BASE).write(QDISC_BASE + 64);
        self.core.exec(&self.work, &mut self.mem);
        if k.qdisc.is_empty() && self.tx.free() > 0 {
            self.xmit(k, slot, skb);
        } else if (k.qdisc.len() as u64) < k.cfg.txqueuelen as u64 {
            k.c.qdisc_requeues += 1;
            k.qdisc.push_back((slot, skb));
        } else {
            k.c.qdisc_drops += 1;
            pool.free(slot.frame);
            k.ids.clear();
            k.ids2.clear();
            k.ids.push(skb);
            k.ids2.push(slot.mbuf);
            self.free_skbs(k);
        }
        self.tx_ring_full = !k.qdisc.is_empty();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_kernel_configs_name_the_field() {
        let f = |cfg: KernelConfig| match cfg.validate().unwrap_err() {
            crate::error::Error::Config(c) => c.field,
            e => panic!("{e}"),
        };
        let d = KernelConfig::default();
        d.validate().unwrap();
        assert_eq!(f(KernelConfig { napi_budget: 0, ..d }), "kernel.napi_budget");
        assert_eq!(f(KernelConfig { netdev_budget: 32, ..d }), "kernel.netdev_budget");
        assert_eq!(f(KernelConfig { rcvbuf_bytes: 100, ..d }), "kernel.rcvbuf_bytes");
        assert_eq!(f(KernelConfig { skbs: 1, ..d }), "kernel.skbs");
    }

    #[test]
    fn interrupts_keep_their_interval() {
        let mut k = Kernel::new(&KernelConfig::default(), 9, false);
        assert_eq!(k.request_irq(5), Some(5));
        assert_eq!(k.request_irq(6), None, "one outstanding");
        k.irq_at = None;
        k.last_irq = Some(5);
        assert_eq!(k.request_irq(7), Some(5 + 10_000_000));
        k.irq_at = None;
        k.irq_enabled = false;
        assert_eq!(k.request_irq(1 << 40), None, "masked while NAPI runs");
    }
}
