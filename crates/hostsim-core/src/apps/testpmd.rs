//! testpmd's forwarding engines (DPDK `app/test-pmd`): io (no packet
//! access), mac (rewrite both MACs: destination the peer, source the port),
//! macswap (swap them), rxonly (free), txonly (build Ethernet/IPv4/UDP
//! frames into fresh mbufs and send them, without polling RX).

use serde_json::{json, Value};

use super::config::{AppConfig, ForwardMode};
use crate::cpu::Category;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};
use crate::wire::ethernet::{self, Mac};
use crate::wire::{ipv4, udp, UDP_HEADERS};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(Testpmd { mode: cfg.forward_mode, tx_frame_bytes: cfg.tx_frame_bytes, templates: Vec::new(), built: 0 }))
}

/// txonly builds frames of `tx_frame_bytes`.
pub fn max_frame_bytes(cfg: &AppConfig) -> u32 {
    if cfg.forward_mode == ForwardMode::Txonly {
        cfg.tx_frame_bytes
    } else {
        0
    }
}

struct Testpmd {
    mode: ForwardMode,
    tx_frame_bytes: u32,
    /// txonly: the headers of the frames each port sends (built on a port's
    /// first burst, from its MAC and IP and its peer's).
    templates: Vec<(Mac, TxTemplate)>,
    /// txonly: frames built.
    built: u64,
}

impl App for Testpmd {
    fn name(&self) -> &'static str {
        "testpmd"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        cx.work.reset(Category::App);
        for s in pkts {
            match self.mode {
                ForwardMode::Io | ForwardMode::Rxonly | ForwardMode::Txonly => {}
                ForwardMode::Mac => super::rewrite_macs(cx, s),
                ForwardMode::Macswap => super::swap_macs(cx, s),
            }
        }
        cx.exec();
        if self.mode == ForwardMode::Rxonly {
            Verdict::Consume
        } else {
            Verdict::Forward
        }
    }

    fn generates(&self) -> bool {
        self.mode == ForwardMode::Txonly
    }

    fn generate(&mut self, cx: &mut AppCx, mbufs: &[(u32, u64)], out: &mut Vec<Slot>) {
        let bytes = self.tx_frame_bytes;
        let header_instr = cx.costs.header_instr as u64;
        let i = match self.templates.iter().position(|(mac, _)| *mac == cx.port_mac) {
            Some(i) => i,
            None => {
                self.templates.push((cx.port_mac, TxTemplate::new(cx.port_mac, cx.peer_mac, cx.port_ip, cx.peer_ip)));
                self.templates.len() - 1
            }
        };
        let t = &self.templates[i].1;
        cx.work.reset(Category::App);
        for &(mbuf, addr) in mbufs {
            let frame = cx.frames.alloc(bytes);
            t.build(cx.frames.data_mut(frame), bytes, self.built);
            self.built += 1;
            cx.work.instr(header_instr).write_lines(addr, UDP_HEADERS as u64, 0);
            out.push(Slot { mbuf, frame, buf_addr: addr });
        }
        cx.exec();
    }

    fn result_json(&self) -> Value {
        json!({"forward_mode": self.mode, "txonly_built": self.built})
    }

    fn reset_stats(&mut self) {
        self.built = 0;
    }
}

/// The frames testpmd's txonly engine sends: Ethernet/IPv4/UDP from the
/// port to its peer (the load generator), no load-generator tag; the IPv4
/// identification field carries a running count.
pub struct TxTemplate {
    header: [u8; UDP_HEADERS],
}

impl TxTemplate {
    pub fn new(port: Mac, peer: Mac, src_ip: std::net::Ipv4Addr, dst_ip: std::net::Ipv4Addr) -> Self {
        let mut header = [0u8; UDP_HEADERS];
        ethernet::Repr { dst: peer, src: port, ethertype: ethernet::ETHERTYPE_IPV4 }.emit(&mut ethernet::Packet::new_unchecked(&mut header[..]));
        ipv4::Repr { src: src_ip, dst: dst_ip, protocol: ipv4::PROTO_UDP, payload_len: 0, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut header[14..]));
        udp::Repr { src_port: 9, dst_port: 1024, payload_len: 0 }.emit(&mut udp::Packet::new_unchecked(&mut header[34..]));
        TxTemplate { header }
    }

    /// Writes a frame of `frame_bytes` (FCS included) into `buf` (without FCS).
    pub fn build(&self, buf: &mut [u8], frame_bytes: u32, count: u64) {
        debug_assert_eq!(buf.len() + ethernet::FCS_LEN, frame_bytes as usize);
        buf[..UDP_HEADERS].copy_from_slice(&self.header);
        let ip_len = buf.len() - ethernet::HEADER_LEN;
        let mut ip = ipv4::Packet::new_unchecked(&mut buf[14..]);
        ip.set_total_len(ip_len as u16);
        ip.set_ident(count as u16);
        ip.fill_checksum();
        udp::Packet::new_unchecked(&mut buf[34..]).set_len((ip_len - ipv4::HEADER_LEN) as u16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txonly_frames_parse_as_udp_from_the_port_to_the_peer() {
        let port = Mac([2, 0, 0, 0, 0, 2]);
        let peer = Mac([2, 0, 0, 0, 0, 1]);
        let t = TxTemplate::new(port, peer, "10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap());
        let mut buf = vec![0u8; 124];
        t.build(&mut buf, 128, 7);
        let p = etherparse::SlicedPacket::from_ethernet(&buf).unwrap();
        let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else { panic!("not ipv4") };
        assert_eq!(ip.header().total_len(), 110);
        assert_eq!(ip.header().identification(), 7);
        assert_eq!(ip.header().to_header().calc_header_checksum(), ip.header().header_checksum());
        assert_eq!(&buf[..6], &peer.0);
    }
}
