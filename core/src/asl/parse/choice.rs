//! The Choice state's fields: `Choices` (rules, `And`/`Or`/`Not`, comparison operators) and
//! `Default`.

use super::*;

impl Ctx<'_> {
    pub(super) fn choice(&mut self, obj: Obj<'_>, node: &mut Node) -> Option<ChoiceState> {
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
            let assign = this.assign(rule);
            let next = this
                .required(rule, "Next", "a top-level Choice rule")
                .and_then(|_| this.string(rule, "Next"));
            if let Some(next) = &next {
                node.targets.push((next.clone(), rule.ptr("Next")));
            }
            let condition = this.condition(rule, true, 0);
            match (condition, next, assign) {
                (Some(condition), Some(next), Some(assign)) => Some(ChoiceRule {
                    condition,
                    next,
                    output: None,
                    assign,
                }),
                _ => None,
            }
        });
        let default_ok = obj.get("Default").is_none() || default.is_some();
        let choices = choices?;
        default_ok.then_some(ChoiceState { choices, default })
    }

    /// Reads one Choice rule (top-level when `top`), reporting every problem.
    pub(super) fn condition(
        &mut self,
        rule: Obj<'_>,
        top: bool,
        depth: usize,
    ) -> Option<Condition> {
        if depth > crate::limits::DEFINITION_JSON_DEPTH_MAX {
            self.error(
                rule.at,
                DiagnosticCode::TooDeeplyNested,
                "Choice rules nest too deeply",
            );
            return None;
        }
        let mut operators = Vec::new();
        for key in rule.map.keys() {
            match key.as_str() {
                "Variable" | "Comment" => {}
                "Next" if top => {}
                "Assign" if top => {}
                "Next" => self.error(
                    &rule.ptr(key),
                    DiagnosticCode::InvalidChoiceRule,
                    "only top-level Choice rules may have 'Next'",
                ),
                "And" | "Or" | "Not" => operators.push(key.as_str()),
                other if operator_spec(other).is_some() => operators.push(other),
                other => self.error(
                    &rule.ptr(other),
                    DiagnosticCode::InvalidChoiceRule,
                    format!("'{other}' is not a Choice rule field or comparison operator"),
                ),
            }
        }
        let operator = match operators.as_slice() {
            [one] => *one,
            [] => {
                self.error(
                    rule.at,
                    DiagnosticCode::InvalidChoiceRule,
                    "the rule has no comparison operator, 'And', 'Or' or 'Not'",
                );
                return None;
            }
            many => {
                self.error(
                    rule.at,
                    DiagnosticCode::InvalidChoiceRule,
                    format!(
                        "a rule has exactly one operator; this one has {}",
                        many.join(", ")
                    ),
                );
                return None;
            }
        };
        let at = rule.ptr(operator);
        let value = rule.get(operator)?;
        if matches!(operator, "And" | "Or" | "Not") {
            if rule.get("Variable").is_some() {
                self.error(
                    &rule.ptr("Variable"),
                    DiagnosticCode::InvalidChoiceRule,
                    format!("'{operator}' rules do not take a 'Variable'"),
                );
            }
            if operator == "Not" {
                let Value::Object(map) = value else {
                    self.error(
                        &at,
                        DiagnosticCode::InvalidChoiceRule,
                        "'Not' must be one rule (an object)",
                    );
                    return None;
                };
                let inner = Obj { map, at: &at };
                return self
                    .condition(inner, false, depth + 1)
                    .map(|c| Condition::Not(Box::new(c)));
            }
            let Value::Array(items) = value else {
                self.error(
                    &at,
                    DiagnosticCode::InvalidChoiceRule,
                    format!("'{operator}' must be an array of rules"),
                );
                return None;
            };
            if items.is_empty() {
                self.error(
                    &at,
                    DiagnosticCode::InvalidChoiceRule,
                    format!("'{operator}' must hold at least one rule"),
                );
                return None;
            }
            let mut conditions = Vec::with_capacity(items.len());
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                let item_at = pointer_index(&at, i);
                let Value::Object(map) = item else {
                    self.error(
                        &item_at,
                        DiagnosticCode::InvalidChoiceRule,
                        format!("the rules of '{operator}' must be objects"),
                    );
                    ok = false;
                    continue;
                };
                match self.condition(Obj { map, at: &item_at }, false, depth + 1) {
                    Some(c) => conditions.push(c),
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            return Some(if operator == "And" {
                Condition::And(conditions)
            } else {
                Condition::Or(conditions)
            });
        }
        let variable = match rule.get("Variable") {
            None => {
                self.error(
                    rule.at,
                    DiagnosticCode::InvalidChoiceRule,
                    format!("'{operator}' needs a 'Variable'"),
                );
                None
            }
            Some(_) => self.reference(rule, "Variable"),
        };
        let spec = operator_spec(operator).expect("operators were filtered by operator_spec above");
        let test = self.test(spec, operator, value, &at);
        Some(Condition::Test {
            variable: variable?,
            test: test?,
        })
    }

    pub(super) fn test(
        &mut self,
        spec: OperatorSpec,
        operator: &str,
        value: &Value,
        at: &str,
    ) -> Option<Test> {
        let wrong = |ctx: &mut Self, expected: &str| {
            ctx.error(
                at,
                DiagnosticCode::InvalidChoiceRule,
                format!("'{operator}' takes {expected}, not {}", type_name_of(value)),
            );
            None
        };
        match spec {
            OperatorSpec::Is(check) => match value {
                Value::Bool(expected) => Some(Test::Is {
                    check,
                    expected: *expected,
                }),
                _ => wrong(self, "a boolean"),
            },
            OperatorSpec::Matches => match value {
                Value::String(pattern) => match crate::asl::choice::compile_pattern(pattern) {
                    Ok(pattern) => Some(Test::StringMatches(pattern)),
                    Err(message) => {
                        self.error(at, DiagnosticCode::InvalidChoiceRule, message);
                        None
                    }
                },
                _ => wrong(self, "a string pattern"),
            },
            OperatorSpec::Compare {
                family,
                op,
                path: true,
            } => match value {
                Value::String(text) => {
                    self.reference_text(at, operator, text)
                        .map(|p| Test::Compare {
                            family,
                            op,
                            operand: Operand::Path(p),
                        })
                }
                _ => wrong(self, "a path string"),
            },
            OperatorSpec::Compare {
                family,
                op,
                path: false,
            } => {
                let operand = match (family, value) {
                    (CompareFamily::String, Value::String(s)) => Operand::String(s.clone()),
                    (CompareFamily::Numeric, Value::Number(n)) => {
                        Operand::Number(n.as_f64().expect(
                            "serde_json numbers without arbitrary_precision are f64-convertible",
                        ))
                    }
                    (CompareFamily::Boolean, Value::Bool(b)) => Operand::Boolean(*b),
                    (CompareFamily::Timestamp, Value::String(s)) => match parse_timestamp(s) {
                        Some(t) => Operand::Timestamp(t),
                        None => {
                            self.error(
                                at,
                                DiagnosticCode::InvalidChoiceRule,
                                format!("'{operator}' needs an RFC 3339 timestamp such as 2016-03-14T01:59:00Z, not '{s}'"),
                            );
                            return None;
                        }
                    },
                    (CompareFamily::String, _) => return wrong(self, "a string"),
                    (CompareFamily::Numeric, _) => return wrong(self, "a number"),
                    (CompareFamily::Boolean, _) => return wrong(self, "a boolean"),
                    (CompareFamily::Timestamp, _) => return wrong(self, "a timestamp string"),
                };
                Some(Test::Compare {
                    family,
                    op,
                    operand,
                })
            }
        }
    }
}
