//! An mbuf mempool at real simulated addresses, with DPDK's per-lcore cache.
//!
//! Layout: `count` objects of `stride` bytes from `base`; each object is the
//! mempool object header, the `rte_mbuf` (two cache lines) and the buffer
//! (128 B headroom + 2048 B data room, `RTE_MBUF_DEFAULT_BUF_SIZE` = 2176;
//! params.md §6a). The common pool is a FIFO ring of object indices (DPDK's
//! default `ring_mp_mc` handler); each core has a LIFO cache of `cache_size`
//! objects that is refilled from the ring when a get finds too few, and
//! flushed down to `cache_size` when a put takes it past the flush
//! threshold (1.5 × `cache_size`, as `rte_mempool` computes it).
//!
//! Simplified: no object padding across memory channels (DPDK's spreading is
//! off), and the ring's head/tail updates are one line touched per bulk
//! operation.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};
use crate::mem::lines;

pub const LINE: u64 = 64;
/// Mempool object header (`struct rte_mempool_objhdr`, rounded to a line).
pub const OBJ_HEADER_BYTES: u64 = 64;
/// `struct rte_mbuf`: two cache lines.
pub const MBUF_HEADER_BYTES: u64 = 128;
/// Headroom before the packet data (`RTE_PKTMBUF_HEADROOM`).
pub const HEADROOM_BYTES: u64 = 128;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MempoolConfig {
    /// Mbufs per port: enough for all rings and caches. Set by the user, the
    /// count is kept and must fill them; otherwise (a preset's, the
    /// default) it is a floor, and the pool grows to what every ring and
    /// core cache holds, as DPDK's l2fwd and l3fwd size theirs
    /// (`HostConfig::pool_mbufs`).
    pub mbufs: u32,
    /// Per-core cache size (testpmd `DEF_MBUF_CACHE` 250; max 512 — params.md §6a).
    pub cache_size: u32,
    /// Data room per mbuf, headroom included (`RTE_MBUF_DEFAULT_BUF_SIZE` 2176).
    pub buf_bytes: u32,
}

impl Default for MempoolConfig {
    fn default() -> Self {
        MempoolConfig { mbufs: 8192, cache_size: 250, buf_bytes: 2176 }
    }
}

impl MempoolConfig {
    pub fn validate(&self) -> Result<()> {
        if self.mbufs == 0 {
            return Err(ConfigError::new("pmd.mempool.mbufs", "0".into(), ">= 1").into());
        }
        if self.cache_size > 512 {
            return Err(ConfigError::new("pmd.mempool.cache_size", self.cache_size.to_string(), "0 to 512 (RTE_MEMPOOL_CACHE_MAX_SIZE)").into());
        }
        if (self.buf_bytes as u64) < HEADROOM_BYTES + 64 {
            return Err(ConfigError::new("pmd.mempool.buf_bytes", self.buf_bytes.to_string(), ">= 192 (headroom + a 64 B frame)").into());
        }
        Ok(())
    }
}

pub struct Mempool {
    base: u64,
    stride: u64,
    buf_bytes: u64,
    cache_size: usize,
    flush_threshold: usize,
    ring: VecDeque<u32>,
    /// Address of the ring's head/tail line and of its slot array.
    ring_meta_addr: u64,
    ring_slots_addr: u64,
    ring_capacity: u64,
    caches: Vec<Vec<u32>>,
    cache_addrs: Vec<u64>,
    bytes: u64,
    pub gets: u64,
    pub puts: u64,
    pub ring_refills: u64,
    pub ring_flushes: u64,
    pub empty: u64,
}

/// Where a pool's parts lie, as offsets from its base: the objects, the
/// ring (a line of head/tail, then its slots), the per-core caches.
struct Layout {
    stride: u64,
    ring_meta: u64,
    ring_slots: u64,
    ring_capacity: u64,
    caches: u64,
    end: u64,
}

/// One core's cache: a line of metadata and room for 3 × 512 object pointers.
const CACHE_BYTES: u64 = (LINE + 8 * 3 * 512).div_ceil(LINE) * LINE;

impl Layout {
    fn of(cfg: &MempoolConfig, cores: usize) -> Layout {
        let stride = (OBJ_HEADER_BYTES + MBUF_HEADER_BYTES + cfg.buf_bytes as u64).div_ceil(LINE) * LINE;
        let ring_meta = stride * cfg.mbufs as u64;
        let ring_slots = ring_meta + LINE;
        let ring_capacity = (cfg.mbufs as u64 + 1).next_power_of_two();
        let caches = ring_slots + ring_capacity * 8;
        Layout { stride, ring_meta, ring_slots, ring_capacity, caches, end: caches + cores as u64 * CACHE_BYTES }
    }
}

impl Mempool {
    /// A pool at `base` for `cores` cores. Its footprint is [`Mempool::bytes`].
    pub fn new(cfg: &MempoolConfig, cores: usize, base: u64) -> Self {
        let l = Layout::of(cfg, cores);
        Mempool {
            base,
            stride: l.stride,
            buf_bytes: cfg.buf_bytes as u64,
            cache_size: cfg.cache_size as usize,
            flush_threshold: cfg.cache_size as usize * 3 / 2,
            ring: (0..cfg.mbufs).collect(),
            ring_meta_addr: base + l.ring_meta,
            ring_slots_addr: base + l.ring_slots,
            ring_capacity: l.ring_capacity,
            caches: vec![Vec::with_capacity(3 * 512); cores],
            cache_addrs: (0..cores as u64).map(|c| base + l.caches + c * CACHE_BYTES).collect(),
            bytes: l.end,
            gets: 0,
            puts: 0,
            ring_refills: 0,
            ring_flushes: 0,
            empty: 0,
        }
    }

    /// Bytes of simulated memory a pool of `cfg` for `cores` cores occupies
    /// from its base (checked before anything is allocated).
    pub fn bytes_for(cfg: &MempoolConfig, cores: usize) -> u64 {
        Layout::of(cfg, cores).end
    }

    /// Bytes of simulated memory the pool occupies from its base.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Address of mbuf `i`'s `rte_mbuf` header.
    #[inline]
    pub fn mbuf_addr(&self, i: u32) -> u64 {
        self.base + i as u64 * self.stride + OBJ_HEADER_BYTES
    }

    /// Address of the first packet byte of mbuf `i` (after the headroom).
    #[inline]
    pub fn data_addr(&self, i: u32) -> u64 {
        self.mbuf_addr(i) + MBUF_HEADER_BYTES + HEADROOM_BYTES
    }

    /// Largest frame (without FCS) an mbuf holds.
    pub fn data_room(&self) -> u64 {
        self.buf_bytes - HEADROOM_BYTES
    }

    /// Gets `n` mbufs for `core` (`rte_mempool_get_bulk`): all or none.
    /// Appends them to `out` and the addresses touched to `touched`.
    pub fn get_bulk(&mut self, core: usize, n: usize, out: &mut Vec<u32>, touched: &mut Vec<u64>) -> bool {
        touched.push(self.cache_addrs[core]);
        if self.caches[core].len() < n {
            // Refill the cache from the ring: enough for this request plus a full cache.
            let want = self.cache_size + n - self.caches[core].len();
            let take = want.min(self.ring.len());
            if self.caches[core].len() + take < n {
                self.empty += 1;
                return false;
            }
            self.ring_refills += 1;
            touched.push(self.ring_meta_addr);
            for _ in 0..take {
                let i = self.ring.pop_front().expect("counted");
                self.caches[core].push(i);
            }
            self.touch_ring_slots(take, touched);
        }
        let cache = &mut self.caches[core];
        let start = cache.len() - n;
        out.extend(cache.drain(start..).rev());
        self.touch_cache_slots(core, start, n, touched);
        self.gets += n as u64;
        true
    }

    /// Returns mbufs to `core`'s cache (`rte_mempool_put_bulk`), flushing to
    /// the ring past the threshold.
    pub fn put_bulk(&mut self, core: usize, mbufs: &[u32], touched: &mut Vec<u64>) {
        touched.push(self.cache_addrs[core]);
        let start = self.caches[core].len();
        self.caches[core].extend_from_slice(mbufs);
        self.touch_cache_slots(core, start, mbufs.len(), touched);
        self.puts += mbufs.len() as u64;
        if self.cache_size > 0 && self.caches[core].len() >= self.flush_threshold {
            let excess = self.caches[core].len() - self.cache_size;
            self.flush(core, excess, touched);
        } else if self.cache_size == 0 {
            let all = self.caches[core].len();
            self.flush(core, all, touched);
        }
    }

    fn flush(&mut self, core: usize, n: usize, touched: &mut Vec<u64>) {
        self.ring_flushes += 1;
        touched.push(self.ring_meta_addr);
        let cache = &mut self.caches[core];
        let start = cache.len() - n;
        self.ring.extend(cache.drain(start..));
        self.touch_ring_slots(n, touched);
    }

    fn touch_cache_slots(&self, core: usize, first: usize, n: usize, touched: &mut Vec<u64>) {
        let a = self.cache_addrs[core] + LINE + first as u64 * 8;
        touched.extend(lines(a, n as u64 * 8));
    }

    fn touch_ring_slots(&self, n: usize, touched: &mut Vec<u64>) {
        let slot = (self.ring.len() as u64) % self.ring_capacity;
        touched.extend(lines(self.ring_slots_addr + slot * 8, (n as u64 * 8).min(self.ring_capacity * 8)));
    }

    /// Mbufs available (ring + caches).
    pub fn available(&self) -> usize {
        self.ring.len() + self.caches.iter().map(Vec::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(mbufs: u32, cache: u32) -> Mempool {
        Mempool::new(&MempoolConfig { mbufs, cache_size: cache, buf_bytes: 2176 }, 2, 1 << 30)
    }

    #[test]
    fn layout_is_line_aligned_and_disjoint() {
        let p = pool(16, 4);
        assert_eq!(p.stride, 2368);
        assert_eq!(p.mbuf_addr(0) % LINE, 0);
        assert_eq!(p.data_addr(1) - p.data_addr(0), 2368);
        assert_eq!(p.data_addr(0) - p.mbuf_addr(0), 256);
        assert!(p.data_addr(15) + p.data_room() <= p.ring_meta_addr);
        assert_eq!(p.data_room(), 2048);
    }

    #[test]
    fn cache_refills_and_flushes_like_dpdk() {
        let mut p = pool(1000, 32);
        let (mut out, mut t) = (vec![], vec![]);
        assert!(p.get_bulk(0, 8, &mut out, &mut t));
        assert_eq!(p.ring_refills, 1);
        assert_eq!(p.caches[0].len(), 32, "refilled cache_size + n, gave n");
        assert!(p.get_bulk(0, 8, &mut out, &mut t));
        assert_eq!(p.ring_refills, 1, "served from the cache");
        // Put 40 back: the cache reaches 64 ≥ 48 (1.5 × 32) and flushes to 32.
        p.put_bulk(0, &out[..16].to_vec(), &mut t);
        p.put_bulk(0, &out[..16].to_vec(), &mut t);
        assert_eq!(p.ring_flushes, 1);
        assert_eq!(p.caches[0].len(), 32);
        assert_eq!(p.available(), 1000 + 16, "16 were put twice on purpose");
    }

    #[test]
    fn all_or_nothing_when_exhausted() {
        let mut p = pool(10, 4);
        let (mut out, mut t) = (vec![], vec![]);
        assert!(p.get_bulk(0, 8, &mut out, &mut t));
        assert!(!p.get_bulk(1, 8, &mut out, &mut t));
        assert_eq!(out.len(), 8);
        assert_eq!(p.empty, 1);
        let mut seen = out.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 8, "no mbuf handed out twice");
    }
}
