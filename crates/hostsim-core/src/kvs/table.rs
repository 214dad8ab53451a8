//! A fixed-size chained hash table over a preallocated item arena, laid out
//! at simulated addresses so a core model can charge its memory accesses.
//!
//! * Hash: 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime
//!   0x100000001b3) of the key bytes; the bucket is the hash's low bits (the
//!   bucket count is a power of two). memcached itself uses MurmurHash3; the
//!   hash only decides which keys share a chain.
//! * Buckets: `buckets` 8-byte heads at `bucket_base_addr + 8 × bucket`.
//! * Items: `items` fixed-size slots at `item_base_addr + slot × item_stride_bytes`,
//!   each a 48-byte header (as memcached's `struct item` on 64-bit: chain
//!   link, flags, lengths, CAS), then the key, then the value. New items are
//!   linked at the head of their chain.
//! * Full table: a new key needs a free slot; when none is left the insert
//!   fails ([`TableFull`]) — there is no eviction (memcached would evict by
//!   LRU). Overwriting an existing key reuses its slot, so it never fails.
//!
//! Real bytes live in a per-slot buffer that keeps its capacity when the
//! slot is reused, so a warm table does not allocate.

use super::LineSink;

/// Bytes of an item's header before its key (memcached's `sizeof(item)` on 64-bit).
pub const ITEM_HEADER_BYTES: u64 = 48;
/// Bytes of one bucket head (a pointer).
pub const BUCKET_BYTES: u64 = 8;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableConfig {
    /// Number of chains; must be a power of two.
    pub buckets: usize,
    /// Number of item slots (the most keys the table holds).
    pub items: usize,
    /// Simulated size of one item slot (header + key + value); a multiple of 64 is best.
    pub item_stride_bytes: u64,
    /// Simulated address of bucket 0.
    pub bucket_base_addr: u64,
    /// Simulated address of item slot 0.
    pub item_base_addr: u64,
}

/// The insert found no free slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFull;

#[derive(Debug, Clone, Default)]
struct Item {
    next: u32,
    key_len: usize,
    flags: u32,
    cas: u64,
    /// Key, then value.
    data: Vec<u8>,
}

/// A stored item as seen by a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemRef<'a> {
    pub slot: u32,
    pub flags: u32,
    pub cas: u64,
    pub value: &'a [u8],
    /// Simulated address of the value's first byte.
    pub value_addr: u64,
}

#[derive(Debug, Clone)]
pub struct Table {
    cfg: TableConfig,
    heads: Vec<u32>,
    items: Vec<Item>,
    free: Vec<u32>,
}

/// 64-bit FNV-1a.
pub fn fnv1a64(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Table {
    /// Panics if `buckets` is not a power of two or `items` does not fit 32 bits
    /// (the store validates its config first).
    pub fn new(cfg: TableConfig) -> Table {
        assert!(cfg.buckets.is_power_of_two(), "buckets must be a power of two");
        assert!(cfg.items < NIL as usize, "too many items");
        let items = vec![Item { next: NIL, ..Item::default() }; cfg.items];
        let free = (0..cfg.items as u32).rev().collect();
        Table { cfg, heads: vec![NIL; cfg.buckets], items, free }
    }

    pub fn config(&self) -> &TableConfig {
        &self.cfg
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.cfg.items - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bucket_of(&self, key: &[u8]) -> usize {
        (fnv1a64(key) & (self.cfg.buckets as u64 - 1)) as usize
    }

    pub fn bucket_addr(&self, bucket: usize) -> u64 {
        self.cfg.bucket_base_addr + bucket as u64 * BUCKET_BYTES
    }

    pub fn item_addr(&self, slot: u32) -> u64 {
        self.cfg.item_base_addr + slot as u64 * self.cfg.item_stride_bytes
    }

    /// Walks the key's chain (bucket head, then each item's header and, when
    /// the lengths match, its key). Returns (bucket, previous slot, slot).
    fn find<S: LineSink>(&self, key: &[u8], lines: &mut S) -> (usize, u32, u32) {
        let b = self.bucket_of(key);
        lines.read(self.bucket_addr(b), BUCKET_BYTES);
        let (mut prev, mut cur) = (NIL, self.heads[b]);
        while cur != NIL {
            let it = &self.items[cur as usize];
            let addr = self.item_addr(cur);
            lines.read(addr, ITEM_HEADER_BYTES);
            if it.key_len == key.len() {
                lines.read(addr + ITEM_HEADER_BYTES, key.len() as u64);
                if &it.data[..it.key_len] == key {
                    return (b, prev, cur);
                }
            }
            prev = cur;
            cur = it.next;
        }
        (b, prev, NIL)
    }

    /// Looks a key up; on a hit also reads the value's lines (it is about to be copied out).
    pub fn get<S: LineSink>(&self, key: &[u8], lines: &mut S) -> Option<ItemRef<'_>> {
        let (_, _, slot) = self.find(key, lines);
        if slot == NIL {
            return None;
        }
        let it = &self.items[slot as usize];
        let value_addr = self.item_addr(slot) + ITEM_HEADER_BYTES + it.key_len as u64;
        let value = &it.data[it.key_len..];
        lines.read(value_addr, value.len() as u64);
        Some(ItemRef { slot, flags: it.flags, cas: it.cas, value, value_addr })
    }

    /// Is there room for `key` (present already, or a free slot)? Walks the chain.
    pub fn has_room<S: LineSink>(&self, key: &[u8], lines: &mut S) -> bool {
        !self.free.is_empty() || self.find(key, lines).2 != NIL
    }

    /// Stores `value` under `key`: in place if the key exists, else in a free
    /// slot linked at the head of its chain. Writes header, key and value lines.
    pub fn set<S: LineSink>(&mut self, key: &[u8], flags: u32, cas: u64, value: &[u8], lines: &mut S) -> Result<u32, TableFull> {
        let (b, _, found) = self.find(key, lines);
        let slot = if found != NIL {
            found
        } else {
            let slot = self.free.pop().ok_or(TableFull)?;
            let it = &mut self.items[slot as usize];
            it.next = self.heads[b];
            it.key_len = key.len();
            self.heads[b] = slot;
            lines.write(self.bucket_addr(b), BUCKET_BYTES);
            slot
        };
        let addr = self.item_addr(slot);
        let it = &mut self.items[slot as usize];
        it.flags = flags;
        it.cas = cas;
        it.data.clear();
        it.data.extend_from_slice(key);
        it.data.extend_from_slice(value);
        lines.write(addr, ITEM_HEADER_BYTES + (key.len() + value.len()) as u64);
        Ok(slot)
    }

    /// Unlinks `key` (writing the bucket head or the previous item's link) and frees its slot.
    pub fn delete<S: LineSink>(&mut self, key: &[u8], lines: &mut S) -> bool {
        let (b, prev, slot) = self.find(key, lines);
        if slot == NIL {
            return false;
        }
        let next = self.items[slot as usize].next;
        if prev == NIL {
            self.heads[b] = next;
            lines.write(self.bucket_addr(b), BUCKET_BYTES);
        } else {
            self.items[prev as usize].next = next;
            lines.write(self.item_addr(prev), ITEM_HEADER_BYTES);
        }
        let it = &mut self.items[slot as usize];
        it.next = NIL;
        it.data.clear();
        self.free.push(slot);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(buckets: usize, items: usize) -> Table {
        Table::new(TableConfig {
            buckets,
            items,
            item_stride_bytes: 2048,
            bucket_base_addr: 0x1000,
            item_base_addr: 0x10_0000,
        })
    }

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn collisions_overwrite_delete() {
        // One bucket: every key collides.
        let mut t = table(1, 8);
        for (i, k) in [&b"a"[..], b"bb", b"cc", b"d"].iter().enumerate() {
            t.set(k, i as u32, 0, k, &mut ()).unwrap();
        }
        assert_eq!(t.len(), 4);
        for k in [&b"a"[..], b"bb", b"cc", b"d"] {
            assert_eq!(t.get(k, &mut ()).unwrap().value, k);
        }
        assert!(t.get(b"b", &mut ()).is_none() && t.get(b"ccc", &mut ()).is_none());
        // Overwrite in place: same slot, new value and flags.
        let slot = t.get(b"bb", &mut ()).unwrap().slot;
        assert_eq!(t.set(b"bb", 9, 0, b"longer value", &mut ()), Ok(slot));
        let r = t.get(b"bb", &mut ()).unwrap();
        assert_eq!((r.flags, r.value), (9, &b"longer value"[..]));
        assert_eq!(t.len(), 4);
        // Delete from the middle, the head and the tail of the chain.
        assert!(t.delete(b"cc", &mut ()));
        assert!(!t.delete(b"cc", &mut ()));
        assert!(t.delete(b"d", &mut ()));
        assert!(t.delete(b"a", &mut ()));
        assert_eq!(t.get(b"bb", &mut ()).unwrap().value, b"longer value");
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn full_table_refuses_new_keys_only() {
        let mut t = table(4, 2);
        t.set(b"a", 0, 0, b"1", &mut ()).unwrap();
        t.set(b"b", 0, 0, b"2", &mut ()).unwrap();
        assert!(!t.has_room(b"c", &mut ()));
        assert_eq!(t.set(b"c", 0, 0, b"3", &mut ()), Err(TableFull));
        assert!(t.has_room(b"a", &mut ()));
        assert!(t.set(b"a", 0, 0, b"11", &mut ()).is_ok());
        assert!(t.delete(b"b", &mut ()));
        assert!(t.set(b"c", 0, 0, b"3", &mut ()).is_ok());
        assert_eq!(t.get(b"a", &mut ()).unwrap().value, b"11");
        assert_eq!(t.get(b"c", &mut ()).unwrap().value, b"3");
    }

    #[test]
    fn lines_touched() {
        let mut t = table(1, 4);
        let value = vec![7u8; 1000];
        t.set(b"k", 0, 0, &value, &mut ()).unwrap();
        let slot = t.get(b"k", &mut ()).unwrap().slot;
        let base = t.item_addr(slot);
        let mut lines: Vec<u64> = Vec::new();
        let r = t.get(b"k", &mut lines).unwrap();
        assert_eq!(r.value_addr, base + 49);
        // Bucket, header, key (same line as the header), then the value: bytes
        // 49..1049 of the slot are lines 0..=16, i.e. 17 lines.
        let value_lines: Vec<u64> = (0..17).map(|i| base + 64 * i).collect();
        let mut want = vec![0x1000, base, base];
        want.extend(&value_lines);
        assert_eq!(lines, want);
        // A miss on a colliding key with another length reads bucket and header only.
        lines.clear();
        assert!(t.get(b"kk", &mut lines).is_none());
        assert_eq!(lines, vec![0x1000, base]);
        // An insert writes the bucket head and the header-key-value lines.
        lines.clear();
        t.set(b"n", 0, 0, b"v", &mut lines).unwrap();
        let n = t.item_addr(t.get(b"n", &mut ()).unwrap().slot);
        assert_eq!(lines, vec![0x1000, base, base, 0x1000, n]);
    }
}
