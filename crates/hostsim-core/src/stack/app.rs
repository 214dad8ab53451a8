//! The interface between a stack and an application (SPEC 2.9).
//!
//! An application acts on real packet bytes and charges what it does —
//! instructions and the memory lines it touches at their simulated
//! addresses — to the core that runs it, through an [`AppCx`]. It never
//! sees the NIC: on the poll-mode driver it gets the packets of one
//! rx_burst and says which to transmit (on the stream's TX queue) and
//! which it consumed; on the kernel stack it gets one datagram at a time
//! in its user buffer and builds its replies, which the stack sends.
//!
//! The applications themselves live in `crate::apps`, one file each.

use std::net::Ipv4Addr;

use serde_json::Value;

use super::mempool::Mempool;
use super::pmd::config::PmdCosts;
use crate::cpu::{Core, Work};
use crate::engine::time::Ps;
use crate::framebuf::{FrameId, FramePool};
use crate::mem::MemSystem;
use crate::nic::Slot;
use crate::wire::ethernet::Mac;

/// The transport protocol of a kernel socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// The socket a kernel-stack application binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Socket {
    pub transport: Transport,
    pub port: u16,
}

/// What a TCP-sending application (`tcp-send`) writes, per core: its
/// connections (TCP source ports `src_port + core × connections + i` to
/// `dst_port`), the size of each `write()`'s buffer and how many buffers
/// each connection has, and how many writes in all (0: until
/// `sim.duration` ends). It is also that application's config,
/// `host.app.tcp_send` (`apps::tcp_send` gives its defaults, with their
/// sources, and its checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WriterSpec {
    pub connections: u32,
    pub buffer_bytes: u64,
    /// Buffers per connection, used in turn (a zero-copy write's buffer
    /// stays held until its completion arrives).
    pub buffers: u32,
    pub writes: u64,
    pub dst_port: u16,
    pub src_port: u16,
}

/// What becomes of a burst's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every packet goes out, in order, on the stream's TX queue.
    Forward,
    /// Every packet ends here (its frame reached the application, its mbuf goes back).
    Consume,
    /// As the application listed them: `cx.tx` to send, `cx.free` to return.
    Listed,
}

/// What a forwarding application on the kernel stack decides for a frame
/// ([`App::forward`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarding {
    /// Not sent (the stack frees it; the application counts why).
    Drop,
    /// Sent on the port the topology gives.
    Transmit,
    /// Sent, and a clone of its skb also goes up the host's own stack,
    /// which drops it as not addressed to the host (a bridge whose device
    /// is promiscuous: `br_forward` with a local copy, `deliver_clone`).
    TransmitAndClone,
}

/// What an application works with: the core it runs on, the memory
/// system, the frame pool (real bytes) and the mbuf pool (simulated
/// addresses), a work unit to fill, and where its results go.
pub struct AppCx<'a> {
    pub core: &'a mut Core,
    pub mem: &'a mut MemSystem,
    pub frames: &'a mut FramePool,
    pub mbufs: &'a mut Mempool,
    /// The work unit the application fills and runs with [`AppCx::exec`].
    pub work: &'a mut Work,
    /// Per-packet cost constants of the benchmark applications (`host.pmd.costs`).
    pub costs: &'a PmdCosts,
    pub core_id: usize,
    /// The port the packets came in on, and its MAC.
    pub rx_port: usize,
    pub rx_port_mac: Mac,
    /// The MAC of the port packets leave from, and of the station behind it.
    pub port_mac: Mac,
    pub peer_mac: Mac,
    /// The IPv4 addresses of the port and of the station behind it.
    pub port_ip: Ipv4Addr,
    pub peer_ip: Ipv4Addr,
    /// Poll-mode driver: packets to transmit, in order, on the stream's TX queue.
    pub tx: &'a mut Vec<Slot>,
    /// Poll-mode driver: mbufs to return to the pool.
    pub free: &'a mut Vec<u32>,
    /// mbuf allocations that failed (`rx_nombuf`).
    pub nombuf: &'a mut u64,
    /// Kernel stack: the application's receive and send buffers, and its
    /// instructions per datagram (`host.kernel.costs.app_instr`).
    pub user_rx: u64,
    pub user_tx: u64,
    pub kernel_app_instr: u64,
    pub(crate) scratch: &'a mut Vec<u32>,
    pub(crate) touched: &'a mut Vec<u64>,
    /// Poll-mode driver with `sim.core_horizon`: [`AppCx::exec`] may leave
    /// its unit pending at this time, for the driver to resume (`Ps::MAX`:
    /// it runs to its end). An application reaches the core after an
    /// `exec` only through `AppCx`'s methods, which finish such a unit first.
    pub horizon: Ps,
}

impl AppCx<'_> {
    /// Runs the work unit on the core.
    #[inline]
    pub fn exec(&mut self) {
        if self.horizon == Ps::MAX {
            self.core.exec(self.work, self.mem);
        } else {
            self.settle();
            self.core.exec_until(self.work, self.mem, self.horizon);
        }
    }

    /// Finishes a unit [`exec`](Self::exec) left pending.
    #[inline]
    fn settle(&mut self) {
        if self.core.pending_at().is_some() {
            self.core.resume(self.mem, Ps::MAX);
        }
    }

    /// The core's clock, its last unit finished.
    pub fn now(&mut self) -> Ps {
        self.settle();
        self.core.now()
    }

    /// [`Core::spin_ps`], its last unit finished.
    pub fn spin_ps(&mut self, d: Ps) -> Ps {
        self.settle();
        self.core.spin_ps(d)
    }

    /// [`Core::idle_until`], its last unit finished.
    pub fn idle_until(&mut self, t: Ps) -> Ps {
        self.settle();
        self.core.idle_until(t)
    }

    /// One more mbuf (a reply longer than one datagram): its mempool work
    /// joins the current work unit. None when the pool is empty.
    pub fn alloc_mbuf(&mut self) -> Option<(u32, u64)> {
        self.scratch.clear();
        self.touched.clear();
        if !self.mbufs.get_bulk(self.core_id, 1, self.scratch, self.touched) {
            *self.nombuf += 1;
            return None;
        }
        self.work.instr(self.costs.mempool_instr as u64);
        for &a in self.touched.iter() {
            self.work.write(a);
        }
        let m = self.scratch[0];
        Some((m, self.mbufs.data_addr(m)))
    }
}

/// How a poll-mode application hands its packets to tx_burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxBuffering {
    /// Each burst at once (testpmd, a vSwitch).
    None,
    /// Every packet through the port's buffer (DPDK's l2fwd).
    All,
    /// Through the buffer, except that a burst of at least `direct_from`
    /// packets for a port whose buffer is empty goes at once (DPDK's l3fwd,
    /// `send_packetsx4` with `MAX_TX_BURST`).
    SmallBursts { direct_from: u32 },
}

/// An application. One instance serves every core of the host (shared
/// state, such as a key-value store, is shared for real); `cx.core_id`
/// says which core is calling.
pub trait App {
    /// The name it is registered under.
    fn name(&self) -> &'static str;

    /// Poll-mode driver: the packets of one rx_burst, in order. The
    /// application charges its work, then says what becomes of them: all
    /// sent, all consumed, or as it listed (`cx.tx` to send, built replies
    /// included; `cx.free` for mbufs to return, their frames freed by it).
    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict;

    /// Poll-mode driver: whether the application gathers what it sends in
    /// a TX buffer per port (`rte_eth_tx_buffer`) of `host.pmd.tx_buffer`
    /// packets, sent when full and flushed every `host.pmd.tx_drain_ps`.
    fn tx_buffering(&self) -> TxBuffering {
        TxBuffering::None
    }

    /// Builds frames into fresh mbufs instead of receiving (testpmd
    /// txonly): true if this application generates its traffic.
    fn generates(&self) -> bool {
        false
    }

    /// Generation: writes a frame into each mbuf of `mbufs` (mbuf, data
    /// address) and returns them as packets to send, in `out`.
    fn generate(&mut self, _cx: &mut AppCx, _mbufs: &[(u32, u64)], _out: &mut Vec<Slot>) {}

    /// Kernel stack: the socket the application binds; None if it forwards
    /// in the softirq instead ([`App::forward`]; the registry says which
    /// stacks an application runs on).
    fn socket(&self) -> Option<Socket> {
        None
    }

    /// Kernel stack: a datagram of `len` payload bytes was copied to
    /// `cx.user_rx` (its frame is `frame`). Returns how many reply
    /// datagrams it sends (0: the stack frees the frame).
    fn recv(&mut self, _cx: &mut AppCx, _frame: FrameId, _len: u64) -> usize {
        0
    }

    /// Kernel stack: builds reply `i` to the request in `request` (of
    /// `len` payload bytes) in `cx.user_tx` and in a frame — the request's
    /// own for the first — and returns the frame with its payload length;
    /// the stack sends it with `sendto`.
    fn reply(&mut self, _cx: &mut AppCx, _i: usize, request: FrameId, len: u64) -> (FrameId, u64) {
        (request, len)
    }

    /// Kernel stack: an application whose thread writes to TCP connections
    /// (the stack does the writing, `stack/kernel/tcp_tx.rs`).
    fn writer(&self) -> Option<WriterSpec> {
        None
    }

    /// Kernel stack, an application that binds no socket (IP forwarding, a
    /// bridge, a switch's kernel datapath): the frame `frame`, received into the buffer at
    /// `buf_addr`, passed the stack's receive processing; the application
    /// makes its forwarding decision (charging the work to `cx.work` and
    /// running it), rewrites the frame's bytes as it goes out, and says
    /// whether it is transmitted (on the port the topology gives).
    fn forward(&mut self, _cx: &mut AppCx, _frame: FrameId, _buf_addr: u64) -> Forwarding {
        Forwarding::Drop
    }

    /// Kernel stack, a forwarding application: does it take frames from the
    /// device's `rx_handler`, before the IP layer (a bridge, Open vSwitch's
    /// kernel datapath)? Then the stack's IP receive is not run for them.
    fn rx_handler(&self) -> bool {
        false
    }

    /// Does the application answer the sender, on the port the request came
    /// in on (udp-echo, memcached, a TCP receiver's ACKs)? Otherwise it
    /// forwards, and `host.app.port_topology` picks the port.
    fn replies(&self) -> bool {
        false
    }

    /// The application's own counters, for the result (an object, or null).
    fn result_json(&self) -> Value {
        Value::Null
    }

    fn reset_stats(&mut self) {}

    /// Entries the application installed through a slow path (flows
    /// installed by an upcall, addresses learned): a start-up transient
    /// grows it, a steady state leaves it be. The fast fidelity warms up
    /// until it does (`system/sample.rs`). Entries ordinary requests make
    /// (memcached's SETs) cost what any request does and do not count.
    fn table_entries(&self) -> u64 {
        0
    }
}
