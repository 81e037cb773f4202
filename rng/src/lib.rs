//! statelog-rng: one small seeded generator, shared by the tests, the fuzz replays, the benches,
//! the simulated disk (`statelog-wal`'s `sim` feature) and the payloads of `statelog wal
//! append-test`. The same seed gives the same sequence on every platform and every run, so a
//! printed seed (`STATELOG_CRASH_SEED`) replays a whole run.
//!
//! It is NOT for secrets: its output is predictable from a few values. Task tokens and other
//! secrets come from the engine's OS-seeded generator (`statelog-engine`'s `random` module).
//!
//! Two algorithms, one type, because recorded seeds must keep replaying the sequences they
//! produced before the copies were merged here:
//! - [`Rng::new`]: Marsaglia's xorshift64 (shifts 13, 7, 17).
//! - [`Rng::xorshift64_star`]: xorshift64* (shifts 12, 25, 27, then a multiply), with better low
//!   bits; the WAL crash test and `append-test` use it.
//!
//! Must not: depend on anything, allocate, read a clock or the OS. It is `no_std`.

#![no_std]
#![deny(missing_docs)]

/// The state a zero seed is replaced with: xorshift never leaves the all-zero state.
const ZERO_SEED_REPLACEMENT: u64 = 1;

/// The multiplier of xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift
/// generators, scrambled", 2016).
const XORSHIFT64_STAR_MULTIPLIER: u64 = 0x2545_F491_4F6C_DD1D;

/// The 64-bit golden ratio, an odd constant that spreads consecutive integers over all bits.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Which output function a generator applies to its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Xorshift64,
    Xorshift64Star,
}

/// A seeded deterministic generator of 64-bit values. Cheap to copy; a copy continues the same
/// sequence independently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rng {
    /// Never zero.
    state: u64,
    algorithm: Algorithm,
}

impl Rng {
    /// An xorshift64 generator. A nonzero `seed` is the first state as given; zero (the one
    /// state xorshift never leaves) becomes 1.
    pub const fn new(seed: u64) -> Rng {
        Rng {
            state: nonzero(seed),
            algorithm: Algorithm::Xorshift64,
        }
    }

    /// An xorshift64 generator for stream number `stream` of a family, e.g. the payload of
    /// record `id`: the index times [`GOLDEN_GAMMA`], the low bit set, so neighbouring indexes
    /// start far apart.
    pub const fn for_stream(stream: u64) -> Rng {
        Rng::new(stream.wrapping_mul(GOLDEN_GAMMA) | 1)
    }

    /// An xorshift64* generator. Seeded as [`Rng::new`].
    pub const fn xorshift64_star(seed: u64) -> Rng {
        Rng {
            state: nonzero(seed),
            algorithm: Algorithm::Xorshift64Star,
        }
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        debug_assert!(self.state != 0, "xorshift state is never zero");
        let output = match self.algorithm {
            Algorithm::Xorshift64 => {
                let mut x = self.state;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.state = x;
                x
            }
            Algorithm::Xorshift64Star => {
                let mut x = self.state;
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                self.state = x;
                x.wrapping_mul(XORSHIFT64_STAR_MULTIPLIER)
            }
        };
        debug_assert!(self.state != 0, "a nonzero state stays nonzero");
        output
    }

    /// A value in `0..bound` (by remainder: a slight bias towards small values, which tests do
    /// not mind). A `bound` of 0 gives 0, so a caller's empty range never panics here.
    pub fn below(&mut self, bound: u64) -> u64 {
        let value = self.next_u64();
        if bound == 0 {
            return 0;
        }
        value % bound
    }

    /// A value in `low..=high` (by remainder, as [`Rng::below`]). Gives `low` when `high < low`.
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        let span = high.saturating_sub(low);
        match span.checked_add(1) {
            Some(count) => low + self.below(count),
            // The whole u64 range.
            None => self.next_u64(),
        }
    }

    /// An index into a collection of `len` items; 0 when `len` is 0.
    pub fn index(&mut self, len: usize) -> usize {
        // usize is at most 64 bits on every supported target, and the result is below `len`.
        self.below(len as u64) as usize
    }

    /// One item of `items`, or `None` when it is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = self.index(items.len());
        items.get(index)
    }

    /// True with probability `numerator / denominator` (false when `denominator` is 0).
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        if denominator == 0 {
            // Still draw, so the sequence does not depend on the arguments.
            self.next_u64();
            return false;
        }
        self.below(denominator) < numerator
    }

    /// The low bit of the next value: a coin flip.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// Fills `bytes` with the next values, little-endian, eight bytes per value (the last value
    /// cut to what is left).
    pub fn fill_bytes(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

const fn nonzero(seed: u64) -> u64 {
    if seed == 0 {
        ZERO_SEED_REPLACEMENT
    } else {
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequences the copies of the generator produced before they were merged here; a
    /// change to either algorithm breaks the replay of every recorded seed.
    #[test]
    fn both_algorithms_keep_their_recorded_sequences() {
        let mut plain = Rng::new(1);
        assert_eq!(plain.next_u64(), 1_082_269_761);
        assert_eq!(plain.next_u64(), 1_152_992_998_833_853_505);
        let mut star = Rng::xorshift64_star(1);
        assert_eq!(star.next_u64(), 5_180_492_295_206_395_165);
        assert_eq!(star.next_u64(), 12_380_297_144_915_551_517);
    }

    #[test]
    fn a_zero_seed_does_not_stick_at_zero() {
        let mut a = Rng::new(0);
        assert_eq!(a, Rng::new(1));
        assert_ne!(a.next_u64(), 0);
        let mut b = Rng::xorshift64_star(0);
        assert_ne!(b.next_u64(), 0);
    }

    #[test]
    fn the_same_seed_gives_the_same_sequence_and_another_seed_another() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let mut c = Rng::new(43);
        for _ in 0..100 {
            let x = a.next_u64();
            assert_eq!(x, b.next_u64());
            assert_ne!(x, c.next_u64());
        }
    }

    #[test]
    fn bounded_draws_stay_in_their_range() {
        let mut rng = Rng::new(7);
        for bound in 1..50 {
            assert!(rng.below(bound) < bound);
            let v = rng.range_inclusive(bound, bound * 2);
            assert!((bound..=bound * 2).contains(&v));
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.range_inclusive(5, 3), 5);
        assert_eq!(rng.range_inclusive(9, 9), 9);
        let _ = rng.range_inclusive(0, u64::MAX);
        assert_eq!(rng.pick::<u8>(&[]), None);
        assert_eq!(rng.pick(&[3]), Some(&3));
        assert!(!rng.chance(1, 0));
        assert!(rng.chance(1, 1));
        assert!(!rng.chance(0, 1));
    }

    #[test]
    fn chance_and_coin_are_roughly_fair() {
        let mut rng = Rng::new(99);
        let heads = (0..10_000).filter(|_| rng.coin()).count();
        assert!((4_500..5_500).contains(&heads), "{heads}");
        let hits = (0..10_000).filter(|_| rng.chance(1, 4)).count();
        assert!((2_000..3_000).contains(&hits), "{hits}");
    }

    #[test]
    fn fill_bytes_lays_out_values_little_endian_and_cuts_the_last() {
        let mut rng = Rng::new(5);
        let mut copy = rng;
        let mut bytes = [0u8; 11];
        rng.fill_bytes(&mut bytes);
        assert_eq!(bytes[..8], copy.next_u64().to_le_bytes());
        assert_eq!(bytes[8..], copy.next_u64().to_le_bytes()[..3]);
        assert_eq!(rng, copy, "both drew two values");
    }
}
