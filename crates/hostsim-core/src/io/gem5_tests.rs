//! Exact timings of gem5's I/O path with its default parameters: a 1 GHz
//! crossbar (1 ns cycles) of 16 B, frontend 2 + forward 1, response 2
//! cycles; a 50 ns Bridge with 16 + 16 slots; an IOCache of 50 + 50 cycles
//! and 20 MSHRs.

use super::*;
use crate::io::config::IoConfig;
use crate::io::IoPath;

const HOST: Ps = 80_000;

fn path() -> Gem5Io {
    Gem5Io::new(&IoConfig::gem5()).unwrap()
}

#[test]
fn one_64b_read_is_request_cache_memory_cache_response() {
    let mut p = path();
    // 3 ns across the crossbar, 50 ns tag, 80 ns memory, 50 ns response, 2 ns back.
    assert_eq!(p.dma_read(0, 64, HOST, Kind::Descriptor), 3_000 + 50_000 + HOST + 50_000 + 2_000);
    // From a time between clock edges: the crossbar takes it at the next edge.
    let t = 1_000_000_400;
    assert_eq!(p.dma_read(t, 64, HOST, Kind::Payload), 1_000_001_000 + 185_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["reads"].as_u64(), j["packets"].as_u64()), (Some(2), Some(2)));
    assert_eq!(j["up_busy_ps"], 2 * 1_000, "a read request holds its layer one cycle");
    assert_eq!(j["down_busy_ps"], 2 * 5_000, "a 64 B response: one cycle plus 64 / 16");
    assert_eq!(j["down_bytes"], 128);
    assert_eq!(j["descriptor_bytes"], 64);
}

#[test]
fn a_read_is_split_into_lines_that_queue_on_the_response_layer() {
    let mut p = path();
    // Line 2's request follows one cycle later; its response waits for line 1's five cycles.
    assert_eq!(p.dma_read(0, 128, HOST, Kind::Payload), 183_000 + 5_000 + 2_000);
    assert_eq!(p.result_json(1)["packets"], 2);
}

#[test]
fn one_64b_write_is_done_after_the_crossbar_and_the_tag_latency() {
    let mut p = path();
    assert_eq!(p.dma_write(0, 64, Kind::Payload), 3_000 + 50_000);
    // The next write waits for the first's five cycles on the layer.
    assert_eq!(p.dma_write(0, 64, Kind::Payload), 5_000 + 53_000);
    // An interrupt follows the writes.
    assert_eq!(p.msi(1_000), 58_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["up_bytes"].as_u64(), j["up_busy_ps"].as_u64()), (Some(128), Some(10_000)));
    assert_eq!(j["down_packets"], 2, "one acknowledgement per line");
}

#[test]
fn mshrs_run_out_on_the_twenty_first_line() {
    let mut p = path();
    let done: Vec<Ps> = (0..21).map(|_| p.dma_read(0, 64, HOST, Kind::Payload)).collect();
    // Line k (from 0): requests one cycle apart, responses five cycles apart.
    for (k, &d) in done.iter().enumerate().take(20) {
        assert_eq!(d, 185_000 + 5_000 * k as Ps, "line {k}");
    }
    // Line 20 arrives at 23 ns and gets line 0's MSHR when its memory answers (133 ns).
    assert_eq!(done[20], 133_000 + 50_000 + HOST + 50_000 + 2_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["mshr_full_waits"].as_u64(), j["mshr_full_wait_ps"].as_u64()), (Some(1), Some(110_000)));
    // All of them reads, each holding its MSHR 50 ns tag + 80 ns memory.
    assert_eq!((j["read_mshr_full_waits"].as_u64(), j["read_mshr_full_wait_ps"].as_u64()), (Some(1), Some(110_000)));
    assert_eq!(j["read_mshr_hold_ps"], 21 * 130_000);
    // A write behind them (at 24 ns) waits for line 1's MSHR (134 ns), then the tag latency.
    assert_eq!(p.dma_write(0, 64, Kind::Payload), 134_000 + 50_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["mshr_full_waits"].as_u64(), j["read_mshr_full_waits"].as_u64()), (Some(2), Some(1)));
    assert_eq!(j["read_mshr_hold_ps"], 21 * 130_000);
}

#[test]
fn a_doorbell_crosses_bridge_and_crossbar() {
    let mut p = path();
    // 50 ns bridge, then 3 cycles of crossbar header.
    assert_eq!(p.mmio_write(0, 4), 53_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["pio_busy_ps"].as_u64(), j["pio_resp_busy_ps"].as_u64()), (Some(2_000), Some(1_000)));
    assert_eq!(j["doorbell_bytes"], 4);
}

#[test]
fn a_burst_of_doorbells_fills_the_bridges_response_queue() {
    let mut p = path();
    let t: Vec<Ps> = (0..17).map(|_| p.mmio_write(0, 4)).collect();
    // Each holds the PIO layer two cycles.
    for (k, &d) in t.iter().enumerate().take(16) {
        assert_eq!(d, 53_000 + 2_000 * k as Ps, "write {k}");
    }
    // Write 0's response left the bridge at 53 + 2 + 50 = 105 ns: write 16 enters then.
    assert_eq!(t[16], 105_000 + 50_000 + 3_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["bridge_req_full_waits"].as_u64(), j["bridge_req_full_wait_ps"].as_u64()), (Some(1), Some(50_000)));
    assert_eq!((j["bridge_resp_full_waits"].as_u64(), j["bridge_resp_full_wait_ps"].as_u64()), (Some(1), Some(55_000)));
}

#[test]
fn without_an_iocache_dma_fills_the_dma_bridge() {
    let mut cfg = IoConfig::gem5();
    cfg.iocache.enabled = false;
    assert_eq!(cfg.request_latency_ps(), 53_000);
    let mut p = Gem5Io::new(&cfg).unwrap();
    let done: Vec<Ps> = (0..17).map(|_| p.dma_read(0, 64, HOST, Kind::Payload)).collect();
    // 3 ns, 50 ns bridge, 80 ns memory, 50 ns bridge back, 2 ns.
    assert_eq!(done[0], 185_000);
    for (k, &d) in done.iter().enumerate().take(16) {
        assert_eq!(d, 185_000 + 5_000 * k as Ps, "line {k}");
    }
    // Line 16 (at 19 ns) waits for line 0's response to leave the bridge (183 ns).
    assert_eq!(done[16], 183_000 + 50_000 + HOST + 50_000 + 2_000);
    let j = p.result_json(1_000_000);
    assert_eq!((j["bridge_resp_full_waits"].as_u64(), j["bridge_resp_full_wait_ps"].as_u64()), (Some(1), Some(130_000)));
    assert_eq!(j["bridge_req_full_waits"], 1);
    assert_eq!(j["mshr_full_waits"], 0);
}

#[test]
fn utilisation_never_passes_one_and_stats_reset() {
    let mut p = path();
    for _ in 0..1_000 {
        p.dma_write(0, 1518, Kind::Payload);
        p.dma_read(0, 1518, HOST, Kind::Payload);
    }
    let j = p.result_json(1_000);
    for k in ["up_util", "down_util", "pio_util", "pio_resp_util"] {
        let u = j[k].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&u), "{k} = {u}");
    }
    assert!(j["up_util"].as_f64().unwrap() > 0.99, "back to back: the layer is always busy");
    let mut v = vec![];
    p.report_stats(&mut StatSink::new(&mut v).scope("iobus"));
    let get = |n: &str| v.iter().find(|s| s.name == n).map(|s| s.value.as_f64());
    assert_eq!(get("iobus.writes"), Some(1_000.0));
    assert_eq!(get("iobus.up.packets"), Some(2.0 * 1_000.0 * 24.0));
    p.reset_stats();
    assert_eq!(p.result_json(1)["up_bytes"], 0);
    assert_eq!(p.result_json(1)["up_util"], 0.0);
}

#[test]
fn each_line_asks_the_memory_when_it_goes_downstream() {
    let mut cfg = IoConfig::gem5();
    cfg.iocache.mshrs = 1;
    let mut p = Gem5Io::new(&cfg).unwrap();
    let mut asked = vec![];
    // The memory answers line 0 after 80 ns, line 1 after 20 ns.
    let done = p.dma_read_with(0, 128, Kind::Payload, &mut |off, len, at| {
        asked.push((off, len, at));
        at + if off == 0 { 80_000 } else { 20_000 }
    });
    // Line 1 arrives at 4 ns and waits for line 0's MSHR until 133 ns; asked 50 ns later.
    assert_eq!(asked, vec![(0, 64, 53_000), (64, 64, 183_000)]);
    assert_eq!(done, 183_000 + 20_000 + 50_000 + 2_000);
    // On the PCIe path the memory is asked once, for the whole read, a link latency after `now`.
    let pcie = crate::pcie::PcieConfig::gen3_x16();
    let mut io = IoPath::new(&IoConfig::default(), &pcie).unwrap();
    let mut once = vec![];
    io.dma_read_from(1_000, 1500, Kind::Payload, &mut |off, len, at| {
        once.push((off, len, at));
        at + 80_000
    });
    assert_eq!(once, vec![(0, 1500, 1_000 + pcie.latency_ps)]);
}
