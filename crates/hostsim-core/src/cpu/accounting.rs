//! Cycle accounting: every picosecond a core spends is charged to one
//! [`Category`] of work, so a per-packet cycle breakdown (the figure DPDK and
//! kernel profiles report, params.md §6b and §7b) comes out of any run.
//!
//! The account keeps time in integer picoseconds per category — exact, so the
//! categories always sum to the elapsed time — and converts to cycles at the
//! core's frequency when asked (cycles = ps × freq_hz / 10¹²). Instructions are
//! counted per category too, for IPC.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_S};

/// What a core was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Receive path of the driver (rx_burst, descriptor reads and refills).
    Rx,
    /// Transmit path of the driver (tx_burst, descriptor writes, completions).
    Tx,
    /// Buffer allocation and freeing (mempool get/put, per-core caches).
    Mempool,
    /// The application's own processing (forwarding, touching, rxptx spin).
    App,
    /// Polling that found nothing (empty polls) and waiting.
    Idle,
    /// Kernel socket-buffer allocation, setup and freeing.
    Skb,
    /// System-call entry and exit.
    Syscall,
    /// Hardware interrupts and NAPI poll overhead (kernel stack).
    Irq,
    /// IP/UDP protocol processing and socket queues (kernel stack).
    Proto,
    /// Wake-ups and context switches (kernel stack).
    Sched,
    /// The queueing discipline and its lock (kernel stack).
    Qdisc,
    /// Copies between kernel and user buffers.
    Copy,
    /// Enqueues and dequeues on the rings between cores (pipeline mode).
    Ring,
    /// Claiming receive-queue entries with compare-and-swap (several cores on one queue).
    Cas,
    /// Synchronising with other cores on one receive queue: publishing and
    /// reading how far each has got (parent/worker, SPEC 2.11).
    Join,
    /// The per-entry work on a receive queue's software ring and work queue:
    /// taking the mbuf of an entry and posting a fresh buffer in its place.
    Buffer,
    /// Completion handling of a transmit that finishes later: zero-copy
    /// notifications, polls of a copy engine's or a card transfer's status.
    Completion,
}

impl Category {
    pub const COUNT: usize = 17;
    pub const ALL: [Category; Category::COUNT] = [
        Category::Rx,
        Category::Tx,
        Category::Mempool,
        Category::App,
        Category::Idle,
        Category::Skb,
        Category::Syscall,
        Category::Irq,
        Category::Proto,
        Category::Sched,
        Category::Qdisc,
        Category::Copy,
        Category::Ring,
        Category::Cas,
        Category::Join,
        Category::Buffer,
        Category::Completion,
    ];

    /// Lower-case name used in stats and JSON (`rx`, `mempool`, …).
    pub fn name(self) -> &'static str {
        match self {
            Category::Rx => "rx",
            Category::Tx => "tx",
            Category::Mempool => "mempool",
            Category::App => "app",
            Category::Idle => "idle",
            Category::Skb => "skb",
            Category::Syscall => "syscall",
            Category::Irq => "irq",
            Category::Proto => "proto",
            Category::Sched => "sched",
            Category::Qdisc => "qdisc",
            Category::Copy => "copy",
            Category::Ring => "ring",
            Category::Cas => "cas",
            Category::Join => "join",
            Category::Buffer => "buffer",
            Category::Completion => "completion",
        }
    }

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Cycles per packet, per category and in total.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CyclesPerPacket {
    pub per_category: [f64; Category::COUNT],
    pub total: f64,
}

impl CyclesPerPacket {
    pub fn get(&self, cat: Category) -> f64 {
        self.per_category[cat.index()]
    }

    /// `{"rx": …, "tx": …, …, "total": …}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for c in Category::ALL {
            m.insert(c.name().to_string(), json!(self.get(c)));
        }
        m.insert("total".to_string(), json!(self.total));
        Value::Object(m)
    }
}

/// Time, and so cycles, and instructions per category for one core.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleAccount {
    freq_hz: u64,
    time_ps: [Ps; Category::COUNT],
    instructions: [u64; Category::COUNT],
    packets: u64,
}

impl CycleAccount {
    /// An empty account for a core clocked at `freq_hz` (> 0).
    pub fn new(freq_hz: u64) -> Self {
        debug_assert!(freq_hz > 0);
        CycleAccount { freq_hz, time_ps: [0; Category::COUNT], instructions: [0; Category::COUNT], packets: 0 }
    }

    pub fn freq_hz(&self) -> u64 {
        self.freq_hz
    }

    /// Charges `time_ps` of core time and `instructions` to `cat`.
    #[inline]
    pub fn charge(&mut self, cat: Category, time_ps: Ps, instructions: u64) {
        self.time_ps[cat.index()] += time_ps;
        self.instructions[cat.index()] += instructions;
    }

    /// Counts packets processed (the divisor of [`Self::result_json`]'s per-packet figures).
    #[inline]
    pub fn add_packets(&mut self, n: u64) {
        self.packets += n;
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn time_ps(&self, cat: Category) -> Ps {
        self.time_ps[cat.index()]
    }

    pub fn total_ps(&self) -> Ps {
        self.time_ps.iter().sum()
    }

    fn ps_to_cycles(&self, ps: Ps) -> f64 {
        ps as f64 * self.freq_hz as f64 / PS_PER_S as f64
    }

    /// Cycles charged to `cat` (time × frequency; fractional when a stall is not a whole cycle).
    pub fn cycles(&self, cat: Category) -> f64 {
        self.ps_to_cycles(self.time_ps(cat))
    }

    pub fn total_cycles(&self) -> f64 {
        self.ps_to_cycles(self.total_ps())
    }

    pub fn instructions(&self, cat: Category) -> u64 {
        self.instructions[cat.index()]
    }

    pub fn total_instructions(&self) -> u64 {
        self.instructions.iter().sum()
    }

    /// Cycles per packet for `packets` packets; all zeros when `packets` is 0.
    pub fn cycles_per_packet(&self, packets: u64) -> CyclesPerPacket {
        let mut per_category = [0.0; Category::COUNT];
        if packets == 0 {
            return CyclesPerPacket { per_category, total: 0.0 };
        }
        for c in Category::ALL {
            per_category[c.index()] = self.cycles(c) / packets as f64;
        }
        CyclesPerPacket { per_category, total: self.total_cycles() / packets as f64 }
    }

    /// `{"packets", "cycles": {cat…, total}, "instructions": {cat…, total}, "cycles_per_packet": {cat…, total}}`.
    pub fn result_json(&self) -> Value {
        let mut cycles = Map::new();
        let mut instr = Map::new();
        for c in Category::ALL {
            cycles.insert(c.name().to_string(), json!(self.cycles(c)));
            instr.insert(c.name().to_string(), json!(self.instructions(c)));
        }
        cycles.insert("total".to_string(), json!(self.total_cycles()));
        instr.insert("total".to_string(), json!(self.total_instructions()));
        json!({
            "packets": self.packets,
            "cycles": Value::Object(cycles),
            "instructions": Value::Object(instr),
            "cycles_per_packet": self.cycles_per_packet(self.packets).to_json(),
        })
    }

    /// Zeroes every category and the packet count (the frequency stays).
    pub fn reset(&mut self) {
        self.time_ps = [0; Category::COUNT];
        self.instructions = [0; Category::COUNT];
        self.packets = 0;
    }
}

impl HasStats for CycleAccount {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        {
            let mut cy = s.scope("cycles");
            for c in Category::ALL {
                cy.add(c.name(), self.cycles(c), "Cycle", "Core cycles spent in this category");
            }
            cy.add("total", self.total_cycles(), "Cycle", "Core cycles, all categories");
        }
        {
            let mut ins = s.scope("instructions");
            for c in Category::ALL {
                ins.count(c.name(), self.instructions(c), "Instructions executed in this category");
            }
            ins.count("total", self.total_instructions(), "Instructions executed, all categories");
        }
        s.count("packets", self.packets, "Packets the cycles are divided by in cycles_per_packet");
    }

    fn reset_stats(&mut self) {
        self.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_land_in_their_category_and_sum() {
        let mut a = CycleAccount::new(2_000_000_000); // 500 ps per cycle
        a.charge(Category::Rx, 35 * 500, 70);
        a.charge(Category::Tx, 20 * 500, 40);
        a.charge(Category::Rx, 5 * 500, 10);
        assert_eq!(a.cycles(Category::Rx), 40.0);
        assert_eq!(a.cycles(Category::Tx), 20.0);
        assert_eq!(a.cycles(Category::App), 0.0);
        assert_eq!(a.instructions(Category::Rx), 80);
        assert_eq!(a.total_cycles(), 60.0);
        assert_eq!(a.total_instructions(), 120);
        let cpp = a.cycles_per_packet(4);
        assert_eq!(cpp.get(Category::Rx), 10.0);
        assert_eq!(cpp.get(Category::Tx), 5.0);
        assert_eq!(cpp.total, 15.0);
        assert_eq!(a.cycles_per_packet(0).total, 0.0);
    }

    #[test]
    fn json_stats_and_reset() {
        let mut a = CycleAccount::new(1_000_000_000); // 1000 ps per cycle
        a.charge(Category::Mempool, 12_000, 20);
        a.charge(Category::Idle, 8_000, 4);
        a.add_packets(2);
        let j = a.result_json();
        assert_eq!(j["packets"], 2);
        assert_eq!(j["cycles"]["mempool"], 12.0);
        assert_eq!(j["cycles"]["total"], 20.0);
        assert_eq!(j["instructions"]["idle"], 4);
        assert_eq!(j["cycles_per_packet"]["mempool"], 6.0);
        assert_eq!(j["cycles_per_packet"]["total"], 10.0);
        let mut v = vec![];
        a.report_stats(&mut StatSink::new(&mut v).scope("cpu0"));
        let get = |n: &str| v.iter().find(|s| s.name == n).map(|s| s.value.as_f64());
        assert_eq!(get("cpu0.cycles.mempool"), Some(12.0));
        assert_eq!(get("cpu0.instructions.total"), Some(24.0));
        a.reset_stats();
        assert_eq!(a.total_ps(), 0);
        assert_eq!(a.total_instructions(), 0);
        assert_eq!(a.packets(), 0);
        assert_eq!(a.freq_hz(), 1_000_000_000);
    }

    #[test]
    fn names_are_unique_and_indices_dense() {
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        let mut names: Vec<_> = Category::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Category::COUNT);
    }
}
