//! DRAM organisation and DDR timing: what [`banks`](super::banks) needs to
//! serve a line as the parts do: ranks, bank groups, banks, rows, the
//! address map, and the JEDEC timing of a speed grade.
//!
//! Speed grades are written in clocks, as the standards give them, and
//! converted with the grade's clock (tCK = 2 / data rate). The clock counts
//! are Ramulator 2's JEDEC presets (`python/ramulator/dram/ddr4.py` and
//! `ddr3.py`, CMU-SAFARI/ramulator2 c5b1c3a), tWTR_S/tWTR_L included, and
//! the read-to-write turnaround is the `+ 2` clocks of its RD-to-WR
//! constraint `nCL + nBL + 2 - nCWL`; the refresh times and the
//! organisation are gem5's `DDR4_2400_8x8` and `DDR3_1600_8x8`
//! (`src/mem/DRAMInterface.py`, gem5 b1a44b8), whose comments cite Micron's
//! MT40A1G8 (8 Gb DDR4 x8) and DDR3 datasheets.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::Result;

use super::cache::LINE_BYTES;
use super::config::{check, DramConfig};

/// Which DRAM model serves the lines.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DramModel {
    /// Ranks, bank groups and banks with open rows, DDR timing and refresh.
    Banks,
    /// Each channel one server of 64 B transfers: no banks, rows or refresh.
    Channel,
}

/// How a line address is split, most significant field first (gem5's
/// `AddrMap` names): Ro(w), Ra(nk), Ba(nk), Co(lumn), Ch(annel). The
/// channel is always the lowest field, so consecutive lines go to
/// consecutive channels.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
pub enum AddressMap {
    /// Consecutive lines of one channel stay in one row of one bank
    /// (gem5's default, meant for an open-page policy).
    RoRaBaCoCh,
    /// Consecutive lines of one channel go to consecutive banks, then ranks,
    /// then columns (gem5's choice for a closed-page policy).
    RoCoRaBaCh,
}

/// JEDEC timing of one speed grade (ps). The data burst of a line (tBURST,
/// tCCD_S) is not here: it is 64 B / the channel's bandwidth.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DdrTiming {
    /// ACTIVATE to READ/WRITE (tRCD).
    pub t_rcd_ps: Ps,
    /// PRECHARGE to ACTIVATE (tRP).
    pub t_rp_ps: Ps,
    /// READ to its first data (CAS latency, CL).
    pub t_cl_ps: Ps,
    /// WRITE to its first data (CWL).
    pub t_cwl_ps: Ps,
    /// ACTIVATE to PRECHARGE of one bank (tRAS).
    pub t_ras_ps: Ps,
    /// READ to PRECHARGE (tRTP).
    pub t_rtp_ps: Ps,
    /// End of write data to PRECHARGE (write recovery, tWR).
    pub t_wr_ps: Ps,
    /// Column command to column command in the same bank group (tCCD_L).
    pub t_ccd_l_ps: Ps,
    /// End of a rank's write data to its next READ in another bank group
    /// (write-to-read turnaround, tWTR_S).
    pub t_wtr_s_ps: Ps,
    /// End of a rank's write data to its next READ in the same bank group
    /// (tWTR_L; DDR3's single tWTR).
    pub t_wtr_l_ps: Ps,
    /// Read-to-write bus turnaround: the idle time between the end of a
    /// rank's read data and the start of its next write data (2 tCK, the
    /// `+ 2` of the READ-to-WRITE spacing CL + tBURST + 2 tCK - CWL).
    pub t_rtw_ps: Ps,
    /// ACTIVATE to ACTIVATE in one rank (tRRD_S).
    pub t_rrd_ps: Ps,
    /// Window in which a rank takes at most four ACTIVATEs (tFAW).
    pub t_faw_ps: Ps,
    /// Duration of an all-bank refresh (tRFC); 0 turns refresh off.
    pub t_rfc_ps: Ps,
    /// Interval between refreshes of one rank (tREFI).
    pub t_refi_ps: Ps,
}

/// `n` clocks of a part running at `rate` MT/s, in ps (rounded to nearest).
const fn ck(n: u64, rate: u64) -> Ps {
    (n * 2_000_000 + rate / 2) / rate
}

/// gem5 `DDR4_2400_8x8` (Micron MT40A1G8, 8 Gb): tRFC 350 ns; tREFI 7.8 µs at ≤ 85 °C.
const DDR4_8GB_RFC_PS: Ps = 350_000;
const REFI_PS: Ps = 7_800_000;
/// Read-to-write bus turnaround, clocks: the `+ 2` of Ramulator 2's
/// RD-to-WR constraint `nCL + nBL + 2 - nCWL` (DDR3 and DDR4); gem5's
/// `tRTW` ("Default same rank rd-to-wr bus turnaround to 2 CK").
const RTW_CK: u64 = 2;

impl DdrTiming {
    /// A DDR4 x8 grade from its clock counts (Ramulator 2 `DDR4.timing_presets`
    /// and its x8 tRRD_S / tFAW tables); 8 Gb devices. `wtr` is (nWTRS, nWTRL).
    #[allow(clippy::too_many_arguments)]
    const fn ddr4_x8(rate: u64, cl: u64, cwl: u64, ras: u64, rtp: u64, wr: u64, ccd_l: u64, faw: u64, wtr: (u64, u64)) -> DdrTiming {
        DdrTiming {
            t_rcd_ps: ck(cl, rate), // every grade used here is CL-tRCD-tRP with all three equal
            t_rp_ps: ck(cl, rate),
            t_cl_ps: ck(cl, rate),
            t_cwl_ps: ck(cwl, rate),
            t_ras_ps: ck(ras, rate),
            t_rtp_ps: ck(rtp, rate),
            t_wr_ps: ck(wr, rate),
            t_ccd_l_ps: ck(ccd_l, rate),
            t_wtr_s_ps: ck(wtr.0, rate),
            t_wtr_l_ps: ck(wtr.1, rate),
            t_rtw_ps: ck(RTW_CK, rate),
            t_rrd_ps: ck(4, rate), // x8: nRRDS 4 at every rate
            t_faw_ps: ck(faw, rate),
            t_rfc_ps: DDR4_8GB_RFC_PS,
            t_refi_ps: REFI_PS,
        }
    }

    /// DDR4-2400U, 17-17-17 (Ramulator 2 `DDR4_2400U`; gem5 `DDR4_2400_8x8`
    /// says "DDR4-2400 17-17-17", 14.16 ns).
    pub const fn ddr4_2400() -> DdrTiming {
        DdrTiming::ddr4_x8(2400, 17, 12, 39, 9, 18, 6, 26, (3, 9))
    }

    /// DDR4-2666V, 19-19-19 (Ramulator 2 `DDR4_2666V`).
    pub const fn ddr4_2666() -> DdrTiming {
        DdrTiming::ddr4_x8(2666, 19, 14, 43, 10, 20, 7, 28, (4, 10))
    }

    /// DDR4-2933Y, 21-21-21 (Ramulator 2 `DDR4_2933Y`).
    pub const fn ddr4_2933() -> DdrTiming {
        DdrTiming::ddr4_x8(2933, 21, 16, 47, 11, 22, 8, 31, (4, 11))
    }

    /// DDR4-3200AA, 22-22-22 (Ramulator 2 `DDR4_3200AA`).
    pub const fn ddr4_3200() -> DdrTiming {
        DdrTiming::ddr4_x8(3200, 22, 16, 52, 12, 24, 8, 34, (4, 12))
    }

    /// DDR3-1600K, 11-11-11 (Ramulator 2 `DDR3_1600K`, x8 tRRD 5 and tFAW 24
    /// clocks, nWTR 6); 4 Gb devices, tRFC 260 ns (gem5 `DDR3_1600_8x8`). DDR3 has
    /// no bank groups: tCCD is 4 clocks, one burst.
    pub const fn ddr3_1600() -> DdrTiming {
        let r = 1600;
        DdrTiming {
            t_rcd_ps: ck(11, r),
            t_rp_ps: ck(11, r),
            t_cl_ps: ck(11, r),
            t_cwl_ps: ck(8, r),
            t_ras_ps: ck(28, r),
            t_rtp_ps: ck(6, r),
            t_wr_ps: ck(12, r),
            t_ccd_l_ps: ck(4, r),
            t_wtr_s_ps: ck(6, r), // nWTR 6: no bank groups, one value
            t_wtr_l_ps: ck(6, r),
            t_rtw_ps: ck(RTW_CK, r),
            t_rrd_ps: ck(5, r),
            t_faw_ps: ck(24, r),
            t_rfc_ps: 260_000,
            t_refi_ps: REFI_PS,
        }
    }
}

/// Checks a `model = banks` config; the error names the field.
pub(super) fn validate(d: &DramConfig) -> Result<()> {
    check((1..=8).contains(&d.ranks), "mem.dram.ranks", d.ranks, "1 to 8")?;
    check((1..=16).contains(&d.bank_groups), "mem.dram.bank_groups", d.bank_groups, "1 to 16")?;
    check((1..=64).contains(&d.banks_per_group), "mem.dram.banks_per_group", d.banks_per_group, "1 to 64")?;
    let row_ok = d.row_bytes >= LINE_BYTES as u32 && d.row_bytes % LINE_BYTES as u32 == 0;
    check(row_ok, "mem.dram.row_bytes", d.row_bytes, "a multiple of 64 B, at least 64")?;
    let t = &d.timing;
    check(t.t_ccd_l_ps > 0, "mem.dram.timing.t_ccd_l_ps", t.t_ccd_l_ps, "> 0")?;
    let refi_ok = t.t_rfc_ps == 0 || t.t_refi_ps > t.t_rfc_ps;
    check(refi_ok, "mem.dram.timing.t_refi_ps", t.t_refi_ps, &format!("> t_rfc_ps ({}) when refresh is on", t.t_rfc_ps))?;
    let floor = t.t_rp_ps + t.t_rcd_ps + t.t_cl_ps + d.burst_ps();
    check(
        d.idle_latency_ps >= floor,
        "mem.dram.idle_latency_ps",
        d.idle_latency_ps,
        &format!(">= {floor} ps, the row conflict's tRP + tRCD + CL + one burst (model = banks)"),
    )
}

/// One line's place in the DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub channel: usize,
    pub rank: usize,
    /// Bank within the rank.
    pub bank: usize,
    pub row: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_convert_clocks_to_picoseconds() {
        // gem5 DDR4_2400_8x8 writes 17 clocks as 14.16 ns and tCCD_L as 5 ns.
        let t = DdrTiming::ddr4_2400();
        assert_eq!((t.t_rcd_ps, t.t_rp_ps, t.t_cl_ps), (14_167, 14_167, 14_167));
        assert_eq!(t.t_ccd_l_ps, 5_000);
        assert_eq!(t.t_wr_ps, 15_000, "18 clocks = 15 ns, JEDEC's tWR");
        // gem5 DDR3_1600_8x8: 13.75 ns, tRAS 35 ns, tWR 15 ns, tFAW 30 ns.
        let t = DdrTiming::ddr3_1600();
        assert_eq!((t.t_rcd_ps, t.t_ras_ps, t.t_wr_ps, t.t_faw_ps), (13_750, 35_000, 15_000, 30_000));
        let t = DdrTiming::ddr4_3200();
        assert_eq!((t.t_cl_ps, t.t_wr_ps, t.t_ccd_l_ps), (13_750, 15_000, 5_000));
    }

    #[test]
    fn turnaround_times_match_gem5() {
        // gem5 DDR3_1600_8x8: tWTR 7.5 ns, tRTW 2.5 ns (2 clocks).
        let t = DdrTiming::ddr3_1600();
        assert_eq!((t.t_wtr_s_ps, t.t_wtr_l_ps, t.t_rtw_ps), (7_500, 7_500, 2_500));
        // gem5 DDR4_2400_16x4: tRTW 1.666 ns; tWTR 5 ns "the average of
        // WTR_S and WTR_L" (3 and 9 clocks).
        let t = DdrTiming::ddr4_2400();
        assert_eq!((t.t_wtr_s_ps, t.t_wtr_l_ps, t.t_rtw_ps), (2_500, 7_500, 1_667));
        assert_eq!((t.t_wtr_s_ps + t.t_wtr_l_ps) / 2, 5_000);
        // JEDEC tWTR_L is 7.5 ns at every DDR4 grade; Ramulator's whole clocks round it up.
        for (t, wtr_s) in [(DdrTiming::ddr4_2666(), 3_001), (DdrTiming::ddr4_2933(), 2_728), (DdrTiming::ddr4_3200(), 2_500)] {
            assert!(t.t_wtr_l_ps >= 7_500 && t.t_wtr_l_ps < 7_503, "{t:?}");
            assert_eq!(t.t_wtr_s_ps, wtr_s);
        }
    }
}
