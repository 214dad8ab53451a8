//! One set-associative cache of 64 B lines with true LRU replacement.
//!
//! The set index is the lowest address bits above the line offset: a mask
//! when the set count is a power of two (every private cache), the line
//! number modulo the set count otherwise (a sliced LLC, `Cache<true>`); a
//! lookup then scans `ways` consecutive tags — no hashing, no allocation. Each way keeps the full line
//! number as its tag and one word of metadata: a last-use stamp from a
//! per-cache counter in the high bits (the smallest in the set is the LRU
//! line) and a byte of state flags that the hierarchy interprets (see
//! [`flag`]) in the low ones, so a hit touches just two arrays. The cache itself knows nothing of
//! write-back or coherence: `fill` returns the victim with its flags and the
//! caller decides where it goes.
//!
//! A sliced LLC may also spread lines over its slices by a hash
//! ([`Cache::with_slices`]): the slice from a hash of the whole line
//! number, the set within the slice from the line number's low bits, as
//! Intel's "complex addressing" does (Maurice et al., RAID'15; the hash
//! itself is a stand-in, a multiplicative one). Lines a power-of-two apart
//! then share a set in some slices and not others, so a buffer ring
//! outgrows the ways of some sets long before it fills the cache: conflict
//! misses that grow gradually with the ring (params.md §3c, Sepia).
//!
//! Simplified: no sectoring; replacement is exact LRU
//! rather than the pseudo-LRU or RRIP real parts use. Hennessy & Patterson,
//! *Computer Architecture*, appendix B, is the background reading.

/// Cache-line size (bytes), params.md §5.
pub const LINE_BYTES: u64 = 64;
/// log2 of [`LINE_BYTES`].
pub const LINE_SHIFT: u32 = 6;

/// State bits kept beside each tag.
pub mod flag {
    /// The line holds data newer than the level below.
    pub const DIRTY: u8 = 1;
    /// Private caches: no other core holds a copy, so a store needs no snoop.
    pub const EXCL: u8 = 2;
    /// LLC: the dirty data was last written by the device.
    pub const DEV_DIRTY: u8 = 4;
    /// LLC: written by the device and not yet touched by a core.
    pub const DEV_UNREAD: u8 = 8;
    /// LLC, with `DEV_DIRTY`: the device was the copy engine, not a NIC.
    pub const ENGINE: u8 = 16;
    /// L2: brought in by the prefetcher and not yet asked for by the core.
    pub const PREFETCHED: u8 = 32;
}

const EMPTY: u64 = u64::MAX;

/// A line pushed out by [`Cache::fill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    /// Line-aligned byte address.
    pub addr: u64,
    pub flags: u8,
}

impl Victim {
    pub fn dirty(&self) -> bool {
        self.flags & flag::DIRTY != 0
    }
}

/// A set-associative cache. `SLICED` caches may have any number of sets
/// (a sliced LLC: Skylake-SP has 2048 sets per 1.375 MiB slice), spread by
/// the line number modulo the sets; the others need a power of two and pick
/// the set with a mask, with no branch on the hot path.
pub struct Cache<const SLICED: bool = false> {
    ways: usize,
    sets: u64,
    /// `sets - 1`: picks the set when `pow2`.
    set_mask: u64,
    pow2: bool,
    /// Slices a line is hashed over (0: none, the set is the line modulo the sets).
    slices: u64,
    /// Sets per slice − 1 (a power of two less one) when `slices` > 0.
    slice_set_mask: u64,
    /// A bit per way.
    all: u64,
    /// Line number (`addr >> 6`) per way, `EMPTY` when invalid; set-major.
    tags: Vec<u64>,
    /// Per way: last-use stamp << 8 | flags.
    meta: Vec<u64>,
    clock: u64,
}

impl<const SLICED: bool> Cache<SLICED> {
    /// A cache of `size_bytes` with `ways` ways. The geometry must already be
    /// valid (see `MemConfig::validate`; a power-of-two set count unless
    /// `SLICED`); this panics otherwise.
    pub fn new(size_bytes: u64, ways: u32) -> Self {
        assert!((1..=64).contains(&ways), "ways must be 1..=64");
        let sets = size_bytes / (ways as u64 * LINE_BYTES);
        let pow2 = sets.is_power_of_two();
        assert!(sets > 0 && sets * ways as u64 * LINE_BYTES == size_bytes && (SLICED || pow2), "bad cache geometry");
        let n = (sets * ways as u64) as usize;
        let all = if ways == 64 { u64::MAX } else { (1u64 << ways) - 1 };
        Cache { ways: ways as usize, sets, set_mask: sets.wrapping_sub(1), pow2, all, slices: 0, slice_set_mask: 0, tags: vec![EMPTY; n], meta: vec![0; n], clock: 0 }
    }

    /// The cache's sets as `slices` slices of equal size (a power of two
    /// sets each): a line goes to the slice a hash of its number picks, at
    /// the set its low bits give there. 0 keeps the plain index. The
    /// geometry must be valid (`LlcConfig::validate`).
    pub fn with_slices(mut self, slices: u32) -> Self {
        if slices > 0 {
            let per = self.sets / slices as u64;
            assert!(SLICED && per * slices as u64 == self.sets && per.is_power_of_two(), "bad slice geometry");
            (self.slices, self.slice_set_mask) = (slices as u64, per - 1);
        }
        self
    }

    /// The line numbers (`addr >> 6`) the cache holds.
    #[cfg(test)]
    pub fn resident(&self) -> impl Iterator<Item = u64> + '_ {
        self.tags.iter().copied().filter(|&t| t != EMPTY)
    }

    pub fn sets(&self) -> usize {
        self.sets as usize
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    /// A mask with a bit for every way.
    #[inline(always)]
    pub fn all_ways(&self) -> u64 {
        self.all
    }

    /// The `n` highest-numbered ways (the ones DDIO allocates into).
    pub fn top_ways(&self, n: usize) -> u64 {
        debug_assert!(n <= self.ways);
        if n == 0 {
            0
        } else {
            self.all_ways() & !((1u64 << (self.ways - n)) - 1)
        }
    }

    #[inline(always)]
    fn base(&self, line: u64) -> usize {
        let set = if !SLICED {
            line & self.set_mask
        } else if self.slices > 0 {
            // The slice: the high half of a multiplicative hash of the line
            // number (every bit counts) scaled to the slice count.
            let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            ((h * self.slices) >> 32) * (self.slice_set_mask + 1) + (line & self.slice_set_mask)
        } else if self.pow2 {
            line & self.set_mask
        } else {
            line % self.sets
        };
        set as usize * self.ways
    }

    /// The slot holding `addr`'s line, without touching LRU state.
    #[inline(always)]
    pub fn find(&self, addr: u64) -> Option<usize> {
        let line = addr >> LINE_SHIFT;
        self.find_located((line, self.base(line)))
    }

    /// Where `addr`'s line would be: (line number, first slot of its set).
    /// Caches of one geometry share it, so a snoop computes it once.
    #[inline(always)]
    pub fn locate(&self, addr: u64) -> (u64, usize) {
        let line = addr >> LINE_SHIFT;
        (line, self.base(line))
    }

    /// [`find`](Self::find) for a line already located (by any cache of the same geometry).
    #[inline(always)]
    pub fn find_located(&self, (line, base): (u64, usize)) -> Option<usize> {
        let set = &self.tags[base..base + self.ways];
        let w = match self.ways {
            4 => position::<4>(set, line),
            8 => position::<8>(set, line),
            16 => position::<16>(set, line),
            _ => set.iter().position(|&t| t == line),
        };
        w.map(|w| base + w)
    }

    /// Like [`find`](Self::find), and marks the line most recently used.
    #[inline(always)]
    pub fn lookup(&mut self, addr: u64) -> Option<usize> {
        let slot = self.find(addr)?;
        self.touch(slot);
        Some(slot)
    }

    #[inline(always)]
    pub fn touch(&mut self, slot: usize) {
        self.clock += 1;
        let m = &mut self.meta[slot];
        *m = self.clock << 8 | (*m & 0xff);
    }

    #[inline(always)]
    pub fn flags(&self, slot: usize) -> u8 {
        self.meta[slot] as u8
    }

    #[inline(always)]
    pub fn set_flags(&mut self, slot: usize, flags: u8) {
        let m = &mut self.meta[slot];
        *m = (*m & !0xff) | flags as u64;
    }

    pub fn contains(&self, addr: u64) -> bool {
        self.find(addr).is_some()
    }

    /// Inserts `addr`'s line (which must be absent) as most recently used,
    /// choosing the way among `way_mask`: an empty one if any, else the LRU
    /// one, which is returned as the victim.
    pub fn fill(&mut self, addr: u64, flags: u8, way_mask: u64) -> (usize, Option<Victim>) {
        let line = addr >> LINE_SHIFT;
        debug_assert!(self.find(addr).is_none(), "fill of a line already present");
        debug_assert!(way_mask & self.all_ways() != 0, "empty way mask");
        let base = self.base(line);
        let (tags, meta) = (&self.tags[base..base + self.ways], &self.meta[base..base + self.ways]);
        // The ways of the mask in increasing order: the first empty one, else
        // the least recently used (the first of equals).
        let mut pick = usize::MAX;
        let mut oldest = u64::MAX;
        let ways = way_mask & self.all;
        if ways == self.all {
            // Every way (all fills but the DCA ones). An empty way's word is
            // 0 and a valid one's stamp is at least 1, so the first empty way,
            // else the first least recently used, is the first of the
            // smallest words: a scan with no branch on the tags, unrolled
            // for the common way counts.
            debug_assert!(tags.iter().zip(meta).all(|(&t, &m)| (t == EMPTY) == (m == 0)));
            pick = match self.ways {
                4 => oldest_way::<4>(meta),
                8 => oldest_way::<8>(meta),
                16 => oldest_way::<16>(meta),
                _ => (0..self.ways).fold(0, |p, w| if meta[w] < meta[p] { w } else { p }),
            };
        } else {
            let mut ways = ways;
            while ways != 0 {
                let w = ways.trailing_zeros() as usize;
                ways &= ways - 1;
                if tags[w] == EMPTY {
                    pick = w;
                    break;
                }
                if meta[w] < oldest {
                    oldest = meta[w];
                    pick = w;
                }
            }
        }
        let pick = base + pick;
        let old = self.tags[pick];
        let victim = (old != EMPTY).then(|| Victim { addr: old << LINE_SHIFT, flags: self.meta[pick] as u8 });
        self.tags[pick] = line;
        self.clock += 1;
        self.meta[pick] = self.clock << 8 | flags as u64;
        (pick, victim)
    }

    /// Drops `addr`'s line if present and returns its flags.
    pub fn invalidate(&mut self, addr: u64) -> Option<u8> {
        let slot = self.find(addr)?;
        Some(self.invalidate_slot(slot))
    }

    pub fn invalidate_slot(&mut self, slot: usize) -> u8 {
        self.tags[slot] = EMPTY;
        std::mem::take(&mut self.meta[slot]) as u8
    }

    /// Valid lines held (for tests and reports; scans the whole array).
    pub fn occupancy(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }
}

/// The way of `set` (of `W` ways) whose tag is `line`: a scan the compiler
/// unrolls, since `W` is known (3 % fewer host instructions per simulated
/// packet than a scan of a run-time length: scripts/bench_ir.py). It
/// compares every way into a mask rather than stopping at the match, whose
/// place the host's branch predictor cannot guess (TestPMD 64 B ran 2.6 %
/// faster: scripts/bench_ab.py).
#[inline(always)]
fn position<const W: usize>(set: &[u64], line: u64) -> Option<usize> {
    let set: &[u64; W] = set.try_into().expect("a set of W ways");
    let mut hits = 0u32;
    for (w, &t) in set.iter().enumerate() {
        hits |= ((t == line) as u32) << w;
    }
    (hits != 0).then(|| hits.trailing_zeros() as usize)
}

/// The first way of `meta` (of `W` ways) with the smallest word.
#[inline(always)]
fn oldest_way<const W: usize>(meta: &[u64]) -> usize {
    let meta: &[u64; W] = meta.try_into().expect("a set of W ways");
    // A knock-out of neighbouring pairs, the left one winning ties: the
    // first of the smallest, in log2(W) rounds of independent comparisons
    // rather than a chain of W - 1 (W is a power of two).
    let mut best: [(u64, usize); W] = std::array::from_fn(|w| (meta[w], w));
    let mut n = W;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            let (a, b) = (best[2 * i], best[2 * i + 1]);
            best[i] = if b.0 < a.0 { b } else { a };
        }
    }
    best[0].1
}

/// Line-aligned addresses covering `len` bytes from `addr` (none if `len` is 0).
pub fn lines(addr: u64, len: u64) -> impl Iterator<Item = u64> {
    let first = addr >> LINE_SHIFT;
    let end = if len == 0 { first } else { (addr + len - 1) / LINE_BYTES + 1 };
    (first..end).map(|l| l << LINE_SHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliced_llc_spreads_lines_over_every_set() {
        // 3 sets × 2 ways: lines 0, 3, 6 share set 0 (modulo), 1 and 4 set 1.
        let mut c = Cache::<true>::new(3 * 2 * LINE_BYTES, 2);
        assert_eq!(c.sets(), 3);
        for l in [0u64, 3, 1, 4] {
            c.fill(l * LINE_BYTES, 0, c.all_ways());
        }
        assert!((0..5).filter(|&l| l != 2).all(|l| c.contains(l * LINE_BYTES)));
        // A third line in set 0 evicts its least recently used (line 0).
        let (_, v) = c.fill(6 * LINE_BYTES, 0, c.all_ways());
        assert_eq!(v.map(|v| v.addr), Some(0));
        assert!(c.contains(4 * LINE_BYTES), "set 1 untouched");
    }

    /// 4 sets × 4 ways = 1 KiB; addresses `k * 256` all map to set 0.
    fn small() -> Cache {
        Cache::<false>::new(1024, 4)
    }

    #[test]
    fn geometry_and_set_index() {
        let c = small();
        assert_eq!((c.sets(), c.ways()), (4, 4));
        assert_eq!(c.base(0x40 >> LINE_SHIFT), 4);
        assert_eq!(c.base(0x100 >> LINE_SHIFT), 0);
        assert_eq!(c.all_ways(), 0b1111);
        assert_eq!(c.top_ways(1), 0b1000);
        assert_eq!(Cache::<false>::new(64 * 64, 64).all_ways(), u64::MAX);
    }

    #[test]
    fn the_oldest_way_is_the_first_of_the_smallest_words() {
        // Against a plain scan, with many ties (words drawn from 0..4).
        fn check<const W: usize>(x: &mut u64) {
            for _ in 0..2_000 {
                let meta: Vec<u64> = (0..W)
                    .map(|_| {
                        *x ^= *x << 13;
                        *x ^= *x >> 7;
                        *x ^= *x << 17;
                        *x % 4
                    })
                    .collect();
                let min = *meta.iter().min().unwrap();
                let first = meta.iter().position(|&m| m == min).unwrap();
                assert_eq!(oldest_way::<W>(&meta), first, "{meta:?}");
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        check::<4>(&mut x);
        check::<8>(&mut x);
        check::<16>(&mut x);
    }

    #[test]
    fn a_line_is_found_in_whichever_way_it_is() {
        for ways in [4u32, 8, 16, 3] {
            let mut c = Cache::<true>::new(2 * ways as u64 * LINE_BYTES, ways);
            let lines: Vec<u64> = (0..ways as u64).map(|k| k * 2 * LINE_BYTES).collect();
            let slots: Vec<usize> = lines.iter().map(|&a| c.fill(a, 0, c.all_ways()).0).collect();
            for (&a, &s) in lines.iter().zip(&slots) {
                assert_eq!(c.find(a), Some(s), "{ways} ways, line {a:#x}");
            }
            assert_eq!(c.find(2 * ways as u64 * 2 * LINE_BYTES), None);
        }
    }

    #[test]
    fn working_set_that_fits_hits_after_warmup() {
        let mut c = small();
        let (mut hits, mut misses) = (0, 0);
        for pass in 0..3 {
            for a in (0..1024u64).step_by(64) {
                if c.lookup(a).is_some() {
                    hits += 1;
                } else {
                    misses += 1;
                    assert_eq!(c.fill(a, 0, c.all_ways()).1, None, "no eviction while it fits");
                }
            }
            if pass == 0 {
                assert_eq!((hits, misses), (0, 16));
            }
        }
        assert_eq!((hits, misses), (32, 16));
    }

    /// Cycling over k lines of one set: all hits after warm-up when k ≤ ways,
    /// all misses under LRU when k = ways + 1.
    #[test]
    fn one_set_thrashes_exactly_past_the_ways() {
        for k in [4u64, 5] {
            let mut c = small();
            let mut misses = 0;
            for _ in 0..10 {
                for i in 0..k {
                    let a = i * 256;
                    if c.lookup(a).is_none() {
                        misses += 1;
                        c.fill(a, 0, c.all_ways());
                    }
                }
            }
            assert_eq!(misses, if k == 4 { 4 } else { 50 }, "k = {k}");
        }
    }

    #[test]
    fn lru_order_picks_the_least_recently_used() {
        let mut c = small();
        for i in 0..4 {
            c.fill(i * 256, 0, c.all_ways());
        }
        c.lookup(0); // order now 1, 2, 3, 0 (oldest first)
        assert_eq!(c.fill(4 * 256, 0, c.all_ways()).1.unwrap().addr, 256);
        c.lookup(512);
        assert_eq!(c.fill(5 * 256, 0, c.all_ways()).1.unwrap().addr, 768);
        // find() does not refresh: 0 is now the oldest.
        c.find(0);
        assert_eq!(c.fill(6 * 256, 0, c.all_ways()).1.unwrap().addr, 0);
    }

    #[test]
    fn dirty_victims_reported_exactly() {
        let mut c = small();
        for i in 0..4u64 {
            c.fill(i * 256, if i % 2 == 0 { flag::DIRTY } else { 0 }, c.all_ways());
        }
        let dirty = (4..8u64).filter(|i| c.fill(i * 256, 0, c.all_ways()).1.unwrap().dirty()).count();
        assert_eq!(dirty, 2);
        assert_eq!(c.occupancy(), 4);
    }

    #[test]
    fn way_mask_confines_fills() {
        let mut c = small();
        let top = c.top_ways(2);
        for i in 0..3u64 {
            let (slot, _) = c.fill(i * 256, 0, top);
            assert!(slot == 2 || slot == 3, "slot {slot}");
        }
        // Three lines through two ways: the first was evicted though ways 0–1 are empty.
        assert!(!c.contains(0) && c.contains(256) && c.contains(512));
        assert_eq!(c.occupancy(), 2);
        // An unrestricted fill uses an empty way, evicting nothing.
        assert_eq!(c.fill(3 * 256, 0, c.all_ways()).1, None);
    }

    #[test]
    fn invalidate_returns_flags() {
        let mut c = small();
        c.fill(0x1000, flag::DIRTY | flag::EXCL, c.all_ways());
        assert_eq!(c.invalidate(0x1000 + 5), Some(flag::DIRTY | flag::EXCL));
        assert_eq!(c.invalidate(0x1000), None);
        assert!(!c.contains(0x1000));
    }

    /// A ring of buffers a power of two apart fills the sets of a plain
    /// index evenly, so it fits exactly until it does not; hashed over
    /// slices, some sets overflow first (a multinomial spread), so misses
    /// start below the capacity and grow with the ring.
    #[test]
    fn a_slice_hash_spreads_a_strided_ring_unevenly_and_deterministically() {
        // 16 slices × 64 sets × 2 ways; buffers 2 KiB apart (32 lines): the
        // plain index puts them in 32 of the 1024 sets, the hash in 2 set
        // positions of each of 16 slices; 64 lines' room either way.
        let (sets, ways) = (1024u64, 2u32);
        let resident = |slices: u32, n: u64| {
            let mut c = Cache::<true>::new(sets * ways as u64 * LINE_BYTES, ways).with_slices(slices);
            for _ in 0..2 {
                for i in 0..n {
                    let a = i * 2048;
                    if c.lookup(a).is_none() {
                        c.fill(a, 0, c.all_ways());
                    }
                }
            }
            (0..n).filter(|i| c.contains(i * 2048)).count() as u64
        };
        assert_eq!(resident(0, 64), 64);
        assert_eq!(resident(0, 65), 64, "one set overflows: one line goes");
        let shares: Vec<f64> = [16u64, 32, 48, 64, 96].iter().map(|&n| resident(16, n) as f64 / n as f64).collect();
        assert!(shares[3] < 0.95, "{shares:?}: below capacity, some sets already overflow");
        assert!(shares.windows(2).all(|w| w[1] <= w[0]) && shares[0] > shares[4], "{shares:?}: falls with the ring");
        assert!(shares[4] > 0.3, "{shares:?}: past capacity, sets that did not overflow keep their lines");
        assert_eq!(resident(16, 48), resident(16, 48), "deterministic");
    }

    #[test]
    fn lines_cover_the_range() {
        assert_eq!(lines(0, 0).count(), 0);
        assert_eq!(lines(10, 1).collect::<Vec<_>>(), vec![0]);
        assert_eq!(lines(0, 64).collect::<Vec<_>>(), vec![0]);
        assert_eq!(lines(0, 65).collect::<Vec<_>>(), vec![0, 64]);
        assert_eq!(lines(60, 1518).count(), 25); // bytes 60..1578 touch lines 0..=24
    }
}
