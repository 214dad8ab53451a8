//! IPv4 (RFC 791) without options on emit; options are accepted on parse
//! (IHL > 5) and skipped. Fragments are not reassembled.

use std::net::Ipv4Addr;

use super::{internet_checksum, WireError, WireResult};

pub const HEADER_LEN: usize = 20;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_TCP: u8 = 6;

mod field {
    use std::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Packet { buf }
    }

    /// Checks that the buffer holds the whole header and the declared length.
    pub fn new_checked(buf: T) -> WireResult<Self> {
        let p = Packet { buf };
        let len = p.buf.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = p.header_len();
        if p.version() != 4 || hl < HEADER_LEN || (p.total_len() as usize) < hl {
            return Err(WireError::Malformed);
        }
        if len < hl || len < p.total_len() as usize {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        u16::from_be_bytes([self.b()[r.start], self.b()[r.start + 1]])
    }
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }
    pub fn header_len(&self) -> usize {
        ((self.b()[field::VER_IHL] & 0x0f) as usize) * 4
    }
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }
    pub fn ident(&self) -> u16 {
        self.u16_at(field::IDENT)
    }
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }
    pub fn more_frags_or_offset(&self) -> bool {
        self.u16_at(field::FLAGS_FRAG) & 0x3fff != 0
    }
    pub fn src(&self) -> Ipv4Addr {
        let b = &self.b()[field::SRC];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    pub fn dst(&self) -> Ipv4Addr {
        let b = &self.b()[field::DST];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    pub fn verify_checksum(&self) -> bool {
        internet_checksum(&self.b()[..self.header_len()]) == 0
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put_u16(&mut self, r: std::ops::Range<usize>, v: u16) {
        self.buf.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_total_len(&mut self, v: u16) {
        self.put_u16(field::LENGTH, v)
    }
    pub fn set_ident(&mut self, v: u16) {
        self.put_u16(field::IDENT, v)
    }
    pub fn set_src(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[field::SRC].copy_from_slice(&a.octets())
    }
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[field::DST].copy_from_slice(&a.octets())
    }
    /// Decrements the TTL and updates the checksum incrementally, as
    /// Linux's `ip_decrease_ttl` (RFC 1141: the TTL is the high byte of its
    /// 16-bit word, so the one's-complement sum grows by 0x0100).
    pub fn decrement_ttl(&mut self) {
        let ttl = self.buf.as_ref()[field::TTL];
        self.buf.as_mut()[field::TTL] = ttl.wrapping_sub(1);
        let c = u16::from_be_bytes([self.buf.as_ref()[field::CHECKSUM.start], self.buf.as_ref()[field::CHECKSUM.start + 1]]) as u32 + 0x0100;
        self.put_u16(field::CHECKSUM, ((c & 0xffff) + (c >> 16)) as u16);
    }
    /// Recomputes the header checksum.
    pub fn fill_checksum(&mut self) {
        self.put_u16(field::CHECKSUM, 0);
        let hl = self.header_len();
        let c = internet_checksum(&self.buf.as_ref()[..hl]);
        self.put_u16(field::CHECKSUM, c);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub payload_len: usize,
    pub ttl: u8,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        if !p.verify_checksum() {
            return Err(WireError::Checksum);
        }
        if p.more_frags_or_offset() {
            return Err(WireError::Malformed);
        }
        Ok(Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            payload_len: p.total_len() as usize - p.header_len(),
            ttl: p.ttl(),
        })
    }

    /// Writes a 20-byte header (no options, DF clear, ident 0) with its checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buf.as_mut();
        b[field::VER_IHL] = 0x45;
        b[1] = 0;
        b[field::FLAGS_FRAG].copy_from_slice(&[0, 0]);
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        p.set_total_len((HEADER_LEN + self.payload_len) as u16);
        p.set_ident(0);
        p.set_src(self.src);
        p.set_dst(self.dst);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Repr {
        Repr { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), protocol: PROTO_UDP, payload_len: 26, ttl: 64 }
    }

    #[test]
    fn emit_parse_roundtrip_checked_by_etherparse() {
        let mut buf = [0u8; 46];
        let r = sample();
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), r);
        let (h, _) = etherparse::Ipv4Header::from_slice(&buf).unwrap();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        assert_eq!(h.total_len, 46);
        assert_eq!(h.source, [10, 0, 0, 1]);
    }

    /// The incremental update gives the checksum a full recomputation gives
    /// (checked by etherparse), for every TTL, the carry included.
    #[test]
    fn decrementing_the_ttl_keeps_the_checksum_right() {
        for ttl in 1..=255u8 {
            for ident in [0u16, 0x1234, 0xfeff, 0xffff] {
                let mut buf = [0u8; 46];
                Repr { ttl, ..sample() }.emit(&mut Packet::new_unchecked(&mut buf[..]));
                let mut p = Packet::new_unchecked(&mut buf[..]);
                p.set_ident(ident);
                p.fill_checksum();
                p.decrement_ttl();
                assert_eq!(p.ttl(), ttl - 1);
                assert!(p.verify_checksum(), "ttl {ttl} ident {ident:#x}");
                let (h, _) = etherparse::Ipv4Header::from_slice(&buf).unwrap();
                assert_eq!(h.header_checksum, h.calc_header_checksum());
            }
        }
    }

    #[test]
    fn rejects_bad_headers() {
        let mut buf = [0u8; 46];
        sample().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(Packet::new_checked(&buf[..30]).err(), Some(WireError::Truncated));
        let mut bad_ihl = buf;
        bad_ihl[0] = 0x44;
        assert_eq!(Packet::new_checked(&bad_ihl[..]).err(), Some(WireError::Malformed));
        let mut bad_ver = buf;
        bad_ver[0] = 0x65;
        assert_eq!(Packet::new_checked(&bad_ver[..]).err(), Some(WireError::Malformed));
        let mut bad_sum = buf;
        bad_sum[8] ^= 1;
        let p = Packet::new_checked(&bad_sum[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(WireError::Checksum));
    }
}
