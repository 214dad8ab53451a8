//! UDP (RFC 768). The load generator sends checksum 0 ("not computed"), which
//! IPv4 allows; a non-zero checksum is verified on parse when asked.

use super::{WireError, WireResult};

pub const HEADER_LEN: usize = 8;

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Packet { buf }
    }

    pub fn new_checked(buf: T) -> WireResult<Self> {
        let p = Packet { buf };
        let len = p.buf.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let l = p.len() as usize;
        if l < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if len < l {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[r.start], b[r.start + 1]])
    }
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }
    pub fn len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..self.len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put(&mut self, r: std::ops::Range<usize>, v: u16) {
        self.buf.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_src_port(&mut self, v: u16) {
        self.put(field::SRC_PORT, v)
    }
    pub fn set_dst_port(&mut self, v: u16) {
        self.put(field::DST_PORT, v)
    }
    pub fn set_len(&mut self, v: u16) {
        self.put(field::LENGTH, v)
    }
    pub fn set_checksum(&mut self, v: u16) {
        self.put(field::CHECKSUM, v)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload_len: usize,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        Ok(Repr { src_port: p.src_port(), dst_port: p.dst_port(), payload_len: p.len() as usize - HEADER_LEN })
    }

    /// Writes the header with checksum 0 (not computed).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + self.payload_len) as u16);
        p.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_limits() {
        let r = Repr { src_port: 1024, dst_port: 9, payload_len: 18 };
        let mut buf = [0u8; 26];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), r);
        let (h, _) = etherparse::UdpHeader::from_slice(&buf).unwrap();
        assert_eq!((h.source_port, h.destination_port, h.length), (1024, 9, 26));
        assert_eq!(Packet::new_checked(&buf[..20]).err(), Some(WireError::Truncated));
        let mut bad = buf;
        bad[5] = 4; // length 4 < header
        assert_eq!(Packet::new_checked(&bad[..]).err(), Some(WireError::Malformed));
    }
}
