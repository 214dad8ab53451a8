//! The constants `hostsim calibrate` fitted to calibration targets, laid
//! over the presets.
//!
//! A preset's components cite a source for each value or say it is an
//! estimate; where an estimate is a constant the model cannot source
//! directly (instructions per stage, ...), the calibration procedure
//! (`python/hostsim/calibration`) fits it to measured microbenchmarks and
//! records it in `fitted.json` beside this file: the field (relative to
//! `host.`), the fitted value, the prior it started from, the group of
//! targets it was fitted to, and the presets it applies to (all when
//! none are named). [`apply`] lays them over a preset as it is built; the
//! unfitted preset stays available ([`super::config::HostConfig::unfitted`])
//! so that the procedure can start from the priors again and reproduce
//! the file.

use serde::Deserialize;
use serde_json::Value;

use super::config::HostConfig;
use crate::error::{Error, Result};

/// The file `hostsim calibrate` writes (JSON).
pub const FITTED_JSON: &str = include_str!("fitted.json");

/// One fitted field.
#[derive(Debug, Clone, Deserialize)]
pub struct Fitted {
    /// The field under `host.`, dotted (`kernel.costs.irq_instr`).
    pub key: String,
    pub value: Value,
    /// Presets it applies to; empty: every preset.
    #[serde(default)]
    pub presets: Vec<String>,
}

#[derive(Deserialize)]
struct File {
    values: Vec<Fitted>,
}

/// Every fitted value in the file.
pub fn values() -> Result<Vec<Fitted>> {
    let f: File = serde_json::from_str(FITTED_JSON).map_err(|e| Error::Parse(format!("host/fitted.json: {e}")))?;
    Ok(f.values)
}

/// `cfg` (preset `name`, unfitted) with the fitted values that apply to it.
pub fn apply(name: &str, cfg: HostConfig) -> Result<HostConfig> {
    apply_values(name, cfg, &values()?)
}

fn apply_values(name: &str, cfg: HostConfig, values: &[Fitted]) -> Result<HostConfig> {
    let mine: Vec<&Fitted> = values.iter().filter(|f| f.presets.is_empty() || f.presets.iter().any(|p| p == name)).collect();
    if mine.is_empty() {
        return Ok(cfg);
    }
    let mut tree = serde_json::to_value(&cfg).map_err(Error::from_serde)?;
    for f in mine {
        let slot = f
            .key
            .split('.')
            .try_fold(&mut tree, |node, part| node.get_mut(part))
            .ok_or_else(|| Error::Parse(format!("host/fitted.json: no field host.{} in preset {name}", f.key)))?;
        *slot = f.value.clone();
    }
    serde_json::from_value(tree).map_err(|e| Error::Parse(format!("host/fitted.json, preset {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::config::HOST_PRESETS;

    #[test]
    fn the_file_parses_and_every_value_names_a_field_of_its_presets() {
        for f in values().unwrap() {
            assert!(!f.key.is_empty());
            for p in &f.presets {
                assert!(HOST_PRESETS.contains(&p.as_str()), "{p}");
            }
        }
        for p in HOST_PRESETS {
            let fitted = HostConfig::preset(p).unwrap();
            fitted.validate().unwrap();
            let tree = serde_json::to_value(&fitted).unwrap();
            for f in values().unwrap().iter().filter(|f| f.presets.is_empty() || f.presets.iter().any(|q| q == p)) {
                let got = f.key.split('.').try_fold(&tree, |n, k| n.get(k)).unwrap();
                assert_eq!(got, &f.value, "{p}: host.{}", f.key);
            }
        }
    }

    #[test]
    fn a_value_is_laid_over_its_presets_only_and_a_key_the_preset_lacks_is_refused_by_name() {
        let v = |key: &str, value: u64, presets: &[&str]| Fitted {
            key: key.into(),
            value: value.into(),
            presets: presets.iter().map(|p| p.to_string()).collect(),
        };
        let base = HostConfig::unfitted("altra").unwrap();
        let on = apply_values("altra", base.clone(), &[v("kernel.costs.irq_instr", 1234, &[])]).unwrap();
        assert_eq!(on.kernel.costs.irq_instr, 1234);
        let off = apply_values("altra", base.clone(), &[v("kernel.costs.irq_instr", 1234, &["a72-quad"])]).unwrap();
        assert_eq!(off, base);
        let e = apply_values("altra", base, &[v("kernel.costs.nope", 1, &[])]).unwrap_err().to_string();
        assert!(e.contains("no field host.kernel.costs.nope in preset altra"), "{e}");
    }
}
