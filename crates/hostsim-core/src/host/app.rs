//! The benchmark applications (SPEC 2.9), each a small per-packet engine in
//! the shape of testpmd's forwarding engines. Each acts on the real frame
//! bytes and adds the instructions and memory accesses it makes to the
//! core's work unit; the timing comes from the core model.
//!
//! * `testpmd` — forward modes io (no packet access), mac (rewrite both MACs),
//!   macswap (swap them), rxonly (free), txonly (build frames and send them,
//!   without polling RX; in `Host::tx_only`);
//! * `touchfwd` — read every byte, then macswap and forward;
//! * `touchdrop` — read every byte, then free;
//! * `rxptx` — spend a processing time per packet (a spin), macswap, forward;
//! * `l2fwd` — rewrite the MACs (destination: the peer; source: the port), forward;
//! * `udp-echo` — send each UDP datagram back where it came from (swap MACs,
//!   IP addresses and ports); the twin of testpmd macswap that also runs on
//!   the kernel stack (`host/kernel.rs`).

use super::config::{AppConfig, ForwardMode, PmdCosts};
use crate::cpu::Work;
use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::wire::ethernet::{self, Mac};

pub const HOST_APPS: &[&str] = &["testpmd", "touchfwd", "touchdrop", "rxptx", "l2fwd", "udp-echo", "memcached", "iperf"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppKind {
    Testpmd(ForwardMode),
    TouchFwd,
    TouchDrop,
    RxpTx { proc_time_ps: Ps },
    L2Fwd,
    UdpEcho,
    /// An iperf-like TCP bulk receiver (kernel stack only; `host/kernel.rs`).
    Iperf,
    /// MemcachedDPDK: a memcached-compatible store answering UDP requests (`host/kvs_app.rs`).
    Memcached,
}

impl AppKind {
    pub fn from_config(name: &str, cfg: &AppConfig) -> Result<AppKind> {
        Ok(match name {
            "testpmd" => AppKind::Testpmd(cfg.forward_mode),
            "touchfwd" => AppKind::TouchFwd,
            "touchdrop" => AppKind::TouchDrop,
            "rxptx" => AppKind::RxpTx { proc_time_ps: cfg.proc_time_ps },
            "l2fwd" => AppKind::L2Fwd,
            "udp-echo" => AppKind::UdpEcho,
            "iperf" => AppKind::Iperf,
            "memcached" => AppKind::Memcached,
            other => return Err(ConfigError::new("app", other.to_string(), &format!("one of {}", HOST_APPS.join(", "))).into()),
        })
    }

    /// Does the application transmit what it receives?
    pub fn forwards(self) -> bool {
        !matches!(self, AppKind::Testpmd(ForwardMode::Rxonly) | AppKind::TouchDrop | AppKind::Iperf)
    }
}

/// The frames testpmd's txonly engine sends: Ethernet/IPv4/UDP from the
/// port to its peer (the load generator), no load-generator tag; the IPv4
/// identification field carries a running count.
pub struct TxTemplate {
    header: [u8; 42],
}

impl TxTemplate {
    pub fn new(port: Mac, peer: Mac, src_ip: std::net::Ipv4Addr, dst_ip: std::net::Ipv4Addr) -> Self {
        use crate::wire::{ipv4, udp};
        let mut header = [0u8; 42];
        ethernet::Repr { dst: peer, src: port, ethertype: ethernet::ETHERTYPE_IPV4 }.emit(&mut ethernet::Packet::new_unchecked(&mut header[..]));
        ipv4::Repr { src: src_ip, dst: dst_ip, protocol: ipv4::PROTO_UDP, payload_len: 0, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut header[14..]));
        udp::Repr { src_port: 9, dst_port: 1024, payload_len: 0 }.emit(&mut udp::Packet::new_unchecked(&mut header[34..]));
        TxTemplate { header }
    }

    /// Writes a frame of `frame_bytes` (FCS included) into `buf` (without FCS).
    pub fn build(&self, buf: &mut [u8], frame_bytes: u32, count: u64) {
        use crate::wire::{ipv4, udp};
        debug_assert_eq!(buf.len() + ethernet::FCS_LEN, frame_bytes as usize);
        buf[..42].copy_from_slice(&self.header);
        let ip_len = buf.len() - ethernet::HEADER_LEN;
        let mut ip = ipv4::Packet::new_unchecked(&mut buf[14..]);
        ip.set_total_len(ip_len as u16);
        ip.set_ident(count as u16);
        ip.fill_checksum();
        udp::Packet::new_unchecked(&mut buf[34..]).set_len((ip_len - ipv4::HEADER_LEN) as u16);
    }
}

/// Turns a UDP or TCP over IPv4 frame around in place: MACs, IP addresses
/// and ports swapped (the checksums stay valid: their sums do not depend on
/// the order). Other frames get their MACs swapped only.
pub fn swap_endpoints(frame: &mut [u8]) {
    use crate::wire::ipv4;
    let mut eth = ethernet::Packet::new_unchecked(&mut *frame);
    eth.swap_macs();
    let l3 = ethernet::HEADER_LEN;
    let l4_proto = frame.get(l3 + 9).copied();
    if frame.len() < l3 + ipv4::HEADER_LEN + 4 || frame[12..14] != [0x08, 0x00] || !matches!(l4_proto, Some(ipv4::PROTO_UDP | ipv4::PROTO_TCP)) {
        return;
    }
    let ihl = ((frame[l3] & 0x0f) as usize * 4).max(ipv4::HEADER_LEN);
    for i in 0..4 {
        frame.swap(l3 + 12 + i, l3 + 16 + i);
    }
    let l4 = l3 + ihl;
    if frame.len() >= l4 + 4 {
        frame.swap(l4, l4 + 2);
        frame.swap(l4 + 1, l4 + 3);
    }
}

/// Reads every byte of the frame: a word-wise XOR fold, so the bytes are really read.
#[inline]
fn touch(frame: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = frame.chunks_exact(8);
    for c in &mut chunks {
        acc ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    for &b in chunks.remainder() {
        acc = acc.rotate_left(8) ^ b as u64;
    }
    acc
}

/// Processes one packet whose data is at `data_addr` (simulated) and in
/// `frame` (real bytes). Returns the touch digest (0 for apps that don't touch).
#[inline]
pub fn process(app: AppKind, c: &PmdCosts, work: &mut Work, data_addr: u64, frame: &mut [u8], port: Mac, peer: Mac) -> u64 {
    let len = frame.len() as u64;
    let macswap = |work: &mut Work, frame: &mut [u8]| {
        work.instr(c.header_instr as u64).read(data_addr).write(data_addr);
        ethernet::Packet::new_unchecked(frame).swap_macs();
    };
    match app {
        AppKind::Testpmd(ForwardMode::Io) | AppKind::Testpmd(ForwardMode::Rxonly) | AppKind::Testpmd(ForwardMode::Txonly) => 0,
        AppKind::Testpmd(ForwardMode::Mac) | AppKind::L2Fwd => {
            work.instr(c.header_instr as u64).write(data_addr);
            let mut p = ethernet::Packet::new_unchecked(frame);
            p.set_dst(peer);
            p.set_src(port);
            0
        }
        AppKind::Testpmd(ForwardMode::Macswap) | AppKind::RxpTx { .. } => {
            macswap(work, frame);
            0
        }
        AppKind::TouchFwd => {
            work.read_lines(data_addr, len, c.touch_instr_per_line as u64);
            let d = touch(frame);
            macswap(work, frame);
            d
        }
        AppKind::TouchDrop => {
            work.read_lines(data_addr, len, c.touch_instr_per_line as u64);
            touch(frame)
        }
        AppKind::UdpEcho => {
            work.instr(c.header_instr as u64).read(data_addr).write(data_addr);
            swap_endpoints(frame);
            0
        }
        // Handled per request by `Host::serve_kvs`; iperf runs on the kernel only.
        AppKind::Memcached | AppKind::Iperf => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Category;

    #[test]
    fn apps_act_on_bytes_and_charge_lines() {
        let c = PmdCosts::default();
        let port = Mac([2, 0, 0, 0, 0, 2]);
        let peer = Mac([2, 0, 0, 0, 0, 1]);
        let mut frame = vec![0u8; 1514];
        frame[..6].copy_from_slice(&port.0);
        frame[6..12].copy_from_slice(&peer.0);
        frame[100] = 7;
        let mut w = Work::new(Category::App);
        let d = process(AppKind::TouchFwd, &c, &mut w, 4096, &mut frame, port, peer);
        assert_ne!(d, 0);
        assert_eq!(&frame[..6], &peer.0, "swapped");
        // 1514 B from a line boundary: 24 lines read, then the header read and written.
        assert_eq!(w.accesses().len(), 24 + 2);
        let mut w = Work::new(Category::App);
        process(AppKind::Testpmd(ForwardMode::Io), &c, &mut w, 4096, &mut frame, port, peer);
        assert!(w.accesses().is_empty());
        process(AppKind::L2Fwd, &c, &mut w, 4096, &mut frame, port, peer);
        assert_eq!(&frame[..6], &peer.0);
        assert_eq!(&frame[6..12], &port.0);
        assert!(!AppKind::TouchDrop.forwards() && AppKind::TouchFwd.forwards());
        assert!(AppKind::from_config("nope", &AppConfig::default()).unwrap_err().to_string().starts_with("app"));
        // txonly frames parse as Ethernet/IPv4/UDP from the port to the peer.
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
