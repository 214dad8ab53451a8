//! Builds the frames the load generator sends: a header template made once
//! (Ethernet, or Ethernet/IPv4/UDP) patched per frame with the lengths, the
//! flow's source port, the IPv4 checksum and the measurement tag.

use std::net::Ipv4Addr;

use crate::loadgen::config::{LoadgenConfig, Protocol};
use crate::wire::ethernet::{self, Mac, ETHERTYPE_EXPERIMENTAL, ETHERTYPE_IPV4, FCS_LEN};
use crate::wire::{ipv4, tag, tcp, udp};

/// Bytes of headers before the default tag position.
pub const fn header_len(p: Protocol) -> usize {
    match p {
        Protocol::Raw => ethernet::HEADER_LEN,
        Protocol::Udp => ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN,
        Protocol::Tcp => ethernet::HEADER_LEN + ipv4::HEADER_LEN + tcp::HEADER_LEN,
    }
}

const MAX_HEADER: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + tcp::HEADER_LEN;

pub struct FrameBuilder {
    protocol: Protocol,
    template: [u8; MAX_HEADER],
    header_len: usize,
    tag_offset: usize,
    src_port: u16,
    flows: u32,
    /// Zipf flow popularity: the cumulative weights of the flows, by rank
    /// (empty: flows take turns).
    flow_cdf: Vec<f64>,
    /// Full-mesh traffic: frame n goes to destination n mod len (MAC, IPv4).
    mesh: Vec<(Mac, Ipv4Addr)>,
}

impl FrameBuilder {
    /// `cfg` must have been validated (MACs and IPs parse).
    pub fn new(cfg: &LoadgenConfig) -> Self {
        let mac = |s: &str| ethernet::parse_mac(s).unwrap_or(Mac([0; 6]));
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap_or(Ipv4Addr::UNSPECIFIED);
        let mut template = [0u8; MAX_HEADER];
        let header_len = header_len(cfg.protocol);
        let ethertype = match cfg.protocol {
            Protocol::Raw => ETHERTYPE_EXPERIMENTAL,
            Protocol::Udp | Protocol::Tcp => ETHERTYPE_IPV4,
        };
        ethernet::Repr { dst: mac(&cfg.dst_mac), src: mac(&cfg.src_mac), ethertype }
            .emit(&mut ethernet::Packet::new_unchecked(&mut template[..]));
        if cfg.protocol == Protocol::Udp {
            let l4 = &mut template[ethernet::HEADER_LEN..];
            ipv4::Repr { src: ip(&cfg.src_ip), dst: ip(&cfg.dst_ip), protocol: ipv4::PROTO_UDP, payload_len: 0, ttl: 64 }
                .emit(&mut ipv4::Packet::new_unchecked(&mut l4[..]));
            udp::Repr { src_port: cfg.src_port, dst_port: cfg.dst_port, payload_len: 0 }
                .emit(&mut udp::Packet::new_unchecked(&mut l4[ipv4::HEADER_LEN..]));
        }
        if cfg.protocol == Protocol::Tcp {
            let l4 = &mut template[ethernet::HEADER_LEN..];
            ipv4::Repr { src: ip(&cfg.src_ip), dst: ip(&cfg.dst_ip), protocol: ipv4::PROTO_TCP, payload_len: 0, ttl: 64 }
                .emit(&mut ipv4::Packet::new_unchecked(&mut l4[..]));
            tcp::Packet::new_unchecked(&mut l4[ipv4::HEADER_LEN..]).emit(cfg.src_port, cfg.dst_port, 0, 0, tcp::FLAG_ACK | tcp::FLAG_PSH, 65535);
        }
        FrameBuilder {
            protocol: cfg.protocol,
            template,
            header_len,
            tag_offset: cfg.tag_offset.map(|o| o as usize).unwrap_or(header_len),
            src_port: cfg.src_port,
            flows: cfg.flows,
            flow_cdf: zipf_cdf(cfg.flows, cfg.flow_skew),
            mesh: Vec::new(),
        }
    }

    /// Frames take these destinations (MAC, IPv4) in turn (full-mesh traffic).
    pub fn with_mesh(mut self, dests: Vec<(Mac, Ipv4Addr)>) -> Self {
        self.mesh = dests;
        self
    }

    pub fn tag_offset(&self) -> usize {
        self.tag_offset
    }

    /// Writes a frame of `frame_bytes` (FCS included) into `buf` (without FCS).
    #[inline]
    pub fn build(&self, buf: &mut [u8], frame_bytes: u32, t: &tag::Repr) {
        debug_assert_eq!(buf.len(), frame_bytes as usize - FCS_LEN);
        buf[..self.header_len].copy_from_slice(&self.template[..self.header_len]);
        let dest = (!self.mesh.is_empty()).then(|| self.mesh[t.seq as usize % self.mesh.len()]);
        if let Some((mac, _)) = dest {
            ethernet::Packet::new_unchecked(&mut buf[..]).set_dst(mac);
        }
        if self.protocol != Protocol::Raw {
            let ip_len = buf.len() - ethernet::HEADER_LEN;
            let l3 = &mut buf[ethernet::HEADER_LEN..];
            let mut ip = ipv4::Packet::new_unchecked(&mut l3[..]);
            if let Some((_, addr)) = dest {
                ip.set_dst(addr);
            }
            ip.set_total_len(ip_len as u16);
            ip.fill_checksum();
            let l4 = &mut l3[ipv4::HEADER_LEN..];
            let port = self.src_port.wrapping_add(t.flow);
            if self.protocol == Protocol::Udp {
                let mut u = udp::Packet::new_unchecked(l4);
                u.set_len((ip_len - ipv4::HEADER_LEN) as u16);
                u.set_src_port(port);
            } else {
                // Fixed-size segments of one flow: the byte offset of this one.
                let payload = (ip_len - ipv4::HEADER_LEN - tcp::HEADER_LEN) as u32;
                let mut s = tcp::Packet::new_unchecked(l4);
                s.set_src_port(port);
                s.set_seq((t.seq / self.flows).wrapping_mul(payload));
            }
        }
        t.emit(&mut buf[self.tag_offset..self.tag_offset + tag::TAG_LEN]);
    }

    /// Writes the Ethernet/IPv4/UDP headers of a frame (`buf`, without FCS)
    /// carrying `payload_len` bytes of UDP payload from `flow`; the payload
    /// goes at `header_len(Udp)`, bytes after it are padding. UDP template only.
    #[inline]
    pub fn build_udp_headers(&self, buf: &mut [u8], payload_len: usize, flow: u16) {
        debug_assert_eq!(self.protocol, Protocol::Udp);
        buf[..self.header_len].copy_from_slice(&self.template[..self.header_len]);
        let l3 = &mut buf[ethernet::HEADER_LEN..];
        let mut ip = ipv4::Packet::new_unchecked(&mut l3[..]);
        ip.set_total_len((ipv4::HEADER_LEN + udp::HEADER_LEN + payload_len) as u16);
        ip.fill_checksum();
        let mut u = udp::Packet::new_unchecked(&mut l3[ipv4::HEADER_LEN..]);
        u.set_len((udp::HEADER_LEN + payload_len) as u16);
        u.set_src_port(self.src_port.wrapping_add(flow));
    }

    /// The flow of the `n`-th frame: flows take turns, or (Zipf popularity)
    /// the flow whose cumulative weight first exceeds a uniform number that
    /// is a fixed hash of `n` (the same frame always has the same flow).
    #[inline]
    pub fn flow_of(&self, n: u64) -> u16 {
        if self.flow_cdf.is_empty() {
            return (n % self.flows as u64) as u16;
        }
        let u = (splitmix64(n) >> 11) as f64 / (1u64 << 53) as f64;
        self.flow_cdf.partition_point(|&c| c <= u).min(self.flows as usize - 1) as u16
    }
}

/// The cumulative Zipf weights of `flows` ranks with exponent `skew`,
/// normalised to 1 (empty for skew 0: flows in turn).
fn zipf_cdf(flows: u32, skew: f64) -> Vec<f64> {
    if skew <= 0.0 {
        return Vec::new();
    }
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=flows)
        .map(|r| {
            acc += (r as f64).powf(-skew);
            acc
        })
        .collect();
    cdf.iter_mut().for_each(|c| *c /= acc);
    cdf
}

/// SplitMix64's output function: a well-mixed 64-bit hash of `x`.
#[inline]
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(protocol: Protocol) -> LoadgenConfig {
        LoadgenConfig { protocol, flows: 4, ..LoadgenConfig::default() }
    }

    #[test]
    fn udp_frames_parse_with_an_independent_parser() {
        let b = FrameBuilder::new(&cfg(Protocol::Udp));
        for (len, flow) in [(64u32, 0u16), (1518, 3)] {
            let mut buf = vec![0u8; len as usize - 4];
            let t = tag::Repr { flow, seq: 42, tx_ps: 99 };
            b.build(&mut buf, len, &t);
            let p = etherparse::SlicedPacket::from_ethernet(&buf).unwrap();
            let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else { panic!("not ipv4") };
            assert_eq!(ip.header().total_len() as usize, buf.len() - 14);
            assert_eq!(ip.header().to_header().calc_header_checksum(), ip.header().header_checksum());
            let Some(etherparse::TransportSlice::Udp(u)) = p.transport else { panic!("not udp") };
            assert_eq!(u.source_port(), 1024 + flow);
            assert_eq!(u.length() as usize, buf.len() - 34);
            assert_eq!(tag::Repr::parse(&buf[42..]).unwrap(), t);
        }
    }

    #[test]
    fn raw_frames_carry_the_tag_after_ethernet() {
        let b = FrameBuilder::new(&cfg(Protocol::Raw));
        let mut buf = vec![0u8; 60];
        b.build(&mut buf, 64, &tag::Repr { flow: 1, seq: 2, tx_ps: 3 });
        assert_eq!(&buf[12..14], &[0x88, 0xb5]);
        assert_eq!(tag::Repr::parse(&buf[14..]).unwrap().seq, 2);
        assert_eq!(b.flow_of(5), 1);
        // Zipf popularity: rank 1 most often, every flow in range, and the
        // share of rank 1 is its weight (1 / H(4, 1) = 0.48 for skew 1).
        let z = FrameBuilder::new(&LoadgenConfig { flows: 4, flow_skew: 1.0, ..LoadgenConfig::default() });
        let mut n = [0u32; 4];
        for i in 0..100_000 {
            n[z.flow_of(i) as usize] += 1;
        }
        assert!(n[0] > n[1] && n[1] > n[2] && n[2] > n[3] && n[3] > 0, "{n:?}");
        assert!((n[0] as f64 / 1e5 - 12.0 / 25.0).abs() < 0.01, "{n:?}");
        assert_eq!(z.flow_of(77), z.flow_of(77));
    }

    #[test]
    fn mesh_frames_take_each_destination_in_turn() {
        let d = |i: u8| (Mac([2, 0, 0, 0, i, 1]), Ipv4Addr::new(10, 0, i, 1));
        let b = FrameBuilder::new(&cfg(Protocol::Udp)).with_mesh(vec![d(1), d(2)]);
        for seq in 0..4u32 {
            let mut buf = vec![0u8; 60];
            b.build(&mut buf, 64, &tag::Repr { flow: 0, seq, tx_ps: 0 });
            let want = d(1 + (seq % 2) as u8);
            assert_eq!(&buf[..6], &want.0 .0);
            let p = etherparse::SlicedPacket::from_ethernet(&buf).unwrap();
            let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else { panic!("not ipv4") };
            assert_eq!(ip.header().destination_addr(), want.1);
            assert_eq!(ip.header().to_header().calc_header_checksum(), ip.header().header_checksum());
        }
    }
}
