//! TCP (RFC 9293), the fixed 20-byte header without options: enough for the
//! load generator's bulk segments and the kernel model's ACKs. The checksum
//! is left 0 (the receiving NIC's checksum offload is not modelled).

use super::{WireError, WireResult};

pub const HEADER_LEN: usize = 20;
pub const FLAG_PSH: u8 = 0x08;
pub const FLAG_ACK: u8 = 0x10;

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const ACK: Range<usize> = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
}

pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Packet { buf }
    }

    /// A view over a segment (header and payload, nothing after).
    pub fn new_checked(buf: T) -> WireResult<Self> {
        let p = Packet { buf };
        let len = p.buf.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let h = p.header_len();
        if h < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if len < h {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[r.start], b[r.start + 1]])
    }
    fn u32_at(&self, r: std::ops::Range<usize>) -> u32 {
        let b = &self.buf.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }
    pub fn seq(&self) -> u32 {
        self.u32_at(field::SEQ)
    }
    pub fn ack(&self) -> u32 {
        self.u32_at(field::ACK)
    }
    pub fn header_len(&self) -> usize {
        (self.buf.as_ref()[field::DATA_OFF] >> 4) as usize * 4
    }
    pub fn flags(&self) -> u8 {
        self.buf.as_ref()[field::FLAGS]
    }
    pub fn window(&self) -> u16 {
        self.u16_at(field::WINDOW)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Writes a 20-byte header: ports, sequence and acknowledgement numbers,
    /// flags and window; checksum 0.
    pub fn emit(&mut self, src_port: u16, dst_port: u16, seq: u32, ack: u32, flags: u8, window: u16) {
        let b = self.buf.as_mut();
        b[field::SRC_PORT].copy_from_slice(&src_port.to_be_bytes());
        b[field::DST_PORT].copy_from_slice(&dst_port.to_be_bytes());
        b[field::SEQ].copy_from_slice(&seq.to_be_bytes());
        b[field::ACK].copy_from_slice(&ack.to_be_bytes());
        b[field::DATA_OFF] = ((HEADER_LEN / 4) as u8) << 4;
        b[field::FLAGS] = flags;
        b[field::WINDOW].copy_from_slice(&window.to_be_bytes());
        b[16..20].fill(0);
    }
    pub fn set_src_port(&mut self, v: u16) {
        self.buf.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_seq(&mut self, v: u32) {
        self.buf.as_mut()[field::SEQ].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_flags(&mut self, v: u8) {
        self.buf.as_mut()[field::FLAGS] = v;
    }
}

/// Writes into `buf` (a 64 B frame without FCS, zero-padded) the pure ACK
/// that answers the segment whose Ethernet/IPv4/TCP headers are `seg`:
/// endpoints swapped, its sequence number the segment's acknowledgement
/// number, acknowledging `ack` with receive window field `window`.
pub fn write_ack(buf: &mut [u8], seg: &[u8; super::TCP_HEADERS], ack: u32, window: u16) {
    use super::{ethernet, ipv4};
    let l3 = ethernet::HEADER_LEN;
    let l4 = l3 + ipv4::HEADER_LEN;
    buf.fill(0);
    buf[..super::TCP_HEADERS].copy_from_slice(seg);
    super::swap_endpoints(buf);
    let mut ip = ipv4::Packet::new_unchecked(&mut buf[l3..]);
    ip.set_total_len((ipv4::HEADER_LEN + HEADER_LEN) as u16);
    ip.fill_checksum();
    let s = Packet::new_unchecked(&buf[l4..]);
    let (sport, dport, seq) = (s.src_port(), s.dst_port(), Packet::new_unchecked(&seg[l4..]).ack());
    Packet::new_unchecked(&mut buf[l4..]).emit(sport, dport, seq, ack, FLAG_ACK, window);
}

/// `f` of the TCP segment in `frame` (Ethernet, no FCS), if it is IPv4/TCP.
pub fn in_frame<R>(frame: &[u8], f: impl FnOnce(&Packet<&[u8]>) -> R) -> Option<R> {
    use super::{ethernet, ipv4};
    let eth = ethernet::Packet::new_checked(frame).ok()?;
    if eth.ethertype() != ethernet::ETHERTYPE_IPV4 {
        return None;
    }
    let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
    if ip.protocol() != ipv4::PROTO_TCP {
        return None;
    }
    Some(f(&Packet::new_checked(ip.payload()).ok()?))
}

/// Is `frame` (Ethernet, no FCS) an IPv4/TCP segment with no payload and the ACK flag?
pub fn is_pure_ack(frame: &[u8]) -> bool {
    let l3 = super::ethernet::HEADER_LEN;
    if frame.len() < l3 + super::ipv4::HEADER_LEN + HEADER_LEN || frame[12..14] != [0x08, 0x00] || frame[l3 + 9] != super::ipv4::PROTO_TCP {
        return false;
    }
    let ihl = (frame[l3] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
    let Some(seg) = frame.get(l3 + ihl..l3 + total.max(ihl)) else { return false };
    match Packet::new_checked(seg) {
        Ok(p) => p.payload().is_empty() && p.flags() & FLAG_ACK != 0,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_etherparse_agrees() {
        let mut b = [0u8; 24];
        Packet::new_unchecked(&mut b[..]).emit(5201, 40000, 7, 9, FLAG_ACK | FLAG_PSH, 65535);
        b[20..].copy_from_slice(b"data");
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.seq(), p.ack(), p.flags()), (5201, 40000, 7, 9, 0x18));
        assert_eq!(p.payload(), b"data");
        let h = etherparse::TcpHeaderSlice::from_slice(&b).unwrap();
        assert_eq!((h.source_port(), h.destination_port(), h.sequence_number(), h.acknowledgment_number()), (5201, 40000, 7, 9));
        assert!(h.ack() && h.psh() && !h.syn());
        assert!(Packet::new_checked(&b[..10]).is_err());
        b[12] = 0x10;
        assert!(Packet::new_checked(&b[..]).is_err(), "data offset below 5 words");
    }
}
