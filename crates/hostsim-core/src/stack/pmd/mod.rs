//! The poll-mode driver's host-side state (SPEC 2.8), with DPDK semantics:
//! the mbuf mempool with its per-core cache. Each operation returns the
//! simulated addresses it touches, so the core timing model charges the
//! memory accesses at real addresses.
//!
//! Read first: DPDK Programmer's Guide, "Mempool Library" (per-lcore cache,
//! flush threshold) and "Mbuf Library"; params.md §6a for the defaults.

pub mod mempool;

pub use mempool::{Mempool, MempoolConfig};
