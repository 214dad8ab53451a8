//! A queue's descriptor rings in host memory, at simulated addresses, as
//! both the NIC and the driver see them.
//!
//! Positions are absolute counters (slot = position mod size). Each slot
//! holds what its descriptor names — the buffer's DMA address — and what
//! software keeps beside it: the mbuf armed in it and, once the NIC has
//! filled it, the frame (by handle) whose bytes the buffer now holds. The
//! frame's bytes live in the frame pool, its timing at the buffer's address.
//!
//! RX (ixgbe semantics): the driver arms every slot at start and gives the
//! NIC `rxd − 1` of them (head == tail means empty); a packet is visible once
//! the NIC has written its descriptor back (`done`); after `rx_free_thresh`
//! refills the driver rings the tail doorbell. TX: the driver writes
//! descriptors at `tail`, rings the doorbell once per burst, and frees mbufs
//! `tx_rs_thresh` at a time once the NIC has written back the descriptor
//! that carried the RS bit.

use crate::engine::Modulus;
use crate::framebuf::FrameId;

/// Size of an RX or TX descriptor in host memory (82599 advanced descriptors;
/// params.md §2d).
pub const DESC_BYTES: u64 = 16;

/// One descriptor's buffer: the mbuf, the frame it holds, and the address
/// the descriptor gives the NIC (the mbuf's data address).
#[derive(Debug, Clone, Copy, Default)]
pub struct Slot {
    pub mbuf: u32,
    pub frame: FrameId,
    pub buf_addr: u64,
}

/// A descriptor ring in host memory: `size` descriptors of 16 B from `base`,
/// and what the driver keeps beside each slot.
pub struct Ring {
    pub base: u64,
    size: Modulus,
    pub slots: Vec<Slot>,
}

impl Ring {
    fn new(base: u64, slots: Vec<Slot>) -> Self {
        Ring { base, size: Modulus::new(slots.len() as u64), slots }
    }

    #[inline]
    pub fn slot(&self, pos: u64) -> usize {
        self.size.rem(pos) as usize
    }

    #[inline]
    pub fn desc_addr(&self, pos: u64) -> u64 {
        self.base + self.size.rem(pos) * DESC_BYTES
    }

    /// The size as a divisor.
    pub fn modulus(&self) -> Modulus {
        self.size
    }

    pub fn size(&self) -> u64 {
        self.size.get()
    }

    /// Bytes of host memory the descriptors take.
    pub fn bytes(&self) -> u64 {
        self.size.get() * DESC_BYTES
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
    /// A ring at `base` whose slots are armed with `bufs` (mbuf, data address).
    pub fn new(base: u64, bufs: impl Iterator<Item = (u32, u64)>) -> Self {
        let slots = bufs.map(|(mbuf, buf_addr)| Slot { mbuf, frame: 0, buf_addr }).collect();
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
        self.next + self.ring.size() - 1
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
    /// Per slot, where the payload is when it is not behind the headers
    /// (0: the frame is whole at the slot's address): the NIC reads the
    /// Ethernet/IPv4/TCP headers from the slot's buffer and the rest from
    /// here (a zero-copy send's user pages, one more gather entry).
    pub split: Vec<u64>,
}

impl TxRing {
    pub fn new(base: u64, size: u32) -> Self {
        TxRing { ring: Ring::new(base, vec![Slot::default(); size as usize]), tail: 0, done: 0, freed: 0, split: vec![0; size as usize] }
    }

    /// Descriptors the driver may still write (one stays empty, as in DPDK).
    #[inline]
    pub fn free(&self) -> u64 {
        self.ring.size() - 1 - (self.tail - self.freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_wrap_and_one_slot_stays_empty() {
        let mut rx = RxRing::new(0x1000, (0..8).map(|i| (i, 0x10_0000 + i as u64 * 2048)));
        assert_eq!(rx.tail(), 7, "the NIC owns rxd - 1 descriptors");
        assert_eq!(rx.ring.desc_addr(9), 0x1000 + DESC_BYTES);
        assert_eq!(rx.ring.slots[rx.ring.slot(10)].buf_addr, 0x10_0000 + 2 * 2048);
        rx.done = 5;
        rx.next = 3;
        assert_eq!((rx.ready(), rx.tail()), (2, 10));
        let mut tx = TxRing::new(0x2000, 8);
        assert_eq!(tx.free(), 7);
        tx.tail = 7;
        assert_eq!(tx.free(), 0);
        tx.freed = 4;
        assert_eq!((tx.free(), tx.ring.bytes()), (4, 128));
    }
}
