//! pcie-bench's closed-form model of an Intel 82599 ("Niantic") NIC driven
//! by a DPDK poll-mode driver (pcie-model `model/niantic.py`, `h_opt =
//! "PMD"`; params.md §2d): the PCIe bytes each direction carries per packet
//! when the NIC receives one packet and transmits one, and the packet rate
//! the link then allows. A yardstick for the timed NIC and link, which
//! implement the same steps with their own batching.
//!
//! Per packet, seen from the device (up = device → host):
//! * TX: the host writes the tail pointer every 32 packets (4 B MWr); the
//!   device reads 40 descriptors of 16 B at a time, reads the packet, and
//!   writes back 8 descriptors at a time;
//! * RX: the host writes the tail pointer every 32 packets; the device
//!   reads one 16 B descriptor per packet, writes the packet and writes
//!   back its descriptor.
//!
//! No interrupts and no head-pointer reads (the PMD polls descriptor done
//! bits). The published model overwrites the RX descriptor read requests
//! with the packet write (an assignment where the other lines add), so the
//! numbers it prints (params.md §2d's table) leave those 24 B per packet
//! out; [`Niantic::AsPublished`] does the same, [`Niantic::AsDescribed`]
//! counts them.

use super::config::PcieConfig;
use super::tlp::{read_bytes, request_overhead_bytes, tlp_rate_bps, write_bytes, CPL_OVERHEAD_BYTES};

/// Which reading of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Niantic {
    /// As pcie-model's code computes it (reproduces its tables).
    AsPublished,
    /// As its text describes: the RX descriptor read requests counted too.
    AsDescribed,
}

const DESC: f64 = 16.0;
const PTR: f64 = 4.0;
const TX_FETCH: f64 = 40.0;
const TX_WB: f64 = 8.0;
const HOST_BATCH: f64 = 32.0;

/// Link bytes (up, down) per packet received and packet transmitted, each of
/// `data` bytes (the frame without its FCS).
pub fn pmd_bytes(cfg: &PcieConfig, data: u32, how: Niantic) -> (f64, f64) {
    let hdr = request_overhead_bytes(cfg.addr64) as f64;
    let cpl = CPL_OVERHEAD_BYTES as f64;
    let reads = |bytes: u32| {
        let l = read_bytes(cfg, bytes);
        (l.up as f64, l.down as f64)
    };
    let write = |bytes: u32| write_bytes(cfg, bytes).up as f64;
    let (mut up, mut down) = (0.0, 0.0);
    // TX.
    down += (PTR + hdr) / HOST_BATCH;
    let (req, cpls) = reads((DESC * TX_FETCH) as u32);
    (up, down) = (up + req / TX_FETCH, down + cpls / TX_FETCH);
    let (req, cpls) = reads(data);
    (up, down) = (up + req, down + cpls);
    up += write((DESC * TX_WB) as u32) / TX_WB;
    // RX.
    down += (PTR + hdr) / HOST_BATCH;
    if how == Niantic::AsDescribed {
        up += hdr;
    }
    down += DESC + cpl;
    up += write(data);
    up += DESC + hdr;
    (up, down)
}

/// Packets per second each way the link carries when every packet is
/// received and transmitted (`data` bytes each, no FCS).
pub fn pmd_bidir_pps(cfg: &PcieConfig, data: u32, how: Niantic) -> f64 {
    let (up, down) = pmd_bytes(cfg, data, how);
    tlp_rate_bps(cfg) / 8.0 / up.max(down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_the_published_dpdk_bidirectional_column() {
        // params.md §2d, Gen3 x8, MPS 256, MRRS 512, "DPDK-style bidir" (Gb/s of packet data).
        let cfg = PcieConfig::gen3_x8();
        for (frame, want) in [(64u32, 20.65), (128, 30.91), (256, 40.50), (512, 45.93), (1024, 48.23), (1500, 48.86)] {
            let data = frame - 4;
            let gbps = pmd_bidir_pps(&cfg, data, Niantic::AsPublished) * data as f64 * 8.0 / 1e9;
            assert!((gbps - want).abs() < 0.001 * want, "{frame} B: {gbps} vs {want}");
        }
        // Counting the RX descriptor requests too costs 64 B frames about 10 %.
        let (a, b) = (pmd_bidir_pps(&cfg, 60, Niantic::AsPublished), pmd_bidir_pps(&cfg, 60, Niantic::AsDescribed));
        assert!(b < a && b > 0.85 * a, "{a} {b}");
    }
}
