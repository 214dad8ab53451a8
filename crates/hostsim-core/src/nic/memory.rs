//! A NIC's on-board memory (`nic.memory`): DRAM on the card that the host
//! fills by DMA and the TX engine reads locally (SPEC §2.4, "On-NIC
//! memory"; the `nicmem` transmit scheme).
//!
//! ```text
//! host: descriptor "move n bytes from host address a to card address b"
//!   ─▶ NIC: DMA read of the host's bytes over PCIe ─▶ card DRAM write
//!   ─▶ completion written back to the host
//! TX: a frame whose payload lives on the card: the headers come over PCIe
//!   (one 64 B line, clipped to their real length), the payload from card DRAM
//! ```
//!
//! Card memory occupies its own address range ([`NIC_MEMORY_BASE`] and up);
//! a transmit descriptor whose payload address is in it is served from the
//! card. The DRAM is the host's DRAM model ([`Dram`]: channels of 64 B
//! transfers with queueing), with the card's channels and latency.
//!
//! Simplified: one address range per device (the host picks card
//! addresses; no allocator on the card); no card-side cache.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::mem::{lines, Agent, Dram, DramConfig};

/// Card addresses start here (far above any host address the model uses).
pub const NIC_MEMORY_BASE: u64 = 1 << 60;

/// Is `addr` on the card?
#[inline]
pub fn on_card(addr: u64) -> bool {
    addr >= NIC_MEMORY_BASE
}

/// The on-board memory of a NIC (`nic.memory`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NicMemoryConfig {
    /// Capacity (bytes).
    pub bytes: u64,
    /// Channels, per-channel peak bandwidth and unloaded latency, as `mem.dram`.
    pub channels: u32,
    pub channel_bandwidth_bytes_per_s: u64,
    pub idle_latency_ps: Ps,
}

impl NicMemoryConfig {
    /// The `xeon-6226r-fpga` card: 4 × 16 GiB DDR4-2400 (SPEC §4), one
    /// channel per module (estimate: the board's wiring is not described),
    /// each 2400 MT/s × 8 B = 19.2 GB/s [C]. Idle latency 150 ns: an
    /// estimate for an FPGA's DDR4 controller (slower than a CPU's, ~80 ns
    /// in params.md §4); no source was found.
    pub fn fpga_4x16g_ddr4_2400() -> Self {
        NicMemoryConfig { bytes: 64 << 30, channels: 4, channel_bandwidth_bytes_per_s: 19_200_000_000, idle_latency_ps: 150_000 }
    }

    pub fn validate(&self) -> Result<()> {
        if self.bytes < 1 << 20 {
            return Err(ConfigError::new("nic.memory.bytes", self.bytes.to_string(), ">= 1 MiB").into());
        }
        if !(1..=64).contains(&self.channels) {
            return Err(ConfigError::new("nic.memory.channels", self.channels.to_string(), "1 to 64").into());
        }
        if self.channel_bandwidth_bytes_per_s == 0 {
            return Err(ConfigError::new("nic.memory.channel_bandwidth_bytes_per_s", "0".into(), "a positive rate").into());
        }
        Ok(())
    }
}

/// The card's DRAM and what moved through it.
pub struct NicMemory {
    pub bytes: u64,
    dram: Dram,
    /// Header bytes read over PCIe and dropped by the header clip.
    pub clipped_bytes: u64,
}

impl NicMemory {
    pub fn new(cfg: &NicMemoryConfig) -> NicMemory {
        let dram = Dram::new(&DramConfig::flat(cfg.channels, cfg.channel_bandwidth_bytes_per_s, cfg.idle_latency_ps));
        NicMemory { bytes: cfg.bytes, dram, clipped_bytes: 0 }
    }

    /// Reads `len` bytes at card address `addr` at `now`; returns when the last line is in.
    pub fn read(&mut self, addr: u64, len: u32, now: Ps) -> Ps {
        lines(addr - NIC_MEMORY_BASE, len as u64).map(|l| now + self.dram.read(l, now, Agent::Device)).max().unwrap_or(now)
    }

    /// Writes `len` bytes at card address `addr` at `now`; returns when the last line is written.
    pub fn write(&mut self, addr: u64, len: u32, now: Ps) -> Ps {
        lines(addr - NIC_MEMORY_BASE, len as u64).map(|l| now + self.dram.write(l, now, Agent::Device)).max().unwrap_or(now)
    }

    pub fn reset_counters(&mut self) {
        crate::engine::stats::HasStats::reset_stats(&mut self.dram);
        self.clipped_bytes = 0;
    }

    pub fn result_json(&self) -> Value {
        let c = self.dram.counters();
        json!({
            "bytes": self.bytes,
            "bytes_read": c.bytes_read_device,
            "bytes_written": c.bytes_written_device,
            "busy_ps": self.dram.busy_ps(),
            "header_clip_bytes": self.clipped_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_reads_and_writes_queue_on_their_channels() {
        let mut m = NicMemory::new(&NicMemoryConfig::fpga_4x16g_ddr4_2400());
        // 1460 B = 23 lines over 4 channels: 6 on the busiest, 3.33 ns
        // each; the last waits for 5 (16 666.7 ps, rounded up).
        let t = m.write(NIC_MEMORY_BASE, 1460, 0);
        assert_eq!(t, 150_000 + 16_667);
        assert_eq!(m.read(NIC_MEMORY_BASE, 64, 1_000_000), 1_150_000);
        let j = m.result_json();
        assert_eq!((j["bytes_written"].as_u64(), j["bytes_read"].as_u64()), (Some(23 * 64), Some(64)));
        assert!(on_card(NIC_MEMORY_BASE) && !on_card(NIC_MEMORY_BASE - 1));
    }
}
