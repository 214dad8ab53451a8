//! The reference device under test: a single server with a finite queue that
//! returns every frame with its MAC addresses swapped.
//!
//! It exists to validate the harness against queueing theory (D/D/1/N and
//! M/M/1/N limits, exact latencies) and stays as a documented device. A frame
//! that arrives when `queue_frames` frames are already held (the one in
//! service included) is dropped. Service times are fixed or exponential.
//!
//! Two fault injectors, in the spirit of smoltcp's test devices, exercise the
//! load generator's matching: `drop_every` drops every N-th arriving frame,
//! `swap_pairs` returns served frames in swapped pairs.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::Ps;
use crate::engine::SimRng;
use crate::framebuf::{Fate, FrameId, FramePool};
use crate::wire::ethernet;

const STREAM_SERVICE: u64 = 10;

pub struct Reflector {
    cfg: ReflectorConfig,
    rng: SimRng,
    /// Held frames; the head is in service while `busy`.
    queue: VecDeque<FrameId>,
    busy: bool,
    /// First frame of a pair, served and waiting for its partner (`swap_pairs`).
    held: Option<FrameId>,
    arrivals: u64,
    // statistics
    rx_packets: u64,
    tx_packets: u64,
    queue_drops: u64,
    fault_drops: u64,
    max_occupancy: u64,
    busy_ps: Ps,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ServiceDist {
    Fixed,
    Exponential,
}

/// The reference device: a single server with a finite queue that returns
/// every frame with swapped MACs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectorConfig {
    /// Service-time distribution: fixed or exponential.
    pub service: ServiceDist,
    /// Mean service time per frame (ps).
    pub service_time_ps: u64,
    /// Frames the device holds at once, the one in service included (≥ 1).
    #[schemars(range(min = 1))]
    pub queue_frames: u32,
    /// Fault injection: drop every N-th arriving frame (0 = never).
    #[serde(default)]
    pub drop_every: u64,
    /// Fault injection: return frames in swapped pairs (2nd before 1st).
    #[serde(default)]
    pub swap_pairs: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            service: ServiceDist::Fixed,
            service_time_ps: 100_000,
            queue_frames: 1024,
            drop_every: 0,
            swap_pairs: false,
        }
    }
}

/// What happened to an arriving frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Service starts now; it ends at the given time.
    Serving(Ps),
    Queued,
    Dropped,
}

impl Reflector {
    pub fn new(cfg: &ReflectorConfig, seed: u64) -> Self {
        Reflector {
            cfg: cfg.clone(),
            rng: SimRng::new(seed, STREAM_SERVICE),
            queue: VecDeque::with_capacity(cfg.queue_frames.min(1 << 16) as usize),
            busy: false,
            held: None,
            arrivals: 0,
            rx_packets: 0,
            tx_packets: 0,
            queue_drops: 0,
            fault_drops: 0,
            max_occupancy: 0,
            busy_ps: 0,
        }
    }

    #[inline]
    fn service_time(&mut self) -> Ps {
        let s = match self.cfg.service {
            ServiceDist::Fixed => self.cfg.service_time_ps,
            ServiceDist::Exponential => self.rng.exp(self.cfg.service_time_ps as f64).round() as Ps,
        };
        self.busy_ps += s;
        s
    }

    /// A frame arrived (whole) at `now`.
    #[inline]
    pub fn arrive(&mut self, pool: &mut FramePool, id: FrameId, now: Ps) -> Arrival {
        self.arrivals += 1;
        self.rx_packets += 1;
        if self.cfg.drop_every != 0 && self.arrivals % self.cfg.drop_every == 0 {
            self.fault_drops += 1;
            pool.end(id, Fate::Fault);
            return Arrival::Dropped;
        }
        if self.queue.len() >= self.cfg.queue_frames as usize {
            self.queue_drops += 1;
            pool.end(id, Fate::DeviceQueue);
            return Arrival::Dropped;
        }
        self.queue.push_back(id);
        self.max_occupancy = self.max_occupancy.max(self.queue.len() as u64);
        if self.busy {
            Arrival::Queued
        } else {
            self.busy = true;
            Arrival::Serving(now + self.service_time())
        }
    }

    /// Service of the head frame ended at `now`. Pushes the frames to send
    /// back (in order) into `out`, and returns when the next service ends.
    #[inline]
    pub fn complete(&mut self, pool: &mut FramePool, now: Ps, out: &mut Vec<FrameId>) -> Option<Ps> {
        if let Some(id) = self.queue.pop_front() {
            ethernet::Packet::new_unchecked(pool.data_mut(id)).swap_macs();
            if self.cfg.swap_pairs {
                match self.held.take() {
                    None => self.held = Some(id),
                    Some(first) => {
                        out.push(id);
                        out.push(first);
                    }
                }
            } else {
                out.push(id);
            }
        }
        self.tx_packets += out.len() as u64;
        if self.queue.is_empty() {
            self.busy = false;
            None
        } else {
            Some(now + self.service_time())
        }
    }

    pub fn result_json(&self) -> Value {
        json!({
            "rx_packets": self.rx_packets,
            "tx_packets": self.tx_packets,
            "queue_drops": self.queue_drops,
            "fault_drops": self.fault_drops,
            "max_occupancy": self.max_occupancy,
            "busy_ps": self.busy_ps,
        })
    }
}

impl HasStats for Reflector {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("rx_packets", self.rx_packets, "Frames that arrived");
        s.count("tx_packets", self.tx_packets, "Frames returned");
        s.count("queue_drops", self.queue_drops, "Frames dropped because the queue was full");
        s.count("fault_drops", self.fault_drops, "Frames dropped by the drop_every fault injector");
        s.count("max_occupancy", self.max_occupancy, "Most frames held at once");
        s.add("busy_ps", self.busy_ps as f64, "Picosecond", "Time spent serving frames");
    }

    fn reset_stats(&mut self) {
        self.rx_packets = 0;
        self.tx_packets = 0;
        self.queue_drops = 0;
        self.fault_drops = 0;
        self.max_occupancy = self.queue.len() as u64;
        self.busy_ps = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(queue_frames: u32) -> ReflectorConfig {
        ReflectorConfig { service: ServiceDist::Fixed, service_time_ps: 100, queue_frames, drop_every: 0, swap_pairs: false }
    }

    #[test]
    fn finite_queue_drops_when_full() {
        let mut pool = FramePool::new(64);
        let mut r = Reflector::new(&cfg(2), 1);
        let ids: Vec<_> = (0..3).map(|_| pool.alloc(64)).collect();
        assert_eq!(r.arrive(&mut pool, ids[0], 0), Arrival::Serving(100));
        assert_eq!(r.arrive(&mut pool, ids[1], 10), Arrival::Queued);
        assert_eq!(r.arrive(&mut pool, ids[2], 20), Arrival::Dropped);
        let mut out = vec![];
        assert_eq!(r.complete(&mut pool, 100, &mut out), Some(200));
        assert_eq!(out, vec![ids[0]]);
        out.clear();
        assert_eq!(r.complete(&mut pool, 200, &mut out), None);
        assert_eq!(out, vec![ids[1]]);
        assert_eq!(r.queue_drops, 1);
    }

    #[test]
    fn swapped_pairs_and_macswap() {
        let mut pool = FramePool::new(64);
        let mut c = cfg(8);
        c.swap_pairs = true;
        let mut r = Reflector::new(&c, 1);
        let a = pool.alloc(64);
        pool.data_mut(a)[0] = 0xaa;
        let b = pool.alloc(64);
        r.arrive(&mut pool, a, 0);
        r.arrive(&mut pool, b, 0);
        let mut out = vec![];
        r.complete(&mut pool, 100, &mut out);
        assert!(out.is_empty());
        r.complete(&mut pool, 200, &mut out);
        assert_eq!(out, vec![b, a]);
        assert_eq!(pool.data(a)[6], 0xaa, "MACs swapped");
    }
}
