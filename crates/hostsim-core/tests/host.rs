//! Seeded whole-system checks of the simulated host: conservation of frames,
//! the calibration target of `testpmd io`, and the drop attribution.

use hostsim_core::config::*;
use hostsim_core::host::config::ForwardMode;
use hostsim_core::host::HostConfig;
use hostsim_core::system::checked_run as run;
use hostsim_core::system::System;
use serde_json::Value;

const US: u64 = 1_000_000;

fn host_cfg(app: &str, bytes: u32, mpps: f64) -> SimConfig {
    let mut c = SimConfig::default();
    c.app = app.into();
    c.host = Some(HostConfig::preset("altra").unwrap());
    c.loadgen.size = SizeDist::Fixed { bytes };
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: mpps * 1e6 };
    c.sim.duration_ps = 300 * US;
    c
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_frame_is_returned_or_counted_in_one_drop_counter() {
    for (app, bytes, mpps) in [("testpmd", 64, 5.0), ("testpmd", 64, 60.0), ("touchfwd", 1518, 8.0), ("touchdrop", 512, 20.0)] {
        let r = run(&host_cfg(app, bytes, mpps)).unwrap();
        let lg = &r["loadgen"];
        let d = &r["drops"];
        let drops = u(&d["dma"]) + u(&d["core"]) + u(&d["tx"]);
        assert_eq!(u(&lg["tx_packets"]), u(&lg["rx_packets"]) + drops, "{app} {bytes} B at {mpps} Mpps: {d}");
        assert_eq!(u(&lg["duplicate_packets"]) + u(&lg["invalid_packets"]), 0);
    }
}

/// With a warm-up and a long network latency, the device counts from when
/// the first frame sent after warm-up reaches it: its drops are the
/// generator's losses, frame for frame (the PMD drops a frame when it arrives).
#[test]
fn the_device_counts_over_the_window_the_generator_measures() {
    for ports in [1, 2] {
        let mut c = host_cfg("testpmd", 64, 60.0);
        c.host.as_mut().unwrap().ports = ports;
        c.host.as_mut().unwrap().nic.ports_per_nic = ports;
        // Frames sent in the last 200 µs of the warm-up arrive after it,
        // into a host that has been dropping for a while.
        c.link.propagation_ps = 200 * US;
        (c.sim.warmup_ps, c.sim.duration_ps) = (500 * US, 1000 * US);
        let r = run(&c).unwrap();
        let (lg, d) = (&r["loadgen"], &r["drops"]);
        let drops = u(&d["dma"]) + u(&d["core"]) + u(&d["tx"]);
        assert!(drops > 0, "an overload: {d}");
        assert_eq!(u(&lg["lost_packets"]), drops, "{ports} port(s): {d}");
        assert_eq!(u(&lg["tx_packets"]), u(&lg["rx_packets"]) + drops);
    }
}

/// testpmd 64 B on `altra` with `queues` queue pairs on its one core, 100 µs measured after 100 µs.
fn queues_cfg(queues: u32, mpps: f64) -> SimConfig {
    let mut c = host_cfg("testpmd", 64, mpps);
    c.host.as_mut().unwrap().queues = queues;
    c.given = vec!["host.queues".into()];
    (c.sim.warmup_ps, c.sim.duration_ps) = (100 * US, 200 * US);
    c
}

/// The device's counters run from when the first measured frame reaches it
/// to the end of the run, drain included: a forwarder without drops sends
/// what it received in the window plus the frames it held when the window
/// opened (`sim.backlog_frames.warmup_end`), exactly. Near its MSB the host
/// holds several frames at once.
#[test]
fn the_device_sends_its_window_and_what_it_held_when_the_window_opened() {
    for (queues, rate) in [(1, 5.0), (32, 1.0), (1, 25.0)] {
        let r = run(&queues_cfg(queues, rate)).unwrap();
        let (nic, held) = (&r["nic"], u(&r["sim"]["backlog_frames"]["warmup_end"]));
        assert_eq!(u(&r["loadgen"]["lost_packets"]), 0);
        assert_eq!(u(&nic["rx_packets"]), u(&r["loadgen"]["tx_packets"]));
        assert_eq!(u(&nic["tx_packets"]), u(&nic["rx_packets"]) + held, "{queues} queues at {rate} Mpps");
        if rate > 20.0 {
            assert!(held > 1, "near its MSB the host holds frames: {held}");
        }
    }
}

/// The queues' rings do not share cache sets (`host::RING_STRIDE`): one core
/// polling 32 idle queues and one busy one finds each idle queue's
/// descriptor in its L1D, as with one queue, so an empty poll costs alike.
#[test]
fn polling_many_idle_queues_hits_in_the_l1d() {
    let per_poll = |queues: u32| {
        let r = run(&queues_cfg(queues, 1.0)).unwrap();
        let core = &r["cores"][0];
        let idle = core["account"]["cycles"]["idle"].as_f64().unwrap();
        (idle / u(&core["pmd"]["empty_polls"]) as f64, u(&r["mem"]["l1d"]["evictions"]))
    };
    let ((one, _), (many, evicted)) = (per_poll(1), per_poll(32));
    assert!(many < 1.2 * one, "an empty poll of one of 32 queues: {many:.1} cycles, of one queue: {one:.1}");
    assert!(evicted < 100, "L1D evictions with 32 queues: {evicted}");
}

/// The driver's per-burst work (a doorbell, a descriptor read, the burst's
/// set-up) is shared by the packets of a burst: testpmd io loaded to full
/// bursts costs fewer cycles per packet in RX and TX than at a rate that
/// leaves each poll one packet (on `altra`: 1.0 packets per burst at 1 Mpps,
/// 1.6 at 26 Mpps; 178 and 74 rx+tx cycles per packet). (The constants themselves are
/// fitted to the forwarding study's Table II: python/hostsim/calibration.)
#[test]
fn testpmd_io_shares_its_burst_costs_among_the_burst() {
    let cycles = |mpps: f64| {
        let mut c = host_cfg("testpmd", 64, mpps);
        c.host.as_mut().unwrap().app.forward_mode = ForwardMode::Io;
        c.sim.warmup_ps = 50 * US;
        let r = run(&c).unwrap();
        assert_eq!(r["loadgen"]["drop_rate"], 0.0, "{mpps} Mpps");
        let cpp = &r["cpu"]["cycles_per_packet"];
        assert_eq!(cpp["app"].as_f64().unwrap(), 0.0, "io touches no packet");
        let burst = r["cores"][0]["rx_burst_packets"].as_array().unwrap();
        let (n, sum) = burst.iter().enumerate().skip(1).fold((0.0, 0.0), |(n, s), (k, c)| (n + c.as_f64().unwrap(), s + k as f64 * c.as_f64().unwrap()));
        (cpp["rx"].as_f64().unwrap() + cpp["tx"].as_f64().unwrap(), sum / n)
    };
    let ((low, low_burst), (high, high_burst)) = (cycles(1.0), cycles(26.0));
    assert!(low_burst < 1.05 && high_burst > 1.4, "packets per burst: {low_burst:.2} at 1 Mpps, {high_burst:.2} at 26 Mpps");
    assert!(high < 0.6 * low, "rx+tx cycles per packet: {low:.1} at 1 Mpps, {high:.1} at 26 Mpps");
}

#[test]
fn testpmd_txonly_transmits_what_the_core_builds() {
    // The load generator offers almost nothing; the core builds 64 B frames
    // and the NIC sends them as fast as the TX path allows.
    let mut c = host_cfg("testpmd", 64, 0.01);
    c.host.as_mut().unwrap().app.forward_mode = ForwardMode::Txonly;
    let r = run(&c).unwrap();
    let tx = u(&r["nic"]["tx_packets"]);
    let built = u(&r["app"]["txonly_built"]);
    let unsent = u(&r["pmd"]["txonly_unsent"]);
    assert!(tx > 1000, "{tx}");
    // Every frame built is sent, refused by a full TX ring, or still in the ring at the end.
    assert!(tx + unsent <= built && built - tx - unsent <= c.host.as_ref().unwrap().pmd.txd as u64, "{built} {tx} {unsent}");
    // They come back to the generator untagged; none is mistaken for a reply.
    assert_eq!(u(&r["loadgen"]["rx_packets"]), 0);
    assert!(u(&r["loadgen"]["invalid_packets"]) > 0);
    // Never faster than line rate (txonly keeps sending through the drain).
    let window_s = u(&r["sim"]["simulated_ps"]) as f64 * 1e-12;
    assert!(tx as f64 / window_s <= 148.81e6 * 1.001, "{tx}");
}

#[test]
fn txonly_is_held_to_the_wire_by_the_tx_fifo() {
    // On a 10 Gb/s link the TX FIFO, not the ring, paces the payload reads:
    // what leaves is line rate, and the frames in flight stay bounded.
    let mut short = host_cfg("testpmd", 64, 0.01);
    short.link.rate_bps = 10_000_000_000;
    short.host.as_mut().unwrap().app.forward_mode = ForwardMode::Txonly;
    let mut long = short.clone();
    long.sim.duration_ps *= 4;
    let (a, b) = (System::new(&short).unwrap(), System::new(&long).unwrap());
    let run_sys = |mut s: System| {
        let end = s.run();
        (end, s.frame_buffers())
    };
    let (end, buffers_short) = run_sys(a);
    let (_, buffers_long) = run_sys(b);
    assert!(buffers_long <= buffers_short + 64, "{buffers_short} -> {buffers_long}");
    let r = run(&short).unwrap();
    let line_pps = 10e9 / (84.0 * 8.0);
    // What reached the generator (untagged) went over the wire at line rate at most;
    // what the NIC read beyond that is at most a FIFO's worth, still queued.
    let delivered = u(&r["loadgen"]["invalid_packets"]) as f64;
    assert!(delivered / (end as f64 * 1e-12) <= line_pps * 1.001, "{delivered} frames in {end} ps");
    assert!(delivered / (end as f64 * 1e-12) >= line_pps * 0.9, "{delivered} frames in {end} ps");
    let read = u(&r["nic"]["tx_packets"]) as f64;
    let fifo_frames = short.host.as_ref().unwrap().nic.tx_fifo_bytes as f64 / 64.0;
    let on_the_wire = line_pps * short.link.propagation_ps as f64 * 1e-12 + 2.0;
    assert!(read <= delivered + fifo_frames + on_the_wire, "{read} read, {delivered} delivered");
}

#[test]
fn mbufs_must_hold_the_largest_frame() {
    let mut c = host_cfg("testpmd", 64, 1.0);
    c.loadgen.size = SizeDist::Imix;
    c.host.as_mut().unwrap().pmd.mempool.buf_bytes = 192;
    let e = run(&c).unwrap_err().to_string();
    assert!(e.starts_with("host.pmd.mempool.buf_bytes"), "{e}");
}

/// The pool of a preset grows with the queues (`HostConfig::pool_mbufs`);
/// one too large for the simulated memory is named by what the user set.
#[test]
fn many_queues_get_a_pool_that_fills_their_rings() {
    let mut c = host_cfg("testpmd", 64, 1.0);
    c.sim.duration_ps = 50 * US;
    c.given = vec!["host.queues".into()];
    c.host.as_mut().unwrap().queues = 100;
    let r = run(&c).unwrap();
    assert!(u(&r["loadgen"]["rx_packets"]) > 0);
    // 2 ports × 64 queues × 4096-descriptor rings: 1 M mbufs, past the 256 MiB the pool has.
    let h = c.host.as_mut().unwrap();
    (h.nic.nics, h.ports, h.queues, h.pmd.rxd, h.pmd.txd) = (2, 2, 64, 4096, 4096);
    c.given = vec!["host.pmd.rxd".into(), "host.queues".into()];
    let e = System::new(&c).err().expect("too large a pool").to_string();
    assert!(e.starts_with("host.queues: invalid value '64' (allowed: less: the rings and the cores' mempool caches would hold 1049108 mbufs"), "{e}");
}

/// An Ethernet/IPv4/UDP frame from the generator's addresses to the store's port.
fn memcached_request(id: u16, ascii: &str) -> Vec<u8> {
    use hostsim_core::wire::{ethernet, ipv4, memcached, udp};
    let mut payload = memcached::Repr { request_id: id, sequence: 0, datagrams: 1 }.to_bytes().to_vec();
    payload.extend_from_slice(ascii.as_bytes());
    let mut f = vec![0u8; 42 + payload.len()];
    let mac = |s: &str| ethernet::parse_mac(s).unwrap();
    ethernet::Repr { dst: mac("02:00:00:00:00:02"), src: mac("02:00:00:00:00:01"), ethertype: ethernet::ETHERTYPE_IPV4 }
        .emit(&mut ethernet::Packet::new_unchecked(&mut f[..]));
    ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 8 + payload.len(), ttl: 64 }
        .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
    udp::Repr { src_port: 1024, dst_port: 11211, payload_len: payload.len() }.emit(&mut udp::Packet::new_unchecked(&mut f[34..]));
    f[42..].copy_from_slice(&payload);
    f
}

#[test]
fn memcached_on_the_pmd_answers_a_replayed_trace() {
    use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
    let dir = std::env::temp_dir().join(format!("hostsim-kvs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trace, capture) = (dir.join("requests.pcap"), dir.join("replies.pcap"));
    let requests = ["set k1 0 0 5\r\nhello\r\n", "get k1\r\n", "get nope\r\n", "delete k1\r\n", "get k1\r\n", "bogus\r\n"];
    let mut w = PcapWriter::new(std::fs::File::create(&trace).unwrap()).unwrap();
    for (i, r) in requests.iter().enumerate() {
        let f = memcached_request(i as u16, r);
        w.write_packet(&PcapPacket::new(std::time::Duration::from_micros(2 * i as u64), f.len() as u32, &f)).unwrap();
    }
    drop(w);
    let mut c = host_cfg("memcached", 64, 1.0);
    c.sim.duration_ps = 50 * US;
    // Requests captured before the NIC pads them are runts.
    c.loadgen.trace = Some(serde_json::from_value(serde_json::json!({"path": trace.to_str().unwrap(), "pad_runts": true})).unwrap());
    c.loadgen.capture_rx = Some(capture.to_str().unwrap().to_string());
    let r = run(&c).unwrap();
    assert_eq!(u(&r["app"]["requests"]), 6);
    let mut replies = vec![];
    let mut rd = PcapReader::new(std::fs::File::open(&capture).unwrap()).unwrap();
    while let Some(p) = rd.next_packet() {
        let p = p.unwrap();
        let d = &p.data[..];
        // Back to the sender: MACs and UDP ports swapped.
        assert_eq!(&d[..6], &[2, 0, 0, 0, 0, 1]);
        assert_eq!(u16::from_be_bytes([d[34], d[35]]), 11211);
        let udp_len = u16::from_be_bytes([d[38], d[39]]) as usize;
        let id = u16::from_be_bytes([d[42], d[43]]);
        replies.push((id, String::from_utf8_lossy(&d[50..34 + udp_len]).to_string()));
    }
    replies.sort();
    let expect = ["STORED\r\n", "VALUE k1 0 5\r\nhello\r\nEND\r\n", "END\r\n", "DELETED\r\n", "END\r\n", "ERROR\r\n"];
    let got: Vec<&str> = replies.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(got, expect);
    assert_eq!(u(&r["app"]["get_hits"]), 1);
    assert_eq!(u(&r["app"]["get_misses"]), 2);
    std::fs::remove_dir_all(&dir).ok();
}

/// Without DCA, a 64 B frame (60 B after the FCS is stripped) ends part
/// way into its buffer's line: each one is a partial write that reads the
/// line from DRAM first. A 68 B frame fills the line (64 B): no data line
/// is partial, and the partial writes left are the descriptor write-backs.
/// With the FCS kept in the buffer (`nic.keep_crc`), the 64 B frame fills
/// its line instead.
#[test]
fn frames_that_end_inside_a_line_cost_a_read_without_dca() {
    let mem_keep = |bytes: u32, keep_crc: bool| {
        let mut c = host_cfg("testpmd", bytes, 5.0);
        c.host.as_mut().unwrap().app.forward_mode = ForwardMode::Io;
        c.host.as_mut().unwrap().mem.llc.dca.enabled = false;
        c.host.as_mut().unwrap().nic.keep_crc = keep_crc;
        (c.sim.warmup_ps, c.sim.duration_ps) = (100 * US, 300 * US);
        let r = run(&c).unwrap();
        assert_eq!(u(&r["accounting"]["measured"]["returned"]), 1000);
        r["mem"].clone()
    };
    let mem_of = |bytes: u32| mem_keep(bytes, false);
    let (m64, m68) = (mem_of(64), mem_of(68));
    assert_eq!(u(&mem_keep(64, true)["partial_writes"]), u(&m68["partial_writes"]), "64 B kept whole fills the line");
    let (w64, w68) = (u(&m64["partial_writes"]), u(&m68["partial_writes"]));
    assert_eq!(w64 - w68, 1000, "one partial data line per 64 B frame, none per 68 B frame");
    // Each data line reads DRAM. The descriptor write-backs' lines are
    // partial at both sizes and read DRAM unless the core still holds the
    // line, which depends on timing: their share moves by a few percent.
    let (r64, r68) = (u(&m64["partial_write_reads"]), u(&m68["partial_write_reads"]));
    assert!((900..=1100).contains(&(r64 - r68)), "DRAM reads to merge: {r64} at 64 B, {r68} at 68 B");
    let dram = |m: &Value| u(&m["dram"]["bytes_read_device"]);
    assert_eq!(dram(&m64) - dram(&m68), 64 * (r64 - r68), "each merge read is one line read by the device");
}

/// DRAM that cannot keep up says so: without DCA, 1518 B frames at
/// 0.8 Mpps write 1.2 GB/s into one 0.5 GB/s channel (plain channels: a
/// 128 ns burst is longer than the preset's idle latency allows with banks);
/// the same run with the preset's DRAM gives no such warning.
#[test]
fn an_overloaded_dram_is_named_in_the_warnings() {
    let warned = |slow: bool| {
        let mut c = host_cfg("testpmd", 1518, 0.8);
        let h = c.host.as_mut().unwrap();
        h.mem.llc.dca.enabled = false;
        if slow {
            (h.mem.dram.channels, h.mem.dram.channel_bandwidth_bytes_per_s) = (1, 500_000_000);
            h.mem.dram.model = hostsim_core::mem::DramModel::Channel;
        }
        let r = run(&c).unwrap();
        r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with("DRAM transfers waited"))
    };
    assert!(warned(true));
    assert!(!warned(false));
}

/// rxptx spends its processing interval once per received burst, as the
/// kernel-bypass study defines it (receive a burst, wait, transmit the
/// burst), or once per packet with `proc_per = packet`: at 1 µs and 4 Mpps
/// the first keeps up (a burst of several packets costs one interval), the
/// second cannot (a packet costs more than four interarrival times).
#[test]
fn rxptx_spends_one_processing_interval_per_burst_or_per_packet() {
    use hostsim_core::apps::config::ProcPer;
    let run_per = |per: ProcPer| {
        let mut c = host_cfg("rxptx", 64, 4.0);
        let h = c.host.as_mut().unwrap();
        (h.app.proc_time_ps, h.app.proc_per) = (US, per);
        c.sim.duration_ps = 2000 * US;
        run(&c).unwrap()
    };
    let cycles_per_us = host_cfg("rxptx", 64, 4.0).host.unwrap().cpu.freq_hz as f64 / 1e6;
    for (per, r) in [(ProcPer::Burst, run_per(ProcPer::Burst)), (ProcPer::Packet, run_per(ProcPer::Packet))] {
        let core = &r["cores"][0];
        let hist = core["rx_burst_packets"].as_array().unwrap();
        let bursts: u64 = hist[1..].iter().map(u).sum();
        let packets = u(&core["packets"]);
        let intervals = if per == ProcPer::Burst { bursts } else { packets } as f64;
        let app = core["account"]["cycles"]["app"].as_f64().unwrap();
        // The spin plus the MAC swaps (a few tens of cycles a packet).
        let swaps = app - intervals * cycles_per_us;
        assert!(swaps >= 0.0 && swaps < 100.0 * packets as f64, "{per:?}: app {app} cycles, {intervals} intervals");
        let (sent, received) = (u(&r["loadgen"]["tx_packets"]), u(&r["loadgen"]["rx_packets"]));
        if per == ProcPer::Burst {
            assert!(bursts * 2 < packets, "bursts of several packets: {bursts} bursts, {packets} packets");
            assert_eq!(received, sent, "{}", r["drops"]);
        } else {
            // About one packet per 1.04 µs while 4 arrive, for the 2 ms of
            // sending and the 1 ms drain: the rest is dropped or queued.
            assert!(received * 2 < sent, "{received} of {sent} returned");
        }
    }
}

/// A `host.app` setting of another application that the user gave
/// (`given`) is said to be ignored, whatever its value; the application's
/// own settings, and settings nobody gave, are not.
#[test]
fn settings_of_another_application_are_said_to_be_ignored() {
    let ignored = |r: &Value| -> Vec<String> {
        r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).filter(|w| w.contains("not read by --app")).map(String::from).collect()
    };
    let mut c = host_cfg("testpmd", 64, 1.0);
    c.sim.duration_ps = 50 * US;
    assert!(ignored(&run(&c).unwrap()).is_empty(), "defaults are read by nobody in particular");
    let app = &mut c.host.as_mut().unwrap().app;
    app.proc_time_ps = 2 * US;
    app.echo_port = 7;
    assert!(ignored(&run(&c).unwrap()).is_empty(), "values nobody gave (a preset's) are not the user's: {:?}", ignored(&run(&c).unwrap()));
    c.given = ["host.app.proc_time_ps", "host.app.echo_port", "host.app.forward_mode", "host.cores"].map(String::from).to_vec();
    let w = ignored(&run(&c).unwrap());
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("host.app.proc_time,") || w[0].contains("host.app.proc_time "), "{}", w[0]);
    assert!(w[0].contains("host.app.echo_port") && w[0].contains("--app testpmd"), "{}", w[0]);
    assert!(!w[0].contains("forward_mode"), "testpmd reads its forwarding mode: {}", w[0]);
    c.app = "rxptx".into();
    let w = ignored(&run(&c).unwrap());
    assert!(w.len() == 1 && w[0].contains("forward_mode") && !w[0].contains("proc_time"), "{w:?}");
    // Given at its default value (macswap), it is still the user's and still ignored.
    assert_eq!(c.host.as_ref().unwrap().app.forward_mode, ForwardMode::default());
    c.app = "l2fwd".into();
    c.given = vec!["host.app.forward_mode".into(), "host.app.kvs.buckets".into(), "host.app.kvs.items".into()];
    let w = ignored(&run(&c).unwrap());
    assert!(w.len() == 1 && w[0].starts_with("host.app.forward_mode, host.app.kvs.buckets, host.app.kvs.items set but not read by --app l2fwd"), "{w:?}");
}

/// testpmd txonly's frames are built in recycled buffers whose payload can
/// still hold an old generator tag: none of them is a reply.
#[test]
fn txonly_frames_are_never_taken_for_replies() {
    let mut c = host_cfg("testpmd", 64, 74.0);
    c.host.as_mut().unwrap().app.forward_mode = ForwardMode::Txonly;
    c.sim.duration_ps = 1000 * US;
    let r = run(&c).unwrap();
    let lg = &r["loadgen"];
    assert_eq!((u(&lg["rx_packets"]), u(&lg["latency_ns"]["count"])), (0, 0), "{lg}");
    assert!(u(&lg["invalid_packets"]) > 0, "txonly's frames reach the generator: {lg}");
}

/// The L2 prefetcher of `altra` runs ahead of a core that reads every line
/// of its frames: its lines are found (on their way or arrived), the core
/// misses its L2 less than without it, and every line it fetched is
/// accounted as found, evicted unused or still in the L2.
#[test]
fn the_l2_prefetcher_fetches_ahead_of_a_core_touching_whole_frames() {
    let with = run(&host_cfg("touchfwd", 1518, 4.0)).unwrap();
    let mut c = host_cfg("touchfwd", 1518, 4.0);
    c.host.as_mut().unwrap().mem.l2_prefetch.degree = 0;
    let without = run(&c).unwrap();
    let pf = &with["mem"]["l2_prefetch"];
    assert!(u(&pf["issued"]) > 1000 && u(&pf["hits"]) > u(&pf["issued"]) / 2, "{pf}");
    assert!(u(&pf["hits"]) + u(&pf["unused"]) <= u(&pf["issued"]), "{pf}");
    assert_eq!(u(&without["mem"]["l2_prefetch"]["issued"]), 0);
    let misses = |r: &Value| u(&r["mem"]["l2"]["misses"]);
    assert!(misses(&with) < misses(&without), "{} vs {}", misses(&with), misses(&without));
    // Same frames either way: the prefetcher changes timing, not the ledger.
    assert_eq!(u(&with["loadgen"]["tx_packets"]), u(&without["loadgen"]["tx_packets"]));
}
