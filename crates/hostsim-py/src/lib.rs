//! PyO3 glue for `hostsim._core`: JSON in, JSON out.
//!
//! The Python package resolves presets, overrides and unit strings into the
//! core's config contract (`hostsim_core::config::SimConfig`, JSON), calls
//! [`simulate`], and wraps the JSON result. Config errors become `ValueError`
//! (the message names the field, the value and what is allowed), file errors
//! `OSError`; a panic inside the core is caught here and becomes
//! `RuntimeError`, so none crosses into Python.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hostsim_core::engine::cancel;

use hostsim_core::error::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Runs one simulation. `config_json` is the resolved config; returns the
/// result as a JSON string. The simulation runs on a thread of its own,
/// without the GIL, while this one looks for signals every 50 ms: on
/// Ctrl-C (or any handler that raises) the run is told to stop
/// (`engine::cancel`), is waited for (a few milliseconds) and the handler's
/// exception (`KeyboardInterrupt`) is raised.
#[pyfunction]
fn simulate(py: Python<'_>, config_json: &str) -> PyResult<String> {
    let cfg = config_json.to_owned();
    let flag = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let theirs = flag.clone();
    let worker = std::thread::Builder::new()
        .name("hostsim-run".into())
        .stack_size(RUN_STACK_BYTES)
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| cancel::with_flag(theirs, || hostsim_core::simulate_json(&cfg))));
            let _ = tx.send(outcome);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the simulation thread: {e}")))?;
    let mut rx = rx;
    let outcome = loop {
        // The receiver goes to the GIL-free wait and comes back (it is Send, not Sync).
        let (got, back) = py.allow_threads(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(outcome) => break outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    flag.store(true, Ordering::Relaxed);
                    let _ = py.allow_threads(|| worker.join());
                    return Err(signal);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(Box::new("the simulation thread ended without a result") as Box<dyn std::any::Any + Send>)
            }
        }
    };
    let _ = py.allow_threads(|| worker.join());
    match outcome {
        Ok(Ok(json)) => Ok(json),
        Ok(Err(e)) => Err(to_py_err(e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown".to_string());
            Err(PyRuntimeError::new_err(format!("internal error in the hostsim core: {what}")))
        }
    }
}

/// How often a running simulation's caller looks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);
/// The simulation thread's stack: the main thread's usual 8 MiB, twice.
const RUN_STACK_BYTES: usize = 16 << 20;

/// Validates a resolved config without running it; raises `ValueError`.
#[pyfunction]
fn validate(config_json: &str) -> PyResult<()> {
    hostsim_core::config::SimConfig::from_json(config_json).map(|_| ()).map_err(to_py_err)
}

/// The resolved host config of a named preset, as JSON; raises `ValueError`
/// for a preset without a host model.
/// With `fitted` false, the preset before the calibrated constants
/// (`host/fitted.json`) are laid over it.
#[pyfunction]
#[pyo3(signature = (name, fitted = true))]
fn host_preset(name: &str, fitted: bool) -> PyResult<String> {
    use hostsim_core::host::HostConfig;
    let cfg = if fitted { HostConfig::preset(name) } else { HostConfig::unfitted(name) }.map_err(to_py_err)?;
    serde_json::to_string(&cfg).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The constants `hostsim calibrate` fitted, as the core was built with them (`host/fitted.json`).
#[pyfunction]
fn fitted_values() -> &'static str {
    hostsim_core::host::fitted::FITTED_JSON
}

/// A microbenchmark (`calibration::micro`) on a host config: `host_json`
/// a `HostConfig`, `bench_json` e.g. `{"kind": "chase", "bytes": 65536}`.
/// Returns what it measured as JSON. Releases the GIL while it runs.
#[pyfunction]
fn micro(py: Python<'_>, host_json: &str, bench_json: &str) -> PyResult<String> {
    use hostsim_core::calibration::micro;
    let host: hostsim_core::host::HostConfig =
        serde_json::from_str(host_json).map_err(|e| PyValueError::new_err(format!("host: {e}")))?;
    let bench: micro::Micro = serde_json::from_str(bench_json).map_err(|e| PyValueError::new_err(format!("micro: {e}")))?;
    let machine = micro::Machine { cpu: &host.cpu, mem: &host.mem, copy_instr_per_line: host.kernel.costs.copy_instr_per_line as u64 };
    let outcome = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| host.validate().and_then(|_| micro::run(&machine, &bench)))));
    match outcome {
        Ok(Ok(m)) => serde_json::to_string(&m).map_err(|e| PyRuntimeError::new_err(e.to_string())),
        Ok(Err(e)) => Err(to_py_err(e)),
        Err(_) => Err(PyRuntimeError::new_err("hostsim core panicked in a microbenchmark (a bug; please report it)")),
    }
}

/// The fast fidelity's rule for a resolved config whose device buffers
/// `buffer_frames`: the frames its warm-up sends at least
/// (`sample::warmup_frames`), and why its runs are not sampled, if they are not.
#[pyfunction]
fn sample_rule(config_json: &str, buffer_frames: u64) -> PyResult<(u64, Option<&'static str>)> {
    use hostsim_core::system::sample;
    let cfg = hostsim_core::config::SimConfig::from_json(config_json).map_err(to_py_err)?;
    Ok((sample::warmup_frames(&cfg, buffer_frames), sample::not_stationary(&cfg)))
}

/// The JSON Schema of the config contract (`SimConfig`), as JSON.
#[pyfunction]
fn config_schema() -> String {
    hostsim_core::config::SimConfig::json_schema().to_string()
}

/// pcie-bench's 82599 + DPDK model (`pcie::nic_model`) for a PCIe config
/// (JSON, as `host.pcie`) and frames of `data_bytes` without FCS: JSON with
/// the link bytes per packet each way and the packet rate each way, as the
/// model is published and as it is described.
#[pyfunction]
fn pcie_nic_model(pcie_json: &str, data_bytes: u32) -> PyResult<String> {
    use hostsim_core::pcie::nic_model::{pmd_bidir_pps, pmd_bytes, Niantic};
    let cfg: hostsim_core::pcie::PcieConfig =
        serde_json::from_str(pcie_json).map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("pcie: {e}")))?;
    let mut out = serde_json::Map::new();
    for (name, how) in [("published", Niantic::AsPublished), ("described", Niantic::AsDescribed)] {
        let (up, down) = pmd_bytes(&cfg, data_bytes, how);
        out.insert(
            name.into(),
            serde_json::json!({"up_bytes": up, "down_bytes": down, "pps": pmd_bidir_pps(&cfg, data_bytes, how)}),
        );
    }
    Ok(serde_json::Value::Object(out).to_string())
}

/// Names of the presets that have a host model.
#[pyfunction]
fn host_presets() -> Vec<&'static str> {
    hostsim_core::host::config::HOST_PRESETS.to_vec()
}

/// The registered applications: JSON list of {name, pmd, kernel} (the
/// stacks each runs on).
#[pyfunction]
fn apps() -> String {
    let r = hostsim_core::apps::Registry::builtin();
    let list: Vec<serde_json::Value> = r
        .names()
        .into_iter()
        .filter_map(|n| r.get(n).map(|e| serde_json::json!({"name": n, "pmd": e.stacks.pmd, "kernel": e.stacks.kernel, "traffic": e.traffic.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect::<serde_json::Map<_, _>>()})))
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// The core's version string.
#[pyfunction]
fn version() -> &'static str {
    hostsim_core::VERSION
}

/// The public calibration checks (`hostsim validate`): a JSON list of
/// {area, name, unit, reference, simulated, tolerance, source, pass}.
#[pyfunction]
fn calibration_checks(py: Python<'_>) -> PyResult<String> {
    let outcome = py.allow_threads(|| catch_unwind(hostsim_core::calibration::run_checks));
    match outcome {
        Ok(Ok(checks)) => serde_json::to_string(&checks).map_err(|e| PyRuntimeError::new_err(e.to_string())),
        Ok(Err(e)) => Err(to_py_err(e)),
        Err(_) => Err(PyRuntimeError::new_err("hostsim core panicked in the calibration checks (a bug; please report it)")),
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(host_preset, m)?)?;
    m.add_function(wrap_pyfunction!(host_presets, m)?)?;
    m.add_function(wrap_pyfunction!(apps, m)?)?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(calibration_checks, m)?)?;
    m.add_function(wrap_pyfunction!(fitted_values, m)?)?;
    m.add_function(wrap_pyfunction!(micro, m)?)?;
    m.add_function(wrap_pyfunction!(pcie_nic_model, m)?)?;
    m.add_function(wrap_pyfunction!(sample_rule, m)?)?;
    m.add("__version__", hostsim_core::VERSION)?;
    m.add("SAMPLE_FRAMES", hostsim_core::system::sample::SAMPLE_FRAMES)?;
    m.add("FELL_BEHIND", hostsim_core::system::FELL_BEHIND)?;
    m.add("TABLES_GREW", hostsim_core::system::sample::TABLES_GREW)?;
    m.add("PASSED", hostsim_core::system::PASSED)?;
    Ok(())
}
