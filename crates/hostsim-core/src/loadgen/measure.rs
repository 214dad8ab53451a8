//! What the load generator measures: frames and bytes sent and received in
//! the measured window, losses, reordering and duplicates by sequence number,
//! and round-trip latency into an HDR histogram.
//!
//! Sequence numbers run across all flows (one counter per port); a frame is
//! reordered when a later one *of its flow* came back first (RFC 4737's
//! reordered packet, per stream as TRex and MoonGen count it), so flows
//! that RSS spreads over queues and that interleave differently on the way
//! back are not reordering.
//!
//! A frame belongs to the measured window when it was *transmitted* inside
//! [warm-up end, duration); its reply counts whenever it arrives (the run
//! drains). Latency comes from the transmit time in the frame's own tag, so a
//! drop or a swap never mis-pairs a sample (the published hardware model
//! paired each reply with the oldest outstanding request). Sequence numbers
//! are tracked in a sliding bitmap of `WINDOW` frames: memory stays flat
//! however long the run.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::engine::time::{Ps, PS_PER_NS};

/// Frames behind the newest one whose duplicates can still be recognised.
pub const WINDOW: u64 = 1 << 22;

pub struct Measure {
    window_start: Ps,
    window_end: Ps,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// Replies to frames sent during warm-up (not measured).
    pub rx_warmup: u64,
    /// Frames without a valid tag, or with a sequence number never sent.
    pub rx_invalid: u64,
    /// Frames received without a tag in trace mode (counted in `rx_packets`
    /// when they arrive after warm-up; no latency).
    pub rx_untagged: u64,
    /// Frames of the measured window still inside the system when the run
    /// ended (set by the system from its frame ledger): neither received
    /// nor lost.
    pub in_flight: u64,
    /// One past the highest sequence number received.
    seq_hi: u64,
    /// Per flow (the tag's 16-bit flow id), one past its highest sequence
    /// number received; indexed by the id, so never out of bounds (512 KiB,
    /// zeroed lazily by the allocator).
    flow_hi: Box<[u64; 1 << 16]>,
    seen: Vec<u64>,
    hist: Histogram<u64>,
    lat_min: u64,
    lat_max: u64,
    lat_mean: f64,
    lat_m2: f64,
    keep: usize,
    samples: Vec<(u64, u64)>,
}

impl Measure {
    pub fn new(window_start: Ps, window_end: Ps, keep_samples: u64) -> Self {
        // 3 significant digits; grows automatically beyond the initial bound.
        let mut hist = Histogram::<u64>::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid histogram bounds");
        hist.auto(true);
        Measure {
            window_start,
            window_end,
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            reordered: 0,
            duplicates: 0,
            rx_warmup: 0,
            rx_invalid: 0,
            rx_untagged: 0,
            in_flight: 0,
            seq_hi: 0,
            flow_hi: vec![0u64; 1 << 16].into_boxed_slice().try_into().expect("a slice of 2^16"),
            seen: vec![0; (WINDOW / 64) as usize],
            hist,
            lat_min: u64::MAX,
            lat_max: 0,
            lat_mean: 0.0,
            lat_m2: 0.0,
            keep: keep_samples.min(crate::loadgen::config::MAX_KEPT_SAMPLES) as usize,
            samples: Vec::new(),
        }
    }

    #[inline]
    pub fn in_window(&self, tx_ps: Ps) -> bool {
        tx_ps >= self.window_start && tx_ps < self.window_end
    }

    #[inline]
    pub fn on_tx(&mut self, tx_ps: Ps, frame_bytes: u32) {
        if self.in_window(tx_ps) {
            self.tx_packets += 1;
            self.tx_bytes += frame_bytes as u64;
        }
    }

    #[inline]
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = seq % WINDOW;
        (&mut self.seen[(i / 64) as usize], 1u64 << (i % 64))
    }

    /// Records the reply to frame `seq` of `flow`, sent at `tx_ps`, received at `now`.
    #[inline]
    pub fn on_rx(&mut self, seq: u64, flow: u16, tx_ps: Ps, now: Ps, frame_bytes: u32) {
        // A reply cannot come back before its request left: a mis-paired one is invalid.
        if tx_ps > now {
            debug_assert!(false, "reply at {now} ps to a request sent at {tx_ps} ps");
            self.rx_invalid += 1;
            return;
        }
        // Sequence bookkeeping over every tagged frame.
        if seq >= self.seq_hi {
            let clear_from = self.seq_hi.max((seq + 1).saturating_sub(WINDOW));
            for s in clear_from..=seq {
                let (w, m) = self.bit(s);
                *w &= !m;
            }
            self.seq_hi = seq + 1;
        }
        let hi = &mut self.flow_hi[flow as usize];
        let reordered = seq < *hi;
        *hi = (*hi).max(seq + 1);
        if seq + WINDOW >= self.seq_hi {
            let (w, m) = self.bit(seq);
            if *w & m != 0 {
                if self.in_window(tx_ps) {
                    self.duplicates += 1;
                }
                return;
            }
            *w |= m;
        }
        if !self.in_window(tx_ps) {
            self.rx_warmup += 1;
            return;
        }
        self.rx_packets += 1;
        self.rx_bytes += frame_bytes as u64;
        self.reordered += reordered as u64;
        let lat = now - tx_ps;
        self.hist.saturating_record(lat.max(1));
        self.lat_min = self.lat_min.min(lat);
        self.lat_max = self.lat_max.max(lat);
        let n = self.latency_count() as f64;
        let d = lat as f64 - self.lat_mean;
        self.lat_mean += d / n;
        self.lat_m2 += d * (lat as f64 - self.lat_mean);
        if self.samples.len() < self.keep {
            self.samples.push((seq, lat));
        }
    }

    /// Replies with a latency sample (tagged ones).
    #[inline]
    pub fn latency_count(&self) -> u64 {
        self.rx_packets - self.rx_untagged
    }

    /// A frame without a tag came back (trace replay): it counts when the
    /// system's ledger says it was sent in the measured window (no latency:
    /// it carries no transmit time).
    #[inline]
    pub fn on_rx_untagged(&mut self, measured: bool, frame_bytes: u32) {
        if measured {
            self.rx_packets += 1;
            self.rx_bytes += frame_bytes as u64;
            self.rx_untagged += 1;
        }
    }

    /// Latency summary in nanoseconds. Min, max, mean and std are exact;
    /// percentiles come from the histogram (3 significant digits), clamped
    /// into [min, max].
    pub fn latency_json(&self) -> Value {
        let ns = |ps: f64| ps / PS_PER_NS as f64;
        let count = self.latency_count();
        if count == 0 {
            return json!({"count": 0, "min": null, "mean": null, "p50": null, "p90": null, "p99": null, "p999": null, "max": null, "std": null});
        }
        let q = |q: f64| ns(self.hist.value_at_quantile(q).clamp(self.lat_min, self.lat_max) as f64);
        let std = if count > 1 { (self.lat_m2 / (count as f64 - 1.0)).sqrt() } else { 0.0 };
        json!({
            "count": count,
            "min": ns(self.lat_min as f64),
            "mean": ns(self.lat_mean),
            "p50": q(0.5),
            "p90": q(0.9),
            "p99": q(0.99),
            "p999": q(0.999),
            "max": ns(self.lat_max as f64),
            "std": ns(std),
        })
    }

    /// The histogram as [value_ns, count] pairs (one per recorded bucket).
    pub fn histogram_json(&self) -> Value {
        let pairs: Vec<Value> = self
            .hist
            .iter_recorded()
            .map(|v| json!([v.value_iterated_to() as f64 / PS_PER_NS as f64, v.count_at_value()]))
            .collect();
        Value::Array(pairs)
    }

    /// Packet and byte counts, and the rates over a window of `w` seconds.
    /// Mean frame (FCS included) of the frames sent in the window, if any was.
    pub fn mean_tx_frame_bytes(&self) -> Option<f64> {
        (self.tx_packets > 0).then(|| self.tx_bytes as f64 / self.tx_packets as f64)
    }

    pub fn counts_json(&self, w: f64) -> Value {
        let m = self;
        json!({
            "tx_packets": m.tx_packets,
            "rx_packets": m.rx_packets,
            "lost_packets": m.lost(),
            "in_flight_packets": m.in_flight,
            "reordered_packets": m.reordered,
            "duplicate_packets": m.duplicates,
            "invalid_packets": m.rx_invalid,
            "tx_bytes": m.tx_bytes,
            "rx_bytes": m.rx_bytes,
            "drop_rate": m.drop_rate(),
            "loss_rate": m.loss_rate(),
            "offered_bps": m.tx_bytes as f64 * 8.0 / w,
            "achieved_bps": m.rx_bytes as f64 * 8.0 / w,
            "offered_pps": m.tx_packets as f64 / w,
            "achieved_pps": m.rx_packets as f64 / w,
        })
    }

    /// Adds another port's measurements (its own sequence numbers): counts,
    /// the histogram, and the exact moments (Chan et al.'s parallel update).
    pub fn merge(&mut self, o: &Measure) {
        let (n1, n2) = (self.latency_count() as f64, o.latency_count() as f64);
        self.tx_packets += o.tx_packets;
        self.tx_bytes += o.tx_bytes;
        self.rx_packets += o.rx_packets;
        self.rx_bytes += o.rx_bytes;
        self.reordered += o.reordered;
        self.duplicates += o.duplicates;
        self.rx_warmup += o.rx_warmup;
        self.rx_invalid += o.rx_invalid;
        self.rx_untagged += o.rx_untagged;
        self.in_flight += o.in_flight;
        if n2 > 0.0 {
            let _ = self.hist.add(&o.hist);
            self.lat_min = self.lat_min.min(o.lat_min);
            self.lat_max = self.lat_max.max(o.lat_max);
            let n = n1 + n2;
            let d = o.lat_mean - self.lat_mean;
            self.lat_mean += d * n2 / n;
            self.lat_m2 += o.lat_m2 + d * d * n1 * n2 / n;
        }
        let room = self.keep.saturating_sub(self.samples.len());
        self.samples.extend(o.samples.iter().take(room));
    }

    /// How many raw samples it keeps at most (`loadgen.keep_samples`).
    pub fn keep_samples(&self) -> u64 {
        self.keep as u64
    }

    pub fn samples(&self) -> &[(u64, u64)] {
        &self.samples
    }

    /// Frames of the measured window that did not come back and are not in flight.
    pub fn lost(&self) -> u64 {
        self.tx_packets.saturating_sub(self.rx_packets).saturating_sub(self.in_flight)
    }

    /// RFC 2544's frame loss rate: frames of the window not received by the
    /// end of the run (dropped, or still in flight), over frames sent.
    pub fn loss_rate(&self) -> f64 {
        if self.tx_packets == 0 {
            0.0
        } else {
            self.tx_packets.saturating_sub(self.rx_packets) as f64 / self.tx_packets as f64
        }
    }

    /// Frames of the window dropped, over frames sent (in-flight ones excluded).
    pub fn drop_rate(&self) -> f64 {
        if self.tx_packets == 0 {
            0.0
        } else {
            self.lost() as f64 / self.tx_packets as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_reorder_duplicates_and_exact_latency() {
        let mut m = Measure::new(0, 1_000_000, 100);
        for s in 0..10 {
            m.on_tx(s * 10, 64);
        }
        // Replies: 0, 2, 1 (reordered), 1 (duplicate), 4, 5; 3 and 6..9 lost.
        for (s, now) in [(0u64, 1000u64), (2, 1020), (1, 1030), (1, 1040), (4, 1050), (5, 1060)] {
            m.on_rx(s, 0, s * 10, now, 64);
        }
        assert_eq!(m.tx_packets, 10);
        assert_eq!(m.rx_packets, 5);
        assert_eq!(m.reordered, 1);
        assert_eq!(m.duplicates, 1);
        assert_eq!(m.lost(), 5);
        assert_eq!(m.samples(), &[(0, 1000), (2, 1000), (1, 1020), (4, 1010), (5, 1010)]);
        let l = m.latency_json();
        assert_eq!(l["min"], 1.0);
        assert_eq!(l["max"], 1.02);
    }

    #[test]
    fn flows_that_interleave_differently_on_the_way_back_are_not_reordered() {
        // Two flows in turn (seq 0, 2, 4 of flow 0; 1, 3, 5 of flow 1); flow 1 comes back first.
        let mut m = Measure::new(0, 1_000_000, 0);
        for s in 0..6 {
            m.on_tx(s * 10, 64);
        }
        for (s, flow) in [(1u64, 1u16), (3, 1), (5, 1), (0, 0), (2, 0), (4, 0)] {
            m.on_rx(s, flow, s * 10, 1000 + s, 64);
        }
        assert_eq!((m.rx_packets, m.reordered), (6, 0));
        // Within a flow it is: flow 0's 8 after its 10.
        for (s, flow) in [(10u64, 0u16), (8, 0)] {
            m.on_tx(s * 10, 64);
            m.on_rx(s, flow, s * 10, 2000, 64);
        }
        assert_eq!(m.reordered, 1);
    }

    #[test]
    fn warmup_replies_are_not_measured() {
        let mut m = Measure::new(100, 200, 0);
        m.on_tx(50, 64);
        m.on_tx(150, 64);
        m.on_rx(0, 0, 50, 300, 64);
        m.on_rx(1, 0, 150, 300, 64);
        assert_eq!((m.tx_packets, m.rx_packets, m.rx_warmup), (1, 1, 1));
        assert_eq!(m.drop_rate(), 0.0);
    }

    #[test]
    fn untagged_replies_count_when_sent_in_the_window() {
        let mut m = Measure::new(100, 200, 0);
        m.on_tx(150, 64);
        m.on_rx_untagged(false, 64);
        m.on_rx_untagged(true, 128);
        assert_eq!((m.rx_packets, m.rx_untagged, m.rx_bytes, m.lost()), (1, 1, 128, 0));
        assert_eq!((m.latency_json()["count"].as_u64(), m.latency_json()["min"].is_null()), (Some(0), true));
        m.on_rx(0, 0, 150, 160, 64);
        m.on_tx(160, 64);
        m.on_rx(1, 0, 160, 190, 64);
        let l = m.latency_json();
        assert_eq!((l["count"].as_u64(), l["mean"].as_f64()), (Some(2), Some(0.02)));
    }

    #[test]
    fn merged_ports_give_the_moments_of_all_samples() {
        let (mut a, mut b) = (Measure::new(0, 1000, 0), Measure::new(0, 1000, 0));
        for (m, lats) in [(&mut a, [10u64, 20, 30]), (&mut b, [40, 50, 60])] {
            for (s, l) in lats.iter().enumerate() {
                m.on_tx(s as u64, 64);
                m.on_rx(s as u64, 0, s as u64, s as u64 + l, 64);
            }
        }
        a.merge(&b);
        assert_eq!((a.tx_packets, a.rx_packets, a.latency_count()), (6, 6, 6));
        let l = a.latency_json();
        // Mean 35 ps, sample std of 10..60 step 10 = 18.708 ps.
        assert!((l["mean"].as_f64().unwrap() - 0.035).abs() < 1e-12);
        assert!((l["std"].as_f64().unwrap() - 0.018708286933869708).abs() < 1e-12, "{l}");
        assert_eq!((l["min"].as_f64(), l["max"].as_f64()), (Some(0.01), Some(0.06)));
    }

    #[test]
    fn window_slides_without_growing() {
        let mut m = Measure::new(0, u64::MAX, 0);
        for s in (0..3 * WINDOW).step_by(1000) {
            m.on_tx(s, 64);
            m.on_rx(s, 0, s, s + 5, 64);
        }
        // A duplicate far behind the window can no longer be recognised: counted once more.
        m.on_rx(0, 0, 0, 10, 64);
        assert_eq!(m.duplicates, 0);
        assert_eq!(m.seen.len() as u64, WINDOW / 64);
        // A recent duplicate is recognised.
        let last = (3 * WINDOW - 1) / 1000 * 1000;
        m.on_rx(last, 0, last, last + 9, 64);
        assert_eq!(m.duplicates, 1);
    }
}
