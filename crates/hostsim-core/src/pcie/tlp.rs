//! Link rates and TLP accounting: how many bytes a DMA transfer puts on each
//! direction of a PCIe link, and the payload bandwidth that leaves.
//!
//! Rates (params.md §2a): GT/s per lane × encoding efficiency (8b/10b for
//! Gen1–2, 128b/130b for Gen3–5, the pcie-bench model's 242/256 FLIT guess
//! for Gen6) × lanes. DLLPs (ACK and flow-control updates) and SKIP ordered
//! sets take a further share; we do not model them packet by packet but fold
//! them into one factor per (generation, width, MPS), calibrated from the
//! TLP-layer bandwidths §2a lists (pcie-bench `TLP_bw`, which evaluates the
//! PCIe Base Spec ACK/FC tables). Cells §2a does not list are estimates
//! (see [`dllp_efficiency`]).
//!
//! Per TLP (params.md §2b): 8 B of framing + sequence number + LCRC, a 4 B
//! header DW0, and 8 B (32-bit address) or 12 B (64-bit) more for memory
//! requests → 20 / 24 B per MWr or MRd; a CplD has 20 B. No ECRC. A write of
//! N bytes is ceil(N/MPS) MWr TLPs; a read is ceil(N/MRRS) MRd TLPs upstream
//! and completions split at MPS (or at the RCB) downstream.
//!
//! Read first: Neugebauer et al., "Understanding PCIe performance for end
//! host networking", SIGCOMM 2018, §3 (the model this reproduces).

use super::config::PcieConfig;

/// Framing + data-link bytes per TLP: start/end symbols, sequence number, LCRC.
pub const FRAMING_BYTES: u32 = 8;
/// Link bytes per completion-with-data TLP beyond its data (3DW header + framing).
pub const CPL_OVERHEAD_BYTES: u32 = 20;
/// Payload of an MSI/MSI-X message (a 4 B memory write).
pub const MSI_BYTES: u32 = 4;

/// Link bytes per memory write or read request TLP beyond its data: 24 B with
/// 64-bit addresses (4DW header), 20 B with 32-bit (3DW).
pub fn request_overhead_bytes(addr64: bool) -> u32 {
    FRAMING_BYTES + if addr64 { 16 } else { 12 }
}

/// Number of pieces of at most `max` bytes that `bytes` splits into.
#[inline]
pub fn tlp_count(bytes: u32, max: u32) -> u32 {
    bytes.div_ceil(max)
}

/// Lane rate after line encoding (bits per second).
pub fn lane_rate_bps(gen: u32) -> f64 {
    match gen {
        1 => 2.5e9 * 8.0 / 10.0,
        2 => 5.0e9 * 8.0 / 10.0,
        3 => 8.0e9 * 128.0 / 130.0,
        4 => 16.0e9 * 128.0 / 130.0,
        5 => 32.0e9 * 128.0 / 130.0,
        // Gen6: 64 GT/s PAM4 FLIT mode; 242/256 is the pcie-bench model's guess (params.md §2a).
        _ => 64.0e9 * 242.0 / 256.0,
    }
}

/// Raw link rate per direction after encoding (bits per second).
pub fn raw_rate_bps(gen: u32, lanes: u32) -> f64 {
    lane_rate_bps(gen) * lanes as f64
}

/// Share of the encoded link rate left for TLPs after ACK and FC-update DLLPs
/// and SKIP ordered sets. Each value is a TLP-layer bandwidth from params.md
/// divided by the raw rate:
/// * Gen3 x8, MPS 128/256/512: §2a `TLP_bw` 56.67 / 57.88 / 57.31 over 63.015 Gb/s.
/// * Gen3–6 x16, MPS 256: §2a 454.80 / 504.12 (Gen5; Gen3 113.70/126.03 and Gen4
///   227.40/252.06 give the same ratio).
/// * Gen3–6 x16, MPS 128 and 512: §2a does not list them; recovered from the
///   large-transfer write plateau of §2c (Gen5: 376.3 × 152/128 and 438.0 ×
///   536/512 over 504.12; Gen3 and Gen4 agree to 0.1 %).
/// * Gen1 / Gen2 x4, x8 and x16, MPS 128/256/512: `Cfg.TLP_bw` of pcie-model's
///   `model/pcie.py` (pcie-bench/pcie-model 40703cf), executed unchanged, the
///   way §2a's cells were obtained; its x16 MPS 256 cells are §2a's 24.81 and
///   55.51.
///
/// Estimates: widths below x8 (x4 for Gen1–2) use the x8 (x4) values, and
/// MPS ≥ 1024 uses the MPS 512 value.
pub fn dllp_efficiency(gen: u32, lanes: u32, mps_bytes: u32) -> f64 {
    const GEN3_X8_RAW: f64 = 63.015_384_615;
    // pcie.py TLP_bw (Gb/s) by width (x4, x8, x16) and MPS (128, 256, 512).
    const GEN1: [[f64; 3]; 3] = [[6.226, 6.894, 7.148], [12.137, 13.566, 12.982], [21.250, 24.806, 25.963]];
    const GEN2: [[f64; 3]; 3] = [[13.894, 14.444, 14.710], [27.578, 28.676, 28.180], [53.490, 55.508, 56.359]];
    let by_mps = match mps_bytes {
        0..=128 => 0,
        129..=256 => 1,
        _ => 2,
    };
    let by_width = match lanes {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    };
    let old = |table: &[[f64; 3]; 3], gbps_per_lane: f64| {
        let width = [4.0, 8.0, 16.0][by_width];
        table[by_width][by_mps] / (gbps_per_lane * width)
    };
    match gen {
        1 => old(&GEN1, 2.0),
        2 => old(&GEN2, 4.0),
        _ => {
            let (x8, x16) = match mps_bytes {
                128 => (56.67 / GEN3_X8_RAW, 376.3 * 152.0 / 128.0 / 504.123),
                256 => (57.88 / GEN3_X8_RAW, 454.80 / 504.123),
                _ => (57.31 / GEN3_X8_RAW, 438.0 * 536.0 / 512.0 / 504.123),
            };
            if lanes >= 16 {
                x16
            } else {
                x8
            }
        }
    }
}

/// Bandwidth per direction left for TLPs (bits per second): raw × DLLP efficiency.
pub fn tlp_rate_bps(cfg: &PcieConfig) -> f64 {
    raw_rate_bps(cfg.gen, cfg.lanes) * dllp_efficiency(cfg.gen, cfg.lanes, cfg.mps_bytes)
}

/// Size of the data in each read completion (the completer splits at MPS, or at RCB).
pub fn completion_split_bytes(cfg: &PcieConfig) -> u32 {
    if cfg.cpl_split_at_rcb {
        cfg.rcb_bytes
    } else {
        cfg.mps_bytes
    }
}

/// Link bytes of one transfer, per direction (seen from the device: up = device → host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkBytes {
    pub up: u64,
    pub down: u64,
}

/// A DMA memory write of `bytes` by the device: MWr TLPs upstream.
pub fn write_bytes(cfg: &PcieConfig, bytes: u32) -> LinkBytes {
    let n = tlp_count(bytes, cfg.mps_bytes) as u64;
    LinkBytes { up: bytes as u64 + n * request_overhead_bytes(cfg.addr64) as u64, down: 0 }
}

/// A DMA read of `bytes` by the device: MRd TLPs upstream, CplD TLPs downstream.
pub fn read_bytes(cfg: &PcieConfig, bytes: u32) -> LinkBytes {
    let requests = tlp_count(bytes, cfg.mrrs_bytes) as u64;
    // Completions are split per request (a completion never spans two requests).
    let full = (bytes / cfg.mrrs_bytes) as u64 * tlp_count(cfg.mrrs_bytes, completion_split_bytes(cfg)) as u64;
    let tail = tlp_count(bytes % cfg.mrrs_bytes, completion_split_bytes(cfg)) as u64;
    LinkBytes {
        up: requests * request_overhead_bytes(cfg.addr64) as u64,
        down: bytes as u64 + (full + tail) * CPL_OVERHEAD_BYTES as u64,
    }
}

/// A back-to-back DMA pattern for [`effective_bandwidth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaOp {
    /// Device writes to host memory.
    Write,
    /// Device reads host memory.
    Read,
    /// Equal reads and writes at once; the result is the rate of each.
    ReadWrite,
}

/// Payload bandwidth (Gb/s) of back-to-back DMA transfers of `transfer_bytes`,
/// limited by whichever direction saturates first — pcie-bench's `mem_bw`
/// model (params.md §2b–2c). Latency and read tags play no part here.
pub fn effective_bandwidth(cfg: &PcieConfig, op: DmaOp, transfer_bytes: u32) -> f64 {
    if transfer_bytes == 0 {
        return 0.0;
    }
    let (w, r) = (write_bytes(cfg, transfer_bytes), read_bytes(cfg, transfer_bytes));
    let worst = match op {
        DmaOp::Write => w.up.max(w.down),
        DmaOp::Read => r.up.max(r.down),
        // Writes and read requests share the upstream; completions come down.
        DmaOp::ReadWrite => (w.up + r.up).max(w.down + r.down),
    };
    tlp_rate_bps(cfg) / 1e9 * transfer_bytes as f64 / worst as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(gen: u32, lanes: u32, mps: u32) -> PcieConfig {
        PcieConfig { gen, lanes, mps_bytes: mps, mrrs_bytes: 512, rcb_bytes: 64, ..PcieConfig::gen3_x16() }
    }

    #[test]
    fn raw_link_rates_match_params_2a() {
        let gbps = |g, l| raw_rate_bps(g, l) / 1e9;
        assert!((gbps(3, 8) - 63.02).abs() < 0.005);
        assert!((gbps(3, 16) - 126.03).abs() < 0.005);
        assert!((gbps(4, 16) - 252.06).abs() < 0.005);
        assert!((gbps(5, 16) - 504.12).abs() < 0.005);
        assert!((gbps(2, 8) - 32.0).abs() < 1e-9);
        assert!((gbps(1, 16) - 32.0).abs() < 1e-9);
        assert!((gbps(6, 16) - 968.0).abs() < 1e-9);
        assert!((lane_rate_bps(3) / 1e9 - 7.877).abs() < 0.0005);
    }

    #[test]
    fn tlp_layer_rates_match_params_2a() {
        let gbps = |g, l, m| tlp_rate_bps(&cfg(g, l, m)) / 1e9;
        for (g, l, m, want) in [
            (3, 8, 128, 56.67),
            (3, 8, 256, 57.88),
            (3, 8, 512, 57.31),
            (3, 16, 256, 113.70),
            (4, 16, 256, 227.40),
            (5, 16, 256, 454.80),
            (6, 16, 256, 873.29),
            (1, 16, 256, 24.81),
            (2, 16, 256, 55.51),
        ] {
            assert!((gbps(g, l, m) - want).abs() / want < 1e-3, "gen{g} x{l} mps {m}: {} vs {want}", gbps(g, l, m));
        }
    }

    #[test]
    fn tlp_accounting_of_params_2b() {
        let c = cfg(3, 8, 256);
        assert_eq!(request_overhead_bytes(true), 24);
        assert_eq!(request_overhead_bytes(false), 20);
        // 1500 B write at MPS 256: 6 TLPs × 24 B.
        assert_eq!(write_bytes(&c, 1500), LinkBytes { up: 1500 + 6 * 24, down: 0 });
        assert_eq!(write_bytes(&PcieConfig { addr64: false, ..c.clone() }, 64).up, 84);
        // 1500 B read, MRRS 512: 3 requests up; completions 256+256 | 256+256 | 256+220 → 6.
        assert_eq!(read_bytes(&c, 1500), LinkBytes { up: 3 * 24, down: 1500 + 6 * 20 });
        // Split at RCB 64: 24 completions.
        let rcb = PcieConfig { cpl_split_at_rcb: true, ..c.clone() };
        assert_eq!(read_bytes(&rcb, 1500).down, 1500 + 24 * 20);
        // Completions never span requests: MPS 512, MRRS 128, 300 B → 128|128|44.
        let small = PcieConfig { mps_bytes: 512, mrrs_bytes: 128, ..c };
        assert_eq!(read_bytes(&small, 300), LinkBytes { up: 3 * 24, down: 300 + 3 * 20 });
    }

    /// params.md §2c (pcie-model mem_bw.py output), Gen3 x8 and x16, MPS
    /// 128/256/512, MRRS 512: (lanes, mps, op, [64 B, 256 B, 1024 B, 1500 B]).
    const TABLE_2C: &[(u32, u32, DmaOp, [f64; 4])] = &[
        (8, 128, DmaOp::Write, [41.2, 47.7, 47.7, 47.5]),
        (8, 128, DmaOp::Read, [43.2, 49.0, 49.0, 48.8]),
        (8, 128, DmaOp::ReadWrite, [32.4, 44.2, 45.9, 45.7]),
        (8, 256, DmaOp::Write, [42.1, 52.9, 52.9, 52.8]),
        (8, 256, DmaOp::Read, [44.1, 53.7, 53.7, 53.6]),
        (8, 256, DmaOp::ReadWrite, [33.1, 48.7, 50.7, 50.6]),
        (8, 512, DmaOp::Write, [41.7, 52.4, 54.7, 54.7]),
        (8, 512, DmaOp::Read, [43.7, 53.2, 55.2, 55.1]),
        (8, 512, DmaOp::ReadWrite, [32.7, 48.3, 52.4, 52.3]),
        (16, 128, DmaOp::Write, [81.2, 94.1, 94.1, 93.7]),
        (16, 128, DmaOp::Read, [85.1, 96.6, 96.6, 96.3]),
        (16, 128, DmaOp::ReadWrite, [63.8, 87.2, 90.5, 90.1]),
        (16, 256, DmaOp::Write, [82.7, 104.0, 104.0, 103.7]),
        (16, 256, DmaOp::Read, [86.6, 105.5, 105.5, 105.3]),
        (16, 256, DmaOp::ReadWrite, [65.0, 95.7, 99.7, 99.4]),
        (16, 512, DmaOp::Write, [83.4, 104.8, 109.5, 109.4]),
        (16, 512, DmaOp::Read, [87.3, 106.3, 110.3, 110.2]),
        (16, 512, DmaOp::ReadWrite, [65.5, 96.5, 104.8, 104.6]),
    ];

    #[test]
    fn effective_bandwidth_reproduces_params_2c() {
        let mut worst: f64 = 0.0;
        for &(lanes, mps, op, want) in TABLE_2C {
            for (size, w) in [64, 256, 1024, 1500].into_iter().zip(want) {
                let got = effective_bandwidth(&cfg(3, lanes, mps), op, size);
                let err = (got - w).abs() / w;
                worst = worst.max(err);
                // The table is printed to 0.1 Gb/s; 0.3 % covers that rounding.
                assert!(err < 0.003, "gen3 x{lanes} mps {mps} {op:?} {size} B: {got:.2} vs {w}");
            }
        }
        assert!(worst > 0.0);
    }

    #[test]
    fn effective_bandwidth_other_generations_and_sizes() {
        // Spot checks of §2c rows not used for calibration.
        let c = |g, m| cfg(g, 16, m);
        assert!((effective_bandwidth(&c(4, 256), DmaOp::Read, 64) - 173.3).abs() < 0.3);
        assert!((effective_bandwidth(&c(5, 512), DmaOp::ReadWrite, 128) - 333.4).abs() < 0.5);
        assert!((effective_bandwidth(&c(3, 256), DmaOp::Write, 4096) - 104.0).abs() < 0.2);
        assert_eq!(effective_bandwidth(&c(3, 256), DmaOp::Write, 0), 0.0);
        // Without the DLLP factor the 1024 B write row would be ~10 % high.
        let raw = raw_rate_bps(3, 16) / 1e9 * 1024.0 / (1024.0 + 4.0 * 24.0);
        assert!(raw > 104.0 * 1.09);
    }
}
