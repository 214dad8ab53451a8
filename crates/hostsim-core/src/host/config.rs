//! Configuration of a simulated host: core, memory system, PCIe, NIC,
//! poll-mode driver and the application it runs, with named presets.
//!
//! The presets here are the source of truth for machine parameters; each
//! component's constructor cites its sources (params.md rows) or says it is an
//! estimate. The Python package asks the core for a preset
//! (`hostsim._core.host_preset`) and applies the user's overrides to it.

use serde::{Deserialize, Serialize};

pub use crate::apps::config::{AppConfig, ForwardMode, KvsAppConfig};
use crate::cpu::CoreConfig;
use crate::error::{range_text, ConfigError, Result};
use crate::mem::MemConfig;
use crate::dma::CopyEngineConfig;
use crate::io::{IoConfig, IoPathKind};
use crate::nic::memory::NicMemoryConfig;
use crate::nic::NicConfig;
use crate::pcie::PcieConfig;
use crate::stack::kernel::config::TxScheme;
pub use crate::stack::kernel::KernelConfig;
pub use crate::stack::pmd::config::{PipelineConfig, PmdConfig, PmdCosts, RxSharing};
use crate::nic::QueueModel;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub cpu: CoreConfig,
    pub mem: MemConfig,
    pub pcie: PcieConfig,
    /// The devices' I/O path: `pcie` (the link above, default) or gem5's
    /// I/O crossbar, Bridge and IOCache (`gem5_xbar`).
    #[serde(default)]
    pub io: IoConfig,
    pub nic: NicConfig,
    pub pmd: PmdConfig,
    /// The Linux kernel stack model (used with `stack = "kernel"`).
    #[serde(default)]
    pub kernel: KernelConfig,
    #[serde(default)]
    pub app: AppConfig,
    /// Cores that run the stack (testpmd `--nb-cores`), 1..=`cpu.cores`.
    #[serde(default = "one")]
    pub cores: u32,
    /// NIC ports in use, 1..=`nic.nics` × `nic.ports_per_nic`.
    #[serde(default = "one")]
    pub ports: u32,
    /// RX/TX queue pairs per port (testpmd `--rxq`/`--txq`), 1..=`nic.max_queues`.
    #[serde(default = "one")]
    pub queues: u32,
    /// Which core serves which (port, queue); empty: the default map, as
    /// testpmd assigns its forwarding streams to cores.
    #[serde(default)]
    pub bind: Vec<Binding>,
    /// Pipeline mode: cores that receive hand bursts to worker cores over rings.
    #[serde(default)]
    pub pipeline: PipelineConfig,
    /// How `cores` cores share one receive queue (`none`: a queue has one
    /// core). Anything else needs the `connectx` queue model, one port and
    /// one queue; each core transmits on a TX queue of its own.
    #[serde(default)]
    pub rx_sharing: RxSharing,
    /// How a TCP sender's payload reaches the NIC (`--app tcp-send`).
    #[serde(default)]
    pub tx_scheme: TxScheme,
    /// The chipset's DMA copy engine (`tx_scheme = ioat`).
    #[serde(default)]
    pub copy_engine: CopyEngineConfig,
}

/// One queue pair served by one core.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    pub core: u32,
    pub port: u32,
    pub queue: u32,
}

fn one() -> u32 {
    1
}

/// Queue pairs a host may have in all (the driver's rings have room for this many).
pub const MAX_QUEUE_PAIRS: u32 = 128;

/// Names of the host presets.
pub const HOST_PRESETS: &[&str] = &["altra", "altra-gem5", "a72-quad", "xeon-e3-1230v2", "xeon-e3-1230v2-x540", "i9-7940x-cx5", "xeon-6226r-fpga"];

impl HostConfig {
    /// A host of these parts with the default driver, kernel and
    /// application settings, running on one core, one port, one queue.
    fn of(cpu: CoreConfig, mem: MemConfig, pcie: PcieConfig, nic: NicConfig) -> HostConfig {
        HostConfig {
            cpu,
            mem,
            pcie,
            io: IoConfig::default(),
            nic,
            pmd: PmdConfig::default(),
            kernel: KernelConfig::default(),
            app: AppConfig::default(),
            cores: 1,
            ports: 1,
            queues: 1,
            bind: Vec::new(),
            pipeline: PipelineConfig::default(),
            rx_sharing: RxSharing::None,
            tx_scheme: TxScheme::Copy,
            copy_engine: CopyEngineConfig::default(),
        }
    }

    /// The host of a named preset, with the constants `hostsim calibrate`
    /// fitted laid over it (`host/fitted.rs`).
    pub fn preset(name: &str) -> Result<HostConfig> {
        super::fitted::apply(name, Self::unfitted(name)?)
    }

    /// The host of a named preset as its components' sources give it,
    /// before the fitted constants: where the calibration procedure starts.
    pub fn unfitted(name: &str) -> Result<HostConfig> {
        match name {
            // A 100 GbE ConnectX-5-class NIC sits on PCIe 3.0 x16 (SPEC §4, i9-7940x-cx5); estimate for the Altra.
            "altra" => Ok(Self::of(CoreConfig::altra(), MemConfig::altra(), PcieConfig::gen3_x16(), NicConfig::nic_100g())),
            // The altra machine as gem5 simulates it: the NIC behind gem5's I/O
            // crossbar, Bridge and IOCache with gem5's defaults (io::config).
            "altra-gem5" => Ok(HostConfig { io: IoConfig::gem5(), ..Self::unfitted("altra")? }),
            // A gem5 machine (SPEC §4): its NIC is behind gem5's I/O path, with
            // SPEC §4's I/O cache (24 cycles, 16 MSHRs) in place of gem5's
            // default IOCache (50 cycles, 20 MSHRs); `pcie` is unused on this path.
            "a72-quad" => Ok(HostConfig { io: IoConfig::gem5_a72_quad(), ..Self::of(
                CoreConfig::a72(),
                MemConfig::a72_quad(),
                // A 200 GbE NIC needs PCIe 4.0 x16 (params.md §13 baseline); estimate.
                PcieConfig::gen4_x16(),
                // Sized as the 100 GbE NIC for twice the rate (see NicConfig::nic_100g; estimate).
                // Slots for up to four NICs, each behind its own link (the
                // kernel-bypass study's setup, as issue 10 gives it: a core per
                // port); `host.ports` picks how many are in use (default 1).
                NicConfig { rx_desc_cache: 512, rx_prefetch_threshold: 256, nics: 4, ..NicConfig::nic_100g() },
            ) }),
            // A dual-port 82599 on PCIe 2.0 x8 (SPEC §4): both ports behind one link.
            // The X540 variant is the same model: the X540 shares the 82599's
            // datapath on PCIe 2.1 x8 (the same 5 GT/s); its queues (128 pairs,
            // RSS over 16) are the 82599's [V], its buffers taken as the 82599's
            // [NS] (docs/reference/ports-queues-cores.md §1b, §2). What differs,
            // the 10GBASE-T PHY's latency, is not modelled.
            "xeon-e3-1230v2" | "xeon-e3-1230v2-x540" => Ok(Self::of(
                CoreConfig::ivy_bridge_3_3ghz(),
                MemConfig::xeon_e3_1230v2(),
                PcieConfig::gen2_x8(),
                NicConfig { ports_per_nic: 2, ..NicConfig::default() },
            )),
            // SPEC §4: 14 cores at 3.1 GHz, a ConnectX-5-class 100 GbE NIC on PCIe
            // 3.0 x16; two ports sharing the card's link. A dual-port ConnectX-5
            // carries 100 Gb/s for the card (DPDK's mlx5 guide [V]); here only
            // its PCIe link (about 104 Gb/s of DMA writes, params.md §2c) holds
            // both ports to that.
            "i9-7940x-cx5" => Ok(Self::of(
                CoreConfig::skylake_x_3_1ghz(),
                MemConfig::skylake_x_14(),
                PcieConfig::gen3_x16(),
                // Its receive queues are ConnectX-style (work queue, completion
                // queue, doorbell record; `nic::queue`), as mlx5 drives them.
                NicConfig { ports_per_nic: 2, queue_model: QueueModel::Connectx, ..NicConfig::nic_100g() },
            )),
            // SPEC §4: a 2.9 GHz Xeon (Gold 6226R, Cascade Lake-SP) with 140.8 GB/s
            // of DDR4, a 100 GbE NIC on PCIe 3.0 x16.
            "xeon-6226r-fpga" => Ok(Self::of(
                CoreConfig::cascade_lake_2_9ghz(),
                MemConfig::xeon_6226r(),
                // SPEC §4: PCIe 3.0 x16 (the link's fields: see PcieConfig::gen3_x16).
                PcieConfig::gen3_x16(),
                // SPEC §4: one 100 GbE NIC; a single port (estimate: SPEC names one
                // 100 GbE NIC). Its queues are modelled ixgbe-style (descriptors
                // written back in place, an MMIO tail doorbell; estimate: the FPGA
                // NIC's queue design is not described), with the 100 GbE sizes of
                // NicConfig::nic_100g (estimates, cited there). The card's
                // 4 × 16 GiB on-board DDR4-2400 (SPEC §4): see NicMemoryConfig.
                NicConfig {
                    ports_per_nic: 1,
                    queue_model: QueueModel::Ixgbe,
                    memory: Some(NicMemoryConfig::fpga_4x16g_ddr4_2400()),
                    ..NicConfig::nic_100g()
                },
            )),
            other => Err(ConfigError::new("preset", other.to_string(), &format!("one of {}", HOST_PRESETS.join(", "))).into()),
        }
    }

    /// How long after a device issues a request it reaches the host side
    /// of its I/O path (the PCIe one-way latency, or gem5's crossbar and
    /// IOCache lookup): when the memory system sees it.
    pub fn io_request_latency_ps(&self) -> crate::engine::time::Ps {
        match self.io.path {
            IoPathKind::Pcie => self.pcie.latency_ps,
            IoPathKind::Gem5Xbar => self.io.request_latency_ps(),
        }
    }

    /// Validates every component; errors name the field from `host.`, as
    /// the user wrote it (`host.pmd.rxd`).
    pub fn validate(&self) -> Result<()> {
        let all = || -> Result<()> {
            self.cpu.validate()?;
            self.mem.validate()?;
            self.pcie.validate()?;
            self.io.validate()?;
            self.nic.validate()?;
            self.pmd.validate()?;
            self.kernel.validate()?;
            self.app.validate()?;
            self.pmd.mempool.validate()?;
            self.copy_engine.validate()?;
            if self.tx_scheme == TxScheme::Nicmem && self.nic.memory.is_none() {
                return Err(ConfigError::new("tx_scheme", "nicmem".into(), "copy, ioat or zerocopy: nicmem needs a NIC with on-board memory (host.nic.memory; the xeon-6226r-fpga preset has one)").into());
            }
            self.validate_topology()
        };
        all().map_err(|e| match e {
            crate::error::Error::Config(mut c) if !c.field.starts_with("host.") => {
                c.field = format!("host.{}", c.field);
                crate::error::Error::Config(c)
            }
            other => other,
        })
    }
}


impl HostConfig {
    /// Frames the host can hold on the path of the generator's traffic
    /// (frames of `mean_frame_bytes`), buffer by buffer with the config
    /// field that sizes it: what an overload fills before anything is dropped.
    pub fn buffers(&self, kernel: bool, mean_frame_bytes: f64) -> Vec<(&'static str, &'static str, u64)> {
        let (ports, pairs) = (self.ports as u64, self.ports as u64 * self.queues as u64);
        let tx_pairs = self.ports as u64 * self.tx_queues() as u64;
        let frames = |bytes: u64| (bytes as f64 / mean_frame_bytes.max(1.0)).ceil() as u64;
        let mut v = vec![
            ("rx_fifos", "host.nic.rx_fifo_bytes", ports * frames(self.nic.rx_fifo_bytes)),
            ("rx_rings", "host.pmd.rxd", pairs * self.pmd.rxd as u64),
            ("tx_rings", "host.pmd.txd", tx_pairs * self.pmd.txd as u64),
            ("tx_fifos", "host.nic.tx_fifo_bytes", ports * frames(self.nic.tx_fifo_bytes)),
        ];
        let pl = &self.pipeline;
        if pl.rx_cores > 0 {
            v.push(("pipeline_rings", "host.pipeline.ring_size", self.cores.saturating_sub(pl.rx_cores) as u64 * pl.ring_size as u64));
        }
        if kernel {
            let k = &self.kernel;
            let sock = k.rcvbuf_bytes.max(k.tcp_rcvbuf_bytes) as u64 / k.skb_truesize_bytes.max(1) as u64;
            v.push(("socket_buffers", "host.kernel.rcvbuf_bytes", self.cores as u64 * sock));
            v.push(("qdiscs", "host.kernel.txqueuelen", self.cores as u64 * k.txqueuelen as u64));
        }
        v
    }

    /// Cores, ports, queues and the binding against what the machine has.
    fn validate_topology(&self) -> Result<()> {
        let bad = |f: &str, v: u32, allowed: String| -> Result<()> { Err(ConfigError::new(f, v.to_string(), &allowed).into()) };
        if self.cores == 0 || self.cores > self.cpu.cores {
            return bad("cores", self.cores, format!("{} (host.cpu.cores: the cores of this machine)", range_text(1, self.cpu.cores.into())));
        }
        let max_ports = self.nic.max_ports();
        if self.ports == 0 || self.ports > max_ports {
            return bad("ports", self.ports, format!("{} (host.nic.nics × host.nic.ports_per_nic: {} × {})", range_text(1, max_ports.into()), self.nic.nics, self.nic.ports_per_nic));
        }
        if self.queues == 0 || self.queues > self.nic.max_queues {
            return bad("queues", self.queues, format!("{} (host.nic.max_queues: the RSS queues of a port)", range_text(1, self.nic.max_queues.into())));
        }
        if self.queues > self.nic.reta_size {
            return bad("queues", self.queues, format!("<= host.nic.reta_size ({})", self.nic.reta_size));
        }
        if self.ports * self.queues > MAX_QUEUE_PAIRS {
            return bad("queues", self.queues, format!("at most {MAX_QUEUE_PAIRS} queue pairs in all (ports × queues; {} ports)", self.ports));
        }
        if self.rx_sharing != RxSharing::None {
            return self.validate_sharing();
        }
        let pl = &self.pipeline;
        if pl.rx_cores > 0 {
            if pl.rx_cores >= self.cores {
                let allowed = match self.cores {
                    1 => "0 (run to completion; a pipeline needs host.cores >= 2: receive cores and workers)".to_owned(),
                    n => format!("0 (run to completion) or {} (host.cores; the rest are workers)", range_text(1, u64::from(n) - 1)),
                };
                return bad("pipeline.rx_cores", pl.rx_cores, allowed);
            }
            let workers = self.cores - pl.rx_cores;
            if self.queues < workers {
                return bad("queues", self.queues, format!(">= {workers}: each pipeline worker transmits on a TX queue of its own"));
            }
            if !pl.ring_size.is_power_of_two() || !(64..=65536).contains(&pl.ring_size) {
                return bad("pipeline.ring_size", pl.ring_size, "a power of two from 64 to 65536".into());
            }
            if !self.bind.is_empty() {
                return Err(ConfigError::new("bind", format!("{} bindings", self.bind.len()), "empty with host.pipeline (the receiving cores take testpmd's map)").into());
            }
            if pl.rx_cores > self.ports * self.queues {
                return bad("pipeline.rx_cores", pl.rx_cores, format!("{} (one queue pair each at least: host.ports × host.queues)", range_text(1, u64::from(self.ports * self.queues))));
            }
            return Ok(());
        }
        let mut seen = vec![false; (self.ports * self.queues) as usize];
        for (i, b) in self.bind.iter().enumerate() {
            if b.core >= self.cores {
                return bad(&format!("bind[{i}].core"), b.core, format!("{} (host.cores)", range_text(0, u64::from(self.cores).saturating_sub(1))));
            }
            if b.port >= self.ports {
                return bad(&format!("bind[{i}].port"), b.port, format!("{} (host.ports)", range_text(0, u64::from(self.ports).saturating_sub(1))));
            }
            if b.queue >= self.queues {
                return bad(&format!("bind[{i}].queue"), b.queue, format!("{} (host.queues)", range_text(0, u64::from(self.queues).saturating_sub(1))));
            }
            let k = (b.port * self.queues + b.queue) as usize;
            if seen[k] {
                return bad(&format!("bind[{i}].queue"), b.queue, format!("a queue no other core serves (port {} queue {} is bound twice)", b.port, b.queue));
            }
            seen[k] = true;
        }
        if !self.bind.is_empty() {
            if let Some(k) = seen.iter().position(|s| !s) {
                let (p, q) = (k as u32 / self.queues, k as u32 % self.queues);
                return Err(ConfigError::new("bind", format!("{} bindings", self.bind.len()), &format!("every queue of every port bound to a core (port {p} queue {q} is not: RSS would deliver to it)")).into());
            }
            if let Some(c) = (0..self.cores).find(|c| !self.bind.iter().any(|b| b.core == *c)) {
                return bad("bind", c, format!("a binding for every core of host.cores (core {c} has none)"));
            }
        } else if self.cores > self.ports * self.queues {
            return bad("cores", self.cores, format!("{} (one queue pair per core at least: host.ports × host.queues)", range_text(1, u64::from(self.ports * self.queues))));
        }
        Ok(())
    }

    /// Several cores on one receive queue (`rx_sharing`).
    fn validate_sharing(&self) -> Result<()> {
        let d = self.rx_sharing.name();
        let bad = |f: &str, v: String, allowed: String| -> Result<()> { Err(ConfigError::new(f, v, &allowed).into()) };
        if self.nic.queue_model != QueueModel::Connectx {
            return bad("rx_sharing", d.into(), "none with host.nic.queue_model ixgbe (the designs share a ConnectX-style queue: set host.nic.queue_model = connectx)".into());
        }
        for (field, n) in [("ports", self.ports), ("queues", self.queues)] {
            if n != 1 {
                return bad(field, n.to_string(), format!("1 with host.rx_sharing {d} (one queue of one port, shared)"));
            }
        }
        if self.pipeline.rx_cores > 0 {
            return bad("pipeline.rx_cores", self.pipeline.rx_cores.to_string(), format!("0 with host.rx_sharing {d}"));
        }
        if !self.bind.is_empty() {
            return bad("bind", format!("{} bindings", self.bind.len()), format!("empty with host.rx_sharing {d} (every core polls queue 0)"));
        }
        if self.rx_sharing.areas() {
            if !self.cores.is_power_of_two() {
                return bad("cores", self.cores.to_string(), format!("a power of two with host.rx_sharing {d} (the queue is split into one area per core by index bits)"));
            }
            if self.pmd.rxd % self.cores != 0 {
                return bad("pmd.rxd", self.pmd.rxd.to_string(), format!("a multiple of host.cores ({}): one equal area per core", self.cores));
            }
        }
        if self.cores > MAX_QUEUE_PAIRS {
            return bad("cores", self.cores.to_string(), format!("1 to {MAX_QUEUE_PAIRS} with host.rx_sharing {d} (a TX queue per core; the driver's rings have room for {MAX_QUEUE_PAIRS})"));
        }
        Ok(())
    }

    /// TX queues of each port: one per core when cores share a receive queue.
    pub fn tx_queues(&self) -> u32 {
        if self.rx_sharing == RxSharing::None { self.queues } else { self.cores }
    }

    /// The mbufs the rings and the cores' mempool caches hold when full, in
    /// all ports: RX queues × rxd + TX queues × txd + cores × (2 × cache + burst).
    pub fn mbufs_needed(&self) -> u64 {
        let (p, ports) = (&self.pmd, self.ports as u64);
        let rings = ports * (self.queues as u64 * p.rxd as u64 + self.tx_queues() as u64 * p.txd as u64);
        rings + self.cores as u64 * (2 * p.mempool.cache_size as u64 + p.burst as u64)
    }

    /// The mbuf pool of each port. `pmd.mempool.mbufs` as the user set it
    /// (named in `given`, `SimConfig::given`), which must fill every ring and
    /// cache (`mbufs_needed`); a preset's or the default count is "enough for
    /// all rings and caches" (sources.toml), so it is taken as a floor and
    /// the pool grows with the queues and rings, as DPDK's l2fwd and l3fwd
    /// size theirs (`RTE_MAX(rings + caches, 8192)`).
    pub fn pool_mbufs(&self, given: &[String]) -> Result<u64> {
        let (ports, mbufs, needed) = (self.ports.max(1) as u64, self.pmd.mempool.mbufs as u64, self.mbufs_needed());
        let per_port = needed.div_ceil(ports);
        if mbufs >= per_port || !given.iter().any(|g| g == "host.pmd.mempool.mbufs") {
            return Ok(mbufs.max(per_port));
        }
        let allowed = format!(">= {per_port} per port: {ports} ports × that >= RX queues × rxd + TX queues × txd + cores × (2 × cache + burst) = {needed}");
        Err(ConfigError::new("host.pmd.mempool.mbufs", mbufs.to_string(), &allowed).into())
    }

    /// The field the user set (by `given`) that sized the pool, and its
    /// value: what to name when that pool cannot be had. The pool's own
    /// count if the user set it (it is then the pool's size) or nothing
    /// else, else what sizes the rings and caches the pool must fill.
    pub fn pool_sizer(&self, given: &[String]) -> (&'static str, u32) {
        let p = &self.pmd;
        [
            ("host.pmd.mempool.mbufs", p.mempool.mbufs),
            ("host.queues", self.queues),
            ("host.pmd.rxd", p.rxd),
            ("host.pmd.txd", p.txd),
            ("host.ports", self.ports),
            ("host.cores", self.cores),
            ("host.pmd.mempool.cache_size", p.mempool.cache_size),
            ("host.pmd.burst", p.burst),
        ]
        .into_iter()
        .find(|(k, _)| given.iter().any(|g| g == k))
        .unwrap_or(("host.pmd.mempool.mbufs", p.mempool.mbufs))
    }

    /// Each core's queue pairs (port, queue), in the order it polls them:
    /// `bind` if given, else testpmd's map — streams taken queue by queue,
    /// port by port ((0,0), (1,0), (0,1), ...), in contiguous blocks, the
    /// last cores taking one more when they do not divide evenly.
    pub fn core_queues(&self) -> Vec<Vec<(usize, usize)>> {
        let c = if self.pipeline.rx_cores > 0 { self.pipeline.rx_cores } else { self.cores } as usize;
        if self.rx_sharing != RxSharing::None {
            return vec![vec![(0, 0)]; c];
        }
        let mut out = vec![Vec::new(); c];
        if !self.bind.is_empty() {
            for b in &self.bind {
                out[b.core as usize].push((b.port as usize, b.queue as usize));
            }
            return out;
        }
        let streams: Vec<(usize, usize)> = (0..self.queues as usize).flat_map(|q| (0..self.ports as usize).map(move |p| (p, q))).collect();
        let (per, extra) = (streams.len() / c, streams.len() % c);
        let mut i = 0;
        for (core, list) in out.iter_mut().enumerate() {
            let n = per + usize::from(core >= c - extra);
            list.extend_from_slice(&streams[i..i + n]);
            i += n;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate() {
        for p in HOST_PRESETS {
            HostConfig::preset(p).unwrap().validate().unwrap();
        }
        assert!(HostConfig::preset("vax").unwrap_err().to_string().starts_with("preset"));
    }

    #[test]
    fn gem5_machines_take_gem5s_io_path_and_the_real_ones_pcie() {
        let (a, g) = (HostConfig::preset("altra").unwrap(), HostConfig::preset("altra-gem5").unwrap());
        assert_eq!(g.io, IoConfig::gem5());
        assert_eq!(HostConfig { io: IoConfig::default(), ..g.clone() }, a, "altra-gem5 is altra but for its I/O path");
        assert_eq!(a.io_request_latency_ps(), a.pcie.latency_ps);
        // gem5: 3 crossbar cycles and the IOCache's 50-cycle tag latency at 1 GHz.
        assert_eq!(g.io_request_latency_ps(), 53_000);
        let q = HostConfig::preset("a72-quad").unwrap();
        assert_eq!(q.io, IoConfig::gem5_a72_quad());
        for p in ["xeon-e3-1230v2", "xeon-e3-1230v2-x540", "i9-7940x-cx5", "xeon-6226r-fpga"] {
            assert_eq!(HostConfig::preset(p).unwrap().io.path, IoPathKind::Pcie, "{p}");
        }
        let mut bad = g;
        bad.io.iocache.mshrs = 0;
        assert!(bad.validate().unwrap_err().to_string().starts_with("host.io.iocache.mshrs"));
    }

    #[test]
    fn xeon_6226r_keeps_its_spec_numbers() {
        let h = HostConfig::preset("xeon-6226r-fpga").unwrap();
        h.validate().unwrap();
        // SPEC §4: 2.9 GHz, 140.8 GB/s of DRAM (six DDR4-2933 channels), PCIe 3.0 x16.
        assert_eq!((h.cpu.freq_hz, h.cpu.cores), (2_900_000_000, 16));
        let d = &h.mem.dram;
        assert_eq!(d.channels, 6);
        let peak = d.channels as u64 * d.channel_bandwidth_bytes_per_s;
        assert!((140_799_000_000..=140_801_000_000).contains(&peak), "{peak}");
        // 22 MiB of non-inclusive LLC, 11-way, DDIO on 2 of its ways.
        let llc = &h.mem.llc;
        assert_eq!((llc.size_bytes, llc.ways, llc.dca.enabled, llc.dca.ways), (22 * 1024 * 1024, 11, true, 2));
        assert_eq!(llc.inclusion, crate::mem::config::Inclusion::NonInclusive);
        assert_eq!((h.pcie.gen, h.pcie.lanes), (3, 16));
        assert_eq!((h.nic.nics, h.nic.ports_per_nic, h.nic.queue_model), (1, 1, QueueModel::Ixgbe));
    }

    #[test]
    fn a_pool_the_user_did_not_size_grows_to_fill_the_rings() {
        // a72-quad: 512-descriptor rings, 8192 mbufs a port. 100 queue pairs need 102 932.
        let mut h = HostConfig::preset("a72-quad").unwrap();
        let given = |k: &str| vec![k.to_string()];
        assert_eq!((h.mbufs_needed(), h.pool_mbufs(&[]).unwrap()), (512 + 512 + 2 * 250 + 32, 8192), "enough: as set");
        h.queues = 100;
        assert_eq!(h.mbufs_needed(), 100 * (512 + 512) + 2 * 250 + 32);
        assert_eq!(h.pool_mbufs(&given("host.queues")).unwrap(), 102_932, "the preset's count grows");
        // Set by the user, the count is kept, and must be enough.
        let e = h.pool_mbufs(&given("host.pmd.mempool.mbufs")).unwrap_err().to_string();
        assert!(e.starts_with("host.pmd.mempool.mbufs: invalid value '8192' (allowed: >= 102932 per port: 1 ports"), "{e}");
        h.pmd.mempool.mbufs = 200_000;
        assert_eq!(h.pool_mbufs(&given("host.pmd.mempool.mbufs")).unwrap(), 200_000);
        // Per port, over the ports in use; what to name when the pool cannot be had.
        (h.ports, h.pmd.mempool.mbufs) = (4, 8192);
        assert_eq!(h.pool_mbufs(&[]).unwrap(), (4 * 100 * 1024 + 532u64).div_ceil(4));
        assert_eq!(h.pool_sizer(&["host.pmd.rxd".into(), "host.queues".into()]), ("host.queues", 100));
        assert_eq!(h.pool_sizer(&["host.queues".into(), "host.pmd.mempool.mbufs".into()]), ("host.pmd.mempool.mbufs", 8192));
        assert_eq!(h.pool_sizer(&[]), ("host.pmd.mempool.mbufs", 8192));
    }

    #[test]
    fn the_default_map_is_testpmds() {
        let mut h = HostConfig::preset("xeon-e3-1230v2").unwrap();
        h.nic.ports_per_nic = 2;
        let map = |h: &HostConfig| h.core_queues();
        (h.ports, h.queues, h.cores) = (2, 2, 2);
        assert_eq!(map(&h), vec![vec![(0, 0), (1, 0)], vec![(0, 1), (1, 1)]]);
        (h.ports, h.queues, h.cores) = (1, 4, 4);
        assert_eq!(map(&h), vec![vec![(0, 0)], vec![(0, 1)], vec![(0, 2)], vec![(0, 3)]]);
        (h.ports, h.queues, h.cores) = (2, 1, 1);
        assert_eq!(map(&h), vec![vec![(0, 0), (1, 0)]]);
        (h.ports, h.queues, h.cores) = (1, 3, 2);
        assert_eq!(map(&h), vec![vec![(0, 0)], vec![(0, 1), (0, 2)]], "the last core takes the extra stream");
        h.validate().unwrap();
    }

    #[test]
    fn impossible_maps_name_the_field() {
        let base = HostConfig::preset("xeon-e3-1230v2").unwrap();
        let err = |f: &dyn Fn(&mut HostConfig)| {
            let mut h = base.clone();
            f(&mut h);
            h.validate().unwrap_err().to_string()
        };
        assert!(err(&|h| h.cores = 0).starts_with("host.cores"));
        assert!(err(&|h| h.cores = 5).contains("host.cpu.cores"));
        assert!(err(&|h| h.ports = 3).starts_with("host.ports"));
        assert!(err(&|h| h.queues = 17).starts_with("host.queues"));
        assert!(err(&|h| h.cores = 2).contains("host.ports × host.queues"), "two cores, one queue");
        // Ranges in words, a range of one number as that number; no Rust range syntax.
        assert_eq!(err(&|h| h.cores = 2), "host.cores: invalid value '2' (allowed: 1 (one queue pair per core at least: host.ports × host.queues))");
        assert_eq!(err(&|h| h.queues = 0), "host.queues: invalid value '0' (allowed: 1 to 16 (host.nic.max_queues: the RSS queues of a port))");
        assert!(err(&|h| h.ports = 0).contains("(allowed: 1 to 2 (host.nic.nics"), "{}", err(&|h| h.ports = 0));
        let e = err(&|h| {
            h.queues = 2;
            h.bind = vec![Binding { core: 0, port: 0, queue: 0 }, Binding { core: 0, port: 0, queue: 2 }];
        });
        assert!(e.starts_with("host.bind[1].queue") && e.contains("0 to 1 (host.queues)"), "{e}");
        let e = err(&|h| {
            h.queues = 2;
            h.bind = vec![Binding { core: 0, port: 0, queue: 0 }];
        });
        assert!(e.starts_with("host.bind") && e.contains("port 0 queue 1"), "{e}");
    }
}
