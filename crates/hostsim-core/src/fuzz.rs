//! Entry points for fuzzing: each takes arbitrary bytes and must return
//! without panicking, hanging or allocating without bound. The cargo-fuzz
//! targets in `fuzz/` call them (nightly, libFuzzer), and so does the smoke
//! test `tests/fuzz_smoke.rs` (stable, bounded, in CI).

use crate::config::SimConfig;
use crate::loadgen::config::{LoadgenConfig, TraceConfig};
use crate::loadgen::trace::Trace;
use crate::wire::{ethernet, ipv4, memcached, tag, tcp, udp};

/// The config contract: parse, validate, build the system a valid config
/// describes within a 1 GiB budget, and run it for at most 2 µs of traffic
/// (and 2 µs of drain), checking every invariant of its result.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mut cfg) = SimConfig::from_json(text) else { return };
    const SHORT_PS: u64 = 2_000_000;
    let s = &mut cfg.sim;
    s.duration_ps = s.duration_ps.min(SHORT_PS);
    s.warmup_ps = s.warmup_ps.min(s.duration_ps / 2);
    s.drain_ps = s.drain_ps.min(SHORT_PS);
    s.memory_limit_bytes = Some(s.memory_limit_bytes.unwrap_or(u64::MAX).min(1 << 30));
    cfg.link.propagation_ps = cfg.link.propagation_ps.min(SHORT_PS);
    if cfg.validate().is_ok() {
        let _ = crate::system::checked_run(&cfg);
    }
}

/// Every wire parser on the same bytes, layered as a received frame is.
pub fn wire(data: &[u8]) {
    let _ = tag::Repr::parse(data);
    let _ = tcp::is_pure_ack(data);
    let Ok(eth) = ethernet::Packet::new_checked(data) else { return };
    let _ = ethernet::Repr::parse(&eth);
    let Ok(ip) = ipv4::Packet::new_checked(eth.payload()) else { return };
    let _ = ipv4::Repr::parse(&ip);
    if let Ok(t) = tcp::Packet::new_checked(ip.payload()) {
        let _ = (t.seq(), t.payload().len());
    }
    let Ok(u) = udp::Packet::new_checked(ip.payload()) else { return };
    let _ = udp::Repr::parse(&u);
    let Ok(m) = memcached::Packet::new_checked(u.payload()) else { return };
    let _ = memcached::Repr::parse(&m);
    for line in m.payload().split(|&b| b == b'\n') {
        let _ = memcached::Command::parse(line.strip_suffix(b"\r").unwrap_or(line));
    }
}

/// The pcap/pcapng reader with every option of the trace loader: the last
/// byte chooses the options (bit 0 pad runts, 1 rewrite IP, 2 fix checksums,
/// 3 tag, 4 keep only UDP port 9, 5 oversize frames are an error, 6 a
/// 64 B largest frame); the bytes before it are the file, read from memory.
pub fn pcap(data: &[u8]) {
    let Some((&flags, file)) = data.split_last() else { return };
    let mut cfg = TraceConfig::new("fuzz.pcap");
    let bit = |i: u8| flags >> i & 1 == 1;
    cfg.pad_runts = bit(0);
    cfg.rewrite_ip = bit(1);
    cfg.fix_checksums = bit(2);
    cfg.tag = bit(3);
    cfg.udp_port = bit(4).then_some(9);
    if bit(5) {
        cfg.on_oversize = crate::loadgen::config::OnOversize::Error;
    }
    if bit(6) {
        cfg.max_frame_bytes = 64;
    }
    let Ok(trace) = Trace::load_bytes(file, &cfg, &LoadgenConfig::default()) else { return };
    // Every frame written out as the generator sends it.
    let mut buf = Vec::new();
    for i in 0..trace.len() {
        let f = trace.frame(i);
        buf.resize(f.frame_bytes as usize - 4, 0);
        trace.write(f, &mut buf);
    }
}
