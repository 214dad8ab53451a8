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
use crate::error::{ConfigError, Result};
use crate::mem::MemConfig;
use crate::nic::NicConfig;
use crate::pcie::PcieConfig;
pub use crate::stack::kernel::KernelConfig;
pub use crate::stack::pmd::config::{PmdConfig, PmdCosts};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub cpu: CoreConfig,
    pub mem: MemConfig,
    pub pcie: PcieConfig,
    pub nic: NicConfig,
    pub pmd: PmdConfig,
    /// The Linux kernel stack model (used with `stack = "kernel"`).
    #[serde(default)]
    pub kernel: KernelConfig,
    #[serde(default)]
    pub app: AppConfig,
}

/// Names of the host presets.
pub const HOST_PRESETS: &[&str] = &["altra", "a72-quad", "xeon-e3-1230v2"];

impl HostConfig {
    /// The host of a named preset.
    pub fn preset(name: &str) -> Result<HostConfig> {
        match name {
            "altra" => Ok(HostConfig {
                cpu: CoreConfig::altra(),
                mem: MemConfig::altra(),
                // A 100 GbE ConnectX-5-class NIC sits on PCIe 3.0 x16 (SPEC §4, i9-7940x-cx5); estimate for the Altra.
                pcie: PcieConfig::gen3_x16(),
                nic: NicConfig::nic_100g(),
                pmd: PmdConfig::default(),
                kernel: Default::default(),
                app: AppConfig::default(),
            }),
            "a72-quad" => Ok(HostConfig {
                // SPEC §4: four cores, one used for now.
                cpu: CoreConfig::a72(),
                mem: MemConfig::a72_quad(),
                // A 200 GbE NIC needs PCIe 4.0 x16 (params.md §13 baseline); estimate.
                pcie: PcieConfig::gen4_x16(),
                // Sized as the 100 GbE NIC for twice the rate (see NicConfig::nic_100g); estimate.
                nic: NicConfig { rx_desc_cache: 512, rx_prefetch_threshold: 256, ..NicConfig::nic_100g() },
                pmd: PmdConfig::default(),
                kernel: Default::default(),
                app: AppConfig::default(),
            }),
            "xeon-e3-1230v2" => Ok(HostConfig {
                cpu: CoreConfig::ivy_bridge_3_3ghz(),
                mem: MemConfig::xeon_e3_1230v2(),
                // 82599 on PCIe 2.0 x8 (SPEC §4).
                pcie: PcieConfig::gen2_x8(),
                nic: NicConfig::default(),
                pmd: PmdConfig::default(),
                kernel: Default::default(),
                app: AppConfig::default(),
            }),
            other => Err(ConfigError::new("preset", other.to_string(), &format!("one of {}", HOST_PRESETS.join(", "))).into()),
        }
    }

    /// Validates every component; errors name the field from `host.`, as
    /// the user wrote it (`host.pmd.rxd`).
    pub fn validate(&self) -> Result<()> {
        let all = || -> Result<()> {
            self.cpu.validate()?;
            self.mem.validate()?;
            self.pcie.validate()?;
            self.nic.validate()?;
            self.pmd.validate()?;
            self.kernel.validate()?;
            self.app.validate()?;
            self.pmd.mempool.validate()
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
}
