use super::*;
use crate::cpu::config::InOrderConfig;
use crate::cpu::mem_port::{AccessCost, FixedMissMemory, IdealMemory};
use crate::cpu::CodeRegion;
use crate::engine::time::PS_PER_NS;

/// Addresses from here on miss; below it they hit.
const MISS_BASE: u64 = 1 << 30;
const LAT_PS: Ps = 100 * PS_PER_NS;

/// 1 GHz, CPI 1: one instruction is exactly 1 ns, so expectations read off directly.
fn simple(out_of_order: bool, rob_entries: u32, l1d_mshrs: u32) -> CoreConfig {
    CoreConfig {
        freq_hz: 1_000_000_000,
        issue_width: 4,
        base_cpi: 1.0,
        out_of_order,
        rob_entries,
        l1d_mshrs,
        sq_entries: 64,
        // gem5 Minor's store buffer and drain, at the same CPI as the out-of-order core.
        inorder: InOrderConfig { base_cpi: 1.0, ..Default::default() },
        cores: 1,
        mmio_write_ps: 0,
    }
}

/// `n` load misses, each after `spacing` instructions.
fn spaced_misses(n: u64, spacing: u64) -> Work {
    let mut w = Work::new(Category::App);
    for i in 0..n {
        w.instr(spacing).read(MISS_BASE + i * 64);
    }
    w
}

fn stall_of(cfg: &CoreConfig, w: &Work) -> Ps {
    let mut core = Core::new(0, cfg).unwrap();
    let t = core.exec(w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS));
    t - w.instructions() * PS_PER_NS
}

#[test]
fn pure_compute_is_instructions_times_cpi_over_frequency() {
    let mut cfg = CoreConfig { base_cpi: 0.5, ..CoreConfig::altra() };
    cfg.freq_hz = 2_000_000_000;
    let mut w = Work::new(Category::App);
    w.instr(1000).read(0x40).write(0x80); // L1 hits add nothing
    let mut core = Core::new(0, &cfg).unwrap();
    // 1000 × 0.5 cycles / 2 GHz = 250 ns exactly.
    assert_eq!(core.exec(&w, &mut IdealMemory), 250_000);
    cfg.freq_hz = 4_000_000_000;
    let mut fast = Core::new(0, &cfg).unwrap();
    assert_eq!(fast.exec(&w, &mut IdealMemory), 125_000);
    // 3.3 GHz: 500 cycles = 151 515.15… ps, truncated.
    cfg.freq_hz = 3_300_000_000;
    assert_eq!(Core::new(0, &cfg).unwrap().exec(&w, &mut IdealMemory), 151_515);
}

#[test]
fn sub_picosecond_remainders_carry_without_drift() {
    // 3 GHz, CPI 1: one instruction is 333.33… ps; 3000 of them one at a time are exactly 1 µs.
    let cfg = CoreConfig { freq_hz: 3_000_000_000, base_cpi: 1.0, ..CoreConfig::altra() };
    let mut core = Core::new(0, &cfg).unwrap();
    let mut w = Work::new(Category::Rx);
    w.instr(1);
    assert_eq!(core.exec(&w, &mut IdealMemory), 333);
    assert_eq!(core.exec(&w, &mut IdealMemory), 666);
    assert_eq!(core.exec(&w, &mut IdealMemory), 1_000);
    for _ in 3..3000 {
        core.exec(&w, &mut IdealMemory);
    }
    assert_eq!(core.now(), 1_000_000);
    assert_eq!(core.account().time_ps(Category::Rx), 1_000_000);
    assert_eq!(core.account().total_cycles(), 3000.0);
    assert_eq!(core.cycles_to_ps(3), 1_000);
    assert_eq!(core.exec_cycles(Category::Tx, 3), 1_001_000);
}

#[test]
fn in_order_stalls_for_every_miss_out_of_order_overlaps_them() {
    // 16 independent misses in 64 instructions (one every 4).
    let w = spaced_misses(16, 4);
    assert_eq!(stall_of(&simple(false, 128, 6), &w), 16 * LAT_PS);
    // OoO: ROB 128 reaches ceil(128/4) = 32 misses, so the 6 MSHRs bind:
    // windows of 6, 6, 4 → 3 × 100 ns (≈ 16 × 100 / 6 = 267 ns).
    let ooo = stall_of(&simple(true, 128, 6), &w);
    assert_eq!(ooo, 3 * LAT_PS);
    let ideal = 16 * LAT_PS / 6;
    assert!(ooo.abs_diff(ideal) * 100 / ideal < 15, "{ooo} vs {ideal}");
    // Total elapsed time includes the 64 ns of compute.
    let mut core = Core::new(0, &simple(true, 128, 6)).unwrap();
    assert_eq!(core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS)), 64 * PS_PER_NS + 3 * LAT_PS);
}

#[test]
fn an_atomic_stalls_for_its_line_and_does_not_overlap_other_misses() {
    let ooo = simple(true, 128, 6);
    // A plain store that misses never stalls.
    let mut w = Work::new(Category::Cas);
    w.instr(4).write(MISS_BASE);
    assert_eq!(stall_of(&ooo, &w), 0);
    // A CAS on a missing line stalls for it, and two loads around it
    // cannot overlap it: three whole latencies instead of one window.
    let mut w = Work::new(Category::Cas);
    w.instr(2).read(MISS_BASE + 64).instr(2).atomic(MISS_BASE).instr(2).read(MISS_BASE + 128);
    assert_eq!(stall_of(&ooo, &w), 3 * LAT_PS);
    let mut w = Work::new(Category::Cas);
    w.instr(2).read(MISS_BASE + 64).instr(2).read(MISS_BASE).instr(2).read(MISS_BASE + 128);
    assert_eq!(stall_of(&ooo, &w), LAT_PS, "the same three as loads overlap");
}

#[test]
fn a_dependent_load_waits_for_the_misses_before_it() {
    let ooo = simple(true, 128, 6);
    // Pointer chasing: a bucket, then the entry it names, then a
    // statistics store: two whole latencies, the store free.
    let mut w = Work::new(Category::App);
    w.instr(2).read(MISS_BASE).instr(2).read_after(MISS_BASE + 64).instr(2).write(MISS_BASE + 128);
    assert_eq!(stall_of(&ooo, &w), 2 * LAT_PS);
    // A dependent load with nothing missing before it starts a window
    // like any other, and later independent loads overlap it.
    let mut w = Work::new(Category::App);
    w.instr(2).read(0x40).read_after(MISS_BASE).instr(2).read(MISS_BASE + 64);
    assert_eq!(stall_of(&ooo, &w), LAT_PS);
    // In order it changes nothing: every miss stalls anyway.
    let mut w = Work::new(Category::App);
    w.read(MISS_BASE).read_after(MISS_BASE + 64);
    assert_eq!(stall_of(&simple(false, 128, 6), &w), 2 * LAT_PS);
}

/// Every access hits the L1D, whose load-to-use latency is `0`.
struct L1Latency(Ps);

impl MemPort for L1Latency {
    fn access(&mut self, _core: usize, _addr: u64, _write: bool, _now: Ps) -> AccessCost {
        AccessCost { latency_ps: self.0, l1_hit: true, queued_ps: 0 }
    }
}

#[test]
fn a_chase_through_the_l1d_costs_its_load_to_use_latency_per_load() {
    // 1 instruction (1 ns) per load, a 4 ns L1D: dependent loads wait
    // 3 ns each for the one before (the first waits for nothing).
    let mut w = Work::new(Category::App);
    for i in 0..10 {
        w.instr(1).read_after(i * 64);
    }
    let mut core = Core::new(0, &simple(true, 128, 6)).unwrap();
    assert_eq!(core.exec(&w, &mut L1Latency(4 * PS_PER_NS)), (1 + 9 * 4) * PS_PER_NS);
    assert_eq!(core.dependent_wait_ps, 9 * 3 * PS_PER_NS);
    // Independent loads, or enough work between them, hide it.
    let mut w = Work::new(Category::App);
    for i in 0..10 {
        w.instr(1).read(i * 64);
    }
    assert_eq!(stall_of_on(&w, &mut L1Latency(4 * PS_PER_NS)), 0);
    let mut w = Work::new(Category::App);
    for i in 0..10 {
        w.instr(4).read_after(i * 64);
    }
    assert_eq!(stall_of_on(&w, &mut L1Latency(4 * PS_PER_NS)), 0);
}

fn stall_of_on<M: MemPort>(w: &Work, mem: &mut M) -> Ps {
    let mut core = Core::new(0, &simple(true, 128, 6)).unwrap();
    core.exec(w, mem) - w.instructions() * PS_PER_NS
}

#[test]
fn misses_issue_when_the_core_reaches_them() {
    let w = spaced_misses(8, 4);
    let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
    Core::new(0, &simple(false, 128, 6)).unwrap().exec(&w, &mut mem);
    // In-order: miss i waits for the i misses before it.
    let issue: Vec<Ps> = mem.misses.iter().map(|m| m.0).collect();
    let expect: Vec<Ps> = (0..8).map(|i| i * LAT_PS + 4 * (i + 1) * PS_PER_NS).collect();
    assert_eq!(issue, expect);
    // OoO with 6 MSHRs: the first 6 go out together, the 7th after the first window.
    let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
    Core::new(0, &simple(true, 128, 6)).unwrap().exec(&w, &mut mem);
    let issue: Vec<Ps> = mem.misses.iter().map(|m| m.0).collect();
    let expect: Vec<Ps> = (0..8).map(|i| if i < 6 { 0 } else { LAT_PS } + 4 * (i + 1) * PS_PER_NS).collect();
    assert_eq!(issue, expect);
}

#[test]
fn bigger_rob_or_more_mshrs_help_until_the_other_limit_binds() {
    // 16 misses 64 instructions apart: the ROB limits overlap to ceil(rob / 64).
    let w = spaced_misses(16, 64);
    let by_rob: Vec<Ps> = [64, 128, 256, 384, 1024, 4096].iter().map(|&r| stall_of(&simple(true, r, 6), &w)).collect();
    // MLP 1, 2, 4, 6 (= MSHRs), then the 6 MSHRs bind.
    assert_eq!(by_rob, vec![16 * LAT_PS, 8 * LAT_PS, 4 * LAT_PS, 3 * LAT_PS, 3 * LAT_PS, 3 * LAT_PS]);
    // 16 misses 4 apart with ROB 32: the ROB reaches 8 misses; MSHRs help until 8.
    let w = spaced_misses(16, 4);
    let by_mshr: Vec<Ps> = [1, 2, 4, 8, 16, 32].iter().map(|&m| stall_of(&simple(true, 32, m), &w)).collect();
    assert_eq!(by_mshr, vec![16 * LAT_PS, 8 * LAT_PS, 4 * LAT_PS, 2 * LAT_PS, 2 * LAT_PS, 2 * LAT_PS]);
}

#[test]
fn misses_further_apart_than_the_rob_cannot_overlap() {
    let w = spaced_misses(16, 200);
    assert_eq!(stall_of(&simple(true, 128, 6), &w), 16 * LAT_PS);
    assert_eq!(stall_of(&simple(true, 128, 6), &w), stall_of(&simple(false, 128, 6), &w));
    // Exactly a ROB apart: still no overlap (the second is not in the ROB with the first).
    assert_eq!(stall_of(&simple(true, 128, 6), &spaced_misses(4, 128)), 4 * LAT_PS);
    assert_eq!(stall_of(&simple(true, 128, 6), &spaced_misses(4, 127)), 2 * LAT_PS);
}

#[test]
fn stores_and_hits_do_not_stall() {
    let mut w = Work::new(Category::Copy);
    w.instr(10).write(MISS_BASE).write(MISS_BASE + 64).read(0x40).instr(10);
    for cfg in [simple(false, 128, 6), simple(true, 128, 6)] {
        let mut core = Core::new(3, &cfg).unwrap();
        let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
        assert_eq!(core.exec(&w, &mut mem), 20 * PS_PER_NS);
        assert_eq!(mem.misses.len(), 2, "the memory system still sees the stores");
        assert_eq!(core.result_json()["store_misses"], 2);
        assert_eq!(core.result_json()["load_misses"], 0);
    }
}

#[test]
fn a_full_store_buffer_stalls_until_its_oldest_store_drains() {
    // Eight store misses one instruction apart. In order (gem5 Minor's
    // 5-entry buffer, 2 accesses in memory): they begin to drain two at
    // a time, at 1, 2, 101, 102, 201 ns …; the 6th waits for the 1st
    // (101 ns, 95 ns of stall), the 7th finds the 2nd just drained
    // (102 ns), the 8th waits for the 3rd (201 ns, 98 ns more).
    let mut w = Work::new(Category::Tx);
    for i in 0..8 {
        w.instr(1).write(MISS_BASE + i * 64);
    }
    let mut core = Core::new(0, &simple(false, 128, 6)).unwrap();
    let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
    assert_eq!(core.exec(&w, &mut mem), (8 + 95 + 98) * PS_PER_NS);
    let r = core.result_json();
    assert_eq!((r["store_misses"].as_u64(), r["store_buffer_full"].as_u64()), (Some(8), Some(2)));
    assert_eq!(r["store_buffer_full_ps"].as_u64(), Some(193 * PS_PER_NS));
    // The buffer drains on its own time: the next unit, 400 ns later, finds it empty.
    w.reset(Category::Tx).instr(400);
    core.exec(&w, &mut mem);
    let mut one = Work::new(Category::Tx);
    one.write(MISS_BASE + 4096);
    let before = core.now();
    assert_eq!(core.exec(&one, &mut mem), before, "an empty buffer takes a store at once");
    // Out of order (64 entries): the same eight never wait.
    assert_eq!(stall_of(&simple(true, 128, 6), &w_of_stores(8)), 0);
    // A 4-entry store queue out of order: the 5th waits for the 1st.
    let small = CoreConfig { sq_entries: 4, ..simple(true, 128, 6) };
    assert_eq!(stall_of(&small, &w_of_stores(5)), 96 * PS_PER_NS);
}

fn w_of_stores(n: u64) -> Work {
    let mut w = Work::new(Category::Tx);
    for i in 0..n {
        w.instr(1).write(MISS_BASE + i * 64);
    }
    w
}

#[test]
fn store_hits_behind_a_miss_take_buffer_entries() {
    // In order: a miss at 1 ns (drains at 101), then hits; they drain
    // behind it, so the 6th store (the 5th hit, at 6 ns) waits 95 ns.
    let mut w = Work::new(Category::Tx);
    w.instr(1).write(MISS_BASE);
    for _ in 0..5 {
        w.instr(1).write(0x40);
    }
    assert_eq!(stall_of(&simple(false, 128, 6), &w), 95 * PS_PER_NS);
    // Four hits fit beside the miss.
    let mut w = Work::new(Category::Tx);
    w.instr(1).write(MISS_BASE);
    for _ in 0..4 {
        w.instr(1).write(0x40);
    }
    assert_eq!(stall_of(&simple(false, 128, 6), &w), 0);
}

/// One queue in front of memory: each miss occupies it `service` ps, from
/// when it is issued or the queue frees, whichever is later.
struct QueuedMemory {
    free_at: Ps,
    service: Ps,
}

impl MemPort for QueuedMemory {
    fn access(&mut self, _core: usize, addr: u64, _write: bool, now: Ps) -> AccessCost {
        if addr < MISS_BASE {
            return AccessCost::L1_HIT;
        }
        let start = now.max(self.free_at);
        self.free_at = start + self.service;
        AccessCost { latency_ps: start - now + self.service, l1_hit: false, queued_ps: start - now }
    }
}

#[test]
fn a_store_that_begins_late_does_not_wait_for_the_queue_again() {
    // In order, a 2-entry buffer draining one store at a time, a 100 ns
    // queue. Store 1 at 1 ns drains at 101. Store 2 at 2 ns is booked
    // behind it (99 ns queued) and ends at 201; it begins when store 1
    // is done (101), and the queue is then free for it: 201, not
    // 101 + 199. Store 3 waits for store 1 (101 ns), is booked behind
    // store 2 and ends at 301. Store 4, at 102 ns, waits for store 2:
    // the unit ends at 201 ns (300 if the queue were waited twice).
    let minor = CoreConfig {
        inorder: InOrderConfig { store_buffer_entries: 2, accesses_in_memory: 1, ..simple(false, 128, 6).inorder },
        ..simple(false, 128, 6)
    };
    let mut core = Core::new(0, &minor).unwrap();
    let mut mem = QueuedMemory { free_at: 0, service: LAT_PS };
    assert_eq!(core.exec(&w_of_stores(4), &mut mem), 201 * PS_PER_NS);
    // Without a queue the rule is unchanged: each store drains a whole latency after the one before.
    let mut core = Core::new(0, &minor).unwrap();
    assert_eq!(core.exec(&w_of_stores(4), &mut FixedMissMemory::new(MISS_BASE, LAT_PS)), 201 * PS_PER_NS);
    assert_eq!(core.result_json()["store_buffer_full_ps"].as_u64(), Some((98 + 99) * PS_PER_NS));
}

#[test]
fn a_full_store_queue_waits_after_the_load_misses_before_it() {
    // Out of order, 2 store-queue entries: a load miss opens a window at
    // 1 ns; stores miss at 2 and 3 ns (drained at 102, 103); the third
    // store, at 4 ns, finds the queue full and waits 98 ns for the 1st,
    // while the load returns: the window is left 2 ns, one latency of
    // stall in all.
    let cfg = CoreConfig { sq_entries: 2, ..simple(true, 128, 6) };
    let mut w = Work::new(Category::App);
    w.instr(1).read(MISS_BASE).instr(1).write(MISS_BASE + 64).instr(1).write(MISS_BASE + 128).instr(1).write(MISS_BASE + 192);
    let mut core = Core::new(0, &cfg).unwrap();
    assert_eq!(core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, LAT_PS)), (4 + 100) * PS_PER_NS);
    let r = core.result_json();
    assert_eq!((r["store_buffer_full"].as_u64(), r["store_buffer_full_ps"].as_u64()), (Some(1), Some(98 * PS_PER_NS)));
    // In order the load blocks first (100 ns); the stores then miss at
    // 102, 103 and 104 ns, and the third waits 98 ns for the first.
    let minor = CoreConfig { inorder: InOrderConfig { store_buffer_entries: 2, ..simple(false, 128, 6).inorder }, ..simple(false, 128, 6) };
    assert_eq!(stall_of(&minor, &w), (100 + 98) * PS_PER_NS);
}

#[test]
fn cycles_land_in_categories_and_sum_to_elapsed() {
    let cfg = CoreConfig { freq_hz: 2_000_000_000, base_cpi: 1.0, ..CoreConfig::altra() }; // 500 ps/cycle
    let mut core = Core::new(0, &cfg).unwrap();
    let mut mem = FixedMissMemory::new(MISS_BASE, LAT_PS);
    let mut w = Work::with_capacity(Category::Rx, 8);
    w.instr(70).read(MISS_BASE); // 35 ns + 100 ns = 270 cycles
    core.exec(&w, &mut mem);
    w.reset(Category::Tx).instr(40); // 40 cycles
    core.exec(&w, &mut mem);
    w.reset(Category::Mempool).instr(24); // 24 cycles
    core.exec(&w, &mut mem);
    core.empty_poll(10, 0x40, &mut mem); // 10 cycles idle
    core.spin_ns(50); // 100 cycles app
    let before = core.now();
    core.idle_until(before + 25_000); // 50 cycles idle
    assert_eq!(core.idle_until(0), before + 25_000, "idle_until never goes back");
    let a = core.account();
    assert_eq!(a.cycles(Category::Rx), 270.0);
    assert_eq!(a.cycles(Category::Tx), 40.0);
    assert_eq!(a.cycles(Category::Mempool), 24.0);
    assert_eq!(a.cycles(Category::App), 100.0);
    assert_eq!(a.cycles(Category::Idle), 60.0);
    assert_eq!(a.instructions(Category::Rx), 70);
    assert_eq!(a.total_ps(), core.now());
    assert_eq!(a.total_cycles(), core.ps_to_cycles(core.now()));
    let cpp = a.cycles_per_packet(2);
    assert_eq!(cpp.get(Category::Rx), 135.0);
    assert_eq!(cpp.total, 247.0);
    let mut v = vec![];
    core.report_stats(&mut StatSink::new(&mut v));
    assert!(v.iter().any(|s| s.name == "cycles.rx" && s.value.as_f64() == 270.0));
    core.reset_stats();
    assert_eq!(core.account().total_ps(), 0);
    assert_eq!(core.result_json()["load_misses"], 0);
    assert_eq!(core.now(), before + 25_000, "reset clears counters, not time");
}

/// Touch every byte of a frame: 16 instructions per 64 B line (eight 8 B
/// loads and adds), every line a DRAM miss (80 ns, params.md §5).
fn touch_time(out_of_order: bool, frame_bytes: u64) -> Ps {
    let mut cfg = CoreConfig::altra();
    cfg.out_of_order = out_of_order;
    let mut core = Core::new(0, &cfg).unwrap();
    let mut w = Work::new(Category::App);
    w.read_lines(MISS_BASE, frame_bytes, 16);
    core.exec(&w, &mut FixedMissMemory::new(MISS_BASE, 80 * PS_PER_NS))
}

#[test]
fn reading_every_byte_of_a_big_frame_favours_out_of_order() {
    // 1518 B = 24 lines: in-order 24 × 80 ns; OoO overlaps min(6 MSHRs, ceil(128/16)) = 6 → 4 × 80 ns.
    let (io, ooo) = (touch_time(false, 1518), touch_time(true, 1518));
    let compute = 24 * 16 * 1_000 / 6; // 384 instr × 0.5 cycles at 3 GHz, ps
    // In order at Minor's estimated CPI of 1.0: twice the compute.
    assert_eq!(io, 2 * compute + 24 * 80 * PS_PER_NS);
    assert_eq!(ooo, compute + 4 * 80 * PS_PER_NS);
    assert!(io as f64 / ooo as f64 > 4.0, "OoO only {:.2}× faster", io as f64 / ooo as f64);
    // 64 B = 1 line: nothing to overlap.
    let (io, ooo) = (touch_time(false, 64), touch_time(true, 64));
    assert!((io as f64 / ooo as f64) < 1.1);
}

#[test]
fn invalid_config_is_refused() {
    let bad = CoreConfig { l1d_mshrs: 0, ..CoreConfig::altra() };
    assert!(Core::new(0, &bad).unwrap_err().to_string().starts_with("cpu.l1d_mshrs"));
}

/// Speed of `exec` for a 3-access all-L1-hit work unit. Run with
/// `cargo test --release -p hostsim-core cpu::core::tests::exec_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn exec_speed() {
    let n = 20_000_000u64;
    let mut core = Core::new(0, &CoreConfig::altra()).unwrap();
    let mut w = Work::with_capacity(Category::Rx, 4);
    w.instr(20).read(0x40).instr(10).write(0x1000).read(0x2000);
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        core.exec(std::hint::black_box(&w), &mut IdealMemory);
    }
    let exec_ns = t0.elapsed().as_nanos() as f64 / n as f64;
    let mut mem = FixedMissMemory::new(u64::MAX, LAT_PS);
    let t0 = std::time::Instant::now();
    for i in 0..n {
        w.reset(Category::Rx).instr(20).read(i & 0xfff).instr(10).write(0x1000 + (i & 0xff)).read(0x2000);
        core.exec(std::hint::black_box(&w), &mut mem);
    }
    let built_ns = t0.elapsed().as_nanos() as f64 / n as f64;
    println!("exec of a 3-access all-L1-hit unit: {exec_ns:.1} ns; with the builder refilling it each time: {built_ns:.1} ns");
    assert!(core.now() > 0);
}

/// Every access hits; running a region's code stalls the front end `stall` ps.
struct CodeStall {
    stall: Ps,
    asked: Vec<(CodeRegion, Ps)>,
}

impl MemPort for CodeStall {
    fn access(&mut self, _core: usize, _addr: u64, _write: bool, _now: Ps) -> AccessCost {
        AccessCost::L1_HIT
    }

    fn fetch_code(&mut self, _core: usize, region: CodeRegion, now: Ps) -> Ps {
        self.asked.push((region, now));
        self.stall
    }
}

#[test]
fn code_misses_stall_before_the_instructions_and_land_in_the_units_category() {
    let mut core = Core::new(0, &simple(true, 128, 6)).unwrap();
    let mut mem = CodeStall { stall: 40 * PS_PER_NS, asked: Vec::new() };
    let region = CodeRegion::kernel(3, 4096);
    let mut w = Work::new(Category::Proto);
    w.code(region).instr(10);
    // 40 ns of fetch, then 10 instructions at 1 ns.
    assert_eq!(core.exec(&w, &mut mem), 50 * PS_PER_NS);
    assert_eq!(mem.asked, vec![(region, 0)]);
    assert_eq!(core.account().time_ps(Category::Proto), 50 * PS_PER_NS);
    assert_eq!(core.result_json()["fetch_stall_ps"], 40 * PS_PER_NS);
    // No region, or one of 0 bytes: the memory system is not asked.
    w.reset(Category::Proto).instr(10);
    core.exec(&w, &mut mem);
    w.reset(Category::Proto).code(CodeRegion::user(300, 0)).instr(10);
    core.exec(&w, &mut mem);
    assert_eq!(mem.asked.len(), 1);
    assert_eq!(core.now(), 70 * PS_PER_NS);
}

/// Answers misses (at or above `MISS_BASE`) with a latency that depends on
/// the address and on how many accesses came before, and logs every access
/// with its issue time: a memory system whose answers change over time.
#[derive(Default)]
struct LoggingMemory {
    log: Vec<(u64, bool, Ps)>,
}

impl MemPort for LoggingMemory {
    fn access(&mut self, _core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        self.log.push((addr, write, now));
        if addr < MISS_BASE {
            return AccessCost { latency_ps: 1_000, l1_hit: true, queued_ps: 0 };
        }
        AccessCost::miss(40_000 + (addr / 64 % 7) * 9_000 + self.log.len() as Ps * 500)
    }
}

/// Hits, misses, stores that fill the store buffer, a dependent load and an atomic.
fn mixed_unit() -> Work {
    let mut w = Work::new(Category::App);
    for i in 0..48u64 {
        w.instr(3 + i % 5);
        match i % 8 {
            0..=3 => w.read(MISS_BASE + i * 64),
            4 => w.write(MISS_BASE + 0x10_0000 + i * 64),
            5 => w.read(i * 64),
            6 => w.read_after(MISS_BASE + 0x20_0000 + i * 64),
            _ => w.atomic(MISS_BASE + 0x30_0000 + i * 64),
        };
    }
    w.instr(25);
    w
}

/// [`mixed_unit`] run at once from 7 ns on a small core: its config,
/// the unit, the start, the core after it, its memory's log, and its end.
fn mixed_unit_at_once(out_of_order: bool) -> (CoreConfig, Work, Ps, Core, LoggingMemory, Ps) {
    let cfg = CoreConfig { sq_entries: 4, ..simple(out_of_order, 12, 3) };
    let (w, start) = (mixed_unit(), 7_000);
    let mut once = Core::new(0, &cfg).unwrap();
    once.idle_until(start);
    let mut mem = LoggingMemory::default();
    let end = once.exec(&w, &mut mem);
    (cfg, w, start, once, mem, end)
}

#[test]
fn a_unit_stopped_at_horizons_and_resumed_runs_as_at_once() {
    for out_of_order in [true, false] {
        let (cfg, w, start, once, mem, end) = mixed_unit_at_once(out_of_order);
        let times: Vec<Ps> = mem.log.iter().map(|e| e.2).collect();
        // Stop before each access in turn, then go on one access at a time:
        // the same accesses at the same times, the same end and charges.
        for first in 0..times.len() {
            let mut core = Core::new(0, &cfg).unwrap();
            core.idle_until(start);
            let mut m = LoggingMemory::default();
            let mut horizon = times[first] - 1;
            let mut done = core.exec_until(&w, &mut m, horizon);
            let mut stops = 0;
            while !done {
                let at = core.pending_at().unwrap();
                assert!(at > horizon, "it stopped before an access past its horizon");
                assert_eq!(at, times[m.log.len()], "at the next access's issue time");
                assert_eq!(core.now(), start, "the core's clock waits for the unit");
                horizon = at;
                done = core.resume(&mut m, horizon);
                stops += 1;
            }
            assert_eq!(m.log, mem.log, "out_of_order {out_of_order}, first stop before access {first}");
            assert_eq!(core.now(), end);
            assert!(core.pending_at().is_none());
            assert_eq!(core.account().time_ps(Category::App), once.account().time_ps(Category::App));
            assert_eq!(core.result_json()["stall_ps"], once.result_json()["stall_ps"]);
            assert_eq!(core.result_json()["miss_windows"], once.result_json()["miss_windows"]);
            assert_eq!(core.result_json()["store_buffer_full_ps"], once.result_json()["store_buffer_full_ps"]);
            assert_eq!(core.result_json()["suspended_units"], 1);
            assert_eq!(core.result_json()["suspensions"], stops);
        }
        // A horizon past the whole unit: it runs to its end at once.
        let mut core = Core::new(0, &cfg).unwrap();
        core.idle_until(start);
        assert!(core.exec_until(&w, &mut LoggingMemory::default(), Ps::MAX - 1));
        assert_eq!((core.now(), core.result_json()["suspended_units"].clone()), (end, 0.into()));
    }
}

/// [`LoggingMemory`] whose load misses wait in a queue: each comes back
/// with a ticket, and its completion (issue + the latency it would have
/// had) is given only once [`serve`](Self::serve) has run, or when forced.
#[derive(Default)]
struct DeferredMemory {
    inner: LoggingMemory,
    /// By ticket: completion, served, taken.
    reads: Vec<(Ps, bool, bool)>,
}

impl DeferredMemory {
    fn serve(&mut self) {
        for r in &mut self.reads {
            r.1 = true;
        }
    }
}

impl MemPort for DeferredMemory {
    fn access(&mut self, core: usize, addr: u64, write: bool, now: Ps) -> AccessCost {
        self.inner.access(core, addr, write, now)
    }

    fn load_later(&mut self, core: usize, addr: u64, now: Ps) -> (AccessCost, Option<crate::engine::Ticket>) {
        let c = self.inner.access(core, addr, false, now);
        if c.l1_hit {
            return (c, None);
        }
        self.reads.push((now + c.latency_ps, false, false));
        (AccessCost { latency_ps: 0, ..c }, Some((self.reads.len() - 1) as crate::engine::Ticket))
    }

    fn take_read(&mut self, ticket: crate::engine::Ticket, force: bool) -> Option<Ps> {
        let r = &mut self.reads[ticket as usize];
        assert!(!r.2, "ticket {ticket} taken twice");
        (r.1 || force).then(|| {
            r.2 = true;
            r.0
        })
    }
}

#[test]
fn a_unit_whose_loads_wait_in_a_queue_stops_until_the_memory_serves_them_and_runs_as_at_once() {
    for out_of_order in [true, false] {
        let (cfg, w, start, once, mem, end) = mixed_unit_at_once(out_of_order);
        // Held with no horizon in the way: it stops only for its queued loads.
        let mut core = Core::new(0, &cfg).unwrap();
        core.idle_until(start);
        let mut m = DeferredMemory::default();
        let mut done = core.exec_until(&w, &mut m, Ps::MAX - 1);
        let mut waits = 0;
        while !done {
            assert_eq!(core.pending_at(), Some(Ps::MAX), "waiting for the memory, not for a time");
            assert!(core.resume(&mut m, Ps::MAX - 1) == false && core.pending_at() == Some(Ps::MAX), "nothing served, nothing moves");
            m.serve();
            assert!(core.wake(start + waits));
            assert_eq!(core.pending_at(), Some(start + waits));
            assert!(!core.wake(start), "woken once");
            done = core.resume(&mut m, Ps::MAX - 1);
            waits += 1;
        }
        assert!(waits > 0);
        assert_eq!(m.inner.log, mem.log, "out_of_order {out_of_order}: the same accesses at the same times");
        assert!(m.reads.iter().all(|r| r.2), "every queued read taken");
        assert_eq!(core.now(), end);
        let (r, o) = (core.result_json(), once.result_json());
        for k in ["stall_ps", "miss_windows", "load_misses", "store_buffer_full_ps"] {
            assert_eq!(r[k], o[k], "{k}");
        }
        assert_eq!(r["memory_waits"].as_u64(), Some(2 * waits), "each wait stops twice: once asked in vain");
        // A unit finished at once (an application that needs the core) forces the memory.
        let mut core = Core::new(0, &cfg).unwrap();
        core.idle_until(start);
        let mut m = DeferredMemory::default();
        if !core.exec_until(&w, &mut m, Ps::MAX - 1) {
            assert!(core.resume(&mut m, Ps::MAX));
        }
        assert_eq!((core.now(), &m.inner.log), (end, &mem.log));
    }
}

#[test]
fn a_doorbell_store_stalls_its_time_whatever_the_clock() {
    for freq_hz in [1_000_000_000, 3_000_000_000] {
        let cfg = CoreConfig { freq_hz, mmio_write_ps: 14_000, ..simple(true, 128, 6) };
        let mut core = Core::new(0, &cfg).unwrap();
        core.exec_cycles(Category::Tx, 3);
        let before = core.now();
        assert_eq!(core.mmio_write(Category::Tx), before + 14_000);
        let cycles = core.account().result_json()["cycles"]["tx"].as_f64().unwrap();
        assert!((cycles - (3.0 + 14e-9 * freq_hz as f64)).abs() < 1e-6, "{cycles}");
        assert_eq!(core.result_json()["mmio_writes"].as_u64(), Some(1));
    }
}
