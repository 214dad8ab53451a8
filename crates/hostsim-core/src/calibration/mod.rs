//! Calibration: the simulator measured against published figures.
//!
//! * [`checks`]: closed forms and small model pieces against params.md
//!   (PCIe, line rates, RSS, DRAM, an M/D/1 queue), each with its reference,
//!   tolerance and source (`hostsim validate` prints them).
//! * [`micro`]: microbenchmarks on a preset's core and memory (pointer
//!   chase, streaming read, copy), the model's side of params.md §5 and §11.
//!
//! The calibration targets that need a whole-system run, and the fitting
//! procedure, are in the Python package (`python/hostsim/calibration`);
//! the constants it fits are laid over the presets by `host::fitted`.

pub mod checks;
pub mod micro;

pub use checks::{run_checks, Check};
