//! The banks model's timings, case by case: row hits, misses and
//! conflicts, tRAS and write recovery, the read/write turnaround,
//! refresh, the address maps, and requests served in time order around
//! bookings made ahead.

use crate::engine::time::Ps;
use crate::mem::config::{DramConfig, MemConfig};
use crate::mem::ddr::{AddressMap, DdrTiming, Place};
use crate::mem::dram::{Agent, Dram};

/// altra's DDR4-2400 on one channel whose burst is exactly 1 ns (64 GB/s),
/// one rank, no refresh unless asked; each write booked as it comes (no
/// write queue), so its timing shows.
fn cfg(refresh: bool) -> DramConfig {
    let mut c = DramConfig { channels: 1, ranks: 1, channel_bandwidth_bytes_per_s: 64_000_000_000, ..MemConfig::altra().dram };
    c.write_queue.entries = 0;
    if !refresh {
        c.timing.t_rfc_ps = 0;
    }
    c
}

/// Lines apart that share a bank but not a row (RoRaBaCoCh, one rank).
const ROW: u64 = 8192 * 16;

/// The split with plain divisions: the oracle for the shifted one.
fn place(line: u64, map: AddressMap, channels: u64, ranks: u64, banks: u64, row_lines: u64) -> Place {
    let channel = (line % channels) as usize;
    let mut r = line / channels;
    let (rank, bank);
    match map {
        AddressMap::RoRaBaCoCh => {
            r /= row_lines;
            bank = r % banks;
            r /= banks;
            rank = r % ranks;
            r /= ranks;
        }
        AddressMap::RoCoRaBaCh => {
            bank = r % banks;
            r /= banks;
            rank = r % ranks;
            r /= ranks;
            r /= row_lines;
        }
    }
    Place { channel, rank: rank as usize, bank: bank as usize, row: r }
}

fn split(line: u64, map: AddressMap, channels: u32, ranks: u32, banks: u32, row_bytes: u32) -> Place {
    let b = super::Banks::new(map, channels, ranks, 1, banks, row_bytes, &DdrTiming::ddr4_2400());
    b.place(line)
}

#[test]
fn maps_split_a_line_as_gem5_names_them() {
    // 2 channels, 2 ranks, 16 banks, 128 lines a row.
    let p = |line, map| split(line, map, 2, 2, 16, 8192);
    // RoRaBaCoCh: lines 0, 2, 4 … of channel 0 share one row of bank 0.
    assert_eq!(p(0, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 0 });
    assert_eq!(p(1, AddressMap::RoRaBaCoCh), Place { channel: 1, rank: 0, bank: 0, row: 0 });
    assert_eq!(p(254, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 0 });
    assert_eq!(p(256, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 1, row: 0 });
    assert_eq!(p(256 * 16, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 1, bank: 0, row: 0 });
    assert_eq!(p(256 * 32, AddressMap::RoRaBaCoCh), Place { channel: 0, rank: 0, bank: 0, row: 1 });
    // RoCoRaBaCh: consecutive lines of a channel walk the banks, then the ranks.
    assert_eq!(p(2, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 0, bank: 1, row: 0 });
    assert_eq!(p(32, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 1, bank: 0, row: 0 });
    assert_eq!(p(64 * 128, AddressMap::RoCoRaBaCh), Place { channel: 0, rank: 0, bank: 0, row: 1 });
    // Three channels: divisions, not shifts.
    assert_eq!(split(5, AddressMap::RoRaBaCoCh, 3, 2, 16, 8192), Place { channel: 2, rank: 0, bank: 0, row: 0 });
    assert_eq!(split(3 * 128, AddressMap::RoRaBaCoCh, 3, 2, 16, 8192), Place { channel: 0, rank: 0, bank: 1, row: 0 });
}

#[test]
fn the_shifted_split_is_the_address_maps_split() {
    for (channels, ranks, bg, bpg, row) in [(4, 2, 4, 4, 8192), (6, 2, 4, 4, 8192), (3, 3, 1, 8, 1024), (1, 1, 1, 1, 64)] {
        for map in [AddressMap::RoRaBaCoCh, AddressMap::RoCoRaBaCh] {
            let b = super::Banks::new(map, channels, ranks, bg, bpg, row, &DdrTiming::ddr4_2400());
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let line = x >> 20;
                let want = place(line, map, channels as u64, ranks as u64, (bg * bpg) as u64, row as u64 / 64);
                assert_eq!(b.place(line), want, "line {line} {map:?} {channels} ch");
            }
        }
    }
}

#[test]
fn an_idle_request_pays_its_rows_case() {
    let c = cfg(false);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let mut d = Dram::new(&c);
    assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps, "a precharged bank: activate, read");
    assert_eq!(d.read(64, 2_000_000, Agent::Core), idle - t.t_rp_ps - t.t_rcd_ps, "the open row: read");
    assert_eq!(d.read(ROW, 3_000_000, Agent::Core), idle, "another row: precharge, activate, read");
    let b = d.bank_counters();
    assert_eq!((b.row_misses, b.row_hits, b.row_conflicts, b.activates), (1, 1, 1, 2));
}

#[test]
fn a_stream_hits_open_rows_and_random_lines_conflict() {
    let mut d = Dram::new(&cfg(true));
    for i in 0..20_000u64 {
        d.read(i * 64, i * 5_000, Agent::Core);
    }
    let b = d.bank_counters();
    assert!(b.row_hits as f64 > 0.98 * 20_000.0, "{b:?}");
    // Random lines over 1 GiB: almost every request finds another row open.
    let mut d = Dram::new(&cfg(true));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d.read((x % (1 << 30)) & !63, i * 50_000, Agent::Core);
    }
    // The rest are misses: each refresh closed the rows.
    let b = d.bank_counters();
    assert!(b.row_conflicts as f64 > 0.85 * 20_000.0, "{b:?}");
    assert!(b.row_hits < 100, "{b:?}");
    assert_eq!(b.activates, 20_000 - b.row_hits);
}

#[test]
fn a_conflict_waits_for_tras_and_write_recovery() {
    let c = cfg(false);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let mut d = Dram::new(&c);
    let miss = d.read(0, 0, Agent::Core);
    assert_eq!(miss, idle - t.t_rp_ps);
    // ACTIVATE at 0: the precharge for another row waits for tRAS.
    assert_eq!(d.read(ROW, 0, Agent::Core), t.t_ras_ps + idle);
    // A write to the open row at 1 µs, then a conflict: precharge after
    // the write's data and tWR.
    let w = d.write(ROW + 64, 1_000_000, Agent::Device);
    let data_end = 1_000_000 + t.t_cwl_ps + 1_000;
    assert_eq!(w, t.t_cwl_ps + 1_000 + (idle - t.t_rp_ps - t.t_rcd_ps - t.t_cl_ps - 1_000));
    assert_eq!(d.read(0, 1_000_000, Agent::Core), data_end + t.t_wr_ps - 1_000_000 + idle);
}

/// Where a request's data started on the bus, from the latency `Dram`
/// returned (`cfg`: 1 ns bursts).
fn data_start(c: &DramConfig, now: Ps, latency: Ps) -> Ps {
    let t = &c.timing;
    let fixed = c.idle_latency_ps - (t.t_rp_ps + t.t_rcd_ps + t.t_cl_ps + 1_000);
    now + latency - fixed - 1_000
}

#[test]
fn a_read_after_a_write_waits_twtr_after_the_write_data() {
    let c = cfg(false);
    let t = c.timing.clone();
    // DDR4-2400U: tRCD = CL = 14 167, CWL 10 000, tWTR_S 2 500, tWTR_L 7 500.
    assert_eq!((t.t_cwl_ps, t.t_wtr_s_ps, t.t_wtr_l_ps), (10_000, 2_500, 7_500));
    // Write to bank 0 at 0: ACTIVATE at 0, WRITE at 14 167, data [24 167, 25 167).
    let mut d = Dram::new(&c);
    assert_eq!(data_start(&c, 0, d.write(0, 0, Agent::Device)), 24_167);
    // A read of the same row (same bank group): its READ waits for tWTR_L
    // after the write data, at 32 667; its data come CL later.
    let r = data_start(&c, 0, d.read(64, 0, Agent::Core));
    assert_eq!(r, 25_167 + 7_500 + 14_167);
    // Without the turnaround the READ would go at tCCD_L after the WRITE
    // (19 167) and its data at 33 334.
    assert_eq!(d.bank_counters().turnaround_wait_ps, r - 33_334);
    assert_eq!(d.bank_counters().rw_switches, 1);

    // Bank 1 is in bank group 1: tWTR_S. Its ACTIVATE waits for the
    // four-activate spacing (26 clocks / 4 = 5 417), READ at 19 584,
    // data at 33 751 without the turnaround.
    let mut d = Dram::new(&c);
    d.write(0, 0, Agent::Device);
    let r = data_start(&c, 0, d.read(128 * 64, 0, Agent::Core));
    assert_eq!(r, 25_167 + 2_500 + 14_167);
    assert_eq!(d.bank_counters().turnaround_wait_ps, r - 33_751);

    // Two reads: no turnaround, the second read's data tCCD_L after the first's.
    let mut d = Dram::new(&c);
    assert_eq!(data_start(&c, 0, d.read(0, 0, Agent::Core)), 28_334);
    assert_eq!(data_start(&c, 0, d.read(64, 0, Agent::Core)), 33_334);
    assert_eq!((d.bank_counters().turnaround_wait_ps, d.bank_counters().rw_switches), (0, 0));
}

#[test]
fn a_write_after_a_read_waits_two_clocks_after_the_read_data() {
    let c = cfg(false);
    assert_eq!(c.timing.t_rtw_ps, 1_667, "2 clocks of DDR4-2400");
    let mut d = Dram::new(&c);
    // Read: data [28 334, 29 334). The write to the open row would put
    // its data right after (WRITE at 19 334, data at 29 334); the
    // turnaround puts it 2 clocks later: WRITE at 21 001 = READ
    // (14 167) + CL + burst + 2 tCK - CWL, as JEDEC spaces them.
    d.read(0, 0, Agent::Core);
    let w = data_start(&c, 0, d.write(64, 0, Agent::Device));
    assert_eq!(w, 29_334 + 1_667);
    assert_eq!(w - c.timing.t_cwl_ps, 14_167 + 14_167 + 1_000 + 1_667 - 10_000);
    assert_eq!(d.bank_counters().turnaround_wait_ps, 1_667);
    // And back: write, read, write is two more switches.
    d.read(128, 0, Agent::Core);
    assert_eq!(d.bank_counters().rw_switches, 2);
}

#[test]
fn a_write_booked_before_a_later_read_keeps_the_gap_or_goes_after_it() {
    let c = cfg(false);
    let setup = || {
        let mut d = Dram::new(&c);
        d.read(128 * 64, 0, Agent::Core); // opens a row of bank 1 (group 1)
        // A read booked ahead, bank 0: data [128 334, 129 334).
        assert_eq!(data_start(&c, 100_000, d.read(0, 100_000, Agent::Core)), 128_334);
        d
    };
    // A write hit in bank 1 at 100 000: data [110 000, 111 000), which
    // leaves tWTR_S + CL (16 667) before the read's data: it fits in front.
    let mut d = setup();
    assert_eq!(data_start(&c, 100_000, d.write(129 * 64, 100_000, Agent::Device)), 110_000);
    assert_eq!(d.bank_counters().turnaround_wait_ps, 0);
    // At 105 000 it would end 12 334 before the read's data: too close,
    // so it goes after the read, 2 clocks after its data.
    let mut d = setup();
    assert_eq!(data_start(&c, 105_000, d.write(129 * 64, 105_000, Agent::Device)), 129_334 + 1_667);
}

#[test]
fn a_request_from_before_bookings_made_ahead_is_served_in_time_order() {
    let c = cfg(false);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let setup = || {
        let mut d = Dram::new(&c);
        // A core ahead of the devices books two rows of bank 0 from 1 µs.
        assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps);
        let second = d.read(ROW * 64, 1_000_000, Agent::Core);
        assert_eq!(second, t.t_ras_ps + idle, "the conflict waits for tRAS");
        (d, data_start(&c, 1_000_000, second))
    };
    // A device's read of a third row at 0 finds bank 0 as it is then,
    // closed: a miss at once, not a wait behind the core's bookings.
    let (mut d, _) = setup();
    let waited = d.counters().queue_wait_ps;
    assert_eq!(d.read(2 * ROW * 64, 0, Agent::Device), idle - t.t_rp_ps);
    assert_eq!(d.counters().queue_wait_ps, waited);
    assert_eq!(d.counters().reads_passing, [0, 1, 0], "it went ahead of the core's bookings");
    // At 990 ns, 10 ns before the core's requests, its row would have to
    // stay open (tRAS) past the core's first ACTIVATE: in booking order it
    // went after both of them. Requested first, it is served first now,
    // on the bank as 990 ns finds it: closed, a miss at once.
    let (mut d, _) = setup();
    assert_eq!(d.read(2 * ROW * 64, 990_000, Agent::Device), idle - t.t_rp_ps);
    assert_eq!(d.bank_counters().row_conflicts, 1, "the core's second access only");
    assert_eq!(d.counters().reads_passing, [0, 1, 0]);
    // The core's first access was booked as a miss: passed misses are not
    // counted (in request order it would have been a conflict too).
    assert_eq!(d.bank_counters().passed_hits, 0);
}

#[test]
fn a_request_that_passes_a_row_hit_booked_ahead_counts_it() {
    let c = cfg(false);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let mut d = Dram::new(&c);
    // The core books row 0 of bank 0 at 1 µs (a miss) and again at 2 µs
    // (a hit), both ahead of the device.
    assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps);
    assert_eq!(d.read(64, 2_000_000, Agent::Core), idle - t.t_rp_ps - t.t_rcd_ps);
    // The device reads row 2 of bank 0 at 1.5 µs: a conflict served at
    // once, ahead of the core's hit, which keeps the latency it was given.
    assert_eq!(d.read(2 * ROW * 64, 1_500_000, Agent::Device), idle);
    assert_eq!(d.counters().reads_passing, [0, 1, 0]);
    assert_eq!(d.bank_counters().passed_hits, 1);
    // A second device read of row 3 at 1.6 µs lands before the same hit:
    // it is not counted again.
    d.read(3 * ROW * 64, 1_600_000, Agent::Device);
    assert_eq!(d.counters().reads_passing, [0, 2, 0]);
    assert_eq!(d.bank_counters().passed_hits, 1);
    // A later request to row 0 at 2.5 µs finds the row the core's hit left open.
    assert_eq!(d.read(128, 2_500_000, Agent::Device), idle - t.t_rp_ps - t.t_rcd_ps);
    assert_eq!(d.bank_counters().passed_hits, 1);
}

#[test]
fn an_access_requested_earlier_bounds_a_request_past_a_later_requested_one() {
    let c = cfg(false);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let mut d = Dram::new(&c);
    // Requested at 1 µs: row 0 of bank 0 (a miss, ACTIVATE at 1 µs), then
    // row 1 (a conflict: PRECHARGE once row 0 has been open tRAS).
    assert_eq!(d.read(0, 1_000_000, Agent::Core), idle - t.t_rp_ps);
    assert_eq!(d.read(ROW * 64, 1_000_000, Agent::Core), t.t_ras_ps + idle);
    // Requested at 1.01 µs: a hit on row 0, done before row 1's precharge,
    // so it is booked between the two.
    let hit = d.read(64, 1_010_000, Agent::Core);
    assert!(data_start(&c, 1_010_000, hit) < data_start(&c, 1_000_000, t.t_ras_ps + idle));
    // A device read of row 2 requested at 1.005 µs: the hit (requested
    // after it) does not hold it back, but row 1's access (requested
    // before it) does, although the hit starts between them. Row 2 is
    // opened after row 1 has been open tRAS: PRECHARGE at
    // 1 µs + tRAS + tRP + tRAS. Bounded by nothing past the hit (the
    // first version of request order), it took row 0's state and
    // precharged together with row 1's access, 41 ns earlier.
    let x = d.read(2 * ROW * 64, 1_005_000, Agent::Device);
    assert_eq!(x, 1_000_000 + 2 * t.t_ras_ps + t.t_rp_ps - 1_005_000 + idle);
}

#[test]
fn ranks_turn_around_independently() {
    let c = DramConfig { ranks: 2, ..cfg(false) };
    let mut d = Dram::new(&c);
    d.write(0, 0, Agent::Device);
    // Line 2048 is rank 1, bank 0: a miss, not held by rank 0's write.
    assert_eq!(d.read(2048 * 64, 0, Agent::Core), c.idle_latency_ps - c.timing.t_rp_ps);
    assert_eq!((d.bank_counters().turnaround_wait_ps, d.bank_counters().rw_switches), (0, 0));
}

#[test]
fn out_of_order_mixed_traffic_keeps_every_turnaround() {
    // Reads and writes over two ranks, booked out of time order (up to
    // 2 µs back), dense enough that requests queue: no two bursts of a
    // rank are closer than their turnaround, none overlap.
    let t = DdrTiming::ddr4_2400();
    let mut b = super::Banks::new(AddressMap::RoRaBaCoCh, 1, 2, 4, 4, 8192, &t);
    let mut bus = crate::engine::timeline::Timeline::with_min_gap(3_333);
    let mut x: u64 = 0x0123_4567_89ab_cdef;
    for i in 0..5_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let line = (x >> 8) % (1 << 16);
        let now = (i * 2_000).saturating_sub(x % 2_000_000);
        b.access(line, now, x & 1 == 1, &mut bus, 3_333);
    }
    let bad = b.turn.violations(0);
    assert!(bad.is_empty(), "{} violations, first: {:?}", bad.len(), bad.first());
    assert!(b.counters().turnaround_wait_ps > 0 && b.counters().rw_switches > 1_000, "{:?}", b.counters());
}

#[test]
fn refresh_blocks_its_rank_and_closes_rows() {
    let c = cfg(true);
    let (idle, t) = (c.idle_latency_ps, c.timing.clone());
    let mut d = Dram::new(&c);
    // One rank on one channel: refreshes start at tREFI / 2 + k × tREFI.
    let first = t.t_refi_ps / 2;
    d.read(0, 0, Agent::Core);
    assert_eq!(d.read(64, first - 100_000, Agent::Core), idle - t.t_rp_ps - t.t_rcd_ps, "open row before the refresh");
    let inside = first + 100_000;
    let waited = first + t.t_rfc_ps - inside;
    assert_eq!(d.read(128, inside, Agent::Core), waited + idle - t.t_rp_ps, "after it: the row was closed");
    assert_eq!(d.bank_counters().refresh_wait_ps, waited);
}

#[test]
fn banks_overlap_where_one_bank_serialises() {
    // 64 conflicts in one bank vs spread over 16 banks, all at time 0.
    let run = |stride: u64| -> Ps {
        let mut d = Dram::new(&cfg(false));
        for i in 0..64u64 {
            d.read(i * stride, 0, Agent::Core);
        }
        d.drained_at()
    };
    let one_bank = run(ROW);
    let many = run(ROW + 8192);
    let t = cfg(false).timing;
    assert!(one_bank >= 63 * (t.t_ras_ps.max(t.t_rcd_ps + t.t_rtp_ps) + t.t_rp_ps), "{one_bank}");
    assert!(many * 4 < one_bank, "{many} vs {one_bank}");
}

#[test]
fn a_request_booked_ahead_does_not_delay_an_earlier_one_in_another_bank() {
    let c = cfg(false);
    let mut d = Dram::new(&c);
    for i in 0..10 {
        d.read(i * 64, 500_000, Agent::Core);
    }
    let bank1 = 8192;
    assert_eq!(d.read(bank1, 0, Agent::Device), c.idle_latency_ps - c.timing.t_rp_ps);
}

#[test]
fn the_address_map_decides_which_constraint_binds() {
    // A stream all at time 0: one bank group per channel under RoRaBaCoCh
    // (tCCD_L apart), every bank group in turn under RoCoRaBaCh (the bus:
    // four 3.33 ns bursts are longer than tCCD_L).
    let run = |map| {
        let c = DramConfig { address_map: map, channel_bandwidth_bytes_per_s: 19_200_000_000, ..cfg(false) };
        let mut d = Dram::new(&c);
        for i in 0..1000u64 {
            d.read(i * 64, 0, Agent::Core);
        }
        d.drained_at()
    };
    let t = cfg(false).timing;
    let ccd = run(AddressMap::RoRaBaCoCh);
    let bus = run(AddressMap::RoCoRaBaCh);
    assert!(ccd >= 999 * t.t_ccd_l_ps && ccd < 999 * t.t_ccd_l_ps + 200_000, "{ccd}");
    assert!(bus >= 3_333_333 && bus < 3_333_333 + 200_000, "{bus}");
}
