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

/// The Internet checksum (RFC 1071) over `data`, folded and complemented.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
