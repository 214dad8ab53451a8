//! The load generator's measurement tag, written into every frame it sends at
//! a configurable offset (right after the headers by default):
//!
//! ```text
//! 0      2        4            8                    16
//! +------+--------+------------+--------------------+
//! |magic | flow id| sequence   | transmit time (ps) |
//! +------+--------+------------+--------------------+   all big-endian
//! ```
//!
//! 16 bytes, so that it fits a 64 B Ethernet/IPv4/UDP frame (42 B of headers,
//! 4 B FCS). The sequence number is the low 32 bits of the generator's 64-bit
//! counter; the receiver widens it against its own counter. Latency is read
//! from the tag itself, so samples stay exact when frames are lost,
//! duplicated or reordered.

use super::{WireError, WireResult};

pub const TAG_LEN: usize = 16;
pub const MAGIC: u16 = 0x4853; // "HS"

mod field {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..2;
    pub const FLOW: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const TX_PS: Range<usize> = 8..16;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub flow: u16,
    pub seq: u32,
    pub tx_ps: u64,
}

impl Repr {
    /// Reads the tag at the start of `b`.
    #[inline]
    pub fn parse(b: &[u8]) -> WireResult<Repr> {
        if b.len() < TAG_LEN {
            return Err(WireError::Truncated);
        }
        if b[field::MAGIC] != MAGIC.to_be_bytes() {
            return Err(WireError::Malformed);
        }
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&b[field::SEQ]);
        let mut tx = [0u8; 8];
        tx.copy_from_slice(&b[field::TX_PS]);
        Ok(Repr { flow: u16::from_be_bytes([b[2], b[3]]), seq: u32::from_be_bytes(seq), tx_ps: u64::from_be_bytes(tx) })
    }

    #[inline]
    pub fn emit(&self, b: &mut [u8]) {
        b[field::MAGIC].copy_from_slice(&MAGIC.to_be_bytes());
        b[field::FLOW].copy_from_slice(&self.flow.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[field::TX_PS].copy_from_slice(&self.tx_ps.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_errors() {
        let r = Repr { flow: 7, seq: 0xdead_beef, tx_ps: 123_456_789_012 };
        let mut b = [0u8; 20];
        r.emit(&mut b[2..]);
        assert_eq!(Repr::parse(&b[2..]).unwrap(), r);
        assert_eq!(&b[2..4], &[0x48, 0x53]);
        assert_eq!(Repr::parse(&b[2..10]), Err(WireError::Truncated));
        assert_eq!(Repr::parse(&b[0..]), Err(WireError::Malformed));
    }
}
