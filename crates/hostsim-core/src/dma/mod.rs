//! The chipset's DMA copy engine: Intel I/OAT's QuickData ("CBDMA"), which
//! copies memory to memory so a core need not (`host.tx_scheme = ioat`).
//!
//! ```text
//! core: descriptor (64 B) into the channel's ring, doorbell (MMIO) ─▶
//!   channel: fetch descriptor, per-descriptor work, then the data through
//!   the engine's shared data path at its bandwidth: source lines read
//!   from the LLC or DRAM, destination lines written through DCA ─▶
//!   completion status written to host memory, which the stack polls
//! ```
//!
//! The engine sits in the uncore (no PCIe). Each channel serves its
//! descriptors in order; the channels share one data path. A copy's
//! memory accesses go through [`MemSystem`](crate::mem::MemSystem) as the
//! copy engine's ([`Agent::Engine`](crate::mem::Agent)), so its bytes are
//! counted apart from the cores' and the NIC's. This file keeps only the
//! engine's own timing; the caller makes the memory accesses at the times
//! it gives.
//!
//! Parameters: the only datasheet figures found are for the Xeon
//! C5500/C3500's engine (2010, Nehalem generation): eight channels, raw
//! bandwidth 5 GB/s read + 5 GB/s write, and an effective 2.5 GB/s moving
//! 1460 B payloads two descriptors at a time (datasheet vol. 1, §"Intel
//! QuickData Technology", p. 310) [V]. The per-descriptor time is derived
//! from those two figures: 1460 B / 2.5 GB/s − 1460 B / 5 GB/s = 292 ns
//! [C]. No figure for the Skylake/Cascade Lake engine was found
//! (params.md §10: "not found"); using the C5500's for later parts is an
//! estimate.
//!
//! Simplified: no descriptor chaining or ring size limit (a channel queues
//! whatever it is given), no interrupts (the stack polls), no DCA
//! steering tag (writes allocate in the DCA ways like a NIC's).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Result};

/// The copy engine's parameters (`host.copy_engine`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CopyEngineConfig {
    /// Independent channels (C5500/C3500: 8 [V], see the module's sources).
    pub channels: u32,
    /// Bytes per second through the engine's data path, all channels
    /// together (C5500/C3500: 5 GB/s raw each way [V]).
    pub bandwidth_bytes_per_s: u64,
    /// A channel's time per descriptor besides moving its data (292 ns,
    /// derived from the C5500/C3500's raw and effective rates [C]).
    pub descriptor_ps: Ps,
}

impl Default for CopyEngineConfig {
    fn default() -> Self {
        CopyEngineConfig { channels: 8, bandwidth_bytes_per_s: 5_000_000_000, descriptor_ps: 292_000 }
    }
}

impl CopyEngineConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=64).contains(&self.channels) {
            return Err(ConfigError::new("copy_engine.channels", self.channels.to_string(), "1 to 64").into());
        }
        if self.bandwidth_bytes_per_s == 0 {
            return Err(ConfigError::new("copy_engine.bandwidth_bytes_per_s", "0".into(), "a positive rate").into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    copies: u64,
    bytes: u64,
    /// Time the data path spent moving data.
    busy_ps: Ps,
    /// Summed time copies waited for their channel or the data path.
    wait_ps: Ps,
}

/// The engine's channels and shared data path.
pub struct CopyEngine {
    cfg: CopyEngineConfig,
    /// When each channel has finished what it was given.
    chan_free: Vec<Ps>,
    /// When the data path is free.
    path_free: Ps,
    c: Counters,
}

/// When a copy's data moves: it starts at `start` (reads may be issued)
/// and the last byte has passed the engine at `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub start: Ps,
    pub end: Ps,
}

impl CopyEngine {
    pub fn new(cfg: &CopyEngineConfig) -> CopyEngine {
        CopyEngine { cfg: *cfg, chan_free: vec![0; cfg.channels as usize], path_free: 0, c: Counters::default() }
    }

    /// Books a copy of `len` bytes on channel `ch` whose descriptor the
    /// engine has at `now`: the channel's per-descriptor work, then the
    /// data path at the engine's bandwidth.
    pub fn book(&mut self, ch: usize, now: Ps, len: u64) -> Slot {
        let ch = ch % self.chan_free.len();
        let ready = now.max(self.chan_free[ch]) + self.cfg.descriptor_ps;
        let start = ready.max(self.path_free);
        let xfer = (len as u128 * PS_PER_S as u128).div_ceil(self.cfg.bandwidth_bytes_per_s as u128) as Ps;
        let end = start + xfer;
        self.c.wait_ps += start - now - self.cfg.descriptor_ps;
        self.c.copies += 1;
        self.c.bytes += len;
        self.c.busy_ps += xfer;
        self.path_free = end;
        self.chan_free[ch] = end;
        Slot { start, end }
    }

    pub fn result_json(&self) -> Value {
        let c = &self.c;
        json!({ "channels": self.chan_free.len(), "copies": c.copies, "bytes": c.bytes, "busy_ps": c.busy_ps, "wait_ps": c.wait_ps })
    }
}

impl HasStats for CopyEngine {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let c = &self.c;
        s.count("copies", c.copies, "Copies the engine performed");
        s.add("bytes", c.bytes as f64, "Byte", "Bytes the engine copied");
        s.add("busy_ps", c.busy_ps as f64, "Picosecond", "Time the engine's data path moved data");
        s.add("wait_ps", c.wait_ps as f64, "Picosecond", "Summed time copies waited for their channel or the data path");
    }

    fn reset_stats(&mut self) {
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_channel_moves_1460_b_at_the_datasheets_effective_rate() {
        // Back to back on one channel: 292 ns per descriptor + 292 ns of
        // data at 5 GB/s = 584 ns per 1460 B = 2.5 GB/s.
        let mut e = CopyEngine::new(&CopyEngineConfig::default());
        let mut last = Slot { start: 0, end: 0 };
        for _ in 0..100 {
            last = e.book(0, 0, 1460);
        }
        assert_eq!(last.end, 100 * 584_000);
        assert_eq!(last.start, last.end - 292_000);
    }

    #[test]
    fn channels_overlap_their_descriptor_work_but_share_the_data_path() {
        // Eight channels: the data path (5 GB/s) is the limit.
        let mut e = CopyEngine::new(&CopyEngineConfig::default());
        let end = (0..800).map(|i| e.book(i % 8, 0, 1460).end).max().unwrap();
        assert_eq!(end, 292_000 + 800 * 292_000);
    }

    #[test]
    fn bad_config_names_the_field() {
        let c = CopyEngineConfig { channels: 0, ..Default::default() };
        assert!(c.validate().unwrap_err().to_string().contains("copy_engine.channels"));
    }
}
