//! references: which workflow variables each state of a machine reads, as
//! DescribeStateMachine's `variableReferences` shows them.
//!
//! Owns [`StateMachine::variable_references`]: every state at any depth (Parallel branches and
//! Map processors included, by their own names), and the names its paths, templates,
//! intrinsic arguments, Choice rules, `...Path` fields, `Assign`s and Catchers' `Assign`s read.
//! A state's data flow answers for itself ([`DataFlow::variable_references`]), so a second
//! query language adds its own (JSONata's free variables) in its arm there.
//!
//! Must not: evaluate anything or look at an execution.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{
    Catcher, Condition, CountField, FailField, Operand, PercentageField, SecondsField, State,
    StateKind, StateMachine, StateMap, TaskListField, Test, WaitFor,
};
use super::DataFlow;
use crate::paths::Path;

impl StateMachine {
    /// The variables each state reads, by state name, each list sorted and without repeats;
    /// states that read none are left out (AWS leaves the field out when no state reads any).
    pub fn variable_references(&self) -> BTreeMap<String, Vec<String>> {
        let mut by_state: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        collect_states(&self.states, &mut by_state);
        by_state
            .into_iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(state, names)| (state, names.into_iter().collect()))
            .collect()
    }
}

fn collect_states(states: &StateMap, by_state: &mut BTreeMap<String, BTreeSet<String>>) {
    for state in states {
        let mut names = BTreeSet::new();
        state_references(state, &mut names);
        by_state
            .entry(state.name.clone())
            .or_default()
            .extend(names);
        match &state.kind {
            StateKind::Parallel(parallel) => {
                for branch in &parallel.branches {
                    collect_states(&branch.states, by_state);
                }
            }
            StateKind::Map(map) => collect_states(&map.item_processor.states, by_state),
            StateKind::Pass(_)
            | StateKind::Task(_)
            | StateKind::Choice(_)
            | StateKind::Wait(_)
            | StateKind::Succeed
            | StateKind::Fail(_) => {}
        }
    }
}

/// The names `state`'s own fields read (not its branches' or processor's states).
fn state_references(state: &State, names: &mut BTreeSet<String>) {
    state.data_flow.variable_references(names);
    if let Some(assign) = &state.assign {
        names.extend(assign.variable_references());
    }
    let seconds = |field: &Option<SecondsField>, names: &mut BTreeSet<String>| {
        if let Some(SecondsField::Path(path)) = field {
            add_path(path, names);
        }
    };
    match &state.kind {
        StateKind::Pass(_) | StateKind::Succeed => {}
        StateKind::Task(task) => {
            seconds(&task.timeout, names);
            seconds(&task.heartbeat, names);
            if let Some(TaskListField::Path(path)) = &task.task_list {
                add_path(path, names);
            }
            catchers(&task.catch, names);
        }
        StateKind::Choice(choice) => {
            for rule in &choice.choices {
                condition(&rule.condition, names);
                if let Some(assign) = &rule.assign {
                    names.extend(assign.variable_references());
                }
            }
        }
        StateKind::Wait(wait) => match &wait.wait {
            WaitFor::SecondsPath(path) | WaitFor::TimestampPath(path) => add_path(path, names),
            // A JSONata expression's free variables are in the state's data flow.
            WaitFor::Seconds(_)
            | WaitFor::Timestamp(_)
            | WaitFor::SecondsExpression(_)
            | WaitFor::TimestampExpression(_) => {}
        },
        StateKind::Fail(fail) => {
            for field in [&fail.error, &fail.cause].into_iter().flatten() {
                if let FailField::Dynamic { expression, .. } = field {
                    names.extend(expression.variable_references());
                }
            }
        }
        StateKind::Parallel(parallel) => catchers(&parallel.catch, names),
        StateKind::Map(map) => {
            for field in [&map.max_concurrency, &map.tolerated_failure_count]
                .into_iter()
                .flatten()
            {
                if let CountField::Path(path) = field {
                    add_path(path, names);
                }
            }
            if let Some(PercentageField::Path(path)) = &map.tolerated_failure_percentage {
                add_path(path, names);
            }
            catchers(&map.catch, names);
        }
    }
}

fn catchers(catchers: &[Catcher], names: &mut BTreeSet<String>) {
    for catcher in catchers {
        if let super::CatchFlow::Jsonata { variables, .. } = &catcher.flow {
            names.extend(variables.iter().cloned());
        }
        if let Some(assign) = &catcher.assign {
            names.extend(assign.variable_references());
        }
    }
}

/// Choice rules nest at most `DEFINITION_JSON_DEPTH_MAX` deep (the parser's bound).
fn condition(condition_: &Condition, names: &mut BTreeSet<String>) {
    match condition_ {
        Condition::And(all) | Condition::Or(all) => {
            all.iter().for_each(|inner| condition(inner, names))
        }
        Condition::Not(inner) => condition(inner, names),
        // Its free variables are in the JSONata state's data flow.
        Condition::Jsonata(_) => {}
        Condition::Test { variable, test } => {
            add_path(variable, names);
            if let Test::Compare {
                operand: Operand::Path(path),
                ..
            } = test
            {
                add_path(path, names);
            }
        }
    }
}

/// The variables `path` reads: the one it starts from and those its filters compare with.
pub(crate) fn add_path(path: &Path, names: &mut BTreeSet<String>) {
    names.extend(path.variables().iter().cloned());
}

impl DataFlow {
    /// Adds the variables the state's data-flow fields read to `names` (JSONPath: `$name` in
    /// InputPath, OutputPath, ItemsPath and the templates).
    pub fn variable_references(&self, names: &mut BTreeSet<String>) {
        match self {
            DataFlow::JsonPath(flow) => {
                for path in [&flow.input_path, &flow.output_path].into_iter().flatten() {
                    if let crate::paths::InputOutputPath::Select(path) = path {
                        add_path(path, names);
                    }
                }
                if let Some(path) = &flow.items_path {
                    add_path(path, names);
                }
                for template in [&flow.parameters, &flow.result_selector, &flow.item_selector]
                    .into_iter()
                    .flatten()
                {
                    names.extend(template.variable_references());
                }
            }
            // Every expression of the state (Output, Arguments, Items, Conditions, numeric
            // fields, Assign): their free variables, without `states`.
            DataFlow::Jsonata(flow) => names.extend(flow.variables.iter().cloned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::asl::{parse_definition, ValidationOptions};

    #[test]
    fn every_state_at_any_depth_lists_what_it_reads_sorted_once() {
        let definition = json!({
            "StartAt": "Set",
            "States": {
                "Set": {"Type": "Pass", "Assign": {"a": 1, "b": 2, "c.$": "$.x"}, "Next": "C"},
                "C": {"Type": "Choice", "Choices": [{"Not": {"Variable": "$b", "StringEqualsPath": "$a"}, "Next": "M"}], "Default": "M"},
                "M": {"Type": "Map", "ItemsPath": "$a", "MaxConcurrencyPath": "$c",
                      "ItemSelector": {"v.$": "States.Format('{}', $b)"},
                      "ItemProcessor": {"StartAt": "Inner", "States": {
                          "Inner": {"Type": "Pass", "Parameters": {"x.$": "$b", "y.$": "$a"}, "End": true}}},
                      "Catch": [{"ErrorEquals": ["States.ALL"], "Assign": {"e.$": "$z"}, "Next": "W"}],
                      "Next": "W"},
                "W": {"Type": "Wait", "SecondsPath": "$a", "OutputPath": "$b", "Next": "F"},
                "F": {"Type": "Fail", "ErrorPath": "$b", "CausePath": "States.Format('{}', $q)"}
            }
        });
        let machine = parse_definition(&definition.to_string(), &ValidationOptions::default())
            .expect("valid");
        let references = machine.variable_references();
        let expected: std::collections::BTreeMap<String, Vec<String>> = [
            ("C", vec!["a", "b"]),
            ("F", vec!["b", "q"]),
            ("Inner", vec!["a", "b"]),
            ("M", vec!["a", "b", "c", "z"]),
            ("W", vec!["a", "b"]),
        ]
        .into_iter()
        .map(|(state, names)| {
            (
                state.to_string(),
                names.into_iter().map(str::to_string).collect(),
            )
        })
        .collect();
        assert_eq!(references, expected, "Set reads nothing: it is left out");
    }

    #[test]
    fn variables_read_inside_filters_are_references() {
        let definition = json!({
            "StartAt": "P",
            "States": {
                "P": {"Type": "Pass", "InputPath": "$.a[?(@.x == $f)]",
                      "Parameters": {"v.$": "States.ArrayLength($.b[?(@.y < $g || @.y > $cfg.max)])"},
                      "OutputPath": "$list[?(@ != $h)]", "Next": "C"},
                "C": {"Type": "Choice", "Choices": [{"Variable": "$.n",
                      "NumericEqualsPath": "$.m", "Next": "M"}], "Default": "M"},
                "M": {"Type": "Map",
                      "ItemSelector": {"k.$": "$.items[?(@.id == $wanted)]"},
                      "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": true}}},
                      "End": true}
            }
        });
        let machine = parse_definition(&definition.to_string(), &ValidationOptions::default())
            .expect("valid: a filter may name a variable nothing assigns yet");
        let references = machine.variable_references();
        let names = |state: &str| references.get(state).cloned().unwrap_or_default();
        assert_eq!(names("P"), ["cfg", "f", "g", "h", "list"]);
        assert_eq!(names("M"), ["wanted"]);
        assert!(!references.contains_key("C"), "{references:?}");
    }
}
