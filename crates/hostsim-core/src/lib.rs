//! hostsim-core: the simulation core of hostsim, a fast simulator of a
//! server's network datapath with a built-in hardware-style load generator.
//!
//! Layers point one way: `engine` (time, events, randomness, stats) knows
//! nothing of networking; `wire` holds packet formats; `link`, `loadgen` and
//! `dev` are components; `system` wires them from a [`config::SimConfig`] and
//! runs the event loop. Start with `system/mod.rs`.

pub mod apps;
pub mod calibration;
pub mod check;
pub mod config;
pub mod cpu;
pub mod dev;
pub mod dma;
pub mod engine;
pub mod error;
pub mod framebuf;
pub mod fuzz;
pub mod host;
pub mod io;
pub mod kvs;
pub mod link;
pub mod loadgen;
pub mod mem;
pub mod nic;
pub mod pcie;
pub mod stack;
pub mod system;
pub mod wire;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs one simulation from the JSON config contract and returns the JSON result.
pub fn simulate_json(config_json: &str) -> error::Result<String> {
    let cfg = config::SimConfig::from_json(config_json)?;
    let result = system::run(&cfg)?;
    Ok(result.to_string())
}
