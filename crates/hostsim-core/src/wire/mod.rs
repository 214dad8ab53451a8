//! Packet formats, smoltcp-style: a zero-copy `Packet<T>` view over a byte
//! buffer with named field ranges in `mod field`, plus a validated `Repr` with
//! `parse` and `emit`. Frames are stored without the 4 B FCS; lengths that
//! count the FCS say so (`frame_bytes`).

pub mod ethernet;
pub mod ipv4;
pub mod memcached;
pub mod tag;
pub mod tcp;
pub mod udp;

use std::fmt;

/// Why a buffer does not hold a valid header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The buffer is shorter than the header (or than the length it declares).
    Truncated,
    /// A field holds a value the format does not allow.
    Malformed,
    /// The checksum does not match.
    Checksum,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            WireError::Truncated => "truncated",
            WireError::Malformed => "malformed",
            WireError::Checksum => "bad checksum",
        };
        f.write_str(s)
    }
}

pub type WireResult<T> = Result<T, WireError>;

/// Ethernet + IPv4 + UDP headers in front of a datagram's payload.
pub const UDP_HEADERS: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN;
/// Ethernet + IPv4 + TCP headers (no options) in front of a segment's payload.
pub const TCP_HEADERS: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + tcp::HEADER_LEN;

/// The Internet checksum (RFC 1071) over `data`, folded and complemented.
pub fn internet_checksum(data: &[u8]) -> u16 {
    checksum_from(0, data)
}

/// The Internet checksum over `data` added to a partial sum `start` (a
/// pseudo-header's 16-bit words), folded and complemented.
pub fn checksum_from(start: u32, data: &[u8]) -> u16 {
    let mut sum: u64 = start as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Turns a UDP or TCP over IPv4 frame around in place: MACs, IP addresses
/// and ports swapped (the checksums stay valid: their sums do not depend on
/// the order). Other frames get their MACs swapped only.
pub fn swap_endpoints(frame: &mut [u8]) {
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

/// The IPv4 5-tuple of an Ethernet frame (without FCS), as RSS and flow
/// tables key it: source and destination addresses, then the UDP or TCP
/// source and destination ports, and the protocol. `ports` is false (and
/// the port bytes zero) for other protocols and for fragments. None if the
/// frame is not IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveTuple {
    pub bytes: [u8; 12],
    pub ports: bool,
    pub protocol: u8,
}

impl FiveTuple {
    /// The UDP or TCP destination port (0 when `ports` is false).
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[10], self.bytes[11]])
    }
}

pub fn five_tuple(frame: &[u8]) -> Option<FiveTuple> {
    let eth = ethernet::Packet::new_checked(frame).ok()?;
    if eth.ethertype() != ethernet::ETHERTYPE_IPV4 {
        return None;
    }
    let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
    let mut bytes = [0u8; 12];
    bytes[..8].copy_from_slice(&eth.payload()[12..20]);
    let l4 = ip.payload();
    let protocol = ip.protocol();
    let ports = matches!(protocol, ipv4::PROTO_TCP | ipv4::PROTO_UDP) && l4.len() >= 4 && !ip.more_frags_or_offset();
    if ports {
        bytes[8..12].copy_from_slice(&l4[..4]);
    }
    Some(FiveTuple { bytes, ports, protocol })
}

/// The MAC of port `p` of a set whose port 0 has `base`: the address plus
/// `p` × 256 (02:00:00:00:00:01 → 02:00:00:00:01:01 for port 1).
pub fn port_mac(base: ethernet::Mac, p: usize) -> ethernet::Mac {
    let mut v = [0u8; 8];
    v[2..].copy_from_slice(&base.0);
    let n = u64::from_be_bytes(v).wrapping_add((p as u64) << 8) & 0xffff_ffff_ffff;
    let b = n.to_be_bytes();
    ethernet::Mac([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The IPv4 address of port `p` of a set whose port 0 has `base`: the
/// address plus `p` × 256 (10.0.0.1 → 10.0.1.1 for port 1).
pub fn port_ip(base: std::net::Ipv4Addr, p: usize) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(u32::from(base).wrapping_add((p as u32) << 8))
}

#[cfg(test)]
mod port_address_tests {
    use super::*;

    #[test]
    fn ports_get_their_own_addresses() {
        let m = ethernet::parse_mac("02:00:00:00:00:01").unwrap();
        assert_eq!(port_mac(m, 0), m);
        assert_eq!(port_mac(m, 3), ethernet::parse_mac("02:00:00:00:03:01").unwrap());
        assert_eq!(port_ip("10.0.0.2".parse().unwrap(), 2), "10.0.2.2".parse::<std::net::Ipv4Addr>().unwrap());
    }
}
