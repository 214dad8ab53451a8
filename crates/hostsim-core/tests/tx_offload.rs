//! Seeded whole-system checks of the `ioat` and `nicmem` transmit schemes
//! and TCP Small Queues on the study's machine (`xeon-6226r-fpga`): every
//! byte still arrives once and in order; the copy engine, not a core,
//! moves the payload (and the NIC reads it again); with `nicmem` the NIC
//! reads the payload from host memory once, sends it from its own memory
//! with clipped headers, and retransmits without reading host memory for
//! it again; holding times grow with the round trip for zero-copy only.

use hostsim_core::config::*;
use hostsim_core::host::HostConfig;
use hostsim_core::loadgen::config::TcpSinkConfig;
use hostsim_core::system::checked_run as run;
use serde_json::Value;

const US: u64 = 1_000_000;
const MB: u64 = 1_000_000;

fn cfg(scheme: &str, writes: u64, drop: f64, rtt_us: u64) -> SimConfig {
    let mut c = SimConfig::default();
    c.app = "tcp-send".into();
    c.stack = Stack::Kernel;
    let mut h = HostConfig::preset("xeon-6226r-fpga").unwrap();
    h.app.tcp_send.writes = writes;
    h.app.tcp_send.buffer_bytes = MB;
    h.tx_scheme = serde_json::from_value(Value::String(scheme.into())).unwrap();
    c.host = Some(h);
    c.loadgen.tcp = Some(TcpSinkConfig { rtt_ps: rtt_us * US, drop, ..Default::default() });
    c.link.propagation_ps = US;
    c.sim.duration_ps = 2000 * US;
    c.sim.warmup_ps = 0;
    c.sim.drain_ps = 2_000_000 * US;
    c
}

/// A send buffer of 64 MiB, with pools large enough for it.
fn big_sndbuf(mut c: SimConfig) -> SimConfig {
    let h = c.host.as_mut().unwrap();
    h.kernel.tcp.sndbuf_bytes = 64 << 20;
    h.kernel.skbs = 65536;
    h.pmd.mempool.mbufs = 65536;
    c
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Every byte of `writes` MB delivered once, in order, and acknowledged.
fn delivered_in_order(r: &Value, writes: u64) {
    let (t, s) = (&r["kernel"]["tcp_send"], &r["loadgen"]["tcp"]);
    assert_eq!(u(&s["delivered_bytes_total"]), writes * MB, "{s}");
    assert_eq!(u(&t["bytes_acked"]), writes * MB, "{t}");
    assert_eq!(u(&s["beyond_window_segments"]), 0);
    if u(&s["dropped_segments"]) == 0 {
        assert_eq!((u(&s["duplicate_segments"]), u(&s["out_of_order_segments"]), u(&t["retransmissions"])), (0, 0, 0), "{s} {t}");
    }
}

fn nic_reads(r: &Value) -> u64 {
    u(&r["mem"]["traffic"]["nic"]["read_bytes"])
}

#[test]
fn the_copy_engine_copies_and_the_nic_reads_the_copy() {
    let (copy, ioat) = (run(&cfg("copy", 2, 0.0, 10)).unwrap(), run(&cfg("ioat", 2, 0.0, 10)).unwrap());
    delivered_in_order(&ioat, 2);
    let cpp = |r: &Value, k: &str| r["cpu"]["cycles_per_packet"][k].as_f64().unwrap();
    assert!(cpp(&copy, "copy") > 100.0 && cpp(&ioat, "copy") == 0.0);
    assert!(cpp(&ioat, "completion") > 0.0, "the stack polls the copies' status");
    let e = &ioat["copy_engine"];
    assert_eq!((u(&e["bytes"]), u(&e["copies"])), (2 * MB, u(&ioat["kernel"]["tcp_send"]["segments"])), "{e}");
    // The engine reads the user buffer and writes the socket buffers (whole lines);
    // the NIC then reads the copy, as it does with a CPU copy.
    let eng = &ioat["mem"]["traffic"]["engine"];
    assert!(u(&eng["read_bytes"]) >= 2 * MB && u(&eng["write_bytes"]) >= 2 * MB, "{eng}");
    assert!(nic_reads(&ioat) >= 2 * MB && nic_reads(&ioat) == nic_reads(&copy), "{} {}", nic_reads(&ioat), nic_reads(&copy));
    assert_eq!(u(&copy["mem"]["traffic"]["engine"]["read_bytes"]), 0);
    // The buffer may be reused when write() returns, after the last copy.
    let t = &ioat["kernel"]["tcp_send"];
    assert_eq!(t["hold_time"]["mean_ps"], t["write_time"]["mean_ps"]);
}

#[test]
fn nicmem_reads_the_payload_once_and_sends_it_from_the_card() {
    let r = run(&cfg("nicmem", 2, 0.0, 10)).unwrap();
    delivered_in_order(&r, 2);
    let (t, card) = (&r["kernel"]["tcp_send"], &r["nics"][0]["memory"]);
    let (segs, sent) = (u(&t["segments"]), u(&t["transmissions"]));
    // Each segment's payload is written to the card once and read from it per transmission.
    assert!(u(&card["bytes_written"]) >= 2 * MB && u(&card["bytes_read"]) >= 2 * MB, "{card}");
    // 54 B of headers in a 64 B line: 10 B clipped per transmission.
    assert_eq!(u(&card["header_clip_bytes"]), 10 * sent);
    // Host memory the NIC read: the payload once (in whole lines: 23 or 24
    // per segment), then a header line, a copy descriptor and a TX
    // descriptor per segment: far below a second pass (1460 B per segment).
    let host = nic_reads(&r);
    assert!(host >= 2 * MB && host < 2 * MB + 320 * segs, "{host} for {segs} segments");
}

#[test]
fn nicmem_retransmits_from_the_card_not_from_host_memory() {
    for (scheme, per_retransmission) in [("nicmem", 0..256), ("zerocopy", 1460..4096)] {
        let (clean, lossy) = (run(&cfg(scheme, 2, 0.0, 10)).unwrap(), run(&cfg(scheme, 2, 0.01, 10)).unwrap());
        delivered_in_order(&lossy, 2);
        let n = u(&lossy["kernel"]["tcp_send"]["retransmissions"]);
        assert!(n > 5, "{scheme}: {n} retransmissions");
        let extra = (nic_reads(&lossy) - nic_reads(&clean)) / n;
        assert!(per_retransmission.contains(&extra), "{scheme}: {extra} B of host memory read per retransmission");
    }
}

#[test]
fn small_queues_keep_a_large_window_out_of_the_qdisc() {
    // 14.4 MB at a 10 ms round trip: ACKs open the window by thousands of
    // segments at once; without TSQ they overflow the qdisc's 1000 packets
    // (167 retransmissions on this run before TSQ was modelled).
    let mut c = big_sndbuf(cfg("copy", 4, 0.0, 10_000));
    c.host = Some(HostConfig { tx_scheme: Default::default(), ..HostConfig::preset("altra").unwrap() });
    let c = {
        let mut c = big_sndbuf(c);
        c.host.as_mut().unwrap().app.tcp_send = hostsim_core::apps::config::TcpSendConfig { writes: 4, buffer_bytes: 3_600_000, ..Default::default() };
        c
    };
    let r = run(&c).unwrap();
    let t = &r["kernel"]["tcp_send"];
    assert_eq!(u(&r["loadgen"]["tcp"]["delivered_bytes_total"]), 14_400_000);
    assert_eq!((u(&r["kernel"]["qdisc_drops"]), u(&t["retransmissions"])), (0, 0), "{t}");
    assert!(u(&t["tsq_throttled"]) > 0, "{t}");
}

#[test]
fn with_room_to_send_only_zerocopy_holds_its_buffer_for_the_round_trip() {
    let hold = |r: &Value| r["kernel"]["tcp_send"]["hold_time"]["p50_ps"].as_u64().unwrap();
    for scheme in ["copy", "ioat", "nicmem", "zerocopy"] {
        let near = run(&big_sndbuf(cfg(scheme, 3, 0.0, 10))).unwrap();
        let far = run(&big_sndbuf(cfg(scheme, 3, 0.0, 1000))).unwrap();
        for r in [&near, &far] {
            delivered_in_order(r, 3);
            assert_eq!(u(&r["kernel"]["qdisc_drops"]), 0, "{scheme}");
        }
        if scheme == "zerocopy" {
            assert!(hold(&far) > hold(&near) + 900 * US, "{scheme}: {} {}", hold(&far), hold(&near));
        } else {
            assert!(hold(&far) < hold(&near) + 100 * US, "{scheme}: {} {}", hold(&far), hold(&near));
        }
    }
}

#[test]
fn bad_schemes_and_send_buffers_name_their_fields() {
    let mut c = cfg("nicmem", 1, 0.0, 10);
    c.host = Some(HostConfig { tx_scheme: c.host.as_ref().unwrap().tx_scheme, ..HostConfig::preset("altra").unwrap() });
    let e = run(&c).unwrap_err().to_string();
    assert!(e.contains("host.tx_scheme") && e.contains("nic.memory"), "{e}");
    let mut c = cfg("copy", 1, 0.0, 10);
    c.host.as_mut().unwrap().kernel.tcp.sndbuf_bytes = 64 << 20;
    let e = run(&c).unwrap_err().to_string();
    assert!(e.contains("host.kernel.tcp.sndbuf_bytes") && e.contains("mempool"), "{e}");
}

/// With `sim.dma_at_memory_time`, a whole payload in host memory (`copy`,
/// `ioat`) is read at the memory side's time and a split one (`nicmem`,
/// `zerocopy`) at once, as before: every scheme still delivers every byte
/// once and in order.
#[test]
fn payload_reads_made_at_the_memory_side_keep_every_scheme_in_order() {
    for scheme in ["copy", "ioat", "nicmem", "zerocopy"] {
        let mut c = cfg(scheme, 3, 0.0, 10);
        c.sim.dma_at_memory_time = true;
        let r = run(&c).unwrap();
        delivered_in_order(&r, 3);
    }
}
