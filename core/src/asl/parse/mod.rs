//! parse: turns definition text into a [`StateMachine`], or into every problem found.
//!
//! Owns the walk over the JSON document: field presence and types, ranges, the state graph of
//! each branch (targets exist, reachable from `StartAt`, some terminal state), Retry/Catch rules,
//! Choice rules, resources, and compiling every path and template through `paths`.
//!
//! Invariants: never stops at the first problem (every diagnostic is collected); a `StateMachine`
//! is returned only when there is no error diagnostic; input is bounded before any work
//! (`DEFINITION_SIZE_BYTES_MAX`, JSON depth, state nesting), so no input panics or recurses
//! without bound. Must not: evaluate anything against an execution's data.
//!
//! Layout: this module holds the walk (machine, states, graph, transitions) and the field
//! readers every state shares (paths, templates, Retry, Catch, branches); each state type's own
//! fields are read in its module (`pass`, `task`, `choice`, `wait`, `fail`, `parallel`, `map`).

mod choice;
mod fail;
mod jsonata;
mod map;
mod parallel;
mod pass;
mod task;
mod wait;

use std::collections::{BTreeSet, VecDeque};

use serde_json::{Map, Value};

use super::assign::Assign;
use super::data_flow::{CatchFlow, DataFlow, JsonPathFlow};
use super::diagnostic::{pointer_child, pointer_index, Diagnostic, DiagnosticCode};
use super::json::parse_checked;
use super::model::{
    BatchInput, ChildExecutionType, Distributed, IntegrationPattern, ItemBatcher, ObjectAccess,
    ResourceKind,
};
use super::model::{
    Branch, Catcher, ChoiceRule, ChoiceState, CompareFamily, CompareOp, Condition, CountField,
    FailField, FailState, JitterStrategy, MapState, Operand, ParallelState, PassState,
    PercentageField, QueryLanguage, Retrier, SecondsField, State, StateKind, StateMachine,
    StateMap, TaskState, Test, Transition, TypeCheck, WaitFor, WaitState, ERROR_ALL,
};
use super::resource::{parse_resource, ResourceRegistry};
use super::timestamp::parse_timestamp;
use crate::limits::{
    DEFINITION_SIZE_BYTES_MAX, DEFINITION_STATE_NESTING_MAX, MAP_LABEL_CHARS_MAX,
    STATE_NAME_CHARS_MAX,
};
use crate::paths::{
    FieldExpression, InputOutputPath, Path, ReferencePath, ResultPathField, Template,
};

/// The largest `TimeoutSeconds`, `HeartbeatSeconds`, `IntervalSeconds`, `MaxAttempts` and
/// `Seconds` AWS accepts.
const SECONDS_MAX: u64 = 99_999_999;

/// The largest `MaxDelaySeconds` AWS accepts (one year and a day, in seconds).
const MAX_DELAY_SECONDS_MAX: u64 = 31_622_401;

/// What validation accepts beyond the language itself. Build with
/// `ValidationOptions { resources: ..., ..Default::default() }`.
#[derive(Debug, Clone, Default)]
pub struct ValidationOptions {
    /// The resources that exist; `None` accepts any well-formed ARN.
    pub resources: Option<ResourceRegistry>,
    /// Standard (the default) or Express: Express machines cannot wait for jobs, callbacks or
    /// activities.
    pub machine_type: MachineType,
    /// The JSONata evaluator expressions are compiled with; `None` refuses a JSONata
    /// definition or state as not supported.
    pub jsonata: Option<super::jsonata::JsonataRuntime>,
}

/// The kind of state machine a definition is validated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MachineType {
    /// Long-running, exactly-once executions: every integration pattern.
    #[default]
    Standard,
    /// Short, at-least-once executions: request/response integrations only.
    Express,
}

/// Parses and validates `text`; returns the compiled machine, or every problem found, in the
/// order found (duplicate keys, then the walk of the document, each branch's graph checks after
/// its states).
pub fn parse_definition(
    text: &str,
    options: &ValidationOptions,
) -> Result<StateMachine, Vec<Diagnostic>> {
    if text.len() > DEFINITION_SIZE_BYTES_MAX {
        return Err(vec![Diagnostic::error(
            "/",
            DiagnosticCode::LimitExceeded,
            format!(
                "the definition is {} bytes; the limit is {DEFINITION_SIZE_BYTES_MAX} bytes",
                text.len()
            ),
        )]);
    }
    if text.trim().is_empty() {
        return Err(vec![Diagnostic::error(
            "/",
            DiagnosticCode::SchemaValidationFailed,
            "Definition must be a valid JSON object",
        )]);
    }
    let checked = match parse_checked(text) {
        Ok(checked) => checked,
        Err(error) => {
            return Err(vec![Diagnostic::error(
                "/",
                DiagnosticCode::InvalidJsonDescription,
                format!("the definition is not valid JSON: {error}"),
            )])
        }
    };
    let mut ctx = Ctx {
        diagnostics: Vec::new(),
        options,
        machine_language: QueryLanguage::JsonPath,
    };
    for pointer in &checked.duplicate_keys {
        let parent_is_states = pointer
            .rsplit_once('/')
            .is_some_and(|(p, _)| p.ends_with("/States"));
        if parent_is_states {
            ctx.error(
                pointer,
                DiagnosticCode::DuplicateStateName,
                "this state name appears more than once",
            );
        } else {
            ctx.error(
                pointer,
                DiagnosticCode::InvalidJsonDescription,
                "this key appears more than once in its object",
            );
        }
    }
    let machine = ctx.machine(&checked.value);
    if machine.is_some() {
        if let Some(Value::Object(states)) = checked.value.get("States") {
            ctx.inner_assigns(states, "/States", &BTreeSet::new());
        }
    }
    let has_error = ctx
        .diagnostics
        .iter()
        .any(|d| d.severity == super::diagnostic::Severity::Error);
    match machine {
        Some(mut machine) if !has_error => {
            machine.source = checked.value;
            Ok(machine)
        }
        _ => {
            debug_assert!(
                has_error,
                "a machine is missing only when an error was reported"
            );
            Err(ctx.diagnostics)
        }
    }
}

/// The fields allowed at the top level.
const TOP_FIELDS: &[&str] = &[
    "Comment",
    "StartAt",
    "States",
    "TimeoutSeconds",
    "Version",
    "QueryLanguage",
];
/// The fields allowed in a Parallel branch or a Map processor.
const BRANCH_FIELDS: &[&str] = &["Comment", "StartAt", "States", "ProcessorConfig"];
/// Fields every state may carry.
const COMMON_FIELDS: &[&str] = &["Type", "Comment", "QueryLanguage", "Assign"];

fn state_fields(type_name: &str) -> Option<&'static [&'static str]> {
    Some(match type_name {
        "Pass" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultPath",
            "Result",
            "Next",
            "End",
        ],
        "Task" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Resource",
            "TimeoutSeconds",
            "TimeoutSecondsPath",
            "HeartbeatSeconds",
            "HeartbeatSecondsPath",
            "Retry",
            "Catch",
            "Next",
            "End",
            "Credentials",
            // statelog extensions (activity resources only, checked in `task`).
            "TaskList",
            "TaskListPath",
        ],
        "Choice" => &["InputPath", "OutputPath", "Choices", "Default"],
        "Wait" => &[
            "InputPath",
            "OutputPath",
            "Seconds",
            "Timestamp",
            "SecondsPath",
            "TimestampPath",
            "Next",
            "End",
        ],
        "Succeed" => &["InputPath", "OutputPath"],
        "Fail" => &["Error", "ErrorPath", "Cause", "CausePath"],
        "Parallel" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Branches",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Map" => &[
            "InputPath",
            "OutputPath",
            "ItemsPath",
            "ItemSelector",
            "Parameters",
            "ItemProcessor",
            "Iterator",
            "MaxConcurrency",
            "MaxConcurrencyPath",
            "ToleratedFailureCount",
            "ToleratedFailureCountPath",
            "ToleratedFailurePercentage",
            "ToleratedFailurePercentagePath",
            "ResultSelector",
            "ResultPath",
            "Retry",
            "Catch",
            "Next",
            "End",
            "ItemReader",
            "ItemBatcher",
            "ResultWriter",
            "Label",
        ],
        _ => return None,
    })
}

/// Fields of JSONata mode: reported as unsupported, not as unknown.
const JSONATA_FIELDS: &[&str] = &["Arguments", "Output", "Items"];

/// The edges of one state, for the graph checks of its branch.
struct Node {
    name: String,
    pointer: String,
    targets: Vec<(String, String)>,
    terminal: bool,
}

struct Ctx<'o> {
    diagnostics: Vec<Diagnostic>,
    options: &'o ValidationOptions,
    /// The machine's top-level `QueryLanguage`: what Parallel branches and Map processors
    /// inherit (a Map's or Parallel's own does not propagate).
    machine_language: QueryLanguage,
}

/// An object being read, with its pointer.
#[derive(Clone, Copy)]
struct Obj<'a> {
    map: &'a Map<String, Value>,
    at: &'a str,
}

impl<'a> Obj<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn ptr(&self, key: &str) -> String {
        pointer_child(self.at, key)
    }
}

fn type_name_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `Assign` objects of a state as written (its own, its Choice rules', its Catchers'),
/// each with its pointer and whether a Catcher holds it.
fn assigns_of<'a>(state: &'a Value, at: &str) -> Vec<(&'a Map<String, Value>, String, bool)> {
    let mut found = Vec::new();
    if let Some(Value::Object(assign)) = state.get("Assign") {
        found.push((assign, pointer_child(at, "Assign"), false));
    }
    for list in ["Choices", "Catch"] {
        if let Some(Value::Array(rules)) = state.get(list) {
            for (i, rule) in rules.iter().enumerate() {
                if let Some(Value::Object(assign)) = rule.get("Assign") {
                    let rule_at = pointer_index(&pointer_child(at, list), i);
                    found.push((assign, pointer_child(&rule_at, "Assign"), list == "Catch"));
                }
            }
        }
    }
    found
}

/// True when `state` runs states of its own (a Parallel's branches, a Map's processor).
fn has_inner_scope(state: &Value) -> bool {
    state.get("Branches").is_some()
        || state.get("ItemProcessor").is_some()
        || state.get("Iterator").is_some()
}

/// Why `name` cannot be a variable name, if it cannot: a name starts with a letter or `_`,
/// goes on with letters, digits and `_`, and is not `states` (reserved for JSONata's
/// `$states`).
pub(crate) fn invalid_variable_name(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Some("it is empty"),
        Some(c) if !(c.is_alphabetic() || c == '_') => Some("it must start with a letter or '_'"),
        _ if !chars.all(|c| c.is_alphanumeric() || c == '_') => {
            Some("it may hold only letters, digits and '_'")
        }
        _ if name == "states" => Some("'states' is reserved"),
        _ if name.len() > crate::limits::VARIABLE_NAME_BYTES_MAX => Some("it is too long"),
        _ => None,
    }
}

impl Ctx<'_> {
    fn error(&mut self, path: &str, code: DiagnosticCode, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::error(path, code, message));
    }

    fn schema(&mut self, path: &str, message: impl Into<String>) {
        self.error(path, DiagnosticCode::SchemaValidationFailed, message);
    }

    fn unsupported(&mut self, path: &str, what: &str) {
        self.error(
            path,
            DiagnosticCode::UnsupportedFeature,
            format!("{what} is not supported yet"),
        );
    }

    /// Reads the array `field` of `obj` as a list of rules (`Retry`, `Catch`, `Choices`):
    /// `read` gets each member that is an object (`what`), and whether it is the last, and
    /// answers its rule or `None` (having reported why). Absent: an empty list (a required
    /// list checks that first). `None` when the field is not an array or a member failed;
    /// every member's problems are reported either way.
    fn rules<T>(
        &mut self,
        obj: Obj<'_>,
        field: &str,
        what: &str,
        mut read: impl FnMut(&mut Self, Obj<'_>, bool) -> Option<T>,
    ) -> Option<Vec<T>> {
        let Some(value) = obj.get(field) else {
            return Some(Vec::new());
        };
        let at = obj.ptr(field);
        let Value::Array(items) = value else {
            self.schema(&at, format!("'{field}' must be an array"));
            return None;
        };
        let mut rules = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let item_at = pointer_index(&at, i);
            let is_last = i + 1 == items.len();
            match self.object(item, &item_at, what) {
                Some(rule) => match read(self, rule, is_last) {
                    Some(rule) => rules.push(rule),
                    None => ok = false,
                },
                None => ok = false,
            }
        }
        ok.then_some(rules)
    }

    fn object<'a>(&mut self, value: &'a Value, at: &'a str, what: &str) -> Option<Obj<'a>> {
        match value {
            Value::Object(map) => Some(Obj { map, at }),
            other => {
                self.schema(
                    at,
                    format!("{what} must be an object, not {}", type_name_of(other)),
                );
                None
            }
        }
    }

    /// Reports fields of `obj` that are not in `allowed` (JSONata and variable fields as
    /// unsupported).
    fn check_fields(&mut self, obj: Obj<'_>, allowed: &[&[&str]], what: &str) {
        for key in obj.map.keys() {
            if allowed.iter().any(|list| list.contains(&key.as_str())) {
                continue;
            }
            if JSONATA_FIELDS.contains(&key.as_str()) && self.options.jsonata.is_some() {
                self.schema(&obj.ptr(key), jsonata::jsonata_only_message(key));
            } else if JSONATA_FIELDS.contains(&key.as_str()) {
                self.unsupported(&obj.ptr(key), &format!("the JSONata field '{key}'"));
            } else {
                self.schema(
                    &obj.ptr(key),
                    format!("the field '{key}' is not supported in {what}"),
                );
            }
        }
    }

    fn required<'a>(&mut self, obj: Obj<'a>, key: &str, what: &str) -> Option<&'a Value> {
        let value = obj.get(key);
        if value.is_none() {
            self.schema(obj.at, format!("{what} requires the field '{key}'"));
        }
        value
    }

    fn string(&mut self, obj: Obj<'_>, key: &str) -> Option<String> {
        match obj.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.schema(
                    &obj.ptr(key),
                    format!("'{key}' must be a string, not {}", type_name_of(other)),
                );
                None
            }
        }
    }

    fn uint(&mut self, obj: Obj<'_>, key: &str, min: u64, max: u64) -> Option<u64> {
        let value = obj.get(key)?;
        match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(n) => {
                self.schema(
                    &obj.ptr(key),
                    format!("'{key}' is {n}; it must be between {min} and {max}"),
                );
                None
            }
            None => {
                self.schema(
                    &obj.ptr(key),
                    format!("'{key}' must be a whole number between {min} and {max}, not {value}"),
                );
                None
            }
        }
    }

    fn path_text(&mut self, at: &str, key: &str, text: &str) -> Option<Path> {
        match Path::parse(text) {
            Ok(path) => Some(path),
            Err(error) => {
                self.error(
                    at,
                    DiagnosticCode::InvalidPath,
                    format!("'{key}' is not a valid path: {error}"),
                );
                None
            }
        }
    }

    fn path(&mut self, obj: Obj<'_>, key: &str) -> Option<Path> {
        let text = self.string(obj, key)?;
        self.path_text(&obj.ptr(key), key, &text)
    }

    /// A path that must name one location (AWS: a "reference path"), like Choice `Variable`,
    /// `ItemsPath` and the `...Path` fields that read one number or timestamp.
    fn reference_text(&mut self, at: &str, key: &str, text: &str) -> Option<Path> {
        let path = self.path_text(at, key, text)?;
        if !path.is_definite() {
            self.error(
                at,
                DiagnosticCode::InvalidPath,
                format!(
                    "'{key}' must be a reference path naming one location (no wildcard, slice, \
                     filter, union or '..'), not '{text}'"
                ),
            );
            return None;
        }
        Some(path)
    }

    fn reference(&mut self, obj: Obj<'_>, key: &str) -> Option<Path> {
        let text = self.string(obj, key)?;
        self.reference_text(&obj.ptr(key), key, &text)
    }

    fn io_path(&mut self, obj: Obj<'_>, key: &str) -> Option<InputOutputPath> {
        match obj.get(key)? {
            Value::Null => Some(InputOutputPath::Discard),
            _ => self.path(obj, key).map(InputOutputPath::Select),
        }
    }

    fn result_path(&mut self, obj: Obj<'_>, key: &str) -> Option<ResultPathField> {
        match obj.get(key)? {
            Value::Null => Some(ResultPathField::Discard),
            _ => {
                let text = self.string(obj, key)?;
                let at = obj.ptr(key);
                match ReferencePath::parse(&text) {
                    Ok(path) => Some(ResultPathField::Reference(path)),
                    Err(error) => {
                        self.error(
                            &at,
                            DiagnosticCode::InvalidPath,
                            format!("'{key}' is not a valid reference path: {error}"),
                        );
                        None
                    }
                }
            }
        }
    }

    /// Refuses an `Assign` inside a Parallel branch or a Map processor that sets a name an
    /// enclosing scope assigns: an inner scope reads outer variables but cannot set them
    /// (its values vanish when it ends, so the outer one would silently not change). Walks the
    /// definition as written, `outer` being the names the enclosing scopes assign; the walk
    /// goes as deep as the states nest, which the parse already bounded.
    fn inner_assigns(&mut self, states: &Map<String, Value>, at: &str, outer: &BTreeSet<String>) {
        let mut here: BTreeSet<String> = BTreeSet::new();
        for (name, state) in states {
            let state_at = pointer_child(at, name);
            for (assign, assign_at, in_catcher) in assigns_of(state, &state_at) {
                for key in assign.keys() {
                    let variable = key.strip_suffix(".$").unwrap_or(key);
                    if outer.contains(variable) {
                        self.schema(
                            &pointer_child(&assign_at, key),
                            format!(
                                "The variable '{variable}' is assigned in an outer scope: a \
                                 Parallel branch or Map iteration can read it, not assign it"
                            ),
                        );
                    }
                    // A name only a Catcher assigns does not bind the inner scopes: AWS
                    // accepts a Parallel whose branch assigns the name its own Catcher
                    // assigns (recorded: PARALLEL_CATCH_ERROR_VARIABLE_SAMPLING).
                    if !in_catcher {
                        here.insert(variable.to_string());
                    }
                }
            }
        }
        if !states.values().any(has_inner_scope) {
            return;
        }
        let enclosing: BTreeSet<String> = outer.union(&here).cloned().collect();
        for (name, state) in states {
            let state_at = pointer_child(at, name);
            if let Some(Value::Array(branches)) = state.get("Branches") {
                for (i, branch) in branches.iter().enumerate() {
                    if let Some(Value::Object(inner)) = branch.get("States") {
                        let branch_at = pointer_index(&pointer_child(&state_at, "Branches"), i);
                        self.inner_assigns(inner, &pointer_child(&branch_at, "States"), &enclosing);
                    }
                }
            }
            for key in ["ItemProcessor", "Iterator"] {
                if let Some(Value::Object(inner)) = state.get(key).and_then(|p| p.get("States")) {
                    let processor_at = pointer_child(&state_at, key);
                    self.inner_assigns(inner, &pointer_child(&processor_at, "States"), &enclosing);
                }
            }
        }
    }

    /// A JSONPath `Assign` (`Some(None)` when absent; `None` after reporting a problem): an
    /// object whose keys are variable names, a `.$` key's value a path or intrinsic call.
    pub(super) fn assign(&mut self, obj: Obj<'_>) -> Option<Option<Assign>> {
        if obj.get("Assign").is_none() {
            return Some(None);
        }
        let names_ok = self.assign_names(obj, true)?;
        let template = self.template(obj, "Assign", true);
        match (names_ok, template) {
            (true, Some(template)) => Some(Some(Assign::JsonPath(template))),
            _ => None,
        }
    }

    /// Checks the names an `Assign` of `obj` sets (a JSONPath one's keys without `.$` when
    /// `json_path`): `None` when it is not an object, else whether every name is valid and
    /// set once; each problem is reported at its key.
    pub(super) fn assign_names(&mut self, obj: Obj<'_>, json_path: bool) -> Option<bool> {
        let value = obj.get("Assign")?;
        let at = obj.ptr("Assign");
        let Value::Object(map) = value else {
            self.schema(
                &at,
                format!("'Assign' must be an object, not {}", type_name_of(value)),
            );
            return None;
        };
        let mut ok = true;
        let mut seen = BTreeSet::new();
        for key in map.keys() {
            let name = match json_path {
                true => key.strip_suffix(".$").unwrap_or(key),
                false => key.as_str(),
            };
            if let Some(reason) = invalid_variable_name(name) {
                self.schema(
                    &pointer_child(&at, key),
                    format!("The variable name '{name}' is invalid: {reason}"),
                );
                ok = false;
            } else if !seen.insert(name) {
                self.schema(
                    &pointer_child(&at, key),
                    format!("The variable '{name}' is assigned twice in one 'Assign'"),
                );
                ok = false;
            }
        }
        Some(ok)
    }

    fn template(&mut self, obj: Obj<'_>, key: &str, must_be_object: bool) -> Option<Template> {
        let value = obj.get(key)?;
        let at = obj.ptr(key);
        if must_be_object && !value.is_object() {
            self.schema(
                &at,
                format!("'{key}' must be an object, not {}", type_name_of(value)),
            );
            return None;
        }
        match Template::compile(value) {
            Ok(template) => Some(template),
            Err(problems) => {
                if problems.is_empty() {
                    self.error(
                        &at,
                        DiagnosticCode::InvalidPath,
                        format!("'{key}' does not compile"),
                    );
                }
                for problem in problems {
                    let path = if problem.pointer.is_empty() || problem.pointer == "/" {
                        at.clone()
                    } else {
                        format!("{at}{}", problem.pointer)
                    };
                    self.error(&path, DiagnosticCode::InvalidPath, problem.message);
                }
                None
            }
        }
    }

    fn query_language(&mut self, obj: Obj<'_>, inherited: QueryLanguage) -> QueryLanguage {
        match self.string(obj, "QueryLanguage").as_deref() {
            None => inherited,
            Some("JSONPath") => {
                if inherited == QueryLanguage::Jsonata {
                    self.schema(
                        obj.at,
                        "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine",
                    );
                }
                QueryLanguage::JsonPath
            }
            Some("JSONata") => {
                if inherited != QueryLanguage::Jsonata && self.options.jsonata.is_none() {
                    self.unsupported(&obj.ptr("QueryLanguage"), "QueryLanguage 'JSONata'");
                }
                QueryLanguage::Jsonata
            }
            Some(other) => {
                self.schema(
                    &obj.ptr("QueryLanguage"),
                    format!("'QueryLanguage' must be 'JSONPath' or 'JSONata', not '{other}'"),
                );
                inherited
            }
        }
    }

    fn machine(&mut self, value: &Value) -> Option<StateMachine> {
        let Value::Object(map) = value else {
            self.schema("/", "Definition must be a valid JSON object");
            return None;
        };
        let root = Obj { map, at: "/" };
        self.check_fields(root, &[TOP_FIELDS], "a state machine");
        let mut missing = Vec::new();
        for key in ["States", "StartAt"] {
            if root.get(key).is_none() {
                missing.push(key);
            }
        }
        if !missing.is_empty() {
            self.schema(
                "/",
                format!("These fields are required: [{}]", missing.join(", ")),
            );
        }
        let comment = self.string(root, "Comment");
        let version = self.string(root, "Version");
        if let Some(v) = &version {
            if v != "1.0" {
                self.schema(
                    &root.ptr("Version"),
                    format!("'Version' must be \"1.0\", not \"{v}\""),
                );
            }
        }
        let timeout_seconds = self.uint(root, "TimeoutSeconds", 1, SECONDS_MAX);
        let query_language = self.query_language(root, QueryLanguage::JsonPath);
        self.machine_language = query_language;
        let (start_at, states) = self.states_and_start(root, query_language, 0)?;
        Some(StateMachine {
            comment,
            start_at,
            states,
            timeout_seconds,
            version,
            query_language,
            jsonata: self.options.jsonata.clone(),
            // Filled in by `parse_definition`, which owns the document (no copy).
            source: Value::Null,
        })
    }

    /// Reads `StartAt` and `States` of a machine or branch and checks its graph.
    fn states_and_start(
        &mut self,
        obj: Obj<'_>,
        language: QueryLanguage,
        depth: usize,
    ) -> Option<(String, StateMap)> {
        let start_at = self.string(obj, "StartAt");
        let states_value = obj.get("States")?;
        let states_at = obj.ptr("States");
        let states_obj = self.object(states_value, &states_at, "'States'")?;
        if states_obj.map.is_empty() {
            self.schema(&states_at, "'States' must name at least one state");
        }
        let mut states = StateMap::new();
        let mut nodes = Vec::new();
        let mut complete = true;
        for (name, state_value) in states_obj.map {
            let at = states_obj.ptr(name);
            let chars = name.chars().count();
            if chars == 0 || chars > STATE_NAME_CHARS_MAX {
                self.error(
                    &at,
                    DiagnosticCode::InvalidStateName,
                    format!("state names must be 1 to {STATE_NAME_CHARS_MAX} characters; this one has {chars}"),
                );
            }
            let mut node = Node {
                name: name.clone(),
                pointer: at.clone(),
                targets: Vec::new(),
                terminal: false,
            };
            match self.state(name, state_value, &at, language, depth, &mut node) {
                Some(state) => {
                    let inserted = states.insert(state);
                    debug_assert!(inserted, "JSON object keys are unique after parsing");
                }
                None => complete = false,
            }
            nodes.push(node);
        }
        self.check_graph(obj, start_at.as_deref(), &nodes);
        match (start_at, complete) {
            (Some(start_at), true) => Some((start_at, states)),
            _ => None,
        }
    }

    fn check_graph(&mut self, obj: Obj<'_>, start_at: Option<&str>, nodes: &[Node]) {
        let names: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        for node in nodes {
            for (target, at) in &node.targets {
                if !names.contains(target.as_str()) {
                    self.error(
                        at,
                        DiagnosticCode::MissingTransitionTarget,
                        format!(
                            "state '{}' goes to '{target}', which does not exist here",
                            node.name
                        ),
                    );
                }
            }
        }
        let Some(start) = start_at else { return };
        if !names.contains(start) {
            self.error(
                &obj.ptr("StartAt"),
                DiagnosticCode::MissingTransitionTarget,
                format!("'StartAt' names '{start}', which does not exist here"),
            );
            return;
        }
        let mut reached: BTreeSet<&str> = BTreeSet::new();
        let mut queue = VecDeque::from([start]);
        while let Some(name) = queue.pop_front() {
            if !reached.insert(name) {
                continue;
            }
            if let Some(node) = nodes.iter().find(|n| n.name == name) {
                for (target, _) in &node.targets {
                    if names.contains(target.as_str()) && !reached.contains(target.as_str()) {
                        queue.push_back(target);
                    }
                }
            }
        }
        for node in nodes {
            if !reached.contains(node.name.as_str()) {
                self.error(
                    &node.pointer,
                    DiagnosticCode::UnreachableState,
                    format!("state '{}' cannot be reached from '{start}'", node.name),
                );
            }
        }
        if !nodes.iter().any(|n| n.terminal) {
            self.error(
                &obj.ptr("States"),
                DiagnosticCode::MissingEndState,
                "no state ends the machine: add \"End\": true, a Succeed or a Fail state",
            );
        }
    }

    fn transition(&mut self, obj: Obj<'_>, node: &mut Node) -> Option<Transition> {
        let next = self.string(obj, "Next");
        let end = match obj.get("End") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.schema(
                    &obj.ptr("End"),
                    format!("'End' must be a boolean, not {}", type_name_of(other)),
                );
                return None;
            }
        };
        match (next, end) {
            (Some(_), Some(true)) => {
                self.schema(obj.at, "a state cannot have both 'Next' and 'End'");
                None
            }
            (Some(target), _) => {
                node.targets.push((target.clone(), obj.ptr("Next")));
                Some(Transition::Next(target))
            }
            (None, Some(true)) => {
                node.terminal = true;
                Some(Transition::End)
            }
            (None, _) => {
                if obj.get("Next").is_none() {
                    self.schema(obj.at, "the state needs 'Next' or \"End\": true");
                }
                None
            }
        }
    }

    fn state(
        &mut self,
        name: &str,
        value: &Value,
        at: &str,
        inherited: QueryLanguage,
        depth: usize,
        node: &mut Node,
    ) -> Option<State> {
        let obj = self.object(value, at, &format!("state '{name}'"))?;
        let type_name = match obj.get("Type") {
            None => {
                self.schema(at, "These fields are required: [Type]");
                // Its transitions still count, so its targets are not reported unreachable.
                self.collect_edges_only(obj, "", node);
                return None;
            }
            Some(Value::String(t)) => t.as_str(),
            Some(other) => {
                self.schema(
                    &obj.ptr("Type"),
                    format!("'Type' must be a string, not {}", type_name_of(other)),
                );
                self.collect_edges_only(obj, "", node);
                return None;
            }
        };
        let Some(fields) = state_fields(type_name) else {
            self.schema(
                &obj.ptr("Type"),
                "The field 'Type' should have one of these values: [Task, Wait, Pass, Succeed, Fail, Choice, Parallel, Map]",
            );
            self.collect_edges_only(obj, type_name, node);
            return None;
        };
        let language = self.query_language(obj, inherited);
        if language == QueryLanguage::Jsonata {
            if self.options.jsonata.is_some() {
                return self.jsonata_state(name, obj, type_name, depth, node);
            }
            // No evaluator: the state is refused (reported above). Its transitions still
            // count for the graph, so no false unreachable-state reports follow.
            self.collect_edges_only(obj, type_name, node);
            return None;
        }
        self.check_fields(
            obj,
            &[COMMON_FIELDS, fields],
            &format!("a {type_name} state"),
        );
        let assign = match type_name {
            // AWS takes `Assign` on every type that exits normally but Succeed.
            "Succeed" | "Fail" => {
                if obj.get("Assign").is_some() {
                    self.schema(
                        &obj.ptr("Assign"),
                        format!("the field 'Assign' is not supported in a {type_name} state"),
                    );
                }
                Some(None)
            }
            _ => self.assign(obj),
        };
        let comment = self.string(obj, "Comment");
        // The kind parsers fill in the data-flow fields their type allows.
        let mut flow = JsonPathFlow {
            input_path: self.io_path(obj, "InputPath"),
            output_path: self.io_path(obj, "OutputPath"),
            ..JsonPathFlow::default()
        };
        let kind = match type_name {
            "Pass" => self.pass(obj, node, &mut flow).map(StateKind::Pass),
            "Task" => self
                .task(obj, node, &mut flow)
                .map(|t| StateKind::Task(Box::new(t))),
            "Choice" => self.choice(obj, node).map(StateKind::Choice),
            "Wait" => self.wait(obj, node).map(StateKind::Wait),
            "Succeed" => {
                node.terminal = true;
                // 'Next'/'End' on a Succeed or Fail state is an unknown field (check_fields).
                Some(StateKind::Succeed)
            }
            "Fail" => {
                node.terminal = true;
                self.fail(obj).map(|f| StateKind::Fail(Box::new(f)))
            }
            "Parallel" => self
                .parallel(obj, node, depth, &mut flow)
                .map(|p| StateKind::Parallel(Box::new(p))),
            "Map" => self
                .map(obj, node, depth, &mut flow)
                .map(|m| StateKind::Map(Box::new(m))),
            _ => unreachable!("state_fields accepted only the eight ASL types"),
        };
        Some(State {
            name: name.to_string(),
            comment,
            data_flow: DataFlow::JsonPath(flow),
            assign: assign?,
            kind: kind?,
        })
    }

    /// For a state this module cannot read (JSONata): record its transitions only.
    fn collect_edges_only(&mut self, obj: Obj<'_>, type_name: &str, node: &mut Node) {
        if let Some(Value::String(next)) = obj.get("Next") {
            node.targets.push((next.clone(), obj.ptr("Next")));
        }
        if matches!(obj.get("End"), Some(Value::Bool(true)))
            || matches!(type_name, "Succeed" | "Fail")
        {
            node.terminal = true;
        }
        if let Some(Value::String(default)) = obj.get("Default") {
            node.targets.push((default.clone(), obj.ptr("Default")));
        }
        for list in ["Choices", "Catch"] {
            if let Some(Value::Array(items)) = obj.get(list) {
                for (i, item) in items.iter().enumerate() {
                    if let Some(Value::String(next)) = item.get("Next") {
                        let at = pointer_child(&pointer_index(&obj.ptr(list), i), "Next");
                        node.targets.push((next.clone(), at));
                    }
                }
            }
        }
    }

    fn error_equals(&mut self, obj: Obj<'_>, is_last: bool) -> Option<Vec<String>> {
        let value = self.required(obj, "ErrorEquals", "a Retry or Catch rule")?;
        let at = obj.ptr("ErrorEquals");
        let Value::Array(items) = value else {
            self.schema(&at, "'ErrorEquals' must be an array of error names");
            return None;
        };
        if items.is_empty() {
            self.schema(&at, "'ErrorEquals' must name at least one error");
            return None;
        }
        let mut names = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(name) => names.push(name.clone()),
                other => self.schema(
                    &pointer_index(&at, i),
                    format!("error names must be strings, not {}", type_name_of(other)),
                ),
            }
        }
        if names.iter().any(|n| n == ERROR_ALL) {
            if names.len() > 1 {
                self.schema(&at, "'States.ALL' must appear alone in 'ErrorEquals'");
            }
            if !is_last {
                self.schema(&at, "a rule with 'States.ALL' must be the last one");
            }
        }
        (names.len() == items.len()).then_some(names)
    }

    fn retriers(&mut self, obj: Obj<'_>) -> Option<Vec<Retrier>> {
        self.rules(obj, "Retry", "a Retry rule", |this, rule, is_last| {
            this.check_fields(
                rule,
                &[&[
                    "ErrorEquals",
                    "IntervalSeconds",
                    "MaxAttempts",
                    "BackoffRate",
                    "MaxDelaySeconds",
                    "JitterStrategy",
                    "Comment",
                ]],
                "a Retry rule",
            );
            let error_equals = this.error_equals(rule, is_last);
            let interval_seconds = this.uint(rule, "IntervalSeconds", 1, SECONDS_MAX);
            let max_attempts = this.uint(rule, "MaxAttempts", 0, SECONDS_MAX);
            let backoff_rate = match rule.get("BackoffRate") {
                None => Some(2.0),
                Some(v) => match v.as_f64() {
                    Some(rate) if rate >= 1.0 => Some(rate),
                    _ => {
                        this.schema(
                            &rule.ptr("BackoffRate"),
                            format!("'BackoffRate' must be a number of at least 1.0, not {v}"),
                        );
                        None
                    }
                },
            };
            let max_delay_seconds = this.uint(rule, "MaxDelaySeconds", 1, MAX_DELAY_SECONDS_MAX);
            let jitter_strategy = match this.string(rule, "JitterStrategy").as_deref() {
                None => Some(JitterStrategy::None),
                Some("NONE") => Some(JitterStrategy::None),
                Some("FULL") => Some(JitterStrategy::Full),
                Some(other) => {
                    this.schema(
                        &rule.ptr("JitterStrategy"),
                        format!("'JitterStrategy' must be FULL or NONE, not '{other}'"),
                    );
                    None
                }
            };
            let bad = (rule.get("IntervalSeconds").is_some() && interval_seconds.is_none())
                || (rule.get("MaxAttempts").is_some() && max_attempts.is_none())
                || (rule.get("MaxDelaySeconds").is_some() && max_delay_seconds.is_none());
            match (error_equals, backoff_rate, jitter_strategy, bad) {
                (Some(error_equals), Some(backoff_rate), Some(jitter_strategy), false) => {
                    Some(Retrier {
                        error_equals,
                        interval_seconds: interval_seconds.unwrap_or(1),
                        max_attempts: max_attempts
                            .map_or(3, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                        backoff_rate,
                        max_delay_seconds,
                        jitter_strategy,
                    })
                }
                _ => None,
            }
        })
    }

    fn catchers(&mut self, obj: Obj<'_>, node: &mut Node) -> Option<Vec<Catcher>> {
        self.rules(obj, "Catch", "a Catch rule", |this, rule, is_last| {
            this.check_fields(
                rule,
                &[&["ErrorEquals", "Next", "ResultPath", "Comment", "Assign"]],
                "a Catch rule",
            );
            let assign = this.assign(rule);
            let error_equals = this.error_equals(rule, is_last);
            let next = this
                .required(rule, "Next", "a Catch rule")
                .and_then(|_| this.string(rule, "Next"));
            if let Some(next) = &next {
                node.targets.push((next.clone(), rule.ptr("Next")));
            }
            let result_path = this.result_path(rule, "ResultPath");
            match (
                error_equals,
                next,
                present_or_fail(rule, "ResultPath", result_path),
                assign,
            ) {
                (Some(error_equals), Some(next), Some(result_path), Some(assign)) => {
                    Some(Catcher {
                        error_equals,
                        next,
                        flow: CatchFlow::JsonPath { result_path },
                        assign,
                    })
                }
                _ => None,
            }
        })
    }

    fn branch(&mut self, value: &Value, at: &str, depth: usize, what: &str) -> Option<Branch> {
        if depth > DEFINITION_STATE_NESTING_MAX {
            self.error(
                at,
                DiagnosticCode::TooDeeplyNested,
                format!(
                    "Parallel and Map states nest more than {DEFINITION_STATE_NESTING_MAX} deep"
                ),
            );
            return None;
        }
        let obj = self.object(value, at, what)?;
        self.check_fields(obj, &[BRANCH_FIELDS], what);
        let mut missing = Vec::new();
        for key in ["States", "StartAt"] {
            if obj.get(key).is_none() {
                missing.push(key);
            }
        }
        if !missing.is_empty() {
            self.schema(
                at,
                format!("These fields are required: [{}]", missing.join(", ")),
            );
        }
        let comment = self.string(obj, "Comment");
        let (start_at, states) = self.states_and_start(obj, self.machine_language, depth)?;
        Some(Branch {
            comment,
            start_at,
            states,
        })
    }
}

/// `Some(parsed)` when the field parsed or was absent; `None` when it was present and failed.
fn present_or_fail<T>(obj: Obj<'_>, key: &str, parsed: Option<T>) -> Option<Option<T>> {
    match (obj.get(key), parsed) {
        (None, _) => Some(None),
        (Some(_), Some(value)) => Some(Some(value)),
        (Some(_), None) => None,
    }
}

/// Like [`present_or_fail`] for a value that may come from one of several keys.
fn present_or_fail_any<T>(obj: Obj<'_>, keys: &[&str], parsed: Option<T>) -> Option<Option<T>> {
    let present = keys.iter().any(|k| obj.get(k).is_some());
    match (present, parsed) {
        (false, _) => Some(None),
        (true, Some(value)) => Some(Some(value)),
        (true, None) => None,
    }
}

/// What a comparison operator's name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperatorSpec {
    Compare {
        family: CompareFamily,
        op: CompareOp,
        path: bool,
    },
    Matches,
    Is(TypeCheck),
}

/// Decodes a Choice operator name (`NumericLessThanEqualsPath`, `IsPresent`, ...).
pub(crate) fn operator_spec(name: &str) -> Option<OperatorSpec> {
    let is = match name {
        "IsNull" => Some(TypeCheck::Null),
        "IsPresent" => Some(TypeCheck::Present),
        "IsNumeric" => Some(TypeCheck::Numeric),
        "IsString" => Some(TypeCheck::String),
        "IsBoolean" => Some(TypeCheck::Boolean),
        "IsTimestamp" => Some(TypeCheck::Timestamp),
        "StringMatches" => return Some(OperatorSpec::Matches),
        _ => None,
    };
    if let Some(check) = is {
        return Some(OperatorSpec::Is(check));
    }
    let (family, rest) = [
        ("String", CompareFamily::String),
        ("Numeric", CompareFamily::Numeric),
        ("Boolean", CompareFamily::Boolean),
        ("Timestamp", CompareFamily::Timestamp),
    ]
    .into_iter()
    .find_map(|(prefix, family)| name.strip_prefix(prefix).map(|rest| (family, rest)))?;
    let (rest, path) = match rest.strip_suffix("Path") {
        Some(stripped) => (stripped, true),
        None => (rest, false),
    };
    let op = match rest {
        "Equals" => CompareOp::Equals,
        "LessThan" => CompareOp::LessThan,
        "GreaterThan" => CompareOp::GreaterThan,
        "LessThanEquals" => CompareOp::LessThanEquals,
        "GreaterThanEquals" => CompareOp::GreaterThanEquals,
        _ => return None,
    };
    if family == CompareFamily::Boolean && op != CompareOp::Equals {
        return None;
    }
    Some(OperatorSpec::Compare { family, op, path })
}
