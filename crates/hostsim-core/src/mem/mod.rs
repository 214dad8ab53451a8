//! The memory system: per-core L1D and L2, a shared LLC with direct cache
//! access (DDIO) for device writes, snooping coherence between cores, and
//! channelled DRAM with queueing (SPEC §2.6).
//!
//! [`MemSystem`] is the one entry point: `core_access` for a core's load or
//! store of one line, `device_write` / `device_read` for DMA. Every call
//! takes the current time and returns a latency or a completion time, so the
//! model runs inside any event loop and is unit-tested without one. Counters
//! come out through `HasStats` and `result_json`.
//!
//! Files: `cache` (one set-associative LRU array), `hierarchy` (core
//! accesses, fills, victims, coherence), `code` (instruction fetch: the
//! L1I and its misses to the L2), `dca` (device accesses), `dram`
//! (channels and queueing), `banks`, `ddr` and `turnaround` (banks, rows and
//! DDR timing behind a channel), `write_queue` (the controller's write
//! queue), `read_queue` (its read queue, first ready first), `later` (core loads that wait in it), `prefetch` (the L2's stride prefetcher), `config` (parameters and presets), `stats` (reporting). Read params.md §3–§5 for where the numbers come from.

mod banks;
pub mod cache;
mod code;
pub mod config;
pub mod ddr;
mod dca;
pub mod dram;
pub(crate) mod filter;
mod later;
pub mod prefetch;
mod read_queue;
pub mod hierarchy;
mod stats;
mod turnaround;
mod write_queue;

pub use cache::{lines, Cache, LINE_BYTES};
pub use config::{CacheConfig, DcaConfig, DramConfig, Inclusion, L1iConfig, LlcConfig, MemConfig, ReadQueueConfig, Scheduler};
pub use ddr::{AddressMap, DdrTiming, DramModel};
pub use prefetch::PrefetchConfig;
pub use dram::{Agent, Dram, DramCounters, Read};
pub use read_queue::Ticket;
pub use hierarchy::{Access, Level, LevelCounters, MemCounters, MemSystem, Traffic};
