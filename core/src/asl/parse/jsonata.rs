//! A JSONata state's fields (`QueryLanguage: JSONata`, of the state or the machine): the same
//! types as JSONPath, with `Arguments` and `Output` instead of the JSONPath data-flow fields,
//! `{% %}` expressions in templates and in the number, timestamp and Fail fields, Choice rules
//! of `Condition`, and Catchers with `Output`. Every expression is compiled here, through the
//! embedder's evaluator ([`ValidationOptions::jsonata`]).
//!
//! `Assign` (variables) is read in states, Choice rules and
//! Catchers alike.

use super::*;
use crate::asl::data_flow::JsonataFlow;
use crate::asl::jsonata::{
    compile_expression, expression_text, Expression, JsonataTemplate, TemplateProblem,
};

/// The JSONPath-only fields (AWS refuses them in a JSONata state, naming them).
const JSONPATH_ONLY: &[&str] = &[
    "InputPath",
    "OutputPath",
    "Parameters",
    "ResultSelector",
    "ResultPath",
    "Result",
    "ItemsPath",
    "TimeoutSecondsPath",
    "HeartbeatSecondsPath",
    "SecondsPath",
    "TimestampPath",
    "ErrorPath",
    "CausePath",
    "MaxConcurrencyPath",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentagePath",
    "TaskListPath",
];

/// The fields a JSONata state of `type_name` allows, beyond [`COMMON_FIELDS`].
fn jsonata_fields(type_name: &str) -> &'static [&'static str] {
    match type_name {
        "Pass" => &["Output", "Next", "End"],
        "Task" => &[
            "Resource",
            "Arguments",
            "Output",
            "TimeoutSeconds",
            "HeartbeatSeconds",
            "Retry",
            "Catch",
            "Next",
            "End",
            "Credentials",
            "TaskList",
        ],
        "Choice" => &["Choices", "Default", "Output"],
        "Wait" => &["Seconds", "Timestamp", "Output", "Next", "End"],
        "Succeed" => &["Output"],
        "Fail" => &["Error", "Cause"],
        "Parallel" => &[
            "Branches",
            "Arguments",
            "Output",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Map" => &[
            "ItemProcessor",
            "Iterator",
            "Items",
            "ItemSelector",
            "MaxConcurrency",
            "ToleratedFailureCount",
            "ToleratedFailurePercentage",
            "Output",
            "Retry",
            "Catch",
            "Next",
            "End",
            "ItemReader",
            "ItemBatcher",
            "ResultWriter",
            "Label",
        ],
        _ => &[],
    }
}

/// AWS's words for a JSONPath-only field in a JSONata state.
pub(super) fn jsonpath_only_message(key: &str) -> String {
    format!(
        "The QueryLanguage is set to 'JSONata', but field '{key}' is only supported for the \
         'JSONPath' QueryLanguage"
    )
}

/// The same for a JSONata-only field (`Output`, `Arguments`, `Items`, `Condition`) in a
/// JSONPath state.
pub(super) fn jsonata_only_message(key: &str) -> String {
    format!(
        "The QueryLanguage is set to 'JSONPath', but field '{key}' is only supported for the \
         'JSONata' QueryLanguage"
    )
}

/// What the expressions of one state read: the variables (not `$states`) and, conservatively,
/// whether any may read `$states.context`.
pub(super) struct Reads {
    variables: Vec<String>,
    reads_context: bool,
    /// The paths below `$states` read, merged; `None` once one expression may read more.
    states_paths: Option<Vec<Vec<String>>>,
}

impl Default for Reads {
    fn default() -> Self {
        Reads {
            variables: Vec::new(),
            reads_context: false,
            states_paths: Some(Vec::new()),
        }
    }
}

impl Reads {
    /// Adds what `other` reads.
    fn merge(&mut self, other: &Reads) {
        for name in &other.variables {
            if !self.variables.contains(name) {
                self.variables.push(name.clone());
            }
        }
        self.reads_context |= other.reads_context;
        match (&mut self.states_paths, &other.states_paths) {
            (Some(mine), Some(theirs)) => mine.extend(theirs.iter().cloned()),
            (mine, _) => *mine = None,
        }
    }

    fn note(&mut self, expression: &Expression) {
        match (&mut self.states_paths, expression.states_paths()) {
            (Some(mine), Some(theirs)) => mine.extend(theirs.iter().cloned()),
            (mine, _) => *mine = None,
        }
        for name in expression.free_variables() {
            if name != "states" && !self.variables.contains(name) {
                self.variables.push(name.clone());
            }
        }
        // `$states` may be aliased (`$s := $states`), so any mention of `context` counts.
        if expression.source().contains("context") {
            self.reads_context = true;
        }
    }
}

impl Ctx<'_> {
    /// Reports a refused expression of a template at its pointer.
    fn jsonata_problem(&mut self, at: &str, problem: TemplateProblem) {
        match problem {
            TemplateProblem::Invalid { source, error } => self.error(
                at,
                DiagnosticCode::InvalidJsonataExpression,
                format!("The JSONata expression '{source}' is not valid: {error}"),
            ),
            TemplateProblem::Unsupported { source, reason } => self.error(
                at,
                DiagnosticCode::UnsupportedJsonataExpression,
                format!("The JSONata expression '{source}' is not supported: {reason}"),
            ),
        }
    }

    /// `key` of `obj` as a template: `Some(None)` when absent, `None` when refused.
    pub(super) fn jsonata_template(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
    ) -> Option<Option<JsonataTemplate>> {
        let Some(value) = obj.get(key) else {
            return Some(None);
        };
        let runtime = self
            .options
            .jsonata
            .clone()
            .expect("a JSONata state is parsed only with an evaluator");
        let mut problems = Vec::new();
        let at = obj.ptr(key);
        let template = JsonataTemplate::compile(value, &at, &*runtime.0, &mut problems);
        for (at, problem) in problems {
            self.jsonata_problem(&at, problem);
        }
        let template = template?;
        for expression in template.expressions() {
            reads.note(expression);
        }
        Some(Some(template))
    }

    /// `key` of `obj` when it is a `{% %}` string: `Some(Some(e))` compiled, `Some(None)`
    /// refused (reported); `None` when absent or not an expression (a literal).
    fn jsonata_expression_field(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
    ) -> Option<Option<Expression>> {
        let Some(Value::String(text)) = obj.get(key) else {
            return None;
        };
        let source = expression_text(text)?;
        let runtime = self
            .options
            .jsonata
            .clone()
            .expect("a JSONata state is parsed only with an evaluator");
        match compile_expression(source, &*runtime.0) {
            Ok(expression) => {
                reads.note(&expression);
                Some(Some(expression))
            }
            Err(problem) => {
                self.jsonata_problem(&obj.ptr(key), problem);
                Some(None)
            }
        }
    }

    /// The `Assign` of a JSONata state, rule or Catcher: an object whose keys are the names
    /// set and whose values are templates (`{% %}` at any depth), their reads noted in
    /// `reads`. `Some(None)` when absent; `None` when refused (reported).
    fn jsonata_assign(&mut self, obj: Obj<'_>, reads: &mut Reads) -> Option<Option<Assign>> {
        if obj.get("Assign").is_none() {
            return Some(None);
        }
        let names_ok = self.assign_names(obj, false)?;
        let template = self.jsonata_template(obj, "Assign", reads)?;
        match (names_ok, template) {
            (true, Some(template)) => Some(Some(Assign::Jsonata(template))),
            _ => None,
        }
    }

    /// Reads a state whose query language is JSONata.
    pub(super) fn jsonata_state(
        &mut self,
        name: &str,
        obj: Obj<'_>,
        type_name: &str,
        depth: usize,
        node: &mut Node,
    ) -> Option<State> {
        let allowed = jsonata_fields(type_name);
        for key in obj.map.keys() {
            let key = key.as_str();
            if COMMON_FIELDS.contains(&key) || allowed.contains(&key) {
                continue;
            }
            if JSONPATH_ONLY.contains(&key) {
                self.schema(&obj.ptr(key), jsonpath_only_message(key));
            } else {
                self.schema(
                    &obj.ptr(key),
                    format!("the field '{key}' is not supported in a {type_name} state"),
                );
            }
        }
        let comment = self.string(obj, "Comment");
        let mut reads = Reads::default();
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
            _ => self.jsonata_assign(obj, &mut reads),
        };
        let output = self.jsonata_template(obj, "Output", &mut reads);
        let mut flow = JsonataFlow::default();
        let kind = match type_name {
            "Pass" => self
                .transition(obj, node)
                .map(|next| StateKind::Pass(PassState { next })),
            "Task" => self
                .jsonata_task(obj, node, &mut flow, &mut reads)
                .map(|t| StateKind::Task(Box::new(t))),
            "Choice" => self
                .jsonata_choice(obj, node, &mut reads)
                .map(StateKind::Choice),
            "Wait" => self
                .jsonata_wait(obj, node, &mut reads)
                .map(StateKind::Wait),
            "Succeed" => {
                node.terminal = true;
                Some(StateKind::Succeed)
            }
            "Fail" => {
                node.terminal = true;
                self.jsonata_fail(obj, &mut reads)
                    .map(|f| StateKind::Fail(Box::new(f)))
            }
            "Parallel" => self
                .jsonata_parallel(obj, node, depth, &mut flow, &mut reads)
                .map(|p| StateKind::Parallel(Box::new(p))),
            "Map" => self
                .jsonata_map(obj, node, depth, &mut flow, &mut reads)
                .map(|m| StateKind::Map(Box::new(m))),
            _ => unreachable!("state_fields accepted only the eight ASL types"),
        };
        flow.output = output?;
        flow.variables = reads.variables;
        flow.reads_context = reads.reads_context;
        flow.states_paths = reads.states_paths;
        Some(State {
            name: name.to_string(),
            comment,
            data_flow: DataFlow::Jsonata(flow),
            kind: kind?,
            assign: assign?,
        })
    }

    /// `key` of `obj` as a literal or a `{% %}` expression: `Some(None)` when absent; an
    /// expression becomes `expression(e)`; any other value is read by `literal`, which
    /// reports what it refuses. `None` when refused.
    fn literal_or_expression<T>(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
        expression: impl FnOnce(Expression) -> T,
        literal: impl FnOnce(&mut Self, &Value) -> Option<T>,
    ) -> Option<Option<T>> {
        let Some(value) = obj.get(key) else {
            return Some(None);
        };
        match self.jsonata_expression_field(obj, key, reads) {
            Some(compiled) => compiled.map(|e| Some(expression(e))),
            None => literal(self, value).map(Some),
        }
    }

    /// `TimeoutSeconds` / `HeartbeatSeconds`: a literal or an expression.
    fn jsonata_seconds(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
    ) -> Option<Option<SecondsField>> {
        self.literal_or_expression(obj, key, reads, SecondsField::Expression, |this, _| {
            this.uint(obj, key, 1, SECONDS_MAX)
                .map(SecondsField::Literal)
        })
    }

    fn jsonata_task(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        flow: &mut JsonataFlow,
        reads: &mut Reads,
    ) -> Option<TaskState> {
        let resource = self.task_resource(obj);
        let arguments = self.jsonata_template(obj, "Arguments", reads);
        let timeout = self.jsonata_seconds(obj, "TimeoutSeconds", reads);
        let heartbeat = self.jsonata_seconds(obj, "HeartbeatSeconds", reads);
        self.check_heartbeat_below_timeout(
            obj,
            timeout.as_ref().and_then(Option::as_ref),
            heartbeat.as_ref().and_then(Option::as_ref),
        );
        let task_list = self.task_list(obj, resource.as_ref());
        let retry = self.retriers(obj);
        let catch = self.jsonata_catchers(obj, node, reads);
        let next = self.transition(obj, node);
        let task = TaskState {
            resource: resource?,
            timeout: timeout?,
            heartbeat: heartbeat?,
            task_list: present_or_fail_any(obj, &["TaskList"], task_list)?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.arguments = arguments?;
        Some(task)
    }

    fn jsonata_catchers(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        reads: &mut Reads,
    ) -> Option<Vec<Catcher>> {
        self.rules(obj, "Catch", "a Catch rule", |this, rule, is_last| {
            for key in rule.map.keys() {
                match key.as_str() {
                    "ErrorEquals" | "Next" | "Output" | "Comment" | "Assign" => {}
                    "ResultPath" => this.schema(&rule.ptr(key), jsonpath_only_message(key)),
                    other => this.schema(
                        &rule.ptr(other),
                        format!("the field '{other}' is not supported in a Catch rule"),
                    ),
                }
            }
            let error_equals = this.error_equals(rule, is_last);
            let next = this
                .required(rule, "Next", "a Catch rule")
                .and_then(|_| this.string(rule, "Next"));
            if let Some(next) = &next {
                node.targets.push((next.clone(), rule.ptr("Next")));
            }
            let mut catcher_reads = Reads::default();
            let output = this.jsonata_template(rule, "Output", &mut catcher_reads);
            let assign = this.jsonata_assign(rule, &mut catcher_reads);
            reads.merge(&catcher_reads);
            match (error_equals, next, output, assign) {
                (Some(error_equals), Some(next), Some(output), Some(assign)) => Some(Catcher {
                    error_equals,
                    next,
                    flow: CatchFlow::Jsonata {
                        output,
                        variables: catcher_reads.variables,
                        reads_context: catcher_reads.reads_context,
                        states_paths: catcher_reads.states_paths,
                    },
                    assign,
                }),
                _ => None,
            }
        })
    }

    fn jsonata_choice(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        reads: &mut Reads,
    ) -> Option<ChoiceState> {
        let default = self.string(obj, "Default");
        if let Some(default) = &default {
            node.targets.push((default.clone(), obj.ptr("Default")));
        }
        let value = self.required(obj, "Choices", "a Choice state")?;
        if matches!(value, Value::Array(items) if items.is_empty()) {
            self.schema(&obj.ptr("Choices"), "'Choices' must hold at least one rule");
            return None;
        }
        let choices = self.rules(obj, "Choices", "a Choice rule", |this, rule, _| {
            for key in rule.map.keys() {
                match key.as_str() {
                    "Condition" | "Next" | "Output" | "Comment" | "Assign" => {}
                    "Variable" | "And" | "Or" | "Not" => {
                        this.schema(&rule.ptr(key), jsonpath_only_message(key))
                    }
                    other if operator_spec(other).is_some() => {
                        this.schema(&rule.ptr(other), jsonpath_only_message(other))
                    }
                    other => this.error(
                        &rule.ptr(other),
                        DiagnosticCode::InvalidChoiceRule,
                        format!("'{other}' is not a field of a JSONata Choice rule"),
                    ),
                }
            }
            let next = this
                .required(rule, "Next", "a top-level Choice rule")
                .and_then(|_| this.string(rule, "Next"));
            if let Some(next) = &next {
                node.targets.push((next.clone(), rule.ptr("Next")));
            }
            let condition = match rule.get("Condition") {
                None => {
                    this.error(
                        rule.at,
                        DiagnosticCode::InvalidChoiceRule,
                        "a JSONata Choice rule needs a 'Condition'",
                    );
                    None
                }
                Some(Value::Bool(_)) | Some(Value::String(_)) => {
                    match this.jsonata_template(rule, "Condition", reads) {
                        Some(Some(JsonataTemplate::Literal(Value::String(_)))) => {
                            this.error(
                                &rule.ptr("Condition"),
                                DiagnosticCode::InvalidChoiceRule,
                                "'Condition' must be a boolean or a {% %} expression",
                            );
                            None
                        }
                        Some(Some(template)) => Some(Condition::Jsonata(template)),
                        _ => None,
                    }
                }
                Some(other) => {
                    this.error(
                        &rule.ptr("Condition"),
                        DiagnosticCode::InvalidChoiceRule,
                        format!(
                            "'Condition' must be a boolean or a {{% %}} expression, not {}",
                            type_name_of(other)
                        ),
                    );
                    None
                }
            };
            let output = this.jsonata_template(rule, "Output", reads);
            let assign = this.jsonata_assign(rule, reads);
            match (condition, next, output, assign) {
                (Some(condition), Some(next), Some(output), Some(assign)) => Some(ChoiceRule {
                    condition,
                    next,
                    output,
                    assign,
                }),
                _ => None,
            }
        });
        let default_ok = obj.get("Default").is_none() || default.is_some();
        let choices = choices?;
        default_ok.then_some(ChoiceState { choices, default })
    }

    fn jsonata_wait(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        reads: &mut Reads,
    ) -> Option<WaitState> {
        let present: Vec<&str> = ["Seconds", "Timestamp"]
            .into_iter()
            .filter(|k| obj.get(k).is_some())
            .collect();
        let wait = match present.as_slice() {
            [key] => match self.jsonata_expression_field(obj, key, reads) {
                Some(Some(expression)) if *key == "Seconds" => {
                    Some(WaitFor::SecondsExpression(expression))
                }
                Some(Some(expression)) => Some(WaitFor::TimestampExpression(expression)),
                Some(None) => None,
                None if *key == "Seconds" => self
                    .uint(obj, "Seconds", 0, SECONDS_MAX)
                    .map(WaitFor::Seconds),
                None => {
                    let text = self.string(obj, "Timestamp");
                    match text.as_deref().map(|t| (t, parse_timestamp(t))) {
                        Some((_, Some(t))) => Some(WaitFor::Timestamp(t)),
                        Some((t, None)) => {
                            self.schema(
                                &obj.ptr("Timestamp"),
                                format!("'Timestamp' must be an RFC 3339 timestamp such as 2016-03-14T01:59:00Z, not '{t}'"),
                            );
                            None
                        }
                        None => None,
                    }
                }
            },
            [] => {
                self.schema(obj.at, "a Wait state needs one of 'Seconds', 'Timestamp'");
                None
            }
            _ => {
                self.schema(
                    obj.at,
                    "a Wait state takes exactly one of 'Seconds' and 'Timestamp'",
                );
                None
            }
        };
        let next = self.transition(obj, node);
        Some(WaitState {
            wait: wait?,
            next: next?,
        })
    }

    fn jsonata_fail(&mut self, obj: Obj<'_>, reads: &mut Reads) -> Option<FailState> {
        let error = self.jsonata_fail_field(obj, "Error", reads);
        let cause = self.jsonata_fail_field(obj, "Cause", reads);
        Some(FailState {
            error: error?,
            cause: cause?,
        })
    }

    /// A Fail state's `Error` / `Cause`: a literal string or an expression.
    fn jsonata_fail_field(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
    ) -> Option<Option<FailField>> {
        self.literal_or_expression(obj, key, reads, FailField::Expression, |this, _| {
            this.string(obj, key).map(FailField::Literal)
        })
    }

    fn jsonata_parallel(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        depth: usize,
        flow: &mut JsonataFlow,
        reads: &mut Reads,
    ) -> Option<ParallelState> {
        let branches = self.branches(obj, depth);
        let arguments = self.jsonata_template(obj, "Arguments", reads);
        let retry = self.retriers(obj);
        let catch = self.jsonata_catchers(obj, node, reads);
        let next = self.transition(obj, node);
        let parallel = ParallelState {
            branches: branches?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.arguments = arguments?;
        Some(parallel)
    }

    /// `MaxConcurrency` / `ToleratedFailureCount` (and an `ItemBatcher`'s counts): a literal
    /// or an expression.
    pub(super) fn jsonata_count(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        reads: &mut Reads,
    ) -> Option<Option<CountField>> {
        self.literal_or_expression(obj, key, reads, CountField::Expression, |this, _| {
            this.uint(obj, key, 0, u64::from(u32::MAX))
                .map(CountField::Literal)
        })
    }

    fn jsonata_map(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        depth: usize,
        flow: &mut JsonataFlow,
        reads: &mut Reads,
    ) -> Option<MapState> {
        let item_processor = self.item_processor(obj, depth, Some(&mut *reads));
        let items = match obj.get("Items") {
            Some(Value::Array(_)) | Some(Value::String(_)) => {
                let items = self.jsonata_template(obj, "Items", reads);
                if let Some(Some(JsonataTemplate::Literal(Value::String(_)))) = items {
                    self.schema(
                        &obj.ptr("Items"),
                        "'Items' must be an array or a {% %} expression",
                    );
                    None
                } else {
                    items
                }
            }
            None => Some(None),
            Some(other) => {
                self.schema(
                    &obj.ptr("Items"),
                    format!(
                        "'Items' must be an array or a {{% %}} expression, not {}",
                        type_name_of(other)
                    ),
                );
                None
            }
        };
        let item_selector = self.jsonata_template(obj, "ItemSelector", reads);
        let max_concurrency = self.jsonata_count(obj, "MaxConcurrency", reads);
        let tolerated_failure_count = self.jsonata_count(obj, "ToleratedFailureCount", reads);
        let tolerated_failure_percentage = self.literal_or_expression(
            obj,
            "ToleratedFailurePercentage",
            reads,
            PercentageField::Expression,
            |this, v| match v.as_f64() {
                Some(p) if (0.0..=100.0).contains(&p) => Some(PercentageField::Literal(p)),
                _ => {
                    this.schema(
                        &obj.ptr("ToleratedFailurePercentage"),
                        format!(
                            "'ToleratedFailurePercentage' must be a number from 0 to 100, not {v}"
                        ),
                    );
                    None
                }
            },
        );
        let retry = self.retriers(obj);
        let catch = self.jsonata_catchers(obj, node, reads);
        let next = self.transition(obj, node);
        let (item_processor, distributed) = item_processor?;
        let map = MapState {
            item_processor,
            distributed,
            max_concurrency: max_concurrency?,
            tolerated_failure_count: tolerated_failure_count?,
            tolerated_failure_percentage: tolerated_failure_percentage?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.items = items?;
        flow.item_selector = item_selector?;
        Some(map)
    }
}
