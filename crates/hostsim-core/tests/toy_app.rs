//! Adding an application is one file and one registry line: this file is a
//! whole application — a router hop that decrements the IPv4 TTL of every
//! packet and sends it back — and the line is `registry.add(...)` below.

use hostsim_core::apps::{self, AppConfig, Registry};
use hostsim_core::config::*;
use hostsim_core::cpu::Category;
use hostsim_core::error::Result;
use hostsim_core::host::HostConfig;
use hostsim_core::nic::Slot;
use hostsim_core::stack::{App, AppCx, Verdict};
use hostsim_core::wire::{ethernet, ipv4};
use serde_json::{json, Value};

/// Decrements the TTL (and fixes the header checksum), swaps the MACs, forwards.
struct TtlHop {
    packets: u64,
}

fn new(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(TtlHop { packets: 0 }))
}

impl App for TtlHop {
    fn name(&self) -> &'static str {
        "ttl-hop"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        cx.work.reset(Category::App);
        for s in pkts {
            // Read and write the line holding the Ethernet and IPv4 headers.
            cx.work.instr(20).read(s.buf_addr).write(s.buf_addr);
            let frame = cx.frames.data_mut(s.frame);
            ethernet::Packet::new_unchecked(&mut *frame).swap_macs();
            let l3 = ethernet::HEADER_LEN;
            frame[l3 + 8] = frame[l3 + 8].saturating_sub(1);
            ipv4::Packet::new_unchecked(&mut frame[l3..]).fill_checksum();
        }
        cx.exec();
        self.packets += pkts.len() as u64;
        Verdict::Forward
    }

    fn result_json(&self) -> Value {
        json!({"hops": self.packets})
    }

    fn reset_stats(&mut self) {
        self.packets = 0;
    }
}

#[test]
fn a_toy_application_runs_from_its_own_file_and_one_registry_line() {
    let mut registry = Registry::builtin();
    registry.add("ttl-hop", apps::PMD, |_| 0, new);

    let dir = std::env::temp_dir().join(format!("hostsim-toy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rx = dir.join("rx.pcap");
    let mut c = SimConfig::default();
    c.app = "ttl-hop".into();
    c.host = Some(HostConfig::preset("altra").unwrap());
    c.loadgen.rate = Rate { unit: RateUnit::Pps, value: 1e6 };
    c.loadgen.capture_rx = Some(rx.to_str().unwrap().into());
    c.sim.duration_ps = 100_000_000;
    let r = hostsim_core::system::checked_run_with(&c, &registry).unwrap();
    let lg = &r["loadgen"];
    assert_eq!(lg["tx_packets"], 100);
    assert_eq!(lg["rx_packets"], 100, "every frame came back");
    assert_eq!(r["app"]["name"], "ttl-hop");
    assert_eq!(r["app"]["hops"], 100);
    // The bytes changed for real: every captured reply has TTL 63 and a valid checksum.
    let file = std::fs::File::open(&rx).unwrap();
    let mut pcap = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut n = 0;
    while let Some(p) = pcap.next_packet() {
        let p = p.unwrap();
        let ip = ipv4::Packet::new_checked(&p.data[ethernet::HEADER_LEN..]).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum());
        n += 1;
    }
    assert_eq!(n, 100);
    // The built-in registry does not know it: the name is an error that lists the choices.
    let e = hostsim_core::system::run(&c).unwrap_err().to_string();
    assert!(e.starts_with("app") && e.contains("testpmd"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
