//! Seeded whole-system checks of load generator → link → reflector → link →
//! load generator against closed forms: line rates, exact latencies in
//! picoseconds, queueing limits, loss and reorder counts, determinism.

use hostsim_core::config::*;
use hostsim_core::system::checked_run as run;
use hostsim_core::system::System;
use serde_json::Value;

const G100: u64 = 100_000_000_000;
const NS: u64 = 1_000;
const US: u64 = 1_000_000;
const MS: u64 = 1_000_000_000;

fn base(rate: Rate, bytes: u32) -> SimConfig {
    let mut c = SimConfig::default();
    c.loadgen.rate = rate;
    c.loadgen.size = SizeDist::Fixed { bytes };
    c.reflector = ReflectorConfig { service_time_ps: 1, queue_frames: 4096, ..ReflectorConfig::default() };
    c
}

fn pps(v: f64) -> Rate {
    Rate { unit: RateUnit::Pps, value: v }
}

fn lg(r: &Value) -> &Value {
    &r["loadgen"]
}

#[test]
fn line_rate_at_100_percent() {
    for (rate, bytes, mpps) in [(G100, 64, 148.81), (G100, 1518, 8.127), (10_000_000_000, 64, 14.88)] {
        let mut c = base(Rate { unit: RateUnit::Percent, value: 100.0 }, bytes);
        c.link.rate_bps = rate;
        c.sim.duration_ps = 2 * MS;
        let r = run(&c).unwrap();
        let line = lg(&r)["line_rate_pps"].as_f64().unwrap() / 1e6;
        let offered = lg(&r)["offered_pps"].as_f64().unwrap() / 1e6;
        assert!((line / mpps - 1.0).abs() < 1e-4, "{bytes} B: line rate {line} Mpps");
        assert!((offered / line - 1.0).abs() < 1e-4, "{bytes} B: offered {offered} vs line {line}");
        assert_eq!(lg(&r)["rate_capped"], false);
    }
}

/// A frame that starts inside the window counts whole, so the window lasts
/// until its wire slot ends: at line rate the offered rate is the line rate
/// at most, whatever the window's length against the frame time.
#[test]
fn offered_never_passes_line_rate() {
    for (bytes, duration_ps) in [(64, MS), (64, MS + 3_333), (1518, MS + 1), (1518, 3 * MS / 7), (64, 20 * US + 1)] {
        let mut c = base(Rate { unit: RateUnit::Percent, value: 100.0 }, bytes);
        c.sim.duration_ps = duration_ps;
        c.sim.warmup_ps = duration_ps / 10;
        let r = run(&c).unwrap();
        let (line, offered) = (lg(&r)["line_rate_pps"].as_f64().unwrap(), lg(&r)["offered_pps"].as_f64().unwrap());
        assert!(offered <= line * (1.0 + 1e-12), "{bytes} B over {duration_ps} ps: offered {offered} above line {line}");
        // Short of it by less than one frame over the window.
        let window_s = lg(&r)["measured_window_ps"].as_f64().unwrap() / 1e12;
        assert!((line - offered) * window_s < 1.0, "{bytes} B over {duration_ps} ps: offered {offered} vs line {line}");
        let slot_ps = (bytes as u64 + 20) * 8 * 10; // 100 Gb/s: 10 ps a bit
        let window_ps = lg(&r)["measured_window_ps"].as_u64().unwrap();
        let configured = duration_ps - duration_ps / 10;
        assert!(window_ps >= configured && window_ps < configured + slot_ps, "{bytes} B: window {window_ps} ps");
    }
}

#[test]
fn above_line_rate_is_capped_and_said() {
    let r = run(&base(pps(200e6), 64)).unwrap();
    assert_eq!(lg(&r)["rate_capped"], true);
    assert!(r["warnings"][0].as_str().unwrap().contains("capped at line rate"));
    let offered = lg(&r)["offered_pps"].as_f64().unwrap();
    assert!((offered / 148_809_523.8 - 1.0).abs() < 1e-4);
}

#[test]
fn ten_gbps_is_delivered() {
    let r = run(&base(Rate { unit: RateUnit::Bps, value: 10e9 }, 64)).unwrap();
    let offered = lg(&r)["offered_bps"].as_f64().unwrap();
    let achieved = lg(&r)["achieved_bps"].as_f64().unwrap();
    assert!((offered / 10e9 - 1.0).abs() < 1e-3, "offered {offered}");
    assert!((achieved / 10e9 - 1.0).abs() < 1e-3, "achieved {achieved}");
}

#[test]
fn low_load_latency_is_exact() {
    // 2 × propagation + 2 × serialization + service, in picoseconds.
    for bytes in [64u32, 1518] {
        let mut c = base(pps(1e6), bytes);
        c.reflector.service_time_ps = 100 * NS;
        c.loadgen.keep_samples = 1_000_000;
        let r = run(&c).unwrap();
        let ser = (bytes as u64 + 20) * 8 * 10; // ps at 100 Gb/s
        let expect = 2 * US + 2 * ser + 100 * NS;
        let samples = lg(&r)["samples"].as_array().unwrap();
        assert_eq!(samples.len() as u64, lg(&r)["rx_packets"].as_u64().unwrap());
        assert!(samples.len() >= 999);
        assert!(samples.iter().all(|s| s[1].as_u64() == Some(expect)), "{bytes} B");
        assert_eq!(lg(&r)["latency_ns"]["p99"].as_f64().unwrap(), expect as f64 / 1e3);
    }
}

#[test]
fn drops_and_swaps_keep_samples_exact() {
    // Every 10th frame dropped, survivors returned in swapped pairs.
    let n = 1000u64;
    let period = 1_000 * NS; // 1 Mpps
    let mut c = base(pps(1e6), 64);
    c.sim.duration_ps = n * period;
    c.reflector.service_time_ps = 100 * NS;
    c.reflector.drop_every = 10;
    c.reflector.swap_pairs = true;
    c.loadgen.keep_samples = n;
    let r = run(&c).unwrap();
    let ser = 84 * 8 * 10;
    let base_lat = 2 * US + 2 * ser + 100 * NS;
    let survivors: Vec<u64> = (0..n).filter(|s| (s + 1) % 10 != 0).collect();
    assert_eq!(lg(&r)["tx_packets"], n);
    assert_eq!(lg(&r)["lost_packets"], n - survivors.len() as u64);
    assert_eq!(lg(&r)["reordered_packets"], survivors.len() as u64 / 2);
    assert_eq!(lg(&r)["duplicate_packets"], 0);
    let samples: Vec<(u64, u64)> =
        lg(&r)["samples"].as_array().unwrap().iter().map(|s| (s[0].as_u64().unwrap(), s[1].as_u64().unwrap())).collect();
    assert_eq!(samples.len(), survivors.len());
    for pair in survivors.chunks(2) {
        let (a, b) = (pair[0], pair[1]);
        // b is served last and goes out first; a waits for b's service, then its own wire slot.
        let lat_b = base_lat;
        let lat_a = (b - a) * period + base_lat + ser;
        assert!(samples.contains(&(b, lat_b)), "sample for {b}");
        assert!(samples.contains(&(a, lat_a)), "sample for {a}");
    }
}

#[test]
fn overload_drop_rate_matches_capacity() {
    // D/D/1/N: offered 20 Mpps to a 10 Mpps server → drop rate 1 − 10/20.
    for offered in [12e6, 20e6, 40e6] {
        let mut c = base(pps(offered), 64);
        c.reflector.service_time_ps = 100 * NS;
        c.reflector.queue_frames = 64;
        c.sim.duration_ps = 2 * MS;
        c.sim.warmup_ps = 200 * US;
        let r = run(&c).unwrap();
        let d = lg(&r)["drop_rate"].as_f64().unwrap();
        let expect = 1.0 - 10e6 / offered;
        assert!((d - expect).abs() < 0.01 * expect.max(0.01) + 0.002, "offered {offered}: drop {d} vs {expect}");
    }
}

#[test]
fn mm1n_blocking_probability() {
    // M/M/1/N with ρ = 0.9, N = 10: P_block = (1−ρ)ρ^N / (1−ρ^(N+1)).
    let mut c = base(pps(9e6), 64);
    c.loadgen.interarrival = Interarrival::Poisson;
    c.reflector.service = ServiceDist::Exponential;
    c.reflector.service_time_ps = 100 * NS;
    c.reflector.queue_frames = 10;
    c.sim.duration_ps = 20 * MS;
    c.sim.warmup_ps = MS;
    let r = run(&c).unwrap();
    let rho: f64 = 0.9;
    let expect = (1.0 - rho) * rho.powi(10) / (1.0 - rho.powi(11));
    let d = lg(&r)["drop_rate"].as_f64().unwrap();
    assert!((d / expect - 1.0).abs() < 0.05, "drop {d} vs {expect}");
}

#[test]
fn same_seed_same_result() {
    let mut c = base(pps(9e6), 64);
    c.loadgen.interarrival = Interarrival::Poisson;
    c.reflector.service = ServiceDist::Exponential;
    c.reflector.service_time_ps = 100 * NS;
    c.loadgen.size = SizeDist::Imix;
    let strip = |mut v: Value| {
        v["sim"]["wall_s"] = Value::Null;
        v["sim"]["packets_per_wall_s"] = Value::Null;
        v
    };
    let a = strip(run(&c).unwrap());
    let b = strip(run(&c).unwrap());
    assert_eq!(a, b);
    c.seed = 2;
    assert_ne!(a["loadgen"], strip(run(&c).unwrap())["loadgen"]);
}

#[test]
fn memory_stays_flat() {
    // Frames in flight bound the buffers, not the run length.
    let mut c = base(Rate { unit: RateUnit::Percent, value: 100.0 }, 64);
    c.reflector.service_time_ps = 1;
    let mut short = System::new(&c).unwrap();
    short.run();
    c.sim.duration_ps = 10 * MS;
    let mut long = System::new(&c).unwrap();
    long.run();
    assert_eq!(short.frame_buffers(), long.frame_buffers());
    assert!(long.frame_buffers() < 1000, "{}", long.frame_buffers());
}

#[test]
fn bad_config_names_the_field() {
    let mut c = base(pps(1e6), 64);
    c.loadgen.flows = 0;
    let e = run(&c).unwrap_err().to_string();
    assert!(e.starts_with("loadgen.flows"), "{e}");
    let mut c = base(pps(-1.0), 64);
    assert!(run(&c).unwrap_err().to_string().starts_with("loadgen.rate"));
    c.loadgen.rate = pps(1.0);
    c.loadgen.size = SizeDist::Fixed { bytes: 9217 };
    assert!(run(&c).unwrap_err().to_string().contains("64 to 9216"));
    let e = hostsim_core::simulate_json("{\"seed\": 1}").unwrap_err().to_string();
    assert!(e.contains("missing field"), "{e}");
}

#[test]
fn frames_of_different_flows_swapped_on_the_way_back_are_not_reordered() {
    // Two flows in turn: each swapped pair holds one frame of each flow, so
    // every flow still arrives in order (RFC 4737 counts per stream).
    let mut c = base(pps(1e6), 64);
    c.sim.duration_ps = 1000 * 1_000 * NS;
    c.reflector.swap_pairs = true;
    c.loadgen.flows = 2;
    let r = run(&c).unwrap();
    assert_eq!(lg(&r)["reordered_packets"], 0);
    // One flow: the first of every swapped pair comes back after the second.
    c.loadgen.flows = 1;
    let r = run(&c).unwrap();
    assert!(lg(&r)["reordered_packets"].as_u64().unwrap() >= 490, "{}", lg(&r)["reordered_packets"]);
}

#[test]
fn a_window_with_no_frame_sent_says_nothing_was_measured() {
    let said = |r: &Value| r["warnings"].to_string().contains("no frame was sent in the measured window");
    // 1e-24 pps: one frame at time 0, in the warm-up, and none in the window.
    let mut c = base(pps(1e-24), 64);
    c.sim.warmup_ps = 100_000_000;
    let r = run(&c).unwrap();
    assert_eq!(r["accounting"]["measured"]["sent"].as_u64(), Some(0));
    assert!(said(&r) && r["warnings"].to_string().contains("raise loadgen.rate or sim.duration"), "{}", r["warnings"]);
    assert!(!said(&run(&base(pps(1e6), 64)).unwrap()));
}
