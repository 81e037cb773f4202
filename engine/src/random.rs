//! random: where the engine's random numbers come from. Task tokens, generated execution names,
//! retry jitter, `States.UUID` and `States.MathRandom` all draw from one [`RandomSource`]
//! (the OS generator, [`OsRandom`], unless the embedder or a test injects another).
//!
//! A failed draw fails the operation that needed it, with [`Error::RandomSourceFailed`]:
//! a token or name made from a fallback value would be predictable. A decision's draws go
//! through [`Draws`], which remembers the first failure; the engine checks it before the
//! decision is committed, so a decision that drew a failed value writes nothing. Replay never
//! draws: what a decision drew is recorded in its events.
//!
//! Invariants: no draw has a fallback value that can reach the log or a caller. Must not:
//! log or echo a drawn value.

use std::fmt::Debug;
use std::sync::Arc;

use parking_lot::Mutex;

use super::Error;
use statelog_core::paths::Entropy;

/// A source of random bytes for secrets (task tokens) and names.
pub trait RandomSource: Send + Sync + Debug {
    /// Fills `bytes` with random bytes, or says why it cannot.
    fn fill(&self, bytes: &mut [u8]) -> Result<(), std::io::Error>;
}

/// The operating system's generator (`getrandom`): the default source.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), std::io::Error> {
        getrandom::fill(bytes).map_err(|e| std::io::Error::other(e.to_string()))
    }
}

/// How many bytes of the source a generated execution name's draw takes at once (32 names'
/// worth): one `getrandom` call per start was a measurable share of a start's CPU at c=1.
const NAME_POOL_SIZE_BYTES: usize = 512;

/// The engine's random numbers: the source, and, for reproducible tests, a seeded generator
/// that replaces it for decisions (`EngineOptions::entropy_seed`; names still come from the
/// source).
#[derive(Debug)]
pub(crate) struct EntropySource {
    source: Arc<dyn RandomSource>,
    seeded: Option<Mutex<u64>>,
    /// Bytes drawn from the source for generated names, not handed out yet.
    names: Mutex<NamePool>,
}

/// The source's bytes kept for names: `bytes[used..]` are unused, each handed out once.
#[derive(Debug)]
struct NamePool {
    bytes: [u8; NAME_POOL_SIZE_BYTES],
    used: usize,
}

impl EntropySource {
    /// Draws from `source`, or from `seed` for decisions when one is given.
    pub(crate) fn new(source: Arc<dyn RandomSource>, seed: Option<u64>) -> Self {
        Self {
            source,
            // xorshift needs a non-zero state.
            seeded: seed.map(|seed| Mutex::new(seed | 1)),
            names: Mutex::new(NamePool {
                bytes: [0; NAME_POOL_SIZE_BYTES],
                used: NAME_POOL_SIZE_BYTES,
            }),
        }
    }

    /// The draws of one decision; check them with [`Draws::finish`] before it is committed.
    pub(crate) fn draws(&self) -> Draws<'_> {
        Draws {
            entropy: self,
            failure: None,
        }
    }

    /// Fills `bytes` from the source (never from the seed: names must not repeat across runs).
    pub(crate) fn fill(&self, bytes: &mut [u8], what: &'static str) -> Result<(), Error> {
        self.source
            .fill(bytes)
            .map_err(|source| Error::RandomSourceFailed { what, source })
    }

    /// Fills `bytes` for a generated name from the source's bytes drawn `NAME_POOL_SIZE_BYTES`
    /// at a time (never from the seed). Each byte drawn goes to one name only; a failed refill
    /// is the call's error and hands out nothing.
    pub(crate) fn fill_name(&self, bytes: &mut [u8; 16], what: &'static str) -> Result<(), Error> {
        let mut pool = self.names.lock();
        if pool.used + bytes.len() > NAME_POOL_SIZE_BYTES {
            let mut fresh = [0u8; NAME_POOL_SIZE_BYTES];
            self.fill(&mut fresh, what)?;
            pool.bytes = fresh;
            pool.used = 0;
        }
        let start = pool.used;
        bytes.copy_from_slice(&pool.bytes[start..start + 16]);
        pool.used = start + 16;
        Ok(())
    }
}

/// One decision's draws. A failed draw yields 0 to the interpreter (which cannot fail on a
/// draw) and is remembered; [`Draws::finish`] turns it into the decision's error, so the value
/// is never committed.
pub(crate) struct Draws<'a> {
    entropy: &'a EntropySource,
    failure: Option<std::io::Error>,
}

impl Draws<'_> {
    /// `Ok` when every draw succeeded; else the typed error of the first failure.
    pub(crate) fn finish(self) -> Result<(), Error> {
        match self.failure {
            None => Ok(()),
            Some(source) => Err(Error::RandomSourceFailed {
                what: "a decision (task tokens, retry jitter, States.UUID, States.MathRandom)",
                source,
            }),
        }
    }
}

impl Entropy for Draws<'_> {
    fn next_u64(&mut self) -> u64 {
        if let Some(state) = &self.entropy.seeded {
            let mut x = state.lock();
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            return *x;
        }
        if self.failure.is_some() {
            // The decision is refused anyway: draw no more.
            return 0;
        }
        let mut bytes = [0u8; 8];
        match self.entropy.source.fill(&mut bytes) {
            Ok(()) => u64::from_le_bytes(bytes),
            Err(e) => {
                self.failure = Some(e);
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Broken;

    impl RandomSource for Broken {
        fn fill(&self, _: &mut [u8]) -> Result<(), std::io::Error> {
            Err(std::io::Error::other("no entropy"))
        }
    }

    #[test]
    fn a_failed_draw_fails_the_decision_and_a_good_one_does_not() {
        let broken = EntropySource::new(Arc::new(Broken), None);
        let mut draws = broken.draws();
        assert_eq!(draws.next_u64(), 0);
        let refused = draws.finish().expect_err("a failed draw is an error");
        assert!(
            matches!(refused, Error::RandomSourceFailed { .. }),
            "{refused}"
        );
        assert!(broken.fill(&mut [0u8; 16], "a name").is_err());

        let os = EntropySource::new(Arc::new(OsRandom), None);
        let mut draws = os.draws();
        assert_ne!((draws.next_u64(), draws.next_u64()), (0, 0), "the OS draws");
        draws.finish().expect("the OS generator works");
    }

    /// Counts its fills and numbers the bytes it hands out (0, 1, 2, ... wrapping).
    #[derive(Debug, Default)]
    struct Counting {
        fills: Mutex<(usize, u8)>,
        broken: std::sync::atomic::AtomicBool,
    }

    impl RandomSource for Counting {
        fn fill(&self, bytes: &mut [u8]) -> Result<(), std::io::Error> {
            if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::other("broken"));
            }
            let mut fills = self.fills.lock();
            fills.0 += 1;
            for byte in bytes.iter_mut() {
                *byte = fills.1;
                fills.1 = fills.1.wrapping_add(1);
            }
            Ok(())
        }
    }

    #[test]
    fn names_take_the_sources_bytes_a_pool_at_a_time_each_byte_once() {
        let counting = Arc::new(Counting::default());
        let entropy = EntropySource::new(counting.clone(), None);
        let per_pool = NAME_POOL_SIZE_BYTES / 16;
        let mut seen = Vec::new();
        for _ in 0..per_pool {
            let mut name = [0u8; 16];
            entropy.fill_name(&mut name, "a name").expect("draws");
            seen.push(name);
        }
        assert_eq!(counting.fills.lock().0, 1, "one fill for a pool's names");
        let handed: Vec<u8> = seen.concat();
        let expected: Vec<u8> = (0..NAME_POOL_SIZE_BYTES).map(|i| i as u8).collect();
        assert_eq!(handed, expected, "every byte of the pool once, in order");
        // The pool is spent: the next name refills it, and a refill that fails is the error.
        counting
            .broken
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut name = [0u8; 16];
        let refused = entropy
            .fill_name(&mut name, "a name")
            .expect_err("no bytes left and the source fails");
        assert!(
            matches!(refused, Error::RandomSourceFailed { .. }),
            "{refused}"
        );
        assert_eq!(name, [0u8; 16], "nothing handed out");
        counting
            .broken
            .store(false, std::sync::atomic::Ordering::SeqCst);
        entropy.fill_name(&mut name, "a name").expect("draws again");
        assert_eq!(counting.fills.lock().0, 2);
        assert_eq!(name[0], 0, "the second pool's first byte (512 wraps to 0)");
    }

    #[test]
    fn a_seed_replaces_the_source_for_decisions_only() {
        let seeded = EntropySource::new(Arc::new(Broken), Some(7));
        let mut draws = seeded.draws();
        assert_ne!(draws.next_u64(), 0);
        draws.finish().expect("seeded draws never fail");
        assert!(
            seeded.fill(&mut [0u8; 16], "a name").is_err(),
            "names never come from the seed"
        );
    }
}
