//! The NICs of a host (SPEC 2.4): devices, each behind its own I/O path
//! (a PCIe link, or gem5's I/O crossbar: `crate::io`)
//! and with a packet-rate limit of its own, and their ports, each with an RX
//! FIFO, RSS, DMA engines, a TX FIFO, drop attribution and Q queue pairs.
//!
//! The NIC is event driven and knows nothing of the software above it:
//! every step takes the current time, books PCIe transfers and memory
//! accesses, and reports what follows to a [`NicOut`] — events for later,
//! frames for the wire, and write-backs that software may now see (the
//! owner routes those to the core that polls the queue or takes its
//! interrupt). Software reaches into the queues' rings directly, as a
//! driver does, and rings doorbells by scheduling [`NicEvent`]s.
//!
//! Files: `port` (the engines), `queue` (a queue pair's rings and NIC-side
//! state), `ring` (descriptor rings at simulated addresses), `desc_cache`,
//! `rx_fifo`, `drop_fsm`, `rss` (Toeplitz and the redirection table),
//! `memory` (a card's on-board DRAM, for the `nicmem` transmit scheme),
//! `config` (parameters and presets).
//!
//! Read first: Intel 82599 datasheet §7.1 (receive) and §7.2 (transmit) for
//! descriptor rings, thresholds and write-back; params.md §2d for the 16 B
//! descriptors and batching, §9 for RSS; SPEC 2.10 for drop attribution.

pub mod config;
pub mod desc_cache;
pub mod drop_fsm;
pub mod memory;
pub mod port;
pub mod queue;
pub mod ring;
pub mod rss;
pub mod rx_fifo;

pub use config::{NicConfig, QueueModel};
pub use desc_cache::RxDescCache;
pub use drop_fsm::{DropCause, DropFsm};
pub use port::{Port, PortAddrs, PortCounters, PortParams};
pub use queue::{CompletionQueue, RxQueue, TxQueue};
pub use ring::{RxRing, Slot, TxRing, DESC_BYTES};
pub use rx_fifo::RxFifo;

use crate::engine::stats::HasStats;
use crate::engine::time::Ps;
use crate::framebuf::{FrameId, FramePool};
use crate::mem::MemSystem;
use crate::io::IoPath;

/// The NIC's own events. Ports are numbered across the host (at most
/// 16 × 8, `NicConfig::validate`); queues within their port. Ring positions
/// travel as their low 32 bits, as a 32-bit tail register holds them
/// ([`extend`] restores the full count): the event stays 8 bytes, which
/// keeps the event queue's entries small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicEvent {
    /// The port's RX DMA engine may take the next frame from the FIFO.
    RxDma { port: u8 },
    /// A prefetch of `n` RX descriptors arrived.
    RxDescFetched { port: u8, queue: u16, n: u32 },
    /// The queue's RX write-back timer fires.
    RxWbTimer { port: u8, queue: u16 },
    /// An RX tail doorbell reaches the NIC.
    RxDoorbell { port: u8, queue: u16, tail: u32 },
    /// A TX tail doorbell reaches the NIC.
    TxDoorbell { port: u8, queue: u16, tail: u32 },
    /// TX descriptors up to this position arrived at the NIC.
    TxDescFetched { port: u8, queue: u16, upto: u32 },
    /// A frame left the port's TX FIFO for the wire: there may be room to read more.
    TxFifoSpace { port: u8 },
    /// A payload read of the port's TX engine is done: with
    /// `nic.tx_reads_in_flight`, the engine may start another.
    TxReadDone { port: u8 },
    /// The port's oldest payload read issued with `sim.dma_at_memory_time`
    /// reaches the memory side.
    TxReadAtMemory { port: u8 },
    /// The port's oldest write of received data or RX write-back sent with
    /// `sim.dma_at_memory_time` reaches the memory side.
    RxWriteAtMemory { port: u8 },
    /// The DRAM controller has picked queued reads: the port's payload
    /// reads waiting for theirs may be answered.
    TxReadServed { port: u8 },
}

/// The full ring position whose low 32 bits are `low`, nearest to `near`
/// (positions a doorbell or fetch reports are within 2^31 of what the NIC
/// already knows: rings hold far fewer descriptors).
#[inline]
pub fn extend(near: u64, low: u32) -> u64 {
    near.wrapping_add_signed(low.wrapping_sub(near as u32) as i32 as i64)
}

/// Where the NIC's consequences go (the host implements it).
pub trait NicOut {
    /// An event of the NIC at `t`.
    fn schedule(&mut self, t: Ps, ev: NicEvent);
    /// A frame leaves `port` for the wire at `t` (its first bit may wait for the wire).
    fn to_wire(&mut self, t: Ps, port: usize, frame: FrameId);
    /// RX descriptors of (`port`, `queue`) written back, visible to software at `t`.
    fn rx_writeback(&mut self, t: Ps, port: usize, queue: usize);
    /// A TX completion of (`port`, `queue`) written back, visible at `t`.
    fn tx_writeback(&mut self, t: Ps, port: usize, queue: usize);
}

/// What a port's engines work with: its device (I/O path, packet rate),
/// the memory system, and where consequences go.
pub struct Env<'a, O> {
    pub dev: &'a mut NicDev,
    pub mem: &'a mut MemSystem,
    pub out: &'a mut O,
}

/// One NIC device (chip): its I/O path and its packet-rate limit, shared by its ports.
pub struct NicDev {
    pub io: IoPath,
    /// The card's on-board memory, if it has one (`nic.memory`).
    pub memory: Option<memory::NicMemory>,
    /// Least time between two frames the chip handles in one direction (0: no limit).
    pub frame_interval_ps: Ps,
    /// When the chip may start the next received frame, and the next transmitted one.
    rx_next: Ps,
    tx_next: Ps,
}

impl NicDev {
    /// A device on `io` processing at most `max_pps` frames per second in
    /// each direction (0: no limit).
    pub fn new(io: IoPath, max_pps: u64) -> Self {
        let frame_interval_ps = if max_pps == 0 { 0 } else { crate::engine::time::PS_PER_S.div_ceil(max_pps) };
        NicDev { io, memory: None, frame_interval_ps, rx_next: 0, tx_next: 0 }
    }
}

/// Every NIC of a host.
pub struct Nic {
    pub devs: Vec<NicDev>,
    pub ports: Vec<Port>,
}

impl Nic {
    /// A frame arrived whole from the wire at `port` at `now`.
    #[inline]
    pub fn frame_arrival<O: NicOut>(&mut self, port: usize, id: FrameId, now: Ps, frames: &mut FramePool, mem: &mut MemSystem, out: &mut O) {
        let p = &mut self.ports[port];
        p.frame_arrival(id, now, frames, &mut Env { dev: &mut self.devs[p.dev], mem, out });
    }

    /// Handles one of the NIC's events.
    pub fn handle<O: NicOut>(&mut self, now: Ps, ev: NicEvent, frames: &FramePool, mem: &mut MemSystem, out: &mut O) {
        let port = match ev {
            NicEvent::RxDma { port }
            | NicEvent::RxDescFetched { port, .. }
            | NicEvent::RxWbTimer { port, .. }
            | NicEvent::RxDoorbell { port, .. }
            | NicEvent::TxDoorbell { port, .. }
            | NicEvent::TxDescFetched { port, .. }
            | NicEvent::TxFifoSpace { port }
            | NicEvent::TxReadDone { port }
            | NicEvent::TxReadAtMemory { port }
            | NicEvent::RxWriteAtMemory { port }
            | NicEvent::TxReadServed { port } => port as usize,
        };
        let p = &mut self.ports[port];
        let e = &mut Env { dev: &mut self.devs[p.dev], mem, out };
        match ev {
            NicEvent::RxDma { .. } => p.rx_dma(now, e),
            NicEvent::RxDescFetched { queue, n, .. } => p.rx_descs_changed(queue as usize, Some(n as u64), None, now, e),
            NicEvent::RxWbTimer { queue, .. } => p.rx_wb_timer(queue as usize, now, e),
            NicEvent::RxDoorbell { queue, tail, .. } => {
                let tail = extend(p.rxq[queue as usize].desc.sw_tail(), tail);
                p.rx_descs_changed(queue as usize, None, Some(tail), now, e)
            }
            NicEvent::TxDoorbell { queue, tail, .. } => {
                p.tx_doorbell(queue as usize, extend(p.txq[queue as usize].nic_tail, tail));
                p.fetch_tx_descs(queue as usize, now, e);
            }
            NicEvent::TxDescFetched { queue, upto, .. } => {
                p.tx_descs_arrived(queue as usize, extend(p.txq[queue as usize].arrived, upto));
                p.tx_read_payloads(now, frames, e);
                p.fetch_tx_descs(queue as usize, now, e);
            }
            NicEvent::TxFifoSpace { .. } => p.tx_resume(false, now, frames, e),
            NicEvent::TxReadDone { .. } => p.tx_resume(true, now, frames, e),
            NicEvent::TxReadAtMemory { .. } => p.tx_read_at_memory(now, frames, e),
            NicEvent::RxWriteAtMemory { .. } => p.rx_write_at_memory(now, e),
            NicEvent::TxReadServed { .. } => p.tx_read_served(now, frames, e),
        }
    }

    /// The I/O path behind `port` (the driver's doorbells go over it).
    #[inline]
    pub fn io_of(&mut self, port: usize) -> &mut IoPath {
        let d = self.ports[port].dev;
        &mut self.devs[d].io
    }

    /// The driver has posted RX buffers up to `tail` on (`port`, `queue`)
    /// at `now`: when the NIC knows. ixgbe: a 4 B MMIO write of the tail
    /// register. connectx: the driver has stored the doorbell record; the
    /// NIC reads it over PCIe (a 4 B read, the line taken from the core's
    /// cache) — when it reads it is not published; reading it at once is an
    /// estimate.
    pub fn rx_doorbell(&mut self, port: usize, queue: usize, now: Ps, mem: &mut MemSystem) -> Ps {
        let p = &self.ports[port];
        let (cq, latency) = (p.rxq[queue].cq, p.params.pcie_latency_ps);
        let io = &mut self.devs[p.dev].io;
        match cq {
            None => io.mmio_write(now, 4),
            Some(cq) => {
                let at = now + latency;
                let host = mem.device_read(cq.db_record, 4, at).saturating_sub(at);
                io.dma_read(now, 4, host, crate::pcie::Kind::Descriptor)
            }
        }
    }

    /// The first RX prefetch of every queue (the driver has armed the rings).
    pub fn start<O: NicOut>(&mut self, now: Ps, mem: &mut MemSystem, out: &mut O) {
        for p in self.ports.iter_mut() {
            let e = &mut Env { dev: &mut self.devs[p.dev], mem: &mut *mem, out: &mut *out };
            for q in 0..p.rxq.len() {
                p.prime(q, now, e);
            }
        }
    }

    pub fn reset_counters(&mut self) {
        for p in &mut self.ports {
            p.reset_counters();
        }
        for d in &mut self.devs {
            d.io.reset_stats();
            if let Some(m) = &mut d.memory {
                m.reset_counters();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_comes_back_whole_from_its_low_bits() {
        for near in [0u64, 5, 4_294_967_290, 4_294_967_296 + 7, 1 << 40] {
            for d in [-2048i64, -1, 0, 1, 512, 4096] {
                let Some(pos) = near.checked_add_signed(d) else { continue };
                assert_eq!(extend(near, pos as u32), pos, "near {near} delta {d}");
            }
        }
    }

    #[test]
    fn nic_events_stay_eight_bytes() {
        assert_eq!(std::mem::size_of::<NicEvent>(), 8);
    }
}
