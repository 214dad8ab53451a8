//! DMA read latency as the device sees it: from the read's issue to its
//! last byte back, by kind of transfer (descriptors, payload, ...), with
//! the read's size. pcie-bench measures the same span (params.md §2e:
//! `LAT_DMA_RD`, a read issued and its data back at the device), so
//! results can be put beside its table.

use serde_json::{json, Value};

use super::link::Kind;
use crate::engine::stats::StatSink;
use crate::engine::time::Ps;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    reads: u64,
    bytes: u64,
    sum_ps: u64,
    max_ps: Ps,
}

/// Reads and their latency per [`Kind`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadLatency {
    by_kind: [Tally; 4],
}

impl ReadLatency {
    /// A read of `bytes` issued at `issued` whose last byte arrived at `done`.
    #[inline]
    pub fn record(&mut self, kind: Kind, bytes: u32, issued: Ps, done: Ps) {
        let t = &mut self.by_kind[kind as usize];
        let lat = done.saturating_sub(issued);
        t.reads += 1;
        t.bytes += bytes as u64;
        t.sum_ps += lat;
        t.max_ps = t.max_ps.max(lat);
    }

    /// `{"payload": {"reads", "mean_bytes", "mean_ns", "max_ns"}, ...}` for the kinds read.
    pub fn result_json(&self) -> Value {
        let mut o = json!({});
        for k in Kind::ALL {
            let t = self.by_kind[k as usize];
            if t.reads > 0 {
                o[k.name()] = json!({
                    "reads": t.reads,
                    "mean_bytes": t.bytes as f64 / t.reads as f64,
                    "mean_ns": t.sum_ps as f64 / t.reads as f64 / 1e3,
                    "max_ns": t.max_ps as f64 / 1e3,
                });
            }
        }
        o
    }

    pub fn report_stats(&self, s: &mut StatSink<'_>) {
        for k in Kind::ALL {
            let t = self.by_kind[k as usize];
            let mut s = s.scope(&format!("read_latency_{}", k.name()));
            s.count("reads", t.reads, "DMA reads of this kind");
            let mean = if t.reads > 0 { t.sum_ps as f64 / t.reads as f64 } else { 0.0 };
            s.add("mean_ps", mean, "Picosecond", "Mean time from a read's issue to its last byte at the device");
            s.add("max_ps", t.max_ps as f64, "Picosecond", "Longest such time");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_maxima_per_kind() {
        let mut r = ReadLatency::default();
        r.record(Kind::Payload, 64, 1_000, 501_000);
        r.record(Kind::Payload, 1500, 2_000, 902_000);
        r.record(Kind::Descriptor, 16, 0, 400_000);
        let j = r.result_json();
        assert_eq!(j["payload"]["reads"], 2);
        assert_eq!(j["payload"]["mean_ns"], 700.0);
        assert_eq!(j["payload"]["max_ns"], 900.0);
        assert_eq!(j["payload"]["mean_bytes"], 782.0);
        assert_eq!(j["descriptor"]["mean_ns"], 400.0);
        assert!(j.get("doorbell").is_none());
    }
}
