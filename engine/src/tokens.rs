//! tokens: answering `.waitForTaskToken` tasks (`send_task_success`, `send_task_failure`,
//! `send_task_heartbeat`), activity tasks included, and the heartbeat clocks of tasks with
//! `HeartbeatSeconds`.
//!
//! A token names its execution and task (see `interpreter::waiting`); the engine finds the task
//! in the execution's folded state and compares the whole token in constant time. No token index
//! is kept: the folded state of an open execution holds the tokens of its waiting tasks (folded
//! from `TaskScheduled` on open), and a closed task's token is looked up in its history, so a
//! late answer is `TaskTimedOut` and anything else `InvalidToken`. That lookup reads one record,
//! the one holding the event the token names (`Store::event`), never the whole history: a
//! token's check costs at most one record's read (`RECORD_SIZE_BYTES_MAX`) whatever it names.
//!
//! Heartbeats write no history event: a clock per task lives in memory only, in its attempt's
//! entry (`attempts::Attempts`) with a min-heap of deadlines checked by the engine's timer loop
//! (`run_due_timers`), so a waiting task costs a table entry and nothing runs until its
//! deadline. After a restart the clocks start afresh (a heartbeat is
//! not durable, so the new engine gives the worker a full interval: a live worker is never timed
//! out by a crash, a vanished one is freed one interval after the open; `docs/waiting.md`).
//!
//! Namespaces: the engine serves one account (`EngineOptions::account`); the `_in` calls take
//! the caller's namespace (account) and refuse, as if unknown, a token of another.
//!
//! Invariants: an answer is checked and decided under the execution's slot lock, so a token is
//! honoured at most once; a heartbeat deadline never fires a task other than its own (a stale
//! fire is an empty decision). Must not: log or echo a token in errors.

use std::sync::Arc;

use serde_json::Value;

use super::backend::AttemptKey;
use super::error::{PayloadReason, TaskTokenReason};
use super::kernel::Commit;
use super::{Engine, Error, TaskError};
use statelog_core::history::{EventDetails, EventId};
use statelog_core::interpreter::{parse_token, ExecutionState, Trigger};
use statelog_core::limits::PAYLOAD_SIZE_BYTES_MAX;

/// The error a task gets when its heartbeat clock runs out.
const HEARTBEAT_TIMEOUT: &str = "States.HeartbeatTimeout";

/// The heartbeat clocks as a task backend: they serve no invocation (the attempt's own backend
/// arms the clock), stop when the attempt is over, and time out tasks whose worker fell silent.
pub(crate) struct HeartbeatClocks;

impl super::backend::TaskBackend for HeartbeatClocks {
    fn name(&self) -> &'static str {
        "heartbeat clocks"
    }

    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        engine.inner.attempts.disarm_heartbeat(attempt);
    }

    fn next_due_ms(&self, engine: &Engine) -> Option<u64> {
        engine.inner.attempts.next_heartbeat_due_ms()
    }

    fn run_due(&self, engine: &Engine, now_ms: u64) -> usize {
        run_due_heartbeats(engine, now_ms)
    }
}

/// Fires the heartbeat timeouts due at `now_ms`; returns how many fired.
pub(crate) fn run_due_heartbeats(engine: &Engine, now_ms: u64) -> usize {
    let due = engine.inner.attempts.take_due_heartbeats(now_ms);
    let fired = due.len();
    for attempt in due {
        engine.drive_in_background(
            &attempt.execution,
            Trigger::TaskTimedOut {
                task_id: attempt.task,
                error: HEARTBEAT_TIMEOUT.to_string(),
            },
        );
    }
    fired
}

/// Restarts the heartbeat clocks of the submitted token tasks of a recovered execution (tasks
/// not yet submitted are dispatched again, which arms their clocks).
pub(crate) fn arm_recovered(engine: &Engine, execution_arn: &Arc<str>, state: &ExecutionState) {
    let now_ms = engine.inner.options.clock.now_ms();
    for task in state.waiting_tokens() {
        if let (true, Some(seconds)) = (task.submitted, task.heartbeat_seconds) {
            let attempt = AttemptKey::new(execution_arn.clone(), task.task_id);
            engine
                .inner
                .attempts
                .arm_heartbeat(&attempt, seconds, now_ms);
        }
    }
}

/// The trigger a handler's answer to task `task_id` becomes.
pub(crate) fn handler_trigger(task_id: EventId, outcome: Result<Value, TaskError>) -> Trigger {
    match outcome {
        Ok(output) => Trigger::TaskSucceeded { task_id, output },
        Err(failure) => Trigger::TaskFailed {
            task_id,
            error: failure.error,
            cause: failure.cause,
        },
    }
}

/// Compares two secrets in time independent of where they differ.
fn same_token(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A task's output (`SendTaskSuccess`), checked and parsed.
fn task_output(output: &str) -> Result<Value, Error> {
    if output.len() > PAYLOAD_SIZE_BYTES_MAX {
        return Err(Error::InvalidOutput {
            reason: PayloadReason::TooLarge {
                size_bytes: output.len(),
                limit_bytes: PAYLOAD_SIZE_BYTES_MAX,
            },
        });
    }
    statelog_core::history::depth::parse_payload(output).map_err(|e| Error::InvalidOutput {
        reason: PayloadReason::Unreadable(e),
    })
}

/// A token's answer, recorded: what is left to do once it is durable.
struct RecordedAnswer {
    execution_arn: String,
    task_id: EventId,
    slot: Arc<super::kernel::Slot>,
    effects: Vec<statelog_core::interpreter::Effect>,
    deliveries: Vec<super::backend::Delivery>,
    /// Whether the answer was decided (false: an earlier answer closed the task).
    answered: bool,
    /// Appended with `Commit::Notify`: wait for the log's word before the rest.
    awaits_log: bool,
}

/// What a caller sends with a token.
enum Answer {
    Success(Value),
    Failure { error: String, cause: String },
    Heartbeat,
}

fn unknown() -> Error {
    Error::InvalidTaskToken {
        reason: TaskTokenReason::Unknown,
    }
}

/// The account field of an ARN (`arn:<partition>:states:<region>:<account>:...`).
fn account_of(arn: &str) -> Option<&str> {
    arn.split(':').nth(4)
}

impl Engine {
    /// `SendTaskSuccess` in the engine's own namespace: completes the `.waitForTaskToken` task
    /// of `token` with `output` (JSON text). `InvalidToken` for a token this engine did not
    /// issue, `TaskTimedOut` when its task has closed, `InvalidOutput` for bad JSON.
    pub fn send_task_success(&self, token: &str, output: &str) -> Result<(), Error> {
        let namespace = self.inner.options.account.clone();
        self.send_task_success_in(&namespace, token, output)
    }

    /// `SendTaskSuccess` from the caller's `namespace` (account): a token of another
    /// namespace is refused as unknown.
    pub fn send_task_success_in(
        &self,
        namespace: &str,
        token: &str,
        output: &str,
    ) -> Result<(), Error> {
        let output = task_output(output)?;
        self.answer_token(namespace, token, Answer::Success(output))
    }

    /// [`Engine::send_task_success_in`] for an async caller (a server's request): the thread
    /// never waits for the log's fdatasync (see the WAL's notifying appends); the call returns
    /// once the answer is durable and what it scheduled is handed over. Dropping the future
    /// after the answer was appended does not stop the execution.
    pub async fn send_task_success_awaiting(
        &self,
        namespace: &str,
        token: &str,
        output: &str,
    ) -> Result<(), Error> {
        let output = task_output(output)?;
        self.answer_token_awaiting(namespace, token, Answer::Success(output))
            .await
    }

    /// [`Engine::send_task_failure_in`] for an async caller, as
    /// [`Engine::send_task_success_awaiting`].
    pub async fn send_task_failure_awaiting(
        &self,
        namespace: &str,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), Error> {
        let answer = Answer::Failure {
            error: error.to_string(),
            cause: cause.to_string(),
        };
        self.answer_token_awaiting(namespace, token, answer).await
    }

    /// `SendTaskFailure` in the engine's own namespace: fails the task of `token` with
    /// `error` and `cause` (Retry/Catch see `error`).
    pub fn send_task_failure(&self, token: &str, error: &str, cause: &str) -> Result<(), Error> {
        let namespace = self.inner.options.account.clone();
        self.send_task_failure_in(&namespace, token, error, cause)
    }

    /// `SendTaskFailure` from the caller's `namespace` (account).
    pub fn send_task_failure_in(
        &self,
        namespace: &str,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), Error> {
        let answer = Answer::Failure {
            error: error.to_string(),
            cause: cause.to_string(),
        };
        self.answer_token(namespace, token, answer)
    }

    /// `SendTaskHeartbeat` in the engine's own namespace: restarts the task's heartbeat clock;
    /// writes no history event.
    pub fn send_task_heartbeat(&self, token: &str) -> Result<(), Error> {
        let namespace = self.inner.options.account.clone();
        self.send_task_heartbeat_in(&namespace, token)
    }

    /// `SendTaskHeartbeat` from the caller's `namespace` (account).
    pub fn send_task_heartbeat_in(&self, namespace: &str, token: &str) -> Result<(), Error> {
        self.answer_token(namespace, token, Answer::Heartbeat)
    }

    /// How many heartbeat clocks are armed (tasks with `HeartbeatSeconds` in flight of open
    /// executions, plus closed tasks whose deadline has not come yet).
    pub fn heartbeat_clock_count(&self) -> usize {
        self.inner.attempts.heartbeat_clock_count()
    }

    fn answer_token(&self, namespace: &str, token: &str, answer: Answer) -> Result<(), Error> {
        match self.record_answer(namespace, token, answer, None)? {
            Some(recorded) => self.finish_answer(recorded),
            None => Ok(()),
        }
    }

    /// Answers a token without blocking the caller's thread on the log's fdatasync, where the
    /// log notifies (the WAL) with a commit in flight (`Engine::notify_pays`) and the caller
    /// runs on a tokio runtime: the answer is appended
    /// with `Commit::Notify`, and a task spawned on the caller's runtime waits for the log's
    /// word, then hands over what the decision scheduled and performs its effects; the call
    /// returns once that is done. A caller that stops waiting (a dropped request) does not stop
    /// the spawned task, so the execution goes on. Elsewhere the answer's synced commit runs
    /// under `block_in_place` (a multi-threaded runtime) or inline.
    async fn answer_token_awaiting(
        &self,
        namespace: &str,
        token: &str,
        answer: Answer,
    ) -> Result<(), Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|_| self.notify_pays());
        let Some(runtime) = runtime else {
            return super::runtime::off_the_reactor(|| self.answer_token(namespace, token, answer));
        };
        let (on_durable, told) = super::kernel::log_word_channel();
        let Some(recorded) = self.record_answer(namespace, token, answer, Some(on_durable))? else {
            return Ok(());
        };
        let engine = self.clone();
        let finished = runtime.spawn(async move {
            if recorded.awaits_log {
                super::kernel::log_word(told).await?;
            }
            engine.finish_answer(recorded)
        });
        match finished.await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // The runtime shut down before the task ran to its end.
            Err(_) => Err(Error::Interrupted),
        }
    }

    /// Hands over what an answer's durable decision scheduled and performs its effects.
    fn finish_answer(&self, recorded: RecordedAnswer) -> Result<(), Error> {
        for delivery in recorded.deliveries {
            delivery(self);
        }
        self.perform(&recorded.execution_arn, &recorded.slot, recorded.effects);
        if !recorded.answered {
            // The handler's failure closed the task before this answer.
            return Err(Error::TaskTimedOut {
                execution_arn: recorded.execution_arn,
                task_id: recorded.task_id.0,
            });
        }
        Ok(())
    }

    /// Records a token's answer: durable when this returns if `on_durable` is `None`, else
    /// appended with `Commit::Notify` (`RecordedAnswer::awaits_log` says whether it waits for
    /// `on_durable`). `None` for a heartbeat (nothing recorded, nothing to perform).
    fn record_answer(
        &self,
        namespace: &str,
        token: &str,
        answer: Answer,
        on_durable: Option<statelog_store::OnDurable>,
    ) -> Result<Option<RecordedAnswer>, Error> {
        let parts = parse_token(token).map_err(|e| Error::InvalidTaskToken { reason: e.into() })?;
        if account_of(&parts.execution_arn) != Some(namespace) {
            return Err(unknown());
        }
        let arn = parts.execution_arn.as_str();
        let slot = self
            .inner
            .open
            .lock()
            .get_key_value(arn)
            .map(|(key, slot)| (key.clone(), slot.clone()));
        if let Some((execution, slot)) = slot {
            let attempt = AttemptKey::new(execution, parts.task_id);
            let mut guard = slot.state.lock();
            if let Some(task) = guard.execution.waiting_ref(parts.task_id) {
                if !same_token(task.token, token) {
                    return Err(unknown());
                }
                let trigger = match answer {
                    Answer::Heartbeat => {
                        drop(guard);
                        let now_ms = self.inner.options.clock.now_ms();
                        self.inner.attempts.beat(&attempt, now_ms);
                        return Ok(None);
                    }
                    Answer::Success(output) => Trigger::TokenSucceeded {
                        task_id: parts.task_id,
                        output,
                    },
                    Answer::Failure { error, cause } => Trigger::TokenFailed {
                        task_id: parts.task_id,
                        error,
                        cause,
                    },
                };
                // The handler's call returned but its answer is not recorded yet (the thread
                // recording it has not taken the lock): it happened first, so it is decided
                // first, in this commit (AWS records `TaskSubmitted` before the answer). A call
                // still pending has not returned: the task completes without `TaskSubmitted`
                // and the call's later answer is stale.
                let before = if task.submitted {
                    None
                } else {
                    self.inner
                        .attempts
                        .take_answer(&attempt)
                        .map(|outcome| handler_trigger(parts.task_id, outcome))
                };
                // `Commit::After` is rare (a handler and a token answering one task): synced,
                // off the runtime's worker when an async caller (`on_durable`) runs on one.
                let blocks_async_caller = before.is_some() && on_durable.is_some();
                let request = match (before, on_durable) {
                    (Some(before), _) => Commit::After {
                        before,
                        trigger,
                        task_id: parts.task_id,
                    },
                    (None, Some(on_durable)) => Commit::Notify {
                        trigger,
                        on_durable,
                    },
                    (None, None) => Commit::Trigger(trigger),
                };
                let committed = if blocks_async_caller {
                    super::runtime::off_the_reactor(|| {
                        self.commit_decision(arn, &mut guard, request)
                    })?
                } else {
                    self.commit_decision(arn, &mut guard, request)?
                };
                drop(guard);
                self.inner.attempts.disarm_heartbeat(&attempt);
                return Ok(Some(RecordedAnswer {
                    execution_arn: parts.execution_arn,
                    task_id: parts.task_id,
                    slot,
                    effects: committed.effects,
                    deliveries: committed.deliveries,
                    answered: committed.trigger_decided,
                    awaits_log: committed.notified,
                }));
            }
        }
        // Not waiting: the token of a task that closed is `TaskTimedOut`, any other unknown.
        // Only the one record holding the named event is read (the index finds it), so a
        // forged token costs the same whatever the length of the history it names.
        if self.inner.store.execution(arn).is_none() {
            return Err(unknown());
        }
        let event = match self.inner.store.event(arn, parts.task_id) {
            Ok(event) => event,
            // Compacted away since the check above: as unknown as any other.
            Err(statelog_store::Error::UnknownExecution { .. }) => return Err(unknown()),
            Err(e) => return Err(e.into()),
        };
        let issued = event.as_ref().and_then(|e| match &e.details {
            EventDetails::TaskScheduled(d) => d.task_token.as_deref(),
            EventDetails::ActivityScheduled(d) => d.task_token.as_deref(),
            _ => None,
        });
        match issued {
            Some(issued) if same_token(issued, token) => {
                // The task closed in the folded state, perhaps by an answer whose notified
                // append is still in flight (a re-send of this very answer): that closing must
                // be durable before a caller is told so, or a log that stops before it would
                // leave the task open with its answer refused as late.
                self.inner.store.sync_unsynced()?;
                Err(Error::TaskTimedOut {
                    execution_arn: parts.execution_arn,
                    task_id: parts.task_id.0,
                })
            }
            _ => Err(unknown()),
        }
    }
}

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::*;
    use crate::test_support::{records, types, ONE_TASK_SUCCEEDED};

    #[test]
    fn same_token_compares_whole_texts() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "abcd"));
        assert!(!same_token("", "a"));
    }

    /// An engine over a memory log whose queue integration hands its token out and whose call
    /// never returns by itself: the tests put its answer in the attempt table as the finished call
    /// would, and no recording thread ever runs, so the overtaking order is deterministic.
    fn overtaken() -> (Engine, std::sync::mpsc::Receiver<String>) {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = crate::EngineOptions {
            background_timers: false,
            ..Default::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        let (sender, tokens) = std::sync::mpsc::channel();
        let sender = Mutex::new(sender);
        let resource = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
        engine.register_integration(resource, move |input: Value, _context: Value| {
            let token = input["T"].as_str().unwrap_or_default().to_string();
            let _ = sender.lock().send(token);
            std::future::pending::<Result<Value, TaskError>>()
        });
        let definition = format!(
            r#"{{"StartAt":"Ask","States":{{"Ask":{{"Type":"Task","Resource":"{resource}",
            "Parameters":{{"T.$":"$$.Task.Token"}},"End":true}}}}}}"#
        );
        engine
            .create_state_machine("ask", &definition, None)
            .expect("machine");
        engine
            .start_execution("ask", Some("e"), "{}")
            .expect("start");
        (engine, tokens)
    }

    #[test]
    fn a_token_answer_that_overtakes_the_handlers_answer_records_both_in_one_commit() {
        let (engine, tokens) = overtaken();
        let token = tokens.recv().expect("the token went out");
        let arn: Arc<str> = Arc::from(engine.execution_arn("ask", "e").as_str());
        let task_id = parse_token(&token).expect("a token").task_id;
        {
            // The borrowed lookup agrees with the full one, and finds nothing else.
            let slot = engine.inner.open.lock().get(&*arn).cloned().expect("open");
            let state = slot.state.lock();
            let full = state.execution.waiting_task(task_id).expect("waiting");
            let borrowed = state.execution.waiting_ref(task_id).expect("waiting");
            assert_eq!(
                (borrowed.token, borrowed.submitted, borrowed.activity),
                (full.token.as_str(), false, false)
            );
            assert!(state
                .execution
                .waiting_ref(EventId(task_id.0 + 1))
                .is_none());
        }
        // The call returned; the thread that records its answer has not taken the lock yet.
        let answer = serde_json::json!({"MessageId": "m"});
        let attempt = AttemptKey::new(arn.clone(), task_id);
        engine.inner.attempts.keep_answer(&attempt, Ok(answer));
        let before = records(&engine);
        engine.send_task_success(&token, "{}").expect("answer");
        assert_eq!(records(&engine) - before, 1, "one commit");
        assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
        // The recording thread comes late: nothing is left to record.
        engine
            .drive_handler_answer(&AttemptKey::new(arn.clone(), task_id))
            .expect("stale");
        assert_eq!(records(&engine) - before, 1);
        assert!(engine.inner.attempts.take_answer(&attempt).is_none());
    }

    #[test]
    fn a_handler_failure_not_yet_recorded_closes_the_task_before_the_token_answer() {
        let (engine, tokens) = overtaken();
        let token = tokens.recv().expect("the token went out");
        let arn: Arc<str> = Arc::from(engine.execution_arn("ask", "e").as_str());
        let task_id = parse_token(&token).expect("a token").task_id;
        let failure = TaskError::new("SQS.Down", "no queue");
        let attempt = AttemptKey::new(arn.clone(), task_id);
        engine.inner.attempts.keep_answer(&attempt, Err(failure));
        let answered = engine.send_task_success(&token, "{}");
        assert!(
            matches!(answered, Err(Error::TaskTimedOut { task_id: id, .. }) if id == task_id.0),
            "{answered:?}"
        );
        assert_eq!(
            types(&engine, &arn),
            [
                "ExecutionStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskFailed",
                "ExecutionFailed"
            ]
        );
    }
}
