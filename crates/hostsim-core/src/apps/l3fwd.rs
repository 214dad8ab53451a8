//! l3fwd (DPDK `examples/l3fwd`, LPM mode): for each packet of a burst the
//! destination address is looked up in an `rte_lpm` table — one read of
//! its `tbl24` entry (4 B per /24, a 64 MiB array), whose address comes
//! from the header, so the load waits for it — the RFC 1812 checks run,
//! the TTL is decremented and the checksum updated, and the Ethernet
//! header is rewritten for the next hop (destination the station behind
//! the egress port, source the port). Its cycles count as `app`.
//!
//! The table holds one /24 route per port, to the subnet of the station
//! behind it (as l3fwd's route array has one per port); a destination with
//! no route goes back out the port it came in on (`lpm_get_ipv4_dst_port`).
//! Simplified: the model's forwarding streams have one TX queue each, so
//! a packet whose route leads anywhere but the stream's port (the one
//! `host.app.port_topology` gives: the packet's route must be the subnet
//! of the station behind it) is dropped and counted (`other_port`); send
//! frames addressed to the stations across (`loadgen.address = stations`,
//! which `--app l3fwd` implies). No /25 or longer routes (no `tbl8`
//! reads); frames that are not IPv4 are dropped (`not_ip`).
//!
//! Transmission as l3fwd's `send_packetsx4`: a burst of at least
//! `MAX_TX_BURST` (`MAX_PKT_BURST` / 2 = 16) packets for a port whose TX
//! buffer is empty goes to tx_burst at once; smaller ones join the buffer,
//! sent when it holds `host.pmd.tx_buffer` packets and flushed every
//! `host.pmd.tx_drain_ps` (`BURST_TX_DRAIN_US`, 100 µs).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::framebuf::Fate;
use crate::nic::Slot;
use crate::stack::{App, AppCx, TxBuffering, Verdict};
use crate::wire::{ethernet, ipv4};

/// Where the LPM's tbl24 lives.
const TBL24_BASE: u64 = 0x40_0000_0000;

/// `host.app.l3fwd`: the work per packet.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct L3fwdConfig {
    /// Instructions of the LPM lookup (the tbl24 index and entry checks; estimate).
    pub lookup_instr: u32,
    /// Instructions of the RFC 1812 checks, the TTL and checksum update and
    /// the Ethernet rewrite (estimate).
    pub forward_instr: u32,
}

impl Default for L3fwdConfig {
    fn default() -> Self {
        L3fwdConfig { lookup_instr: 20, forward_instr: 40 }
    }
}

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(L3fwd { cfg: cfg.l3fwd, c: Counters::default() }))
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    routed: u64,
    /// Packets whose route (or lack of one) leads to another port than the stream's.
    other_port: u64,
    not_ip: u64,
}

struct L3fwd {
    cfg: L3fwdConfig,
    c: Counters,
}

/// The /24 of an address, the tbl24 index.
fn tbl24_index(a: std::net::Ipv4Addr) -> u64 {
    (u32::from(a) >> 8) as u64
}

/// l3fwd's `MAX_TX_BURST`: bursts this long skip the TX buffer.
const MAX_TX_BURST: u32 = 16;

impl App for L3fwd {
    fn name(&self) -> &'static str {
        "l3fwd"
    }

    fn tx_buffering(&self) -> TxBuffering {
        TxBuffering::SmallBursts { direct_from: MAX_TX_BURST }
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let c = self.cfg;
        cx.work.reset(Category::App);
        let out_net = tbl24_index(cx.peer_ip);
        for s in pkts {
            cx.work.read(s.buf_addr);
            let data = cx.frames.data_mut(s.frame);
            let is_ip = ethernet::Packet::new_checked(&data[..]).is_ok_and(|e| e.ethertype() == ethernet::ETHERTYPE_IPV4)
                && ipv4::Packet::new_checked(&data[ethernet::HEADER_LEN..]).is_ok();
            if !is_ip {
                self.c.not_ip += 1;
                cx.frames.end(s.frame, Fate::App);
                cx.free.push(s.mbuf);
                continue;
            }
            let dst = ipv4::Packet::new_unchecked(&data[ethernet::HEADER_LEN..]).dst();
            cx.work.instr(c.lookup_instr as u64).read_after(TBL24_BASE + tbl24_index(dst) * 4);
            if tbl24_index(dst) != out_net {
                self.c.other_port += 1;
                cx.frames.end(s.frame, Fate::App);
                cx.free.push(s.mbuf);
                continue;
            }
            ipv4::Packet::new_unchecked(&mut data[ethernet::HEADER_LEN..]).decrement_ttl();
            let mut eth = ethernet::Packet::new_unchecked(&mut data[..]);
            eth.set_dst(cx.peer_mac);
            eth.set_src(cx.port_mac);
            cx.work.instr(c.forward_instr as u64).write(s.buf_addr);
            self.c.routed += 1;
            cx.tx.push(*s);
        }
        cx.exec();
        Verdict::Listed
    }

    fn result_json(&self) -> Value {
        json!({"routed": self.c.routed, "other_port": self.c.other_port, "not_ip": self.c.not_ip})
    }

    fn reset_stats(&mut self) {
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use crate::stack::Verdict;
    use crate::wire::{ethernet, ipv4};

    /// A 64 B UDP frame (no FCS) to `dst`.
    fn frame(dst: &str) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: dst.parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 26, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
        f
    }

    /// A packet for the egress station's subnet (the test context's
    /// station is 10.0.0.1) is routed: TTL 63, checksum right, the next
    /// hop's addresses; the header line and the tbl24 entry are read, the
    /// header written. Another subnet's packet is dropped and counted.
    #[test]
    fn routes_by_the_destination_prefix() {
        let mut a = super::new(&super::AppConfig::default()).unwrap();
        let (f, v, n) = super::super::tests::with_cx(frame("10.0.0.77"), |cx, s| {
            let v = a.burst(cx, &[s]);
            assert_eq!(cx.tx.len(), 1);
            v
        });
        assert_eq!((v, n), (Verdict::Listed, 3));
        let ip = ipv4::Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.ttl() == 63 && ip.verify_checksum());
        assert_eq!((&f[..6], &f[6..12]), (&[2, 0, 0, 0, 0, 1][..], &[2, 0, 0, 0, 0, 2][..]));
        let (f, _, n) = super::super::tests::with_cx(frame("10.0.1.1"), |cx, s| {
            a.burst(cx, &[s]);
            assert_eq!((cx.tx.len(), cx.free.len()), (0, 1));
        });
        assert_eq!((n, ipv4::Packet::new_checked(&f[14..]).unwrap().ttl()), (2, 64));
        assert_eq!(a.result_json(), serde_json::json!({"routed": 1, "other_port": 1, "not_ip": 0}));
    }
}
