//! The response datagrams of one request, in one reusable buffer: memcached's
//! UDP framing of a response (frame header, then up to 1392 data bytes).

use crate::wire::memcached::{Repr, HEADER_LEN, UDP_DATA_BYTES};

/// Response UDP payloads (frame header included), stored back to back.
/// `clear` keeps the capacity, so a warm buffer does not allocate.
#[derive(Debug, Default, Clone)]
pub struct Datagrams {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Datagrams {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`-th datagram's UDP payload.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Total bytes of all datagrams (UDP payloads).
    pub fn total_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Frames one response as memcached's `transmit_udp` does: the total is
    /// `ceil(len / 1392)` (0 for an empty response, sent as a bare header),
    /// sequence numbers count from 0.
    pub fn push_response(&mut self, request_id: u16, data: &[u8]) {
        let total = data.len().div_ceil(UDP_DATA_BYTES).min(u16::MAX as usize) as u16;
        if data.is_empty() {
            self.push(Repr { request_id, sequence: 0, datagrams: 0 }, &[]);
            return;
        }
        for (seq, chunk) in data.chunks(UDP_DATA_BYTES).enumerate() {
            self.push(Repr { request_id, sequence: seq as u16, datagrams: total }, chunk);
        }
    }

    fn push(&mut self, hdr: Repr, data: &[u8]) {
        self.bytes.reserve(HEADER_LEN + data.len());
        self.bytes.extend_from_slice(&hdr.to_bytes());
        self.bytes.extend_from_slice(data);
        self.ends.push(self.bytes.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_1392_data_bytes() {
        let mut d = Datagrams::new();
        d.push_response(7, &[b'x'; 3025]);
        assert_eq!(d.len(), 3);
        let lens: Vec<usize> = d.iter().map(|g| g.len()).collect();
        assert_eq!(lens, vec![1400, 1400, 249]);
        assert_eq!(&d.get(2)[..8], &[0, 7, 0, 2, 0, 3, 0, 0]);
        d.push_response(8, b"");
        assert_eq!(d.get(3), &[0, 8, 0, 0, 0, 0, 0, 0]);
        d.push_response(9, &[b'y'; 1392]);
        assert_eq!(d.get(4).len(), 1400);
        assert_eq!(&d.get(4)[..8], &[0, 9, 0, 0, 0, 1, 0, 0]);
        d.clear();
        assert!(d.is_empty() && d.total_bytes() == 0);
    }
}
