//! Reads that take their DRAM read's completion later: the read waits in
//! the controller's read queue ([`read_queue`](super::read_queue)) and the
//! requester asks for its completion when it needs it: a core's loads in a
//! unit held to the event loop (`sim.core_horizon`, `cpu/core.rs`), a
//! NIC's payload reads made at the memory side (`sim.dma_at_memory_time`,
//! `nic/port.rs`). Everything else about the read (the caches it fills,
//! the coherence it does) happens when it is made, as for any access.

use crate::engine::time::Ps;

use super::hierarchy::{Access, MemSystem};
use super::read_queue::Ticket;

impl MemSystem {
    /// A load of `core` at `now` whose DRAM read, if it has one, may wait in
    /// the read queue: then its ticket comes with it, and its latency is
    /// [`take_read`](Self::take_read)'s completion less `now`.
    pub fn load_later(&mut self, core: usize, addr: u64, now: Ps) -> (Access, Option<Ticket>) {
        self.defer = true;
        let a = self.core_access(core, addr, false, now);
        self.defer = false;
        (a, self.deferred.pop())
    }

    /// A NIC's read of `len` bytes at `addr` at `now` whose lines from
    /// DRAM may wait in the read queue: returns when the lines not queued
    /// are there, and puts the queued lines' tickets in `tickets`.
    pub fn device_read_later(&mut self, addr: u64, len: u32, now: Ps, tickets: &mut Vec<Ticket>) -> Ps {
        self.defer = true;
        let done = self.device_read(addr, len, now);
        self.defer = false;
        tickets.append(&mut self.deferred);
        done
    }

    /// Has the controller picked this queued read (its completion known)?
    #[inline]
    pub fn read_ready(&self, ticket: Ticket) -> bool {
        self.dram.read_done(ticket).is_some()
    }

    /// Does the memory have a DRAM read queue?
    pub fn has_read_queue(&self) -> bool {
        self.dram.has_read_queue()
    }

    /// A queued read's completion, once the controller has picked it; the
    /// ticket is then given back. With `force`, the controller makes its
    /// picks ahead of the event loop until this one is made (a requester
    /// that cannot wait for the event).
    pub fn take_read(&mut self, ticket: Ticket, force: bool) -> Option<Ps> {
        if force {
            while self.dram.read_done(ticket).is_none() {
                let Some(t) = self.dram.next_decision() else { break };
                self.dram.decide(t);
                self.dram.count_forced();
            }
        }
        let done = self.dram.read_done(ticket)?;
        self.dram.release_read(ticket);
        Some(done)
    }

    /// When the DRAM controller next picks a queued read.
    pub fn next_pick(&self) -> Option<Ps> {
        self.dram.next_decision()
    }

    /// The DRAM controller's picks due by `now`.
    pub fn pick_reads(&mut self, now: Ps) {
        self.dram.decide(now);
    }
}
