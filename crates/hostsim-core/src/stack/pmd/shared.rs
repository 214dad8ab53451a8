//! One receive queue, several cores (SPEC 2.11; study 3): the poll-mode
//! driver on a ConnectX-style queue (`nic::CompletionQueue`) under each of
//! the designs of `host.rx_sharing`.
//!
//! A queue entry is a slot of the work queue (the 16 B buffer descriptor
//! the NIC fetches), the matching slot of the software ring (`elts`, the
//! 8 B mbuf pointer beside it) and the completion entry the NIC writes
//! when a frame is in the buffer. As DPDK's mlx5 rx_burst does, a core
//! reads the completion entry (RX), takes the mbuf from the software ring
//! and posts a fresh buffer in its place (buffer), and stores the doorbell
//! record once per burst (RX). The designs differ in who does which part
//! and which lines the cores share:
//!
//! * `none`: one core does everything.
//! * `arbitration`: every core polls the queue; a core claims the next
//!   entries by compare-and-swap on a shared index line (CAS). An attempt
//!   fails when another core's claim landed between its read of the index
//!   and its own atomic, and is retried; each attempt moves the line.
//!   Every core stores the doorbell record.
//! * `range`: the entries are split by their index bits into one
//!   contiguous area per core (so the core count is a power of two); each
//!   core takes only its area's entries; no CAS. The NIC may use an entry
//!   only once every entry before it is posted again, so a slow area holds
//!   the others back.
//! * `parent_worker`: core 0, the parent, alone reads the completion queue,
//!   posts buffers and stores the doorbell record; it publishes to each
//!   core, on a line of its own, how far that core's area has completions,
//!   and reads from each core's own line how far it has taken them
//!   (join). Every core, the parent included, takes the packets of its
//!   area from the software ring.
//!
//! Each design's shared lines are at simulated addresses, so their moves
//! between the cores' caches are the memory system's transfers.

use super::Pmd;
use crate::cpu::{Category, CodeRegion};
use crate::engine::time::Ps;
use crate::engine::Modulus;
use crate::stack::pmd::config::RxSharing;
use crate::stack::{App, StackCx};
use super::PMD_CODE;

/// Bytes of one software-ring entry (an mbuf pointer).
const ELT_BYTES: u64 = 8;
const LINE: u64 = 64;

/// Counters of a shared queue.
#[derive(Debug, Default, Clone, Copy)]
pub struct SharingCounters {
    /// Compare-and-swap attempts, and those that failed and were retried.
    pub cas: u64,
    pub cas_retries: u64,
    /// Join-line publications and reads.
    pub joins: u64,
}

/// What the cores sharing one receive queue share.
pub struct SharedRx {
    pub design: RxSharing,
    cores: usize,
    /// Entries of the queue, and of one core's area.
    size: Modulus,
    area: Modulus,
    /// The software ring's base, the claim index's line (arbitration), the
    /// first of the cores' "completions up to" lines and of their "taken up to" lines.
    elts: u64,
    claim_line: u64,
    ready_lines: u64,
    done_lines: u64,
    /// When each core's last successful claim completed (arbitration).
    last_cas: Vec<Ps>,
    /// Per area, the next position its core takes.
    next: Vec<u64>,
    /// Completions the parent has read and published, up to here (parent_worker).
    published: u64,
    pub counters: SharingCounters,
}

impl SharedRx {
    /// `size` entries; the design's lines from `base`: the software ring
    /// (`size` × 8 B) and 1 + 2 × `cores` lines, at most 32 KiB + 32 KiB
    /// (4096 entries, `MAX_QUEUE_PAIRS` cores), in a region the queue's
    /// other structures do not use (`host::SHARED_OFFSET`).
    pub fn new(design: RxSharing, cores: usize, size: u64, base: u64) -> SharedRx {
        let areas = if design.areas() { cores } else { 1 };
        let area = size / areas as u64;
        SharedRx {
            design,
            cores,
            size: Modulus::new(size),
            area: Modulus::new(area),
            elts: base,
            claim_line: base + size * ELT_BYTES,
            ready_lines: base + size * ELT_BYTES + LINE,
            done_lines: base + size * ELT_BYTES + LINE * (1 + cores as u64),
            last_cas: vec![0; cores],
            next: (0..areas as u64).map(|a| a * area).collect(),
            published: 0,
            counters: SharingCounters::default(),
        }
    }

    #[inline]
    fn elt_addr(&self, pos: u64) -> u64 {
        self.elts + self.size.rem(pos) * ELT_BYTES
    }

    /// The area (core) of position `pos`.
    #[inline]
    fn area_of(&self, pos: u64) -> usize {
        self.area.div(self.size.rem(pos)) as usize
    }

    /// The position after `pos` in the same area (the next lap's area when it leaves it).
    #[inline]
    fn step(&self, pos: u64) -> u64 {
        let p = pos + 1;
        if self.area.rem(p) == 0 {
            p + self.size.get() - self.area.get()
        } else {
            p
        }
    }

    /// Positions of area `a` from its next one, below `upto`, at most `max`, into `out`.
    fn positions(&self, a: usize, upto: u64, max: usize, out: &mut Vec<u64>) {
        out.clear();
        let mut p = self.next[a];
        while p < upto && out.len() < max {
            out.push(p);
            p = self.step(p);
        }
    }

    /// How many areas the positions `[from, to)` fall in (they run in ring order).
    fn areas_spanned(&self, from: u64, to: u64) -> usize {
        if to <= from {
            return 0;
        }
        let (first, last) = (self.area.div(from), self.area.div(to - 1));
        ((last - first + 1) as usize).min(self.next.len())
    }

    /// Every position below this one has been taken.
    fn taken_prefix(&self) -> u64 {
        self.next.iter().copied().min().unwrap_or(0)
    }

    pub fn result_json(&self) -> serde_json::Value {
        let c = self.counters;
        serde_json::json!({
            "design": self.design.name(),
            "cores": self.cores,
            "areas": self.next.len(),
            "cas": c.cas,
            "cas_retries": c.cas_retries,
            "joins": c.joins,
        })
    }
}

impl Pmd {
    /// The shared queue this core polls (`cx.shared`).
    #[inline]
    fn shared_queue(&self) -> usize {
        self.shared.expect("a core on a ConnectX-style queue")
    }

    /// One loop iteration of a core on a ConnectX-style queue.
    pub(super) fn shared_iteration(&mut self, now: Ps, cx: &mut StackCx, app: &mut dyn App) {
        let k = self.shared_queue();
        let start = cx.core.now();
        let s = self.streams[0];
        let q = &mut cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        q.see_writebacks(now);
        cx.nic.ports[s.tx_port].txq[s.tx_queue].see_writebacks(now);
        let busy = match cx.shared[k].design {
            RxSharing::None | RxSharing::Arbitration => self.claim_and_take(cx, app),
            RxSharing::Range => self.take_area(cx, app),
            RxSharing::ParentWorker => {
                let parent = self.id == 0 && self.parent(cx);
                Some(self.take_published(cx, app) || parent)
            }
        };
        match busy {
            Some(true) => self.schedule_loop(cx, cx.core.now()),
            Some(false) => self.idle(start, cx),
            None => {
                // No mbuf to post: poll again.
                let t = cx.core.now();
                self.schedule_loop(cx, t);
            }
        }
    }

    /// An empty poll of `addr` (the completion entry or join line the core watches).
    fn empty(&mut self, cx: &mut StackCx, addr: u64) {
        cx.core.empty_poll(self.cfg.costs.empty_poll_instr as u64, addr, cx.mem);
        self.c.empty_polls += 1;
    }

    /// `none` and `arbitration`: up to a burst of the next completed
    /// entries, claimed by CAS under `arbitration` (with one core too).
    /// `Some(false)`: nothing there.
    fn claim_and_take(&mut self, cx: &mut StackCx, app: &mut dyn App) -> Option<bool> {
        let k = self.shared_queue();
        let s = self.streams[0];
        let q = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        let next = q.ring.next;
        let n = q.ring.ready().min(self.cfg.burst as u64) as usize;
        // Arbitration claims by CAS however many cores poll: the code
        // path is the same with one worker (the study's single-thread CAS
        // point); `none` has no claim.
        let shared = cx.shared[k].design == super::config::RxSharing::Arbitration;
        if n == 0 {
            let addr = q.completion_addr(next);
            if shared {
                // The index, then the entry it names.
                self.work.reset(Category::Idle).read(cx.shared[k].claim_line);
                self.exec(cx);
            }
            self.empty(cx, addr);
            return Some(false);
        }
        if !self.get_mbufs(cx, n) {
            return None;
        }
        if shared {
            self.claim(cx);
        }
        self.positions.clear();
        self.positions.extend(next..next + n as u64);
        self.read_completions(cx);
        self.take_entries(cx, false);
        self.post_buffers(cx);
        cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.next = next + n as u64;
        self.store_doorbell(cx);
        self.deliver(cx, app);
        Some(true)
    }

    /// Compare-and-swap on the shared index until no other core's claim
    /// landed between this core's read of it and its atomic.
    fn claim(&mut self, cx: &mut StackCx) {
        let k = self.shared_queue();
        let c = self.cfg.costs.sharing;
        let line = cx.shared[k].claim_line;
        let me = self.id;
        for attempt in 0..cx.shared[k].cores {
            let t0 = cx.core.now();
            self.work.reset(Category::Cas).instr(c.cas_instr as u64).read(line).atomic(line);
            self.exec(cx);
            let t1 = cx.core.wait_until(cx.core.now() + c.atomic_ps, Category::Cas);
            let sh = &mut cx.shared[k];
            sh.counters.cas += 1;
            let lost = sh.last_cas.iter().enumerate().any(|(o, &t)| o != me && t > t0 && t <= t1);
            if !lost || attempt + 1 == sh.cores {
                sh.last_cas[me] = t1;
                return;
            }
            sh.counters.cas_retries += 1;
        }
    }

    /// `range`: up to a burst of this core's area's completed entries.
    fn take_area(&mut self, cx: &mut StackCx, app: &mut dyn App) -> Option<bool> {
        let k = self.shared_queue();
        let s = self.streams[0];
        let done = cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.done;
        let mut pos = std::mem::take(&mut self.positions);
        cx.shared[k].positions(self.id, done, self.cfg.burst as usize, &mut pos);
        self.positions = pos;
        if self.positions.is_empty() {
            let addr = cx.nic.ports[s.rx_port].rxq[s.rx_queue].completion_addr(cx.shared[k].next[self.id]);
            self.empty(cx, addr);
            return Some(false);
        }
        if !self.get_mbufs(cx, self.positions.len()) {
            return None;
        }
        self.read_completions(cx);
        self.take_entries(cx, false);
        self.post_buffers(cx);
        let last = *self.positions.last().expect("not empty");
        cx.shared[k].next[self.id] = cx.shared[k].step(last);
        cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.next = cx.shared[k].taken_prefix();
        self.store_doorbell(cx);
        self.deliver(cx, app);
        Some(true)
    }

    /// `parent_worker`, core 0's hardware part: read every new completion,
    /// publish each area's progress to its core, post buffers for what every
    /// core has taken, store the doorbell record. Whether it did anything.
    fn parent(&mut self, cx: &mut StackCx) -> bool {
        let k = self.shared_queue();
        let s = self.streams[0];
        let costs = self.cfg.costs;
        let done = cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.done;
        let published = cx.shared[k].published;
        let mut busy = false;
        if done > published {
            // Read the completions and set each mbuf's length from them.
            self.positions.clear();
            self.positions.extend(published..done);
            self.read_completions(cx);
            let n = (done - published) as usize;
            let last = self.burst_hist.len() - 1;
            self.burst_hist[n.min(last)] += 1;
            cx.shared[k].published = done;
            // Publish to every other core whose area got completions: the
            // areas from the first new entry's to the last's, in ring order.
            let sh = &cx.shared[k];
            let (first, areas) = (sh.area_of(published), sh.areas_spanned(published, done));
            self.work.reset(Category::Join);
            for i in 0..areas {
                let w = (first + i) % sh.cores;
                if w != 0 {
                    self.work.instr(costs.sharing.join_instr as u64).write(sh.ready_lines + w as u64 * LINE);
                }
            }
            self.exec(cx);
            let t = cx.core.now();
            for i in 0..areas {
                let w = (first + i) % cx.shared[k].cores;
                if w != 0 {
                    cx.shared[k].counters.joins += 1;
                    cx.out.wakes.push((t, w as u16));
                }
            }
            busy = true;
        }
        // What the other cores have taken: read their lines.
        let q = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        if q.ring.next < cx.shared[k].published && cx.shared[k].cores > 1 {
            self.work.reset(Category::Join);
            for w in 1..cx.shared[k].cores {
                self.work.instr(costs.sharing.join_instr as u64).read(cx.shared[k].done_lines + w as u64 * LINE);
            }
            self.exec(cx);
            cx.shared[k].counters.joins += cx.shared[k].cores as u64 - 1;
        }
        let from = cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.next;
        let upto = cx.shared[k].taken_prefix();
        if upto > from {
            let n = (upto - from) as usize;
            if self.get_mbufs(cx, n) {
                self.positions.clear();
                self.positions.extend(from..upto);
                self.post_buffers(cx);
                cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.next = upto;
                self.store_doorbell(cx);
            }
            // Without mbufs the parent polls again.
            busy = true;
        }
        busy
    }

    /// `parent_worker`, every core: up to a burst of its area's published
    /// entries from the software ring; publishes how far it has taken them.
    /// False: nothing there.
    fn take_published(&mut self, cx: &mut StackCx, app: &mut dyn App) -> bool {
        let k = self.shared_queue();
        let costs = self.cfg.costs;
        let me = self.id;
        let parent = me == 0;
        if !parent {
            self.work.reset(Category::Join).instr(costs.sharing.join_instr as u64).read(cx.shared[k].ready_lines + me as u64 * LINE);
            self.exec(cx);
            cx.shared[k].counters.joins += 1;
        }
        let mut pos = std::mem::take(&mut self.positions);
        cx.shared[k].positions(me, cx.shared[k].published, self.cfg.burst as usize, &mut pos);
        self.positions = pos;
        if self.positions.is_empty() {
            return false;
        }
        self.take_entries(cx, true);
        let last = *self.positions.last().expect("not empty");
        cx.shared[k].next[me] = cx.shared[k].step(last);
        if !parent {
            self.work.reset(Category::Join).instr(costs.sharing.join_instr as u64).write(cx.shared[k].done_lines + me as u64 * LINE);
            self.exec(cx);
            cx.shared[k].counters.joins += 1;
            // The parent posts buffers for what this core has taken.
            let t = cx.core.now();
            cx.out.wakes.push((t, 0));
        }
        self.deliver(cx, app);
        true
    }

    /// Takes `n` mbufs from the mempool into `self.mbufs` for posting; false
    /// (counted) when there are not enough.
    fn get_mbufs(&mut self, cx: &mut StackCx, n: usize) -> bool {
        self.mbufs.clear();
        self.touched.clear();
        if !cx.mbufs.get_bulk(self.id, n, &mut self.mbufs, &mut self.touched) {
            self.c.rx_nombuf += 1;
            return false;
        }
        self.exec_touched(cx, Category::Mempool, n as u64 * self.cfg.costs.mempool_instr as u64);
        true
    }

    /// RX: reads the completion entries of `self.positions` and writes each
    /// frame's length and flags into its mbuf.
    fn read_completions(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        let s = self.streams[0];
        let q = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        self.work.reset(Category::Rx).code(CodeRegion::user(PMD_CODE, c.code_bytes)).instr(c.rx_burst_instr as u64);
        for &p in &self.positions {
            let slot = q.ring.ring.slots[q.ring.ring.slot(p)];
            self.work.read(q.completion_addr(p)).instr(c.rx_pkt_instr as u64).write(cx.mbufs.mbuf_addr(slot.mbuf));
        }
        self.exec(cx);
    }

    /// Buffer: takes the mbufs of `self.positions` from the software ring
    /// into the batch; `read_mbuf` when another core wrote their headers.
    fn take_entries(&mut self, cx: &mut StackCx, read_mbuf: bool) {
        let k = self.shared_queue();
        let s = self.streams[0];
        let q = &cx.nic.ports[s.rx_port].rxq[s.rx_queue];
        self.work.reset(Category::Buffer);
        self.batch.clear();
        for &p in &self.positions {
            let slot = q.ring.ring.slots[q.ring.ring.slot(p)];
            self.work.instr(self.cfg.costs.sharing.buffer_instr as u64).read(cx.shared[k].elt_addr(p));
            if read_mbuf {
                self.work.read(cx.mbufs.mbuf_addr(slot.mbuf));
            }
            self.batch.push(slot);
        }
        self.exec(cx);
    }

    /// Buffer: posts the mbufs in `self.mbufs` at `self.positions` — the
    /// software ring's pointer and the work queue's descriptor.
    fn post_buffers(&mut self, cx: &mut StackCx) {
        let k = self.shared_queue();
        let s = self.streams[0];
        let refill = self.cfg.costs.refill_instr as u64;
        self.work.reset(Category::Buffer);
        let rx = &mut cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring;
        for (i, &p) in self.positions.iter().enumerate() {
            let m = self.mbufs[i];
            let slot = rx.ring.slot(p);
            rx.ring.slots[slot].mbuf = m;
            rx.ring.slots[slot].buf_addr = cx.mbufs.data_addr(m);
            self.work.instr(refill).write(cx.shared[k].elt_addr(p)).write(rx.ring.desc_addr(p));
        }
        self.exec(cx);
    }

    /// RX: the doorbell record, once per burst (as mlx5's rx_burst).
    fn store_doorbell(&mut self, cx: &mut StackCx) {
        let s = self.streams[0];
        let tail = cx.nic.ports[s.rx_port].rxq[s.rx_queue].ring.tail();
        cx.rx_doorbell(&mut self.work, Category::Rx, s.rx_port, s.rx_queue, tail);
    }

    /// The batch to the application and out on this core's TX queue; the
    /// batch counts in the core's histogram, except the parent's, which
    /// counts the completions it reads per loop.
    fn deliver(&mut self, cx: &mut StackCx, app: &mut dyn App) {
        let k = self.shared_queue();
        let n = self.batch.len() as u64;
        if !(self.id == 0 && cx.shared[k].design == RxSharing::ParentWorker) {
            self.burst_hist[n as usize] += 1;
        }
        cx.core.account_mut().add_packets(n);
        self.run_app(self.streams[0], cx, app, Ps::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_follow_the_index_bits_and_wrap_to_the_next_lap() {
        let sh = SharedRx::new(RxSharing::Range, 4, 16, 0x1000);
        assert_eq!((sh.area.get(), sh.next.clone()), (4, vec![0, 4, 8, 12]));
        assert_eq!((sh.area_of(5), sh.area_of(16 + 13)), (1, 3));
        assert_eq!((sh.step(5), sh.step(7)), (6, 16 + 4), "leaving area 1 goes to area 1 of the next lap");
        let mut out = Vec::new();
        sh.positions(1, 100, 6, &mut out);
        assert_eq!(out, vec![4, 5, 6, 7, 20, 21]);
        sh.positions(3, 14, 32, &mut out);
        assert_eq!(out, vec![12, 13], "only what is below the bound");
        assert_eq!(sh.taken_prefix(), 0);
        let one = SharedRx::new(RxSharing::Arbitration, 3, 16, 0x1000);
        assert_eq!((one.area.get(), one.next.len()), (16, 1), "arbitration keeps one area");
        assert_eq!((sh.areas_spanned(3, 3), sh.areas_spanned(3, 5), sh.areas_spanned(6, 21), sh.areas_spanned(0, 64)), (0, 2, 4, 4));
    }
}
