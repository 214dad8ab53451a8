//! Public calibration checks (`hostsim validate`): the simulator against
//! published figures and closed forms, each with its reference, its
//! tolerance and its source. Every check runs the model itself — the
//! timed PCIe link, the load generator on a link, the Toeplitz hash of the
//! NIC, a DRAM channel, the whole system as a queue — not a copy of it.
//!
//! * PCIe: the closed form of pcie-bench's model (`pcie::effective_bandwidth`)
//!   against the model's own output in params.md §2c, and the timed link
//!   (`PcieLink`) streaming back-to-back DMA writes against the closed form.
//! * Line rates: the load generator at 100 % of 10/25/40/100 GbE, 64 and
//!   1518 B, against params.md §1.
//! * RSS: the Toeplitz hash of the Microsoft verification vectors (params.md §9).
//! * DRAM: a lone read costs the idle latency; a stream of reads over every
//!   channel moves channels × channel bandwidth.
//! * Queueing: the reflector with Poisson arrivals and a fixed service time
//!   is an M/D/1 queue; its mean wait against Pollaczek–Khinchine.
//!
//! Not yet here (issue 15): PCIe Gen2 x8 (params.md tabulates Gen3–5 only),
//! the forwarding study's per-packet cycle split, the kernel stack's costs.

use serde::Serialize;

use crate::config::{Rate, RateUnit, SimConfig, SizeDist};
use crate::dev::reflector::ServiceDist;
use crate::engine::time::Ps;
use crate::error::Result;
use crate::loadgen::config::Interarrival;
use crate::mem::config::{DramConfig, MemConfig};
use crate::mem::ddr::{AddressMap, DramModel};
use crate::mem::dram::{Agent, Dram};
use crate::nic::rss::{toeplitz, MICROSOFT_KEY, VERIFICATION_VECTORS};
use crate::pcie::nic_model;
use crate::pcie::{effective_bandwidth, DmaOp, Kind, PcieConfig, PcieLink};

/// One check: what was compared, the reference and the simulated value.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// `pcie`, `line_rate`, `rss`, `dram` or `queue`.
    pub area: &'static str,
    pub name: String,
    pub unit: &'static str,
    pub reference: f64,
    pub simulated: f64,
    /// Largest allowed |simulated − reference| / |reference| (0: exact).
    pub tolerance: f64,
    pub source: &'static str,
    pub pass: bool,
}

fn check(area: &'static str, name: String, unit: &'static str, reference: f64, simulated: f64, tolerance: f64, source: &'static str) -> Check {
    let err = if reference == 0.0 { simulated.abs() } else { ((simulated - reference) / reference).abs() };
    Check { area, name, unit, reference, simulated, tolerance, source, pass: err <= tolerance }
}

/// Runs every check.
pub fn run_checks() -> Result<Vec<Check>> {
    let mut out = pcie_checks()?;
    out.extend(line_rate_checks()?);
    out.extend(rss_checks());
    out.extend(dram_checks());
    out.extend(queue_checks()?);
    Ok(out)
}

/// params.md §2c: pcie-model `mem_bw.py` output (Gb/s), printed to 0.1.
const PCIE_2C: &[(&str, u32, DmaOp, u32, f64)] = &[
    ("gen3 x8", 256, DmaOp::Write, 64, 42.1),
    ("gen3 x8", 256, DmaOp::Write, 1500, 52.8),
    ("gen3 x8", 256, DmaOp::Read, 64, 44.1),
    ("gen3 x8", 256, DmaOp::Read, 1500, 53.6),
    ("gen3 x8", 256, DmaOp::ReadWrite, 64, 33.1),
    ("gen3 x8", 256, DmaOp::ReadWrite, 1500, 50.6),
    ("gen3 x16", 256, DmaOp::Write, 64, 82.7),
    ("gen3 x16", 256, DmaOp::Write, 1500, 103.7),
    ("gen3 x16", 256, DmaOp::ReadWrite, 256, 95.7),
];

fn pcie_of(link: &str, mps: u32) -> PcieConfig {
    let base = if link == "gen3 x16" { PcieConfig::gen3_x16() } else { PcieConfig::gen3_x8() };
    PcieConfig { mps_bytes: mps, ..base }
}

fn pcie_checks() -> Result<Vec<Check>> {
    let mut out = Vec::new();
    for &(link, mps, op, bytes, reference) in PCIE_2C {
        let got = effective_bandwidth(&pcie_of(link, mps), op, bytes);
        let name = format!("{link} MPS {mps} {op:?} {bytes} B (closed form)");
        // The table rounds to 0.1 Gb/s.
        out.push(check("pcie", name, "Gb/s", reference, got, 0.051 / reference, "params.md §2c (pcie-bench mem_bw.py)"));
    }
    // pcie-bench's 82599 + DPDK model, both directions (params.md §2d).
    for (frame, reference) in [(64u32, 20.65), (128, 30.91), (256, 40.50), (512, 45.93), (1024, 48.23), (1500, 48.86)] {
        let cfg = PcieConfig::gen3_x8();
        let data = frame - 4;
        let got = nic_model::pmd_bidir_pps(&cfg, data, nic_model::Niantic::AsPublished) * data as f64 * 8.0 / 1e9;
        let name = format!("gen3 x8 82599 + DPDK, RX and TX of {frame} B frames (closed form)");
        out.push(check("pcie", name, "Gb/s", reference, got, 0.001, "params.md §2d (pcie-bench niantic.py, DPDK-style bidir)"));
    }
    // The timed link, writes back to back: payload over time against the closed form.
    for (link, bytes) in [("gen3 x8", 64u32), ("gen3 x8", 1500), ("gen2 x8", 64), ("gen2 x8", 1500)] {
        let cfg = if link == "gen2 x8" { PcieConfig::gen2_x8() } else { pcie_of(link, 256) };
        let mut l = PcieLink::new(&cfg)?;
        let n = 10_000u64;
        let mut last = 0;
        for _ in 0..n {
            last = l.dma_write(0, bytes, Kind::Payload);
        }
        let busy_ps = last - cfg.latency_ps;
        let gbps = (n * bytes as u64 * 8) as f64 / busy_ps as f64 * 1e3;
        let name = format!("{link} MPS {} DMA writes of {bytes} B (timed link)", cfg.mps_bytes);
        out.push(check("pcie", name, "Gb/s", effective_bandwidth(&cfg, DmaOp::Write, bytes), gbps, 0.001, "the closed form above (pcie-bench's model)"));
    }
    Ok(out)
}

/// params.md §1: line rate (Mpps) with 20 B of preamble and gap per frame.
const LINE_RATES: &[(u64, u32, f64)] = &[
    (10, 64, 14.881),
    (25, 64, 37.202),
    (40, 64, 59.524),
    (100, 64, 148.810),
    (10, 1518, 0.813),
    (100, 1518, 8.127),
];

fn line_rate_checks() -> Result<Vec<Check>> {
    let mut out = Vec::new();
    for &(gbe, bytes, mpps) in LINE_RATES {
        let mut c = SimConfig::default();
        c.link.rate_bps = gbe * 1_000_000_000;
        c.loadgen.size = SizeDist::Fixed { bytes };
        c.loadgen.rate = Rate { unit: RateUnit::Percent, value: 100.0 };
        c.reflector.service_time_ps = 0;
        (c.sim.warmup_ps, c.sim.duration_ps) = (10_000_000, 10_010_000_000);
        let r = crate::system::checked_run(&c)?;
        let got = r["loadgen"]["offered_pps"].as_f64().unwrap_or(0.0) / 1e6;
        let name = format!("{gbe} GbE, {bytes} B frames at 100 %");
        // The table rounds to 1 kpps; the window may open up to one frame
        // time before its first frame starts (one frame over the window).
        let window_s = (c.sim.duration_ps - c.sim.warmup_ps) as f64 / 1e12;
        let tolerance = (0.0005 + 1e-6 / window_s) / mpps + 1e-9;
        out.push(check("line_rate", name, "Mpps", mpps, got, tolerance, "params.md §1 (line rate, Mpps)"));
    }
    Ok(out)
}

fn rss_checks() -> Vec<Check> {
    let mut out = Vec::new();
    for &(src, sport, dst, dport, ip_only, with_ports) in VERIFICATION_VECTORS {
        let mut t = [0u8; 12];
        t[..4].copy_from_slice(&src);
        t[4..8].copy_from_slice(&dst);
        t[8..10].copy_from_slice(&sport.to_be_bytes());
        t[10..12].copy_from_slice(&dport.to_be_bytes());
        let who = format!("{}.{}.{}.{}:{sport}", src[0], src[1], src[2], src[3]);
        let source = "params.md §9 (Microsoft RSS verification vectors)";
        out.push(check("rss", format!("Toeplitz, addresses of {who}"), "hash", ip_only as f64, toeplitz(&MICROSOFT_KEY, &t[..8]) as f64, 0.0, source));
        out.push(check("rss", format!("Toeplitz, addresses and ports of {who}"), "hash", with_ports as f64, toeplitz(&MICROSOFT_KEY, &t) as f64, 0.0, source));
    }
    out
}

fn dram_checks() -> Vec<Check> {
    // altra's DRAM (params.md §4: DDR4-2400 channels, 81 ns idle), first as
    // plain channels, then with its banks and DDR4-2400 timing.
    let banked = MemConfig::altra().dram;
    let flat = DramConfig { model: DramModel::Channel, ..banked.clone() };
    let stream = |cfg: &DramConfig| {
        let mut d = Dram::new(cfg);
        let lines = 100_000u64;
        for i in 0..lines {
            d.read(i * 64, 0, Agent::Core);
        }
        ((lines * 64) as f64 / d.drained_at() as f64 * 1e3, d.bank_counters())
    };
    let mut d = Dram::new(&flat);
    let idle = d.read(0, 1_000_000, Agent::Core) as f64 / 1e3;
    let (gbs, _) = stream(&flat);
    let t = &banked.timing;
    let ns = |ps: u64| ps as f64 / 1e3;
    // One bank, idle between requests: a precharged bank (miss), the open
    // row (hit), another row (conflict). Rows are 8 KiB × 16 banks × 2 ranks
    // × 4 channels apart under RoRaBaCoCh.
    let mut d = Dram::new(&banked);
    let row = 8192 * 16 * 2 * 4;
    let miss = ns(d.read(0, 1_000_000, Agent::Core));
    let hit = ns(d.read(4 * 64, 2_000_000, Agent::Core));
    let conflict = ns(d.read(row, 3_000_000, Agent::Core));
    let refresh_share = t.t_rfc_ps as f64 / t.t_refi_ps as f64;
    // One rank, so that nothing hides its refreshes.
    let one_rank = DramConfig { ranks: 1, ..banked.clone() };
    let (bus_gbs, bus_rows) = stream(&DramConfig { address_map: AddressMap::RoCoRaBaCh, ..one_rank.clone() });
    let (ccd_gbs, _) = stream(&one_rank);
    let burst_ns = ns(banked.burst_ps());
    let idle_ns = ns(banked.idle_latency_ps);
    vec![
        check("dram", "idle read latency, 4 channels (model = channel)".into(), "ns", idle_ns, idle, 0.0, "the config (params.md §4)"),
        check("dram", "streaming reads, 4 × 19.2 GB/s (model = channel)".into(), "GB/s", 4.0 * 19.2, gbs, 0.001, "channels × channel bandwidth"),
        check("dram", "row conflict, idle (DDR4-2400 17-17-17)".into(), "ns", idle_ns, conflict, 0.001, "the config: idle latency = a row conflict"),
        check("dram", "row miss, idle".into(), "ns", idle_ns - ns(t.t_rp_ps), miss, 0.001, "idle latency − tRP"),
        check("dram", "row hit, idle".into(), "ns", idle_ns - ns(t.t_rp_ps + t.t_rcd_ps), hit, 0.001, "idle latency − tRP − tRCD"),
        check(
            "dram",
            "streaming reads, 1 rank, RoCoRaBaCh (bus-bound)".into(),
            "GB/s",
            4.0 * 64.0 / burst_ns * (1.0 - refresh_share),
            bus_gbs,
            0.02,
            "channels × 64 B / tBURST × (1 − tRFC / tREFI); the banks reopened after each refresh cost the rest",
        ),
        check(
            "dram",
            "streaming reads, 1 rank, RoCoRaBaCh: row hits".into(),
            "share",
            1.0 - 64.0 / banked.row_bytes as f64,
            bus_rows.row_hits as f64 / (bus_rows.row_hits + bus_rows.row_misses + bus_rows.row_conflicts) as f64,
            0.02,
            "a stream opens each 8 KiB row once (1 − 64 B / row) and each bank again after a refresh",
        ),
        check(
            "dram",
            "streaming reads, 1 rank, RoRaBaCoCh (tCCD_L-bound)".into(),
            "GB/s",
            4.0 * 64.0 / ns(t.t_ccd_l_ps) * (1.0 - refresh_share),
            ccd_gbs,
            0.01,
            "channels × 64 B / tCCD_L × (1 − tRFC / tREFI): one bank group per channel",
        ),
    ]
}

/// The reflector as an M/D/1 queue: Poisson arrivals at `rho` of a fixed
/// 100 ns service; mean time in queue against ρ / (2 μ (1 − ρ)).
fn queue_checks() -> Result<Vec<Check>> {
    let service_ps: Ps = 100_000;
    let mut base = SimConfig::default();
    base.reflector.service = ServiceDist::Fixed;
    base.reflector.service_time_ps = service_ps;
    base.reflector.queue_frames = 1 << 20;
    base.loadgen.size = SizeDist::Fixed { bytes: 64 };
    // The latency of a frame that never waits: one at a time.
    let mut lone = base.clone();
    lone.loadgen.rate = Rate { unit: RateUnit::Pps, value: 1e5 };
    (lone.sim.warmup_ps, lone.sim.duration_ps) = (0, 100_000_000);
    let r = crate::system::checked_run(&lone)?;
    let no_wait_ns = r["loadgen"]["latency_ns"]["min"].as_f64().unwrap_or(0.0);
    let mut out = Vec::new();
    for rho in [0.5, 0.8] {
        let mut c = base.clone();
        c.loadgen.interarrival = Interarrival::Poisson;
        c.loadgen.rate = Rate { unit: RateUnit::Pps, value: rho * 1e12 / service_ps as f64 };
        (c.sim.warmup_ps, c.sim.duration_ps) = (1_000_000_000, 201_000_000_000);
        let r = crate::system::checked_run(&c)?;
        let mean_ns = r["loadgen"]["latency_ns"]["mean"].as_f64().unwrap_or(0.0);
        let theory_ns = rho / (2.0 * (1.0 - rho)) * service_ps as f64 / 1e3;
        let name = format!("M/D/1 mean wait at ρ = {rho} (100 ns service)");
        out.push(check("queue", name, "ns", theory_ns, mean_ns - no_wait_ns, 0.03, "Pollaczek–Khinchine, M/D/1"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_check_passes() {
        let checks = super::run_checks().unwrap();
        let failed: Vec<_> = checks.iter().filter(|c| !c.pass).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        assert!(checks.len() >= 30, "{}", checks.len());
    }
}
