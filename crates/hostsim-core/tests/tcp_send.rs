//! Seeded whole-system checks of the kernel's TCP sender (`--app
//! tcp-send`) against the load generator's TCP receiver (`loadgen.tcp`):
//! every byte written is delivered once and in order and acknowledged,
//! with and without loss; the sender keeps to the window; losses are
//! repaired by fast retransmit (and, for a tail, the timeout).

use hostsim_core::config::*;
use hostsim_core::host::HostConfig;
use hostsim_core::loadgen::config::TcpSinkConfig;
use hostsim_core::system::checked_run as run;
use serde_json::Value;

const US: u64 = 1_000_000;

fn cfg(writes: u64, buffer: u64, drop: f64) -> SimConfig {
    let mut c = SimConfig::default();
    c.app = "tcp-send".into();
    c.stack = Stack::Kernel;
    let mut h = HostConfig::preset("altra").unwrap();
    h.app.tcp_send.writes = writes;
    h.app.tcp_send.buffer_bytes = buffer;
    c.host = Some(h);
    c.loadgen.tcp = Some(TcpSinkConfig { rtt_ps: 10 * US, drop, ..Default::default() });
    c.link.propagation_ps = US;
    c.sim.duration_ps = 2000 * US;
    c.sim.warmup_ps = 0;
    c.sim.drain_ps = 2_000_000 * US;
    c
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_byte_written_arrives_once_in_order_and_is_acknowledged() {
    let r = run(&cfg(4, 1_000_000, 0.0)).unwrap();
    let (t, s) = (&r["kernel"]["tcp_send"], &r["loadgen"]["tcp"]);
    assert_eq!(u(&t["writes"]), 4, "{t}");
    assert_eq!(u(&t["bytes_written"]), 4_000_000);
    assert_eq!(u(&t["bytes_acked"]), 4_000_000, "{t}");
    assert_eq!(u(&s["delivered_bytes_total"]), 4_000_000, "{s}");
    assert_eq!((u(&s["duplicate_segments"]), u(&s["out_of_order_segments"]), u(&t["retransmissions"])), (0, 0, 0), "{s} {t}");
    assert_eq!(u(&s["beyond_window_segments"]), 0);
    // 1 MB in 1460 B segments.
    assert_eq!(u(&t["segments"]), 4 * 685);
}

#[test]
fn losses_are_repaired_and_nothing_is_delivered_twice() {
    let r = run(&cfg(4, 1_000_000, 0.01)).unwrap();
    let (t, s) = (&r["kernel"]["tcp_send"], &r["loadgen"]["tcp"]);
    // The receiver's counts are the measured window's arrivals (as its goodput): about 1 % dropped.
    let share = u(&s["dropped_segments"]) as f64 / u(&s["segments"]) as f64;
    assert!(u(&s["segments"]) > 500 && (0.002..0.03).contains(&share), "{s}");
    assert!(u(&t["fast_retransmits"]) > 0 && u(&t["retransmissions"]) >= u(&s["dropped_segments"]), "{t} {s}");
    assert_eq!(u(&s["delivered_bytes_total"]), 4_000_000, "{s}");
    assert_eq!(u(&t["bytes_acked"]), 4_000_000, "{t}");
    assert_eq!(u(&s["beyond_window_segments"]), 0);
}

fn scheme(s: &str, rtt_us: u64) -> Value {
    let mut c = cfg(6, 1_000_000, 0.0);
    let h = c.host.as_mut().unwrap();
    h.tx_scheme = serde_json::from_value(Value::String(s.into())).unwrap();
    c.loadgen.tcp.as_mut().unwrap().rtt_ps = rtt_us * US;
    run(&c).unwrap()
}

#[test]
fn zerocopy_skips_the_copy_and_holds_the_buffer_until_acknowledged() {
    let (copy, zc) = (scheme("copy", 10), scheme("zerocopy", 10));
    let cpp = |r: &Value, k: &str| r["cpu"]["cycles_per_packet"][k].as_f64().unwrap();
    assert!(cpp(&copy, "copy") > 100.0 && cpp(&zc, "copy") == 0.0, "{} {}", cpp(&copy, "copy"), cpp(&zc, "copy"));
    for r in [&copy, &zc] {
        assert_eq!(u(&r["loadgen"]["tcp"]["delivered_bytes_total"]), 6_000_000);
    }
    let (tc, tz) = (&copy["kernel"]["tcp_send"], &zc["kernel"]["tcp_send"]);
    assert_eq!((u(&tz["completions"]), u(&tc["completions"])), (6, 0));
    // A copy's buffer is free when write() returns; a zero-copy buffer when its last byte is acknowledged.
    assert_eq!(tc["hold_time"]["mean_ps"], tc["write_time"]["mean_ps"]);
    assert!(tz["hold_time"]["mean_ps"].as_f64() > tz["write_time"]["mean_ps"].as_f64());
    // The holding time grows with the round trip for zero-copy only.
    let (zc_far, copy_far) = (scheme("zerocopy", 1000), scheme("copy", 1000));
    let hold = |r: &Value| r["kernel"]["tcp_send"]["hold_time"]["p50_ps"].as_u64().unwrap();
    assert!(hold(&zc_far) > hold(&zc) + 900 * US, "{} {}", hold(&zc_far), hold(&zc));
    assert!(hold(&copy_far) < hold(&copy) + 900 * US, "{} {}", hold(&copy_far), hold(&copy));
}

#[test]
fn settings_of_synthetic_traffic_are_said_to_be_ignored_by_the_receiver() {
    let mut c = cfg(1, 100_000, 0.0);
    let warned = |c: &SimConfig| {
        let r = run(c).unwrap();
        r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("sends only ACKs")).map(str::to_owned)
    };
    assert_eq!(warned(&c), None);
    c.loadgen.rate = Rate { unit: RateUnit::Bps, value: 5e9 };
    c.loadgen.flows = 4;
    c.loadgen.interarrival = Interarrival::Poisson;
    let w = warned(&c).expect("a warning");
    assert!(w.starts_with("loadgen.rate, loadgen.interarrival, loadgen.flows ignored: the TCP receiver"), "{w}");
    // A field the user gave at its default value (SimConfig::given) is said too.
    let mut c = cfg(1, 100_000, 0.0);
    c.given = vec!["loadgen.flows".into()];
    let w = warned(&c).expect("a warning");
    assert!(w.starts_with("loadgen.flows ignored: the TCP receiver"), "{w}");
}
