//! jsonpath: the JSONPath dialect ASL uses (Jayway JsonPath semantics), parsed once into a
//! segment list and evaluated many times.
//!
//! Owns: the path grammar (`$`, `$$`, `$name`, `.name`, `['name']`, `[0]`, `[-1]`, `[*]`, `.*`,
//! `[1:5:2]`, `[0,1]`, `['a','b']`, `..`, `[?(<filter>)]`, `.length()`), filter expressions
//! (whose operands may read `@`, `$`, `$$` or a workflow variable `$name`) and the evaluator.
//!
//! Invariants: a parsed path never fails to evaluate except by exceeding
//! [`crate::limits::PATH_EVAL_STEPS_MAX`] or by a filter reading a variable that is not
//! assigned ([`EvalError`]); an indefinite path always yields an array (Jayway);
//! a definite path yields at most one value. Parsing is bounded by
//! [`crate::limits::PATH_TEXT_BYTES_MAX`] and [`crate::limits::PATH_FILTER_DEPTH_MAX`], so no
//! input recurses without bound.
//!
//! Must not: allocate per evaluation beyond the matches it returns, read anything but its
//! arguments, or panic on any input.

use serde_json::Value;

use crate::limits;

use super::{ParseError, Variables};

/// Which document a path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// `$`: the state's (effective) input.
    Input,
    /// `$$`: the Context object.
    Context,
    /// `@`: the current node inside a filter.
    Current,
    /// `$name`: a workflow variable (its name is in [`Parsed::variable`]).
    Variable,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment {
    /// `.name` or `['name']`.
    Child(String),
    /// `[3]` or `[-1]`.
    Index(i64),
    /// `.*` or `[*]`.
    Wildcard,
    /// `[start:end:step]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// `['a','b']`.
    Names(Vec<String>),
    /// `[0,2]`.
    Indexes(Vec<i64>),
    /// `..` followed by a selector: that selector applied at every depth.
    Descend(Box<Segment>),
    /// `[?(expr)]`.
    Filter(Box<Filter>),
    /// `.length()` (or `.length` on an array): the number of elements or characters.
    Length,
}

impl Segment {
    fn is_definite(&self) -> bool {
        matches!(
            self,
            Segment::Child(_) | Segment::Index(_) | Segment::Length
        )
    }
}

/// A boolean filter expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Filter {
    Or(Box<Filter>, Box<Filter>),
    And(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    /// `@.x` alone: true when the path finds something.
    Exists(Operand),
    Compare(Operand, CompareOp, Operand),
}

/// A side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    /// `@...`, `$...` or `$$...` (never [`Root::Variable`]: a variable is [`Operand::Variable`]).
    Path(Root, Vec<Segment>),
    /// `$name...`: the workflow variable `name` (without `$`), then its segments.
    Variable(String, Vec<Segment>),
    Literal(Value),
}

/// A comparison operator in a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) root: Root,
    /// The variable's name (without `$`) when `root` is [`Root::Variable`].
    pub(crate) variable: Option<String>,
    pub(crate) segments: Vec<Segment>,
}

impl Parsed {
    /// True when every segment names at most one location.
    pub(crate) fn is_definite(&self) -> bool {
        self.segments.iter().all(Segment::is_definite)
    }
}

/// Why an evaluation stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvalError {
    /// The evaluation needed more than [`crate::limits::PATH_EVAL_STEPS_MAX`] steps.
    BudgetExceeded,
    /// A filter operand reads `$name` (the name, without `$`), which is not assigned.
    VariableUnassigned(String),
}

/// Adds the workflow variables the filters inside `segments` read (at any depth, nested
/// filters included) to `names`, each once, in order of appearance. Recursion is bounded by
/// [`crate::limits::PATH_FILTER_DEPTH_MAX`], which the parser enforces.
pub(crate) fn filter_variables(segments: &[Segment], names: &mut Vec<String>) {
    for segment in segments {
        match segment {
            Segment::Filter(filter) => filter_variables_in(filter, names),
            Segment::Descend(selector) => filter_variables(std::slice::from_ref(selector), names),
            Segment::Child(_)
            | Segment::Index(_)
            | Segment::Wildcard
            | Segment::Slice { .. }
            | Segment::Names(_)
            | Segment::Indexes(_)
            | Segment::Length => {}
        }
    }
}

fn filter_variables_in(filter: &Filter, names: &mut Vec<String>) {
    let operand = |operand: &Operand, names: &mut Vec<String>| match operand {
        Operand::Variable(name, segments) => {
            if !names.iter().any(|known| known == name) {
                names.push(name.clone());
            }
            filter_variables(segments, names);
        }
        Operand::Path(_, segments) => filter_variables(segments, names),
        Operand::Literal(_) => {}
    };
    match filter {
        Filter::Or(a, b) | Filter::And(a, b) => {
            filter_variables_in(a, names);
            filter_variables_in(b, names);
        }
        Filter::Not(inner) => filter_variables_in(inner, names),
        Filter::Exists(only) => operand(only, names),
        Filter::Compare(left, _, right) => {
            operand(left, names);
            operand(right, names);
        }
    }
}

/// Parses a whole path; the text must be consumed entirely.
pub(crate) fn parse(text: &str) -> Result<Parsed, ParseError> {
    let (parsed, consumed) = parse_prefix(text)?;
    if consumed != text.len() {
        let rest = &text[consumed..];
        let ch = rest.chars().next().unwrap_or(' ');
        return Err(error(
            text,
            consumed,
            &format!("unexpected character '{ch}'"),
        ));
    }
    Ok(parsed)
}

/// Parses a path at the start of `text` and returns it with the number of bytes it used. Stops
/// before the first character that cannot continue a path (`,`, `)`, whitespace, ...); used by
/// the intrinsic-call parser.
pub(crate) fn parse_prefix(text: &str) -> Result<(Parsed, usize), ParseError> {
    if text.len() > limits::PATH_TEXT_BYTES_MAX {
        return Err(ParseError::new(
            text,
            None,
            format!(
                "the path is {} bytes long; the limit is {} bytes",
                text.len(),
                limits::PATH_TEXT_BYTES_MAX
            ),
        ));
    }
    let mut parser = Parser {
        text,
        pos: 0,
        filter_depth: 0,
    };
    let mut variable = None;
    let root = if parser.eat("$$") {
        Root::Context
    } else if parser.eat("$") {
        if let Some(name) = parser.variable_name(0)? {
            variable = Some(name);
            Root::Variable
        } else {
            Root::Input
        }
    } else {
        return Err(error(
            text,
            0,
            "a path must start with '$' (or '$$' for the Context object, or '$name' for a \
             variable)",
        ));
    };
    let segments = parser.segments()?;
    Ok((
        Parsed {
            root,
            variable,
            segments,
        },
        parser.pos,
    ))
}

/// The first character of a variable name: a letter or `_`.
pub(crate) fn is_variable_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// A later character of a variable name: a letter, a digit or `_`.
pub(crate) fn is_variable_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn error(text: &str, pos: usize, what: &str) -> ParseError {
    let character = text.get(..pos).map_or(pos, |before| before.chars().count()) + 1;
    ParseError::new(
        text,
        Some(pos),
        format!("invalid JSONPath '{text}': {what} at character {character}"),
    )
}

struct Parser<'t> {
    text: &'t str,
    pos: usize,
    filter_depth: usize,
}

/// Characters that may appear in a dot-notation name.
fn is_name_char(c: char) -> bool {
    !(c.is_whitespace()
        || matches!(
            c,
            '.' | '['
                | ']'
                | '('
                | ')'
                | '\''
                | '"'
                | ','
                | '='
                | '<'
                | '>'
                | '!'
                | '&'
                | '|'
                | '$'
                | '@'
                | '?'
                | '*'
        ))
}

impl<'t> Parser<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
    }

    fn err(&self, what: &str) -> ParseError {
        error(self.text, self.pos, what)
    }

    /// After a `$` (at byte `dollar_index`): the variable name that follows, if one does.
    fn variable_name(&mut self, dollar_index: usize) -> Result<Option<String>, ParseError> {
        if !self.peek().is_some_and(is_variable_start) {
            return Ok(None);
        }
        let start = self.pos;
        while let Some(c) = self.peek().filter(|c| is_variable_char(*c)) {
            self.pos += c.len_utf8();
        }
        let name = &self.text[start..self.pos];
        if name == "states" {
            // Reserved (JSONata's `$states`): no Assign can set it, so the path could never
            // find anything.
            return Err(error(
                self.text,
                dollar_index,
                "'$states' is reserved for JSONata states: a JSONPath path cannot read it",
            ));
        }
        Ok(Some(name.to_string()))
    }

    fn expect(&mut self, token: &str) -> Result<(), ParseError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.err(&format!("expected '{token}'")))
        }
    }

    fn segments(&mut self) -> Result<Vec<Segment>, ParseError> {
        let mut out = Vec::new();
        loop {
            if out.len() >= limits::PATH_SEGMENTS_MAX {
                return Err(self.err(&format!("more than {} segments", limits::PATH_SEGMENTS_MAX)));
            }
            if self.eat("..") {
                let selector = if self.peek() == Some('[') {
                    self.pos += 1;
                    self.bracket()?
                } else if self.eat("*") {
                    Segment::Wildcard
                } else {
                    let name = self.name()?;
                    Segment::Child(name)
                };
                out.push(Segment::Descend(Box::new(selector)));
            } else if self.eat(".") {
                if self.eat("*") {
                    out.push(Segment::Wildcard);
                    continue;
                }
                let name = self.name()?;
                if name == "length" && self.eat("(") {
                    self.skip_ws();
                    self.expect(")")?;
                    out.push(Segment::Length);
                } else if self.peek() == Some('(') {
                    return Err(self.err(&format!("the function '{name}()' is not supported")));
                } else {
                    out.push(Segment::Child(name));
                }
            } else if self.eat("[") {
                let segment = self.bracket()?;
                out.push(segment);
            } else {
                return Ok(out);
            }
        }
    }

    fn name(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_name_char(c) {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        if self.pos == start {
            return Err(self.err("expected a property name"));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    /// Parses what follows `[` up to and including `]`.
    fn bracket(&mut self) -> Result<Segment, ParseError> {
        self.skip_ws();
        let segment = match self.peek() {
            Some('*') => {
                self.pos += 1;
                Segment::Wildcard
            }
            Some('\'') | Some('"') => {
                let mut names = vec![self.quoted()?];
                loop {
                    self.skip_ws();
                    if !self.eat(",") {
                        break;
                    }
                    self.skip_ws();
                    names.push(self.quoted()?);
                }
                if names.len() == 1 {
                    Segment::Child(names.remove(0))
                } else {
                    Segment::Names(names)
                }
            }
            Some('?') => {
                self.pos += 1;
                self.skip_ws();
                self.expect("(")?;
                let filter = self.filter_or()?;
                self.skip_ws();
                self.expect(")")?;
                Segment::Filter(Box::new(filter))
            }
            Some(c) if c == '-' || c == ':' || c.is_ascii_digit() => self.indexes_or_slice()?,
            Some(_) => {
                return Err(self.err("expected an index, a quoted name, '*' or '?(' after '['"))
            }
            None => return Err(self.err("unterminated '['")),
        };
        self.skip_ws();
        self.expect("]")?;
        Ok(segment)
    }

    fn integer(&mut self) -> Result<Option<i64>, ParseError> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        while matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = &self.text[start..self.pos];
        if digits.is_empty() {
            return Ok(None);
        }
        let value = digits.parse::<i64>().map_err(|_| {
            error(
                self.text,
                start,
                &format!("'{digits}' is not an integer in range"),
            )
        })?;
        self.skip_ws();
        Ok(Some(value))
    }

    fn indexes_or_slice(&mut self) -> Result<Segment, ParseError> {
        let first = self.integer()?;
        if self.peek() == Some(':') {
            self.pos += 1;
            let end = self.integer()?;
            let step = if self.eat(":") { self.integer()? } else { None };
            if step == Some(0) {
                return Err(self.err("a slice step cannot be 0"));
            }
            return Ok(Segment::Slice {
                start: first,
                end,
                step,
            });
        }
        let first = first.ok_or_else(|| self.err("expected an integer"))?;
        let mut indexes = vec![first];
        while self.eat(",") {
            let next = self
                .integer()?
                .ok_or_else(|| self.err("expected an integer"))?;
            indexes.push(next);
            if indexes.len() > limits::PATH_SEGMENTS_MAX {
                return Err(self.err("too many indexes in one union"));
            }
        }
        if indexes.len() == 1 {
            Ok(Segment::Index(first))
        } else {
            Ok(Segment::Indexes(indexes))
        }
    }

    /// A `'...'` or `"..."` string with `\` escapes; returns the unescaped text.
    fn quoted(&mut self) -> Result<String, ParseError> {
        let quote = match self.peek() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.err("expected a quoted name")),
        };
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unterminated quoted name"));
            };
            self.pos += c.len_utf8();
            if c == quote {
                return Ok(out);
            }
            if c == '\\' {
                // Only the delimiter and the backslash itself are escapable; any other
                // backslash is literal (AWS reads `$['a\"b']` as the key `a\"b`).
                let Some(escaped) = self.peek() else {
                    return Err(self.err("unterminated escape"));
                };
                if escaped == quote || escaped == '\\' {
                    self.pos += escaped.len_utf8();
                    out.push(escaped);
                } else {
                    out.push('\\');
                }
            } else {
                out.push(c);
            }
        }
    }

    fn enter_filter(&mut self) -> Result<(), ParseError> {
        self.filter_depth += 1;
        if self.filter_depth > limits::PATH_FILTER_DEPTH_MAX {
            return Err(self.err(&format!(
                "filter nesting deeper than {}",
                limits::PATH_FILTER_DEPTH_MAX
            )));
        }
        Ok(())
    }

    fn filter_or(&mut self) -> Result<Filter, ParseError> {
        self.enter_filter()?;
        let mut left = self.filter_and()?;
        loop {
            self.skip_ws();
            if self.eat("||") {
                let right = self.filter_and()?;
                left = Filter::Or(Box::new(left), Box::new(right));
            } else {
                break;
            }
        }
        self.filter_depth -= 1;
        Ok(left)
    }

    fn filter_and(&mut self) -> Result<Filter, ParseError> {
        let mut left = self.filter_unary()?;
        loop {
            self.skip_ws();
            if self.eat("&&") {
                let right = self.filter_unary()?;
                left = Filter::And(Box::new(left), Box::new(right));
            } else {
                break;
            }
        }
        Ok(left)
    }

    fn filter_unary(&mut self) -> Result<Filter, ParseError> {
        self.skip_ws();
        if self.rest().starts_with('!') && !self.rest().starts_with("!=") {
            self.pos += 1;
            self.enter_filter()?;
            let inner = self.filter_unary()?;
            self.filter_depth -= 1;
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.eat("(") {
            let inner = self.filter_or()?;
            self.skip_ws();
            self.expect(")")?;
            return Ok(inner);
        }
        let left = self.operand()?;
        self.skip_ws();
        let op = if self.eat("==") {
            Some(CompareOp::Eq)
        } else if self.eat("!=") {
            Some(CompareOp::Ne)
        } else if self.eat("<=") {
            Some(CompareOp::Le)
        } else if self.eat(">=") {
            Some(CompareOp::Ge)
        } else if self.eat("<") {
            Some(CompareOp::Lt)
        } else if self.eat(">") {
            Some(CompareOp::Gt)
        } else if self.rest().starts_with("=~") {
            return Err(self.err("regular-expression filters ('=~') are not supported"));
        } else {
            None
        };
        match op {
            Some(op) => {
                let right = self.operand()?;
                Ok(Filter::Compare(left, op, right))
            }
            None => match left {
                Operand::Path(..) | Operand::Variable(..) => Ok(Filter::Exists(left)),
                Operand::Literal(_) => Err(self.err("a literal alone is not a filter condition")),
            },
        }
    }

    fn operand(&mut self) -> Result<Operand, ParseError> {
        self.skip_ws();
        let dollar_index = self.pos;
        let mut variable = None;
        let root = if self.eat("@") {
            Some(Root::Current)
        } else if self.eat("$$") {
            Some(Root::Context)
        } else if self.eat("$") {
            variable = self.variable_name(dollar_index)?;
            Some(if variable.is_some() {
                Root::Variable
            } else {
                Root::Input
            })
        } else {
            None
        };
        if let Some(root) = root {
            self.enter_filter()?;
            let segments = self.segments()?;
            self.filter_depth -= 1;
            return Ok(match variable {
                Some(name) => Operand::Variable(name, segments),
                None => Operand::Path(root, segments),
            });
        }
        match self.peek() {
            Some('\'') | Some('"') => Ok(Operand::Literal(Value::String(self.quoted()?))),
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let start = self.pos;
                while matches!(self.peek(), Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
                {
                    self.pos += 1;
                }
                let text = &self.text[start..self.pos];
                let number: serde_json::Number = text
                    .parse()
                    .map_err(|_| error(self.text, start, &format!("'{text}' is not a number")))?;
                Ok(Operand::Literal(Value::Number(number)))
            }
            _ => {
                for (word, value) in [
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                    ("null", Value::Null),
                ] {
                    if self.eat(word) {
                        return Ok(Operand::Literal(value));
                    }
                }
                Err(self.err(
                    "expected '@', '$', '$$', a variable ('$name'), a string, a number, true, false \
                     or null",
                ))
            }
        }
    }
}

/// Evaluation state: the roots, the variables in scope (filters read them) and a step budget
/// shared by the whole evaluation.
pub(crate) struct Evaluator<'a> {
    pub(crate) input: &'a Value,
    pub(crate) context: &'a Value,
    pub(crate) variables: &'a Variables,
    steps_left: usize,
}

/// The result of one path: either borrowed matches or a computed number (`length()`).
#[derive(Debug, Clone)]
pub(crate) enum Found<'a> {
    Ref(&'a Value),
    Owned(Value),
}

impl Found<'_> {
    pub(crate) fn as_value(&self) -> &Value {
        match self {
            Found::Ref(v) => v,
            Found::Owned(v) => v,
        }
    }

    pub(crate) fn into_value(self) -> Value {
        match self {
            Found::Ref(v) => v.clone(),
            Found::Owned(v) => v,
        }
    }
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(input: &'a Value, context: &'a Value, variables: &'a Variables) -> Self {
        Evaluator {
            input,
            context,
            variables,
            steps_left: limits::PATH_EVAL_STEPS_MAX,
        }
    }

    fn step(&mut self) -> Result<(), EvalError> {
        if self.steps_left == 0 {
            return Err(EvalError::BudgetExceeded);
        }
        self.steps_left -= 1;
        Ok(())
    }

    /// Records one match, charging it to the budget, so that no segment can multiply the
    /// match list without paying for it.
    fn emit(&mut self, out: &mut Vec<Found<'a>>, found: Found<'a>) -> Result<(), EvalError> {
        self.step()?;
        out.push(found);
        Ok(())
    }

    /// Charges one step per node of `value`: the price of cloning it.
    pub(crate) fn charge_size(&mut self, value: &Value) -> Result<(), EvalError> {
        let mut stack = vec![value];
        while let Some(node) = stack.pop() {
            self.step()?;
            match node {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Every location the segments reach from `start`, in document order.
    pub(crate) fn matches(
        &mut self,
        start: &'a Value,
        segments: &[Segment],
    ) -> Result<Vec<Found<'a>>, EvalError> {
        let mut current: Vec<Found<'a>> = vec![Found::Ref(start)];
        for segment in segments {
            let mut next = Vec::new();
            for node in current {
                match node {
                    Found::Ref(value) => self.apply(segment, value, &mut next)?,
                    Found::Owned(value) => {
                        // Only `length()` produces owned values; nothing selects inside a number.
                        if matches!(segment, Segment::Length) {
                            if let Some(n) = length_of(&value) {
                                next.push(Found::Owned(n));
                            }
                        }
                    }
                }
            }
            current = next;
        }
        Ok(current)
    }

    fn apply(
        &mut self,
        segment: &Segment,
        value: &'a Value,
        out: &mut Vec<Found<'a>>,
    ) -> Result<(), EvalError> {
        self.step()?;
        match segment {
            Segment::Child(name) => match value {
                Value::Object(map) => {
                    if let Some(child) = map.get(name) {
                        self.emit(out, Found::Ref(child))?;
                    }
                }
                Value::Array(items) if name == "length" => {
                    self.emit(out, Found::Owned(Value::from(items.len())))?;
                }
                _ => {}
            },
            Segment::Index(index) => {
                if let Value::Array(items) = value {
                    if let Some(i) = resolve_index(*index, items.len()) {
                        self.emit(out, Found::Ref(&items[i]))?;
                    }
                }
            }
            Segment::Wildcard => match value {
                Value::Object(map) => {
                    for child in map.values() {
                        self.step()?;
                        self.emit(out, Found::Ref(child))?;
                    }
                }
                Value::Array(items) => {
                    for child in items {
                        self.step()?;
                        self.emit(out, Found::Ref(child))?;
                    }
                }
                _ => {}
            },
            Segment::Slice { start, end, step } => {
                if let Value::Array(items) = value {
                    for i in slice_indexes(*start, *end, *step, items.len()) {
                        self.step()?;
                        self.emit(out, Found::Ref(&items[i]))?;
                    }
                }
            }
            Segment::Names(names) => {
                if let Value::Object(map) = value {
                    for name in names {
                        if let Some(child) = map.get(name) {
                            self.emit(out, Found::Ref(child))?;
                        }
                    }
                }
            }
            Segment::Indexes(indexes) => {
                if let Value::Array(items) = value {
                    for index in indexes {
                        if let Some(i) = resolve_index(*index, items.len()) {
                            self.emit(out, Found::Ref(&items[i]))?;
                        }
                    }
                }
            }
            Segment::Descend(selector) => self.descend(selector, value, out)?,
            Segment::Filter(filter) => {
                if let Value::Array(items) = value {
                    for item in items {
                        if self.test(filter, item)? {
                            self.emit(out, Found::Ref(item))?;
                        }
                    }
                } else if value.is_object() && self.test(filter, value)? {
                    // Jayway applies a filter on an object to the object itself.
                    self.emit(out, Found::Ref(value))?;
                }
            }
            Segment::Length => {
                if let Some(n) = length_of(value) {
                    self.emit(out, Found::Owned(n))?;
                }
            }
        }
        Ok(())
    }

    /// Applies `selector` at `value` and at every node below it, pre-order.
    fn descend(
        &mut self,
        selector: &Segment,
        value: &'a Value,
        out: &mut Vec<Found<'a>>,
    ) -> Result<(), EvalError> {
        // An explicit stack keeps deep documents from exhausting the call stack.
        let mut stack: Vec<&'a Value> = vec![value];
        while let Some(node) = stack.pop() {
            self.step()?;
            match selector {
                // `..*` yields every descendant, not the node itself.
                Segment::Wildcard => {}
                other => self.apply(other, node, out)?,
            }
            match node {
                Value::Object(map) => {
                    if matches!(selector, Segment::Wildcard) {
                        for child in map.values() {
                            self.emit(out, Found::Ref(child))?;
                        }
                    }
                    stack.extend(map.values().rev());
                }
                Value::Array(items) => {
                    if matches!(selector, Segment::Wildcard) {
                        for child in items {
                            self.emit(out, Found::Ref(child))?;
                        }
                    }
                    stack.extend(items.iter().rev());
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn test(&mut self, filter: &Filter, current: &'a Value) -> Result<bool, EvalError> {
        self.step()?;
        Ok(match filter {
            Filter::Or(a, b) => self.test(a, current)? || self.test(b, current)?,
            Filter::And(a, b) => self.test(a, current)? && self.test(b, current)?,
            Filter::Not(inner) => !self.test(inner, current)?,
            Filter::Exists(operand) => self.operand(operand, current)?.is_some(),
            Filter::Compare(left, op, right) => {
                let left = self.operand(left, current)?;
                let right = self.operand(right, current)?;
                match (left, right) {
                    (Some(l), Some(r)) => compare(l.as_value(), *op, r.as_value()),
                    // A missing side only satisfies `!=`.
                    (None, Some(_)) | (Some(_), None) => *op == CompareOp::Ne,
                    (None, None) => false,
                }
            }
        })
    }

    fn operand(
        &mut self,
        operand: &Operand,
        current: &'a Value,
    ) -> Result<Option<Found<'a>>, EvalError> {
        let (start, segments) = match operand {
            Operand::Literal(v) => return Ok(Some(Found::Owned(v.clone()))),
            Operand::Variable(name, segments) => match self.variables.get(name) {
                Some(value) => (value, segments),
                // Comparing with a variable nobody assigned is a mistake in the workflow, not
                // a filter that matches nothing: it stops the whole path.
                None => return Err(EvalError::VariableUnassigned(name.clone())),
            },
            Operand::Path(Root::Current, segments) => (current, segments),
            Operand::Path(Root::Input, segments) => (self.input, segments),
            Operand::Path(Root::Context, segments) => (self.context, segments),
            Operand::Path(Root::Variable, _) => {
                unreachable!("the parser makes a filter's '$name' an Operand::Variable")
            }
        };
        let mut found = self.matches(start, segments)?;
        if segments.iter().all(Segment::is_definite) {
            Ok(found.pop())
        } else if found.is_empty() {
            Ok(None)
        } else {
            for f in &found {
                self.charge_size(f.as_value())?;
            }
            Ok(Some(Found::Owned(Value::Array(
                found.into_iter().map(Found::into_value).collect(),
            ))))
        }
    }
}

fn length_of(value: &Value) -> Option<Value> {
    match value {
        Value::Array(items) => Some(Value::from(items.len())),
        Value::Object(map) => Some(Value::from(map.len())),
        Value::String(s) => Some(Value::from(s.chars().count())),
        _ => None,
    }
}

/// Resolves a possibly negative index against a length.
pub(crate) fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len_i = i64::try_from(len).ok()?;
    let i = if index < 0 {
        len_i.checked_add(index)?
    } else {
        index
    };
    if (0..len_i).contains(&i) {
        usize::try_from(i).ok()
    } else {
        None
    }
}

/// The indexes a slice selects, Python-style (negative bounds count from the end).
fn slice_indexes(
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    len: usize,
) -> Vec<usize> {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let step = step.unwrap_or(1);
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v.saturating_add(len_i) } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let s = clamp(norm(start.unwrap_or(0)), 0, len_i);
        let e = clamp(norm(end.unwrap_or(len_i)), 0, len_i);
        let mut i = s;
        while i < e {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    } else if step < 0 {
        let s = clamp(norm(start.unwrap_or(len_i - 1)), -1, len_i - 1);
        let e = match end {
            Some(e) => clamp(norm(e), -1, len_i - 1),
            None => -1,
        };
        let mut i = s;
        while i > e {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    }
    out
}

fn compare(left: &Value, op: CompareOp, right: &Value) -> bool {
    use std::cmp::Ordering;
    let ordering: Option<Ordering> = match (left, right) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y)),
        },
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        _ => None,
    };
    match op {
        CompareOp::Eq => match ordering {
            Some(o) => o == Ordering::Equal,
            None => left == right,
        },
        CompareOp::Ne => match ordering {
            Some(o) => o != Ordering::Equal,
            None => left != right,
        },
        CompareOp::Lt => ordering == Some(Ordering::Less),
        CompareOp::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        CompareOp::Gt => ordering == Some(Ordering::Greater),
        CompareOp::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
    }
}
