//! metrics: the engine's cheap counters (executions started and closed by status, state
//! transitions, log commits and their latency) and [`Engine::metrics`], a snapshot of them with
//! the WAL's own counters and the pending tasks of every task list.
//!
//! Invariants: counting is a handful of relaxed atomic adds after a commit is durable (nothing
//! is counted for a decision that failed to commit); the latency histogram has fixed buckets,
//! so it never grows. Counters start at zero when the engine opens (recovery replays nothing
//! into them). Must not: take a lock on the commit path, or read wall time (latency is measured
//! with the monotonic `Instant`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::Engine;
use statelog_core::history::{EventDetails, HistoryEvent};

/// Upper bounds (inclusive, microseconds) of the commit-latency histogram buckets; one more
/// bucket counts everything above the last.
pub const COMMIT_LATENCY_BUCKETS_MICROS: [u64; 12] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 1_000_000,
];

const BUCKETS: usize = COMMIT_LATENCY_BUCKETS_MICROS.len() + 1;

/// Closed-execution statuses, in the order of [`EngineMetrics::executions_closed`].
pub const CLOSED_STATUSES: [&str; 4] = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"];

/// The counters behind [`Engine::metrics`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    executions_started: AtomicU64,
    executions_closed: [AtomicU64; 4],
    transitions: AtomicU64,
    commits: AtomicU64,
    commit_micros_sum: AtomicU64,
    commit_buckets: [AtomicU64; BUCKETS],
}

/// What one decision's events add to the counters: counted from the events before the commit
/// (so the events may be dropped while it waits), added once it is durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    started: u64,
    closed: [u64; 4],
    transitions: u64,
}

impl Tally {
    /// Counts `events`.
    pub(crate) fn of(events: &[HistoryEvent]) -> Self {
        let mut tally = Tally::default();
        for event in events {
            match &event.details {
                EventDetails::ExecutionStarted(_) => tally.started += 1,
                EventDetails::ExecutionSucceeded(_) => tally.closed[0] += 1,
                EventDetails::ExecutionFailed(_) => tally.closed[1] += 1,
                EventDetails::ExecutionTimedOut(_) => tally.closed[2] += 1,
                EventDetails::ExecutionAborted(_) => tally.closed[3] += 1,
                details => tally.transitions += u64::from(details.state_entered().is_some()),
            }
        }
        tally
    }
}

impl Counters {
    /// Counts one durable decision: its events and how long its commit took.
    #[cfg(test)]
    pub(crate) fn record_commit(&self, events: &[HistoryEvent], micros: u64) {
        self.record_tally(Tally::of(events), micros);
    }

    /// Counts one durable decision from the [`Tally`] of its events: one atomic add per
    /// counter that changes (they are shared by every thread that commits).
    pub(crate) fn record_tally(&self, tally: Tally, micros: u64) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.commit_micros_sum.fetch_add(micros, Ordering::Relaxed);
        let bucket = COMMIT_LATENCY_BUCKETS_MICROS
            .iter()
            .position(|bound| micros <= *bound)
            .unwrap_or(BUCKETS - 1);
        self.commit_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        if tally.started > 0 {
            self.executions_started
                .fetch_add(tally.started, Ordering::Relaxed);
        }
        for (counter, &count) in self.executions_closed.iter().zip(&tally.closed) {
            if count > 0 {
                counter.fetch_add(count, Ordering::Relaxed);
            }
        }
        if tally.transitions > 0 {
            self.transitions
                .fetch_add(tally.transitions, Ordering::Relaxed);
        }
    }
}

/// A snapshot of the engine's counters since it opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineMetrics {
    /// Executions started (`ExecutionStarted` committed).
    pub executions_started: u64,
    /// Executions closed, by status in [`CLOSED_STATUSES`] order.
    pub executions_closed: [u64; 4],
    /// State transitions (`*StateEntered` events committed).
    pub transitions: u64,
    /// Decisions committed to the log (one atomic batch each).
    pub commits: u64,
    /// Total time those commits took, in microseconds.
    pub commit_micros_sum: u64,
    /// Commits per latency bucket: `commit_buckets[i]` counts commits of at most
    /// `COMMIT_LATENCY_BUCKETS_MICROS[i]` µs (and above the previous bound); the last counts
    /// the rest. Not cumulative.
    pub commit_buckets: [u64; BUCKETS],
    /// fdatasync calls of the WAL (0 over a log that is not a WAL).
    pub wal_syncs: u64,
    /// Write calls of the WAL.
    pub wal_writes: u64,
    /// Unclaimed tasks per task list: `(namespace, list, count)`.
    pub task_lists_pending: Vec<(String, String, usize)>,
}

impl Engine {
    /// The engine's counters since it opened, with the WAL's and the task lists' pending counts.
    pub fn metrics(&self) -> EngineMetrics {
        let c = &self.inner.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let log = self.inner.store.log().stats();
        EngineMetrics {
            executions_started: load(&c.executions_started),
            executions_closed: std::array::from_fn(|i| load(&c.executions_closed[i])),
            transitions: load(&c.transitions),
            commits: load(&c.commits),
            commit_micros_sum: load(&c.commit_micros_sum),
            commit_buckets: std::array::from_fn(|i| load(&c.commit_buckets[i])),
            wal_syncs: log.syncs_count,
            wal_writes: log.writes_count,
            task_lists_pending: self.inner.activities.pending_counts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lands_in_the_first_bucket_that_holds_it() {
        let counters = Counters::default();
        counters.record_commit(&[], 50);
        counters.record_commit(&[], 51);
        counters.record_commit(&[], 5_000_000);
        let buckets: Vec<u64> = counters
            .commit_buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(buckets[0], 1);
        assert_eq!(buckets[1], 1);
        assert_eq!(buckets[BUCKETS - 1], 1);
        assert_eq!(counters.commits.load(Ordering::Relaxed), 3);
        assert_eq!(
            counters.commit_micros_sum.load(Ordering::Relaxed),
            5_000_101
        );
    }
}
