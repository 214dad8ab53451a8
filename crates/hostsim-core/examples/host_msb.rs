//! Quick MSB probe of the host model from Rust (bisection on drop rate ≤ 1 %),
//! for exploring parameters: `cargo run --release --example host_msb -- APP SIZE [key=value ...]`
//! with keys preset, stack, proto, dport, freq_ghz, ooo, dca, channels, rxd, burst, proc_ns, mode, at_mpps,
//! cores, queues, ports, flows
//! (`at_mpps=X`: one trial at X Mpps, printing its drops and cycles per packet).
use hostsim_core::config::*;
use hostsim_core::host::HostConfig;
use serde_json::Value;

fn trial(base: &SimConfig, pps: f64) -> Value {
    let mut c = base.clone();
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: pps };
    hostsim_core::system::run(&c).expect("valid")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut c = SimConfig::default();
    c.app = args[0].clone();
    c.sim.duration_ps = SimConfig::default().sim.duration_ps;
    let size: u32 = args[1].parse().unwrap();
    let preset = args[2..].iter().find_map(|kv| kv.strip_prefix("preset=")).unwrap_or("altra");
    let mut h = HostConfig::preset(preset).unwrap();
    let mut at = None;
    for kv in &args[2..] {
        let (k, v) = kv.split_once('=').unwrap();
        match k {
            "preset" => {}
            "proto" => c.loadgen.protocol = serde_json::from_str(&format!("\"{v}\"")).unwrap(),
            "dport" => c.loadgen.dst_port = v.parse().unwrap(),
            "stack" => c.stack = serde_json::from_str(&format!("\"{v}\"")).unwrap(),
            "at_mpps" => at = Some(v.parse::<f64>().unwrap() * 1e6),
            "freq_ghz" => h.cpu.freq_hz = (v.parse::<f64>().unwrap() * 1e9) as u64,
            "ooo" => h.cpu.out_of_order = v == "1",
            "dca" => h.mem.llc.dca.enabled = v == "1",
            "channels" => h.mem.dram.channels = v.parse().unwrap(),
            "rxd" => h.pmd.rxd = v.parse().unwrap(),
            "burst" => h.pmd.burst = v.parse().unwrap(),
            "proc_ns" => h.app.proc_time_ps = v.parse::<u64>().unwrap() * 1000,
            "fifo_kib" => h.nic.rx_fifo_bytes = v.parse::<u64>().unwrap() * 1024,
            "dur_ms" => c.sim.duration_ps = v.parse::<u64>().unwrap() * 1_000_000_000,
            "mode" => h.app.forward_mode = serde_json::from_str(&format!("\"{v}\"")).unwrap(),
            "cores" => h.cores = v.parse().unwrap(),
            "queues" => h.queues = v.parse().unwrap(),
            "ports" => h.ports = v.parse().unwrap(),
            "flows" => c.loadgen.flows = v.parse().unwrap(),
            _ => panic!("unknown key {k}"),
        }
    }
    if h.pmd.rxd > 1024 {
        h.pmd.mempool.mbufs = 16384;
    }
    c.host = Some(h);
    c.loadgen.size = SizeDist::Fixed { bytes: size };
    if c.sim.duration_ps == SimConfig::default().sim.duration_ps {
        c.sim.duration_ps = 600_000_000;
    }
    c.sim.warmup_ps = c.sim.duration_ps / 5;
    if let Some(pps) = at {
        let r = trial(&c, pps);
        let lg = &r["loadgen"];
        println!("{} {} B at {:.3} Mpps: drop {:.4} achieved {:.3} Mpps p50 {} ns\ndrops {}\ncycles/pkt {}\nkernel {}",
            c.app, size, pps / 1e6, lg["drop_rate"], lg["achieved_pps"].as_f64().unwrap_or(0.0) / 1e6, lg["latency_ns"]["p50"], r["drops"], r["cpu"]["cycles_per_packet"], r["kernel"]);
        println!("wall {:.3} s, {:.0} pkts/s", r["sim"]["wall_s"], r["sim"]["packets_per_wall_s"]);
        if std::env::var("SHOW_LOADGEN").is_ok() { println!("{}\n{}\n{}", r["nic"], r["nics"][0]["pcie"], r["loadgen"]); }
        return;
    }
    let line = c.link.rate_bps as f64 / ((size as f64 + 20.0) * 8.0);
    let (mut lo, mut hi) = (0.0, line);
    let mut knee = Value::Null;
    let r = trial(&c, line);
    if r["loadgen"]["drop_rate"].as_f64().unwrap() <= 0.01 {
        lo = line;
    } else {
        knee = r["drops"].clone();
        while hi - lo > 0.01 * hi {
            let mid = (lo + hi) / 2.0;
            let r = trial(&c, mid);
            if r["loadgen"]["drop_rate"].as_f64().unwrap() <= 0.01 { lo = mid } else { hi = mid; knee = r["drops"].clone(); }
        }
    }
    let r = trial(&c, lo);
    println!("{} {} B: MSB {:.3} Mpps = {:.2} Gbps  knee drops {}  mem.dca_leaks {} dram_dev_wr {}", c.app, size, lo / 1e6, lo * size as f64 * 8.0 / 1e9, knee,
        r["mem"]["dca_leaks"], r["mem"]["dram"]["bytes_written_device"]);
}
