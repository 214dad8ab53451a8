//! The receive FIFO: on-chip SRAM between the MAC and the DMA engine,
//! counted in bytes. A frame that does not fit whole is dropped (the 82599
//! counts these in `rx_missed_errors`, DPDK xstat of the same name). Each
//! frame carries the receive queue RSS chose for it at the MAC.

use std::collections::VecDeque;

use crate::framebuf::FrameId;

pub struct RxFifo {
    capacity_bytes: u64,
    used_bytes: u64,
    frames: VecDeque<(FrameId, u32, u16)>,
    max_used_bytes: u64,
}

impl RxFifo {
    pub fn new(capacity_bytes: u64) -> Self {
        RxFifo { capacity_bytes, used_bytes: 0, frames: VecDeque::new(), max_used_bytes: 0 }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Would a frame of `bytes` fit now?
    #[inline]
    pub fn fits(&self, bytes: u32) -> bool {
        self.used_bytes + bytes as u64 <= self.capacity_bytes
    }

    /// Accepts the frame for `queue` if it fits; returns false (and keeps nothing) if not.
    #[inline]
    pub fn push(&mut self, id: FrameId, bytes: u32, queue: usize) -> bool {
        if !self.fits(bytes) {
            return false;
        }
        self.used_bytes += bytes as u64;
        self.max_used_bytes = self.max_used_bytes.max(self.used_bytes);
        self.frames.push_back((id, bytes, queue as u16));
        true
    }

    /// The head frame: (frame, bytes, queue).
    #[inline]
    pub fn head(&self) -> Option<(FrameId, u32, usize)> {
        self.frames.front().map(|&(id, b, q)| (id, b, q as usize))
    }

    /// Removes the head frame once the DMA engine has read it out.
    #[inline]
    pub fn pop(&mut self) -> Option<(FrameId, u32)> {
        let f = self.frames.pop_front()?;
        self.used_bytes -= f.1 as u64;
        Some((f.0, f.1))
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn max_used_bytes(&self) -> u64 {
        self.max_used_bytes
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_capacity() {
        let mut f = RxFifo::new(3000);
        assert!(f.push(1, 1518, 0));
        assert!(!f.push(2, 1518, 0), "3036 B do not fit in 3000");
        assert!(f.push(3, 64, 2));
        assert_eq!(f.used_bytes(), 1582);
        assert_eq!(f.pop(), Some((1, 1518)));
        assert_eq!(f.head(), Some((3, 64, 2)));
        assert!(f.push(4, 1518, 1));
        assert_eq!(f.len(), 2);
        assert_eq!(f.max_used_bytes(), 1582.max(64 + 1518));
    }
}
