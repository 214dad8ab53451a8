//! The memcached client generator against MemcachedDPDK (`--app memcached`)
//! on the altra host: population, hits, pairing, latency, closed loop.

use hostsim_core::config::*;
use hostsim_core::host::HostConfig;
use hostsim_core::system::checked_run as run;
use serde_json::Value;

const US: u64 = 1_000_000;

fn cfg(keys: u64, rps: f64) -> SimConfig {
    let mut c = SimConfig::default();
    c.app = "memcached".into();
    c.host = Some(HostConfig::preset("altra").unwrap());
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: rps };
    c.loadgen.memcached = Some(McClientConfig {
        keys,
        key_size: ZipfSizeConfig { min: 8, max: 40, skew: 1.0 },
        ..McClientConfig::default()
    });
    c.sim.duration_ps = 2000 * US;
    c
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn after_population_every_get_hits_and_every_request_is_answered() {
    let r = run(&cfg(500, 1e6)).unwrap();
    let m = &r["loadgen"]["memcached"];
    assert_eq!(u(&m["requests"]), 2000);
    assert_eq!(u(&m["replies"]), u(&m["requests"]), "{m}");
    assert_eq!(u(&m["hits"]), u(&m["gets"]), "{m}");
    assert_eq!(u(&m["misses"]) + u(&m["errors"]) + u(&m["timeouts"]), 0, "{m}");
    assert_eq!(u(&m["stored"]), u(&m["sets"]));
    assert!(u(&m["gets"]) > 1200, "{m}");
    assert_eq!(u(&r["app"]["get_hits"]), u(&m["hits"]));
    assert_eq!(u(&r["loadgen"]["lost_packets"]), 0);
    let lat = &r["loadgen"]["latency_ns"];
    let (min, mean, max) = (lat["min"].as_f64().unwrap(), lat["mean"].as_f64().unwrap(), lat["max"].as_f64().unwrap());
    // At least the 2 µs of propagation; at low load stable (no queueing),
    // but for the first requests, which fetch the driver's and memcached's
    // code from DRAM (no warm-up here) and queue those behind them.
    let p90 = lat["p90"].as_f64().unwrap();
    assert!(min > 2000.0 && p90 < 1.2 * min && max > p90, "{lat}");
    assert!(mean > min && mean < max, "{lat}");
}

fn closed(outstanding: u32) -> Value {
    let mut c = cfg(200, 1e6);
    c.loadgen.closed_loop = Some(ClosedLoopConfig { outstanding, timeout_ps: 100 * US });
    c.sim.duration_ps = 1000 * US;
    c.sim.warmup_ps = 200 * US;
    run(&c).unwrap()
}

#[test]
fn closed_loop_follows_littles_law_and_scales_with_outstanding() {
    let one = closed(1);
    let m = &one["loadgen"]["memcached"];
    let rps = m["rps"].as_f64().unwrap();
    let mean_s = one["loadgen"]["latency_ns"]["mean"].as_f64().unwrap() * 1e-9;
    assert!((rps * mean_s - 1.0).abs() < 0.02, "rps {rps} x latency {mean_s} s");
    assert_eq!(u(&m["timeouts"]), 0);
    assert!(one["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("ignored in closed loop")));
    let eight = closed(8);
    let rps8 = eight["loadgen"]["memcached"]["rps"].as_f64().unwrap();
    assert!(rps8 > 2.0 * rps, "8 outstanding: {rps8} rps vs 1: {rps}");
    assert_eq!(u(&eight["loadgen"]["memcached"]["hits"]), u(&eight["loadgen"]["memcached"]["gets"]));
}

#[test]
fn closed_loop_replaces_requests_that_time_out() {
    // Replies never come back (the server listens elsewhere): each timeout period restarts the requests.
    let mut c = cfg(10, 1e6);
    c.host.as_mut().unwrap().app.kvs.udp_port = 11212;
    c.loadgen.closed_loop = Some(ClosedLoopConfig { outstanding: 4, timeout_ps: 10 * US });
    c.sim.duration_ps = 100 * US;
    let r = run(&c).unwrap();
    let m = &r["loadgen"]["memcached"];
    assert_eq!(u(&m["replies"]), 0);
    let (req, to) = (u(&m["requests"]), u(&m["timeouts"]));
    assert!((20..=44).contains(&req), "{m}");
    assert!(to >= req - 8, "{m}");
}


/// The client sizes each request from its key and value: a frame size set
/// for the generator is said to be ignored, not silently dropped.
#[test]
fn a_frame_size_beside_the_client_is_said_to_be_ignored() {
    let said = |r: &Value| r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with("loadgen.size is ignored: with the memcached client"));
    let mut c = cfg(100, 1e5);
    c.sim.duration_ps = 200 * US;
    assert!(!said(&run(&c).unwrap()));
    c.loadgen.size = SizeDist::Fixed { bytes: 1518 };
    assert!(said(&run(&c).unwrap()));
}

#[test]
fn header_settings_beside_the_client_are_said_to_be_ignored() {
    let said = |r: &Value| {
        r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("ignored: the memcached client")).map(str::to_owned)
    };
    let mut c = cfg(100, 1e5);
    c.sim.duration_ps = 200 * US;
    // Flows spread the client's source ports: read, so not said.
    c.loadgen.flows = 8;
    assert_eq!(said(&run(&c).unwrap()), None);
    c.loadgen.protocol = Protocol::Raw;
    c.loadgen.dst_port = 7;
    // Past the end of a 64 B frame: no tag is placed, so no error either.
    c.loadgen.tag_offset = Some(100);
    let w = said(&run(&c).unwrap()).expect("a warning");
    assert!(w.starts_with("loadgen.protocol, loadgen.dst_port, loadgen.tag_offset ignored: the memcached client"), "{w}");
}

#[test]
fn the_line_rate_is_the_frames_sents_and_the_nominal_mean_the_mixs() {
    // At 100 % of the line rate, the rate the mix's mean frame allows.
    let mut c = cfg(1000, 0.0);
    c.loadgen.rate = Rate { unit: RateUnit::Percent, value: 100.0 };
    c.sim.duration_ps = 300 * US;
    c.sim.warmup_ps = 100 * US;
    let r = run(&c).unwrap();
    let lg = &r["loadgen"];
    let f = |k: &str| lg[k].as_f64().unwrap_or_else(|| panic!("{k}: {lg}"));
    assert!(f("tx_packets") > 10_000.0, "{lg}");
    assert_eq!(f("mean_frame_bytes"), f("tx_bytes") / f("tx_packets"));
    // The line rate is the link's for the frames sent: never below what they offered.
    assert!(f("offered_pps") <= f("line_rate_pps") * 1.001, "{lg}");
    // The mix's mean, sampled from the client's own draws, is the frames': the
    // closed form from the mean sizes was 5 % short of them on this mix.
    assert!((f("nominal_mean_frame_bytes") / f("mean_frame_bytes") - 1.0).abs() < 0.01, "{lg}");
    assert!((f("requested_pps") / f("offered_pps") - 1.0).abs() < 0.02, "{lg}");
}
