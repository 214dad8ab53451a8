//! PCIe: the I/O interconnect between a NIC and the host (SPEC §2.5).
//!
//! Models per-direction link bandwidth from generation and width after line
//! encoding and DLLP overhead, TLP framing (24 B per write or read request
//! with 64-bit addresses, 20 B per completion; payload split at Max Payload
//! Size, reads at Max Read Request Size, completions at MPS or the read
//! completion boundary), a one-way latency, posted writes vs non-posted reads
//! and a limit on outstanding read tags. Small transfers therefore get well
//! below the link rate, and large reads with few tags become latency-bound.
//!
//! * [`config`]: [`PcieConfig`] and presets with sources.
//! * [`tlp`]: rates, per-transfer byte accounting and the closed-form
//!   [`effective_bandwidth`] (pcie-bench's model, params.md §2c).
//! * Each direction's wire is an [`engine::timeline`](crate::engine::timeline::Timeline) of busy periods.
//! * [`link`]: [`PcieLink`], the timed model the NIC and DMA engine call.
//! * [`read_latency`]: each DMA read's latency as the device sees it, by kind.
//!
//! Read first: Neugebauer, Antichi, Zazo, Audzevich, López-Buedo, Moore,
//! "Understanding PCIe performance for end host networking", SIGCOMM 2018,
//! and `reference/params.md` §2.

pub mod config;
pub mod link;
pub mod nic_model;
pub mod read_latency;
pub mod tlp;

pub use config::PcieConfig;
pub use link::{Dir, DirStats, Kind, PcieLink};
pub use read_latency::ReadLatency;
pub use tlp::{effective_bandwidth, DmaOp};
