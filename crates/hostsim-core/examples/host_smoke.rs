//! One run of the host model with its main counters printed, for exploring:
//! `cargo run --release --example host_smoke -- APP SIZE MPPS [MODE] [DURATION_MS]`
//! (altra preset, 1 µs link, 100 µs warm-up), e.g. `-- testpmd 64 27 macswap 20`.
use hostsim_core::config::*;
use hostsim_core::host::HostConfig;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let app = args.get(1).cloned().unwrap_or("testpmd".into());
    let size: u32 = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(64);
    let mpps: f64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(10.0);
    let mut c = SimConfig::default();
    c.app = app;
    c.host = Some(HostConfig::preset("altra").unwrap());
    if let Some(m) = args.get(4) { c.host.as_mut().unwrap().app.forward_mode = serde_json::from_str(&format!("\"{m}\"")).unwrap(); }
    c.loadgen.size = SizeDist::Fixed { bytes: size };
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: mpps * 1e6 };
    c.sim.warmup_ps = 100_000_000;
    if let Some(ms) = args.get(5) { c.sim.duration_ps = ms.parse::<u64>().unwrap() * 1_000_000_000; }
    let t = std::time::Instant::now();
    let r = hostsim_core::system::run(&c).unwrap();
    let mut lg = r["loadgen"].clone();
    lg.as_object_mut().unwrap().remove("latency_histogram");
    println!("loadgen {}", lg);
    println!("nic {}\ndrops {}\ncpu {}\npmd {}", r["nic"], r["drops"], r["cpu"]["cycles_per_packet"], r["pmd"]);
    println!("wall {:?} events {}", t.elapsed(), r["sim"]["events"]);
}
