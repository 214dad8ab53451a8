//! The descriptor rings as the driver sees them, at simulated addresses.
//!
//! Positions are absolute counters (slot = position mod size). Each slot
//! remembers the mbuf armed in it and, once the NIC has filled it, the frame
//! (by handle) whose bytes the mbuf now holds: the frame's bytes live in the
//! frame pool, its timing at the mbuf's address.
//!
//! RX (ixgbe semantics): the driver arms every slot at start and gives the
//! NIC `rxd − 1` of them (head == tail means empty); a packet is visible once
//! the NIC has written its descriptor back (`done`); after `rx_free_thresh`
//! refills the driver rings the tail doorbell. TX: the driver writes
//! descriptors at `tail`, rings the doorbell once per burst, and frees mbufs
//! `tx_rs_thresh` at a time once the NIC has written back the descriptor
//! that carried the RS bit.

use crate::framebuf::FrameId;
use crate::nic::config::DESC_BYTES;

#[derive(Debug, Clone, Copy, Default)]
pub struct Slot {
    pub mbuf: u32,
    pub frame: FrameId,
}

/// A descriptor ring in host memory: `size` descriptors of 16 B from `base`,
/// and what the driver keeps beside each slot.
pub struct Ring {
    pub base: u64,
    size: u64,
    pub slots: Vec<Slot>,
}

impl Ring {
    fn new(base: u64, slots: Vec<Slot>) -> Self {
        Ring { base, size: slots.len() as u64, slots }
    }

    #[inline]
    pub fn slot(&self, pos: u64) -> usize {
        (pos % self.size) as usize
    }

    #[inline]
    pub fn desc_addr(&self, pos: u64) -> u64 {
        self.base + (pos % self.size) * DESC_BYTES
    }

    pub fn size(&self) -> u64 {
        self.size
    }
}

pub struct RxRing {
    pub ring: Ring,
    /// Next position the driver will read.
    pub next: u64,
    /// Descriptors written back by the NIC up to here (exclusive).
    pub done: u64,
    /// Refills since the last tail doorbell.
    pub hold: u32,
}

impl RxRing {
    pub fn new(base: u64, mbufs: &[u32]) -> Self {
        let slots = mbufs.iter().map(|&m| Slot { mbuf: m, frame: 0 }).collect();
        RxRing { ring: Ring::new(base, slots), next: 0, done: 0, hold: 0 }
    }

    /// Packets written back and not yet read.
    #[inline]
    pub fn ready(&self) -> u64 {
        self.done - self.next
    }

    /// The tail value to give the NIC after the driver has consumed up to `next`.
    #[inline]
    pub fn tail(&self) -> u64 {
        self.next + self.ring.size - 1
    }
}

pub struct TxRing {
    pub ring: Ring,
    /// Next position the driver writes.
    pub tail: u64,
    /// Descriptors the NIC has written back as done, up to here (exclusive).
    pub done: u64,
    /// Mbufs freed by the driver up to here (exclusive).
    pub freed: u64,
}

impl TxRing {
    pub fn new(base: u64, size: u32) -> Self {
        TxRing { ring: Ring::new(base, vec![Slot::default(); size as usize]), tail: 0, done: 0, freed: 0 }
    }

    /// Descriptors the driver may still write (one stays empty, as in DPDK).
    #[inline]
    pub fn free(&self) -> u64 {
        self.ring.size - 1 - (self.tail - self.freed)
    }
}
