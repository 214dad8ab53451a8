//! `x mod n` and `x / n` for a divisor fixed at construction: a mask when `n` is a power
//! of two (every ring DPDK and the model build by default), a division
//! otherwise. Ring positions are absolute counters taken modulo the ring
//! size several times per packet; a 64-bit division costs tens of host
//! cycles, a mask one. Same result either way.

/// A fixed divisor (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    n: u64,
    /// `n - 1` and log2(n) when `n` is a power of two, else 0 (unused).
    mask: u64,
    shift: u32,
    pow2: bool,
}

impl Modulus {
    /// Panics if `n` is 0 (callers validate sizes first).
    pub fn new(n: u64) -> Self {
        assert!(n > 0, "modulus of 0");
        let pow2 = n.is_power_of_two();
        Modulus { n, mask: if pow2 { n - 1 } else { 0 }, shift: if pow2 { n.trailing_zeros() } else { 0 }, pow2 }
    }

    /// The divisor.
    #[inline(always)]
    pub fn get(self) -> u64 {
        self.n
    }

    /// `x mod n`.
    #[inline(always)]
    pub fn rem(self, x: u64) -> u64 {
        if self.pow2 {
            x & self.mask
        } else {
            x % self.n
        }
    }

    /// `x / n`.
    #[inline(always)]
    pub fn div(self, x: u64) -> u64 {
        if self.pow2 {
            x >> self.shift
        } else {
            x / self.n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_remainder_for_powers_of_two_and_others() {
        for n in [1u64, 2, 3, 8, 24, 512, 520, 4096, 1 << 40] {
            let m = Modulus::new(n);
            assert_eq!(m.get(), n);
            for x in [0u64, 1, n - 1, n, n + 1, 3 * n + 5, u64::MAX - 7, u64::MAX] {
                assert_eq!(m.rem(x), x % n, "{x} mod {n}");
                assert_eq!(m.div(x), x / n, "{x} / {n}");
            }
        }
    }
}
