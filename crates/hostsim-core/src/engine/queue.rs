//! The event queue: a binary min-heap ordered by (time, insertion sequence),
//! so events at equal times run in the order they were scheduled.
//!
//! Events are a caller-defined compact type (an enum in `system/mod.rs`), never
//! boxed closures. Components keep their own in-flight state (a link keeps
//! its frames in a delay line and schedules only the head), so the heap stays
//! small and each operation is a few dozen nanoseconds.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::Ps;

struct Entry<E> {
    /// time << 64 | insertion sequence: one comparison orders by both.
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that BinaryHeap (a max-heap) pops the earliest entry.
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

impl<E> Entry<E> {
    #[inline(always)]
    fn time(&self) -> Ps {
        (self.key >> 64) as Ps
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Ps,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(64), next_seq: 0, now: 0, popped: 0 }
    }

    /// The time of the event being handled (or last handled).
    #[inline]
    pub fn now(&self) -> Ps {
        self.now
    }

    /// Schedules `event` at `time`; a time in the past runs at `now`.
    #[inline]
    pub fn schedule(&mut self, time: Ps, event: E) {
        let time = time.max(self.now);
        self.heap.push(Entry { key: (time as u128) << 64 | self.next_seq as u128, event });
        self.next_seq += 1;
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Ps> {
        self.heap.peek().map(|e| e.time())
    }

    /// Removes the earliest event if it is due at or before `until`, and
    /// advances `now` to its time.
    #[inline]
    pub fn pop_until(&mut self, until: Ps) -> Option<(Ps, E)> {
        if self.heap.peek()?.time() > until {
            return None;
        }
        let e = self.heap.pop()?;
        let time = e.time();
        self.now = time;
        self.popped += 1;
        Some((time, e.event))
    }

    /// Folds `f` over every pending event (time, event), in no set order.
    pub fn fold<A>(&self, init: A, mut f: impl FnMut(A, Ps, &E) -> A) -> A {
        self.heap.iter().fold(init, |a, e| f(a, e.time(), &e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events handled so far.
    pub fn events_handled(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule(30, 'c');
        q.schedule(10, 'a');
        q.schedule(30, 'd');
        q.schedule(10, 'b');
        q.schedule(20, 'x');
        let mut out = vec![];
        while let Some((t, e)) = q.pop_until(u64::MAX) {
            out.push((t, e));
        }
        assert_eq!(out, vec![(10, 'a'), (10, 'b'), (20, 'x'), (30, 'c'), (30, 'd')]);
        assert_eq!(q.events_handled(), 5);
    }

    #[test]
    fn pop_until_stops_at_limit_and_past_events_run_now() {
        let mut q = EventQueue::new();
        q.schedule(100, 1);
        q.schedule(200, 2);
        assert_eq!(q.pop_until(150), Some((100, 1)));
        assert_eq!(q.pop_until(150), None);
        q.schedule(50, 3); // in the past: runs at now = 100
        assert_eq!(q.pop_until(150), Some((100, 3)));
        assert_eq!(q.now(), 100);
        assert_eq!(q.len(), 1);
    }
}
