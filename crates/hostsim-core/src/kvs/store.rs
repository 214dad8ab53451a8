//! memcached's ASCII protocol over UDP on a [`Table`]: one request datagram
//! in, the response datagrams memcached 1.6 sends out.
//!
//! What memcached 1.6.18 does, and this store does too (each checked against
//! a real `memcached -U`, see `tests/memcached_peer.rs`):
//! * a request shorter than 9 bytes or whose datagram count is not 1 is
//!   dropped without a reply; sequence number and reserved field are ignored;
//! * every `\n`-terminated line runs in order (one `\r` before the `\n` is
//!   dropped); an unterminated last line is dropped;
//! * each command builds response objects: one per key of a `get`, the `END`
//!   riding on the last key's; each object becomes its own datagram(s) with
//!   sequence numbers from 0 and total `ceil(len / 1392)`;
//! * a `get` flushes the queued objects when it ends, as does the end of
//!   the datagram. memcached's `transmit_udp` sends the object at the head of
//!   the queue even when it is empty (a bare header with count 0 — seen when
//!   the first key of a get misses), and after each send it retires the
//!   following empty and noreply objects unsent;
//! * a key over 250 bytes in a `get` discards every queued object and
//!   answers `CLIENT_ERROR bad command line format`;
//! * a `set` that is too large answers `SERVER_ERROR object too large for
//!   cache`, swallows its data block and deletes the key's old value; a data
//!   block not followed by `\r\n` answers `CLIENT_ERROR bad data chunk` and
//!   the bytes after the declared length are read as commands; a bad set
//!   line is answered and its data line is read as a command (`ERROR`);
//! * exptime 0 never expires; a negative exptime stores an item that is
//!   already expired (STORED, then misses); positive exptimes are accepted
//!   and ignored (there is no clock here);
//! * `gets` reports a CAS unique from a counter that every stored item bumps.
//!
//! Where it differs, on purpose: the store is stateless between datagrams.
//! A `set` whose data block (or a too-large block being swallowed) runs past
//! the end of the datagram ends the datagram here — memcached would take the
//! next datagram's bytes, header included, as the rest of the data, and
//! holds its queued replies until then. There is no LRU eviction: a new key
//! in a full table answers `SERVER_ERROR out of memory storing object`
//! (memcached's reply when it cannot allocate). Commands other than get,
//! gets, set and delete (add, incr, touch, the meta commands, …) answer
//! `ERROR`. memcached yields after 20 commands of one datagram
//! (`reqs_per_event`) and flushes there; this store does not (untested).

use std::io::Write;

use super::datagrams::Datagrams;
use super::table::{Table, TableConfig, ITEM_HEADER_BYTES};
use super::LineSink;
use crate::error::{ConfigError, Result};
use crate::wire::memcached::{self, Command, CommandError, KEY_MAX_BYTES};

/// What makes a `set` too large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueLimit {
    /// Values longer than this many bytes are refused.
    ValueBytes(usize),
    /// memcached's rule for `-I <n>`: refused when `48 + key + 1 + (4 if flags
    /// ≠ 0) + value + 2 + 8` exceeds `n` (item header, key and NUL, flags
    /// suffix, value and CRLF, CAS).
    MemcachedItemBytes(usize),
}

impl ValueLimit {
    pub fn allows(self, key_len: usize, flags: u32, value_len: usize) -> bool {
        match self {
            ValueLimit::ValueBytes(max) => value_len <= max,
            ValueLimit::MemcachedItemBytes(max) => {
                let suffix = if flags != 0 { 4 } else { 0 };
                ITEM_HEADER_BYTES as usize + key_len + 1 + suffix + value_len + 2 + 8 <= max
            }
        }
    }

    /// The longest value any key could store.
    pub fn max_value_bytes(self) -> usize {
        match self {
            ValueLimit::ValueBytes(max) => max,
            ValueLimit::MemcachedItemBytes(max) => max.saturating_sub(ITEM_HEADER_BYTES as usize + 2 + 2 + 8),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// Hash chains; a power of two.
    pub buckets: usize,
    /// Item slots: the most keys stored at once.
    pub items: usize,
    pub value_limit: ValueLimit,
    /// Simulated address of the bucket array (8 B per bucket).
    pub bucket_base_addr: u64,
    /// Simulated address of the item arena (`items` slots of
    /// [`StoreConfig::item_stride_bytes`]).
    pub item_base_addr: u64,
}

impl Default for StoreConfig {
    /// 65536 buckets and items, values up to 1024 B (the defaults of our DPDK `kvs`).
    fn default() -> Self {
        StoreConfig {
            buckets: 65536,
            items: 65536,
            value_limit: ValueLimit::ValueBytes(1024),
            bucket_base_addr: 0x4000_0000,
            item_base_addr: 0x5000_0000,
        }
    }
}

impl StoreConfig {
    /// Simulated bytes of one item slot: header, longest key, longest value, rounded to 64 B.
    pub fn item_stride_bytes(&self) -> u64 {
        let raw = ITEM_HEADER_BYTES + KEY_MAX_BYTES as u64 + self.value_limit.max_value_bytes() as u64;
        raw.div_ceil(64) * 64
    }

    pub fn validate(&self) -> Result<()> {
        if !self.buckets.is_power_of_two() {
            return Err(ConfigError::new("kvs.buckets", self.buckets.to_string(), "a power of two").into());
        }
        if self.items == 0 || self.items >= u32::MAX as usize {
            return Err(ConfigError::new("kvs.items", self.items.to_string(), "1 to 2^32 - 2").into());
        }
        Ok(())
    }
}

/// Per-command counters, named like memcached's `stats` where it has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Keys requested by get/gets (memcached counts keys, not commands).
    pub cmd_get: u64,
    pub get_hits: u64,
    pub get_misses: u64,
    /// Set commands whose line parsed.
    pub cmd_set: u64,
    /// Items stored (`total_items`).
    pub total_items: u64,
    pub delete_hits: u64,
    pub delete_misses: u64,
    /// `ERROR` replies (unknown command, wrong token count).
    pub errors: u64,
    /// `CLIENT_ERROR` replies (bad line, bad data chunk).
    pub client_errors: u64,
    /// Sets refused as too large.
    pub too_large: u64,
    /// New keys refused because the table is full.
    pub out_of_memory: u64,
    /// Requests dropped: shorter than header + 1 byte.
    pub dropped_truncated: u64,
    /// Requests dropped: datagram count ≠ 1.
    pub dropped_multi_datagram: u64,
    /// Lines or data blocks cut off by the end of the datagram.
    pub incomplete: u64,
}

/// One response object (memcached's `mc_resp`): a range of `Store::resp_bytes`.
#[derive(Debug, Clone, Copy)]
struct Resp {
    start: usize,
    end: usize,
    skip: bool,
}

#[derive(Debug, Clone)]
pub struct Store {
    cfg: StoreConfig,
    table: Table,
    stats: Stats,
    next_cas: u64,
    resp_bytes: Vec<u8>,
    resps: Vec<Resp>,
}

impl Store {
    pub fn new(cfg: StoreConfig) -> Result<Store> {
        cfg.validate()?;
        let table = Table::new(TableConfig {
            buckets: cfg.buckets,
            items: cfg.items,
            item_stride_bytes: cfg.item_stride_bytes(),
            bucket_base_addr: cfg.bucket_base_addr,
            item_base_addr: cfg.item_base_addr,
        });
        Ok(Store { cfg, table, stats: Stats::default(), next_cas: 1, resp_bytes: Vec::new(), resps: Vec::new() })
    }

    pub fn config(&self) -> &StoreConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Stores a value directly (warm-up), as a `set` with exptime 0 would.
    pub fn insert<S: LineSink>(&mut self, key: &[u8], flags: u32, value: &[u8], lines: &mut S) -> bool {
        let ok = self.table.set(key, flags, self.next_cas, value, lines).is_ok();
        if ok {
            self.next_cas += 1;
        }
        ok
    }

    /// Answers one request: `request` is the UDP payload (frame header and
    /// ASCII commands); `out` is cleared and receives the response UDP
    /// payloads; `lines` receives the table memory touched.
    pub fn handle_datagram<S: LineSink>(&mut self, request: &[u8], out: &mut Datagrams, lines: &mut S) {
        out.clear();
        self.resps.clear();
        self.resp_bytes.clear();
        let hdr = match memcached::Packet::new_checked(request) {
            Ok(p) if request.len() > memcached::HEADER_LEN => memcached::Repr::parse(&p).unwrap(),
            _ => {
                self.stats.dropped_truncated += 1;
                return;
            }
        };
        if hdr.datagrams != 1 {
            self.stats.dropped_multi_datagram += 1;
            return;
        }
        let payload = &request[memcached::HEADER_LEN..];
        let mut pos = 0;
        while pos < payload.len() {
            let Some(nl) = payload[pos..].iter().position(|&b| b == b'\n') else {
                self.stats.incomplete += 1;
                break;
            };
            let mut line = &payload[pos..pos + nl];
            if line.len() > 1 && line[line.len() - 1] == b'\r' {
                line = &line[..line.len() - 1];
            }
            pos += nl + 1;
            match self.command(line, &payload[pos..], hdr.request_id, out, lines) {
                Some(used) => pos += used,
                None => {
                    self.stats.incomplete += 1;
                    break;
                }
            }
        }
        self.transmit(hdr.request_id, out);
    }

    /// Runs one command line; `rest` follows the line. Returns the data bytes
    /// consumed after the line, or None if a data block is cut off.
    fn command<S: LineSink>(&mut self, line: &[u8], rest: &[u8], request_id: u16, out: &mut Datagrams, lines: &mut S) -> Option<usize> {
        match Command::parse(line) {
            Ok(Command::Get { keys, cas }) => {
                self.get(keys, cas, lines);
                self.transmit(request_id, out);
                Some(0)
            }
            Ok(Command::Set { key, flags, exptime, bytes, noreply }) => {
                self.stats.cmd_set += 1;
                self.set(key, flags, exptime, bytes, noreply, rest, lines)
            }
            Ok(Command::Delete { key, noreply }) => {
                let hit = self.table.delete(key, lines);
                if hit {
                    self.stats.delete_hits += 1;
                } else {
                    self.stats.delete_misses += 1;
                }
                self.reply(if hit { b"DELETED\r\n" } else { b"NOT_FOUND\r\n" }, noreply);
                Some(0)
            }
            Err(e) => {
                if e == CommandError::Error {
                    self.stats.errors += 1;
                } else {
                    self.stats.client_errors += 1;
                }
                let first = memcached::tokens(line).next();
                if matches!(e, CommandError::BadFormat { .. }) && matches!(first, Some(b"get" | b"gets")) {
                    // A bad key in a get kills every queued response object.
                    self.resps.clear();
                    self.resp_bytes.clear();
                }
                self.reply(e.reply(), e.noreply());
                Some(0)
            }
        }
    }

    fn get<S: LineSink>(&mut self, keys: memcached::Keys<'_>, cas: bool, lines: &mut S) {
        // One response object per key; the first is the command's own.
        for key in keys.iter() {
            self.start_resp(false);
            self.stats.cmd_get += 1;
            match self.table.get(key, lines) {
                Some(it) => {
                    self.stats.get_hits += 1;
                    let b = &mut self.resp_bytes;
                    b.extend_from_slice(b"VALUE ");
                    b.extend_from_slice(key);
                    let _ = write!(b, " {} {}", it.flags, it.value.len());
                    if cas {
                        let _ = write!(b, " {}", it.cas);
                    }
                    b.extend_from_slice(b"\r\n");
                    b.extend_from_slice(it.value);
                    b.extend_from_slice(b"\r\n");
                }
                None => self.stats.get_misses += 1,
            }
            self.end_resp();
        }
        self.resp_bytes.extend_from_slice(b"END\r\n");
        self.end_resp();
    }

    #[allow(clippy::too_many_arguments)]
    fn set<S: LineSink>(&mut self, key: &[u8], flags: u32, exptime: i32, bytes: usize, noreply: bool, rest: &[u8], lines: &mut S) -> Option<usize> {
        let need = bytes + 2;
        let fits = self.cfg.value_limit.allows(key.len(), flags, bytes);
        if !fits || !self.table.has_room(key, lines) {
            // memcached fails the allocation, answers, swallows the data and
            // deletes the stale value.
            self.table.delete(key, lines);
            if fits {
                self.stats.out_of_memory += 1;
                self.reply(b"SERVER_ERROR out of memory storing object\r\n", noreply);
            } else {
                self.stats.too_large += 1;
                self.reply(b"SERVER_ERROR object too large for cache\r\n", noreply);
            }
            return if rest.len() >= need { Some(need) } else { None };
        }
        if rest.len() < need {
            return None;
        }
        if &rest[bytes..need] != b"\r\n" {
            self.stats.client_errors += 1;
            self.reply(b"CLIENT_ERROR bad data chunk\r\n", noreply);
            return Some(need);
        }
        let cas = self.next_cas;
        self.next_cas += 1;
        if exptime < 0 {
            // Stored already expired: the old value is gone, the new one never seen.
            self.table.delete(key, lines);
        } else {
            self.table.set(key, flags, cas, &rest[..bytes], lines).expect("room was checked");
        }
        self.stats.total_items += 1;
        self.reply(b"STORED\r\n", noreply);
        Some(need)
    }

    fn start_resp(&mut self, skip: bool) {
        let at = self.resp_bytes.len();
        self.resps.push(Resp { start: at, end: at, skip });
    }

    fn end_resp(&mut self) {
        let end = self.resp_bytes.len();
        self.resps.last_mut().expect("a response object is open").end = end;
    }

    fn reply(&mut self, line: &[u8], noreply: bool) {
        self.start_resp(noreply);
        self.resp_bytes.extend_from_slice(line);
        self.end_resp();
    }

    /// Sends the queued response objects as memcached's `transmit_udp` does.
    fn transmit(&mut self, request_id: u16, out: &mut Datagrams) {
        let mut i = 0;
        while i < self.resps.len() {
            let r = self.resps[i];
            i += 1;
            if r.skip {
                continue;
            }
            out.push_response(request_id, &self.resp_bytes[r.start..r.end]);
            while i < self.resps.len() && (self.resps[i].skip || self.resps[i].start == self.resps[i].end) {
                i += 1;
            }
        }
        self.resps.clear();
        self.resp_bytes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(items: usize, limit: ValueLimit) -> Store {
        Store::new(StoreConfig { buckets: 16, items, value_limit: limit, ..StoreConfig::default() }).unwrap()
    }

    /// Runs `body` as request 7 and returns (header, data) per datagram.
    fn run(s: &mut Store, body: &[u8]) -> Vec<([u8; 8], Vec<u8>)> {
        let mut req = vec![0, 7, 0, 0, 0, 1, 0, 0];
        req.extend_from_slice(body);
        let mut out = Datagrams::new();
        s.handle_datagram(&req, &mut out, &mut ());
        out.iter().map(|d| (d[..8].try_into().unwrap(), d[8..].to_vec())).collect()
    }

    fn data(s: &mut Store, body: &[u8]) -> Vec<Vec<u8>> {
        run(s, body).into_iter().map(|(_, d)| d).collect()
    }

    #[test]
    fn set_get_delete() {
        let mut s = store(16, ValueLimit::ValueBytes(1024));
        assert_eq!(data(&mut s, b"set a 5 0 3\r\nabc\r\n"), vec![b"STORED\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"get a\r\n"), vec![b"VALUE a 5 3\r\nabc\r\nEND\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"gets a\r\n"), vec![b"VALUE a 5 3 1\r\nabc\r\nEND\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"get b\r\n"), vec![b"END\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"set a 1 0 2\r\nxy\r\nget a\r\n"), vec![b"STORED\r\n".to_vec(), b"VALUE a 1 2\r\nxy\r\nEND\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"delete a\r\ndelete a\r\n"), vec![b"DELETED\r\n".to_vec(), b"NOT_FOUND\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"set n 0 0 1 noreply\r\nz\r\ndelete n noreply\r\n"), Vec::<Vec<u8>>::new());
        assert_eq!(data(&mut s, b"set e 0 -1 1\r\nz\r\nget e\r\n"), vec![b"STORED\r\n".to_vec(), b"END\r\n".to_vec()]);
        let st = *s.stats();
        assert_eq!((st.cmd_get, st.get_hits, st.get_misses), (5, 3, 2));
        assert_eq!((st.cmd_set, st.total_items, st.delete_hits, st.delete_misses), (4, 4, 2, 1));
    }

    #[test]
    fn multi_key_get_objects() {
        let mut s = store(16, ValueLimit::ValueBytes(1024));
        data(&mut s, b"set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n");
        let hit_a = b"VALUE a 0 1\r\n1\r\n".to_vec();
        // One object per key, END on the last key's.
        assert_eq!(data(&mut s, b"get a zz\r\n"), vec![hit_a.clone(), b"END\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"get a zz b\r\n"), vec![hit_a.clone(), b"VALUE b 0 1\r\n2\r\nEND\r\n".to_vec()]);
        // A first-key miss is sent as a bare header with count 0.
        let r = run(&mut s, b"get zz a\r\n");
        assert_eq!(r[0], ([0, 7, 0, 0, 0, 0, 0, 0], vec![]));
        assert_eq!(r[1].1, b"VALUE a 0 1\r\n1\r\nEND\r\n");
        // ...unless a sent object precedes it in the queue; a noreply one does not count.
        assert_eq!(data(&mut s, b"set c 0 0 1\r\n3\r\nget zz a\r\n").len(), 2);
        assert_eq!(data(&mut s, b"set c 0 0 1 noreply\r\n3\r\nget zz a\r\n")[0], b"");
        assert_eq!(data(&mut s, b"get a\r\nget zz a\r\n")[1], b"", "each get flushes");
        // A long key kills every queued object, earlier commands' included.
        let long = [b'k'; 251];
        let line = [&b"set c 0 0 1\r\n3\r\nget a "[..], &long, b"\r\n"].concat();
        assert_eq!(data(&mut s, &line), vec![b"CLIENT_ERROR bad command line format\r\n".to_vec()]);
    }

    #[test]
    fn errors_as_memcached() {
        let mut s = store(16, ValueLimit::ValueBytes(100));
        let e = b"ERROR\r\n".to_vec();
        let bad = b"CLIENT_ERROR bad command line format\r\n".to_vec();
        assert_eq!(data(&mut s, b"foo\r\n"), vec![e.clone()]);
        assert_eq!(data(&mut s, b"\r\n"), vec![e.clone()]);
        assert_eq!(data(&mut s, b"set k x 0 1\r\nz\r\n"), vec![bad.clone(), e.clone()], "the data line is read as a command");
        assert_eq!(data(&mut s, b"set k 0 0 3\r\nabcdef\r\n"), vec![b"CLIENT_ERROR bad data chunk\r\n".to_vec(), e.clone()]);
        assert_eq!(data(&mut s, b"set k 0 0 3 noreply\r\nabcdef\r\n"), vec![e.clone()]);
        assert_eq!(data(&mut s, b"delete k 5\r\n")[0], CommandError::DeleteUsage { noreply: false }.reply());
        // Too large: answered, data swallowed, the stale value deleted.
        data(&mut s, b"set k 0 0 1\r\nz\r\n");
        let big = [&b"set k 0 0 101\r\n"[..], &[b'v'; 101], b"\r\nget k\r\n"].concat();
        assert_eq!(data(&mut s, &big), vec![b"SERVER_ERROR object too large for cache\r\n".to_vec(), b"END\r\n".to_vec()]);
        let st = *s.stats();
        assert_eq!((st.errors, st.client_errors, st.too_large), (5, 4, 1));
    }

    #[test]
    fn dropped_and_incomplete_requests() {
        let mut s = store(16, ValueLimit::ValueBytes(100));
        let mut out = Datagrams::new();
        for req in [&[0u8, 1, 0][..], &[0, 1, 0, 0, 0, 1, 0, 0], &[0, 1, 0, 0, 0, 2, 0, 0, b'x', b'\n']] {
            s.handle_datagram(req, &mut out, &mut ());
            assert!(out.is_empty());
        }
        assert_eq!((s.stats().dropped_truncated, s.stats().dropped_multi_datagram), (2, 1));
        // An unterminated last line and a cut-off data block end the datagram.
        assert_eq!(data(&mut s, b"get k\r\nget k"), vec![b"END\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"set k 0 0 10\r\nabc\r\n"), Vec::<Vec<u8>>::new());
        assert_eq!(data(&mut s, b"get k\r\n"), vec![b"END\r\n".to_vec()]);
        assert_eq!(s.stats().incomplete, 2);
    }

    #[test]
    fn large_responses_split() {
        let mut s = store(16, ValueLimit::ValueBytes(5000));
        let v = vec![b'x'; 3000];
        data(&mut s, &[&b"set big 0 0 3000\r\n"[..], &v, b"\r\n"].concat());
        let r = run(&mut s, b"get big\r\n");
        let hdrs: Vec<[u8; 8]> = r.iter().map(|d| d.0).collect();
        assert_eq!(hdrs, vec![[0, 7, 0, 0, 0, 3, 0, 0], [0, 7, 0, 1, 0, 3, 0, 0], [0, 7, 0, 2, 0, 3, 0, 0]]);
        assert_eq!(r.iter().map(|d| d.1.len()).collect::<Vec<_>>(), vec![1392, 1392, 241]);
        let joined: Vec<u8> = r.iter().flat_map(|d| d.1.clone()).collect();
        assert_eq!(joined, [&b"VALUE big 0 3000\r\n"[..], &v, b"\r\nEND\r\n"].concat());
        // Two hits: each object split on its own, sequence restarting at 0.
        let r = run(&mut s, b"get big big\r\n");
        assert_eq!(r.iter().map(|d| (d.0[3], d.0[5])).collect::<Vec<_>>(), vec![(0, 3), (1, 3), (2, 3), (0, 3), (1, 3), (2, 3)]);
    }

    #[test]
    fn full_table_answers_out_of_memory() {
        let mut s = store(2, ValueLimit::ValueBytes(100));
        data(&mut s, b"set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n");
        assert_eq!(data(&mut s, b"set c 0 0 1\r\n3\r\nget c\r\n"), vec![b"SERVER_ERROR out of memory storing object\r\n".to_vec(), b"END\r\n".to_vec()]);
        assert_eq!(data(&mut s, b"set a 0 0 2\r\n11\r\n"), vec![b"STORED\r\n".to_vec()], "overwrite needs no slot");
        assert_eq!(s.stats().out_of_memory, 1);
    }

    #[test]
    fn memcached_item_limit() {
        let l = ValueLimit::MemcachedItemBytes(8192);
        assert!(l.allows(1, 0, 8132) && !l.allows(1, 0, 8133));
        assert!(l.allows(1, 1, 8128) && !l.allows(1, 1, 8129));
        assert!(l.allows(2, 0, 8131) && !l.allows(2, 0, 8132));
        assert!(StoreConfig { value_limit: l, ..StoreConfig::default() }.item_stride_bytes() >= 8192);
        assert!(Store::new(StoreConfig { buckets: 3, ..StoreConfig::default() }).is_err());
    }

    #[test]
    fn get_charges_value_lines() {
        let mut s = store(16, ValueLimit::ValueBytes(1024));
        data(&mut s, &[&b"set k 0 0 1000\r\n"[..], &[b'v'; 1000], b"\r\n"].concat());
        let mut req = vec![0, 7, 0, 0, 0, 1, 0, 0];
        req.extend_from_slice(b"get k\r\n");
        let mut lines: Vec<u64> = Vec::new();
        s.handle_datagram(&req, &mut Datagrams::new(), &mut lines);
        let t = s.table();
        let slot_addr = t.item_addr(0);
        // Value bytes 49..1049 of the slot: 17 lines, after bucket, header and key.
        assert_eq!(lines.len(), 3 + 17);
        assert_eq!(lines[0], t.bucket_addr(t.bucket_of(b"k")) / 64 * 64);
        assert_eq!(*lines.last().unwrap(), slot_addr + 16 * 64);
        let mut w = crate::cpu::Work::new(crate::cpu::Category::App);
        s.handle_datagram(&req, &mut Datagrams::new(), &mut w);
        assert_eq!(w.accesses().len(), 20);
        assert!(w.accesses().iter().all(|a| !a.write));
    }
}
