//! choice: evaluates Choice rules against a state's effective input.
//!
//! Owns the semantics of every comparison operator, `StringMatches` patterns, the `Is...` checks,
//! `And`/`Or`/`Not`, and the Choice state's pick (first matching rule, else `Default`, else
//! `States.NoChoiceMatched`). Values of the wrong type never match (AWS: `NumericEquals` on a
//! string is false, not an error). A `Variable` (or operand path) that selects nothing is a
//! `States.Runtime` error, except under `IsPresent`.
//!
//! Must not: parse definitions (operands arrive compiled), read the clock, or allocate per
//! comparison beyond what a path selection returns.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::jsonata::{Host, LazyBound, States};
use super::model::{
    ChoiceRule, ChoiceState, CompareFamily, CompareOp, Condition, Operand, PatternPiece,
    StringPattern, Test, TypeCheck,
};
use super::timestamp::parse_timestamp;
use crate::paths::{Path, StatesError, Variables, NO_VARIABLES};

/// The error of a Choice state where no rule matched and there is no `Default`.
pub const NO_CHOICE_MATCHED: &str = "States.NoChoiceMatched";

/// The cause AWS gives with [`NO_CHOICE_MATCHED`].
pub const NO_CHOICE_MATCHED_CAUSE: &str = "No Matches!";

/// Compiles a `StringMatches` pattern: `*` is any run of characters, `\*` a literal star, `\\` a
/// literal backslash (in JSON text: `"\\*"` and `"\\\\"`). Any other backslash is literal.
pub fn compile_pattern(source: &str) -> Result<StringPattern, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('*') | Some('\\') => {
                    literal.push(chars.next().expect("peeked just above"));
                }
                _ => literal.push('\\'),
            },
            '*' => {
                if !literal.is_empty() {
                    pieces.push(PatternPiece::Literal(std::mem::take(&mut literal)));
                }
                if pieces.last() != Some(&PatternPiece::Star) {
                    pieces.push(PatternPiece::Star);
                }
            }
            other => literal.push(other),
        }
    }
    if !literal.is_empty() {
        pieces.push(PatternPiece::Literal(literal));
    }
    Ok(StringPattern {
        source: source.to_string(),
        pieces,
    })
}

impl StringPattern {
    /// True when `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let mut rest = text;
        let count = self.pieces.len();
        let mut after_star = false;
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                PatternPiece::Star => after_star = true,
                PatternPiece::Literal(lit) => {
                    let is_last = i + 1 == count;
                    if !after_star {
                        let Some(stripped) = rest.strip_prefix(lit.as_str()) else {
                            return false;
                        };
                        rest = stripped;
                        if is_last {
                            return rest.is_empty();
                        }
                    } else if is_last {
                        // The last literal after a star must end the text (leftmost-first
                        // matching of earlier pieces keeps as much room as possible here).
                        return rest.ends_with(lit.as_str());
                    } else {
                        let Some(found) = rest.find(lit.as_str()) else {
                            return false;
                        };
                        rest = &rest[found + lit.len()..];
                    }
                    after_star = false;
                }
            }
        }
        // Trailing star matches anything left; an empty pattern matches only "".
        after_star || rest.is_empty()
    }
}

fn missing_path(path: &Path) -> StatesError {
    StatesError::new(
        "States.Runtime",
        format!(
            "Invalid path '{}': The choice state's condition path references an invalid value.",
            path.as_str()
        ),
    )
}

/// The value `path` names, borrowed from `input`/`context` where the path allows it.
fn select<'a>(
    path: &Path,
    input: &'a Value,
    context: &'a Value,
    variables: &'a Variables,
) -> Result<Cow<'a, Value>, StatesError> {
    path.select_cow_in(input, context, variables)?
        .ok_or_else(|| missing_path(path))
}

fn relation_holds(op: CompareOp, ordering: Ordering) -> bool {
    match op {
        CompareOp::Equals => ordering == Ordering::Equal,
        CompareOp::LessThan => ordering == Ordering::Less,
        CompareOp::GreaterThan => ordering == Ordering::Greater,
        CompareOp::LessThanEquals => ordering != Ordering::Greater,
        CompareOp::GreaterThanEquals => ordering != Ordering::Less,
    }
}

/// Compares two JSON values of `family`; `None` when either is not of that family.
fn compare_values(family: CompareFamily, left: &Value, right: &Value) -> Option<Ordering> {
    match family {
        CompareFamily::String => Some(left.as_str()?.cmp(right.as_str()?)),
        CompareFamily::Numeric => {
            if !left.is_number() || !right.is_number() {
                return None;
            }
            left.as_f64()?.partial_cmp(&right.as_f64()?)
        }
        CompareFamily::Boolean => Some(left.as_bool()?.cmp(&right.as_bool()?)),
        CompareFamily::Timestamp => {
            let l = parse_timestamp(left.as_str()?)?;
            let r = parse_timestamp(right.as_str()?)?;
            Some(l.cmp(&r))
        }
    }
}

/// Compares a JSON value with a literal operand; `None` on a type mismatch.
fn compare_literal(value: &Value, operand: &Operand) -> Option<Ordering> {
    match operand {
        Operand::String(s) => Some(value.as_str()?.cmp(s.as_str())),
        Operand::Number(n) => {
            if !value.is_number() {
                return None;
            }
            value.as_f64()?.partial_cmp(n)
        }
        Operand::Boolean(b) => Some(value.as_bool()?.cmp(b)),
        Operand::Timestamp(t) => Some(parse_timestamp(value.as_str()?)?.cmp(t)),
        Operand::Path(_) => None,
    }
}

fn type_check(check: TypeCheck, value: &Value) -> bool {
    match check {
        TypeCheck::Null => value.is_null(),
        TypeCheck::Present => true,
        TypeCheck::Numeric => value.is_number(),
        TypeCheck::String => value.is_string(),
        TypeCheck::Boolean => value.is_boolean(),
        TypeCheck::Timestamp => value.as_str().and_then(parse_timestamp).is_some(),
    }
}

impl Condition {
    /// Evaluates the rule against the effective `input` and the Context object `context`.
    pub fn evaluate(&self, input: &Value, context: &Value) -> Result<bool, StatesError> {
        self.evaluate_in(input, context, &NO_VARIABLES)
    }

    /// [`Condition::evaluate`] with the workflow variables in scope (`"Variable": "$x"`,
    /// `...Path` operands reading `$x`).
    pub fn evaluate_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
    ) -> Result<bool, StatesError> {
        match self {
            Condition::And(all) => {
                for condition in all {
                    if !condition.evaluate_in(input, context, variables)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Condition::Or(any) => {
                for condition in any {
                    if condition.evaluate_in(input, context, variables)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Condition::Not(inner) => Ok(!inner.evaluate_in(input, context, variables)?),
            Condition::Jsonata(_) => Err(StatesError::new(
                crate::asl::ERROR_RUNTIME,
                "A JSONata Condition in a JSONPath Choice rule.",
            )),
            Condition::Test { variable, test } => {
                if let Test::Is {
                    check: TypeCheck::Present,
                    expected,
                } = test
                {
                    return Ok(
                        variable.select_cow_in(input, context, variables)?.is_some() == *expected
                    );
                }
                let value = select(variable, input, context, variables)?;
                test.holds_in(&value, input, context, variables)
            }
        }
    }
}

impl Test {
    /// True when the test holds for `value` (the Variable's value). `input` and `context` serve
    /// `...Path` operands.
    pub fn holds(
        &self,
        value: &Value,
        input: &Value,
        context: &Value,
    ) -> Result<bool, StatesError> {
        self.holds_in(value, input, context, &NO_VARIABLES)
    }

    /// [`Test::holds`] with the workflow variables in scope.
    pub fn holds_in(
        &self,
        value: &Value,
        input: &Value,
        context: &Value,
        variables: &Variables,
    ) -> Result<bool, StatesError> {
        Ok(match self {
            Test::Compare {
                family,
                op,
                operand: Operand::Path(path),
            } => {
                let other = select(path, input, context, variables)?;
                compare_values(*family, value, &other).is_some_and(|o| relation_holds(*op, o))
            }
            Test::Compare { op, operand, .. } => {
                compare_literal(value, operand).is_some_and(|o| relation_holds(*op, o))
            }
            Test::StringMatches(pattern) => value.as_str().is_some_and(|s| pattern.matches(s)),
            Test::Is { check, expected } => type_check(*check, value) == *expected,
        })
    }
}

impl ChoiceState {
    /// The name of the next state: the first rule that holds, else `Default`, else
    /// `States.NoChoiceMatched`.
    pub fn pick(&self, input: &Value, context: &Value) -> Result<&str, StatesError> {
        self.pick_in(input, context, &NO_VARIABLES)
            .map(|picked| picked.next)
    }

    /// [`ChoiceState::pick`] with the workflow variables in scope, telling which rule was
    /// taken (`None`: `Default`), whose `Assign` applies.
    pub fn pick_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
    ) -> Result<Picked<'_>, StatesError> {
        for rule in &self.choices {
            if rule.condition.evaluate_in(input, context, variables)? {
                return Ok(Picked {
                    next: &rule.next,
                    rule: Some(rule),
                });
            }
        }
        match self.default.as_deref() {
            Some(next) => Ok(Picked { next, rule: None }),
            None => Err(StatesError::new(NO_CHOICE_MATCHED, NO_CHOICE_MATCHED_CAUSE)),
        }
    }

    /// The pick of a JSONata Choice: the first rule whose `Condition` is `true` (a value that
    /// is not a boolean is an error), else `Default`, else `States.NoChoiceMatched`; the rule
    /// taken carries its `Output` and `Assign`.
    pub fn pick_jsonata(
        &self,
        states: &States<'_>,
        values: &[(&str, &Value)],
        bound: &mut LazyBound<'_>,
        host: &mut dyn Host,
    ) -> Result<Picked<'_>, StatesError> {
        for rule in &self.choices {
            let Condition::Jsonata(condition) = &rule.condition else {
                return Err(StatesError::new(
                    crate::asl::ERROR_RUNTIME,
                    "A JSONPath Choice rule in a JSONata Choice state.",
                ));
            };
            // A condition of a simple shape is read straight from the input; the bindings
            // are made only for one that needs them.
            let direct = condition
                .as_expression()
                .and_then(|e| e.evaluate_direct(&|| "Condition".to_string(), states, values));
            let value = match direct {
                Some(value) => value?,
                None => condition.evaluate("Condition", bound.get()?, host)?,
            };
            let holds = match value {
                Value::Bool(holds) => holds,
                other => {
                    return Err(match condition.as_expression() {
                        Some(expression) => expression.wrong_type("Condition", "boolean", &other),
                        None => StatesError::new(
                            crate::asl::jsonata::QUERY_EVALUATION_ERROR,
                            "The field 'Condition' must be a boolean.",
                        ),
                    })
                }
            };
            if holds {
                return Ok(Picked {
                    next: &rule.next,
                    rule: Some(rule),
                });
            }
        }
        self.default
            .as_deref()
            .map(|next| Picked { next, rule: None })
            .ok_or_else(|| StatesError::new(NO_CHOICE_MATCHED, NO_CHOICE_MATCHED_CAUSE))
    }
}

/// The outcome of a Choice: where it goes, and the rule that sent it there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Picked<'c> {
    /// The next state's name.
    pub next: &'c str,
    /// The rule that held first; `None` when `Default` was taken.
    pub rule: Option<&'c ChoiceRule>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pattern(p: &str) -> StringPattern {
        compile_pattern(p).expect("pattern")
    }

    #[test]
    fn string_matches_table() {
        let table: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything", true),
            ("", "", true),
            ("", "x", false),
            ("log-*.txt", "log-2024.txt", true),
            ("log-*.txt", "log-.txt", true),
            ("log-*.txt", "log-2024.txt.bak", false),
            ("*.txt", "a.txt.txt", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
            ("ab*", "a", false),
            ("*ab", "b", false),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("a\\*b", "a*b", true),
            ("a\\*b", "aXb", false),
            ("\\\\*", "\\abc", true),
            ("\\\\", "\\", true),
            ("x\\y", "x\\y", true),
            ("**", "abc", true),
            ("é*ü", "éaü", true),
        ];
        for (p, text, expected) in table {
            assert_eq!(
                pattern(p).matches(text),
                *expected,
                "pattern {p:?} on {text:?}"
            );
        }
    }

    #[test]
    fn literal_comparisons_follow_types() {
        use CompareOp::*;
        let cases: &[(Value, Operand, CompareOp, bool)] = &[
            (json!(1), Operand::Number(1.0), Equals, true),
            (json!(1.0), Operand::Number(1.0), Equals, true),
            (json!("1"), Operand::Number(1.0), Equals, false),
            (json!(2), Operand::Number(1.0), GreaterThan, true),
            (json!(1), Operand::Number(1.0), GreaterThanEquals, true),
            (json!(0), Operand::Number(1.0), LessThan, true),
            (json!(1), Operand::Number(1.0), LessThanEquals, true),
            (json!("A"), Operand::String("AB".into()), LessThan, true),
            (
                json!(""),
                Operand::String("".into()),
                GreaterThanEquals,
                true,
            ),
            (json!(1), Operand::String("1".into()), Equals, false),
            (json!(true), Operand::Boolean(true), Equals, true),
            (json!(1), Operand::Boolean(true), Equals, false),
            (
                json!("2016-03-14T03:59:00+02:00"),
                Operand::Timestamp(parse_timestamp("2016-03-14T01:59:00Z").expect("ts")),
                Equals,
                true,
            ),
            (
                json!("2016-03-14T01:59:00"),
                Operand::Timestamp(parse_timestamp("2016-03-14T01:59:00Z").expect("ts")),
                Equals,
                false,
            ),
        ];
        for (value, operand, op, expected) in cases {
            let got = compare_literal(value, operand).is_some_and(|o| relation_holds(*op, o));
            assert_eq!(got, *expected, "{value} {op:?} {operand:?}");
        }
    }

    #[test]
    fn type_checks() {
        assert!(type_check(TypeCheck::Null, &json!(null)));
        assert!(!type_check(TypeCheck::Null, &json!(0)));
        assert!(type_check(TypeCheck::Numeric, &json!(1.5)));
        assert!(!type_check(TypeCheck::Numeric, &json!("1")));
        assert!(type_check(TypeCheck::String, &json!("")));
        assert!(type_check(TypeCheck::Boolean, &json!(false)));
        assert!(type_check(
            TypeCheck::Timestamp,
            &json!("2016-03-14T01:59:00Z")
        ));
        assert!(!type_check(TypeCheck::Timestamp, &json!("2016-03-14")));
    }
}
