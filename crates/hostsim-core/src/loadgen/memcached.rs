//! The memcached client (`loadgen.memcached`; SPEC 2.3, 2.9): each departure
//! becomes one memcached UDP request (`get <key>` or `set <key> 0 0 <n>`),
//! and replies are matched to requests by the frame header's request id.
//!
//! Keys and sizes: key i has a length drawn from the key-size Zipf and a
//! value length drawn from the value-size Zipf, both a deterministic function
//! of the seed and i (a SplitMix64 hash), so a SET and a later GET of key i
//! agree without storing anything per key. A key is i in hex, a `.`, then
//! filler letters up to its length; its value is letters too. Which key a
//! request names follows a Zipf popularity over the key space (rejection
//! sampling, no table). With `populate`, request n < keys is the SET of key n.
//!
//! Replies: the request id is the low 16 bits of the request's sequence
//! number; a table of 65536 slots (transmit time, sequence, op, datagrams
//! seen) pairs each reply with its request, so a lost request or reply never
//! shifts another's sample. A reply is complete when all its datagrams (the
//! header's count) arrived; its latency (first bit out to last datagram in)
//! goes to `Measure` under the request's sequence number. A request whose
//! slot is reused 65536 requests later unanswered counts as lost.
//!
//! Read first: memcached's doc/protocol.txt ("UDP protocol").

use rand_distr::Zipf;
use serde_json::{json, Value};

use super::frame::{header_len, FrameBuilder};
use super::measure::Measure;
use crate::loadgen::config::{McClientConfig, Protocol, ZipfSizeConfig};
use crate::engine::time::Ps;
use crate::engine::SimRng;
use crate::error::{ConfigError, Result};
use crate::wire::ethernet::{self, FCS_LEN};
use crate::wire::memcached::{self as mc, KEY_MAX_BYTES};
use crate::wire::{ipv4, udp};

/// Request ids are 16 bits: one slot per id.
pub const SLOTS: usize = 1 << 16;
const STREAM_OPS: u64 = 11;
const STREAM_KEYS: u64 = 12;
const HASH_KEY_SIZE: u64 = 1;
const HASH_VALUE_SIZE: u64 = 2;
const HASH_FILLER: u64 = 3;

fn invalid(field: &str, value: impl ToString, allowed: &str) -> crate::error::Error {
    ConfigError::new(field, value.to_string(), allowed).into()
}

fn check_sizes(s: &ZipfSizeConfig, field: &str, lo: u32, hi: u32) -> Result<()> {
    if s.min < lo || s.min > hi {
        return Err(invalid(&format!("{field}.min"), s.min, &format!("{lo} to {hi} bytes")));
    }
    if s.max < s.min || s.max > hi {
        return Err(invalid(&format!("{field}.max"), s.max, &format!("{} to {hi} bytes", s.min)));
    }
    if !(s.skew.is_finite() && s.skew >= 0.0) {
        return Err(invalid(&format!("{field}.skew"), s.skew, ">= 0"));
    }
    Ok(())
}

/// Hex digits of the largest key index.
fn index_digits(keys: u64) -> u32 {
    let last = keys.saturating_sub(1).max(1);
    (64 - last.leading_zeros()).div_ceil(4)
}

/// Checks a client config; `limit_bytes` is the largest frame a request may fill.
pub fn validate(c: &McClientConfig, limit_bytes: u32) -> Result<()> {
    const F: &str = "loadgen.memcached";
    if !(1..=super::config::MAX_MEMCACHED_KEYS).contains(&c.keys) {
        return Err(invalid(&format!("{F}.keys"), c.keys, &format!("1 to {}", super::config::MAX_MEMCACHED_KEYS)));
    }
    let need = index_digits(c.keys) + 1;
    check_sizes(&c.key_size, &format!("{F}.key_size"), need, KEY_MAX_BYTES as u32)?;
    check_sizes(&c.value_size, &format!("{F}.value_size"), 0, 1 << 20)?;
    for (f, v) in [("key_skew", c.key_skew), ("get_ratio", c.get_ratio)] {
        if !(v.is_finite() && v >= 0.0) || (f == "get_ratio" && v > 1.0) {
            let allowed = if f == "get_ratio" { "0 to 1" } else { ">= 0" };
            return Err(invalid(&format!("{F}.{f}"), v, allowed));
        }
    }
    let biggest = set_frame_bytes(c.key_size.max, c.value_size.max);
    if biggest > limit_bytes {
        return Err(invalid(
            &format!("{F}.value_size.max"),
            c.value_size.max,
            &format!("a SET of the largest key and value in one frame: {biggest} B > {limit_bytes} B (set loadgen.size to jumbo sizes for larger frames)"),
        ));
    }
    Ok(())
}

fn digits(n: u32) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// UDP payload of `set <key> 0 0 <n>\r\n<value>\r\n`.
fn set_payload_bytes(key: u32, value: u32) -> usize {
    mc::HEADER_LEN + 4 + key as usize + 5 + digits(value) + 2 + value as usize + 2
}

fn frame_bytes(payload: usize) -> u32 {
    ((header_len(Protocol::Udp) + payload + FCS_LEN) as u32).max(64)
}

fn set_frame_bytes(key: u32, value: u32) -> u32 {
    frame_bytes(set_payload_bytes(key, value))
}

/// SplitMix64 of (seed, index, purpose): per-key draws without per-key state.
fn hash(seed: u64, i: u64, purpose: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ purpose.wrapping_mul(0xD1B5_4A32_D192_ED03);
    for _ in 0..2 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Sizes min..=max with Zipf weights 1 / rank^skew, sampled by inverting the CDF.
pub struct ZipfSizes {
    min: u32,
    cdf: Vec<f64>,
}

impl ZipfSizes {
    pub fn new(c: &ZipfSizeConfig) -> Self {
        let w: Vec<f64> = (1..=(c.max - c.min + 1)).map(|r| (r as f64).powf(-c.skew)).collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cdf = w.iter().map(|x| {
            acc += x / total;
            acc
        }).collect();
        ZipfSizes { min: c.min, cdf }
    }

    /// The size at quantile `u` in [0, 1).
    pub fn at(&self, u: f64) -> u32 {
        let i = self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1);
        self.min + i as u32
    }

    pub fn mean(&self) -> f64 {
        let mut prev = 0.0;
        self.cdf.iter().enumerate().map(|(i, &c)| {
            let p = c - prev;
            prev = c;
            p * (self.min as f64 + i as f64)
        }).sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Get,
    Set,
}

/// What a complete reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unknown,
    Hit,
    Miss,
    Stored,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Waiting,
    Done,
    TimedOut,
}

#[derive(Clone, Copy)]
struct Slot {
    seq: u64,
    /// The request's flow (its UDP source port's offset).
    flow: u16,
    tx_ps: Ps,
    op: Op,
    state: State,
    kind: Kind,
    datagrams: u16,
    got: u16,
    seen: u64,
    bytes: u32,
}

const EMPTY: Slot = Slot { seq: 0, flow: 0, tx_ps: 0, op: Op::Get, state: State::Free, kind: Kind::Unknown, datagrams: 0, got: 0, seen: 0, bytes: 0 };

/// Counts over requests sent in the measured window.
#[derive(Debug, Default, Clone, Copy)]
pub struct McCounters {
    pub requests: u64,
    pub gets: u64,
    pub sets: u64,
    pub replies: u64,
    pub hits: u64,
    pub misses: u64,
    pub stored: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Replies to requests already given up (timed out, or their id taken
    /// by a newer request): counted, never paired.
    pub late_replies: u64,
    /// Requests given up because a newer request needed their id while they
    /// were still unanswered (more than 65 536 in flight): counted in
    /// `timeouts` too.
    pub id_reuses: u64,
    /// Frames that are no reply of ours (wrong port, bad header, unknown id).
    pub invalid: u64,
}

/// What a received frame did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A request is now complete (and was still outstanding).
    Completed,
    /// Anything else: part of a reply, a duplicate, a late or foreign frame.
    Nothing,
}

/// Requests drawn to estimate the mix's mean frame ([`McClient::mean_frame_bytes`]).
pub const MEAN_SAMPLE: u64 = 4096;

pub struct McClient {
    cfg: McClientConfig,
    seed: u64,
    key_sizes: ZipfSizes,
    value_sizes: ZipfSizes,
    popularity: Option<Zipf<f64>>,
    ops: SimRng,
    keys: SimRng,
    /// The request prepared by `prepare`: its op, key and UDP payload.
    op: Op,
    payload: Vec<u8>,
    slots: Vec<Slot>,
    /// Oldest sequence number that may still be waiting (timeout scan).
    oldest: u64,
    pub counters: McCounters,
}

impl McClient {
    /// `cfg` must have been validated.
    pub fn new(cfg: &McClientConfig, seed: u64) -> Self {
        McClient {
            cfg: cfg.clone(),
            seed,
            key_sizes: ZipfSizes::new(&cfg.key_size),
            value_sizes: ZipfSizes::new(&cfg.value_size),
            popularity: (cfg.key_skew > 0.0).then(|| Zipf::new(cfg.keys, cfg.key_skew).ok()).flatten(),
            ops: SimRng::new(seed, STREAM_OPS),
            keys: SimRng::new(seed, STREAM_KEYS),
            op: Op::Get,
            payload: Vec::with_capacity(2048),
            slots: vec![EMPTY; SLOTS],
            oldest: 0,
            counters: McCounters::default(),
        }
    }

    /// The builder for request frames: the generator's addresses, UDP to the server's port.
    pub fn builder(&self, lg: &crate::loadgen::config::LoadgenConfig) -> FrameBuilder {
        let mut c = lg.clone();
        c.protocol = Protocol::Udp;
        c.dst_port = self.cfg.udp_port;
        FrameBuilder::new(&c)
    }

    pub fn key_len(&self, i: u64) -> u32 {
        self.key_sizes.at(unit(hash(self.seed, i, HASH_KEY_SIZE)))
    }

    pub fn value_len(&self, i: u64) -> u32 {
        self.value_sizes.at(unit(hash(self.seed, i, HASH_VALUE_SIZE)))
    }

    /// Appends key `i` to `out`: hex index, `.`, letters.
    pub fn write_key(&self, i: u64, out: &mut Vec<u8>) {
        let len = self.key_len(i) as usize;
        let start = out.len();
        let w = index_digits(self.cfg.keys) as usize;
        out.extend_from_slice(format!("{i:0w$x}.").as_bytes());
        let mut h = hash(self.seed, i, HASH_FILLER);
        while out.len() - start < len {
            out.push(b'a' + (h % 26) as u8);
            h = h.rotate_right(5).wrapping_add(0x9E37_79B9);
        }
    }

    /// Largest request frame (FCS included).
    pub fn max_frame_bytes(&self) -> u32 {
        set_frame_bytes(self.cfg.key_size.max, self.cfg.value_size.max)
    }

    /// Mean request frame (FCS included), for rates in bps or percent of
    /// line rate: the mean of the first [`MEAN_SAMPLE`] requests of the mix
    /// (after the populate sets) exactly as this client draws them. A closed
    /// form from the mean key and value sizes misses what the frames do:
    /// short gets padded to the minimum frame, keys drawn as often as their
    /// popularity makes them, values' lengths written out in digits (it put
    /// the altra memcached mix at 97.7 B where the frames sent averaged
    /// 102.7 B, so 100 % asked the link for more than it carries).
    pub fn mean_frame_bytes(&self) -> f64 {
        let mut c = McClient::new(&self.cfg, self.seed);
        let first = if self.cfg.populate { self.cfg.keys } else { 0 };
        (first..first + MEAN_SAMPLE).map(|seq| c.prepare(seq) as f64).sum::<f64>() / MEAN_SAMPLE as f64
    }

    /// Chooses request `seq` and builds its UDP payload; returns its frame size.
    pub fn prepare(&mut self, seq: u64) -> u32 {
        let c = &self.cfg;
        let (op, key) = if c.populate && seq < c.keys {
            (Op::Set, seq)
        } else {
            let op = if self.ops.unit() < c.get_ratio { Op::Get } else { Op::Set };
            let key = match &self.popularity {
                Some(z) => (self.keys.sample(z) as u64).clamp(1, c.keys) - 1,
                None => ((self.keys.unit() * c.keys as f64) as u64).min(c.keys - 1),
            };
            (op, key)
        };
        let mut p = std::mem::take(&mut self.payload);
        p.clear();
        p.extend_from_slice(&mc::Repr { request_id: seq as u16, sequence: 0, datagrams: 1 }.to_bytes());
        p.extend_from_slice(if op == Op::Get { b"get " } else { b"set " });
        self.write_key(key, &mut p);
        if op == Op::Get {
            p.extend_from_slice(b"\r\n");
        } else {
            let n = self.value_len(key) as usize;
            p.extend_from_slice(format!(" 0 0 {n}\r\n").as_bytes());
            p.extend((0..n).map(|j| b'a' + ((key as usize + j) % 26) as u8));
            p.extend_from_slice(b"\r\n");
        }
        self.payload = p;
        self.op = op;
        frame_bytes(self.payload.len())
    }

    /// Writes the prepared request into `buf` (the frame without FCS) and
    /// records it as outstanding under `seq`. Its request id (`seq` mod
    /// 2^16) may still belong to an unanswered request: that one is given up
    /// (a timeout; true is returned, the caller frees its place).
    pub fn emit(&mut self, b: &FrameBuilder, buf: &mut [u8], seq: u64, flow: u16, tx_ps: Ps, m: &Measure) -> bool {
        let h = header_len(Protocol::Udp);
        let n = self.payload.len();
        b.build_udp_headers(buf, n, flow);
        buf[h..h + n].copy_from_slice(&self.payload);
        buf[h + n..].fill(0);
        let slot = &mut self.slots[seq as usize % SLOTS];
        let evicted = slot.state == State::Waiting;
        if evicted {
            self.counters.id_reuses += 1;
            self.counters.timeouts += m.in_window(slot.tx_ps) as u64;
        }
        *slot = Slot { seq, flow, tx_ps, op: self.op, state: State::Waiting, ..EMPTY };
        if m.in_window(tx_ps) {
            let c = &mut self.counters;
            c.requests += 1;
            match self.op {
                Op::Get => c.gets += 1,
                Op::Set => c.sets += 1,
            }
        }
        evicted
    }

    /// A frame came back at `now`: pairs it with its request by id. `answers`
    /// is the simulator's identity of the request the frame answers (the
    /// frame pool's): a reply whose id now belongs to a newer request is late,
    /// never paired with that one.
    pub fn receive(&mut self, frame: &[u8], answers: Option<u64>, now: Ps, m: &mut Measure) -> Received {
        let Some(payload) = self.reply_payload(frame) else {
            self.counters.invalid += 1;
            return Received::Nothing;
        };
        let Ok(p) = mc::Packet::new_checked(payload) else {
            self.counters.invalid += 1;
            return Received::Nothing;
        };
        let Ok(r) = mc::Repr::parse(&p) else { return Received::Nothing };
        let slot = &mut self.slots[r.request_id as usize];
        if let Some(seq) = answers.filter(|&s| s != slot.seq && slot.state != State::Free) {
            // The id was given to a newer request: this answers an older one.
            if seq < slot.seq {
                self.counters.late_replies += 1;
            } else {
                self.counters.invalid += 1;
            }
            return Received::Nothing;
        }
        match slot.state {
            State::Free => {
                self.counters.invalid += 1;
                return Received::Nothing;
            }
            State::TimedOut => {
                self.counters.late_replies += m.in_window(slot.tx_ps) as u64;
                return Received::Nothing;
            }
            State::Done => {
                // A duplicate: Measure recognises the sequence number again.
                m.on_rx(slot.seq, slot.flow, slot.tx_ps, now, frame.len() as u32 + FCS_LEN as u32);
                return Received::Nothing;
            }
            State::Waiting => {}
        }
        if r.datagrams == 0 || r.sequence >= r.datagrams.min(64) || (slot.got > 0 && r.datagrams != slot.datagrams) {
            self.counters.invalid += 1;
            return Received::Nothing;
        }
        let bit = 1u64 << r.sequence;
        if slot.seen & bit != 0 {
            return Received::Nothing;
        }
        slot.seen |= bit;
        slot.got += 1;
        slot.datagrams = r.datagrams;
        slot.bytes += frame.len() as u32 + FCS_LEN as u32;
        if r.sequence == 0 {
            slot.kind = classify(slot.op, p.payload());
        }
        if slot.got < slot.datagrams {
            return Received::Nothing;
        }
        slot.state = State::Done;
        let s = *slot;
        m.on_rx(s.seq, s.flow, s.tx_ps, now, s.bytes);
        if m.in_window(s.tx_ps) {
            let c = &mut self.counters;
            c.replies += 1;
            match s.kind {
                Kind::Hit => c.hits += 1,
                Kind::Miss => c.misses += 1,
                Kind::Stored => c.stored += 1,
                Kind::Error | Kind::Unknown => c.errors += 1,
            }
        }
        Received::Completed
    }

    /// The UDP payload of a reply from the server's port, if the frame is one.
    fn reply_payload<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        let eth = ethernet::Packet::new_checked(frame).ok()?;
        if ethernet::Repr::parse(&eth).ok()?.ethertype != ethernet::ETHERTYPE_IPV4 {
            return None;
        }
        let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
        if ip.protocol() != ipv4::PROTO_UDP {
            return None;
        }
        let start = ethernet::HEADER_LEN + ip.header_len();
        let u = udp::Packet::new_checked(ip.payload()).ok()?;
        if u.src_port() != self.cfg.udp_port {
            return None;
        }
        let len = u.payload().len();
        let start = start + udp::HEADER_LEN;
        frame.get(start..start + len)
    }

    /// Gives up requests sent at or before `now - timeout_ps` still unanswered
    /// (closed loop); `next_seq` is one past the newest request. Returns how many.
    pub fn expire(&mut self, now: Ps, timeout_ps: Ps, next_seq: u64, m: &Measure) -> u32 {
        self.oldest = self.oldest.max(next_seq.saturating_sub(SLOTS as u64));
        let mut n = 0;
        while self.oldest < next_seq {
            let slot = &mut self.slots[self.oldest as usize % SLOTS];
            if slot.seq == self.oldest && slot.state == State::Waiting {
                if slot.tx_ps.saturating_add(timeout_ps) > now {
                    break;
                }
                slot.state = State::TimedOut;
                self.counters.timeouts += m.in_window(slot.tx_ps) as u64;
                n += 1;
            }
            self.oldest += 1;
        }
        n
    }

    pub fn result_json(&self, window_s: f64) -> Value {
        let c = &self.counters;
        json!({
            "requests": c.requests,
            "gets": c.gets,
            "sets": c.sets,
            "replies": c.replies,
            "hits": c.hits,
            "misses": c.misses,
            "stored": c.stored,
            "errors": c.errors,
            "timeouts": c.timeouts,
            "late_replies": c.late_replies,
            "id_reuses": c.id_reuses,
            "invalid": c.invalid,
            "rps": c.replies as f64 / window_s,
        })
    }
}

/// What the first datagram of a reply says about a request of kind `op`.
fn classify(op: Op, data: &[u8]) -> Kind {
    match op {
        Op::Get if data.starts_with(b"VALUE ") => Kind::Hit,
        Op::Get if data == b"END\r\n" => Kind::Miss,
        Op::Set if data == b"STORED\r\n" => Kind::Stored,
        _ => Kind::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadgen::config::LoadgenConfig;

    fn cfg() -> McClientConfig {
        McClientConfig {
            keys: 1000,
            key_size: ZipfSizeConfig { min: 8, max: 32, skew: 0.0 },
            value_size: ZipfSizeConfig { min: 1, max: 200, skew: 1.0 },
            ..McClientConfig::default()
        }
    }

    #[test]
    fn skew_one_sizes_follow_the_zipf_weights() {
        let z = ZipfSizes::new(&ZipfSizeConfig { min: 10, max: 19, skew: 1.0 });
        let n = 200_000;
        let mut hist = [0u32; 10];
        for i in 0..n {
            hist[(z.at(unit(hash(3, i, 9))) - 10) as usize] += 1;
        }
        let h10: f64 = (1..=10).map(|r| 1.0 / r as f64).sum();
        for (r, &c) in hist.iter().enumerate() {
            let want = 1.0 / (r + 1) as f64 / h10;
            let got = c as f64 / n as f64;
            assert!((got / want - 1.0).abs() < 0.05, "rank {}: {got} vs {want}", r + 1);
        }
        let flat = ZipfSizes::new(&ZipfSizeConfig { min: 1, max: 4, skew: 0.0 });
        assert_eq!((flat.at(0.0), flat.at(0.26), flat.at(0.99)), (1, 2, 4));
    }

    #[test]
    fn keys_are_a_function_of_seed_and_index() {
        let (a, b, c) = (McClient::new(&cfg(), 7), McClient::new(&cfg(), 7), McClient::new(&cfg(), 8));
        let key = |m: &McClient, i| {
            let mut v = vec![];
            m.write_key(i, &mut v);
            v
        };
        for i in [0, 1, 999] {
            assert_eq!(key(&a, i), key(&b, i));
            assert_eq!(a.value_len(i), b.value_len(i));
            assert_eq!(key(&a, i).len() as u32, a.key_len(i));
            assert!(key(&a, i).iter().all(|b| b.is_ascii_alphanumeric() || *b == b'.'));
        }
        assert_ne!((0..20).map(|i| key(&a, i)).collect::<Vec<_>>(), (0..20).map(|i| key(&c, i)).collect::<Vec<_>>());
        let all: std::collections::HashSet<Vec<u8>> = (0..1000).map(|i| key(&a, i)).collect();
        assert_eq!(all.len(), 1000, "keys are distinct");
    }

    /// Builds request `seq` into a frame; returns the frame (without FCS).
    fn request(m: &mut McClient, b: &FrameBuilder, seq: u64, tx: Ps, meas: &Measure) -> Vec<u8> {
        let bytes = m.prepare(seq);
        let mut buf = vec![0xee; bytes as usize - FCS_LEN];
        m.emit(b, &mut buf, seq, 0, tx, meas);
        buf
    }

    #[test]
    fn requests_parse_with_etherparse_and_the_store_parser() {
        let mut m = McClient::new(&cfg(), 1);
        let b = m.builder(&LoadgenConfig::default());
        let meas = Measure::new(0, u64::MAX, 0);
        let mut sets = 0;
        for seq in [0u64, 1, 999, 1000, 1001, 1002, 1003, 70_000] {
            let f = request(&mut m, &b, seq, 5, &meas);
            let p = etherparse::SlicedPacket::from_ethernet(&f).unwrap();
            let Some(etherparse::TransportSlice::Udp(u)) = p.transport else { panic!("not udp") };
            assert_eq!(u.destination_port(), 11211);
            let payload = u.payload();
            let h = mc::Repr::parse(&mc::Packet::new_checked(payload).unwrap()).unwrap();
            assert_eq!(h, mc::Repr { request_id: seq as u16, sequence: 0, datagrams: 1 });
            let text = &payload[8..];
            let eol = text.windows(2).position(|w| w == b"\r\n").unwrap();
            match mc::Command::parse(&text[..eol]).unwrap() {
                mc::Command::Set { key, bytes, .. } => {
                    sets += 1;
                    if seq < 1000 {
                        let mut k = vec![];
                        m.write_key(seq, &mut k);
                        assert_eq!(key, &k[..], "populate sets key {seq}");
                        assert_eq!(bytes as u32, m.value_len(seq));
                    }
                    assert_eq!(text.len(), eol + 2 + bytes + 2);
                }
                mc::Command::Get { keys, .. } => assert_eq!(keys.iter().count(), 1),
                c => panic!("unexpected {c:?}"),
            }
        }
        assert!(sets >= 3);
    }

    /// A reply datagram from the server to the generator.
    fn reply(id: u16, seq: u16, count: u16, text: &str) -> Vec<u8> {
        let lg = LoadgenConfig { src_port: 11211, dst_port: 1024, ..LoadgenConfig::default() };
        let b = FrameBuilder::new(&lg);
        let mut payload = mc::Repr { request_id: id, sequence: seq, datagrams: count }.to_bytes().to_vec();
        payload.extend_from_slice(text.as_bytes());
        let mut f = vec![0u8; (42 + payload.len()).max(60)];
        b.build_udp_headers(&mut f, payload.len(), 0);
        f[42..42 + payload.len()].copy_from_slice(&payload);
        f
    }

    #[test]
    fn replies_pair_by_id_through_drops_reordering_and_duplicates() {
        let mut c = cfg();
        c.populate = false;
        c.get_ratio = 1.0;
        let mut m = McClient::new(&c, 1);
        let b = m.builder(&LoadgenConfig::default());
        let mut meas = Measure::new(0, u64::MAX, 100);
        for seq in 0..5 {
            request(&mut m, &b, seq, 1000 * seq, &meas);
            meas.on_tx(1000 * seq, 64);
        }
        // Request 1 is lost; 3 comes back before 2; 4 in two datagrams, out of order; 0 twice.
        assert_eq!(m.receive(&reply(0, 0, 1, "END\r\n"), None, 10_000, &mut meas), Received::Completed);
        assert_eq!(m.receive(&reply(3, 0, 1, "VALUE x 0 1\r\na\r\nEND\r\n"), None, 10_500, &mut meas), Received::Completed);
        assert_eq!(m.receive(&reply(2, 0, 1, "END\r\n"), None, 11_000, &mut meas), Received::Completed);
        assert_eq!(m.receive(&reply(4, 1, 2, "END\r\n"), None, 12_000, &mut meas), Received::Nothing);
        assert_eq!(m.receive(&reply(4, 0, 2, "VALUE x 0 2000\r\n"), None, 12_500, &mut meas), Received::Completed);
        assert_eq!(m.receive(&reply(0, 0, 1, "END\r\n"), None, 13_000, &mut meas), Received::Nothing);
        assert_eq!(m.receive(&reply(9, 0, 1, "END\r\n"), None, 13_000, &mut meas), Received::Nothing);
        let s: Vec<(u64, u64)> = meas.samples().to_vec();
        assert_eq!(s, vec![(0, 10_000), (3, 7_500), (2, 9_000), (4, 8_500)]);
        let k = m.counters;
        assert_eq!((k.requests, k.replies, k.hits, k.misses, k.invalid), (5, 4, 2, 2, 1));
        assert_eq!((meas.lost(), meas.reordered, meas.duplicates), (1, 1, 1));
        // The lost request times out; a late reply then counts as late, not as a sample.
        assert_eq!(m.expire(2_500, 2_000, 5, &meas), 0);
        assert_eq!(m.expire(20_000, 2_000, 5, &meas), 1);
        assert_eq!(m.receive(&reply(1, 0, 1, "END\r\n"), None, 21_000, &mut meas), Received::Nothing);
        assert_eq!((m.counters.timeouts, m.counters.late_replies), (1, 1));
    }

    #[test]
    fn an_id_still_in_flight_is_given_up_before_reuse_and_its_late_reply_never_pairs() {
        let mut c = cfg();
        c.populate = false;
        let mut m = McClient::new(&c, 1);
        let b = m.builder(&LoadgenConfig::default());
        let meas = &mut Measure::new(0, u64::MAX, 10);
        let wrap = SLOTS as u64;
        for seq in 0..=wrap {
            request(&mut m, &b, seq, seq, meas);
            meas.on_tx(seq, 64);
        }
        // Request 0's id went to request 65 536 while 0 was unanswered.
        assert_eq!((m.counters.id_reuses, m.counters.timeouts), (1, 1));
        // Request 0's reply arrives: same id, but it answers frame 0 — late, not a sample.
        assert_eq!(m.receive(&reply(0, 0, 1, "END\r\n"), Some(0), 70_000, meas), Received::Nothing);
        assert_eq!((m.counters.late_replies, m.counters.replies, meas.latency_count()), (1, 0, 0));
        // The newer request's own reply pairs, with its own latency.
        assert_eq!(m.receive(&reply(0, 0, 1, "END\r\n"), Some(wrap), 70_000, meas), Received::Completed);
        assert_eq!(meas.samples(), &[(wrap, 70_000 - wrap)]);
    }

    #[test]
    fn oversize_requests_are_refused_naming_the_value_size() {
        let mut c = cfg();
        c.value_size.max = 1500;
        let e = validate(&c, 1518).unwrap_err().to_string();
        assert!(e.contains("loadgen.memcached.value_size.max"), "{e}");
        assert!(validate(&c, 9216).is_ok());
        c.key_size.min = 2;
        let e = validate(&c, 9216).unwrap_err().to_string();
        assert!(e.contains("loadgen.memcached.key_size.min"), "{e}");
    }
}
