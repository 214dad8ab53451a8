//! Which I/O path a host's devices use (`host.io.path`), and the parameters
//! of gem5's I/O path: the I/O crossbar (`IOXBar`), the Bridge and the
//! IOCache. Every value is gem5's as read in its sources at commit
//! b1a44b89c7bae73fae2dc547bc1f871452075b85 (github.com/gem5/gem5); the
//! file is named at each field. `docs/reference/io-path.md` lists them.

use serde::{Deserialize, Serialize};

use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Result};

/// The path device DMA and MMIO take.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum IoPathKind {
    /// A PCIe link (`host.pcie`): the real machines.
    #[default]
    Pcie,
    /// gem5's I/O crossbar, Bridge and IOCache (`host.io.xbar`, `.bridge`, `.iocache`): gem5's machines.
    Gem5Xbar,
}

impl IoPathKind {
    pub fn name(self) -> &'static str {
        match self {
            IoPathKind::Pcie => "pcie",
            IoPathKind::Gem5Xbar => "gem5_xbar",
        }
    }
}

/// gem5's `IOXBar` (a `NoncoherentXBar`): one layer per destination port
/// for requests and one per source port for responses; a packet holds its
/// layer for one cycle plus ceil(bytes / width) cycles.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct XbarConfig {
    /// Clock of the crossbar's clock domain (Hz).
    pub clock_hz: u64,
    /// Datapath width per port (bytes per cycle).
    pub width_bytes: u32,
    /// Cycles a request spends deciding where to go (arbitration).
    pub frontend_latency_cycles: u32,
    /// Cycles a request spends being forwarded once decided.
    pub forward_latency_cycles: u32,
    /// Cycles a response spends crossing.
    pub response_latency_cycles: u32,
}

/// gem5's `Bridge`: a fixed delay, and queues of requests and of responses
/// it has promised to buffer; a request arriving at a full queue waits.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IoBridgeConfig {
    /// Latency of the bridge, each way (ps).
    pub delay_ps: Ps,
    /// Requests it buffers (gem5 `req_size`).
    pub req_queue_entries: u32,
    /// Responses it buffers (gem5 `resp_size`); a request that expects a
    /// response reserves one when it enters.
    pub resp_queue_entries: u32,
}

/// gem5's `IOCache` between the crossbar and the memory bus. No tag state is
/// modelled: every device access misses (see `io::gem5`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IoCacheConfig {
    /// With an IOCache (gem5's configs with caches); without, DMA crosses a second Bridge.
    pub enabled: bool,
    /// Cycles (crossbar clock) from a request's arrival to its miss going downstream (gem5 `tag_latency`).
    pub tag_latency_cycles: u32,
    /// Cycles from the fill's arrival to the response leaving (gem5 `response_latency`).
    pub response_latency_cycles: u32,
    /// Misses outstanding at once; a further one waits for a free MSHR.
    pub mshrs: u32,
}

/// `host.io`: the path and, for `gem5_xbar`, its parts.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct IoConfig {
    /// `pcie` (default) or `gem5_xbar`.
    #[serde(default)]
    pub path: IoPathKind,
    #[serde(default)]
    pub xbar: XbarConfig,
    #[serde(default)]
    pub bridge: IoBridgeConfig,
    #[serde(default)]
    pub iocache: IoCacheConfig,
}

impl Default for XbarConfig {
    fn default() -> Self {
        XbarConfig {
            // The iobus runs in the system clock domain (ClockedObject.py:
            // clk_domain defaults to the parent's; fs.py sets the system's to
            // --sys-clock), whose default is 1GHz (configs/common/Options.py).
            clock_hz: 1_000_000_000,
            // src/mem/XBar.py class IOXBar: width = 16, frontend_latency = 2,
            // forward_latency = 1, response_latency = 2.
            width_bytes: 16,
            frontend_latency_cycles: 2,
            forward_latency_cycles: 1,
            response_latency_cycles: 2,
        }
    }
}

impl Default for IoBridgeConfig {
    fn default() -> Self {
        IoBridgeConfig {
            // configs/common/FSConfig.py and configs/example/arm/devices.py:
            // Bridge(delay="50ns"); src/mem/Bridge.py: req_size = resp_size = 16.
            delay_ps: 50_000,
            req_queue_entries: 16,
            resp_queue_entries: 16,
        }
    }
}

impl Default for IoCacheConfig {
    fn default() -> Self {
        // configs/common/Caches.py class IOCache: tag/data/response latency
        // 50, mshrs 20 (size 1kB, assoc 8, tgts_per_mshr 12 not used: no tag
        // state); enabled as in configs/deprecated/example/fs.py and
        // configs/example/arm/devices.py when the system has caches.
        IoCacheConfig { enabled: true, tag_latency_cycles: 50, response_latency_cycles: 50, mshrs: 20 }
    }
}

impl IoConfig {
    /// gem5's I/O path with its default parameters.
    pub fn gem5() -> Self {
        IoConfig { path: IoPathKind::Gem5Xbar, ..Self::default() }
    }

    /// gem5's I/O path with SPEC §4's I/O cache for `a72-quad`: 24 cycles
    /// (for each of tag and response latency, as gem5's Caches.py sets the
    /// three latencies of a cache alike) and 16 MSHRs, where gem5's default
    /// IOCache has 50 cycles and 20 MSHRs.
    pub fn gem5_a72_quad() -> Self {
        let iocache = IoCacheConfig { tag_latency_cycles: 24, response_latency_cycles: 24, mshrs: 16, ..IoCacheConfig::default() };
        IoConfig { iocache, ..Self::gem5() }
    }

    /// One crossbar cycle (ps).
    pub fn cycle_ps(&self) -> Ps {
        PS_PER_S.div_ceil(self.xbar.clock_hz.max(1))
    }

    /// How long after a device issues a request it reaches the memory
    /// side (the time the memory system's answer is measured from).
    pub fn request_latency_ps(&self) -> Ps {
        let x = &self.xbar;
        let cache = if self.iocache.enabled { self.iocache.tag_latency_cycles as Ps * self.cycle_ps() } else { self.bridge.delay_ps };
        (x.frontend_latency_cycles + x.forward_latency_cycles) as Ps * self.cycle_ps() + cache
    }

    /// Checks every field; errors name the field as `io.<name>`.
    pub fn validate(&self) -> Result<()> {
        let x = &self.xbar;
        check((1_000_000..=100_000_000_000).contains(&x.clock_hz), "io.xbar.clock_hz", x.clock_hz, "1 MHz to 100 GHz")?;
        check((1..=1024).contains(&x.width_bytes), "io.xbar.width_bytes", x.width_bytes, "1 to 1024")?;
        for (f, v) in [
            ("io.xbar.frontend_latency_cycles", x.frontend_latency_cycles),
            ("io.xbar.forward_latency_cycles", x.forward_latency_cycles),
            ("io.xbar.response_latency_cycles", x.response_latency_cycles),
            ("io.iocache.tag_latency_cycles", self.iocache.tag_latency_cycles),
            ("io.iocache.response_latency_cycles", self.iocache.response_latency_cycles),
        ] {
            check(v <= 10_000, f, v, "0 to 10000")?;
        }
        let b = &self.bridge;
        check(b.delay_ps <= 1_000_000_000, "io.bridge.delay_ps", b.delay_ps, "<= 1 ms (1000000000 ps)")?;
        check((1..=4096).contains(&b.req_queue_entries), "io.bridge.req_queue_entries", b.req_queue_entries, "1 to 4096")?;
        check((1..=4096).contains(&b.resp_queue_entries), "io.bridge.resp_queue_entries", b.resp_queue_entries, "1 to 4096")?;
        check((1..=4096).contains(&self.iocache.mshrs), "io.iocache.mshrs", self.iocache.mshrs, "1 to 4096")?;
        Ok(())
    }
}

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_gem5s_and_valid() {
        let c = IoConfig::gem5();
        c.validate().unwrap();
        assert_eq!(c.cycle_ps(), 1_000);
        assert_eq!((c.xbar.width_bytes, c.xbar.frontend_latency_cycles, c.xbar.forward_latency_cycles, c.xbar.response_latency_cycles), (16, 2, 1, 2));
        assert_eq!((c.bridge.delay_ps, c.bridge.req_queue_entries, c.bridge.resp_queue_entries), (50_000, 16, 16));
        assert_eq!((c.iocache.tag_latency_cycles, c.iocache.mshrs), (50, 20));
        assert_eq!(c.request_latency_ps(), 53_000);
        assert_eq!(IoConfig::default().path, IoPathKind::Pcie);
        let a = IoConfig::gem5_a72_quad();
        assert_eq!((a.iocache.tag_latency_cycles, a.iocache.response_latency_cycles, a.iocache.mshrs), (24, 24, 16));
    }

    #[test]
    fn errors_name_the_field_and_json_round_trips() {
        let mut c = IoConfig::gem5();
        c.bridge.req_queue_entries = 0;
        assert!(c.validate().unwrap_err().to_string().starts_with("io.bridge.req_queue_entries"));
        let text = serde_json::to_string(&IoConfig::gem5_a72_quad()).unwrap();
        assert!(text.contains(r#""path":"gem5_xbar""#), "{text}");
        assert_eq!(serde_json::from_str::<IoConfig>(&text).unwrap(), IoConfig::gem5_a72_quad());
        let only: IoConfig = serde_json::from_str(r#"{"path": "gem5_xbar"}"#).unwrap();
        assert_eq!(only, IoConfig::gem5());
        assert!(serde_json::from_str::<IoConfig>(r#"{"path": "amba"}"#).is_err());
    }
}
