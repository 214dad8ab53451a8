//! The event queue: a binary min-heap ordered by (time, insertion sequence),
//! so events at equal times run in the order they were scheduled.
//!
//! Events are a caller-defined compact type (an enum in `system/mod.rs`), never
//! boxed closures. Components keep their own in-flight state (a link keeps
//! its frames in a delay line and schedules only the head), so the heap stays
//! small and each operation is a few dozen nanoseconds.

use super::time::Ps;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// time << 64 | insertion sequence: one comparison orders by both, and
    /// no two entries have the same key.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    #[inline(always)]
    fn time(&self) -> Ps {
        (self.key >> 64) as Ps
    }
}

/// A binary min-heap of entries by key. The standard library's max-heap
/// moves its last entry to the root with two word-sized stores and reads it
/// back as one wider load, which the host cannot forward from the stores;
/// this one keeps the moving entry in registers until it lands. Keys are
/// unique, so the order in which entries leave is the keys' order, whatever
/// the heap's layout.
struct Heap<E> {
    v: Vec<Entry<E>>,
}

impl<E: Copy> Heap<E> {
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        self.v.push(e);
        self.sift_up(self.v.len() - 1, e);
    }

    /// Puts `e` at `hole` or, moving parents down, above it where its key belongs.
    #[inline(always)]
    fn sift_up(&mut self, mut hole: usize, e: Entry<E>) {
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.v[parent].key <= e.key {
                break;
            }
            self.v[hole] = self.v[parent];
            hole = parent;
        }
        self.v[hole] = e;
    }

    /// Removes the entry of the smallest key. The root's place becomes a
    /// hole that moves down the path of smaller children to the bottom; the
    /// last entry then goes up from there to where it belongs (usually near
    /// the bottom, so this compares less than sifting it down from the root).
    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.v.pop()?;
        let Some(&top) = self.v.first() else { return Some(last) };
        let n = self.v.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < n {
            child += (self.v[child + 1].key < self.v[child].key) as usize;
            self.v[hole] = self.v[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child + 1 == n {
            self.v[hole] = self.v[child];
            hole = child;
        }
        self.sift_up(hole, last);
        Some(top)
    }
}

pub struct EventQueue<E> {
    heap: Heap<E>,
    next_seq: u64,
    now: Ps,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: Heap { v: Vec::with_capacity(64) }, next_seq: 0, now: 0, popped: 0 }
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
        self.heap.v.first().map(|e| e.time())
    }

    /// Removes the earliest event if it is due at or before `until`, and
    /// advances `now` to its time.
    #[inline]
    pub fn pop_until(&mut self, until: Ps) -> Option<(Ps, E)> {
        if self.heap.v.first()?.time() > until {
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
        self.heap.v.iter().fold(init, |a, e| f(a, e.time(), &e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.v.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.v.is_empty()
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
    fn interleaved_pushes_and_pops_leave_in_time_then_insertion_order() {
        // Against a reference: the pending events kept sorted by (time, sequence).
        let mut q = EventQueue::new();
        let mut reference: Vec<(Ps, u64)> = Vec::new();
        let (mut x, mut seq) = (0x2545_f491_4f6c_dd1du64, 0u64);
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 < 3 || reference.is_empty() {
                // Times from now on, many equal, so insertion order decides ties.
                let t = q.now() + x % 64;
                q.schedule(t, seq);
                reference.push((t, seq));
                reference.sort_unstable();
                seq += 1;
            } else {
                let want = reference.remove(0);
                assert_eq!(q.pop_until(Ps::MAX), Some(want), "step {step}");
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.peek_time(), reference.first().map(|e| e.0));
        }
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
