//! A snoop filter: which cores may hold a line in their private caches.
//!
//! Per core, a count of the lines of its L1D and L2 whose line number falls
//! in each bucket (the line number's low bits). A count of zero means the
//! core holds no line of that bucket, so a snoop skips its caches; otherwise
//! the snoop looks, as before. The filter never changes an outcome (it is
//! exact about absence); it only spares a snoop the caches that cannot
//! answer, which is most of them with several cores — as a mesh's snoop
//! filter spares the cores the broadcast (Arm CMN-600, Intel's SF).
//!
//! The counts are bytes: the buckets are at least as many as either private
//! cache's sets, so all of a core's lines in one bucket sit in one set of
//! each cache, at most `ways(L1D) + ways(L2)` ≤ 128 of them.

use super::cache::LINE_BYTES;

/// Buckets per private line held (fewer buckets than this fill up and
/// stop sparing snoops); the whole filter stays within `MAX_BYTES`.
const BUCKETS_PER_LINE: usize = 8;
const MAX_BYTES: usize = 16 << 20;

pub struct SnoopFilter {
    cores: usize,
    mask: u64,
    /// `counts[bucket * cores + core]`: the bucket's lines in the core's L1D and L2.
    counts: Vec<u8>,
}

fn buckets(cores: usize, lines: usize, max_sets: usize) -> usize {
    let mut buckets = lines.saturating_mul(BUCKETS_PER_LINE).checked_next_power_of_two().unwrap_or(1 << (usize::BITS - 1));
    while buckets > max_sets && buckets.saturating_mul(cores) > MAX_BYTES {
        buckets /= 2;
    }
    buckets.max(max_sets.next_power_of_two())
}

/// Bytes of the filter [`SnoopFilter::new`] builds for these arguments.
pub fn footprint(cores: usize, lines: usize, max_sets: usize) -> u64 {
    (buckets(cores, lines, max_sets) as u64).saturating_mul(cores as u64)
}

impl SnoopFilter {
    /// For `cores` cores whose private caches have `lines` lines in all and
    /// at most `max_sets` sets (a power of two).
    pub fn new(cores: usize, lines: usize, max_sets: usize) -> Self {
        let buckets = buckets(cores, lines, max_sets);
        SnoopFilter { cores, mask: buckets as u64 - 1, counts: vec![0; buckets * cores] }
    }

    #[inline(always)]
    fn index(&self, core: usize, addr: u64) -> usize {
        ((addr / LINE_BYTES) & self.mask) as usize * self.cores + core
    }

    /// A line of `addr` entered `core`'s L1D or L2.
    #[inline(always)]
    pub fn add(&mut self, core: usize, addr: u64) {
        let i = self.index(core, addr);
        debug_assert!(self.counts[i] < u8::MAX, "snoop filter count overflow");
        self.counts[i] += 1;
    }

    /// A line of `addr` left `core`'s L1D or L2.
    #[inline(always)]
    pub fn remove(&mut self, core: usize, addr: u64) {
        let i = self.index(core, addr);
        debug_assert!(self.counts[i] > 0, "snoop filter count underflow");
        self.counts[i] -= 1;
    }

    /// May `core` hold the line of `addr`? (False means it certainly does not.)
    #[inline(always)]
    pub fn may_hold(&self, core: usize, addr: u64) -> bool {
        self.counts[self.index(core, addr)] != 0
    }

    /// Per core, may it hold the line of `addr`: the bucket's counts, one per core.
    #[inline(always)]
    pub fn holders(&self, addr: u64) -> &[u8] {
        let i = self.index(0, addr);
        &self.counts[i..i + self.cores]
    }

    /// Do the counts match what the private caches hold, line for line?
    #[cfg(test)]
    pub(super) fn agrees_with(&self, l1: &[super::Cache], l2: &[super::Cache]) -> bool {
        let mut want = vec![0u8; self.counts.len()];
        for (o, (a, b)) in l1.iter().zip(l2).enumerate() {
            for line in a.resident().chain(b.resident()) {
                want[self.index(o, line * LINE_BYTES)] += 1;
            }
        }
        want == self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_in_and_out_per_core() {
        let mut f = SnoopFilter::new(2, 64, 16);
        assert!(!f.may_hold(0, 0x40));
        f.add(0, 0x40);
        f.add(0, 0x40 + 8); // same line
        assert!(f.may_hold(0, 0x40) && !f.may_hold(1, 0x40));
        assert_eq!(f.holders(0x40), &[2, 0]);
        f.remove(0, 0x40);
        assert!(f.may_hold(0, 0x40));
        f.remove(0, 0x40);
        assert!(!f.may_hold(0, 0x40));
    }

    #[test]
    fn stays_within_its_size_but_covers_every_set() {
        let f = SnoopFilter::new(1024, 1 << 20, 4096);
        assert!(f.counts.len() <= MAX_BYTES);
        assert!(f.mask + 1 >= 4096);
        let f = SnoopFilter::new(1024, 1 << 20, 1 << 16);
        assert_eq!(f.mask + 1, 1 << 16, "never fewer buckets than sets");
    }
}
