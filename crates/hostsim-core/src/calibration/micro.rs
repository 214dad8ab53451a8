//! Microbenchmarks on a preset's core and memory system, as lmbench's
//! `lat_mem_rd` and a single-thread `memcpy`/read loop run them on a real
//! machine: the calibration targets of params.md §5 (load-to-use latency by
//! level) and §11 (single-core read and copy bandwidth by residency) are
//! measured on the model the same way.
//!
//! Each benchmark builds one [`Core`] and a [`MemSystem`] from a host's
//! core and memory configs and feeds the core work units as a program
//! would issue them; nothing else runs (no NIC, no other core, no event
//! loop).
//!
//! * `chase`: a pointer chase over a working set — every load's address is
//!   the previous load's data ([`Work::read_after`]), visiting the set's
//!   lines in a random cyclic order (Sattolo's shuffle, seeded), so no two
//!   loads overlap. One pass warms the caches (its stores drain), the next is timed: the time
//!   per load is the load-to-use latency of the level that holds the set.
//! * `read`: independent loads of consecutive lines (a streaming read),
//!   `instr_per_line` instructions each; bytes over time.
//! * `copy`: a copy of a buffer into another of the same size, a line at a
//!   time (`kernel.costs.copy_instr_per_line`, the kernel's
//!   `copy_to_user`); bytes copied over time.
//!
//! Simplified: there is no TLB and no L1D prefetcher; the L2's prefetcher
//! (`mem.l2_prefetch`) runs as in any simulation, and a chase's loads that
//! hit the L1D cost its load-to-use latency (a dependent load waits for
//! the data of the one before, `cpu/core.rs`).

use serde::{Deserialize, Serialize};

use crate::cpu::{Category, Core, CoreConfig, Work};
use crate::engine::rng::SimRng;
use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Result};
use crate::mem::{MemConfig, MemSystem};

/// Where the benchmarks' buffers live (any address: nothing else is there).
const BASE: u64 = 0x40_0000_0000;
/// A work unit holds this many lines' accesses (the program is split into
/// such pieces only to bound the buffer; the core runs them back to back).
const CHUNK_LINES: u64 = 4096;
/// Working sets above this are refused (1 GiB: 16 M lines).
const MAX_BYTES: u64 = 1 << 30;

/// One microbenchmark.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Micro {
    /// Dependent loads over `bytes`; reports ns (and core cycles) per load.
    Chase { bytes: u64, #[serde(default = "one")] instr_per_load: u64 },
    /// Streaming loads over `bytes`; reports GB/s.
    Read { bytes: u64, #[serde(default = "two")] instr_per_line: u64 },
    /// A copy of `bytes`; reports GB/s copied.
    Copy { bytes: u64 },
}

fn one() -> u64 {
    1
}
fn two() -> u64 {
    2
}

/// What a microbenchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// ns per load (`chase`) or GB/s (`read`, `copy`).
    pub value: f64,
    pub unit: &'static str,
    /// `chase`: core cycles per load; otherwise bytes per core cycle.
    pub per_cycle: f64,
    /// Where the timed accesses were served: L1D, L2, LLC hits and DRAM reads.
    pub l1d_hits: u64,
    pub l2_hits: u64,
    pub llc_hits: u64,
    pub dram_reads: u64,
}

/// A host's parts a microbenchmark runs on.
pub struct Machine<'a> {
    pub cpu: &'a CoreConfig,
    pub mem: &'a MemConfig,
    /// Instructions per 64 B line of a copy loop (the kernel's `copy_to_user`).
    pub copy_instr_per_line: u64,
}

/// Runs `bench` on core 0 of `host`.
pub fn run(host: &Machine<'_>, bench: &Micro) -> Result<Measured> {
    let bytes = match *bench {
        Micro::Chase { bytes, .. } | Micro::Read { bytes, .. } | Micro::Copy { bytes } => bytes,
    };
    if !(64..=MAX_BYTES).contains(&bytes) {
        return Err(ConfigError::new("micro.bytes", bytes.to_string(), "64 B to 1 GiB").into());
    }
    let mut core = Core::new(0, host.cpu)?;
    let cycle_ps = PS_PER_S / host.cpu.freq_hz.max(1);
    let mut mem = MemSystem::new(host.mem, 1, &[cycle_ps])?;
    let lines = bytes / 64;
    let mut w = Work::with_capacity(Category::App, 2 * CHUNK_LINES as usize);
    let (order, unit) = match *bench {
        Micro::Chase { .. } => (chase_order(lines), "ns/load"),
        _ => ((0..lines).collect(), "GB/s"),
    };
    // One pass to warm, then the timed pass.
    let mut pass = |core: &mut Core, mem: &mut MemSystem| -> Ps {
        let start = core.now();
        for chunk in order.chunks(CHUNK_LINES as usize) {
            w.reset(Category::App);
            for &l in chunk {
                let a = BASE + l * 64;
                match *bench {
                    Micro::Chase { instr_per_load, .. } => w.instr(instr_per_load).read_after(a),
                    Micro::Read { instr_per_line, .. } => w.instr(instr_per_line).read(a),
                    Micro::Copy { .. } => w.copy_lines(a, a + MAX_BYTES, 64, host.copy_instr_per_line),
                };
            }
            core.exec(&w, mem);
        }
        core.now() - start
    };
    pass(&mut core, &mut mem);
    // The warm-up's stores drain before the clock starts.
    core.drain_stores();
    mem.reset_counters();
    let ps = pass(&mut core, &mut mem).max(1);
    let c = mem.counters();
    let cycles = core.ps_to_cycles(ps);
    let (value, per_cycle) = match bench {
        Micro::Chase { .. } => (ps as f64 / 1e3 / lines as f64, cycles / lines as f64),
        _ => (bytes as f64 / ps as f64 * 1e3, bytes as f64 / cycles),
    };
    Ok(Measured {
        value,
        unit,
        per_cycle,
        l1d_hits: c.l1d[0].hits,
        l2_hits: c.l2[0].hits,
        llc_hits: c.llc.hits,
        dram_reads: mem.dram().counters().bytes_read_core / 64,
    })
}

/// A random cyclic order of `n` lines (Sattolo's algorithm, seed fixed):
/// following it from line 0 visits every line once before coming back.
fn chase_order(n: u64) -> Vec<u64> {
    let mut next: Vec<u64> = (0..n).collect();
    let mut rng = SimRng::new(1, 0xC4A5E);
    for i in (1..n as usize).rev() {
        let j = (rng.unit() * i as f64) as usize;
        next.swap(i, j);
    }
    let mut order = Vec::with_capacity(n as usize);
    let mut at = 0u64;
    for _ in 0..n {
        order.push(at);
        at = next[at as usize];
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostConfig;

    fn on<T>(h: &HostConfig, f: impl FnOnce(&Machine<'_>) -> T) -> T {
        f(&Machine { cpu: &h.cpu, mem: &h.mem, copy_instr_per_line: h.kernel.costs.copy_instr_per_line as u64 })
    }

    #[test]
    fn a_chase_visits_every_line_once() {
        let mut o = chase_order(1000);
        o.sort_unstable();
        assert_eq!(o, (0..1000).collect::<Vec<_>>());
    }

    /// The chase's time per load is the latency of the level that holds the
    /// set: L1D hits their load-to-use cycles, L2 and LLC hits their
    /// configured cycles (plus the instruction), DRAM the idle latency and
    /// the lookups before it.
    #[test]
    fn chase_latency_is_the_configured_latency_of_the_level_that_holds_the_set() {
        let h = HostConfig::unfitted("i9-7940x-cx5").unwrap();
        let m = &h.mem;
        let cpi = h.cpu.base_cpi;
        // In the L1D each load waits for the one before: its load-to-use latency.
        let l1 = on(&h, |m| run(m, &Micro::Chase { bytes: h.mem.l1d.size_bytes / 2, instr_per_load: 1 })).unwrap();
        assert!(l1.l1d_hits > 0 && l1.l2_hits == 0, "{l1:?}");
        assert!((l1.per_cycle - m.l1d.latency_cycles as f64).abs() < 0.1, "{l1:?}");
        let l2 = on(&h, |m| run(m, &Micro::Chase { bytes: h.mem.l2.size_bytes / 2, instr_per_load: 1 })).unwrap();
        assert!(l2.l2_hits > 0 && l2.dram_reads == 0, "{l2:?}");
        assert!((l2.per_cycle - (m.l2.latency_cycles as f64 + cpi)).abs() < 1.0, "{l2:?}");
        let llc = on(&h, |m| run(m, &Micro::Chase { bytes: h.mem.llc.size_bytes / 2, instr_per_load: 1 })).unwrap();
        assert!((llc.per_cycle - (m.llc.latency_cycles as f64 + cpi)).abs() < 2.0, "{llc:?}");
        let dram = on(&h, |m| run(m, &Micro::Chase { bytes: h.mem.llc.size_bytes * 4, instr_per_load: 1 })).unwrap();
        // Random lines find a precharged or another row open: from a row miss (idle − tRP) to a conflict (idle), plus the lookups.
        let t = &m.dram.timing;
        let lo = (m.dram.idle_latency_ps - t.t_rp_ps) as f64 / 1e3;
        let lookups = (m.l2.latency_cycles + m.llc.latency_cycles) as f64 / h.cpu.freq_hz as f64 * 1e9;
        assert!(dram.value > lo && dram.value < m.dram.idle_latency_ps as f64 / 1e3 + lookups + 1.0, "{dram:?}");
        assert!(dram.dram_reads > 0);
    }

    /// A streaming read is bounded by the L1D's miss registers: at most
    /// `mshrs` lines in flight per DRAM latency, a row hit's at best;
    /// with the L2's prefetcher by the L2's miss registers instead.
    #[test]
    fn a_streaming_read_from_dram_is_bounded_by_the_miss_registers() {
        let mut h = HostConfig::unfitted("altra").unwrap();
        let t = &h.mem.dram.timing;
        let hit_ns = (h.mem.dram.idle_latency_ps - t.t_rp_ps - t.t_rcd_ps) as f64 / 1e3;
        let bytes = h.mem.llc.size_bytes * 4;
        let r = on(&h, |m| run(m, &Micro::Read { bytes, instr_per_line: 2 })).unwrap();
        let bound = h.mem.l2.mshrs as f64 * 64.0 / hit_ns;
        assert!(r.value <= bound && r.value > 0.5 * bound, "{r:?} bound {bound}");
        assert!(r.l2_hits > r.dram_reads * 9 / 10, "the prefetcher brought the lines: {r:?}");
        h.mem.l2_prefetch.degree = 0;
        let r = on(&h, |m| run(m, &Micro::Read { bytes, instr_per_line: 2 })).unwrap();
        let bound = h.cpu.l1d_mshrs as f64 * 64.0 / hit_ns;
        assert!(r.value <= bound && r.value > 0.5 * bound, "{r:?} bound {bound}");
        assert_eq!(r.l2_hits, 0);
    }

    #[test]
    fn sizes_out_of_range_are_refused_by_name() {
        let h = HostConfig::unfitted("altra").unwrap();
        let e = on(&h, |m| run(m, &Micro::Read { bytes: 1 << 31, instr_per_line: 2 })).unwrap_err().to_string();
        assert!(e.starts_with("micro.bytes: invalid value '2147483648'"), "{e}");
    }
}
