//! The memory budget: before a system is built, the bytes its sized
//! structures will take on the machine running the simulation, item by item
//! with the config field that sizes each, against `sim.memory_limit_bytes`
//! (default: half the machine's memory). A config over the budget is refused
//! with an error naming the largest items, so that no allocation can abort
//! the process (a Rust allocation failure is an abort, not an error).
//!
//! The figures are estimates from the structures' layouts (the size of each
//! entry times the entries the config asks for), upper bounds where a
//! structure grows during the run (frame buffers, a trace's frames, the
//! store's items).

use crate::config::SimConfig;
use crate::error::{ConfigError, Result};

/// One sized structure: what it is, the config field that sizes it and
/// that field's value, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub what: &'static str,
    pub field: &'static str,
    pub value: String,
    pub bytes: u64,
}

/// Bytes of the cache model per line: its tag and its metadata word (`mem/cache.rs`).
const CACHE_LINE_BYTES: u64 = 16;
/// Bytes per descriptor slot of a NIC ring (`nic/ring.rs`: mbuf, frame, buffer address; a TX ring's split word).
const DESCRIPTOR_BYTES: u64 = 24;
/// Per item of the key-value table (`kvs/table.rs`): its header and free-list entry.
const KVS_ITEM_BYTES: u64 = 56;
/// Per frame buffer besides its bytes (`framebuf.rs`: length, origin, flags, sequence, ledger, free list).
const FRAME_META_BYTES: u64 = 32;
/// A trace's frames in memory per byte of file, at most: a 16 B pcap
/// record header and a 14 B frame in the file hold 60 B of frame and a
/// 24 B record in memory (`loadgen/trace.rs`).
const TRACE_BYTES_PER_FILE_BYTE: u64 = 3;

/// Every sized structure of `cfg`, largest first, with frame buffers of
/// `max_frame` bytes (the largest frame the generators or the application build).
pub fn items(cfg: &SimConfig, registry: &crate::apps::Registry, max_frame: u32) -> Vec<Item> {
    let mut v: Vec<Item> = Vec::new();
    let mut add = |what: &'static str, field: &'static str, value: String, bytes: u64| v.push(Item { what, field, value, bytes });
    let max_frame = max_frame as u64;
    let ports = super::generator_ports(cfg);
    for p in 0..ports {
        let lg = cfg.loadgen.for_port(p);
        if let Some(t) = &lg.trace {
            let file = std::fs::metadata(&t.path).map(|m| m.len()).unwrap_or(0);
            add("the trace's frames", "loadgen.trace.path", format!("{} ({})", t.path, size(file)), file.saturating_mul(TRACE_BYTES_PER_FILE_BYTE));
        }
    }
    match &cfg.host {
        Some(h) if cfg.app != "reflector" => {
            let cores = h.cores as u64;
            let m = &h.mem;
            let lines = |bytes: u64| bytes / crate::mem::LINE_BYTES;
            let sets = |bytes: u64, ways: u32| lines(bytes) / ways.max(1) as u64;
            let cache = |bytes: u64, n: u64| n.saturating_mul(lines(bytes)).saturating_mul(CACHE_LINE_BYTES);
            add("the L1D caches", "host.mem.l1d.size_bytes", size(m.l1d.size_bytes), cache(m.l1d.size_bytes, cores));
            add("the L2 caches", "host.mem.l2.size_bytes", size(m.l2.size_bytes), cache(m.l2.size_bytes, cores));
            add("the LLC", "host.mem.llc.size_bytes", size(m.llc.size_bytes), cache(m.llc.size_bytes, 1));
            // A byte per bucket and core, a few buckets per private line (`mem/filter.rs`).
            let private = lines(m.l1d.size_bytes).saturating_add(lines(m.l2.size_bytes));
            let max_sets = sets(m.l1d.size_bytes, m.l1d.ways).max(sets(m.l2.size_bytes, m.l2.ways));
            add("the snoop filter", "host.mem.l2.size_bytes", size(m.l2.size_bytes), crate::mem::filter::footprint(h.cores as usize, private as usize, max_sets as usize));
            if registry.get(&cfg.app).is_some_and(|e| e.reads.contains(&"kvs")) {
                let k = &h.app.kvs;
                add("the store's buckets", "host.app.kvs.buckets", k.buckets.to_string(), k.buckets as u64 * 4);
                let per_item = KVS_ITEM_BYTES + k.max_value_bytes as u64 + crate::wire::memcached::KEY_MAX_BYTES as u64;
                add("the store's items", "host.app.kvs.items", k.items.to_string(), k.items as u64 * per_item);
            }
            let rings = h.ports as u64 * (h.queues as u64 * h.pmd.rxd as u64 + h.tx_queues() as u64 * h.pmd.txd as u64);
            add("the descriptor rings", "host.pmd.rxd", h.pmd.rxd.to_string(), rings * DESCRIPTOR_BYTES);
            add("the mempools", "host.pmd.mempool.mbufs", h.pmd.mempool.mbufs.to_string(), h.ports as u64 * (h.pmd.mempool.mbufs as u64 * 4 + cores * 3 * 512 * 4));
            // Frames the host can hold, each in a buffer of the largest frame.
            let frames: u64 = h.buffers(cfg.stack == crate::config::Stack::Kernel, max_frame as f64).iter().map(|b| b.2).sum();
            add("the frame buffers", "host.pmd.rxd", h.pmd.rxd.to_string(), frames.saturating_mul(max_frame + FRAME_META_BYTES));
        }
        _ => {
            let q = cfg.reflector.queue_frames;
            add("the reflector's queue", "reflector.queue_frames", q.to_string(), q as u64 * (max_frame + FRAME_META_BYTES))
        }
    }
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes));
    v
}

/// Half of the memory this process may use: the machine's, or its
/// cgroup's limit or its address-space limit (`ulimit -v`) if lower; 8 GiB
/// where none can be read.
pub fn default_limit() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|s| s.trim().parse::<u64>().ok());
    // "Max address space  <soft>  <hard>  bytes"; "unlimited" parses as none.
    let address_space = std::fs::read_to_string("/proc/self/limits").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("Max address space"))?;
        line["Max address space".len()..].split_whitespace().next()?.parse::<u64>().ok()
    });
    [meminfo, cgroup, address_space].into_iter().flatten().min().map_or(8 << 30, |b| b / 2)
}

/// Refuses `cfg` if its structures need more than its memory limit.
pub fn check(cfg: &SimConfig, registry: &crate::apps::Registry, max_frame: u32) -> Result<()> {
    let limit = cfg.sim.memory_limit_bytes.unwrap_or_else(default_limit);
    let items = items(cfg, registry, max_frame);
    let total = items.iter().fold(0u64, |s, i| s.saturating_add(i.bytes));
    if total <= limit {
        return Ok(());
    }
    let largest: Vec<String> = items.iter().take(3).filter(|i| i.bytes > 0).map(|i| format!("{} {} ({} = {})", i.what, size(i.bytes), i.field, i.value)).collect();
    let first = &items[0];
    Err(ConfigError::new(
        first.field,
        first.value.clone(),
        &format!(
            "a config whose structures fit sim.memory_limit_bytes ({}{}): this one needs about {}, most for {}; shrink them or raise sim.memory_limit_bytes",
            size(limit),
            if cfg.sim.memory_limit_bytes.is_none() { ", half the memory this process may use" } else { "" },
            size(total),
            largest.join(", ")
        ),
    )
    .into())
}

/// Bytes in binary units, as the user writes them (`16 GiB`).
fn size(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else if v.fract() == 0.0 { format!("{v:.0} {}", UNITS[u]) } else { format!("{v:.3} {}", UNITS[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostConfig;

    fn host(f: impl FnOnce(&mut HostConfig)) -> SimConfig {
        let mut c = SimConfig { app: "testpmd".into(), ..SimConfig::default() };
        let mut h = HostConfig::preset("altra").unwrap();
        f(&mut h);
        c.host = Some(h);
        c
    }

    #[test]
    fn the_largest_item_is_named_with_the_total() {
        let mut c = host(|h| h.mem.l2.size_bytes = 16 << 30);
        c.sim.memory_limit_bytes = Some(2 << 30);
        let e = check(&c, &crate::apps::Registry::builtin(), 1518).unwrap_err().to_string();
        assert!(e.starts_with("host.mem.l2.size_bytes"), "{e}");
        assert!(e.contains("sim.memory_limit_bytes (2 GiB)") && e.contains("the L2 caches 4 GiB (host.mem.l2.size_bytes = 16 GiB)"), "{e}");
    }

    #[test]
    fn a_preset_fits_a_small_budget_and_its_items_add_up() {
        let mut c = host(|_| ());
        let total: u64 = items(&c, &crate::apps::Registry::builtin(), 1518).iter().map(|i| i.bytes).sum();
        assert!(total < 256 << 20, "{total}");
        c.sim.memory_limit_bytes = Some(total);
        check(&c, &crate::apps::Registry::builtin(), 1518).unwrap();
        c.sim.memory_limit_bytes = Some(total - 1);
        assert!(check(&c, &crate::apps::Registry::builtin(), 1518).is_err());
    }

    #[test]
    fn a_cache_costs_sixteen_bytes_a_line() {
        let a = items(&host(|h| h.mem.llc.size_bytes = 1 << 30), &crate::apps::Registry::builtin(), 1518);
        let llc = a.iter().find(|i| i.what == "the LLC").unwrap();
        assert_eq!(llc.bytes, (1 << 30) / 64 * 16);
    }
}
