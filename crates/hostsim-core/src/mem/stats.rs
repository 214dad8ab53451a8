//! Reporting: the memory system's counters as dotted gem5-style stats and as
//! the `mem` object of the JSON result.
//!
//! Names, under whatever scope the caller gives: `l1i{core}.*` (instruction
//! lines fetched), `l1d{core}.*` and `l2{core}.*` per core, `llc.*` with core and device hits kept apart,
//! `dram.*` with bytes per agent, and the DCA and coherence counters at the
//! top (`dca_allocs`, `dca_updates`, `dca_leaks`, `coherence_transfers`).
//! The JSON form sums the private levels over cores and lists them per core.

use serde_json::{json, Value};

use crate::engine::stats::{HasStats, StatSink};

use super::dram::Agent;
use super::hierarchy::{LevelCounters, MemSystem, Traffic};

fn report_level(s: &mut StatSink<'_>, c: &LevelCounters, device: bool) {
    s.count("hits", c.hits, "Core accesses that hit");
    s.count("misses", c.misses, "Core accesses that missed");
    if device {
        s.count("device_hits", c.device_hits, "Device accesses that hit");
        s.count("device_misses", c.device_misses, "Device accesses that missed");
    }
    s.count("writebacks", c.writebacks, "Dirty victims written to the level below");
    s.count("evictions", c.evictions, "Valid lines displaced by fills");
}

fn level_json(c: &LevelCounters) -> Value {
    json!({ "hits": c.hits, "misses": c.misses, "writebacks": c.writebacks, "evictions": c.evictions })
}

fn sum(levels: &[LevelCounters]) -> LevelCounters {
    levels.iter().fold(LevelCounters::default(), |a, c| LevelCounters {
        hits: a.hits + c.hits,
        misses: a.misses + c.misses,
        device_hits: a.device_hits + c.device_hits,
        device_misses: a.device_misses + c.device_misses,
        writebacks: a.writebacks + c.writebacks,
        evictions: a.evictions + c.evictions,
    })
}

/// Bytes each agent moved to and from the LLC and DRAM.
fn traffic_json(t: &[Traffic; 3]) -> Value {
    let one = |t: &Traffic| json!({ "read_bytes": t.read_bytes, "write_bytes": t.write_bytes });
    json!({ "core": one(&t[Agent::Core.index()]), "nic": one(&t[Agent::Device.index()]), "engine": one(&t[Agent::Engine.index()]) })
}

impl MemSystem {
    /// The `mem` object of the JSON result.
    pub fn result_json(&self) -> Value {
        let c = self.counters();
        let per_core: Vec<Value> = (0..c.l1d.len())
            .map(|i| json!({ "l1i": { "hits": c.l1i[i].hits, "misses": c.l1i[i].misses }, "l1d": level_json(&c.l1d[i]), "l2": level_json(&c.l2[i]) }))
            .collect();
        let l1i = sum(&c.l1i);
        let mut llc = level_json(&c.llc);
        llc["device_hits"] = c.llc.device_hits.into();
        llc["device_misses"] = c.llc.device_misses.into();
        llc["victim_fills"] = c.llc_victim_fills.into();
        llc["moves"] = c.llc_moves.into();
        llc["migrations"] = c.llc_migrations.into();
        llc["dropped_clean_victims"] = c.llc_dropped_clean_victims.into();
        llc["back_invalidations"] = c.back_invalidations.into();
        json!({
            "l1i": { "hits": l1i.hits, "misses": l1i.misses },
            "l1d": level_json(&sum(&c.l1d)),
            "l2": level_json(&sum(&c.l2)),
            "llc": llc,
            "dram": self.dram().result_json(),
            "dca_allocs": c.dca_allocs,
            "dca_held_writes": c.dca_held_writes,
            "dca_updates": c.dca_updates,
            "dca_write_hit_rate": write_hit_rate(c),
            "dca_leaks": c.dca_leaks,
            "partial_writes": c.partial_writes,
            "partial_write_reads": c.partial_write_reads,
            "coherence_transfers": c.coherence_transfers,
            "l2_prefetch": {
                "issued": c.l2_prefetches,
                "hits": c.l2_prefetch_hits,
                "late": c.l2_prefetch_late,
                "unused": c.l2_prefetch_unused,
                "dropped": c.l2_prefetch_dropped,
            },
            "traffic": traffic_json(&c.traffic),
            "per_core": per_core,
        })
    }
}

/// pcm-pcie's "ItoM hit" share, as Intel's uncore counts a hit (CHA TOR
/// inserts: a miss needs another agent, memory included; a request served
/// with on-die snoops only is not one): the device writes that found their
/// line in the LLC or in a core's private cache, over every device write
/// that went to the LLC. 0 when there were none.
fn write_hit_rate(c: &super::hierarchy::MemCounters) -> f64 {
    let all = c.dca_updates + c.dca_allocs;
    if all == 0 {
        0.0
    } else {
        (c.dca_updates + c.dca_held_writes) as f64 / all as f64
    }
}

impl HasStats for MemSystem {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let c = self.counters();
        for (core, (l1, l2)) in c.l1d.iter().zip(&c.l2).enumerate() {
            let mut i = s.scope(&format!("l1i{core}"));
            i.count("hits", c.l1i[core].hits, "Instruction lines found in the L1I");
            i.count("misses", c.l1i[core].misses, "Instruction lines fetched from the L2 (or beyond)");
            report_level(&mut s.scope(&format!("l1d{core}")), l1, false);
            report_level(&mut s.scope(&format!("l2{core}")), l2, false);
        }
        let mut llc = s.scope("llc");
        report_level(&mut llc, &c.llc, true);
        llc.count("victim_fills", c.llc_victim_fills, "L2 victims written into a non-inclusive LLC");
        llc.count("moves", c.llc_moves, "LLC lines moved to the L2 of the core that read them");
        llc.count("migrations", c.llc_migrations, "Lines a core read in a DCA way, moved to the inclusive ways");
        llc.count("dropped_clean_victims", c.llc_dropped_clean_victims, "Clean L2 victims the LLC did not take");
        llc.count("back_invalidations", c.back_invalidations, "Private copies invalidated by inclusive LLC evictions");
        self.dram().report_stats(&mut s.scope("dram"));
        s.count("dca_allocs", c.dca_allocs, "Device writes allocated into the DCA ways");
        s.count("dca_held_writes", c.dca_held_writes, "Device writes allocated for a line only a core's private cache held");
        s.add("dca_write_hit_rate", write_hit_rate(c), "Ratio", "Device writes that hit: updates and writes to core-held lines, over all DCA writes (pcm-pcie's ItoM hit rate)");
        s.count("dca_updates", c.dca_updates, "Device writes that updated a line already in the LLC");
        s.count("dca_leaks", c.dca_leaks, "Device-written lines evicted from the LLC before a core touched them");
        s.count("partial_writes", c.partial_writes, "Lines a device wrote only part of (merged with the rest of the line)");
        s.count("partial_write_reads", c.partial_write_reads, "Partial device writes that read their line from DRAM first (read-modify-write)");
        s.count("coherence_transfers", c.coherence_transfers, "Lines taken from or invalidated in another agent's cache");
        let mut pf = s.scope("l2_prefetch");
        pf.count("issued", c.l2_prefetches, "Lines the L2 prefetchers fetched");
        pf.count("hits", c.l2_prefetch_hits, "Prefetched lines a demand access found (on their way or arrived)");
        pf.count("late", c.l2_prefetch_late, "Prefetched lines a demand access found still on their way");
        pf.count("unused", c.l2_prefetch_unused, "Prefetched lines evicted from the L2 before any demand access");
        pf.count("dropped", c.l2_prefetch_dropped, "Prefetches not issued: every L2 miss register was busy");
        for (name, a) in [("core", Agent::Core), ("nic", Agent::Device), ("engine", Agent::Engine)] {
            let t = c.traffic[a.index()];
            let mut tr = s.scope("traffic");
            let mut s = tr.scope(name);
            s.count("read_bytes", t.read_bytes, "Bytes read from the LLC or DRAM (core: L2 misses)");
            s.count("write_bytes", t.write_bytes, "Bytes written to the LLC or DRAM (core: dirty L2 victims)");
        }
    }

    fn reset_stats(&mut self) {
        self.reset_counters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stats::Stat;
    use crate::mem::config::Inclusion;
    use crate::mem::hierarchy::tests::{sys, tiny};

    fn value(stats: &[Stat], name: &str) -> f64 {
        stats.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no stat {name}")).value.as_f64()
    }

    #[test]
    fn dotted_names_and_reset() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 2);
        m.core_access(1, 0, false, 0);
        m.core_access(1, 0, false, 0);
        m.device_write(0x1000, 128, 0);
        m.device_read(0x1000, 64, 0);
        let mut v = vec![];
        m.report_stats(&mut StatSink::new(&mut v).scope("system").scope("mem"));
        assert_eq!(value(&v, "system.mem.l1d1.hits"), 1.0);
        assert_eq!(value(&v, "system.mem.l1d1.misses"), 1.0);
        assert_eq!(value(&v, "system.mem.l1d0.misses"), 0.0);
        assert_eq!(value(&v, "system.mem.llc.misses"), 1.0);
        assert_eq!(value(&v, "system.mem.llc.device_hits"), 1.0);
        assert_eq!(value(&v, "system.mem.dca_allocs"), 2.0);
        assert_eq!(value(&v, "system.mem.dram.bytes_read_core"), 64.0);
        let j = m.result_json();
        assert_eq!(j["l1d"]["hits"], 1);
        assert_eq!(j["per_core"][1]["l1d"]["misses"], 1);
        assert_eq!(j["llc"]["device_hits"], 1);
        assert_eq!(j["dram"]["bytes_read_core"], 64);

        m.reset_stats();
        v.clear();
        m.report_stats(&mut StatSink::new(&mut v));
        assert!(v.iter().filter(|s| !s.name.ends_with("busy_ps")).all(|s| s.value.as_f64() == 0.0));
        // Contents survive the reset.
        assert_eq!(m.core_access(1, 0, false, 0).level, crate::mem::Level::L1);
        assert!(m.llc_contains(0x1000));
    }
}
