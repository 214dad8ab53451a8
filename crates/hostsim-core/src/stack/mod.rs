//! Software stacks (SPEC 2.8): what runs on a core between the NIC's queues
//! and an application. One [`Stack`] instance per core: the DPDK-style
//! poll-mode driver (`pmd`) polls the queue pairs bound to its core; the
//! Linux kernel model (`kernel`) takes their interrupts. Both hand packets
//! to an [`App`] (`app.rs`), which sees packets and a transmit handle,
//! never the NIC.
//!
//! A stack works through a [`StackCx`]: its core, the NICs (their queues'
//! rings and the PCIe links its doorbells cross), the memory system, the
//! mbuf mempool and the frame pool; what it does later goes into an
//! [`Out`] — events (doorbells, its own next step), frames for the wire,
//! frames whose life ended inside the host, and cores to wake.
//!
//! Files: `app` (the application interface), `mempool` (DPDK's mempool at
//! simulated addresses; the kernel's slabs use it too), `ring` (`rte_ring`
//! between cores, pipeline mode), `pmd/`, `kernel/`.

pub mod app;
pub mod kernel;
pub mod mempool;
pub mod pmd;
pub mod ring;

pub use app::{App, AppCx, Forwarding, Socket, TxBuffering, Verdict, WriterSpec};
pub use mempool::{Mempool, MempoolConfig};

use serde_json::Value;

use crate::cpu::{Category, Core, Work};
use crate::engine::stats::StatSink;
use crate::engine::time::Ps;
use crate::framebuf::{FrameId, FramePool};
use crate::mem::MemSystem;
use crate::nic::{Nic, NicEvent};

/// The software stack a host application runs on (SPEC 2.8).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum StackKind {
    /// DPDK-style poll-mode driver, run to completion.
    #[default]
    Pmd,
    /// The Linux kernel stack model: interrupts, NAPI, skbs, sockets, system calls.
    Kernel,
}

/// The host's events: the NIC's, a core's next step, and the DRAM controller's next pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Nic(NicEvent),
    /// Core `n` runs its stack's next step.
    Core(u16),
    /// The DRAM controller picks the queued reads due (`mem/read_queue.rs`).
    DramPick,
}

/// What the host's parts produce while handling one event, in order.
#[derive(Default)]
pub struct Out {
    pub events: Vec<(Ps, Event)>,
    /// Frames leaving a port for the wire: (time, port, frame).
    pub wire: Vec<(Ps, u16, FrameId)>,
    /// Frames whose life ended inside the host (an application consumed them).
    pub consumed: Vec<(Ps, FrameId)>,
    /// Cores to wake: something they poll becomes visible at that time (a ring entry).
    pub wakes: Vec<(Ps, u16)>,
}

impl Out {
    #[inline]
    pub fn schedule(&mut self, t: Ps, ev: Event) {
        self.events.push((t, ev));
    }
}

/// A receive queue and the transmit queue its packets go out on: what one
/// core polls (testpmd's forwarding stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub rx_port: usize,
    pub rx_queue: usize,
    pub tx_port: usize,
    pub tx_queue: usize,
}

/// Everything a stack works with for one step.
pub struct StackCx<'a> {
    pub core: &'a mut Core,
    pub nic: &'a mut Nic,
    /// The rings between cores (pipeline mode; empty otherwise).
    pub rings: &'a mut [ring::SwRing],
    /// The ConnectX-style queues' software state shared by their cores (`pmd::shared`).
    pub shared: &'a mut [pmd::shared::SharedRx],
    pub mem: &'a mut MemSystem,
    /// The chipset's DMA copy engine.
    pub dma: &'a mut crate::dma::CopyEngine,
    pub mbufs: &'a mut Mempool,
    pub frames: &'a mut FramePool,
    pub out: &'a mut Out,
    /// The earliest time anything else may touch memory (`sim.core_horizon`;
    /// `Ps::MAX` without it): a poll-mode core's application unit stops
    /// before an access past it, and resumes when the event loop gets there.
    pub horizon: Ps,
}

impl StackCx<'_> {
    /// Tells the NIC that the RX buffers of (`port`, `queue`) are posted up
    /// to `tail`: ixgbe writes the tail register over PCIe; connectx stores
    /// the doorbell record (a store to its line, charged to `cat`), which
    /// the NIC then reads.
    pub fn rx_doorbell(&mut self, work: &mut Work, cat: Category, port: usize, queue: usize, tail: u64) {
        if let Some(cq) = self.nic.ports[port].rxq[queue].cq {
            // A write barrier and the store (2 instructions, estimate).
            work.reset(cat).instr(2).write(cq.db_record);
            self.core.exec(work, self.mem);
        }
        // ixgbe's tail register is an uncached store; a connectx doorbell record is memory.
        let now = if self.nic.ports[port].rxq[queue].cq.is_none() { self.core.mmio_write(cat) } else { self.core.now() };
        let t = self.nic.rx_doorbell(port, queue, now, self.mem);
        self.out.schedule(t, Event::Nic(NicEvent::RxDoorbell { port: port as u8, queue: queue as u16, tail: tail as u32 }));
    }

    /// Charges `instr` instructions of `cat` that write `touched` (the lines a
    /// mempool or ring operation touched) as one unit of work.
    pub fn exec_touched(&mut self, work: &mut Work, cat: Category, instr: u64, touched: &[u64]) {
        work.reset(cat).instr(instr);
        for &a in touched {
            work.write(a);
        }
        self.core.exec(work, self.mem);
    }
}

/// Drops a stack makes itself (beyond the NIC's), for the result's `drops`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StackDrops {
    /// Socket receive buffer full (the kernel's RcvbufErrors).
    pub socket: u64,
    /// To a port nobody listens on, or not UDP/TCP over IPv4.
    pub no_port: u64,
    /// The qdisc was full, or no buffer to send with.
    pub qdisc: u64,
}

/// The stack of one core: a poll-mode driver or a kernel. An enum rather
/// than a boxed trait object so that the per-packet calls (write-backs)
/// dispatch statically; a new stack adds a variant here.
pub enum CoreStack {
    Pmd(pmd::Pmd),
    Kernel(Box<kernel::Kernel>),
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            CoreStack::Pmd($s) => $e,
            CoreStack::Kernel($s) => $e,
        }
    };
}

impl Stack for CoreStack {
    fn name(&self) -> &'static str {
        each!(self, s => s.name())
    }
    #[inline]
    fn run(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        each!(self, s => s.run(now, cx, app))
    }
    #[inline]
    fn rx_ready(&mut self, t: Ps, q: Option<(usize, usize)>, core: &mut Core, out: &mut Out) {
        each!(self, s => s.rx_ready(t, q, core, out))
    }
    #[inline]
    fn tx_done(&mut self, t: Ps, q: (usize, usize), core: &mut Core, out: &mut Out) {
        each!(self, s => s.tx_done(t, q, core, out))
    }
    fn burst_histogram(&self) -> &[u64] {
        each!(self, s => s.burst_histogram())
    }
    fn result_json(&self) -> Value {
        each!(self, s => s.result_json())
    }
    fn drops(&self) -> StackDrops {
        each!(self, s => s.drops())
    }
    fn report_stats(&self, sink: &mut StatSink<'_>) {
        each!(self, s => s.report_stats(sink))
    }
    fn reset_stats(&mut self) {
        each!(self, s => s.reset_stats())
    }
}

/// A software stack on one core.
pub trait Stack {
    /// `"pmd"` or `"kernel"`.
    fn name(&self) -> &'static str;
    /// The core's next step at `now`: a poll-loop iteration, an interrupt,
    /// or one unit of the thread the scheduler picks.
    fn run(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App);
    /// Something this core receives becomes visible at `t`: RX descriptors
    /// of a queue it serves (`q`: port and queue), or (pipeline, `q` None)
    /// entries of the ring it drains.
    fn rx_ready(&mut self, t: Ps, q: Option<(usize, usize)>, core: &mut Core, out: &mut Out);
    /// A TX completion of queue `q` (port, queue), which this core
    /// transmits on, becomes visible at `t`.
    fn tx_done(&mut self, t: Ps, q: (usize, usize), core: &mut Core, out: &mut Out);
    /// Packets per rx_burst (PMD) or per NAPI poll (kernel), by count.
    fn burst_histogram(&self) -> &[u64];
    /// The stack's own counters, for the result.
    fn result_json(&self) -> Value;
    fn drops(&self) -> StackDrops;
    fn report_stats(&self, s: &mut StatSink<'_>);
    fn reset_stats(&mut self);
}

#[cfg(test)]
mod tests {
    /// A host event stays as small as the NIC's (8 bytes): the event queue's
    /// entries are copied on every push and pop.
    #[test]
    fn host_events_stay_eight_bytes() {
        assert_eq!(std::mem::size_of::<super::Event>(), 8);
    }
}
