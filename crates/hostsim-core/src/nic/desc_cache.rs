//! The RX descriptor cache and ring bookkeeping on the NIC side.
//!
//! Positions are absolute 64-bit counters (slot = position mod ring size):
//! the driver has made descriptors available up to `sw_tail` (RX tail
//! doorbells); the NIC has fetched up to `fetched` (some still in flight),
//! handed out `used` to frames, and written back `written_back`. The cache
//! holds fetched, unused descriptors; it asks for a prefetch batch when its
//! free count (in flight included) falls below the prefetch threshold, and
//! for a write-back once `wb_threshold` completions have accumulated (or the
//! timer fires — the caller keeps the timer). Software sees a frame only
//! after its descriptor is written back.

use crate::engine::time::Ps;
use crate::engine::Modulus;

pub struct RxDescCache {
    /// Ring size (slot = position mod ring).
    ring: Modulus,
    capacity: u64,
    prefetch_threshold: u64,
    wb_threshold: u64,
    sw_tail: u64,
    fetched: u64,
    in_flight: u64,
    used: u64,
    completed: u64,
    written_back: u64,
    /// Time the oldest not-yet-written-back completion happened.
    oldest_pending: Option<Ps>,
}

impl RxDescCache {
    /// `initial_tail`: descriptors the driver filled at start (DPDK fills all
    /// but one: ring − 1, so that head == tail means empty).
    pub fn new(ring: u32, capacity: u32, prefetch_threshold: u32, wb_threshold: u32, initial_tail: u64) -> Self {
        RxDescCache {
            ring: Modulus::new(ring as u64),
            capacity: capacity as u64,
            prefetch_threshold: prefetch_threshold as u64,
            wb_threshold: wb_threshold as u64,
            sw_tail: initial_tail,
            fetched: 0,
            in_flight: 0,
            used: 0,
            completed: 0,
            written_back: 0,
            oldest_pending: None,
        }
    }

    /// The driver's tail as the NIC last heard it.
    pub fn sw_tail(&self) -> u64 {
        self.sw_tail
    }

    /// The driver moved the tail to absolute position `tail` (a doorbell arrived).
    pub fn doorbell(&mut self, tail: u64) {
        debug_assert!(tail <= self.written_back + self.ring.get(), "driver cannot give more than the ring");
        self.sw_tail = self.sw_tail.max(tail);
    }

    /// Free descriptors in the cache, ready for frames.
    pub fn cached_free(&self) -> u64 {
        self.fetched - self.in_flight - self.used
    }

    /// Descriptors available in host memory, not yet fetched.
    pub fn host_available(&self) -> u64 {
        self.sw_tail - self.fetched
    }

    /// If a prefetch is due, the (first position, count) to fetch; marks it in flight.
    pub fn start_prefetch(&mut self) -> Option<(u64, u64)> {
        let free = self.fetched - self.used; // cached + in flight
        if free >= self.prefetch_threshold.max(1) && self.cached_free() > 0 {
            return None;
        }
        let room = self.capacity.saturating_sub(free);
        let n = room.min(self.host_available());
        if n == 0 {
            return None;
        }
        let first = self.fetched;
        self.fetched += n;
        self.in_flight += n;
        Some((first, n))
    }

    /// A prefetch of `n` descriptors arrived.
    pub fn prefetch_done(&mut self, n: u64) {
        self.in_flight -= n;
    }

    /// Takes a descriptor for the next frame: its absolute position.
    pub fn take(&mut self) -> Option<u64> {
        if self.cached_free() == 0 {
            return None;
        }
        self.used += 1;
        Some(self.used - 1)
    }

    /// The frame of the oldest used descriptor is in host memory. Returns a
    /// write-back batch (first position, count) if the threshold is reached.
    pub fn complete(&mut self, now: Ps) -> Option<(u64, u64)> {
        debug_assert!(self.completed < self.used);
        self.completed += 1;
        self.oldest_pending.get_or_insert(now);
        if self.completed - self.written_back >= self.wb_threshold {
            self.start_writeback()
        } else {
            None
        }
    }

    /// When the write-back timer of the oldest pending completion expires.
    pub fn wb_deadline(&self, timer_ps: Ps) -> Option<Ps> {
        self.oldest_pending.map(|t| t + timer_ps)
    }

    /// Writes back every pending completion (threshold reached or timer expired).
    pub fn start_writeback(&mut self) -> Option<(u64, u64)> {
        let n = self.completed - self.written_back;
        if n == 0 {
            return None;
        }
        let first = self.written_back;
        self.written_back = self.completed;
        self.oldest_pending = None;
        Some((first, n))
    }

    /// The RX ring is full from the NIC's side: no descriptor to put a frame in,
    /// none in host memory either (software has not refilled).
    pub fn ring_full(&self) -> bool {
        self.cached_free() == 0 && self.in_flight == 0 && self.host_available() == 0
    }

    /// Software is what the NIC waits for: no descriptor is ready, the NIC
    /// has asked for every one software posted, and those are fewer than
    /// its prefetch threshold. The full ring is the extreme case; a driver
    /// that posts late (a doorbell the NIC must read, a slow core) keeps
    /// the NIC here with a small fetch always on its way. Read at each
    /// arrival by the drop attribution (the ring-full bit).
    pub fn software_short(&self) -> bool {
        self.cached_free() == 0 && self.host_available() == 0 && self.in_flight < self.prefetch_threshold.max(1)
    }

    pub fn slot(&self, pos: u64) -> usize {
        self.ring.rem(pos) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_in_batches_below_threshold() {
        let mut c = RxDescCache::new(512, 32, 8, 4, 511);
        assert_eq!(c.start_prefetch(), Some((0, 32)));
        assert_eq!(c.start_prefetch(), None, "full cache (in flight)");
        c.prefetch_done(32);
        for _ in 0..24 {
            c.take().unwrap();
        }
        assert_eq!(c.cached_free(), 8);
        assert_eq!(c.start_prefetch(), None, "8 free is not below the threshold 8");
        c.take();
        assert_eq!(c.start_prefetch(), Some((32, 25)));
    }

    #[test]
    fn writeback_at_threshold_and_ring_full() {
        let mut c = RxDescCache::new(8, 8, 2, 3, 7);
        c.start_prefetch();
        c.prefetch_done(7);
        let mut wbs = vec![];
        for t in 0..7 {
            c.take().unwrap();
            if let Some(w) = c.complete(t) {
                wbs.push(w);
            }
        }
        assert_eq!(wbs, vec![(0, 3), (3, 3)]);
        assert_eq!(c.wb_deadline(100), Some(106));
        assert_eq!(c.start_writeback(), Some((6, 1)));
        assert!(c.ring_full(), "all 7 descriptors used, none refilled");
        assert_eq!(c.take(), None);
        c.doorbell(10); // driver refilled 3
        assert!(!c.ring_full());
        assert_eq!(c.start_prefetch(), Some((7, 3)));
        assert_eq!(c.slot(9), 1);
    }
}
