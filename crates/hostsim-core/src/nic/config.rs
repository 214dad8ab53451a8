//! NIC parameters: how many NIC devices and ports a host has, the queues
//! and RSS of a port, and each port's buffers, descriptor caches and
//! thresholds. Sizes in bytes or descriptors, times in ps.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};


#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    /// On-chip receive packet buffer. 82599: 512 KB shared by all queues
    /// (datasheet §7.1.3.1); one queue pair uses it all here.
    pub rx_fifo_bytes: u64,
    /// On-chip transmit packet buffer (82599: 160 KB, datasheet §7.2.3.1).
    pub tx_fifo_bytes: u64,
    /// RX descriptors the NIC caches on chip (82599: 32 per queue; estimate for others).
    pub rx_desc_cache: u32,
    /// Fetch more descriptors when fewer than this many free ones are cached
    /// (82599 RXDCTL.PTHRESH; DPDK ixgbe default 8, params.md §6a).
    pub rx_prefetch_threshold: u32,
    /// Write completed RX descriptors back once this many have accumulated
    /// (RXDCTL.WTHRESH; the literature's added parameter, SPEC 2.4). Default
    /// 1: the 82599 writes back each RX descriptor (params.md §2d; DPDK's
    /// ixgbe sets WTHRESH 0, params.md §6a).
    pub rx_wb_threshold: u32,
    /// … or when the oldest completed descriptor has waited this long
    /// (82599 EITR-driven write-back; estimate).
    pub rx_wb_timer_ps: Ps,
    /// TX descriptors fetched per request (82599: up to 40, params.md §2d).
    pub tx_fetch_batch: u32,
    /// TX descriptors the NIC caches on chip, fetched and in flight
    /// included: a fetch is issued whenever the tail has descriptors the
    /// cache has room for, so several may be in flight (82599: 40 per queue,
    /// one full batch; datasheet §7.2.3, not re-read here).
    pub tx_desc_cache: u32,
    /// NIC devices (chips) in the host, each behind its own PCIe link.
    #[serde(default = "one")]
    pub nics: u32,
    /// Ports of each device; they share its PCIe link and packet rate.
    #[serde(default = "one")]
    pub ports_per_nic: u32,
    /// Receive queues RSS can spread a port's traffic over (82599: 16,
    /// `IXGBE_MAX_RSS_INDICES`, Linux ixgbe driver).
    #[serde(default = "default_max_queues")]
    pub max_queues: u32,
    /// Frames per second the device processes in each direction, all its
    /// ports together, whatever the link rate (0: no limit beyond PCIe and
    /// the wire). Such limits are documented for some chips (XL710: ~37 Mpps
    /// for the device below 160 B; ConnectX-6 EN: 215 M messages/s); none was
    /// found for the 82599, X540 or ConnectX-5, whose presets model their
    /// PCIe links instead (docs/reference/ports-queues-cores.md §1).
    #[serde(default)]
    pub max_pps: u64,
    /// Frames whose payload reads a port's TX engine has in flight at once
    /// (0: as many as the TX FIFO has room for, the read tags of a PCIe
    /// link bounding them there). gem5's i8254xGBe reads one frame at a
    /// time: its `txStateMachine` starts the next frame's DMA only once no
    /// packet is waiting (gem5 src/dev/net/i8254xGBe.cc).
    #[serde(default)]
    pub tx_reads_in_flight: u32,
    /// The 40-byte Toeplitz key, as hex (default: the Microsoft verification
    /// key, params.md §9, which DPDK's ixgbe tests use).
    #[serde(default = "default_rss_key")]
    pub rss_key: String,
    /// Entries of the RSS redirection table (82599: 128, params.md §9).
    #[serde(default = "default_reta_size")]
    pub reta_size: u32,
    /// How a receive queue and its driver meet (`queue.rs`): `ixgbe`
    /// (descriptors written back in place, an MMIO tail doorbell) or
    /// `connectx` (a work queue of buffer descriptors, a completion queue
    /// the NIC writes, a doorbell record in host memory the NIC reads).
    #[serde(default)]
    pub queue_model: QueueModel,
    /// Bytes of a completion queue entry (`connectx`): DPDK's mlx5 driver
    /// matches the RX CQE to the cache line, 64 B on x86 ("Match the size
    /// of Rx completion entry to the size of a cacheline", mlx5.c, setting
    /// MLX5_CQE_SIZE) [V].
    #[serde(default = "default_cqe_bytes")]
    pub cqe_bytes: u32,
    /// Keep the 4 B FCS in received buffers (the 82599's HLREG0.RXCRCSTRP
    /// cleared; DPDK's `RTE_ETH_RX_OFFLOAD_KEEP_CRC`, `hw_strip_crc = 0`
    /// in DPDK 1.x/2.x examples): the DMA write is the whole frame.
    /// Default false: the FCS is stripped, DMA length = frame − 4 (params.md §1).
    #[serde(default)]
    pub keep_crc: bool,
    /// The card's on-board memory (none on most NICs; `xeon-6226r-fpga`'s
    /// FPGA card has 4 × 16 GiB, `memory.rs`).
    #[serde(default)]
    pub memory: Option<super::memory::NicMemoryConfig>,
}

/// See [`NicConfig::queue_model`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum QueueModel {
    #[default]
    Ixgbe,
    Connectx,
}

fn default_cqe_bytes() -> u32 {
    64
}

fn one() -> u32 {
    1
}

fn default_max_queues() -> u32 {
    16
}

fn default_rss_key() -> String {
    super::rss::key_hex(&super::rss::MICROSOFT_KEY)
}

fn default_reta_size() -> u32 {
    128
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            rx_fifo_bytes: 512 * 1024,
            tx_fifo_bytes: 160 * 1024,
            rx_desc_cache: 32,
            rx_prefetch_threshold: 8,
            rx_wb_threshold: 1,
            rx_wb_timer_ps: 2_000_000,
            tx_fetch_batch: 40,
            tx_desc_cache: 40,
            nics: 1,
            ports_per_nic: 1,
            max_queues: default_max_queues(),
            max_pps: 0,
            tx_reads_in_flight: 0,
            rss_key: default_rss_key(),
            reta_size: default_reta_size(),
            queue_model: QueueModel::Ixgbe,
            cqe_bytes: default_cqe_bytes(),
            keep_crc: false,
            memory: None,
        }
    }
}

impl NicConfig {
    /// A 100 GbE NIC. Its RX descriptor cache is sized by the bandwidth-delay
    /// product rather than copied from the 10 GbE 82599: keeping 148.8 Mpps
    /// (64 B at line rate) flowing across a descriptor fetch round trip of
    /// about 1 µs (params.md §2e) needs ~150 descriptors fetched ahead, so the
    /// cache holds 256 and prefetches below 128 (estimate; the on-chip sizes
    /// of 100 GbE NICs are not published). FIFOs as the 82599 (estimate).
    ///
    /// Queues: DPDK's mlx5 driver takes the queue count from the device and
    /// caps the redirection table at 512 entries (docs/reference/
    /// ports-queues-cores.md §2) [V]; 128 queues per port is an estimate
    /// within what such NICs offer.
    pub fn nic_100g() -> Self {
        NicConfig { rx_desc_cache: 256, rx_prefetch_threshold: 128, tx_desc_cache: 256, max_queues: 128, reta_size: 512, ..NicConfig::default() }
    }

    /// Ports on the host in all.
    pub fn max_ports(&self) -> u32 {
        self.nics.saturating_mul(self.ports_per_nic)
    }
}

fn err(field: &str, value: impl ToString, allowed: &str) -> crate::error::Error {
    ConfigError::new(field, value.to_string(), allowed).into()
}

impl NicConfig {
    pub fn validate(&self) -> Result<()> {
        if self.rx_fifo_bytes < 9216 {
            return Err(err("nic.rx_fifo_bytes", self.rx_fifo_bytes, ">= 9216 (one jumbo frame)"));
        }
        if self.tx_fifo_bytes < 9216 {
            return Err(err("nic.tx_fifo_bytes", self.tx_fifo_bytes, ">= 9216 (one jumbo frame)"));
        }
        // (No ring holds more than 65536 descriptors: a larger cache is never full.)
        if !(1..=65536).contains(&self.rx_desc_cache) {
            return Err(err("nic.rx_desc_cache", self.rx_desc_cache, "1 to 65536"));
        }
        if !(1..=65536).contains(&self.tx_desc_cache) {
            return Err(err("nic.tx_desc_cache", self.tx_desc_cache, "1 to 65536"));
        }
        if self.rx_prefetch_threshold > self.rx_desc_cache {
            return Err(err("nic.rx_prefetch_threshold", self.rx_prefetch_threshold, &format!("<= nic.rx_desc_cache ({})", self.rx_desc_cache)));
        }
        if self.rx_wb_threshold == 0 || self.rx_wb_threshold > self.rx_desc_cache {
            return Err(err("nic.rx_wb_threshold", self.rx_wb_threshold, &format!("1 to nic.rx_desc_cache ({})", self.rx_desc_cache)));
        }
        if self.rx_wb_timer_ps == 0 || self.rx_wb_timer_ps > 1_000_000_000_000 {
            return Err(err("nic.rx_wb_timer_ps", self.rx_wb_timer_ps, "1 ps to 1 s"));
        }
        if self.tx_fetch_batch == 0 || self.tx_fetch_batch > self.tx_desc_cache {
            return Err(err("nic.tx_fetch_batch", self.tx_fetch_batch, &format!("1 to nic.tx_desc_cache ({})", self.tx_desc_cache)));
        }
        if !(1..=16).contains(&self.nics) {
            return Err(err("nic.nics", self.nics, "1 to 16"));
        }
        if !(1..=8).contains(&self.ports_per_nic) {
            return Err(err("nic.ports_per_nic", self.ports_per_nic, "1 to 8"));
        }
        if !(1..=128).contains(&self.max_queues) {
            return Err(err("nic.max_queues", self.max_queues, "1 to 128"));
        }
        if self.max_pps > 10_000_000_000 {
            return Err(err("nic.max_pps", self.max_pps, "0 (no limit) to 10^10 frames per second"));
        }
        if self.cqe_bytes != 64 && self.cqe_bytes != 128 {
            return Err(err("nic.cqe_bytes", self.cqe_bytes, "64 or 128 (a cache line)"));
        }
        super::rss::validate(&self.rss_key, self.reta_size)?;
        if let Some(m) = &self.memory {
            m.validate()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wb_threshold_larger_than_cache_is_an_error() {
        assert!(NicConfig::default().validate().is_ok());
        let c = NicConfig { rx_wb_threshold: 64, ..NicConfig::default() };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("nic.rx_wb_threshold") && e.contains("rx_desc_cache (32)"), "{e}");
        let c = NicConfig { rx_fifo_bytes: 100, ..NicConfig::default() };
        assert!(c.validate().unwrap_err().to_string().starts_with("nic.rx_fifo_bytes"));
        let c = NicConfig { tx_fetch_batch: 64, ..NicConfig::default() };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("nic.tx_fetch_batch") && e.contains("tx_desc_cache (40)"), "{e}");
    }

    #[test]
    fn descriptor_caches_larger_than_any_ring_are_refused_by_name() {
        for (c, field) in [
            (NicConfig { rx_desc_cache: 4_000_000_000, ..NicConfig::default() }, "nic.rx_desc_cache"),
            (NicConfig { tx_desc_cache: 0, ..NicConfig::default() }, "nic.tx_desc_cache"),
            (NicConfig { tx_desc_cache: 65537, ..NicConfig::default() }, "nic.tx_desc_cache"),
        ] {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.starts_with(field) && e.ends_with("(allowed: 1 to 65536)"), "{e}");
        }
        assert!(NicConfig { rx_desc_cache: 65536, tx_desc_cache: 65536, tx_fetch_batch: 40, ..NicConfig::default() }.validate().is_ok());
    }
}
