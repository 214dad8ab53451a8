//! Speed benchmark: simulated packets per wall-clock second for
//! load generator → link → reflector → link → load generator at 64 B, with the
//! reflector below saturation, and peak memory over one simulated second at
//! 100 GbE line rate (148.8 million frames).
//!
//! Run with `make bench` (or `cargo bench -p hostsim-core --bench speed`).
//! `HOSTSIM_BENCH_QUICK=1` shortens the long run to 0.1 s simulated. The last
//! rows run the full host model (NIC, PCIe, caches with DCA, DRAM, core, PMD).
//! `HOSTSIM_BENCH_ONLY=text` runs only the rows whose name contains `text`
//! (to profile one).

use std::time::Instant;

use hostsim_core::config::*;
use hostsim_core::system::System;

fn config(rate_pct: f64, service_ps: u64, duration_ps: u64) -> SimConfig {
    let mut c = SimConfig::default();
    c.sim.duration_ps = duration_ps;
    c.loadgen.rate = Rate { unit: RateUnit::Percent, value: rate_pct };
    c.reflector.service_time_ps = service_ps;
    c
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn bench(name: &str, cfg: &SimConfig) {
    if std::env::var("HOSTSIM_BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return;
    }
    let wall = Instant::now();
    let mut sys = System::new(cfg).expect("valid config");
    sys.run();
    let s = wall.elapsed().as_secs_f64();
    let tx = sys.total_tx();
    let rx = sys.total_rx();
    println!(
        "{name:<44} {tx:>11} frames sent {rx:>11} back  {s:>7.3} s wall  {:>6.2} M simulated packets/s  peak RSS {:.1} MiB",
        tx as f64 / s / 1e6,
        peak_rss_mib()
    );
}

fn host(app: &str, bytes: u32, mpps: f64, duration_ps: u64) -> SimConfig {
    let mut c = SimConfig::default();
    c.app = app.into();
    c.host = Some(hostsim_core::host::HostConfig::preset("altra").expect("preset"));
    c.sim.duration_ps = duration_ps;
    c.loadgen.size = SizeDist::Fixed { bytes };
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: mpps * 1e6 };
    c
}

fn main() {
    let quick = std::env::var("HOSTSIM_BENCH_QUICK").is_ok();
    let ms = 1_000_000_000u64;
    // 50 % of line rate (74.4 Mpps) into a 10 ns server (100 Mpps): utilisation 0.74.
    bench("64 B, 50% line rate, reflector 10 ns, 20 ms", &config(50.0, 10_000, 20 * ms));
    // 100 % of line rate into a 6 ns server (utilisation 0.89), one simulated second.
    let long = if quick { 100 * ms } else { 1000 * ms };
    bench(&format!("64 B, 100% line rate, reflector 6 ns, {} ms", long / ms), &config(100.0, 6_000, long));
    // The host, full model: testpmd macswap on altra at its 64 B MSB (28.9 Mpps with 20 ms trials,
    // `cargo run --release --example host_msb -- testpmd 64 dur_ms=20`), and touchfwd at 1518 B.
    bench("altra testpmd macswap 64 B, 29 Mpps (its MSB), 20 ms", &host("testpmd", 64, 29.0, 20 * ms));
    bench("altra touchfwd 1518 B, 4 Mpps, 20 ms", &host("touchfwd", 1518, 4.0, 20 * ms));
    // The kernel stack near its 64 B MSB (0.96 Mpps): interrupts, NAPI, skbs,
    // sockets, system calls, copies, qdisc; and the same at 1518 B. Long
    // enough (~half a million packets, as the testpmd row) that set-up does
    // not count.
    let mut k = host("udp-echo", 64, 0.9, 500 * ms);
    k.stack = Stack::Kernel;
    bench("altra kernel udp-echo 64 B, 0.9 Mpps, 500 ms", &k);
    let mut k = host("udp-echo", 1518, 0.8, 200 * ms);
    k.stack = Stack::Kernel;
    bench("altra kernel udp-echo 1518 B, 0.8 Mpps, 200 ms", &k);
    // Several cores: l2fwd at the same load per core on 1 core and on 4
    // cores with a queue each (64 flows spread by RSS), below their MSB.
    let mut one = host("l2fwd", 64, 10.0, 40 * ms);
    one.loadgen.flows = 64;
    bench("altra l2fwd 64 B, 1 core, 10 Mpps, 40 ms", &one);
    let mut four = host("l2fwd", 64, 40.0, 10 * ms);
    four.loadgen.flows = 64;
    let h = four.host.as_mut().expect("host");
    (h.cores, h.queues) = (4, 4);
    bench("altra l2fwd 64 B, 4 cores x 4 queues, 40 Mpps, 10 ms", &four);
    // The single-queue study's point (issue 12): one flow of 64 B at 100 GbE
    // line rate into testpmd macswap on i9-7940x-cx5, four cores sharing
    // one queue by each design. "Simulated packets" are the frames sent.
    use hostsim_core::host::config::{ForwardMode, RxSharing};
    for (design, name) in [(RxSharing::Arbitration, "arbitration"), (RxSharing::Range, "range"), (RxSharing::ParentWorker, "parent_worker")] {
        let mut c = host("testpmd", 64, 0.0, 5 * ms);
        c.loadgen.rate = Rate { unit: RateUnit::Percent, value: 100.0 };
        c.loadgen.flows = 1;
        let mut h = hostsim_core::host::HostConfig::preset("i9-7940x-cx5").expect("preset");
        (h.cores, h.rx_sharing, h.app.forward_mode) = (4, design, ForwardMode::Macswap);
        c.host = Some(h);
        bench(&format!("i9 rx_sharing {name}, 4 cores, 100 GbE 64 B, 5 ms"), &c);
    }
}
