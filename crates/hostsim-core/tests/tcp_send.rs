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
    assert_eq!(u(&t["max_bytes_over_window"]), 0);
    // 1 MB in 1460 B segments.
    assert_eq!(u(&t["segments"]), 4 * 685);
}

#[test]
fn losses_are_repaired_and_nothing_is_delivered_twice() {
    let r = run(&cfg(4, 1_000_000, 0.01)).unwrap();
    let (t, s) = (&r["kernel"]["tcp_send"], &r["loadgen"]["tcp"]);
    assert!(u(&s["dropped_segments"]) > 10, "{s}");
    assert!(u(&t["fast_retransmits"]) > 0 && u(&t["retransmissions"]) >= u(&s["dropped_segments"]), "{t} {s}");
    assert_eq!(u(&s["delivered_bytes_total"]), 4_000_000, "{s}");
    assert_eq!(u(&t["bytes_acked"]), 4_000_000, "{t}");
    assert_eq!(u(&s["beyond_window_segments"]), 0);
}
