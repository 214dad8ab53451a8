//! A fixed number of slots, each held until a time booked ahead (a PCIe
//! device's read tags, gem5's IOCache MSHRs, a bridge's queue entries):
//! when every slot is held, the next user takes the one released earliest.

use std::collections::VecDeque;

use super::time::Ps;

/// `cap` slots and the release times of those held, earliest first. Holders
/// mostly release in the order they took their slots, so a new time nearly
/// always goes at the back: cheaper than a heap, whose sift compares at
/// random (1.6 % of TestPMD 64 B's wall time with the read tags in a heap).
#[derive(Debug, Clone)]
pub struct Slots {
    cap: usize,
    held: VecDeque<Ps>,
}

impl Slots {
    pub fn new(cap: usize) -> Self {
        Slots { cap, held: VecDeque::with_capacity(cap) }
    }

    /// When a user arriving at `t` has a slot: at `t` if one is free, else
    /// when the earliest held one is released (that one becomes the user's).
    #[inline]
    pub fn take(&mut self, t: Ps) -> Ps {
        if self.held.len() < self.cap {
            return t;
        }
        t.max(self.held.pop_front().unwrap_or(0))
    }

    /// The slot taken last is held until `t`.
    #[inline]
    pub fn hold_until(&mut self, t: Ps) {
        if self.held.back().is_none_or(|&last| last <= t) {
            self.held.push_back(t);
        } else {
            let at = self.held.partition_point(|&h| h <= t);
            self.held.insert(at, t);
        }
    }

    /// Slots held at `now`.
    pub fn in_use(&self, now: Ps) -> usize {
        self.held.iter().filter(|&&h| h > now).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_gives_the_slot_released_first_whatever_the_order_held() {
        let mut s = Slots::new(3);
        for (t, until) in [(0, 500), (10, 200), (20, 300)] {
            assert_eq!(s.take(t), t, "a free slot at once");
            s.hold_until(until);
        }
        assert_eq!(s.in_use(250), 2);
        // Full: the slot released at 200, then 300, then 500.
        assert_eq!(s.take(100), 200);
        s.hold_until(250);
        assert_eq!(s.take(100), 250);
        s.hold_until(1_000);
        assert_eq!(s.take(400), 400, "300 was released before 400");
        s.hold_until(450);
        for want in [450, 500, 1_000] {
            assert_eq!(s.take(0), want);
            s.hold_until(2_000);
        }
    }

    #[test]
    fn release_order_matches_a_sorted_reference() {
        let mut s = Slots::new(8);
        let mut reference: Vec<Ps> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut now = 0;
        for step in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 50;
            let want = if reference.len() < 8 { now } else { now.max(reference.remove(0)) };
            assert_eq!(s.take(now), want, "step {step}");
            // Mostly later than every held time, sometimes earlier.
            let until = want + if x % 7 == 0 { x % 100 } else { 400 + x % 100 };
            s.hold_until(until);
            let at = reference.partition_point(|&h| h <= until);
            reference.insert(at, until);
        }
    }
}
