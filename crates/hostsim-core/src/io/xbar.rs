//! One layer of gem5's non-coherent crossbar (`src/mem/noncoherent_xbar.cc`,
//! `src/mem/xbar.cc`): a server that a packet holds, from the crossbar's
//! next clock edge, for one cycle plus ceil(bytes / width) cycles when it
//! carries data (`calcPacketTiming` and `clockEdge(Cycles(1)) +
//! payloadDelay`). The packet's header reaches the far side a fixed number
//! of cycles after the layer takes it (frontend + forward latency for a
//! request, response latency for a response); as in gem5, the payload
//! cycles bound throughput but do not delay the header.
//!
//! Busy periods are booked into gaps ([`Timeline`]), so a packet booked
//! late in call order still takes an earlier idle stretch.

use crate::engine::time::Ps;
use crate::engine::timeline::Timeline;

/// Rounds `t` up to the next edge of a clock of period `cycle` (ps).
#[inline]
pub fn edge(t: Ps, cycle: Ps) -> Ps {
    t.div_ceil(cycle) * cycle
}

/// Counters of one layer since the last reset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerStats {
    /// Data bytes carried (packets without data count none).
    pub bytes: u64,
    pub packets: u64,
    /// Time the layer was held.
    pub busy_ps: Ps,
    /// Earliest start and latest end of the periods booked since the reset.
    pub first_ps: Ps,
    pub last_ps: Ps,
}

impl LayerStats {
    /// Busy time over the window, or over the span of the periods booked
    /// if that is longer (a booking may run past the window's end): the
    /// periods are disjoint, so this is never above 1.
    pub fn util(&self, window_ps: Ps) -> f64 {
        let span = window_ps.max(self.last_ps.saturating_sub(self.first_ps));
        if span == 0 { 0.0 } else { self.busy_ps as f64 / span as f64 }
    }
}

pub struct Layer {
    line: Timeline,
    cycle: Ps,
    width: u32,
    pub stats: LayerStats,
}

impl Layer {
    /// Leaves out of the busy time what was booked after the run's `end`.
    pub fn clip_busy_at(&mut self, end: Ps) {
        self.stats.busy_ps = self.stats.busy_ps.saturating_sub(self.line.busy_after(end));
    }

    pub fn new(cycle: Ps, width_bytes: u32) -> Self {
        Layer { line: Timeline::new(), cycle, width: width_bytes.max(1), stats: LayerStats { first_ps: Ps::MAX, ..Default::default() } }
    }

    /// Cycles a packet of `data` bytes holds the layer.
    #[inline]
    pub fn hold_cycles(&self, data: u32) -> Ps {
        1 + data.div_ceil(self.width) as Ps
    }

    /// A packet with `data` bytes ready at `ready`: returns when the layer
    /// takes it (a clock edge).
    pub fn send(&mut self, ready: Ps, data: u32) -> Ps {
        let dur = self.hold_cycles(data) * self.cycle;
        let start = self.line.book(edge(ready, self.cycle), dur);
        let s = &mut self.stats;
        s.bytes += data as u64;
        s.packets += 1;
        s.busy_ps += dur;
        s.first_ps = s.first_ps.min(start);
        s.last_ps = s.last_ps.max(start + dur);
        start
    }

    /// The caller's current time (forgets old busy periods).
    pub fn advance(&mut self, now: Ps) {
        self.line.advance(now);
    }

    pub fn reset_stats(&mut self) {
        self.stats = LayerStats { first_ps: Ps::MAX, ..Default::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_holds_one_cycle_plus_its_data_cycles_from_the_next_edge() {
        let mut l = Layer::new(1_000, 16);
        assert_eq!(l.hold_cycles(0), 1);
        assert_eq!(l.hold_cycles(64), 5);
        assert_eq!(l.hold_cycles(4), 2);
        // Ready between edges: taken at the next one.
        assert_eq!(l.send(1_500, 64), 2_000);
        // Busy [2000, 7000): the next waits.
        assert_eq!(l.send(2_000, 0), 7_000);
        // A gap before is still used by a later call.
        let mut g = Layer::new(1_000, 16);
        assert_eq!(g.send(10_000, 64), 10_000);
        assert_eq!(g.send(0, 64), 0);
        assert_eq!(g.stats.busy_ps, 10_000);
        assert_eq!((g.stats.bytes, g.stats.packets), (128, 2));
        assert!((g.stats.util(15_000) - 10.0 / 15.0).abs() < 1e-12);
        // Bookings past the window: the span counts, never above 1.
        assert!(g.stats.util(1_000) <= 1.0);
    }
}
