//! The poll-mode driver's parameters, with DPDK's names and defaults
//! (`host.pmd.*`), and the instruction counts of its steps.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::stack::mempool::MempoolConfig;
use crate::stack::ring::RingCosts;

fn default_tx_buffer() -> u32 {
    32
}

fn default_tx_drain_ps() -> Ps {
    100_000_000
}

fn invalid(field: &str, value: impl ToString, allowed: &str) -> crate::error::Error {
    ConfigError::new(field, value.to_string(), allowed).into()
}

/// The poll-mode driver, with DPDK's parameter names and defaults.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PmdConfig {
    /// Packets per rx_burst / tx_burst (testpmd `--burst`, default 32; params.md §6a).
    /// At most `rxd`, checked with the rings.
    #[schemars(range(min = 1))]
    pub burst: u32,
    /// RX ring descriptors (testpmd `--rxd`; ethdev fallback 512, params.md §6a).
    pub rxd: u32,
    /// TX ring descriptors (`--txd`, 512).
    pub txd: u32,
    /// Refill doorbell every N received packets (`rx_free_thresh`, 32).
    pub rx_free_thresh: u32,
    /// Free transmitted mbufs when fewer than N descriptors are free (`tx_free_thresh`, 32).
    pub tx_free_thresh: u32,
    /// Ask for a completion write-back every N descriptors (`tx_rs_thresh`, 32).
    pub tx_rs_thresh: u32,
    /// Packets a TX buffer holds (`rte_eth_tx_buffer_init`) in the
    /// applications that transmit through one (l2fwd, l3fwd; see
    /// `App::tx_buffering`): 32, `MAX_PKT_BURST` of DPDK's l2fwd and l3fwd
    /// (params.md §6a). 0: those applications send each burst at once.
    #[serde(default = "default_tx_buffer")]
    pub tx_buffer: u32,
    /// How often they flush what their buffers hold: 100 µs, their
    /// `BURST_TX_DRAIN_US` (params.md §6a, l2fwd).
    #[serde(default = "default_tx_drain_ps")]
    pub tx_drain_ps: Ps,
    pub mempool: MempoolConfig,
    pub costs: PmdCosts,
}

fn default_pmd_code_bytes() -> u32 {
    7546
}

/// Instruction counts of the driver's steps. Calibrated (see `PmdCosts::default`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PmdCosts {
    /// Fixed part of one rx_burst call (loop set-up, tail bookkeeping).
    pub rx_burst_instr: u32,
    /// Per received packet: descriptor parse, mbuf field initialisation.
    pub rx_pkt_instr: u32,
    /// Per refilled descriptor: write the new buffer address.
    pub refill_instr: u32,
    /// Fixed part of one tx_burst call.
    pub tx_burst_instr: u32,
    /// Per transmitted packet: build and write the descriptor.
    pub tx_pkt_instr: u32,
    /// Per mbuf freed after transmission (tx_free_bufs).
    pub tx_free_instr: u32,
    /// Per mbuf moved by a mempool bulk get or put.
    pub mempool_instr: u32,
    /// One empty poll of the RX ring (the loop around it included).
    pub empty_poll_instr: u32,
    /// Application instructions per cache line when it reads every byte.
    pub touch_instr_per_line: u32,
    /// Application instructions per packet for a header rewrite (mac, macswap, l2fwd).
    pub header_instr: u32,
    /// Operations on the rings between cores (pipeline mode).
    #[serde(default)]
    pub ring: RingCosts,
    /// Several cores on one receive queue (`host.rx_sharing`).
    #[serde(default)]
    pub sharing: SharingCosts,
    /// Code one pass of the poll loop runs (bytes, fetched through the
    /// L1I): rx_burst, tx_burst with the mempool and the loop. 7 546: the
    /// ixgbe vector RX and TX paths' static 17 381 B ÷ 2.45 (testpmd's
    /// measured static-to-executed ratio) + testpmd's loop and TLS lookup as
    /// executed, 452 B (docs/reference/code-footprints.md §1.3–1.4; [C]).
    #[serde(default = "default_pmd_code_bytes")]
    pub code_bytes: u32,
}

/// What sharing one receive queue between cores costs beyond the memory
/// accesses themselves (those — the shared lines moving between the cores'
/// caches — the memory system charges).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SharingCosts {
    /// Instructions of one claim attempt around its compare-and-swap (load
    /// the index, compute the new one, branch on the result; estimate).
    pub cas_instr: u32,
    /// The atomic's own latency when its line is already the core's: 6.25 ns,
    /// an uncontended `compareExchange` on an x86 server (params.md §5,
    /// RAMCloud benchmarks) [V]. A line held by another core adds the
    /// core-to-core transfer (`host.mem.transfer_cycles`).
    pub atomic_ps: u64,
    /// Instructions of one publication or read of a join line (estimate).
    pub join_instr: u32,
    /// Per entry taken from the software ring: load the mbuf pointer, prefetch (estimate).
    pub buffer_instr: u32,
}

impl Default for SharingCosts {
    fn default() -> Self {
        SharingCosts { cas_instr: 6, atomic_ps: 6_250, join_instr: 8, buffer_instr: 6 }
    }
}

/// How several cores share one receive queue (`host.rx_sharing`; SPEC 2.11,
/// the single-queue designs of study 3).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RxSharing {
    /// One core owns the queue.
    #[default]
    None,
    /// Every core polls the queue and claims entries with compare-and-swap on a shared index.
    Arbitration,
    /// The queue's entries are split by index bits into one area per core; no CAS.
    Range,
    /// Core 0 alone touches the hardware rings (completion queue, work
    /// queue, doorbell record) and publishes to each core how far its area
    /// has completions; every core (core 0 too) takes the packets of its area.
    ParentWorker,
}

impl RxSharing {
    pub fn name(self) -> &'static str {
        match self {
            RxSharing::None => "none",
            RxSharing::Arbitration => "arbitration",
            RxSharing::Range => "range",
            RxSharing::ParentWorker => "parent_worker",
        }
    }

    /// Whether the queue is split into per-core areas by index bits.
    pub fn areas(self) -> bool {
        matches!(self, RxSharing::Range | RxSharing::ParentWorker)
    }
}

impl Default for PmdCosts {
    /// Calibration target (the only one, issue 3 acceptance 6): `testpmd io`
    /// at 64 B below the knee spends 60–120 RX + TX + mempool cycles per packet
    /// on a 3 GHz-class core (params.md §6b: DPDK l2fwd 60–62 cycles, ixy
    /// ~105). The split follows the l2fwd profile of params.md §6b (RX ≈ 35,
    /// TX ≈ 20 cycles at CPI 0.5 ≈ 2 instructions per cycle); the counts are
    /// estimates tuned to that target, not measurements.
    fn default() -> Self {
        PmdCosts {
            rx_burst_instr: 30,
            rx_pkt_instr: 40,
            refill_instr: 12,
            tx_burst_instr: 30,
            tx_pkt_instr: 28,
            tx_free_instr: 8,
            mempool_instr: 6,
            empty_poll_instr: 40,
            touch_instr_per_line: 8,
            header_instr: 12,
            ring: RingCosts::default(),
            sharing: SharingCosts::default(),
            code_bytes: default_pmd_code_bytes(),
        }
    }
}

/// Pipeline mode (SPEC 2.8): the first `rx_cores` cores poll the NIC and
/// hand each burst to a worker core through that worker's ring; the workers
/// run the application and transmit, each on its own TX queue. `rx_cores`
/// 0 is run to completion (every core polls, processes and transmits).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    pub rx_cores: u32,
    /// Slots of each worker's ring (`rte_ring` size: a power of two, one
    /// slot stays empty; 1024 as DPDK's examples commonly size them, an estimate).
    pub ring_size: u32,
    /// Bulk ring operations (`rte_ring_enqueue_bulk`/`dequeue_bulk`): a
    /// burst goes in whole or not at all, and a worker takes a full burst
    /// or nothing; false is the burst calls (as many as fit or are there).
    #[serde(default)]
    pub bulk: bool,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig { rx_cores: 0, ring_size: 1024, bulk: false }
    }
}

impl Default for PmdConfig {
    fn default() -> Self {
        PmdConfig {
            burst: 32,
            rxd: 512,
            txd: 512,
            rx_free_thresh: 32,
            tx_free_thresh: 32,
            tx_rs_thresh: 32,
            tx_buffer: default_tx_buffer(),
            tx_drain_ps: default_tx_drain_ps(),
            mempool: MempoolConfig::default(),
            costs: PmdCosts::default(),
        }
    }
}

impl PmdConfig {
    /// DPDK's own limits (ixgbe: rings 32..=4096 in multiples of 8; ethdev:
    /// tx_rs_thresh ≤ tx_free_thresh < txd − 3, tx_rs_thresh < txd − 2 and
    /// a divisor of txd; params.md §6a).
    pub fn validate(&self) -> Result<()> {
        for (field, n) in [("pmd.rxd", self.rxd), ("pmd.txd", self.txd)] {
            if !(32..=4096).contains(&n) || n % 8 != 0 {
                return Err(invalid(field, n, "32 to 4096, a multiple of 8 (what the ixgbe PMD accepts)"));
            }
        }
        if self.burst == 0 || self.burst > self.rxd {
            return Err(invalid("pmd.burst", self.burst, &format!("1 to pmd.rxd ({})", self.rxd)));
        }
        // The driver rings the tail doorbell once more than rx_free_thresh
        // refills are held; the NIC owns rxd − 1 descriptors at most, so a
        // threshold of rxd − 1 would never ring it.
        if self.rx_free_thresh == 0 || self.rx_free_thresh >= self.rxd - 1 {
            return Err(invalid("pmd.rx_free_thresh", self.rx_free_thresh, &format!("1 to pmd.rxd - 2 ({})", self.rxd - 2)));
        }
        if self.tx_free_thresh == 0 || self.tx_free_thresh >= self.txd - 3 {
            return Err(invalid("pmd.tx_free_thresh", self.tx_free_thresh, &format!("1..pmd.txd - 3 ({})", self.txd - 3)));
        }
        if self.tx_rs_thresh == 0 || self.tx_rs_thresh > self.tx_free_thresh || self.tx_rs_thresh >= self.txd - 2 || self.txd % self.tx_rs_thresh != 0 {
            return Err(invalid(
                "pmd.tx_rs_thresh",
                self.tx_rs_thresh,
                &format!("1 to pmd.tx_free_thresh ({}), < pmd.txd - 2, and a divisor of pmd.txd ({})", self.tx_free_thresh, self.txd),
            ));
        }
        if self.tx_buffer > self.txd {
            return Err(invalid("pmd.tx_buffer", self.tx_buffer, &format!("0 to pmd.txd ({})", self.txd)));
        }
        if self.tx_buffer > 0 && self.tx_drain_ps == 0 {
            return Err(invalid("pmd.tx_drain_ps", 0, "a positive time (the buffers must be flushed)"));
        }
        // Whether the pool fills the rings is the host's to say (`HostConfig::pool_mbufs`): it knows the queues.
        self.mempool.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpdk_ring_limits() {
        let bad = |f: fn(&mut PmdConfig)| {
            let mut p = PmdConfig::default();
            f(&mut p);
            p.validate().unwrap_err().to_string()
        };
        assert!(bad(|p| p.rxd = 100).starts_with("pmd.rxd"));
        assert!(bad(|p| p.txd = 8192).starts_with("pmd.txd"));
        assert!(bad(|p| p.burst = 1024).starts_with("pmd.burst"));
        assert!(bad(|p| p.tx_rs_thresh = 64).starts_with("pmd.tx_rs_thresh"));
        assert!(bad(|p| p.tx_free_thresh = 510).starts_with("pmd.tx_free_thresh"));
        // rxd − 1 would never ring the doorbell: the NIC owns rxd − 1 descriptors at most.
        assert!(bad(|p| p.rx_free_thresh = 511).starts_with("pmd.rx_free_thresh"));
        assert!(bad(|p| p.tx_free_thresh = u32::MAX - 1).starts_with("pmd.tx_free_thresh"));
        assert!(bad(|p| p.mempool.cache_size = u32::MAX).starts_with("pmd.mempool.cache_size"));
        assert!(bad(|p| p.tx_buffer = 513).starts_with("pmd.tx_buffer"));
        assert!(bad(|p| p.tx_drain_ps = 0).starts_with("pmd.tx_drain_ps"));
    }
}
