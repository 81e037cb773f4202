//! redrive: `RedriveExecution` and the redrive view of an execution (status, count, date,
//! reason). The engine folds the closed execution's log, checks the AWS rules (closed as
//! FAILED/ABORTED/TIMED_OUT, at most `REDRIVE_WINDOW_MS` after its close, not past its open-time
//! limit, fewer than `history_events_max - 1` events), reopens it in a slot and drives
//! `Trigger::Redrive`: `ExecutionRedriven` and the rerun of what did not succeed are one durable
//! batch before the call returns.
//!
//! Invariants: a redrive never creates an execution (same ARN, definition, input); a client
//! token seen before for the same execution answers the earlier redrive instead of redriving
//! again. Must not: read wall time except through the clock; hold the `open` lock across an
//! append.
//!
//! Client tokens are persisted: the token's catalog record is the last record of the batch that
//! appends `ExecutionRedriven`, so a crash keeps both or neither and a repeated token answers
//! the same after a restart. A parent whose Distributed Map run failed redrives that run
//! (`MapRunRedriven`, `map_runs`); its failed children report `REDRIVABLE_BY_MAP_RUN`.

use std::sync::Arc;

use super::error::RedriveRefusal;
use super::kernel::{Commit, Slot};
use super::{Engine, Error, ExecutionStatus, ListExecutions};
use crate::limits::REDRIVE_WINDOW_MS;
use statelog_core::interpreter::ExecutionState;
use statelog_store::ExecutionSummary;

/// `redriveStatus`: whether `RedriveExecution` would accept the execution now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedriveStatus {
    /// It can be redriven.
    Redrivable,
    /// It cannot (see the reason).
    NotRedrivable,
    /// A failed child of a Distributed Map's run: its parent's redrive redrives it (with the
    /// run, `MapRunRedriven`).
    RedrivableByMapRun,
}

impl RedriveStatus {
    /// The AWS name (`REDRIVABLE`, `NOT_REDRIVABLE`, `REDRIVABLE_BY_MAP_RUN`).
    pub fn aws_name(self) -> &'static str {
        match self {
            RedriveStatus::Redrivable => "REDRIVABLE",
            RedriveStatus::NotRedrivable => "NOT_REDRIVABLE",
            RedriveStatus::RedrivableByMapRun => "REDRIVABLE_BY_MAP_RUN",
        }
    }
}

/// The redrive view of an execution (`DescribeExecution`'s redrive fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedriveInfo {
    /// `redriveCount`: how many times it was redriven.
    pub redrive_count: u32,
    /// `redriveDate`: when it was last redriven, ms since the epoch.
    pub redrive_ms: Option<u64>,
    /// `redriveStatus`.
    pub redrive_status: RedriveStatus,
    /// `redriveStatusReason`: why not, when not redrivable (its Display is AWS's sentence).
    pub redrive_status_reason: Option<RedriveRefusal>,
}

/// What `RedriveExecution` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedriveOutcome {
    /// `redriveDate`: when this redrive happened (the earlier one for a repeated client token).
    pub redrive_ms: u64,
    /// The execution's redrive count after it.
    pub redrive_count: u32,
}

impl Engine {
    /// Redrives a failed, aborted or timed-out execution: appends `ExecutionRedriven` and
    /// continues from the unsuccessful step (successful steps keep their results). Returns once
    /// that is durable. The same `client_token` for the same execution answers the first call.
    pub fn redrive_execution(
        &self,
        execution_arn: &str,
        client_token: Option<&str>,
    ) -> Result<RedriveOutcome, Error> {
        self.redrive(execution_arn, client_token, false)
    }

    /// Redrives a Distributed Map's child on behalf of its Map Run (which
    /// [`Engine::redrive_execution`] refuses to do for a caller: `REDRIVABLE_BY_MAP_RUN`).
    pub(crate) fn redrive_map_run_child(
        &self,
        execution_arn: &str,
    ) -> Result<RedriveOutcome, Error> {
        self.redrive(execution_arn, None, true)
    }

    fn redrive(
        &self,
        execution_arn: &str,
        client_token: Option<&str>,
        by_map_run: bool,
    ) -> Result<RedriveOutcome, Error> {
        let key: Arc<str> = Arc::from(execution_arn);
        let not = |reason: RedriveRefusal| Error::ExecutionNotRedrivable {
            execution_arn: execution_arn.to_string(),
            reason,
        };
        // A client token already answered (kept in the store's catalog, so across restarts).
        let token_answer = || {
            let answer = self
                .inner
                .store
                .redrive_token(execution_arn, client_token?)?;
            Some(RedriveOutcome {
                redrive_ms: answer.redrive_ms,
                redrive_count: answer.redrive_count,
            })
        };
        // Registered before `open` is looked at: a close performed after the look wakes it.
        let registration = self.inner.close_waiters.register(execution_arn);
        let (slot, effects) = loop {
            let summary = self.visible_summary(execution_arn)?;
            if let Some(answer) = token_answer() {
                return Ok(answer);
            }
            if let Some(reason) = self.not_redrivable_reason(&summary) {
                return Err(not(reason));
            }
            if !by_map_run && is_map_run_child(execution_arn) {
                return Err(not(RedriveRefusal::MapRunChild));
            }
            let definition = self.definition_at(summary.machine_lsn)?;
            let events = self.inner.store.history(execution_arn)?;
            let state = ExecutionState::replay(&events)?;
            let slot = Arc::new(Slot::new(state, definition));
            // Locked before it is published, as a start does: whoever finds it in `open` waits
            // for the redrive to be durable (or gone) before reading its status.
            let mut guard = slot.state.lock();
            let found = {
                let mut open = self.inner.open.lock();
                match open.get(&key) {
                    Some(found) => Some(found.clone()),
                    None => {
                        open.insert(key.clone(), slot.clone());
                        None
                    }
                }
            };
            if let Some(found) = found {
                drop(guard);
                // Closed in the log, its close not yet performed (the slot leaves `open` last):
                // wait for it and look again. Open, or redriven by a racing call: running.
                if found.state.lock().execution.status().is_closed() {
                    registration.wait();
                    continue;
                }
                // A racing call with the same client token redrove it: the same answer.
                if let Some(answer) = token_answer() {
                    return Ok(answer);
                }
                return Err(not(RedriveRefusal::Running));
            }
            // The decision (`ExecutionRedriven` and the rerun) and the client token are one
            // atomic log batch: a crash keeps both or neither.
            let decided =
                self.commit_decision(execution_arn, &mut guard, Commit::Redrive { client_token });
            drop(guard);
            match decided {
                Ok(committed) => break (slot, committed.effects),
                Err(error) => {
                    {
                        let mut open = self.inner.open.lock();
                        if open.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                            open.remove(&key);
                        }
                    }
                    // A racing redrive waiting on this slot looks again.
                    self.inner.close_waiters.closed(execution_arn);
                    return Err(error);
                }
            }
        };
        drop(registration);
        self.perform(execution_arn, &slot, effects);
        let after = self.summary(execution_arn)?;
        Ok(RedriveOutcome {
            redrive_ms: after
                .redrive_ms
                .unwrap_or_else(|| self.inner.options.clock.now_ms()),
            redrive_count: after.redrive_count,
        })
    }

    /// The redrive view of an execution: count, date, status and reason.
    pub fn describe_redrive(&self, execution_arn: &str) -> Result<RedriveInfo, Error> {
        let summary = self.visible_summary(execution_arn)?;
        Ok(self.redrive_info(&summary))
    }

    /// `ListExecutions` with the redrive filter: only executions redriven at least once
    /// (`redriven == true`) or never (`false`). Same paging as [`Engine::list_executions`].
    pub fn list_executions_by_redrive(
        &self,
        request: &ListExecutions,
        redriven: bool,
    ) -> Result<super::ExecutionPage, Error> {
        let mut request = request.clone();
        let asked = match request.max_results {
            0 => crate::limits::LIST_PAGE_EXECUTIONS_DEFAULT,
            n => n,
        };
        let mut out = Vec::new();
        loop {
            let page = self.list_executions(&request)?;
            for item in page.executions {
                let count = self
                    .inner
                    .store
                    .execution(&item.execution_arn)
                    .map_or(0, |s| s.redrive_count);
                if (count > 0) == redriven {
                    out.push(item);
                }
            }
            if out.len() >= asked || page.next_token.is_none() {
                let next_token = if out.len() > asked {
                    out.truncate(asked);
                    out.last().and_then(|last| {
                        self.inner
                            .store
                            .execution(&last.execution_arn)
                            .map(|s| format!("x{}", s.start_index))
                    })
                } else {
                    page.next_token.filter(|_| out.len() == asked)
                };
                return Ok(super::ExecutionPage {
                    executions: out,
                    next_token,
                });
            }
            request.next_token = page.next_token;
        }
    }

    pub(crate) fn redrive_info(&self, summary: &ExecutionSummary) -> RedriveInfo {
        let reason = self.not_redrivable_reason(summary);
        RedriveInfo {
            redrive_count: summary.redrive_count,
            redrive_ms: summary.redrive_ms,
            redrive_status: if reason.is_some() {
                RedriveStatus::NotRedrivable
            } else if is_map_run_child(&summary.execution_arn) {
                // A Distributed Map's child: its parent's redrive redrives it.
                RedriveStatus::RedrivableByMapRun
            } else {
                RedriveStatus::Redrivable
            },
            redrive_status_reason: reason,
        }
    }

    /// Why the execution cannot be redriven now, or `None` when it can.
    fn not_redrivable_reason(&self, summary: &ExecutionSummary) -> Option<RedriveRefusal> {
        let now_ms = self.inner.options.clock.now_ms();
        match summary.status {
            ExecutionStatus::Failed | ExecutionStatus::Aborted | ExecutionStatus::TimedOut => {}
            status => return Some(RedriveRefusal::Status { status }),
        }
        let stop_ms = summary.stop_ms.unwrap_or(now_ms);
        if now_ms.saturating_sub(stop_ms) > REDRIVE_WINDOW_MS {
            return Some(RedriveRefusal::WindowPassed {
                closed_ms_ago: now_ms - stop_ms,
                window_ms: REDRIVE_WINDOW_MS,
            });
        }
        let open_ms_max = self.inner.options.execution_open_ms_max;
        if now_ms.saturating_sub(summary.start_ms) >= open_ms_max {
            return Some(RedriveRefusal::OpenTooLong {
                started_ms_ago: now_ms - summary.start_ms,
                open_ms_max,
            });
        }
        // Room for `ExecutionRedriven` and one more event under the cap.
        let events_max = self.inner.options.history_events_max.saturating_sub(1);
        if summary.event_count >= events_max {
            return Some(RedriveRefusal::EventBudget {
                event_count: summary.event_count,
                events_max,
            });
        }
        None
    }
}

/// Whether `execution_arn` is a STANDARD child of a Distributed Map's run: an execution of a
/// machine named `<machine>/<label>` (`arn:...:execution:<machine>/<label>:<name>`).
fn is_map_run_child(execution_arn: &str) -> bool {
    execution_arn
        .split_once(":execution:")
        .and_then(|(_, rest)| rest.rsplit_once(':'))
        .is_some_and(|(machine, _)| machine.contains('/'))
}
