//! Drop attribution (SPEC 2.10): a finite-state machine over three bits —
//! RX FIFO full, RX ring full, TX ring full — updated at every frame arrival.
//!
//! A frame dropped at the FIFO is a **TxDrop** if the TX ring is full, or was
//! full in the chain of back-pressure that led here (the core stalled on a
//! full TX ring, so the RX ring filled, so the FIFO overflowed); a
//! **CoreDrop** if the RX ring is full, or was full in this episode and
//! software still starved the DMA engine of descriptors within the last
//! FIFO's worth of bytes it moved (each refill briefly gives the engine
//! descriptors again, but the overflow is still the core's); otherwise a
//! **DmaDrop** (the rings had room: the DMA path could not drain the FIFO).
//! An episode ends at an arrival that finds the FIFO empty with both rings
//! free; it changes class from core to DMA once the engine has moved a
//! whole FIFO's worth of bytes without waiting on software (the backlog
//! software left is gone, what fills the FIFO now is the DMA path). One FSM
//! per NIC port — not global, unlike gem5's model.

use crate::engine::stats::{HasStats, StatSink};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    Dma,
    Core,
    Tx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// No back-pressure from software.
    #[default]
    Normal,
    /// The RX ring was full during this overflow episode.
    CoreChain,
    /// The TX ring was full during this episode.
    TxChain,
}

#[derive(Debug, Default)]
pub struct DropFsm {
    state: State,
    pub dma: u64,
    pub core: u64,
    pub tx: u64,
}

impl DropFsm {
    /// Updates the state at a frame arrival (`fifo_empty`: nothing was
    /// queued before it; `starved_lately`: software left the DMA engine
    /// without descriptors within the last FIFO's worth of bytes); if the
    /// frame was dropped (`fifo_full`), classifies and counts the drop.
    #[inline]
    pub fn on_arrival(&mut self, fifo_full: bool, fifo_empty: bool, rx_ring_full: bool, tx_ring_full: bool, starved_lately: bool) -> Option<DropCause> {
        self.state = match (self.state, tx_ring_full, rx_ring_full, fifo_empty) {
            (_, true, _, _) => State::TxChain,
            (State::TxChain, false, _, false) => State::TxChain,
            (_, false, true, _) => State::CoreChain,
            (_, false, false, true) => State::Normal,
            (State::CoreChain, false, false, false) if !starved_lately => State::Normal,
            (s, false, false, false) => s,
        };
        if !fifo_full {
            return None;
        }
        let cause = match self.state {
            State::TxChain => DropCause::Tx,
            State::CoreChain => DropCause::Core,
            State::Normal => DropCause::Dma,
        };
        match cause {
            DropCause::Dma => self.dma += 1,
            DropCause::Core => self.core += 1,
            DropCause::Tx => self.tx += 1,
        }
        Some(cause)
    }

    pub fn total(&self) -> u64 {
        self.dma + self.core + self.tx
    }
}

impl HasStats for DropFsm {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("dma_drops", self.dma, "Drops with both rings free: the DMA path could not drain the RX FIFO");
        s.count("core_drops", self.core, "Drops while the RX ring was full: software did not keep up");
        s.count("tx_drops", self.tx, "Drops caused by a full TX ring (directly or through the chain it started)");
    }

    fn reset_stats(&mut self) {
        self.dma = 0;
        self.core = 0;
        self.tx = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Arguments: fifo_full, fifo_empty, rx_ring_full, tx_ring_full, starved_lately.

    #[test]
    fn classifies_each_drop_once() {
        let mut f = DropFsm::default();
        assert_eq!(f.on_arrival(false, true, false, false, true), None);
        assert_eq!(f.on_arrival(true, false, false, false, true), Some(DropCause::Dma));
        assert_eq!(f.on_arrival(true, false, true, false, true), Some(DropCause::Core));
        assert_eq!(f.on_arrival(true, false, true, true, true), Some(DropCause::Tx));
        assert_eq!((f.dma, f.core, f.tx, f.total()), (1, 1, 1, 3));
    }

    #[test]
    fn tx_chain_persists_until_the_fifo_drains() {
        let mut f = DropFsm::default();
        f.on_arrival(false, false, false, true, true); // TX ring full: chain starts
        // TX ring has room again, the RX ring is full: still the TX chain.
        assert_eq!(f.on_arrival(true, false, true, false, true), Some(DropCause::Tx));
        assert_eq!(f.on_arrival(true, false, false, false, true), Some(DropCause::Tx));
        // FIFO drained with both rings free: chain over; a later full RX ring is the core's fault.
        f.on_arrival(false, true, false, false, true);
        assert_eq!(f.on_arrival(true, false, true, false, true), Some(DropCause::Core));
    }

    #[test]
    fn core_episode_lasts_until_the_fifo_drains() {
        let mut f = DropFsm::default();
        // The ring fills while the FIFO still has room: the backlog starts.
        assert_eq!(f.on_arrival(false, false, true, false, true), None);
        // Refills come and go; the FIFO never empties, then overflows.
        assert_eq!(f.on_arrival(false, false, false, false, true), None);
        assert_eq!(f.on_arrival(true, false, false, false, true), Some(DropCause::Core));
        // The FIFO drained with both rings free: a new overflow is the DMA path's.
        assert_eq!(f.on_arrival(false, true, false, false, true), None);
        assert_eq!(f.on_arrival(true, false, false, false, true), Some(DropCause::Dma));
    }

    #[test]
    fn a_core_episode_becomes_the_dma_paths_once_software_no_longer_starves_the_engine() {
        let mut f = DropFsm::default();
        // Software let the ring fill: the FIFO overflows on the core's account.
        assert_eq!(f.on_arrival(true, false, true, false, true), Some(DropCause::Core));
        assert_eq!(f.on_arrival(true, false, false, false, true), Some(DropCause::Core));
        // The engine has since moved a FIFO's worth without waiting on
        // software, yet the FIFO stays full: the same episode, now the DMA path's.
        assert_eq!(f.on_arrival(true, false, false, false, false), Some(DropCause::Dma));
        assert_eq!(f.on_arrival(true, false, false, false, false), Some(DropCause::Dma));
        // Software falls behind again: back to the core.
        assert_eq!(f.on_arrival(true, false, true, false, true), Some(DropCause::Core));
        assert_eq!((f.dma, f.core), (2, 3));
    }
}
