//! retention: how long closed executions stay visible, and compaction. A closed execution is
//! visible until `retention_ms` after its close, by the engine's clock; then every API answers
//! `ExecutionDoesNotExist` for it at once (before any byte is reclaimed). [`Engine::compact`]
//! (on demand, or from a caller's schedule via [`Engine::compact_if_due`]) has the store forget
//! the expired executions and the WAL reclaim their segments.
//!
//! Invariants: open executions are never expired, whatever their age; visibility depends only on
//! the close time and the clock, so a crash mid-compaction cannot make an expired execution
//! visible again. Must not: read wall time except through the clock.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{Engine, Error};
use crate::limits::COMPACTION_POLL_MS_MAX;
use statelog_store::ExecutionSummary;

pub use statelog_store::StoreCompaction as CompactionSummary;
pub use statelog_wal::CompactionProgress;

impl Engine {
    /// True when `summary` is a closed execution past its retention.
    pub(crate) fn is_expired(&self, summary: &ExecutionSummary) -> bool {
        let now_ms = self.inner.options.clock.now_ms();
        summary.status.is_closed()
            && summary
                .stop_ms
                .is_some_and(|stop| now_ms.saturating_sub(stop) >= self.inner.options.retention_ms)
    }

    /// The execution an API caller names, as the index knows it, unless unknown, past
    /// retention, not an execution ARN (`InvalidArn`) or not this engine's.
    pub(crate) fn visible_summary(&self, execution_arn: &str) -> Result<ExecutionSummary, Error> {
        self.requested_summary(execution_arn)
    }

    /// Forgets every execution past retention (and every closed SWF run past its domain's
    /// retention) and compacts the log (segments holding only expired records are deleted,
    /// live records of the others copied forward).
    pub fn compact(&self) -> Result<CompactionSummary, Error> {
        self.compact_with_progress(|_| {})
    }

    /// [`Engine::compact`], telling `progress` how far it is (segments scanned of the total,
    /// bytes copied, and at the end of each step segments deleted and bytes reclaimed).
    pub fn compact_with_progress(
        &self,
        mut progress: impl FnMut(&CompactionProgress),
    ) -> Result<CompactionSummary, Error> {
        let now_ms = self.inner.options.clock.now_ms();
        // Expired means closed at or before `now - retention`; the store drops `stop < cutoff`.
        let cutoff_ms = now_ms
            .saturating_sub(self.inner.options.retention_ms)
            .saturating_add(1);
        Ok(self
            .inner
            .store
            .compact_with_swf(cutoff_ms, Some(now_ms), &mut progress)?)
    }

    /// The background schedule's step: compacts when at least `interval_ms` passed since
    /// `last_ms` by the engine's clock; returns the summary when it ran. A caller (a thread, a
    /// test on the manual clock) keeps `last_ms`.
    pub fn compact_if_due(
        &self,
        last_ms: &mut Option<u64>,
        interval_ms: u64,
    ) -> Result<Option<CompactionSummary>, Error> {
        let now_ms = self.inner.options.clock.now_ms();
        if last_ms.is_some_and(|last| now_ms.saturating_sub(last) < interval_ms) {
            return Ok(None);
        }
        *last_ms = Some(now_ms);
        self.compact().map(Some)
    }
}

/// Starts the thread that compacts every `compaction_interval_ms` by the engine's clock. It
/// holds only a weak reference to the engine and ends with it; failures go to
/// `background_errors`.
pub(crate) fn spawn_compaction_thread(engine: &Engine) -> Result<(), Error> {
    let weak = Arc::downgrade(&engine.inner);
    // The first compaction comes one interval after open, not at open.
    let mut last_ms = Some(engine.inner.options.clock.now_ms());
    std::thread::Builder::new()
        .name("statelog-compaction".to_string())
        .spawn(move || loop {
            {
                let Some(inner) = weak.upgrade() else { return };
                if inner.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                let engine = Engine { inner };
                let interval_ms = engine.inner.options.compaction_interval_ms;
                if let Err(error) = engine.compact_if_due(&mut last_ms, interval_ms) {
                    engine
                        .inner
                        .background_errors
                        .lock()
                        .push(format!("compaction: {error}"));
                }
            }
            std::thread::park_timeout(Duration::from_millis(COMPACTION_POLL_MS_MAX));
        })
        .map_err(|source| Error::ThreadNotStarted {
            thread: "compaction",
            source,
        })?;
    Ok(())
}
