//! model: the typed, compiled form of a state machine definition (JSONPath and JSONata).
//!
//! Owns the data types only: what a validated definition looks like to the interpreter. Every
//! path and payload template is held compiled (`paths::Path`, `paths::Template`, ...) so nothing
//! is re-parsed at run time. A state's data-flow fields (InputPath, Parameters, ResultPath, ...)
//! are not here but in its [`DataFlow`] (`asl::data_flow`), one per [`State`]; a Catcher's in
//! its [`CatchFlow`].
//!
//! Invariants (established by `asl::parse`, relied on by the interpreter):
//! - every `Next`, `Default`, Catcher `Next` and `StartAt` names a state of the same
//!   [`StateMap`] (a branch never jumps into another branch);
//! - state names are unique within a [`StateMap`] and at most 80 characters long;
//! - a value of `None` for an optional path field means "absent", i.e. the ASL default (`$`).
//!
//! Must not: do I/O, read a clock, or parse text (parsing lives in `parse`).

use std::collections::HashMap;

use serde_json::Value;
use time::OffsetDateTime;

use super::assign::Assign;
use super::data_flow::{CatchFlow, DataFlow};
use super::jsonata::{Expression, JsonataRuntime, JsonataTemplate};
use crate::paths::{FieldExpression, Path, Template};

/// A whole, validated state machine.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachine {
    /// The top-level `Comment`.
    pub comment: Option<String>,
    /// The name of the first state (`StartAt`).
    pub start_at: String,
    /// The states, in definition order.
    pub states: StateMap,
    /// The top-level `TimeoutSeconds`: the whole execution's time limit.
    pub timeout_seconds: Option<u64>,
    /// The top-level `Version` (only `"1.0"` exists).
    pub version: Option<String>,
    /// The top-level `QueryLanguage`.
    pub query_language: QueryLanguage,
    /// The JSONata evaluator the machine's expressions were compiled with (`None` when it
    /// has none).
    pub jsonata: Option<JsonataRuntime>,
    /// The definition as parsed JSON, exactly as written (for DescribeStateMachine and replay).
    pub source: Value,
}

/// A nested machine: one Parallel branch or a Map's `ItemProcessor`/`Iterator`.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The branch's `Comment`.
    pub comment: Option<String>,
    /// The name of the branch's first state.
    pub start_at: String,
    /// The branch's states, in definition order.
    pub states: StateMap,
}

/// The `QueryLanguage` of a definition or state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryLanguage {
    /// `JSONPath`, the default.
    #[default]
    JsonPath,
    /// `JSONata` (runs when the embedder gives an evaluator).
    Jsonata,
}

/// States by name, kept in definition order. Names are unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateMap {
    states: Vec<State>,
    /// Positions by name, hashed (seeded per map): a decision looks a state up several times
    /// per transition, and a search of sorted names compared several strings each time.
    index: HashMap<String, usize, foldhash::quality::RandomState>,
}

impl StateMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `state`; returns false (and drops it) when a state of that name is already present.
    pub fn insert(&mut self, state: State) -> bool {
        if self.index.contains_key(&state.name) {
            return false;
        }
        self.index.insert(state.name.clone(), self.states.len());
        self.states.push(state);
        debug_assert_eq!(self.index.len(), self.states.len());
        true
    }

    /// The state called `name`.
    pub fn get(&self, name: &str) -> Option<&State> {
        self.index.get(name).map(|&i| &self.states[i])
    }

    /// The position of `name` in definition order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// True when a state called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The states in definition order.
    pub fn iter(&self) -> std::slice::Iter<'_, State> {
        self.states.iter()
    }

    /// How many states there are.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// True when there are no states.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

impl<'a> IntoIterator for &'a StateMap {
    type Item = &'a State;
    type IntoIter = std::slice::Iter<'a, State>;

    fn into_iter(self) -> Self::IntoIter {
        self.states.iter()
    }
}

/// One state: the fields every state type shares, plus its type-specific part.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// The state's name (its key under `States`).
    pub name: String,
    /// The state's `Comment`.
    pub comment: Option<String>,
    /// How the state turns its input into its output (InputPath, Parameters, ResultSelector,
    /// ResultPath, OutputPath, a Pass's Result, a Map's ItemsPath and ItemSelector), in the
    /// state's query language; the interpreter asks it for each step.
    pub data_flow: DataFlow,
    /// `Assign`: the variables the state sets when it succeeds (not when a Catcher is taken:
    /// then the Catcher's `Assign` applies). Not on Fail states.
    pub assign: Option<Assign>,
    /// What the state does.
    pub kind: StateKind,
}

impl State {
    /// The `Next`/`End` of the state, for the types that have one (not Choice, Succeed, Fail).
    pub fn transition(&self) -> Option<&Transition> {
        match &self.kind {
            StateKind::Pass(pass) => Some(&pass.next),
            StateKind::Task(task) => Some(&task.next),
            StateKind::Wait(wait) => Some(&wait.next),
            StateKind::Parallel(parallel) => Some(&parallel.next),
            StateKind::Map(map) => Some(&map.next),
            StateKind::Choice(_) | StateKind::Succeed | StateKind::Fail(_) => None,
        }
    }

    /// The ASL name of the state's type (`"Pass"`, `"Task"`, ...).
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }
}

/// Where a state goes when it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// `"Next": name`.
    Next(String),
    /// `"End": true`.
    End,
}

/// The type-specific part of a state.
#[derive(Debug, Clone, PartialEq)]
pub enum StateKind {
    /// `Type: Pass`.
    Pass(PassState),
    /// `Type: Task`.
    Task(Box<TaskState>),
    /// `Type: Choice`.
    Choice(ChoiceState),
    /// `Type: Wait`.
    Wait(WaitState),
    /// `Type: Succeed`.
    Succeed,
    /// `Type: Fail` (boxed: its compiled `ErrorPath`/`CausePath` are the largest fields of
    /// any kind, and Fail runs once per thread at most).
    Fail(Box<FailState>),
    /// `Type: Parallel`.
    Parallel(Box<ParallelState>),
    /// `Type: Map` (inline).
    Map(Box<MapState>),
}

impl StateKind {
    /// The ASL name of the type (`"Pass"`, `"Task"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            StateKind::Pass(_) => "Pass",
            StateKind::Task(_) => "Task",
            StateKind::Choice(_) => "Choice",
            StateKind::Wait(_) => "Wait",
            StateKind::Succeed => "Succeed",
            StateKind::Fail(_) => "Fail",
            StateKind::Parallel(_) => "Parallel",
            StateKind::Map(_) => "Map",
        }
    }
}

/// A Pass state. Its `Result`, `Parameters` and `ResultPath` are in the state's [`DataFlow`].
#[derive(Debug, Clone, PartialEq)]
pub struct PassState {
    /// `Next` or `End`.
    pub next: Transition,
}

/// A Task state. Its `Parameters`, `ResultSelector` and `ResultPath` are in the state's
/// [`DataFlow`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    /// `Resource`, parsed.
    pub resource: Resource,
    /// `TimeoutSeconds` or `TimeoutSecondsPath`; `None` means the default of 99999999 s.
    pub timeout: Option<SecondsField>,
    /// `HeartbeatSeconds` or `HeartbeatSecondsPath`.
    pub heartbeat: Option<SecondsField>,
    /// statelog extension, activity resources only: `TaskList` (a list name) or `TaskListPath`
    /// (a path to one in the effective input); `None` means the activity's default list.
    pub task_list: Option<TaskListField>,
    /// `Retry`, in order.
    pub retry: Vec<Retrier>,
    /// `Catch`, in order.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub next: Transition,
}

/// The task list of an activity Task (statelog extension to ASL): named literally or read from
/// the effective input.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskListField {
    /// `"TaskList": "gpu"`.
    Literal(String),
    /// `"TaskListPath": "$.list"`.
    Path(Path),
}

/// A number of seconds given literally or read from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum SecondsField {
    /// A literal, e.g. `"TimeoutSeconds": 30`.
    Literal(u64),
    /// A path into the effective input, e.g. `"TimeoutSecondsPath": "$.timeout"`.
    Path(Path),
    /// A JSONata expression, e.g. `"TimeoutSeconds": "{% $states.input.timeout %}"`.
    Expression(Expression),
}

/// A Task `Resource`, split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The ARN exactly as written.
    pub raw: String,
    /// The ARN's partition (`aws`).
    pub partition: String,
    /// The ARN's service field, the integration namespace (`states`, `lambda`, ...).
    pub namespace: String,
    /// The ARN's region field (may be empty).
    pub region: String,
    /// The ARN's account field (may be empty).
    pub account: String,
    /// What the resource names.
    pub kind: ResourceKind,
}

impl Resource {
    /// The integration pattern: `RequestResponse` for activities and plain function ARNs.
    pub fn pattern(&self) -> IntegrationPattern {
        match &self.kind {
            ResourceKind::Integration { pattern, .. } => *pattern,
            ResourceKind::Activity { .. } | ResourceKind::Other { .. } => {
                IntegrationPattern::RequestResponse
            }
        }
    }

    /// True when the resource is an activity (`arn:...:states:<region>:<account>:activity:<name>`).
    pub fn is_activity(&self) -> bool {
        matches!(self.kind, ResourceKind::Activity { .. })
    }

    /// The resource without its pattern suffix (`arn:aws:states:::sns:publish` for
    /// `arn:aws:states:::sns:publish.sync`): the name an integration is registered under.
    pub fn base(&self) -> &str {
        let suffix = self.pattern().suffix();
        self.raw.strip_suffix(suffix).unwrap_or(&self.raw)
    }
}

/// What a Task's `Resource` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceKind {
    /// `arn:<p>:states:<region>:<account>:activity:<name>`: handed to polling workers.
    Activity {
        /// The activity's name.
        name: String,
    },
    /// `arn:<p>:states:::<service>:<action>[.sync|.sync:2|.waitForTaskToken]`, including
    /// `aws-sdk:<service>:<action>` (then `service` is `aws-sdk:<service>`).
    Integration {
        /// `sns`, `lambda`, `aws-sdk:s3`, ...
        service: String,
        /// `publish`, `invoke`, `listBuckets`, ...
        action: String,
        /// The suffix, parsed.
        pattern: IntegrationPattern,
    },
    /// Any other ARN (e.g. a Lambda function ARN): the part after the account field.
    Other {
        /// The ARN's resource part, e.g. `function:my-fn`.
        resource: String,
    },
}

/// How a Task waits for its integration (the Resource suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IntegrationPattern {
    /// No suffix: done when the call is answered.
    RequestResponse,
    /// `.sync`: done when the started job finishes.
    Sync,
    /// `.sync:2`: like `.sync`, with the newer (JSON) output format.
    Sync2,
    /// `.waitForTaskToken`: done when the task token is returned.
    WaitForTaskToken,
}

impl IntegrationPattern {
    /// Every pattern.
    pub const ALL: [IntegrationPattern; 4] = [
        IntegrationPattern::RequestResponse,
        IntegrationPattern::Sync,
        IntegrationPattern::Sync2,
        IntegrationPattern::WaitForTaskToken,
    ];

    /// The Resource suffix of the pattern (`""`, `".sync"`, `".sync:2"`, `".waitForTaskToken"`).
    pub fn suffix(self) -> &'static str {
        match self {
            IntegrationPattern::RequestResponse => "",
            IntegrationPattern::Sync => ".sync",
            IntegrationPattern::Sync2 => ".sync:2",
            IntegrationPattern::WaitForTaskToken => ".waitForTaskToken",
        }
    }
}

/// A `Retry` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrier {
    /// `ErrorEquals`: the error names this retrier matches (`States.ALL` only alone, last).
    pub error_equals: Vec<String>,
    /// `IntervalSeconds` (default 1, at least 1).
    pub interval_seconds: u64,
    /// `MaxAttempts` (default 3; 0 means never retry).
    pub max_attempts: u32,
    /// `BackoffRate` (default 2.0, at least 1.0).
    pub backoff_rate: f64,
    /// `MaxDelaySeconds`: cap on one wait.
    pub max_delay_seconds: Option<u64>,
    /// `JitterStrategy` (default NONE).
    pub jitter_strategy: JitterStrategy,
}

/// A Retrier's `JitterStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterStrategy {
    /// `NONE`: wait exactly the computed interval.
    #[default]
    None,
    /// `FULL`: wait a random time between 0 and the computed interval.
    Full,
}

/// A `Catch` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Catcher {
    /// `ErrorEquals`: the error names this catcher matches.
    pub error_equals: Vec<String>,
    /// `Next`: the state to go to.
    pub next: String,
    /// What the Catcher does with the error output (JSONPath: `ResultPath`).
    pub flow: CatchFlow,
    /// `Assign`: the variables set when this Catcher is taken (evaluated on the error output).
    pub assign: Option<Assign>,
}

/// The name that matches every error in `ErrorEquals`.
pub const ERROR_ALL: &str = "States.ALL";

impl Retrier {
    /// True when this retrier handles `error`. `States.Runtime` is never retried, even when
    /// named; `States.ALL` does not match `States.DataLimitExceeded` (only naming it does);
    /// `States.Timeout` also matches `States.HeartbeatTimeout`.
    pub fn matches(&self, error: &str) -> bool {
        error_equals_matches(&self.error_equals, error)
    }
}

impl Catcher {
    /// True when this catcher handles `error`, by the same rules as [`Retrier::matches`]:
    /// `States.Runtime` is never caught (AWS fails the execution even under an explicit
    /// `"ErrorEquals": ["States.Runtime"]`, as the `test_catch_states_runtime` recording shows).
    pub fn matches(&self, error: &str) -> bool {
        error_equals_matches(&self.error_equals, error)
    }
}

/// The error no Retrier or Catcher handles: it always fails the execution.
pub const ERROR_RUNTIME: &str = "States.Runtime";

fn error_equals_matches(names: &[String], error: &str) -> bool {
    if error == ERROR_RUNTIME {
        return false;
    }
    names.iter().any(|name| {
        name == error
            || (name == ERROR_ALL && error != "States.DataLimitExceeded")
            || (name == "States.Timeout" && error == "States.HeartbeatTimeout")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_matching_rules() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = Catcher {
            error_equals: names(&["States.ALL"]),
            next: "N".into(),
            flow: CatchFlow::default(),
            assign: None,
        };
        let runtime = Catcher {
            error_equals: names(&["States.Runtime"]),
            next: "N".into(),
            flow: CatchFlow::default(),
            assign: None,
        };
        let limit = names(&["States.DataLimitExceeded"]);
        let timeout = Retrier {
            error_equals: names(&["States.Timeout"]),
            interval_seconds: 1,
            max_attempts: 3,
            backoff_rate: 2.0,
            max_delay_seconds: None,
            jitter_strategy: JitterStrategy::None,
        };
        assert!(all.matches("Custom.Error"));
        assert!(all.matches("States.TaskFailed"));
        assert!(!all.matches("States.Runtime"));
        assert!(!runtime.matches("States.Runtime"));
        assert!(!all.matches("States.DataLimitExceeded"));
        assert!(error_equals_matches(&limit, "States.DataLimitExceeded"));
        assert!(timeout.matches("States.Timeout"));
        assert!(timeout.matches("States.HeartbeatTimeout"));
        assert!(!timeout.matches("States.TaskFailed"));
    }
}

/// A Choice state.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceState {
    /// `Choices`, tried in order.
    pub choices: Vec<ChoiceRule>,
    /// `Default`: where to go when no rule matches.
    pub default: Option<String>,
}

/// A top-level Choice rule: a condition and where to go when it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceRule {
    /// The test.
    pub condition: Condition,
    /// `Next`.
    pub next: String,
    /// A JSONata rule's `Output`: the state's output when the rule matches.
    pub output: Option<JsonataTemplate>,
    /// `Assign`: the variables set when this rule is the one taken (instead of the Choice
    /// state's own `Assign`, which applies when `Default` is taken).
    pub assign: Option<Assign>,
}

/// A Boolean expression of a Choice rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `And`: every nested condition holds (non-empty).
    And(Vec<Condition>),
    /// `Or`: some nested condition holds (non-empty).
    Or(Vec<Condition>),
    /// `Not`: the nested condition does not hold.
    Not(Box<Condition>),
    /// A JSONata rule's `Condition`: a boolean literal or an expression.
    Jsonata(JsonataTemplate),
    /// `Variable` plus one comparison operator.
    Test {
        /// `Variable`: what is tested (may read the Context object with `$$`).
        variable: Path,
        /// The operator and its operand.
        test: Test,
    },
}

/// One comparison operator of a Choice rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// `StringEquals`, `NumericLessThanPath`, `TimestampGreaterThanEquals`, `BooleanEquals`, ...
    Compare {
        /// The family: String, Numeric, Boolean or Timestamp.
        family: CompareFamily,
        /// Equals, LessThan, ...
        op: CompareOp,
        /// The literal to compare with, or the path (`...Path` operators) to read it from.
        operand: Operand,
    },
    /// `StringMatches`: `*` matches any run of characters; `\*` a literal star, `\\` a backslash.
    StringMatches(StringPattern),
    /// `IsNull`, `IsPresent`, `IsNumeric`, `IsString`, `IsBoolean`, `IsTimestamp`.
    Is {
        /// Which check.
        check: TypeCheck,
        /// The operator's Boolean value: the rule holds when the check equals it.
        expected: bool,
    },
}

/// The value family of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFamily {
    /// `String...`: compared by Unicode code points.
    String,
    /// `Numeric...`: compared as numbers.
    Numeric,
    /// `BooleanEquals[Path]`.
    Boolean,
    /// `Timestamp...`: RFC 3339 timestamps compared as instants.
    Timestamp,
}

/// The relation of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `...Equals`.
    Equals,
    /// `...LessThan`.
    LessThan,
    /// `...GreaterThan`.
    GreaterThan,
    /// `...LessThanEquals`.
    LessThanEquals,
    /// `...GreaterThanEquals`.
    GreaterThanEquals,
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A string literal (`String...`).
    String(String),
    /// A number literal (`Numeric...`).
    Number(f64),
    /// A Boolean literal (`BooleanEquals`).
    Boolean(bool),
    /// A timestamp literal (`Timestamp...`), parsed once.
    Timestamp(OffsetDateTime),
    /// A path whose value is compared (`...Path` operators).
    Path(Path),
}

/// A compiled `StringMatches` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringPattern {
    /// The pattern as written.
    pub source: String,
    /// The pattern split at unescaped `*`: literal pieces, with `Star` between them.
    pub pieces: Vec<PatternPiece>,
}

/// One piece of a [`StringPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternPiece {
    /// Characters that must appear as is.
    Literal(String),
    /// An unescaped `*`: any run of characters, possibly empty.
    Star,
}

/// The `Is...` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeCheck {
    /// `IsNull`.
    Null,
    /// `IsPresent`.
    Present,
    /// `IsNumeric`.
    Numeric,
    /// `IsString`.
    String,
    /// `IsBoolean`.
    Boolean,
    /// `IsTimestamp`.
    Timestamp,
}

/// A Wait state.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitState {
    /// How long or until when.
    pub wait: WaitFor,
    /// `Next` or `End`.
    pub next: Transition,
}

/// Exactly one of the Wait fields.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitFor {
    /// `Seconds`.
    Seconds(u64),
    /// `Timestamp`, parsed (RFC 3339).
    Timestamp(OffsetDateTime),
    /// `SecondsPath`.
    SecondsPath(Path),
    /// `TimestampPath`.
    TimestampPath(Path),
    /// JSONata `Seconds` as an expression.
    SecondsExpression(Expression),
    /// JSONata `Timestamp` as an expression.
    TimestampExpression(Expression),
}

/// A Fail state.
#[derive(Debug, Clone, PartialEq)]
pub struct FailState {
    /// `Error` (literal) or `ErrorPath`.
    pub error: Option<FailField>,
    /// `Cause` (literal) or `CausePath`.
    pub cause: Option<FailField>,
}

/// A Fail state's `Error`/`Cause`, literal or computed.
#[derive(Debug, Clone, PartialEq)]
pub enum FailField {
    /// `Error` / `Cause`.
    Literal(String),
    /// `ErrorPath` / `CausePath`: a path or an intrinsic function call.
    Dynamic {
        /// The path or intrinsic call as written.
        text: String,
        /// The expression, compiled; its failures name the field (`ErrorPath`/`CausePath`) as
        /// AWS does. Prefer this over `template`.
        expression: Box<FieldExpression>,
        /// The same, compiled as a one-entry template `{"value.$": <text>}` (evaluate it and
        /// take `value`); kept for callers written before `expression` existed.
        template: Template,
    },
    /// A JSONata `Error` / `Cause` expression.
    Expression(Expression),
}

/// A Parallel state. Its `Parameters`, `ResultSelector` and `ResultPath` are in the state's
/// [`DataFlow`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelState {
    /// `Branches`: each runs on the effective input.
    pub branches: Vec<Branch>,
    /// `Retry`.
    pub retry: Vec<Retrier>,
    /// `Catch`.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub next: Transition,
}

/// An inline Map state. Its `ItemsPath`, `ItemSelector`, `ResultSelector` and `ResultPath`
/// are in the state's [`DataFlow`].
#[derive(Debug, Clone, PartialEq)]
pub struct MapState {
    /// `ItemProcessor`, or the legacy `Iterator`.
    pub item_processor: Branch,
    /// `MaxConcurrency` or `MaxConcurrencyPath`; `None` or 0 means no limit.
    pub max_concurrency: Option<CountField>,
    /// `ToleratedFailureCount` or `ToleratedFailureCountPath`.
    pub tolerated_failure_count: Option<CountField>,
    /// `ToleratedFailurePercentage` or `ToleratedFailurePercentagePath`.
    pub tolerated_failure_percentage: Option<PercentageField>,
    /// `Retry`.
    pub retry: Vec<Retrier>,
    /// `Catch`.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub next: Transition,
    /// `ProcessorConfig.Mode: DISTRIBUTED`: the Map Run's own fields; `None` for an inline Map.
    pub distributed: Option<Box<Distributed>>,
}

/// A Distributed Map's fields: its items run as child executions of their own (a Map Run).
#[derive(Debug, Clone, PartialEq)]
pub struct Distributed {
    /// `ProcessorConfig.ExecutionType`.
    pub execution_type: ChildExecutionType,
    /// `Label`, when given (at most 40 characters, AWS's name rules).
    pub label: Option<String>,
    /// `ItemBatcher`, when given.
    pub item_batcher: Option<ItemBatcher>,
    /// The child executions' definition: the `ItemProcessor` (or `Iterator`) as a state
    /// machine of its own (`StartAt`, `States`, the inherited `QueryLanguage`), as JSON.
    pub child_definition: Value,
    /// `ItemReader`: where the items come from instead of the state input.
    pub item_reader: Option<ObjectAccess>,
    /// `ResultWriter`: where the children's results go instead of the state output.
    pub result_writer: Option<ObjectAccess>,
}

/// An `ItemReader` or `ResultWriter`: a resource, its arguments and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectAccess {
    /// `Resource`, as written (e.g. `arn:aws:states:::s3:getObject`).
    pub resource: String,
    /// `Parameters` (JSONPath, a payload template over the Map's effective input) or
    /// `Arguments` (JSONata, a template with `{% %}` expressions at any depth).
    pub arguments: Option<BatchInput>,
    /// `ReaderConfig` / `WriterConfig`, as written (checked by the reader or writer).
    pub config: Option<Value>,
    /// A JSONata state's `ReaderConfig` / `WriterConfig` when it holds `{% %}` expressions
    /// (e.g. `MaxItems`): evaluated when the run starts, its value then replaces `config`.
    pub config_expressions: Option<JsonataTemplate>,
    /// `ReaderConfig.MaxItemsPath` (JSONPath).
    pub max_items_path: Option<Path>,
}

/// A Distributed Map's `ProcessorConfig.ExecutionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExecutionType {
    /// Durable child executions, listed and describable.
    Standard,
    /// In-memory child executions (nothing written per child).
    Express,
}

/// A Distributed Map's `ItemBatcher`: a child's input is `{"Items": [...], "BatchInput": ...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemBatcher {
    /// `MaxItemsPerBatch` or `MaxItemsPerBatchPath`.
    pub max_items_per_batch: Option<CountField>,
    /// `MaxInputBytesPerBatch` or `MaxInputBytesPerBatchPath`.
    pub max_input_bytes_per_batch: Option<CountField>,
    /// `BatchInput`: a payload template over the effective input (JSONPath) or a JSONata
    /// template.
    pub batch_input: Option<BatchInput>,
}

/// An `ItemBatcher`'s `BatchInput`, or an `ItemReader`'s / `ResultWriter`'s arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchInput {
    /// A JSONPath payload template over the Map's effective input.
    Template(Template),
    /// A JSONata state's template: a literal, or `{% %}` expressions at any depth over
    /// `$states.input`, `$states.context` and the variables in scope.
    Jsonata(JsonataTemplate),
}

/// A count given literally or read from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum CountField {
    /// A literal.
    Literal(u64),
    /// A path into the effective input.
    Path(Path),
    /// A JSONata expression.
    Expression(Expression),
}

/// A percentage given literally or read from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum PercentageField {
    /// A literal between 0 and 100.
    Literal(f64),
    /// A path into the effective input.
    Path(Path),
    /// A JSONata expression.
    Expression(Expression),
}
