//! gem5's `Bridge` (`src/mem/bridge.cc`) as slot accounting: a request
//! enters if the request queue has room and, when it expects a response,
//! the response queue too (a response slot is reserved on entry and held
//! until the response leaves the bridge); it leaves the request queue when
//! the far side takes it, `delay` after entry at the earliest. A request
//! that finds a queue full waits until a slot frees (gem5 refuses it and
//! the sender retries).
//!
//! Slots are released at times booked ahead, in call order, like the
//! PCIe link's read tags ([`Slots`]).

use crate::engine::slots::Slots;
use crate::engine::time::Ps;

/// The slots of one queue and how often and how long requests waited for one.
struct Queue {
    slots: Slots,
    waits: u64,
    wait_ps: Ps,
}

impl Queue {
    fn new(cap: u32) -> Self {
        Queue { slots: Slots::new(cap.max(1) as usize), waits: 0, wait_ps: 0 }
    }

    /// Takes a slot at `t` or when one frees; returns when.
    fn take(&mut self, t: Ps) -> Ps {
        let free = self.slots.take(t);
        if free > t {
            self.waits += 1;
            self.wait_ps += free - t;
        }
        free
    }

    fn hold_until(&mut self, t: Ps) {
        self.slots.hold_until(t);
    }

    fn in_use(&self, now: Ps) -> usize {
        self.slots.in_use(now)
    }
}

/// Queue-full counters of a bridge.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BridgeStats {
    pub req_full_waits: u64,
    pub req_full_wait_ps: Ps,
    pub resp_full_waits: u64,
    pub resp_full_wait_ps: Ps,
}

pub struct Bridge {
    pub delay_ps: Ps,
    req: Queue,
    resp: Queue,
}

/// A request inside the bridge: `ready` is when it may leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    pub entered: Ps,
    pub ready: Ps,
}

impl Bridge {
    pub fn new(delay_ps: Ps, req_entries: u32, resp_entries: u32) -> Self {
        Bridge { delay_ps, req: Queue::new(req_entries), resp: Queue::new(resp_entries) }
    }

    /// A request arrives at `t`; it enters when both its slots are free.
    /// Follow with [`left`](Self::left) and, if it expects one,
    /// [`responded`](Self::responded).
    pub fn enter(&mut self, t: Ps, expects_response: bool) -> Entered {
        let mut at = self.req.take(t);
        if expects_response {
            at = self.resp.take(at);
        }
        Entered { entered: at, ready: at + self.delay_ps }
    }

    /// The far side took the request at `t`: its request slot frees.
    pub fn left(&mut self, t: Ps) {
        self.req.hold_until(t);
    }

    /// Its response came back at `t`; returns when it leaves the bridge
    /// (after the delay), which frees the response slot.
    pub fn responded(&mut self, t: Ps) -> Ps {
        let out = t + self.delay_ps;
        self.resp.hold_until(out);
        out
    }

    pub fn stats(&self) -> BridgeStats {
        BridgeStats { req_full_waits: self.req.waits, req_full_wait_ps: self.req.wait_ps, resp_full_waits: self.resp.waits, resp_full_wait_ps: self.resp.wait_ps }
    }

    /// Request and response slots held at `now`.
    pub fn in_use(&self, now: Ps) -> (usize, usize) {
        (self.req.in_use(now), self.resp.in_use(now))
    }

    pub fn reset_stats(&mut self) {
        for s in [&mut self.req, &mut self.resp] {
            s.waits = 0;
            s.wait_ps = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_request_queue_makes_the_next_wait_for_the_first_to_leave() {
        let mut b = Bridge::new(50_000, 2, 16);
        let a = b.enter(0, false);
        assert_eq!(a, Entered { entered: 0, ready: 50_000 });
        b.left(60_000);
        let c = b.enter(0, false);
        b.left(70_000);
        assert_eq!(c.entered, 0);
        // Third: both slots held until 60 and 70 ns.
        let d = b.enter(10_000, false);
        assert_eq!(d, Entered { entered: 60_000, ready: 110_000 });
        assert_eq!(b.stats().req_full_waits, 1);
        assert_eq!(b.stats().req_full_wait_ps, 50_000);
    }

    #[test]
    fn a_response_slot_is_held_until_the_response_leaves() {
        let mut b = Bridge::new(50_000, 16, 1);
        let a = b.enter(0, true);
        b.left(a.ready);
        assert_eq!(b.responded(80_000), 130_000);
        let c = b.enter(1_000, true);
        assert_eq!(c.entered, 130_000);
        assert_eq!(b.stats().resp_full_waits, 1);
        assert_eq!(b.in_use(100_000), (0, 0), "the second's slots are taken but not yet given back");
    }
}
