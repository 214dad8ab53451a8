//! The I/O path between a device and the host (`host.io.path`): a PCIe
//! link (`pcie`, the real machines; see [`crate::pcie`]) or a model of
//! gem5's I/O crossbar, Bridge and IOCache (`gem5_xbar`, gem5's machines),
//! where a study's simulated numbers come from.
//!
//! * [`config`]: [`IoConfig`] and gem5's parameters with their sources.
//! * [`xbar`]: one crossbar layer (a booked server, clock-edge aligned).
//! * [`bridge`]: the Bridge's request and response queues.
//! * [`gem5`]: [`Gem5Io`], the path composed as gem5's full-system configs
//!   build it, with the routes of DMA, MMIO and interrupts.
//!
//! [`IoPath`] is what a NIC device holds: both kinds answer the same calls
//! (`dma_write`, `dma_read`, `mmio_write`, `msi`).
//!
//! Read first: gem5's `src/mem/XBar.py`, `src/mem/noncoherent_xbar.cc`,
//! `src/mem/Bridge.py`, `src/mem/bridge.cc`, `configs/common/Caches.py`
//! and `configs/common/FSConfig.py`; `docs/reference/io-path.md`.

pub mod bridge;
pub mod config;
pub mod gem5;
pub mod xbar;

pub use config::{IoConfig, IoPathKind};
pub use gem5::Gem5Io;

use serde_json::Value;

use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::Ps;
use crate::error::Result;
use crate::pcie::{Kind, PcieConfig, PcieLink};

/// A device's I/O path. The PCIe link, on every real machine's hot path,
/// stays inline; gem5's path is boxed.
#[allow(clippy::large_enum_variant)]
pub enum IoPath {
    Pcie(PcieLink),
    Gem5(Box<Gem5Io>),
}

impl IoPath {
    /// The path `io` names, with `pcie` for the PCIe link.
    pub fn new(io: &IoConfig, pcie: &PcieConfig) -> Result<Self> {
        Ok(match io.path {
            IoPathKind::Pcie => IoPath::Pcie(PcieLink::new(pcie)?),
            IoPathKind::Gem5Xbar => IoPath::Gem5(Box::new(Gem5Io::new(io)?)),
        })
    }

    /// Whether a posted write's credits wait for the memory system to have
    /// it: then the write must reach the memory system when it is sent.
    #[inline]
    pub fn posted_credits_finite(&self) -> bool {
        match self {
            IoPath::Pcie(l) => l.credits_finite(),
            IoPath::Gem5(_) => false,
        }
    }

    /// The device writes `bytes` to host memory at `now`; returns when the
    /// write has reached the host side (the memory system's time comes on top).
    #[inline]
    pub fn dma_write(&mut self, now: Ps, bytes: u32, kind: Kind) -> Ps {
        match self {
            IoPath::Pcie(l) => l.dma_write(now, bytes, kind),
            IoPath::Gem5(g) => g.dma_write(now, bytes, kind),
        }
    }

    /// The device writes `bytes` at `now`; `host(arrive)` is when the
    /// memory system, reached at `arrive`, has made the write visible, and
    /// is returned. A PCIe root port holds the write's posted credits until then.
    #[inline]
    pub fn dma_write_to(&mut self, now: Ps, bytes: u32, kind: Kind, host: impl FnOnce(Ps) -> Ps) -> Ps {
        match self {
            IoPath::Pcie(l) => l.dma_write_to(now, bytes, kind, host),
            IoPath::Gem5(g) => {
                let arrive = g.dma_write(now, bytes, kind);
                host(arrive)
            }
        }
    }

    /// The device reads `bytes` at `now`, the host answering each request
    /// `host_time_ps` after it arrives; returns when the data is at the device.
    #[inline]
    pub fn dma_read(&mut self, now: Ps, bytes: u32, host_time_ps: Ps, kind: Kind) -> Ps {
        match self {
            IoPath::Pcie(l) => l.dma_read(now, bytes, host_time_ps, kind),
            IoPath::Gem5(g) => g.dma_read(now, bytes, host_time_ps, kind),
        }
    }

    /// The device reads `bytes` at `now`; `host(offset, len, at)` is when
    /// the memory system has those bytes, asked at `at`, when they reach
    /// it. The PCIe link asks once for the whole read, one link latency
    /// after `now` (as [`dma_read`](Self::dma_read)'s callers do); gem5's
    /// path asks line by line as each goes downstream.
    #[inline]
    pub fn dma_read_from(&mut self, now: Ps, bytes: u32, kind: Kind, host: &mut dyn FnMut(u32, u32, Ps) -> Ps) -> Ps {
        match self {
            IoPath::Pcie(l) => {
                let at = now + l.config().latency_ps;
                let h = host(0, bytes, at);
                l.dma_read(now, bytes, h.saturating_sub(at), kind)
            }
            IoPath::Gem5(g) => g.dma_read_with(now, bytes, kind, host),
        }
    }

    /// Whether a read's memory side can answer after the read's requests
    /// are made ([`dma_read_answered`](Self::dma_read_answered)): on a PCIe
    /// link, which asks the host once for the whole read; gem5's path asks
    /// line by line as each goes downstream.
    #[inline]
    pub fn answers_later(&self) -> bool {
        matches!(self, IoPath::Pcie(_))
    }

    /// [`dma_read_from`](Self::dma_read_from) on a PCIe link whose host
    /// has the bytes at `host_done`, asked one link latency after `now`.
    pub fn dma_read_answered(&mut self, now: Ps, bytes: u32, kind: Kind, host_done: Ps) -> Ps {
        self.dma_read_from(now, bytes, kind, &mut |_, _, _| host_done)
    }

    /// The host writes `bytes` to a device register at `now`; returns when it arrives.
    #[inline]
    pub fn mmio_write(&mut self, now: Ps, bytes: u32) -> Ps {
        match self {
            IoPath::Pcie(l) => l.mmio_write(now, bytes),
            IoPath::Gem5(g) => g.mmio_write(now, bytes),
        }
    }

    /// The device raises an interrupt at `now`; returns when the host has it.
    #[inline]
    pub fn msi(&mut self, now: Ps) -> Ps {
        match self {
            IoPath::Pcie(l) => l.msi(now),
            IoPath::Gem5(g) => g.msi(now),
        }
    }

    /// The PCIe link, if the path is one.
    pub fn pcie(&self) -> Option<&PcieLink> {
        match self {
            IoPath::Pcie(l) => Some(l),
            IoPath::Gem5(_) => None,
        }
    }

    /// The key of this path's counters in a NIC's JSON result and stats
    /// (`pcie` or `iobus`, gem5's name for its I/O crossbar).
    pub fn key(&self) -> &'static str {
        match self {
            IoPath::Pcie(_) => "pcie",
            IoPath::Gem5(_) => "iobus",
        }
    }

    /// Counters as JSON; `window_ps` is the measured time utilisations refer to.
    /// Busy time booked after the run's `end` is left out (`PcieLink::clip_busy_at`).
    pub fn clip_busy_at(&mut self, end: Ps) {
        match self {
            IoPath::Pcie(l) => l.clip_busy_at(end),
            IoPath::Gem5(g) => g.clip_busy_at(end),
        }
    }

    pub fn result_json(&self, window_ps: Ps) -> Value {
        match self {
            IoPath::Pcie(l) => l.result_json(window_ps),
            IoPath::Gem5(g) => g.result_json(window_ps),
        }
    }
}

impl HasStats for IoPath {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        match self {
            IoPath::Pcie(l) => l.report_stats(s),
            IoPath::Gem5(g) => g.report_stats(s),
        }
    }

    fn reset_stats(&mut self) {
        match self {
            IoPath::Pcie(l) => l.reset_stats(),
            IoPath::Gem5(g) => g.reset_stats(),
        }
    }
}
