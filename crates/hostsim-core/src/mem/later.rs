//! Core loads that take their DRAM read's completion later: the read waits
//! in the controller's read queue ([`read_queue`](super::read_queue)) and
//! the core asks for its completion when it needs it (`cpu/core.rs`, a
//! unit held to the event loop with `sim.core_horizon`). Everything else
//! about the load (the caches it fills, the coherence it does) happens
//! when it is made, as for any access.

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
        (a, self.deferred.take())
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
