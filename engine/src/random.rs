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

/// The engine's random numbers: the source, and, for reproducible tests, a seeded generator
/// that replaces it for decisions (`EngineOptions::entropy_seed`; names still come from the
/// source).
#[derive(Debug)]
pub(crate) struct EntropySource {
    source: Arc<dyn RandomSource>,
    seeded: Option<Mutex<u64>>,
}

impl EntropySource {
    /// Draws from `source`, or from `seed` for decisions when one is given.
    pub(crate) fn new(source: Arc<dyn RandomSource>, seed: Option<u64>) -> Self {
        Self {
            source,
            // xorshift needs a non-zero state.
            seeded: seed.map(|seed| Mutex::new(seed | 1)),
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
