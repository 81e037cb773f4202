//! data_flow: how one state turns its input into its output, behind one type per query
//! language.
//!
//! Owns [`DataFlow`] (held once per [`State`](super::State)) and [`CatchFlow`] (held once per
//! [`Catcher`](super::Catcher)), and the steps the interpreter asks of them. The interpreter
//! never reads a JSONPath field: it calls these methods, in this order for one state run:
//!
//! ```text
//! raw input -> effective_input -> parameters (Task, Parallel) | pass_result (Pass)
//!           | items, item_input (Map) -> ... the state's work ... -> result_output
//! raw input -> effective_input -> output                       (Choice, Wait, Succeed)
//! raw input + error output -> CatchFlow::output                (a Catcher that matched)
//! value, raw input (+ result) -> assign_input -> Assign::evaluate  (Catcher: CatchFlow's)
//! ```
//!
//! Every step that may evaluate takes the step's [`Env`], whose `variables` are the values as
//! of the state's entry: that is how both languages read variables.
//!
//! A second query language (JSONata: `Arguments`, `Output`, `Assign`, `Items`) is a new
//! variant of [`DataFlow`] and [`CatchFlow`], its parse, and its arm in each method below;
//! nothing in `interpreter::decide` or `interpreter::states` changes for its data flow.
//!
//! Invariants: every path and template here was compiled by `asl::parse`; a field the state's
//! type does not allow is `None` (the parser refuses it); failures are `StatesError`s worded as
//! AWS words them, without the per-state prefix (the interpreter adds it).
//! Must not: parse text, read a clock, draw randomness of its own (templates take the caller's
//! [`Entropy`]), or copy a value when a step has nothing to do (absent fields borrow or move
//! what they are given).

use std::borrow::Cow;

use serde_json::{json, Value};

use super::assign::AssignInput;
use super::jsonata::{DecisionHost, JsonataRuntime, JsonataTemplate, States};
use crate::paths::{
    pipeline, Entropy, InputOutputPath, Path, ResultPathField, StatesError, Template, Variables,
};

/// The data-flow fields of one state, in the state's query language.
// The JSONPath flow stays inline (not boxed): it is the hot path, read on every step.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DataFlow {
    /// `QueryLanguage: JSONPath` (the default).
    JsonPath(JsonPathFlow),
    /// `QueryLanguage: JSONata`.
    Jsonata(JsonataFlow),
}

/// What a step may need beyond its values: the decision's entropy (templates, `$random`),
/// its time (`$now`), the variables in scope and the machine's JSONata evaluator.
pub struct Env<'a> {
    /// The decision's time, in ms since the epoch.
    pub now_ms: u64,
    /// The decision's entropy.
    pub entropy: &'a mut dyn Entropy,
    /// The variables the state reads (as of its entry).
    pub variables: &'a Variables,
    /// The evaluator the machine was compiled with (`None` for a JSONPath-only machine).
    pub jsonata: Option<&'a JsonataRuntime>,
}

/// A JSONata state's data-flow fields. Each is `None` when absent and always `None` on a
/// state type that does not allow it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonataFlow {
    /// `Arguments` (Task, Parallel); `None` means the input.
    pub arguments: Option<JsonataTemplate>,
    /// `Output` (every type but Fail); `None`: a Task's, Parallel's or Map's result, else the
    /// input.
    pub output: Option<JsonataTemplate>,
    /// A Map's `Items`; `None` means the input.
    pub items: Option<JsonataTemplate>,
    /// A Map's `ItemSelector`.
    pub item_selector: Option<JsonataTemplate>,
    /// The variables (`$name`, not `$states`) any expression of the state reads, bound from
    /// the variables in scope.
    pub variables: Vec<String>,
    /// Whether an expression of the state may read `$states.context`.
    pub reads_context: bool,
    /// The paths below `$states` the state's expressions read, merged (`None`: all of it,
    /// also the default).
    pub states_paths: Option<Vec<Vec<String>>>,
}

/// A JSONPath state's data-flow fields. Each is `None` when absent (its ASL default) and
/// always `None` on a state type that does not allow it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonPathFlow {
    /// `InputPath` (every type but Fail); `None` means `$`.
    pub input_path: Option<InputOutputPath>,
    /// `Parameters` (Pass, Task, Parallel; a Map's legacy `Parameters` is `item_selector`).
    pub parameters: Option<Template>,
    /// A Pass state's `Result`: its fixed result, used as is (no `.$` processing).
    pub result: Option<Value>,
    /// `ResultSelector` (Task, Parallel, Map).
    pub result_selector: Option<Template>,
    /// `ResultPath` (Pass, Task, Parallel, Map); `None` means `$`.
    pub result_path: Option<ResultPathField>,
    /// `OutputPath` (every type but Fail); `None` means `$`.
    pub output_path: Option<InputOutputPath>,
    /// A Map's `ItemsPath`; `None` means `$`.
    pub items_path: Option<Path>,
    /// A Map's `ItemSelector` (or its legacy `Parameters`).
    pub item_selector: Option<Template>,
}

/// What a Catcher does with the error output before its `Next` state gets it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CatchFlow {
    /// A JSONPath Catcher: only `ResultPath`.
    JsonPath {
        /// `ResultPath`; `None` means `$` (the error output replaces the input).
        result_path: Option<ResultPathField>,
    },
    /// A JSONata Catcher: `Output` (evaluated with `$states.errorOutput`).
    Jsonata {
        /// `Output`; `None` means the error output.
        output: Option<JsonataTemplate>,
        /// The variables its expressions read.
        variables: Vec<String>,
        /// Whether it may read `$states.context`.
        reads_context: bool,
        /// The paths below `$states` its expressions read (`None`: all of it).
        states_paths: Option<Vec<Vec<String>>>,
    },
}

impl Default for DataFlow {
    /// A JSONPath state with no data-flow field: its output is its input.
    fn default() -> Self {
        DataFlow::JsonPath(JsonPathFlow::default())
    }
}

impl Default for CatchFlow {
    /// A JSONPath Catcher without `ResultPath`.
    fn default() -> Self {
        CatchFlow::JsonPath { result_path: None }
    }
}

impl DataFlow {
    /// The JSONPath fields, when the state is written in JSONPath.
    #[inline]
    pub fn as_json_path(&self) -> Option<&JsonPathFlow> {
        match self {
            DataFlow::JsonPath(flow) => Some(flow),
            DataFlow::Jsonata(_) => None,
        }
    }

    /// The JSONata fields, when the state is written in JSONata.
    #[inline]
    pub fn as_jsonata(&self) -> Option<&JsonataFlow> {
        match self {
            DataFlow::JsonPath(_) => None,
            DataFlow::Jsonata(flow) => Some(flow),
        }
    }

    /// True when the state's output is its raw input unchanged, whatever the input: no step
    /// can fail or change it, so the caller may share the input instead of copying it.
    /// (JSONPath: no InputPath, OutputPath or Parameters, and either ResultPath `null` or
    /// neither ResultPath nor Result. JSONata: no Output and no Arguments.)
    #[inline]
    pub fn is_passthrough(&self) -> bool {
        match self {
            DataFlow::JsonPath(flow) => flow.is_passthrough(),
            DataFlow::Jsonata(flow) => flow.output.is_none() && flow.arguments.is_none(),
        }
    }

    /// True when a step may read the Context object (`$$`, `$states.context`). Conservative:
    /// building it costs allocations on every step, so a state whose data flow cannot read it
    /// skips it.
    #[inline]
    pub fn mentions_context(&self) -> bool {
        match self {
            DataFlow::JsonPath(flow) => flow.mentions_context(),
            DataFlow::Jsonata(flow) => flow.reads_context,
        }
    }

    /// The effective input (JSONPath: `InputPath`), borrowing from `raw_input` or `context`
    /// where it can: with nothing to select, `raw_input` itself, not copied. (JSONata: the
    /// raw input.)
    #[inline]
    pub fn effective_input<'a>(
        &self,
        raw_input: &'a Value,
        context: &'a Value,
        variables: &'a Variables,
    ) -> Result<Cow<'a, Value>, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.input_path {
                None => Ok(Cow::Borrowed(raw_input)),
                Some(path) => pipeline::process_input_cow_in(raw_input, path, context, variables),
            },
            DataFlow::Jsonata(_) => Ok(Cow::Borrowed(raw_input)),
        }
    }

    /// What a Task sends its resource and a Parallel gives its branches (JSONPath:
    /// `Parameters`; JSONata: `Arguments`); without one, the effective input (copied only
    /// when borrowed).
    pub fn parameters(
        &self,
        effective: Cow<'_, Value>,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.parameters {
                None => Ok(effective.into_owned()),
                Some(template) => {
                    template.evaluate_in(&effective, context, env.variables, env.entropy)
                }
            },
            DataFlow::Jsonata(flow) => match &flow.arguments {
                None => Ok(effective.into_owned()),
                Some(template) => {
                    let states = flow.states(&effective, None, context);
                    evaluate(template, "Arguments", &states, &flow.variables, env)
                }
            },
        }
    }

    /// A Pass state's result, before [`DataFlow::result_output`]: its `Result`, else its
    /// `Parameters`, else the effective input (not copied when `ResultPath` is `null`, which
    /// discards it). (JSONata: the input, which `Output` reads as `$states.result` and which
    /// is the output when there is no `Output`; a placeholder, not a copy, when an `Output`
    /// is there and no expression of the state may read `$states.result`. A JSONata Pass's
    /// `Assign` sees no `$states.result`.)
    pub fn pass_result(
        &self,
        effective: Cow<'_, Value>,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match (&flow.result, &flow.parameters) {
                (Some(result), _) => Ok(result.clone()),
                (None, Some(template)) => {
                    template.evaluate_in(&effective, context, env.variables, env.entropy)
                }
                (None, None) if matches!(flow.result_path, Some(ResultPathField::Discard)) => {
                    Ok(Value::Null)
                }
                (None, None) => Ok(effective.into_owned()),
            },
            // `Output` replaces the result and does not read it: nothing will.
            DataFlow::Jsonata(flow) if flow.output.is_some() && !flow.may_read_result() => {
                Ok(Value::Null)
            }
            DataFlow::Jsonata(_) => Ok(effective.into_owned()),
        }
    }

    /// True when [`DataFlow::pass_result`] gives a placeholder instead of the Pass's result,
    /// because `ResultPath: null` discards it (JSONPath: no `Result`, no `Parameters`): a
    /// caller that reads the result anyway (its `Assign`) takes the effective input instead.
    /// (JSONata: never; its Pass result is the input.)
    pub fn pass_result_is_discarded(&self) -> bool {
        match self {
            DataFlow::JsonPath(flow) => {
                flow.result.is_none()
                    && flow.parameters.is_none()
                    && matches!(flow.result_path, Some(ResultPathField::Discard))
            }
            DataFlow::Jsonata(_) => false,
        }
    }

    /// The result as the state keeps it (JSONPath: `ResultSelector`; JSONata: the result).
    #[inline]
    pub fn select_result(
        &self,
        result: Value,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.result_selector {
                None => Ok(result),
                Some(template) => {
                    template.evaluate_in(&result, context, env.variables, env.entropy)
                }
            },
            DataFlow::Jsonata(_) => Ok(result),
        }
    }

    /// The selected result placed into the **raw** input (JSONPath: `ResultPath`; absent or
    /// `$`: the result replaces the input; `null`: the raw input passes on). (JSONata: the
    /// result.)
    #[inline]
    pub fn place_result(&self, raw_input: &Value, result: Value) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => result_path(flow.result_path.as_ref(), raw_input, result),
            DataFlow::Jsonata(_) => Ok(result),
        }
    }

    /// The output of a state without a result (Choice, Wait, Succeed) from its effective
    /// input (JSONPath: `OutputPath`; with nothing to select, `value` itself, not copied;
    /// JSONata: `Output`, with `$states.input` the input).
    #[inline]
    pub fn output(
        &self,
        value: Value,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.output_path {
                None => Ok(value),
                Some(path) => pipeline::process_output_in(value, path, context, env.variables),
            },
            DataFlow::Jsonata(flow) => match &flow.output {
                None => Ok(value),
                Some(template) => {
                    let states = flow.states(&value, None, context);
                    evaluate(template, "Output", &states, &flow.variables, env)
                }
            },
        }
    }

    /// The state's output from its raw input and its result (a Task's answer, a Parallel's or
    /// Map's collected outputs, a Pass's [`DataFlow::pass_result`]). JSONPath:
    /// `ResultSelector`, then [`place_result`](DataFlow::place_result), then `OutputPath`.
    /// JSONata: `Output` with `$states.input` and `$states.result`; without one, the result.
    pub fn result_output(
        &self,
        raw_input: &Value,
        result: Value,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        let selected = self.select_result(result, context, env)?;
        self.selected_output(raw_input, selected, context, env)
    }

    /// [`DataFlow::result_output`] after [`DataFlow::select_result`]: JSONPath:
    /// [`place_result`](DataFlow::place_result), then `OutputPath`; JSONata: `Output` with
    /// `$states.input` and `$states.result`, without one the result.
    pub fn selected_output(
        &self,
        raw_input: &Value,
        result: Value,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(_) => {
                let placed = self.place_result(raw_input, result)?;
                self.output(placed, context, env)
            }
            DataFlow::Jsonata(flow) => match &flow.output {
                None => Ok(result),
                Some(template) => {
                    let states = flow.states(raw_input, Some(&result), context);
                    evaluate(template, "Output", &states, &flow.variables, env)
                }
            },
        }
    }

    /// A Map's items from its effective input (JSONPath: `ItemsPath`, which must find
    /// something; JSONata: `Items`, which must be an array), borrowed where they can be; the
    /// caller checks that they are an array.
    pub fn items<'a>(
        &self,
        effective: &'a Value,
        context: &'a Value,
        env: &mut Env<'_>,
    ) -> Result<Cow<'a, Value>, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.items_path {
                None => Ok(Cow::Borrowed(effective)),
                // A path that reads a variable (its root, or a filter's operand) is evaluated
                // with the variables in scope, and its items are copied out (the variables
                // outlive this step, but not as long as the effective input).
                Some(path) if path.reads_variables() => pipeline::process_input_cow_in(
                    effective,
                    &InputOutputPath::Select(path.clone()),
                    context,
                    env.variables,
                )
                .map(|items| Cow::Owned(items.into_owned())),
                Some(path) => pipeline::process_input_cow(
                    effective,
                    &InputOutputPath::Select(path.clone()),
                    context,
                ),
            },
            DataFlow::Jsonata(flow) => match &flow.items {
                None => Ok(Cow::Borrowed(effective)),
                Some(template) => {
                    let states = flow.states(effective, None, context);
                    let items = evaluate(template, "Items", &states, &flow.variables, env)?;
                    match (template.as_expression(), &items) {
                        (_, Value::Array(_)) => Ok(Cow::Owned(items)),
                        (Some(expression), other) => {
                            Err(expression.wrong_type("Items", "array", other))
                        }
                        (None, other) => Err(StatesError::new(
                            super::jsonata::QUERY_EVALUATION_ERROR,
                            format!(
                                "The field 'Items' must be an array, not {}",
                                super::jsonata::json_type(other)
                            ),
                        )),
                    }
                }
            },
        }
    }

    /// The input of a Map's iteration `index` over `item` (JSONPath: `ItemSelector`,
    /// evaluated on the Map's effective input with `$$.Map.Item.Index` and `$$.Map.Item.Value`
    /// in the Context object; JSONata: `ItemSelector` with the same in
    /// `$states.context.Map.Item`); without one, the item itself.
    pub fn item_input(
        &self,
        effective: &Value,
        item: Value,
        index: usize,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            DataFlow::JsonPath(flow) => match &flow.item_selector {
                None => Ok(item),
                Some(selector) => {
                    let mut context = context.clone();
                    context["Map"] = json!({"Item": {"Index": index, "Value": item}});
                    selector.evaluate_in(effective, &context, env.variables, env.entropy)
                }
            },
            DataFlow::Jsonata(flow) => match &flow.item_selector {
                None => Ok(item),
                Some(selector) => {
                    let mut context = context.clone();
                    if context.is_object() {
                        context["Map"] = json!({"Item": {"Index": index, "Value": item}});
                    } else {
                        context = json!({"Map": {"Item": {"Index": index, "Value": item}}});
                    }
                    let states = States {
                        input: effective,
                        result: None,
                        error_output: None,
                        context: Some(&context),
                        paths: flow.states_paths.as_deref(),
                    };
                    evaluate(selector, "ItemSelector", &states, &flow.variables, env)
                }
            },
        }
    }
}

impl DataFlow {
    /// What the state's `Assign` is evaluated on: JSONPath's `$` is `value` (the selected
    /// result, the Pass's result or the effective input); JSONata's `$states` is the raw
    /// input with `result` (after a Task's, Parallel's or Map's success), bound as the
    /// state's other expressions are.
    pub fn assign_input<'a>(
        &'a self,
        value: &'a Value,
        raw_input: &'a Value,
        result: Option<&'a Value>,
        context: &'a Value,
    ) -> AssignInput<'a> {
        match self {
            DataFlow::JsonPath(_) => AssignInput {
                value,
                states: States {
                    input: raw_input,
                    result: None,
                    error_output: None,
                    context: None,
                    paths: None,
                },
                reads: &[],
            },
            DataFlow::Jsonata(flow) => AssignInput {
                value,
                states: flow.states(raw_input, result, context),
                reads: &flow.variables,
            },
        }
    }
}

impl JsonataFlow {
    /// Whether an expression of the state may read `$states.result`: conservatively, unless
    /// every path below `$states` the expressions read starts at `input`, `context` or
    /// `errorOutput` (no known paths: it may).
    fn may_read_result(&self) -> bool {
        match &self.states_paths {
            None => true,
            Some(paths) => !paths.iter().all(|path| {
                path.first().is_some_and(|field| {
                    matches!(field.as_str(), "input" | "context" | "errorOutput")
                })
            }),
        }
    }

    /// `$states` for one step: the context only where an expression may read it.
    fn states<'a>(
        &'a self,
        input: &'a Value,
        result: Option<&'a Value>,
        context: &'a Value,
    ) -> States<'a> {
        States {
            input,
            result,
            error_output: None,
            context: self.reads_context.then_some(context),
            paths: self.states_paths.as_deref(),
        }
    }
}

/// Binds `$states` and the variables named once, then evaluates `template` for `field`.
pub fn evaluate(
    template: &JsonataTemplate,
    field: &str,
    states: &States<'_>,
    variables: &[String],
    env: &mut Env<'_>,
) -> Result<Value, StatesError> {
    if let JsonataTemplate::Literal(value) = template {
        return Ok(value.clone());
    }
    let bound = bind(states, variables, env)?;
    let mut host = DecisionHost {
        now_ms: env.now_ms,
        entropy: &mut *env.entropy,
    };
    template.evaluate(field, &*bound, &mut host)
}

/// [`evaluate`] for one expression.
pub fn evaluate_expression(
    expression: &super::jsonata::Expression,
    field: &str,
    states: &States<'_>,
    variables: &[String],
    env: &mut Env<'_>,
) -> Result<Value, StatesError> {
    // A path or a comparison is read straight from the values, nothing converted.
    let values = read_variables(variables, env.variables);
    if let Some(answer) = expression.evaluate_direct(&|| field.to_string(), states, &values) {
        return answer;
    }
    let bound = bind_read(states, &values, env.jsonata)?;
    let mut host = DecisionHost {
        now_ms: env.now_ms,
        entropy: &mut *env.entropy,
    };
    expression.evaluate(&|| field.to_string(), &*bound, &mut host)
}

/// The values a state step's expressions see, converted once.
pub fn bind(
    states: &States<'_>,
    variables: &[String],
    env: &Env<'_>,
) -> Result<Box<dyn super::jsonata::Bound>, StatesError> {
    bind_read(
        states,
        &read_variables(variables, env.variables),
        env.jsonata,
    )
}

/// [`bind`] of the variables' values already read ([`read_variables`]), for a caller that
/// binds lazily while its [`Env`]'s entropy is lent to a host.
pub fn bind_read(
    states: &States<'_>,
    values: &[(&str, &Value)],
    runtime: Option<&JsonataRuntime>,
) -> Result<Box<dyn super::jsonata::Bound>, StatesError> {
    let Some(runtime) = runtime else {
        return Err(StatesError::new(
            crate::asl::ERROR_RUNTIME,
            "The state machine has JSONata expressions but no JSONata evaluator was given.",
        ));
    };
    Ok(runtime.0.bind(states, values))
}

/// The values of the variables named that are set, as a state step's expressions see them.
pub fn read_variables<'e>(
    variables: &'e [String],
    values: &'e Variables,
) -> Vec<(&'e str, &'e Value)> {
    variables
        .iter()
        .filter_map(|name| values.get(name).map(|v| (name.as_str(), v)))
        .collect()
}

impl JsonPathFlow {
    #[inline]
    fn is_passthrough(&self) -> bool {
        self.input_path.is_none()
            && self.output_path.is_none()
            && self.parameters.is_none()
            && match self.result_path {
                Some(ResultPathField::Discard) => true,
                None => self.result.is_none(),
                Some(ResultPathField::Reference(_)) => false,
            }
    }

    #[inline]
    fn mentions_context(&self) -> bool {
        let io = |p: &Option<InputOutputPath>| matches!(p, Some(InputOutputPath::Select(p)) if p.is_context());
        let template = |t: &Option<Template>| t.as_ref().is_some_and(Template::mentions_context);
        io(&self.input_path)
            || io(&self.output_path)
            || template(&self.parameters)
            || template(&self.result_selector)
            || template(&self.item_selector)
            || self.items_path.as_ref().is_some_and(Path::is_context)
    }
}

impl CatchFlow {
    /// The output a matching Catcher passes to its `Next` state, from the failed state's raw
    /// input and the error output `{"Error": ..., "Cause": ...}` (JSONPath: `ResultPath`;
    /// JSONata: `Output` with `$states.errorOutput`, else the error output).
    pub fn output(
        &self,
        raw_input: &Value,
        error_output: Value,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Value, StatesError> {
        match self {
            CatchFlow::JsonPath { result_path: path } => {
                result_path(path.as_ref(), raw_input, error_output)
            }
            CatchFlow::Jsonata {
                output,
                variables,
                reads_context,
                states_paths,
            } => match output {
                None => Ok(error_output),
                Some(template) => {
                    let states = States {
                        input: raw_input,
                        result: None,
                        error_output: Some(&error_output),
                        context: reads_context.then_some(context),
                        paths: states_paths.as_deref(),
                    };
                    evaluate(template, "Output", &states, variables, env)
                }
            },
        }
    }

    /// What the Catcher's `Assign` is evaluated on: JSONPath's `$` and JSONata's
    /// `$states.errorOutput` are the error output; `$states.input` is the failed state's raw
    /// input.
    pub fn assign_input<'a>(
        &'a self,
        raw_input: &'a Value,
        error_output: &'a Value,
        context: &'a Value,
    ) -> AssignInput<'a> {
        let (reads, reads_context, paths): (&[String], bool, _) = match self {
            CatchFlow::JsonPath { .. } => (&[], false, None),
            CatchFlow::Jsonata {
                variables,
                reads_context,
                states_paths,
                ..
            } => (variables, *reads_context, states_paths.as_deref()),
        };
        AssignInput {
            value: error_output,
            states: States {
                input: raw_input,
                result: None,
                error_output: Some(error_output),
                context: reads_context.then_some(context),
                paths,
            },
            reads,
        }
    }

    /// Whether it may read the Context object.
    pub fn mentions_context(&self) -> bool {
        match self {
            CatchFlow::JsonPath { .. } => false,
            CatchFlow::Jsonata { reads_context, .. } => *reads_context,
        }
    }
}

/// `ResultPath` on `result`: absent or `$` replaces the input, `null` keeps the raw input,
/// anything else sets the result into a copy of the raw input.
fn result_path(
    field: Option<&ResultPathField>,
    raw_input: &Value,
    result: Value,
) -> Result<Value, StatesError> {
    match field {
        None => Ok(result),
        Some(ResultPathField::Discard) => Ok(raw_input.clone()),
        Some(ResultPathField::Reference(path)) if path.is_root() => Ok(result),
        Some(ResultPathField::Reference(path)) => path.set(raw_input.clone(), result),
    }
}

#[cfg(test)]
mod tests {
    //! Each step of the seam against a small hand-made JSONPath flow: what it passes on
    //! untouched, what it selects or builds, and how a miss is worded.

    use super::*;
    use crate::paths::{ReferencePath, NO_VARIABLES};
    use statelog_rng::Rng;

    fn path(text: &str) -> Path {
        Path::parse(text).expect("a valid path")
    }

    fn select(text: &str) -> Option<InputOutputPath> {
        Some(InputOutputPath::Select(path(text)))
    }

    fn reference(text: &str) -> Option<ResultPathField> {
        Some(ResultPathField::Reference(
            ReferencePath::parse(text).expect("a valid reference path"),
        ))
    }

    fn template(source: Value) -> Option<Template> {
        Some(Template::compile(&source).expect("a valid template"))
    }

    fn env(rng: &mut Rng) -> Env<'_> {
        Env {
            now_ms: 0,
            entropy: rng,
            variables: &crate::paths::NO_VARIABLES,
            jsonata: None,
        }
    }

    fn flow(fields: JsonPathFlow) -> DataFlow {
        DataFlow::JsonPath(fields)
    }

    #[test]
    fn a_state_without_data_flow_fields_is_passthrough() {
        assert!(DataFlow::default().is_passthrough());
        // ResultPath null discards whatever the result is, even a fixed Result.
        assert!(flow(JsonPathFlow {
            result: Some(json!(1)),
            result_path: Some(ResultPathField::Discard),
            ..JsonPathFlow::default()
        })
        .is_passthrough());
        let not_passthrough = [
            JsonPathFlow {
                input_path: select("$.a"),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                output_path: Some(InputOutputPath::Discard),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                parameters: template(json!({"a": 1})),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                result: Some(json!(1)),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                result_path: reference("$.r"),
                ..JsonPathFlow::default()
            },
        ];
        for fields in not_passthrough {
            let described = format!("{fields:?}");
            assert!(!flow(fields).is_passthrough(), "{described}");
        }
    }

    #[test]
    fn effective_input_borrows_without_input_path_and_words_a_miss_as_aws() {
        let raw = json!({"a": {"b": 1}});
        let context = json!({"Execution": {"Id": "arn"}});
        let plain = DataFlow::default();
        let effective = plain
            .effective_input(&raw, &context, &NO_VARIABLES)
            .expect("no path");
        assert!(matches!(effective, Cow::Borrowed(v) if std::ptr::eq(v, &raw)));

        let selected = flow(JsonPathFlow {
            input_path: select("$.a"),
            ..JsonPathFlow::default()
        });
        let effective = selected
            .effective_input(&raw, &context, &NO_VARIABLES)
            .expect("found");
        assert!(matches!(&effective, Cow::Borrowed(v) if **v == json!({"b": 1})));

        let from_context = flow(JsonPathFlow {
            input_path: select("$$.Execution.Id"),
            ..JsonPathFlow::default()
        });
        let effective = from_context
            .effective_input(&raw, &context, &NO_VARIABLES)
            .expect("found");
        assert_eq!(*effective, json!("arn"));

        let discarded = flow(JsonPathFlow {
            input_path: Some(InputOutputPath::Discard),
            ..JsonPathFlow::default()
        });
        let effective = discarded
            .effective_input(&raw, &context, &NO_VARIABLES)
            .expect("null");
        assert_eq!(*effective, json!({}));

        let missing = flow(JsonPathFlow {
            input_path: select("$.x"),
            ..JsonPathFlow::default()
        });
        let error = missing
            .effective_input(&raw, &context, &NO_VARIABLES)
            .expect_err("a miss");
        assert_eq!(error.error, "States.Runtime");
        assert_eq!(
            error.cause,
            "Invalid path '$.x' : No results for path: $['x']"
        );
    }

    #[test]
    fn parameters_build_the_task_input_or_pass_the_effective_input_on() {
        let effective = json!({"a": 1});
        let context = json!({"Execution": {"Id": "arn"}});
        let mut rng = Rng::new(1);
        let plain = DataFlow::default();
        let input = plain
            .parameters(Cow::Borrowed(&effective), &context, &mut env(&mut rng))
            .expect("no template");
        assert_eq!(input, effective);
        let templated = flow(JsonPathFlow {
            parameters: template(json!({"v.$": "$.a", "id.$": "$$.Execution.Id", "k": "x"})),
            ..JsonPathFlow::default()
        });
        let input = templated
            .parameters(Cow::Owned(effective), &context, &mut env(&mut rng))
            .expect("evaluates");
        assert_eq!(input, json!({"v": 1, "id": "arn", "k": "x"}));
    }

    #[test]
    fn a_jsonata_pass_copies_its_input_as_result_only_where_something_may_read_it() {
        let effective = json!({"a": 1});
        let context = Value::Null;
        let mut rng = Rng::new(3);
        let jsonata = |output: Option<Value>, states_paths: Option<Vec<Vec<&str>>>| {
            DataFlow::Jsonata(JsonataFlow {
                output: output.map(JsonataTemplate::Literal),
                states_paths: states_paths.map(|paths| {
                    paths
                        .into_iter()
                        .map(|path| path.into_iter().map(str::to_string).collect())
                        .collect()
                }),
                ..JsonataFlow::default()
            })
        };
        let cases = [
            // No Output: the result is the output.
            (jsonata(None, Some(vec![])), effective.clone()),
            // An Output that may read `$states.result` (listed, or paths unknown).
            (
                jsonata(
                    Some(json!(0)),
                    Some(vec![vec!["input"], vec!["result", "a"]]),
                ),
                effective.clone(),
            ),
            (jsonata(Some(json!(0)), None), effective.clone()),
            (
                jsonata(Some(json!(0)), Some(vec![vec![]])),
                effective.clone(),
            ),
            // Nothing reads it: a placeholder, not a copy.
            (
                jsonata(
                    Some(json!(0)),
                    Some(vec![
                        vec!["input", "a"],
                        vec!["context"],
                        vec!["errorOutput"],
                    ]),
                ),
                Value::Null,
            ),
        ];
        for (flow, expected) in cases {
            let result = flow
                .pass_result(Cow::Borrowed(&effective), &context, &mut env(&mut rng))
                .expect("no evaluation");
            assert_eq!(result, expected, "{flow:?}");
            assert!(!flow.pass_result_is_discarded());
        }
    }

    #[test]
    fn pass_result_prefers_result_then_parameters_then_the_effective_input() {
        let effective = json!({"a": 1});
        let context = Value::Null;
        let mut rng = Rng::new(2);
        let both = flow(JsonPathFlow {
            result: Some(json!({"fixed.$": "$.not.evaluated"})),
            parameters: template(json!({"v.$": "$.a"})),
            ..JsonPathFlow::default()
        });
        let result = both.pass_result(Cow::Borrowed(&effective), &context, &mut env(&mut rng));
        assert_eq!(
            result.expect("fixed"),
            json!({"fixed.$": "$.not.evaluated"})
        );
        let parameters = flow(JsonPathFlow {
            parameters: template(json!({"v.$": "$.a"})),
            ..JsonPathFlow::default()
        });
        let result =
            parameters.pass_result(Cow::Borrowed(&effective), &context, &mut env(&mut rng));
        assert_eq!(result.expect("evaluates"), json!({"v": 1}));
        let discarded = flow(JsonPathFlow {
            result_path: Some(ResultPathField::Discard),
            ..JsonPathFlow::default()
        });
        let result = discarded.pass_result(Cow::Borrowed(&effective), &context, &mut env(&mut rng));
        assert_eq!(result.expect("discarded"), Value::Null);
        let plain = DataFlow::default();
        let result = plain.pass_result(Cow::Borrowed(&effective), &context, &mut env(&mut rng));
        assert_eq!(result.expect("the input"), effective);
    }

    #[test]
    fn result_output_selects_places_into_the_raw_input_and_selects_the_output() {
        let raw = json!({"keep": true});
        let context = Value::Null;
        let mut rng = Rng::new(3);
        let full = flow(JsonPathFlow {
            result_selector: template(json!({"p.$": "$.Payload"})),
            result_path: reference("$.r"),
            output_path: select("$.r"),
            ..JsonPathFlow::default()
        });
        let output = full.result_output(
            &raw,
            json!({"Payload": 7, "Other": 0}),
            &context,
            &mut env(&mut rng),
        );
        assert_eq!(output.expect("placed"), json!({"p": 7}));

        let placed_only = flow(JsonPathFlow {
            result_path: reference("$.r"),
            ..JsonPathFlow::default()
        });
        let output = placed_only.result_output(&raw, json!(5), &context, &mut env(&mut rng));
        assert_eq!(output.expect("placed"), json!({"keep": true, "r": 5}));

        let plain = DataFlow::default();
        assert_eq!(
            plain.place_result(&raw, json!(5)).expect("replaces"),
            json!(5)
        );
        let discarded = flow(JsonPathFlow {
            result_path: Some(ResultPathField::Discard),
            ..JsonPathFlow::default()
        });
        assert_eq!(discarded.place_result(&raw, json!(5)).expect("kept"), raw);

        let missing = flow(JsonPathFlow {
            output_path: select("$.x"),
            ..JsonPathFlow::default()
        });
        let error = missing
            .output(json!({"a": 1}), &context, &mut env(&mut Rng::new(5)))
            .expect_err("a miss");
        assert_eq!(error.error, "States.Runtime");
        assert_eq!(
            error.cause,
            "Invalid path '$.x' : No results for path: $['x']"
        );
    }

    #[test]
    fn items_and_item_input_of_a_map() {
        let effective = json!({"list": [10, 20], "shared": "s"});
        let context = json!({"Execution": {"Id": "arn"}});
        let mut rng = Rng::new(4);
        let plain = DataFlow::default();
        let items = plain
            .items(&effective, &context, &mut env(&mut rng))
            .expect("all");
        assert!(matches!(items, Cow::Borrowed(v) if std::ptr::eq(v, &effective)));
        assert_eq!(
            plain
                .item_input(&effective, json!(20), 1, &context, &mut env(&mut rng))
                .expect("the item"),
            json!(20)
        );

        let map = flow(JsonPathFlow {
            items_path: Some(path("$.list")),
            item_selector: template(json!({
                "index.$": "$$.Map.Item.Index",
                "value.$": "$$.Map.Item.Value",
                "shared.$": "$.shared",
                "id.$": "$$.Execution.Id",
            })),
            ..JsonPathFlow::default()
        });
        assert_eq!(
            *map.items(&effective, &context, &mut env(&mut rng))
                .expect("found"),
            json!([10, 20])
        );
        let input = map.item_input(&effective, json!(20), 1, &context, &mut env(&mut rng));
        assert_eq!(
            input.expect("evaluates"),
            json!({"index": 1, "value": 20, "shared": "s", "id": "arn"})
        );

        let missing = flow(JsonPathFlow {
            items_path: Some(path("$.nothing")),
            ..JsonPathFlow::default()
        });
        let error = missing
            .items(&effective, &context, &mut env(&mut rng))
            .expect_err("a miss");
        assert_eq!(error.error, "States.Runtime");
        assert_eq!(
            error.cause,
            "Invalid path '$.nothing' : No results for path: $['nothing']"
        );
    }

    #[test]
    fn mentions_context_sees_every_field_that_can_read_it() {
        assert!(!DataFlow::default().mentions_context());
        let plain_fields = flow(JsonPathFlow {
            input_path: select("$.a"),
            parameters: template(json!({"a.$": "$.a"})),
            result_path: reference("$.r"),
            ..JsonPathFlow::default()
        });
        assert!(!plain_fields.mentions_context());
        let reading = [
            JsonPathFlow {
                input_path: select("$$.Execution.Id"),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                output_path: select("$$.State.Name"),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                parameters: template(json!({"t.$": "$$.Task.Token"})),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                result_selector: template(json!({"n.$": "$$.State.Name"})),
                ..JsonPathFlow::default()
            },
            JsonPathFlow {
                item_selector: template(json!({"i.$": "$$.Map.Item.Index"})),
                ..JsonPathFlow::default()
            },
        ];
        for fields in reading {
            let described = format!("{fields:?}");
            assert!(flow(fields).mentions_context(), "{described}");
        }
    }

    #[test]
    fn a_catcher_places_the_error_output_by_its_result_path() {
        let raw = json!({"keep": true});
        let error = json!({"Error": "E", "Cause": "c"});
        let mut rng = Rng::new(6);
        let plain = CatchFlow::default();
        assert_eq!(
            plain
                .output(&raw, error.clone(), &Value::Null, &mut env(&mut rng))
                .expect("replaces"),
            error
        );
        let placed = CatchFlow::JsonPath {
            result_path: reference("$.error"),
        };
        assert_eq!(
            placed
                .output(&raw, error.clone(), &Value::Null, &mut env(&mut rng))
                .expect("placed"),
            json!({"keep": true, "error": {"Error": "E", "Cause": "c"}})
        );
        let discarded = CatchFlow::JsonPath {
            result_path: Some(ResultPathField::Discard),
        };
        assert_eq!(
            discarded
                .output(&raw, error, &Value::Null, &mut env(&mut rng))
                .expect("kept"),
            raw
        );
    }
}
