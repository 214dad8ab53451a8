//! A point-to-point Ethernet link, one direction (a full-duplex link is two).
//!
//! A frame of L bytes (FCS included) occupies the wire for (L + 20) × 8 / rate
//! — the 20 B are preamble, start delimiter and inter-frame gap (IEEE 802.3;
//! params.md §1) — and arrives, whole, one propagation delay after its last
//! bit left. Transmission is arithmetic: the link keeps the time it becomes
//! free and a FIFO delay line of frames in flight; only the head of the line
//! needs an event, so the event queue stays small however long the cable.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::wire::ethernet::MAX_FRAME_BYTES;
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{bits_to_ps, Ps};
use crate::framebuf::FrameId;

/// A full-duplex link between a generator port and a host port.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Line rate of each direction (bits per second).
    pub rate_bps: u64,
    /// One-way propagation delay (ps).
    pub propagation_ps: u64,
}

impl Default for LinkConfig {
    /// 100 GbE, and 200 µs one way: the load generator's default link
    /// (estimate: a long enough cable that the reply path is visible).
    fn default() -> Self {
        LinkConfig { rate_bps: 100_000_000_000, propagation_ps: 200_000_000 }
    }
}

/// Bytes on the wire per frame beyond the frame itself.
pub const WIRE_OVERHEAD_BYTES: u32 = 20;

pub struct Link {
    rate_bps: u64,
    propagation_ps: Ps,
    /// Serialization time by frame length, computed once.
    ser_ps: Vec<Ps>,
    free_at: Ps,
    line: VecDeque<(Ps, FrameId)>,
    // statistics
    frames: u64,
    bytes: u64,
    busy_ps: Ps,
}

/// When a frame sent with [`Link::send`] starts and arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub start: Ps,
    pub arrival: Ps,
    /// The frame is now the head of the delay line: schedule a delivery at `arrival`.
    pub is_head: bool,
}

impl Link {
    pub fn new(rate_bps: u64, propagation_ps: Ps) -> Self {
        let ser_ps = (0..=MAX_FRAME_BYTES as u64).map(|l| bits_to_ps((l + WIRE_OVERHEAD_BYTES as u64) * 8, rate_bps)).collect();
        Link { rate_bps, propagation_ps, ser_ps, free_at: 0, line: VecDeque::new(), frames: 0, bytes: 0, busy_ps: 0 }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    pub fn propagation_ps(&self) -> Ps {
        self.propagation_ps
    }

    /// Wire time of a frame of `frame_bytes` (FCS included).
    #[inline]
    pub fn serialization_ps(&self, frame_bytes: u32) -> Ps {
        self.ser_ps[frame_bytes as usize]
    }

    /// The earliest time a new frame could start.
    #[inline]
    pub fn free_at(&self) -> Ps {
        self.free_at
    }

    /// Starts sending a frame no earlier than `now` (later if the wire is busy).
    #[inline]
    pub fn send(&mut self, now: Ps, id: FrameId, frame_bytes: u32) -> Sent {
        let (start, arrival) = self.transmit(now, frame_bytes);
        let is_head = self.line.is_empty();
        self.line.push_back((arrival, id));
        Sent { start, arrival, is_head }
    }

    /// Puts a frame on the wire like [`Link::send`] but keeps no delay line:
    /// for a receiver that takes each frame at its arrival time without an
    /// event. Returns (start, arrival).
    #[inline]
    pub fn transmit(&mut self, now: Ps, frame_bytes: u32) -> (Ps, Ps) {
        let start = now.max(self.free_at);
        let ser = self.ser_ps[frame_bytes as usize];
        self.free_at = start + ser;
        self.frames += 1;
        self.bytes += frame_bytes as u64;
        self.busy_ps += ser;
        (start, self.free_at + self.propagation_ps)
    }

    /// Removes the head frame (due now); returns it and the next head's arrival.
    #[inline]
    pub fn deliver(&mut self) -> Option<(FrameId, Option<Ps>)> {
        let (_, id) = self.line.pop_front()?;
        Some((id, self.line.front().map(|&(t, _)| t)))
    }

    pub fn in_flight(&self) -> usize {
        self.line.len()
    }
}

impl HasStats for Link {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("frames", self.frames, "Frames put on the wire");
        s.add("bytes", self.bytes as f64, "Byte", "Frame bytes put on the wire (FCS included)");
        s.add("busy_ps", self.busy_ps as f64, "Picosecond", "Time spent serializing (preamble and gap included)");
    }

    fn reset_stats(&mut self) {
        self.frames = 0;
        self.bytes = 0;
        self.busy_ps = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_frames_queue_on_the_wire() {
        let mut l = Link::new(100_000_000_000, 1_000_000);
        assert_eq!(l.serialization_ps(64), 6_720);
        assert_eq!(l.serialization_ps(1518), 123_040);
        let a = l.send(0, 0, 64);
        assert_eq!(a, Sent { start: 0, arrival: 6_720 + 1_000_000, is_head: true });
        let b = l.send(100, 1, 64); // wire still busy until 6720
        assert_eq!(b, Sent { start: 6_720, arrival: 13_440 + 1_000_000, is_head: false });
        assert_eq!(l.deliver(), Some((0, Some(13_440 + 1_000_000))));
        assert_eq!(l.deliver(), Some((1, None)));
        assert_eq!(l.deliver(), None);
    }

    #[test]
    fn line_rates() {
        // params.md §1: 64 B → 148.810 Mpps at 100 GbE, 14.881 at 10 GbE; 1518 B → 8.127 at 100 GbE.
        let pps = |rate: u64, len: u32| 1e12 / Link::new(rate, 0).serialization_ps(len) as f64 / 1e6;
        assert!((pps(100_000_000_000, 64) - 148.8095).abs() < 1e-3);
        assert!((pps(100_000_000_000, 1518) - 8.1274).abs() < 1e-3);
        assert!((pps(10_000_000_000, 64) - 14.8810).abs() < 1e-3);
    }
}
