//! memcached over UDP: the 8-byte UDP frame header and the ASCII protocol's
//! command lines (`get`, `gets`, `set`, `delete`).
//!
//! The frame header (memcached `doc/protocol.txt`, "UDP protocol") is four
//! big-endian 16-bit fields: request id, sequence number, total datagrams in
//! the message, reserved. memcached 1.6 never checks the reserved field nor
//! the sequence number of a request, so [`Repr::parse`] does not either; a
//! request whose datagram count is not 1, or that carries no byte after the
//! header, is dropped by the server (`kvs`), not here.
//!
//! [`Command::parse`] reads one command line (without its `\n` and optional
//! `\r`) the way memcached 1.6's text protocol does: tokens are separated by
//! single or repeated spaces only (a tab or a control byte is part of a
//! token, so keys may hold control bytes — memcached accepts them), command
//! names are case-sensitive, numbers follow C `strtoul`/`strtol` (leading
//! whitespace and a sign allowed, flags taken modulo 2^32), keys are at most
//! 250 bytes. Each error maps to the exact reply memcached sends.

use super::{WireError, WireResult};

/// Size of the UDP frame header.
pub const HEADER_LEN: usize = 8;
/// Largest response datagram memcached sends, header included (memcached.h `UDP_MAX_PAYLOAD_SIZE`).
pub const UDP_MAX_PAYLOAD_BYTES: usize = 1400;
/// Response data per datagram (`UDP_MAX_PAYLOAD_SIZE - UDP_HEADER_SIZE`).
pub const UDP_DATA_BYTES: usize = UDP_MAX_PAYLOAD_BYTES - HEADER_LEN;
/// Longest key memcached accepts (`KEY_MAX_LENGTH`).
pub const KEY_MAX_BYTES: usize = 250;

mod field {
    use std::ops::Range;
    pub const REQUEST_ID: Range<usize> = 0..2;
    pub const SEQUENCE: Range<usize> = 2..4;
    pub const DATAGRAMS: Range<usize> = 4..6;
    pub const RESERVED: Range<usize> = 6..8;
}

/// A zero-copy view of a UDP payload that starts with the frame header.
pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Packet { buf }
    }

    /// Fails with `Truncated` if the buffer cannot hold the header.
    pub fn new_checked(buf: T) -> WireResult<Self> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buf })
    }

    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[r.start], b[r.start + 1]])
    }
    pub fn request_id(&self) -> u16 {
        self.u16_at(field::REQUEST_ID)
    }
    pub fn sequence(&self) -> u16 {
        self.u16_at(field::SEQUENCE)
    }
    pub fn datagrams(&self) -> u16 {
        self.u16_at(field::DATAGRAMS)
    }
    pub fn reserved(&self) -> u16 {
        self.u16_at(field::RESERVED)
    }
    /// The protocol bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put(&mut self, r: std::ops::Range<usize>, v: u16) {
        self.buf.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_request_id(&mut self, v: u16) {
        self.put(field::REQUEST_ID, v)
    }
    pub fn set_sequence(&mut self, v: u16) {
        self.put(field::SEQUENCE, v)
    }
    pub fn set_datagrams(&mut self, v: u16) {
        self.put(field::DATAGRAMS, v)
    }
    pub fn set_reserved(&mut self, v: u16) {
        self.put(field::RESERVED, v)
    }
}

/// The frame header's meaningful fields (reserved is written as 0, ignored on parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub request_id: u16,
    pub sequence: u16,
    pub datagrams: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        Ok(Repr { request_id: p.request_id(), sequence: p.sequence(), datagrams: p.datagrams() })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_request_id(self.request_id);
        p.set_sequence(self.sequence);
        p.set_datagrams(self.datagrams);
        p.set_reserved(0);
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        self.emit(&mut Packet::new_unchecked(&mut b[..]));
        b
    }
}

/// A command line memcached rejects, with the reply it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandError {
    /// Unknown command or wrong token count: `ERROR` (never hidden by noreply).
    Error,
    /// Bad number or key over 250 bytes: `CLIENT_ERROR bad command line format`.
    BadFormat { noreply: bool },
    /// `delete <key> <x>` with `x` neither `0` nor `noreply`.
    DeleteUsage { noreply: bool },
}

impl CommandError {
    /// The reply line, `\r\n` included.
    pub fn reply(self) -> &'static [u8] {
        match self {
            CommandError::Error => b"ERROR\r\n",
            CommandError::BadFormat { .. } => b"CLIENT_ERROR bad command line format\r\n",
            CommandError::DeleteUsage { .. } => {
                b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
            }
        }
    }

    /// Does `noreply` hide this reply?
    pub fn noreply(self) -> bool {
        match self {
            CommandError::Error => false,
            CommandError::BadFormat { noreply } | CommandError::DeleteUsage { noreply } => noreply,
        }
    }
}

/// The keys of a `get` line, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys<'a> {
    rest: &'a [u8],
}

impl<'a> Keys<'a> {
    pub fn iter(&self) -> Tokens<'a> {
        Tokens { rest: self.rest }
    }
}

/// Space-separated tokens of a line (repeated spaces are one separator).
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| b != b' ')?;
        let rest = &self.rest[start..];
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

pub fn tokens(line: &[u8]) -> Tokens<'_> {
    Tokens { rest: line }
}

/// A parsed ASCII command line. `Set` is followed by `bytes` data bytes and `\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// `get <key>*` (`cas: false`) or `gets <key>*` (`cas: true`).
    Get { keys: Keys<'a>, cas: bool },
    Set { key: &'a [u8], flags: u32, exptime: i32, bytes: usize, noreply: bool },
    Delete { key: &'a [u8], noreply: bool },
}

impl<'a> Command<'a> {
    /// Parses one line (without `\r\n`).
    pub fn parse(line: &'a [u8]) -> Result<Command<'a>, CommandError> {
        let mut toks = tokens(line);
        let cmd = toks.next().ok_or(CommandError::Error)?;
        let n = 1 + toks.clone().count();
        match cmd {
            b"get" | b"gets" => {
                if n < 2 {
                    return Err(CommandError::Error);
                }
                if toks.clone().any(|k| k.len() > KEY_MAX_BYTES) {
                    return Err(CommandError::BadFormat { noreply: false });
                }
                let rest = &line[line.len() - toks.rest.len()..];
                Ok(Command::Get { keys: Keys { rest }, cas: cmd == b"gets" })
            }
            b"set" if n == 5 || n == 6 => Self::parse_set(toks),
            b"delete" if (2..=4).contains(&n) => Self::parse_delete(toks, n),
            _ => Err(CommandError::Error),
        }
    }

    fn parse_set(mut toks: Tokens<'a>) -> Result<Command<'a>, CommandError> {
        let noreply = toks.clone().last() == Some(b"noreply");
        let bad = CommandError::BadFormat { noreply };
        let key = toks.next().ok_or(bad)?;
        if key.len() > KEY_MAX_BYTES {
            return Err(bad);
        }
        let flags = strtoul32(toks.next().ok_or(bad)?).ok_or(bad)?;
        let exptime = strtol32(toks.next().ok_or(bad)?).ok_or(bad)?;
        let bytes = strtol32(toks.next().ok_or(bad)?).ok_or(bad)?;
        if !(0..=i32::MAX - 2).contains(&bytes) {
            return Err(bad);
        }
        Ok(Command::Set { key, flags, exptime, bytes: bytes as usize, noreply })
    }

    fn parse_delete(mut toks: Tokens<'a>, n: usize) -> Result<Command<'a>, CommandError> {
        let key = toks.next().ok_or(CommandError::Error)?;
        let mut noreply = false;
        if n > 2 {
            let hold_is_zero = toks.clone().next() == Some(b"0");
            noreply = toks.last() == Some(b"noreply");
            let valid = (n == 3 && (hold_is_zero || noreply)) || (n == 4 && hold_is_zero && noreply);
            if !valid {
                return Err(CommandError::DeleteUsage { noreply });
            }
        }
        if key.len() > KEY_MAX_BYTES {
            return Err(CommandError::BadFormat { noreply });
        }
        Ok(Command::Delete { key, noreply })
    }

    /// Writes the command line with `\r\n` (a `Set`'s data block is the caller's).
    pub fn emit(&self, buf: &mut Vec<u8>) {
        use std::io::Write;
        match *self {
            Command::Get { keys, cas } => {
                buf.extend_from_slice(if cas { b"gets" } else { b"get" });
                for k in keys.iter() {
                    buf.push(b' ');
                    buf.extend_from_slice(k);
                }
            }
            Command::Set { key, flags, exptime, bytes, noreply } => {
                buf.extend_from_slice(b"set ");
                buf.extend_from_slice(key);
                let _ = write!(buf, " {flags} {exptime} {bytes}");
                if noreply {
                    buf.extend_from_slice(b" noreply");
                }
            }
            Command::Delete { key, noreply } => {
                buf.extend_from_slice(b"delete ");
                buf.extend_from_slice(key);
                if noreply {
                    buf.extend_from_slice(b" noreply");
                }
            }
        }
        buf.extend_from_slice(b"\r\n");
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C `strtol`-style: leading whitespace, a sign, at least one digit, then the
/// end or a whitespace byte. Returns (negative, magnitude); None on no digits,
/// trailing garbage or overflow of 64 bits.
fn strto(tok: &[u8]) -> Option<(bool, u64)> {
    let mut i = tok.iter().position(|&b| !is_c_space(b))?;
    let neg = tok[i] == b'-';
    if tok[i] == b'-' || tok[i] == b'+' {
        i += 1;
    }
    let digits = tok[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in &tok[i..i + digits] {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    match tok.get(i + digits) {
        None => Some((neg, v)),
        Some(&b) if is_c_space(b) => Some((neg, v)),
        _ => None,
    }
}

/// memcached's `safe_strtoul` into 32 bits: a negative number is refused, a
/// large one is truncated to its low 32 bits (as memcached 1.6 on 64-bit does).
fn strtoul32(tok: &[u8]) -> Option<u32> {
    match strto(tok)? {
        (true, 0) => Some(0),
        (true, _) => None,
        (false, v) => Some(v as u32),
    }
}

/// memcached's `safe_strtol` (values outside 32 bits refused).
fn strtol32(tok: &[u8]) -> Option<i32> {
    let (neg, v) = strto(tok)?;
    let v = if neg { -(i64::try_from(v).ok()?) } else { i64::try_from(v).ok()? };
    i32::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_truncation() {
        let r = Repr { request_id: 0x1234, sequence: 2, datagrams: 3 };
        let b = r.to_bytes();
        assert_eq!(b, [0x12, 0x34, 0, 2, 0, 3, 0, 0]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), r);
        assert!(p.payload().is_empty());
        assert_eq!(Packet::new_checked(&b[..7]).err(), Some(WireError::Truncated));
        // Reserved is ignored, as memcached ignores it.
        let mut b2 = [0x00, 0x01, 0, 0, 0, 1, 0xab, 0xcd, b'x'];
        let p = Packet::new_checked(&mut b2[..]).unwrap();
        assert_eq!(p.reserved(), 0xabcd);
        assert_eq!(Repr::parse(&p).unwrap().datagrams, 1);
        assert_eq!(p.payload(), b"x");
        let mut p = Packet::new_unchecked(&mut b2[..]);
        r.emit(&mut p);
        assert_eq!(&b2[..8], &b);
        assert_eq!(UDP_DATA_BYTES, 1392);
    }

    fn keys(c: Command) -> Vec<Vec<u8>> {
        match c {
            Command::Get { keys, .. } => keys.iter().map(|k| k.to_vec()).collect(),
            _ => panic!("not a get"),
        }
    }

    #[test]
    fn get_lines() {
        let c = Command::parse(b"get a  bb\x01 c").unwrap();
        assert!(matches!(c, Command::Get { cas: false, .. }));
        assert_eq!(keys(c), vec![b"a".to_vec(), b"bb\x01".to_vec(), b"c".to_vec()]);
        assert!(matches!(Command::parse(b"gets a").unwrap(), Command::Get { cas: true, .. }));
        assert_eq!(Command::parse(b"get"), Err(CommandError::Error));
        assert_eq!(Command::parse(b"get   "), Err(CommandError::Error));
        assert_eq!(Command::parse(b"get\ta"), Err(CommandError::Error), "a tab is not a separator");
        assert_eq!(Command::parse(b"GET a"), Err(CommandError::Error), "case-sensitive");
        assert_eq!(Command::parse(b""), Err(CommandError::Error));
        let long = [b'k'; 251];
        let mut line = b"get a ".to_vec();
        line.extend_from_slice(&long);
        assert_eq!(Command::parse(&line), Err(CommandError::BadFormat { noreply: false }));
        assert!(Command::parse(&line[..line.len() - 1]).is_ok(), "250 bytes is allowed");
    }

    #[test]
    fn set_lines() {
        let c = Command::parse(b"set k 5 0 10").unwrap();
        assert_eq!(c, Command::Set { key: b"k", flags: 5, exptime: 0, bytes: 10, noreply: false });
        let c = Command::parse(b"set k 4294967297 -1 0 noreply").unwrap();
        assert_eq!(c, Command::Set { key: b"k", flags: 1, exptime: -1, bytes: 0, noreply: true });
        let c = Command::parse(b"set k +7 0 1 foo").unwrap();
        assert_eq!(c, Command::Set { key: b"k", flags: 7, exptime: 0, bytes: 1, noreply: false });
        let bad = Err(CommandError::BadFormat { noreply: false });
        assert_eq!(Command::parse(b"set k -1 0 1"), bad);
        assert_eq!(Command::parse(b"set k x 0 1"), bad);
        assert_eq!(Command::parse(b"set k 0 0 3x"), bad);
        assert_eq!(Command::parse(b"set k 0 0 -1"), bad);
        assert_eq!(Command::parse(b"set k 0 0 noreply"), Err(CommandError::BadFormat { noreply: true }));
        assert_eq!(Command::parse(b"set k 0 0"), Err(CommandError::Error));
        assert_eq!(Command::parse(b"set k 0 0 1 noreply x"), Err(CommandError::Error));
        let mut line = b"set ".to_vec();
        line.extend_from_slice(&[b'k'; 251]);
        line.extend_from_slice(b" 0 0 1 noreply");
        assert_eq!(Command::parse(&line), Err(CommandError::BadFormat { noreply: true }));
    }

    #[test]
    fn delete_lines() {
        assert_eq!(Command::parse(b"delete k"), Ok(Command::Delete { key: b"k", noreply: false }));
        assert_eq!(Command::parse(b"delete k 0"), Ok(Command::Delete { key: b"k", noreply: false }));
        assert_eq!(Command::parse(b"delete k noreply"), Ok(Command::Delete { key: b"k", noreply: true }));
        assert_eq!(Command::parse(b"delete k 0 noreply"), Ok(Command::Delete { key: b"k", noreply: true }));
        assert_eq!(Command::parse(b"delete k 5"), Err(CommandError::DeleteUsage { noreply: false }));
        assert_eq!(Command::parse(b"delete k 5 noreply"), Err(CommandError::DeleteUsage { noreply: true }));
        assert_eq!(Command::parse(b"delete"), Err(CommandError::Error));
        assert_eq!(Command::parse(b"delete a b c d"), Err(CommandError::Error));
        assert!(CommandError::DeleteUsage { noreply: false }.reply().ends_with(b"[noreply]\r\n"));
    }

    #[test]
    fn emit_roundtrips() {
        for line in [&b"get a b"[..], b"gets a", b"set k 1 -1 3 noreply", b"set k 0 0 0", b"delete k noreply"] {
            let mut out = Vec::new();
            Command::parse(line).unwrap().emit(&mut out);
            assert_eq!(&out[..out.len() - 2], line);
            assert!(out.ends_with(b"\r\n"));
        }
    }
}
