//! Cores: an interval-style timing model with cycle accounting (SPEC §2.7).
//!
//! A core runs units of [`Work`] (instructions plus the cache lines they
//! touch) against a [`MemPort`]; time is instructions × base CPI / frequency
//! plus load-miss latency, overlapped by a memory-level parallelism bounded by
//! the ROB and the L1D MSHRs (none for an in-order core). The formula is in
//! [`core`]'s header. Every picosecond lands in a [`Category`] of a
//! [`CycleAccount`], so per-packet cycle breakdowns come out of any run.

pub mod accounting;
pub mod config;
pub mod core;
pub mod mem_port;
pub mod work;

pub use self::accounting::{Category, CycleAccount, CyclesPerPacket};
pub use self::config::CoreConfig;
pub use self::core::Core;
pub use self::mem_port::{AccessCost, FixedMissMemory, IdealMemory, MemPort};
pub use self::work::{Access, CodeRegion, Work, LINE_BYTES};
