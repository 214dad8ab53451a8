//! ipfwd: Linux IP forwarding (kernel stack only). After the stack's receive
//! processing (`stack/kernel/forward.rs`) each packet gets a route lookup
//! in the FIB — `fib_table_lookup` walks the LC-trie from its root to a
//! leaf, each node's address read from its parent (dependent loads) —,
//! `ip_forward` (the TTL decremented and the checksum updated in place,
//! RFC 1141, on the real bytes; a packet whose TTL would reach 0 is dropped)
//! and the neighbour's cached hardware header written in front of it
//! (`neigh_hh_output`: the Ethernet addresses of the egress port and of the
//! station behind it; the instructions of IP output are the stack's
//! `ip_output_instr`, as for any IP packet it sends). The stack then queues
//! it on the egress port's qdisc and driver. The lookup's and `ip_forward`'s
//! cycles count as `app` (the forwarding decision).
//!
//! Simplified: one route per port (the trie's depth does not grow with a
//! full routing table; `host.app.ipfwd.fib_lines` sets it); no ICMP time
//! exceeded, no fragmentation, no netfilter hooks.

use serde::{Deserialize, Serialize};

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::{ConfigError, Result};
use crate::framebuf::FrameId;
use crate::stack::{App, AppCx, Forwarding};
use crate::wire::{ethernet, ipv4};

/// Where the FIB's trie lives, beside the kernel's per-core structures.
const FIB_BASE: u64 = 0x2f00_0000;
/// The neighbour table's entry towards each port's station.
const NEIGH_BASE: u64 = 0x2f10_0000;

/// `host.app.ipfwd`: the forwarding path's work per packet.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IpfwdConfig {
    /// Trie nodes a lookup visits, one line each (root to leaf; estimate
    /// for a table of a few routes).
    pub fib_lines: u32,
    /// Instructions of the route lookup (`ip_route_input_noref` and
    /// `fib_table_lookup`; estimate).
    pub route_instr: u32,
    /// Instructions of `ip_forward` (TTL, checksum, the skb's route;
    /// estimate). IP output after it is the stack's `ip_output_instr`.
    pub forward_instr: u32,
}

impl Default for IpfwdConfig {
    fn default() -> Self {
        IpfwdConfig { fib_lines: 3, route_instr: 150, forward_instr: 100 }
    }
}

impl IpfwdConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=32).contains(&self.fib_lines) {
            return Err(ConfigError::new("app.ipfwd.fib_lines", self.fib_lines.to_string(), "1 to 32 (trie nodes per lookup)").into());
        }
        Ok(())
    }
}

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    cfg.ipfwd.validate()?;
    Ok(Box::new(Ipfwd { cfg: cfg.ipfwd }))
}

struct Ipfwd {
    cfg: IpfwdConfig,
}

impl App for Ipfwd {
    fn name(&self) -> &'static str {
        "ipfwd"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[crate::nic::Slot]) -> crate::stack::Verdict {
        super::kernel_only_burst(cx, pkts)
    }

    fn forward(&mut self, cx: &mut AppCx, frame: FrameId, buf_addr: u64) -> Forwarding {
        let c = self.cfg;
        cx.work.reset(Category::App).instr(c.route_instr as u64);
        for l in 0..c.fib_lines as u64 {
            cx.work.read_after(FIB_BASE + l * 64);
        }
        let data = cx.frames.data_mut(frame);
        let ok = ethernet::Packet::new_checked(&data[..]).is_ok_and(|e| e.ethertype() == ethernet::ETHERTYPE_IPV4)
            && ipv4::Packet::new_checked(&data[ethernet::HEADER_LEN..]).is_ok_and(|ip| ip.ttl() > 1);
        if ok {
            ipv4::Packet::new_unchecked(&mut data[ethernet::HEADER_LEN..]).decrement_ttl();
            let mut eth = ethernet::Packet::new_unchecked(&mut data[..]);
            eth.set_dst(cx.peer_mac);
            eth.set_src(cx.port_mac);
            cx.work.instr(c.forward_instr as u64).read(NEIGH_BASE + cx.core_id as u64 * 64).write(buf_addr);
        }
        cx.exec();
        if ok {
            Forwarding::Transmit
        } else {
            Forwarding::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::stack::Forwarding;
    use crate::wire::{ethernet, ipv4};

    /// A 64 B UDP frame (no FCS) with TTL `ttl`, its checksum right.
    fn frame(ttl: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 26, ttl }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
        f
    }

    /// A packet goes out with its TTL one lower, the checksum still right,
    /// and the egress port's and its station's addresses; the route walk
    /// is the configured trie lines, each waiting for the one before.
    #[test]
    fn forwards_with_ttl_checksum_and_addresses_rewritten() {
        let (f, ok, n) = super::super::tests::on_frame("ipfwd", frame(64), |a, cx, s| a.forward(cx, s.frame, s.buf_addr));
        assert_eq!(ok, Forwarding::Transmit);
        let ip = ipv4::Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum());
        let eth = ethernet::Packet::new_checked(&f[..]).unwrap();
        assert_eq!((eth.dst().0, eth.src().0), ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
        // 3 trie lines, the neighbour entry, the header written.
        assert_eq!(n, 3 + 2);
    }

    #[test]
    fn a_packet_whose_ttl_runs_out_is_dropped_untouched() {
        let (f, ok, n) = super::super::tests::on_frame("ipfwd", frame(1), |a, cx, s| a.forward(cx, s.frame, s.buf_addr));
        assert_eq!(ok, Forwarding::Drop);
        assert_eq!(f, frame(1));
        assert_eq!(n, 3, "the route lookup happened");
    }
}
