//! Entry points for fuzzing: each takes arbitrary bytes and must return
//! without panicking, hanging or allocating without bound. The cargo-fuzz
//! targets in `fuzz/` call them (nightly, libFuzzer), and so does the smoke
//! test `tests/fuzz_smoke.rs` (stable, bounded, in CI).

use std::path::Path;

use crate::config::SimConfig;
use crate::loadgen::config::{LoadgenConfig, TraceConfig};
use crate::loadgen::trace::Trace;
use crate::wire::{ethernet, ipv4, memcached, tag, tcp, udp};

/// The config contract: parse, validate, and build the system a valid config describes.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cfg) = SimConfig::from_json(text) else { return };
    if cfg.validate().is_ok() {
        let _ = crate::system::System::new(&cfg);
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

/// The pcap/pcapng reader, on `data` written to `scratch` (a file path).
pub fn pcap(data: &[u8], scratch: &Path) {
    if std::fs::write(scratch, data).is_err() {
        return;
    }
    let Some(path) = scratch.to_str() else { return };
    let mut cfg = TraceConfig::new(path);
    cfg.pad_runts = data.first().is_some_and(|b| b & 1 == 1);
    let _ = Trace::load(&cfg, &LoadgenConfig::default());
}
