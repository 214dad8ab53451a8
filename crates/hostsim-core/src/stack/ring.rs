//! A DPDK `rte_ring` between cores, at simulated addresses (pipeline mode).
//!
//! Layout, as `struct rte_ring`: the producer's head and tail share one
//! cache line, the consumer's another, then the slots (8 B object pointers).
//! An enqueue reads the consumer's line (how much room), moves the
//! producer's head (a compare-and-swap on that line with several
//! producers), writes the slots and the producer's tail; a dequeue is the
//! mirror image. Those lines are written by one core and read by another,
//! so their cost comes from the memory system's coherence transfers, as on
//! hardware.
//!
//! Timing: an entry becomes visible to the consumer when the producer's
//! enqueue has finished (its core's time then); entries are taken in ring
//! order, so one a later producer finished earlier waits behind the ones
//! before it, as rte_ring's tail update makes it wait. Bursts take as many
//! objects as fit or are there (`rte_ring_enqueue_burst`,
//! `rte_ring_dequeue_burst`); bulk calls all of them or none
//! (`rte_ring_enqueue_bulk`, `rte_ring_dequeue_bulk`).
//!
//! Simplified: a producer does not spin while an earlier one finishes its
//! enqueue; the CAS costs instructions plus its line's transfer, and
//! contention beyond that is not modelled.

use std::collections::VecDeque;

use crate::cpu::Work;
use crate::engine::time::Ps;
use crate::engine::Modulus;
use crate::nic::Slot;

/// A packet in a ring, with the port it will leave from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Entry {
    pub slot: Slot,
    pub tx_port: u16,
}

/// Instruction counts of ring operations (estimates: rte_ring's burst paths
/// are a few dozen instructions plus a store or load per object; the CAS of
/// a multi-producer or multi-consumer ring costs about 6 ns uncontended,
/// params.md §5, about 40 instructions on a 3 GHz core at CPI 0.5).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RingCosts {
    /// One enqueue or dequeue call.
    pub op_instr: u32,
    /// Per object moved.
    pub obj_instr: u32,
    /// The compare-and-swap of a shared head (several producers or consumers).
    pub cas_instr: u32,
}

impl Default for RingCosts {
    fn default() -> Self {
        RingCosts { op_instr: 40, obj_instr: 2, cas_instr: 40 }
    }
}

/// Counters of one ring.
#[derive(Debug, Default, Clone, Copy)]
pub struct RingCounters {
    pub enqueued: u64,
    pub dequeued: u64,
    /// Packets a producer freed because the ring was full.
    pub full_drops: u64,
    pub max_used: u64,
}

pub struct SwRing {
    base: u64,
    /// Slots; at most `size - 1` are used (one stays empty, as rte_ring's count).
    size: Modulus,
    multi_prod: bool,
    multi_cons: bool,
    /// Bulk calls: all objects asked for, or none.
    bulk: bool,
    /// (visible from, entry), in ring order.
    entries: VecDeque<(Ps, Entry)>,
    /// Absolute positions of the next enqueue and dequeue (slot = position mod size).
    prod: u64,
    cons: u64,
    /// The core that dequeues.
    pub consumer: usize,
    pub counters: RingCounters,
}

impl SwRing {
    /// A ring at `base` of `size` slots (a power of two) consumed by core `consumer`.
    pub fn new(base: u64, size: u32, multi_prod: bool, multi_cons: bool, consumer: usize) -> SwRing {
        SwRing {
            base,
            size: Modulus::new(size as u64),
            multi_prod,
            multi_cons,
            bulk: false,
            entries: VecDeque::with_capacity(size as usize),
            prod: 0,
            cons: 0,
            consumer,
            counters: Default::default(),
        }
    }

    /// Bulk calls instead of burst calls.
    pub fn bulk(mut self, bulk: bool) -> SwRing {
        self.bulk = bulk;
        self
    }

    fn prod_line(&self) -> u64 {
        self.base
    }

    fn cons_line(&self) -> u64 {
        self.base + 64
    }

    fn slot_addr(&self, pos: u64) -> u64 {
        self.base + 128 + self.size.rem(pos) * 8
    }

    /// The line an empty poll reads (the producer's tail).
    pub fn poll_addr(&self) -> u64 {
        self.prod_line()
    }

    /// Room for more entries, as the producer sees it.
    pub fn free(&self) -> u64 {
        self.size.get() - 1 - self.entries.len() as u64
    }

    /// When a dequeue of up to `max` can next take something: the first
    /// entry not yet taken is visible (bulk: the first `max`), if they are there.
    pub fn next_visible(&self, max: usize) -> Option<Ps> {
        if self.bulk {
            (self.entries.len() >= max).then(|| self.entries.iter().take(max).map(|e| e.0).max().unwrap_or(0))
        } else {
            self.entries.front().map(|e| e.0)
        }
    }

    /// What a dequeue of up to `max` takes at `now`: the entries visible,
    /// at most `max` (bulk: `max` or none).
    pub fn ready(&self, now: Ps, max: usize) -> usize {
        let n = self.entries.iter().take(max).take_while(|e| e.0 <= now).count();
        if self.bulk && n < max {
            0
        } else {
            n
        }
    }

    /// The work of enqueueing up to `n` objects: returns how many fit (the
    /// rest the producer must free). Call [`Self::commit`] once the work has run.
    pub fn enqueue_work(&self, work: &mut Work, c: &RingCosts, n: usize) -> usize {
        let room = self.free();
        let k = if self.bulk && (n as u64) > room { 0 } else { (n as u64).min(room) as usize };
        work.instr(c.op_instr as u64).read(self.cons_line());
        if self.multi_prod {
            work.instr(c.cas_instr as u64).read(self.prod_line());
        }
        work.write(self.prod_line());
        self.slots_work(work, c, self.prod, k, true);
        work.write(self.prod_line());
        k
    }

    /// `n` slots from position `from` moved, once per line they span.
    fn slots_work(&self, work: &mut Work, c: &RingCosts, from: u64, n: usize, write: bool) {
        let mut last = u64::MAX;
        for i in 0..n as u64 {
            work.instr(c.obj_instr as u64);
            let line = self.slot_addr(from + i) & !63;
            if line != last {
                if write {
                    work.write(line);
                } else {
                    work.read(line);
                }
                last = line;
            }
        }
    }

    /// The objects the producer enqueued are visible from `t`.
    pub fn commit(&mut self, t: Ps, items: impl Iterator<Item = Entry>) {
        for e in items {
            self.entries.push_back((t, e));
            self.prod += 1;
            self.counters.enqueued += 1;
        }
        self.counters.max_used = self.counters.max_used.max(self.entries.len() as u64);
    }

    /// Dequeues the first `n` objects (visible ones: see [`Self::ready`]) into
    /// `out` and adds the work of it.
    pub fn dequeue(&mut self, work: &mut Work, c: &RingCosts, n: usize, out: &mut Vec<Entry>) {
        work.instr(c.op_instr as u64).read(self.prod_line());
        if self.multi_cons {
            work.instr(c.cas_instr as u64).read(self.cons_line());
        }
        work.write(self.cons_line());
        self.slots_work(work, c, self.cons, n, false);
        work.write(self.cons_line());
        out.extend(self.entries.drain(..n).map(|(_, e)| e));
        self.cons += n as u64;
        self.counters.dequeued += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Category;

    fn entry(i: u32) -> Entry {
        Entry { slot: Slot { mbuf: i, frame: i, buf_addr: 0 }, tx_port: 0 }
    }

    #[test]
    fn entries_become_visible_in_order_when_their_enqueue_ends() {
        let c = RingCosts::default();
        let mut r = SwRing::new(0x1000, 8, false, false, 1);
        let mut w = Work::new(Category::Rx);
        assert_eq!(r.enqueue_work(&mut w, &c, 5), 5);
        r.commit(100, (0..5).map(entry));
        assert_eq!(r.enqueue_work(&mut w, &c, 5), 2, "one slot stays empty");
        r.commit(50, (5..7).map(entry));
        assert_eq!((r.ready(99, 32), r.ready(100, 32), r.ready(100, 3)), (0, 7, 3));
        let mut out = vec![];
        r.dequeue(&mut w, &c, 3, &mut out);
        assert_eq!(out.iter().map(|e| e.slot.mbuf).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!((r.free(), r.next_visible(32)), (3, Some(100)));
        assert_eq!((r.counters.enqueued, r.counters.dequeued, r.counters.max_used), (7, 3, 7));
    }

    #[test]
    fn bulk_calls_move_all_or_nothing() {
        let c = RingCosts::default();
        let mut r = SwRing::new(0x1000, 8, false, false, 1).bulk(true);
        let mut w = Work::new(Category::Rx);
        assert_eq!(r.enqueue_work(&mut w, &c, 5), 5);
        r.commit(100, (0..5).map(entry));
        assert_eq!(r.enqueue_work(&mut w, &c, 3), 0, "3 do not fit in the 2 free slots: none go in");
        assert_eq!(r.enqueue_work(&mut w, &c, 2), 2);
        r.commit(300, (5..7).map(entry));
        // A bulk dequeue of 6 waits for the 6th entry (visible at 300); of 8, for entries not there.
        assert_eq!((r.ready(299, 6), r.ready(300, 6), r.ready(300, 8)), (0, 6, 0));
        assert_eq!((r.next_visible(6), r.next_visible(8), r.next_visible(3)), (Some(300), None, Some(100)));
    }

    #[test]
    fn the_work_touches_the_index_lines_and_the_slots_once_a_line() {
        let c = RingCosts::default();
        let r = SwRing::new(0x1000, 64, true, false, 1);
        let mut w = Work::new(Category::Rx);
        r.enqueue_work(&mut w, &c, 16);
        let lines: Vec<u64> = w.accesses().iter().map(|a| a.addr).collect();
        // cons line read, prod line read (CAS) and written, 16 slots = 2 lines, prod tail.
        assert_eq!(lines, vec![0x1040, 0x1000, 0x1000, 0x1080, 0x10c0, 0x1000]);
        // Each access where it falls in the instruction stream: an object's
        // instructions come before its slot's store.
        let at: Vec<u64> = w.accesses().iter().map(|a| a.at_instr).collect();
        assert_eq!(at, vec![40, 80, 80, 82, 98, 112]);
        assert_eq!(w.instructions(), 40 + 40 + 16 * 2);
    }
}
