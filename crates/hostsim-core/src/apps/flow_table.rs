//! An exact-match flow table at simulated addresses, as software switches
//! keep them: the flow key (addresses, ports, protocol) hashed with CRC32-C
//! (DPDK's `rte_hash_crc`, the SSE4.2 instruction) into buckets of eight
//! signatures, one 64 B line each (DPDK `rte_hash`), that point into an
//! array of flow entries (key, actions, statistics). A lookup reads the
//! bucket line, then the lines of the entry a key compare needs, and
//! writes the entry's statistics line; the bucket's address needs the
//! headers and the entry's comes from the bucket, so those loads are
//! dependent (`Work::read_after`) and their misses do not overlap. A miss goes to the slow path (an
//! upcall: the classifier in user space), which installs the entry.
//!
//! Which entry a key has is kept exactly (a Rust map from key to entry);
//! only the memory the real structure would touch is charged, so the flow
//! table's working set — buckets and entries of the active flows — meets
//! the caches at its real size: with many flows it outgrows L1, L2, then
//! the LLC.
//!
//! Simplified: one bucket per key (no second cuckoo bucket, no
//! displacement); entries are never evicted (a full table sends every new
//! flow to the slow path); no flow expiry.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cpu::Work;
use crate::error::{ConfigError, Result};

/// Where flow tables live: far above the driver's and the stack's structures.
const BUCKETS_BASE: u64 = 0x30_0000_0000;
const ENTRIES_BASE: u64 = 0x31_0000_0000;
/// Signatures per bucket line (DPDK `RTE_HASH_BUCKET_ENTRIES`).
const BUCKET_ENTRIES: u32 = 8;

/// `host.app.flow_table`: the table's size and what a lookup costs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FlowTableConfig {
    /// Flow entries the table holds (a power of two); buckets are one per
    /// eight entries.
    pub entries: u32,
    /// Bytes of one flow entry (its stride in memory).
    pub entry_bytes: u32,
    /// Lines of an entry a lookup reads from its start to compare the key
    /// and find the actions; the statistics line after them is written.
    pub key_lines: u32,
    /// Instructions to extract the key from the headers and hash it.
    pub key_instr: u32,
    /// Instructions to compare the bucket's signatures and the key.
    pub lookup_instr: u32,
    /// Instructions of a miss: the upcall to the slow path, its
    /// classification and the install.
    pub upcall_instr: u32,
}

impl Default for FlowTableConfig {
    /// A DPDK vSwitch's table: 2^16 entries (estimate) of 128 B, the key
    /// and actions in the first line, statistics in the second (estimate);
    /// about 40 instructions to extract a 5-tuple and hash its 13 bytes with
    /// three CRC32 instructions, 30 to compare eight signatures and a key
    /// (estimates); an upcall of 20,000 instructions (estimate: a round
    /// trip to a user-space classifier is microseconds).
    fn default() -> Self {
        FlowTableConfig { entries: 1 << 16, entry_bytes: 128, key_lines: 1, key_instr: 40, lookup_instr: 30, upcall_instr: 20_000 }
    }
}

impl FlowTableConfig {
    pub fn validate(&self) -> Result<()> {
        self.validate_as("app.flow_table")
    }

    /// Checks the fields, naming them under `section` in errors.
    pub fn validate_as(&self, section: &str) -> Result<()> {
        let bad = |f: &str, v: u32, allowed: &str| -> Result<()> { Err(ConfigError::new(&format!("{section}.{f}"), v.to_string(), allowed).into()) };
        if !self.entries.is_power_of_two() || self.entries < BUCKET_ENTRIES || self.entries > 1 << 24 {
            return bad("entries", self.entries, "a power of two, 8 to 16777216");
        }
        if !(64..=4096).contains(&self.entry_bytes) || !self.entry_bytes.is_multiple_of(64) {
            return bad("entry_bytes", self.entry_bytes, "a multiple of 64, 64 to 4096");
        }
        if self.key_lines == 0 || self.key_lines * 64 > self.entry_bytes {
            return bad("key_lines", self.key_lines, "1 to entry_bytes / 64");
        }
        Ok(())
    }
}

/// An IPv4 5-tuple as the switch keys it (13 bytes: addresses, ports, protocol).
pub type FlowKey = [u8; 13];

/// The key of an Ethernet/IPv4 frame (`wire::five_tuple`: the ports zero
/// unless UDP or TCP and not a fragment); None for anything else.
pub fn flow_key(frame: &[u8]) -> Option<FlowKey> {
    let t = crate::wire::five_tuple(frame)?;
    let mut k = [0u8; 13];
    k[..12].copy_from_slice(&t.bytes);
    k[12] = t.protocol;
    Some(k)
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    hits: u64,
    misses: u64,
    /// Misses that found the table full (the flow stays on the slow path).
    full: u64,
    /// Frames without an IPv4 5-tuple: no flow can match them.
    not_ip: u64,
}

pub struct FlowTable {
    cfg: FlowTableConfig,
    index: HashMap<FlowKey, u32>,
    c: Counters,
}

impl FlowTable {
    pub fn new(cfg: &FlowTableConfig) -> Self {
        FlowTable { cfg: *cfg, index: HashMap::new(), c: Counters::default() }
    }

    /// The bucket line of `key` (CRC32-C of the key, as `rte_hash_crc`).
    pub fn bucket_addr(&self, key: &FlowKey) -> u64 {
        let buckets = (self.cfg.entries / BUCKET_ENTRIES) as u64;
        BUCKETS_BASE + (crc32c::crc32c(key) as u64 & (buckets - 1)) * 64
    }

    /// The first byte of entry `i`.
    pub fn entry_addr(&self, i: u32) -> u64 {
        ENTRIES_BASE + i as u64 * self.cfg.entry_bytes as u64
    }

    /// Looks up the flow of `frame` ([`FlowTable::lookup`]); None (counted
    /// as `not_ip`) when the frame has no IPv4 5-tuple.
    pub fn lookup_frame(&mut self, frame: &[u8], work: &mut Work) -> Option<bool> {
        match flow_key(frame) {
            Some(k) => Some(self.lookup(&k, work)),
            None => {
                self.c.not_ip += 1;
                None
            }
        }
    }

    /// Looks `key` up, charging `work` what the table touches; a miss runs
    /// the slow path and installs the entry. Returns whether it hit.
    pub fn lookup(&mut self, key: &FlowKey, work: &mut Work) -> bool {
        let c = self.cfg;
        // The hash needs the headers, the entry's index comes from the bucket:
        // each load waits for the one before (pointer chasing).
        let bucket = self.bucket_addr(key);
        work.instr((c.key_instr + c.lookup_instr) as u64).read_after(bucket);
        if let Some(&i) = self.index.get(key) {
            self.c.hits += 1;
            let e = self.entry_addr(i);
            work.read_after(e);
            for l in 1..c.key_lines as u64 {
                work.read(e + l * 64);
            }
            work.write(e + c.key_lines as u64 * 64 % c.entry_bytes as u64);
            return true;
        }
        self.c.misses += 1;
        work.instr(c.upcall_instr as u64);
        let n = self.index.len() as u32;
        if n >= c.entries {
            self.c.full += 1;
            return false;
        }
        self.index.insert(*key, n);
        let e = self.entry_addr(n);
        work.write(bucket);
        for l in 0..(c.key_lines as u64 + 1).min(c.entry_bytes as u64 / 64) {
            work.write(e + l * 64);
        }
        false
    }

    pub fn result_json(&self) -> Value {
        json!({
            "flows": self.index.len(),
            "hits": self.c.hits,
            "misses": self.c.misses,
            "full": self.c.full,
            "not_ip": self.c.not_ip,
        })
    }

    pub fn reset_stats(&mut self) {
        self.c = Counters::default();
    }

    /// Flows installed.
    pub fn len(&self) -> u64 {
        self.index.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Category;
    use crate::wire::ipv4;

    fn frame(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[23] = ipv4::PROTO_UDP;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&9u16.to_be_bytes());
        f
    }

    #[test]
    fn keys_come_from_the_headers() {
        let k = flow_key(&frame(1024)).unwrap();
        assert_eq!(&k[..8], &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!((u16::from_be_bytes([k[8], k[9]]), u16::from_be_bytes([k[10], k[11]]), k[12]), (1024, 9, ipv4::PROTO_UDP));
        let mut arp = frame(1);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(flow_key(&arp).is_none());
        // The hash is CRC32-C (Castagnoli): its check value over "123456789".
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    /// The first packet of a flow misses and installs it (the upcall's
    /// instructions, the bucket and entry written); later ones read the
    /// bucket and key lines and write the statistics line.
    #[test]
    fn a_miss_installs_and_later_packets_hit() {
        let cfg = FlowTableConfig { entries: 64, entry_bytes: 576, key_lines: 2, ..Default::default() };
        let mut t = FlowTable::new(&cfg);
        let k = flow_key(&frame(7)).unwrap();
        let mut w = Work::new(Category::App);
        assert!(!t.lookup(&k, &mut w));
        assert_eq!(w.instructions(), (cfg.key_instr + cfg.lookup_instr + cfg.upcall_instr) as u64);
        let writes: Vec<u64> = w.accesses().iter().filter(|a| a.write).map(|a| a.addr).collect();
        assert_eq!(writes, vec![t.bucket_addr(&k), t.entry_addr(0), t.entry_addr(0) + 64, t.entry_addr(0) + 128]);
        let mut w = Work::new(Category::App);
        assert!(t.lookup(&k, &mut w));
        let acc: Vec<(u64, bool)> = w.accesses().iter().map(|a| (a.addr, a.write)).collect();
        let e = t.entry_addr(0);
        assert_eq!(acc, vec![(t.bucket_addr(&k), false), (e, false), (e + 64, false), (e + 128, true)]);
        // Entries are laid out at their stride; buckets hold eight.
        assert_eq!(t.entry_addr(3) - t.entry_addr(2), 576);
        assert!((BUCKETS_BASE..BUCKETS_BASE + 8 * 64).contains(&t.bucket_addr(&k)));
        assert_eq!(t.result_json()["hits"], 1);
    }

    #[test]
    fn a_full_table_leaves_new_flows_on_the_slow_path() {
        let mut t = FlowTable::new(&FlowTableConfig { entries: 8, ..Default::default() });
        let mut w = Work::new(Category::App);
        for sport in 0..10 {
            t.lookup(&flow_key(&frame(sport)).unwrap(), &mut w);
        }
        assert!(!t.lookup(&flow_key(&frame(9)).unwrap(), &mut w), "never installed");
        assert!(t.lookup(&flow_key(&frame(7)).unwrap(), &mut w));
        assert_eq!(t.result_json(), json!({"flows": 8, "hits": 1, "misses": 11, "full": 3, "not_ip": 0}));
    }

    #[test]
    fn bad_sizes_are_named() {
        for (cfg, field) in [
            (FlowTableConfig { entries: 1000, ..Default::default() }, "app.flow_table.entries"),
            (FlowTableConfig { entry_bytes: 100, ..Default::default() }, "app.flow_table.entry_bytes"),
            (FlowTableConfig { key_lines: 3, ..Default::default() }, "app.flow_table.key_lines"),
        ] {
            assert!(cfg.validate().unwrap_err().to_string().starts_with(field));
        }
        assert!(FlowTableConfig::default().validate().is_ok());
    }
}
