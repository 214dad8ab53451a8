//! The fast fidelity (`sim.fidelity = fast`, `sample.rs`): a sample of the
//! window simulated with the full model, the rest predicted by a fluid
//! model of the device's buffers.

use hostsim_core::config::{Fidelity, SimConfig};
use hostsim_core::loadgen::config::{Rate, RateUnit};
use hostsim_core::host::HostConfig;
use hostsim_core::system::sample::{SAMPLE_FRAMES, TABLES_GREW};
use hostsim_core::system::checked_run;
use serde_json::Value;

/// A 10 Mpps server (100 ns fixed service) behind the default 1 µs link,
/// offered `mpps`, 20 ms with 0.1 ms of warm-up.
fn server(mpps: f64, fidelity: Fidelity) -> SimConfig {
    let mut cfg = SimConfig::default();
    cfg.loadgen.rate = Rate { unit: RateUnit::Pps, value: mpps * 1e6 };
    cfg.reflector.service_time_ps = 100_000;
    cfg.sim.duration_ps = 20_000_000_000;
    cfg.sim.warmup_ps = 100_000_000;
    cfg.sim.fidelity = fidelity;
    cfg
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn a_fast_run_simulates_a_sample_and_predicts_the_window() {
    // 10.2 Mpps into 10 Mpps: 1/51 of what is sent is too much.
    let excess = 1.0 - 10.0 / 10.2;
    // The fluid model alone (the overflow sample is the next test's).
    let mut plain = server(10.2, Fidelity::Fast);
    plain.sim.overflow_sample = false;
    let fast = checked_run(&plain).unwrap();
    let s = &fast["sim"]["sample"];
    assert_eq!(fast["sim"]["fidelity"], "fast");
    assert_eq!(s["sampled"], true);
    assert_eq!(s["warmup_doublings"], 0, "no table grew");
    // The warm-up lasts until the reflector's 1,024 buffered frames were
    // sent (100.4 µs, a little longer than the configured 100 µs), then
    // 19,200 frames' worth of window.
    assert_eq!(s["warmup_ps"].as_u64(), Some((1024.0 / 10.2e6 * 1e12f64).ceil() as u64));
    let window = (SAMPLE_FRAMES as f64 / 10.2e6 * 1e12).ceil() as u64;
    assert_eq!(s["window_ps"].as_u64(), Some(window));
    assert_eq!(fast["loadgen"]["tx_packets"].as_u64(), Some(SAMPLE_FRAMES + 1));
    // The sample and its drain, not the 20 ms configured.
    assert!(fast["sim"]["simulated_ps"].as_u64().unwrap() < 4_000_000_000);
    assert_eq!(s["represented_packets"], 204_000);
    // The sample's buffers grow at the excess; the fluid model fills the
    // 1,024-frame queue and loses the excess from then on.
    let grown = f(&fast["sim"]["backlog_growth_rate"]);
    assert!((grown - excess).abs() < 0.002, "sample growth {grown}, excess {excess}");
    let p = &s["predicted"];
    let fill = p["buffers_fill_ps"].as_u64().unwrap();
    let fill_expected = 1024.0 / (excess * 10.2e6) * 1e12;
    assert!((fill as f64 / fill_expected - 1.0).abs() < 0.05, "fill at {fill} ps, expected {fill_expected}");
    assert!(fast["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("the fluid model fills them")));
    // The full run over the whole 19.9 ms: the same loss (the queue's
    // 1,024 frames are 0.5 % of the 203,000 sent, growth in the
    // prediction, growth and loss in the run).
    let full = checked_run(&server(10.2, Fidelity::Full)).unwrap();
    assert_eq!(full["sim"]["fidelity"], "full");
    assert!(full["sim"]["sample"].is_null());
    let total = |loss: f64, growth: f64| loss + growth;
    let full_total = total(f(&full["loadgen"]["loss_rate"]), f(&full["sim"]["backlog_growth_rate"]));
    let fast_total = total(f(&p["loss_rate"]), f(&p["backlog_growth_rate"]));
    assert!((full_total - excess).abs() < 0.002, "full {full_total}, excess {excess}");
    assert!((fast_total - full_total).abs() < 0.002, "fast {fast_total}, full {full_total}");
    assert!((f(&p["loss_rate"]) - f(&full["loadgen"]["loss_rate"])).abs() < 0.002);
    assert_eq!(p["tx_packets"], full["loadgen"]["tx_packets"]);
    assert_eq!((s["overflow"]["sampled"].as_bool(), p["unclassified_drops"].as_u64()), (Some(false), p["lost_packets"].as_u64()));
}

#[test]
fn an_overflow_sample_runs_past_the_fill_and_drops_as_the_full_run() {
    // As above, with the overflow sample: the fluid model fills the queue
    // about 5 ms into the window, so a second sample runs twice as long
    // and a quarter sample more (about 112,000 frames, within
    // OVERFLOW_SAMPLE_FRAMES), and its second half drops at the queue.
    let fast = checked_run(&server(10.2, Fidelity::Fast)).unwrap();
    let s = &fast["sim"]["sample"];
    let (o, p) = (&s["overflow"], &s["predicted"]);
    assert_eq!((o["sampled"].as_bool(), o["dropped"].as_bool()), (Some(true), Some(true)), "{s}");
    let first = (SAMPLE_FRAMES as f64 / 10.2e6 * 1e12).ceil() as u64;
    // The fill counts from the window's start, the second sample from its
    // own, `offset_ps` later (its warm-up until 1,024 frames were sent).
    let after = o["fill_ps"].as_u64().unwrap() - s["offset_ps"].as_u64().unwrap();
    assert!(s["offset_ps"].as_u64().unwrap() > 0);
    assert_eq!(o["window_ps"].as_u64(), Some(2 * after + first / 2));
    assert_eq!(s["window_ps"], o["window_ps"]);
    // The counts are the longer sample's, and they hold the drops.
    assert!(fast["loadgen"]["lost_packets"].as_u64().unwrap() > 0);
    assert_eq!(fast["accounting"]["measured"]["drops"]["device_queue"], fast["loadgen"]["lost_packets"]);
    // Every predicted drop has its fate; the loss is the full run's.
    assert_eq!(p["unclassified_drops"].as_u64(), Some(0));
    assert_eq!(p["drops"]["device_queue"], p["lost_packets"]);
    let full = checked_run(&server(10.2, Fidelity::Full)).unwrap();
    assert!((f(&p["loss_rate"]) - f(&full["loadgen"]["loss_rate"])).abs() < 0.002, "{p} against {}", full["loadgen"]);
    // Its counts hold the drops and the fill: they understate the overload, and it says so.
    let w = fast["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("fell behind")).expect("a warning");
    assert!(w.contains("frames it dropped, so its counts understate the overload") && !w.contains("only in a longer run"), "{w}");
    assert_eq!(p["buffers_fill_ps"], o["fill_ps"]);
}

#[test]
fn no_overflow_sample_that_would_simulate_more_than_the_run() {
    // 5 % over the server for 4 ms, 50 µs of it warm-up: the queue fills
    // about 2 ms into the window; a sample past the fill would be the
    // whole window after a warm-up longer than configured (until 1,024
    // frames were sent, 97.5 µs). 2 % over for 6.2 ms, 0.2 ms of it
    // warm-up: the sample past the fill is the whole window, with the
    // configured warm-up, but the first sample was simulated too. Either
    // way the fast run would simulate more than the run: the fluid
    // model's overflow stands, unclassified, near the full run's.
    for (mpps, duration_ps, warmup_ps) in [(10.5, 4_000_000_000, 50_000_000), (10.2, 6_200_000_000, 200_000_000)] {
        let mut cfg = server(mpps, Fidelity::Fast);
        cfg.sim.duration_ps = duration_ps;
        cfg.sim.warmup_ps = warmup_ps;
        let fast = checked_run(&cfg).unwrap();
        let s = &fast["sim"]["sample"];
        assert_eq!((s["sampled"].as_bool(), s["overflow"]["sampled"].as_bool()), (Some(true), Some(false)), "{s}");
        assert!(s["overflow"]["why"].as_str().unwrap().contains("more than the run"), "{s}");
        let p = &s["predicted"];
        assert_eq!(p["unclassified_drops"], p["lost_packets"]);
        cfg.sim.fidelity = Fidelity::Full;
        let full = checked_run(&cfg).unwrap();
        assert!(fast["sim"]["events"].as_u64() < full["sim"]["events"].as_u64());
        let lost = full["loadgen"]["lost_packets"].as_u64().unwrap() as f64;
        assert!(lost > 0.0 && (p["lost_packets"].as_u64().unwrap() as f64 / lost - 1.0).abs() < 0.1, "{p} against {}", full["loadgen"]);
    }
}

#[test]
fn below_capacity_nothing_is_lost_or_grows() {
    let fast = checked_run(&server(9.5, Fidelity::Fast)).unwrap();
    let p = &fast["sim"]["sample"]["predicted"];
    assert_eq!((p["lost_packets"].as_u64(), p["backlog_growth_frames"].as_u64()), (Some(0), Some(0)));
    assert!(p["buffers_fill_ps"].is_null());
    assert!(fast["warnings"].as_array().unwrap().is_empty(), "{}", fast["warnings"]);
}

#[test]
fn fast_runs_are_deterministic() {
    let strip = |mut v: Value| {
        for k in ["wall_s", "packets_per_wall_s"] {
            v["sim"].as_object_mut().unwrap().remove(k);
        }
        v["sim"]["sample"].as_object_mut().unwrap().remove("represented_packets_per_wall_s");
        v
    };
    let a = strip(checked_run(&server(10.2, Fidelity::Fast)).unwrap());
    let b = strip(checked_run(&server(10.2, Fidelity::Fast)).unwrap());
    assert_eq!(a, b);
}

#[test]
fn a_captured_run_is_simulated_whole() {
    // A capture should hold every frame of the configured run.
    // 5 ms at 5 Mpps: a sample (0.2 ms of warm-up, 3.84 ms of window)
    // would fit; the capture alone keeps the run whole.
    let mut cfg = server(5.0, Fidelity::Fast);
    cfg.sim.duration_ps = 5_000_000_000;
    let path = std::env::temp_dir().join(format!("hostsim-fast-{}.pcap", std::process::id()));
    cfg.loadgen.capture_tx = Some(path.to_string_lossy().into_owned());
    let r = checked_run(&cfg);
    let _ = std::fs::remove_file(&path);
    let r = r.unwrap();
    let s = &r["sim"]["sample"];
    assert_eq!(s["sampled"], false);
    assert!(s["why"].as_str().unwrap().contains("captures"), "{s}");
    assert_eq!(r["loadgen"]["tx_packets"].as_u64(), Some(24_500));
    assert_eq!(r["capture"]["tx_frames"].as_u64(), Some(25_000));
}

/// vswitch on `altra` at 2 Mpps over 1,024 flows, each installed by an
/// upcall of 50,000 instructions: tens of milliseconds before the table
/// holds every flow, while the core falls behind and drops.
fn vswitch(warmup_ms: u64, duration_ms: u64, fidelity: Fidelity) -> SimConfig {
    let mut cfg = SimConfig::default();
    cfg.app = "vswitch".into();
    let mut host = HostConfig::preset("altra").unwrap();
    host.app.flow_table.upcall_instr = 50_000;
    cfg.host = Some(host);
    cfg.loadgen.flows = 1_024;
    cfg.loadgen.rate = Rate { unit: RateUnit::Pps, value: 2e6 };
    cfg.sim.warmup_ps = warmup_ms * 1_000_000_000;
    cfg.sim.duration_ps = duration_ms * 1_000_000_000;
    cfg.sim.fidelity = fidelity;
    cfg
}

#[test]
fn a_sample_waits_until_the_tables_stop_growing() {
    // The configured run in full is inside the start-up transient.
    let short = checked_run(&vswitch(1, 20, Fidelity::Full)).unwrap();
    assert!(f(&short["loadgen"]["loss_rate"]) > 0.05, "{}", short["loadgen"]["loss_rate"]);
    // A fast run whose sample sees the table grow is that run, simulated as configured.
    let whole = checked_run(&vswitch(1, 20, Fidelity::Fast)).unwrap();
    assert_eq!(whole["sim"]["sample"]["sampled"], false);
    assert!(whole["sim"]["sample"]["why"].as_str().unwrap().contains("tables grew"));
    assert_eq!(whole["loadgen"], short["loadgen"]);
    // With sim.settle it predicts the steady state after the transient.
    let mut settle = vswitch(1, 20, Fidelity::Fast);
    settle.sim.settle = true;
    let fast = checked_run(&settle).unwrap();
    let s = &fast["sim"]["sample"];
    assert_eq!(s["sampled"], true);
    // The warm-up from `warmup_frames` ended with flows still being
    // installed: it doubled until the sample saw none.
    assert!(s["warmup_doublings"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!((fast["app"]["flows"].as_u64(), fast["app"]["misses"].as_u64()), (Some(1_024), Some(0)));
    let warned = fast["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with(TABLES_GREW));
    assert!(warned, "{}", fast["warnings"]);
    assert_eq!(f(&s["predicted"]["loss_rate"]), 0.0);
    // After a warm-up as long as the sample's, the full model agrees with it.
    let warm_ms = s["warmup_ps"].as_u64().unwrap().div_ceil(1_000_000_000);
    let steady = checked_run(&vswitch(warm_ms, warm_ms + 10, Fidelity::Full)).unwrap();
    assert_eq!(f(&steady["loadgen"]["loss_rate"]), 0.0);
    assert_eq!(steady["app"]["misses"], 0);
}
