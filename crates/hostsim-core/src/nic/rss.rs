//! Receive-side scaling: the Toeplitz hash over a frame's IPv4 addresses and
//! TCP/UDP ports, and the redirection table (RETA) that turns the hash into
//! a receive queue.
//!
//! The hash: for each input bit, most significant first, if the bit is 1
//! XOR the leftmost 32 bits of the key into the result, then shift the key
//! left by one (Microsoft, "RSS hashing functions"; params.md §9). Input:
//! source IP ‖ destination IP ‖ source port ‖ destination port in network
//! byte order for TCP and UDP over IPv4 (12 B), source IP ‖ destination IP
//! for other IPv4 protocols (8 B). Other frames are not hashed and go to
//! queue 0, as the 82599 sends packets that match no RSS type to queue 0.
//! The queue is `reta[hash mod reta_size]`; the table is filled round-robin
//! over the queues, as DPDK's ixgbe driver fills it (`ixgbe_rss_configure`).
//!
//! Read first: params.md §9 (key, input layout, verification vectors, RETA).

use crate::error::{ConfigError, Result};

/// The IPv4 verification vectors of the Microsoft key (params.md §9):
/// source, source port, destination, destination port, the hash of the
/// addresses, the hash of addresses and ports.
pub const VERIFICATION_VECTORS: &[([u8; 4], u16, [u8; 4], u16, u32, u32)] = &[
    ([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766, 0x323e8fc2, 0x51ccc178),
    ([199, 92, 111, 2], 14230, [65, 69, 140, 83], 4739, 0xd718262a, 0xc626b0ea),
    ([24, 19, 198, 95], 12898, [12, 22, 207, 184], 38024, 0xd2d0a5de, 0x5c2b394a),
    ([38, 27, 205, 30], 48228, [209, 142, 163, 6], 2217, 0x82989176, 0xafc7327f),
    ([153, 39, 163, 191], 44251, [202, 188, 127, 2], 1303, 0x5d1809c5, 0x10e828a2),
];

/// The Microsoft verification key, the one DPDK's tests and the 82599
/// datasheet use (params.md §9).
pub const MICROSOFT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b,
    0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// The Toeplitz hash of `input` under `key` (the key must be at least
/// `input.len() + 4` bytes long).
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    debug_assert!(key.len() >= input.len() + 4);
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    let mut result = 0u32;
    for (i, &byte) in input.iter().enumerate() {
        let next = key[i + 4];
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                result ^= window;
            }
            window = (window << 1) | ((next >> (7 - bit)) & 1) as u32;
        }
    }
    result
}

/// Parses a 40-byte key written as hex (spaces, colons and a `0x` prefix allowed).
pub fn parse_key(text: &str) -> Option<[u8; 40]> {
    let hex: String = text.trim().trim_start_matches("0x").chars().filter(|c| !matches!(c, ' ' | ':' | '_')).collect();
    if hex.len() != 80 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 40];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// The key as 80 hex digits.
pub fn key_hex(key: &[u8; 40]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of the longest hash input (IPv4 addresses and ports).
const INPUT_BYTES: usize = 12;

/// A port's RSS state: the hash of its key precomputed per input byte, and
/// the redirection table.
#[derive(Debug, Clone)]
pub struct Rss {
    /// `by_byte[i][v]`: what input byte `i` holding `v` XORs into the hash.
    /// The hash is linear in its input bits, so it is the XOR of these.
    by_byte: Vec<[u32; 256]>,
    reta: Vec<u16>,
}

impl Rss {
    /// `queues` receive queues, a table of `reta_size` entries (a power of two).
    pub fn new(key: [u8; 40], reta_size: usize, queues: usize) -> Rss {
        let reta = (0..reta_size).map(|i| (i % queues.max(1)) as u16).collect();
        let by_byte = (0..INPUT_BYTES)
            .map(|i| {
                let mut row = [0u32; 256];
                let mut input = [0u8; INPUT_BYTES];
                for (v, h) in row.iter_mut().enumerate() {
                    input[i] = v as u8;
                    *h = toeplitz(&key, &input);
                }
                row
            })
            .collect();
        Rss { by_byte, reta }
    }

    /// One queue: no table (every frame goes to queue 0; `is_single` lets
    /// the port skip even the lookup).
    pub fn single() -> Rss {
        Rss { by_byte: Vec::new(), reta: vec![0] }
    }

    /// The Toeplitz hash of `input` (at most 12 bytes) from the per-byte table.
    #[inline]
    fn table_hash(&self, input: &[u8]) -> u32 {
        input.iter().zip(&self.by_byte).fold(0, |h, (&b, row)| h ^ row[b as usize])
    }

    /// The hash of an Ethernet frame (without FCS), `None` when RSS does not apply to it.
    pub fn hash(&self, frame: &[u8]) -> Option<u32> {
        let t = crate::wire::five_tuple(frame)?;
        Some(self.table_hash(&t.bytes[..if t.ports { 12 } else { 8 }]))
    }

    /// Is there only one queue (no hash to compute)?
    #[inline]
    pub fn is_single(&self) -> bool {
        self.reta.len() == 1
    }

    /// The receive queue of a frame.
    #[inline]
    pub fn queue(&self, frame: &[u8]) -> usize {
        match self.hash(frame) {
            Some(h) => self.reta[h as usize & (self.reta.len() - 1)] as usize,
            None => 0,
        }
    }
}

/// Checks an RSS configuration (`host.nic.rss_key`, `host.nic.reta_size`).
pub fn validate(key: &str, reta_size: u32) -> Result<()> {
    if parse_key(key).is_none() {
        return Err(ConfigError::new("nic.rss_key", key.to_string(), "40 bytes as 80 hex digits (spaces or colons allowed)").into());
    }
    if !reta_size.is_power_of_two() || !(1..=512).contains(&reta_size) {
        return Err(ConfigError::new("nic.reta_size", reta_size.to_string(), "a power of two from 1 to 512 (82599: 128)").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ethernet;

    fn tuple(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&src);
        b[4..8].copy_from_slice(&dst);
        b[8..10].copy_from_slice(&sport.to_be_bytes());
        b[10..12].copy_from_slice(&dport.to_be_bytes());
        b
    }

    /// params.md §9: the five IPv4 verification vectors with the Microsoft key.
    #[test]
    fn microsoft_verification_vectors() {
        for &(src, sport, dst, dport, ip_only, with_ports) in VERIFICATION_VECTORS {
            let t = tuple(src, sport, dst, dport);
            assert_eq!(toeplitz(&MICROSOFT_KEY, &t[..8]), ip_only, "{src:?}");
            assert_eq!(toeplitz(&MICROSOFT_KEY, &t), with_ports, "{src:?}:{sport}");
        }
    }

    /// params.md §9: the symmetric key gives the same hash both ways.
    #[test]
    fn symmetric_key_is_symmetric() {
        let key: Vec<u8> = [0x6d, 0x5a].repeat(20);
        let f = tuple([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766);
        let r = tuple([161, 142, 100, 80], 1766, [66, 9, 149, 187], 2794);
        assert_eq!(toeplitz(&key, &f), 0x9fcc9fcc);
        assert_eq!(toeplitz(&key, &r), 0x9fcc9fcc);
    }

    #[test]
    fn the_per_byte_table_gives_the_toeplitz_hash() {
        let rss = Rss::new(MICROSOFT_KEY, 128, 4);
        let t = tuple([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766);
        assert_eq!(rss.table_hash(&t), 0x51ccc178);
        assert_eq!(rss.table_hash(&t[..8]), 0x323e8fc2);
        for seed in 0..64u32 {
            let b: Vec<u8> = (0..12).map(|i| (seed.wrapping_mul(2654435761).rotate_left(i * 3) >> 7) as u8).collect();
            assert_eq!(rss.table_hash(&b), toeplitz(&MICROSOFT_KEY, &b));
        }
    }

    #[test]
    fn keys_parse_from_hex() {
        let text = "6d5a56da 255b0ec2 4167253d 43a38fb0 d0ca2bcb ae7b30b4 77cb2da3 8030f20c 6a42b73b beac01fa";
        assert_eq!(parse_key(text), Some(MICROSOFT_KEY));
        assert_eq!(parse_key(&key_hex(&MICROSOFT_KEY)), Some(MICROSOFT_KEY));
        assert_eq!(parse_key("6d5a"), None);
        assert!(validate("zz", 128).unwrap_err().to_string().starts_with("nic.rss_key"));
        assert!(validate(text, 100).unwrap_err().to_string().starts_with("nic.reta_size"));
    }

    fn udp_frame(src_port: u16) -> Vec<u8> {
        use crate::wire::{ipv4, udp};
        let mut f = vec![0u8; 60];
        ethernet::Repr { dst: ethernet::Mac([2, 0, 0, 0, 0, 2]), src: ethernet::Mac([2, 0, 0, 0, 0, 1]), ethertype: ethernet::ETHERTYPE_IPV4 }
            .emit(&mut ethernet::Packet::new_unchecked(&mut f[..]));
        ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 26, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
        udp::Repr { src_port, dst_port: 9, payload_len: 18 }.emit(&mut udp::Packet::new_unchecked(&mut f[34..]));
        f
    }

    #[test]
    fn flows_spread_over_queues_and_one_flow_stays_on_one() {
        let rss = Rss::new(MICROSOFT_KEY, 128, 4);
        let mut per_queue = [0u32; 4];
        for port in 1024..1024 + 1000 {
            per_queue[rss.queue(&udp_frame(port))] += 1;
        }
        // Within ±10 % of even (the bound RSS was accepted on; a uniform hash
        // gives Binomial(1000, 1/4): σ ≈ 13.7, so ±25 is ±1.8σ).
        assert!(per_queue.iter().all(|&n| (225..=275).contains(&n)), "{per_queue:?}");
        let q = rss.queue(&udp_frame(5000));
        assert!((0..100).all(|_| rss.queue(&udp_frame(5000)) == q));
        // Not IPv4: queue 0.
        let mut raw = udp_frame(5000);
        raw[12..14].copy_from_slice(&[0x88, 0xb5]);
        assert_eq!(rss.queue(&raw), 0);
        assert_eq!(Rss::single().queue(&udp_frame(5000)), 0);
    }
}
