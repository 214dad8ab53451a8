//! Ethernet II (IEEE 802.3 clause 3, DIX framing): destination, source,
//! EtherType. No VLAN tags yet. The 4 B FCS is not stored in buffers.

use super::{WireError, WireResult};

pub const HEADER_LEN: usize = 14;
pub const FCS_LEN: usize = 4;
/// Smallest and largest Ethernet frame (bytes, FCS included): 64 B, and
/// jumbo frames up to 9216 B (the common switch maximum).
pub const MIN_FRAME_BYTES: u32 = 64;
pub const MAX_FRAME_BYTES: u32 = 9216;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IEEE 802 "local experimental" EtherType, used for raw load-generator frames.
pub const ETHERTYPE_EXPERIMENTAL: u16 = 0x88B5;

mod field {
    use std::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
}

/// A MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mac(pub [u8; 6]);

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-`).
pub fn parse_mac(s: &str) -> Option<Mac> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        if p.len() != 2 {
            return None;
        }
        m[i] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(Mac(m))
}

/// A view of an Ethernet II frame.
pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Packet { buf }
    }

    pub fn new_checked(buf: T) -> WireResult<Self> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buf })
    }

    pub fn dst(&self) -> Mac {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buf.as_ref()[field::DST]);
        Mac(m)
    }

    pub fn src(&self) -> Mac {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buf.as_ref()[field::SRC]);
        Mac(m)
    }

    pub fn ethertype(&self) -> u16 {
        let b = &self.buf.as_ref()[field::ETHERTYPE];
        u16::from_be_bytes([b[0], b[1]])
    }

    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_dst(&mut self, m: Mac) {
        self.buf.as_mut()[field::DST].copy_from_slice(&m.0);
    }

    pub fn set_src(&mut self, m: Mac) {
        self.buf.as_mut()[field::SRC].copy_from_slice(&m.0);
    }

    pub fn set_ethertype(&mut self, t: u16) {
        self.buf.as_mut()[field::ETHERTYPE].copy_from_slice(&t.to_be_bytes());
    }

    /// Exchanges source and destination in place (testpmd's macswap).
    pub fn swap_macs(&mut self) {
        let b = self.buf.as_mut();
        for i in 0..6 {
            b.swap(i, i + 6);
        }
    }
}

/// The validated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub dst: Mac,
    pub src: Mac,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        if p.buf.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        // EtherType values below 0x0600 are 802.3 lengths, not Ethernet II.
        if p.ethertype() < 0x0600 {
            return Err(WireError::Malformed);
        }
        Ok(Repr { dst: p.dst(), src: p.src(), ethertype: p.ethertype() })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_dst(self.dst);
        p.set_src(self.src);
        p.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_parse_roundtrip_and_swap() {
        let r = Repr { dst: Mac([2, 0, 0, 0, 0, 2]), src: Mac([2, 0, 0, 0, 0, 1]), ethertype: ETHERTYPE_IPV4 };
        let mut buf = [0u8; 60];
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        r.emit(&mut p);
        assert_eq!(Repr::parse(&p).unwrap(), r);
        p.swap_macs();
        assert_eq!(p.dst(), r.src);
        assert_eq!(p.src(), r.dst);
        // Cross-check with an independent parser.
        let (eth, _) = etherparse::Ethernet2Header::from_slice(&buf).unwrap();
        assert_eq!(eth.source, [2, 0, 0, 0, 0, 2]);
        assert_eq!(eth.ether_type.0, ETHERTYPE_IPV4);
    }

    #[test]
    fn rejects_short_and_8023_length() {
        assert_eq!(Packet::new_checked(&[0u8; 13][..]).err(), Some(WireError::Truncated));
        let buf = [0u8; 14];
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(WireError::Malformed));
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(parse_mac("02:00:00:00:00:0a"), Some(Mac([2, 0, 0, 0, 0, 10])));
        assert_eq!(parse_mac("02-00-00-00-00-0A"), Some(Mac([2, 0, 0, 0, 0, 10])));
        assert_eq!(parse_mac("02:00:00:00:00"), None);
        assert_eq!(parse_mac("zz:00:00:00:00:00"), None);
    }
}
