//! The statistics registry. Components keep counters as plain integer fields
//! (cheap on the hot path) and, when asked, report each one with a dotted
//! name, a unit and a description, gem5-style (`system.reflector.queue_drops`).
//! Resetting at the end of warm-up is the component's `reset_stats`.

use serde::Serialize;

/// A count stays an integer in JSON and stats.txt; anything else is a float.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
#[serde(untagged)]
pub enum StatValue {
    Count(u64),
    Scalar(f64),
}

impl StatValue {
    pub fn as_f64(self) -> f64 {
        match self {
            StatValue::Count(c) => c as f64,
            StatValue::Scalar(x) => x,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stat {
    pub name: String,
    pub value: StatValue,
    pub unit: &'static str,
    pub desc: &'static str,
}

/// Collects stats under a dotted prefix.
pub struct StatSink<'a> {
    prefix: String,
    out: &'a mut Vec<Stat>,
}

impl<'a> StatSink<'a> {
    pub fn new(out: &'a mut Vec<Stat>) -> Self {
        StatSink { prefix: String::new(), out }
    }

    /// A sink that prefixes every name with `name.`.
    pub fn scope(&mut self, name: &str) -> StatSink<'_> {
        let prefix = if self.prefix.is_empty() { name.to_string() } else { format!("{}.{}", self.prefix, name) };
        StatSink { prefix, out: self.out }
    }

    fn push(&mut self, name: &str, value: StatValue, unit: &'static str, desc: &'static str) {
        let name = if self.prefix.is_empty() { name.to_string() } else { format!("{}.{}", self.prefix, name) };
        self.out.push(Stat { name, value, unit, desc });
    }

    pub fn add(&mut self, name: &str, value: f64, unit: &'static str, desc: &'static str) {
        self.push(name, StatValue::Scalar(value), unit, desc);
    }

    pub fn count(&mut self, name: &str, value: u64, desc: &'static str) {
        self.push(name, StatValue::Count(value), "Count", desc);
    }
}

/// A component with statistics.
pub trait HasStats {
    fn report_stats(&self, sink: &mut StatSink<'_>);
    fn reset_stats(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names() {
        let mut v = vec![];
        let mut root = StatSink::new(&mut v);
        let mut sys = root.scope("system");
        sys.scope("nic0").count("rx_packets", 3, "frames received");
        sys.add("util", 0.5, "Ratio", "busy fraction");
        assert_eq!(v[0].name, "system.nic0.rx_packets");
        assert_eq!(v[0].value, StatValue::Count(3));
        assert_eq!(serde_json::to_string(&v[0].value).unwrap(), "3");
        assert_eq!(v[1].name, "system.util");
    }
}
