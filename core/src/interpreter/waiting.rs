//! waiting: the pure side of `.waitForTaskToken` tasks. Owns the task-token text format
//! ([`compose_token`], [`parse_token`]), the routing of triggers to a waiting task (a handler's
//! answer submits the task, a token's answer completes it; [`route`]) and the queries the engine
//! asks of a folded state ([`ExecutionState::waiting_task`], [`ExecutionState::waiting_tokens`],
//! and [`ExecutionState::waiting_ref`], the borrowed form that copies no payload, for the
//! per-answer paths).
//!
//! A token is `<secret>.<execution>.<task id>`: `secret` is 192 bits drawn from the caller's
//! [`Entropy`] (the engine's is the OS CSPRNG) in URL-safe base64 without padding, `execution`
//! the execution ARN in the same alphabet, `task id` the decimal id of the attempt's
//! `TaskScheduled` event. The whole token is recorded in that event, so a restart folds it back.
//! The ARN and the id only route an answer; the secret authenticates it (compared in constant
//! time by the engine). Invariants: a token is at most [`crate::limits::TASK_TOKEN_CHARS_MAX`]
//! characters of `[A-Za-z0-9_.-]`; every retried attempt draws a new token. Must not: do I/O, or
//! draw randomness except through the caller's [`Entropy`].

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use super::state::{ExecutionState, IterationOutcome, Phase, TaskRun, TaskStage, Thread};
use super::Trigger;
use crate::asl::TaskListField;
use crate::history::EventId;
use crate::limits::TASK_LIST_NAME_CHARS_MAX;
use crate::limits::TASK_TOKEN_CHARS_MAX;
use crate::paths::Entropy;
use crate::paths::StatesError;

/// Random 64-bit words in a token's secret (3 x 64 = 192 bits).
const SECRET_WORDS: usize = 3;

/// A task token taken apart (see the module docs). Says nothing about whether it is genuine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenParts {
    /// The execution the token names.
    pub execution_arn: String,
    /// The task (the id of its `TaskScheduled` event) the token names.
    pub task_id: EventId,
}

/// Why a text is not a task token this engine could have issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a task token: {reason}")]
pub struct TokenFormatError {
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Draws a fresh token for task `task_id` of `execution_arn`.
pub fn compose_token(entropy: &mut dyn Entropy, execution_arn: &str, task_id: EventId) -> String {
    let mut secret = [0u8; SECRET_WORDS * 8];
    for chunk in secret.chunks_exact_mut(8) {
        chunk.copy_from_slice(&entropy.next_u64().to_le_bytes());
    }
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(secret),
        URL_SAFE_NO_PAD.encode(execution_arn.as_bytes()),
        task_id.0
    )
}

/// Takes a token apart: which execution and task it claims to answer.
pub fn parse_token(token: &str) -> Result<TokenParts, TokenFormatError> {
    let fail = |reason| Err(TokenFormatError { reason });
    if token.is_empty() {
        return fail("it is empty");
    }
    if token.len() > TASK_TOKEN_CHARS_MAX {
        return fail("it is longer than a task token can be");
    }
    let mut parts = token.split('.');
    let (Some(secret), Some(execution), Some(task), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return fail("it does not have three dot-separated parts");
    };
    match URL_SAFE_NO_PAD.decode(secret) {
        Ok(bytes) if bytes.len() == SECRET_WORDS * 8 => {}
        _ => return fail("its secret part is malformed"),
    }
    let execution_arn = URL_SAFE_NO_PAD
        .decode(execution)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .filter(|arn| arn.starts_with("arn:"));
    let Some(execution_arn) = execution_arn else {
        return fail("its execution part is malformed");
    };
    let Ok(task_id) = task.parse::<u32>() else {
        return fail("its task part is malformed");
    };
    Ok(TokenParts {
        execution_arn,
        task_id: EventId(task_id),
    })
}

/// A task waiting for its token to be answered, as the engine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingTask {
    /// The task (the id of its `TaskScheduled` event).
    pub task_id: EventId,
    /// Its token.
    pub token: String,
    /// Its `HeartbeatSeconds`, when set.
    pub heartbeat_seconds: Option<u64>,
    /// Whether its integration has accepted the call (`TaskSubmitted`), or a worker claimed
    /// the activity task (`ActivityStarted`): it is not handed out again after a restart.
    pub submitted: bool,
    /// Whether it is an activity task.
    pub activity: bool,
    /// An activity task's list (`TaskList`/`TaskListPath`); `None` is the default list.
    pub task_list: Option<String>,
    /// The effective input the task was scheduled with.
    pub input: Value,
    /// The Task's `Resource` ARN as written.
    pub resource_arn: String,
    /// What the integration answered when it accepted the call (a `.sync` job handle).
    pub submitted_output: Option<Value>,
}

/// Whether a task in flight has been handed over (submitted, or claimed by a worker).
pub(crate) fn handed_over(task: &TaskRun) -> bool {
    match task.activity {
        Some(_) => task.stage == TaskStage::Started,
        None => task.stage == TaskStage::Submitted,
    }
}

/// Resolves `TaskList`/`TaskListPath` against the effective input.
pub(crate) fn task_list_field(
    field: Option<&TaskListField>,
    effective: &Value,
    context: &Value,
    variables: &crate::paths::Variables,
) -> Result<Option<String>, StatesError> {
    let path = match field {
        None => return Ok(None),
        Some(TaskListField::Literal(name)) => return Ok(Some(name.clone())),
        Some(TaskListField::Path(path)) => path,
    };
    let value = path
        .select_in(effective, context, variables)
        .ok_or_else(|| {
            runtime_error(format!(
                "The TaskListPath field refers to a path that is not in the input: {}",
                path.as_str()
            ))
        })?;
    match value.as_str() {
        Some(name) if !name.is_empty() && name.chars().count() <= TASK_LIST_NAME_CHARS_MAX => {
            Ok(Some(name.to_string()))
        }
        _ => Err(runtime_error(format!(
            "The TaskListPath field refers to value {} which is not a task list name: {}",
            value,
            path.as_str()
        ))),
    }
}

fn runtime_error(cause: String) -> StatesError {
    StatesError {
        error: crate::asl::ERROR_RUNTIME.to_string(),
        cause,
        location: None,
    }
}

/// A waiting task's token and hand-over state, borrowed from the folded state: what answering
/// a token needs, without copying the task's input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingRef<'a> {
    /// The task (the id of its `TaskScheduled` event).
    pub task_id: EventId,
    /// Its token.
    pub token: &'a str,
    /// Whether it has been handed over (see [`WaitingTask::submitted`]).
    pub submitted: bool,
    /// Whether it is an activity task.
    pub activity: bool,
}

impl ExecutionState {
    /// The `.waitForTaskToken` task `task_id`, if it is in flight.
    pub fn waiting_task(&self, task_id: EventId) -> Option<WaitingTask> {
        waiting_of(self.waiting_run(task_id)?)
    }

    /// The token and hand-over state of waiting task `task_id`, borrowed (no copy).
    pub fn waiting_ref(&self, task_id: EventId) -> Option<WaitingRef<'_>> {
        let task = self.waiting_run(task_id)?;
        Some(WaitingRef {
            task_id,
            token: task.token.as_deref()?,
            submitted: handed_over(task),
            activity: task.activity.is_some(),
        })
    }

    fn waiting_run(&self, task_id: EventId) -> Option<&TaskRun> {
        if self.status().is_closed() {
            return None;
        }
        find_task(&self.root, task_id.0)
    }

    /// Every `.waitForTaskToken` task in flight, depth-first.
    pub fn waiting_tokens(&self) -> Vec<WaitingTask> {
        let mut found = Vec::new();
        self.each_waiting(&mut |task| found.extend(waiting_of(task)));
        found
    }

    /// The id of every token task in flight and whether it is handed over, in the order of
    /// [`ExecutionState::waiting_tokens`], without copying the tasks (what `decide` compares
    /// before and after a trigger).
    pub(crate) fn waiting_handed_over(&self) -> Vec<(EventId, bool)> {
        let mut found = Vec::new();
        self.each_waiting(&mut |task| {
            if task.token.is_some() {
                found.push((EventId(task.task_id), handed_over(task)));
            }
        });
        found
    }

    /// Visits every task in flight (with a token or not), depth-first.
    fn each_waiting(&self, visit: &mut dyn FnMut(&TaskRun)) {
        if self.status().is_closed() {
            return;
        }
        walk_tasks(&self.root, visit);
    }
}

/// A token task in flight as the engine needs it (a copy); `None` when it has no token.
fn waiting_of(task: &TaskRun) -> Option<WaitingTask> {
    Some(WaitingTask {
        task_id: EventId(task.task_id),
        token: task.token.clone()?,
        heartbeat_seconds: task.heartbeat_seconds,
        submitted: handed_over(task),
        activity: task.activity.is_some(),
        task_list: task.activity.as_ref().and_then(|a| a.task_list.clone()),
        input: task.parameters.clone(),
        resource_arn: task.resource_arn.clone(),
        submitted_output: task.submitted_output.as_deref().cloned(),
    })
}

/// The token task `task_id` in flight under `thread` (the same walk as [`walk_tasks`]).
fn find_task(thread: &Thread, task_id: u32) -> Option<&TaskRun> {
    let Thread::Running(run) = thread else {
        return None;
    };
    match &run.phase {
        Phase::Task(task) if task.task_id == task_id && task.token.is_some() => Some(task),
        Phase::Parallel { branches } => branches.iter().find_map(|b| find_task(b, task_id)),
        Phase::Map { iterations, .. } => iterations
            .iter()
            .filter(|i| i.outcome == IterationOutcome::Running)
            .find_map(|i| find_task(&i.thread, task_id)),
        _ => None,
    }
}

fn walk_tasks(thread: &Thread, visit: &mut dyn FnMut(&TaskRun)) {
    let Thread::Running(run) = thread else { return };
    match &run.phase {
        Phase::Task(task) => visit(task),
        Phase::Parallel { branches } => {
            for branch in branches {
                walk_tasks(branch, visit);
            }
        }
        Phase::Map { iterations, .. } => {
            for iteration in iterations {
                if iteration.outcome == IterationOutcome::Running {
                    walk_tasks(&iteration.thread, visit);
                }
            }
        }
        _ => {}
    }
}

/// What a trigger means for a token task.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Not about a token task: handle as usual.
    Plain(Trigger),
    /// The integration accepted a token task's call: record `TaskSubmitted` and keep waiting.
    Submit {
        /// The task.
        task_id: EventId,
        /// What the integration answered.
        output: Value,
    },
    /// A handler's answer to a token task that is already submitted (a re-dispatch after a
    /// restart): nothing happens.
    Stale,
}

/// Routes a trigger: a handler's answer to a token task submits it (or is stale once
/// submitted); a token's success becomes the task's (a token's failure is decided as such).
pub(crate) fn route(state: &ExecutionState, trigger: Trigger) -> Routed {
    match trigger {
        Trigger::TaskSucceeded { task_id, output } => match state.waiting_ref(task_id) {
            Some(task) if task.submitted => Routed::Stale,
            Some(_) => Routed::Submit { task_id, output },
            None => Routed::Plain(Trigger::TaskSucceeded { task_id, output }),
        },
        Trigger::TaskFailed {
            task_id,
            error,
            cause,
        } if state.waiting_ref(task_id).is_some_and(|t| t.submitted) => {
            let _ = (error, cause);
            Routed::Stale
        }
        Trigger::TokenSucceeded { task_id, output } => {
            Routed::Plain(Trigger::TaskSucceeded { task_id, output })
        }
        other => Routed::Plain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statelog_rng::Rng;

    const ARN: &str = "arn:aws:states:us-east-1:000000000000:execution:m:e";

    #[test]
    fn a_token_names_its_execution_and_task_and_is_url_safe() {
        let token = compose_token(&mut Rng::new(1), ARN, EventId(7));
        assert!(token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'));
        assert!(token.len() <= TASK_TOKEN_CHARS_MAX);
        let parts = parse_token(&token).expect("a composed token parses");
        assert_eq!(parts.execution_arn, ARN);
        assert_eq!(parts.task_id, EventId(7));
    }

    #[test]
    fn two_draws_give_two_tokens() {
        let mut entropy = Rng::new(1);
        let a = compose_token(&mut entropy, ARN, EventId(7));
        let b = compose_token(&mut entropy, ARN, EventId(7));
        assert_ne!(a, b);
    }

    #[test]
    fn damaged_tokens_are_format_errors() {
        let token = compose_token(&mut Rng::new(1), ARN, EventId(7));
        let truncated = &token[..token.len() - 3];
        let cases = [
            "".to_string(),
            "abc".to_string(),
            format!("{token}.x"),
            token.replacen('.', "", 1),
            format!("x{token}"),
            truncated
                .rsplit_once('.')
                .map(|(a, _)| a.to_string())
                .unwrap_or_default(),
            token.replace(".7", ".seven"),
            "x".repeat(TASK_TOKEN_CHARS_MAX + 1),
        ];
        for case in cases {
            assert!(parse_token(&case).is_err(), "accepted {case:?}");
        }
    }
}
