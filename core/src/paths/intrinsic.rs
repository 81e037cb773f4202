//! intrinsic: the 18 `States.*` intrinsic functions: parsing a call once into an argument tree,
//! checking what can be checked before run time (function name, argument count, literal
//! argument types), and evaluating it against the input and the Context object.
//!
//! Invariants: a parsed [`Call`] names a known function with an accepted number of arguments;
//! nesting is bounded by [`crate::limits::INTRINSIC_NESTING_DEPTH_MAX`]; every run-time failure is
//! a `States.IntrinsicFailure` whose cause names the function (or `States.Runtime` for a path
//! argument that finds nothing).
//!
//! Must not: draw randomness except from the caller's [`Entropy`], read a clock, or panic on any
//! argument value.

use base64::Engine as _;
use serde_json::{Number, Value};

use crate::limits;

use super::jsonpath;
use super::{
    to_json_text, Entropy, ParseError, Path, StatesError, STATES_INTRINSIC_FAILURE, STATES_RUNTIME,
};

/// The intrinsic functions of ASL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Function {
    /// `States.Format(template, args...)`.
    Format,
    /// `States.StringToJson(string)`.
    StringToJson,
    /// `States.JsonToString(value)`.
    JsonToString,
    /// `States.Array(values...)`.
    Array,
    /// `States.ArrayPartition(array, chunk_size)`.
    ArrayPartition,
    /// `States.ArrayContains(array, value)`.
    ArrayContains,
    /// `States.ArrayRange(start, end, step)`.
    ArrayRange,
    /// `States.ArrayGetItem(array, index)`.
    ArrayGetItem,
    /// `States.ArrayLength(array)`.
    ArrayLength,
    /// `States.ArrayUnique(array)`.
    ArrayUnique,
    /// `States.Base64Encode(string)`.
    Base64Encode,
    /// `States.Base64Decode(string)`.
    Base64Decode,
    /// `States.Hash(data, algorithm)`.
    Hash,
    /// `States.JsonMerge(a, b, deep)`.
    JsonMerge,
    /// `States.MathRandom(start, end[, seed])`.
    MathRandom,
    /// `States.MathAdd(a, b)`.
    MathAdd,
    /// `States.StringSplit(string, delimiters)`.
    StringSplit,
    /// `States.UUID()`.
    Uuid,
}

impl Function {
    /// Every function, for lookups and tests.
    pub const ALL: [Function; 18] = [
        Function::Format,
        Function::StringToJson,
        Function::JsonToString,
        Function::Array,
        Function::ArrayPartition,
        Function::ArrayContains,
        Function::ArrayRange,
        Function::ArrayGetItem,
        Function::ArrayLength,
        Function::ArrayUnique,
        Function::Base64Encode,
        Function::Base64Decode,
        Function::Hash,
        Function::JsonMerge,
        Function::MathRandom,
        Function::MathAdd,
        Function::StringSplit,
        Function::Uuid,
    ];

    /// The full name, e.g. `States.ArrayRange`.
    pub fn name(self) -> &'static str {
        match self {
            Function::Format => "States.Format",
            Function::StringToJson => "States.StringToJson",
            Function::JsonToString => "States.JsonToString",
            Function::Array => "States.Array",
            Function::ArrayPartition => "States.ArrayPartition",
            Function::ArrayContains => "States.ArrayContains",
            Function::ArrayRange => "States.ArrayRange",
            Function::ArrayGetItem => "States.ArrayGetItem",
            Function::ArrayLength => "States.ArrayLength",
            Function::ArrayUnique => "States.ArrayUnique",
            Function::Base64Encode => "States.Base64Encode",
            Function::Base64Decode => "States.Base64Decode",
            Function::Hash => "States.Hash",
            Function::JsonMerge => "States.JsonMerge",
            Function::MathRandom => "States.MathRandom",
            Function::MathAdd => "States.MathAdd",
            Function::StringSplit => "States.StringSplit",
            Function::Uuid => "States.UUID",
        }
    }

    fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The accepted argument counts: (least, most), `None` for no upper bound.
    fn arity(self) -> (usize, Option<usize>) {
        match self {
            Function::Format => (1, None),
            Function::Array => (0, None),
            Function::Uuid => (0, Some(0)),
            Function::StringToJson
            | Function::JsonToString
            | Function::ArrayLength
            | Function::ArrayUnique
            | Function::Base64Encode
            | Function::Base64Decode => (1, Some(1)),
            Function::ArrayPartition
            | Function::ArrayContains
            | Function::ArrayGetItem
            | Function::Hash
            | Function::MathAdd
            | Function::StringSplit => (2, Some(2)),
            Function::MathRandom => (2, Some(3)),
            Function::ArrayRange | Function::JsonMerge => (3, Some(3)),
        }
    }
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A literal: string (unescaped), number, boolean or null.
    Literal(Value),
    /// A path into the input (`$...`) or the Context object (`$$...`).
    Path(Path),
    /// A nested call.
    Call(Box<Call>),
}

/// A piece of a `States.Format` template: literal text, or a `{}` placeholder.
#[derive(Debug, Clone, PartialEq)]
enum FormatPiece {
    Text(String),
    Placeholder,
}

/// A parsed intrinsic call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    function: Function,
    args: Vec<Arg>,
    /// For `States.Format` with a literal template: the template split at its placeholders.
    format: Option<Vec<FormatPiece>>,
}

impl Call {
    /// Parses a whole intrinsic call such as `States.Format('{}', $.a)`.
    pub fn parse(text: &str) -> Result<Call, ParseError> {
        let mut parser = Parser { text, pos: 0 };
        let call = parser.call(0)?;
        parser.skip_ws();
        if parser.pos != text.len() {
            return Err(parser.err("unexpected text after the closing ')'"));
        }
        Ok(call)
    }

    /// The function called.
    pub fn function(&self) -> Function {
        self.function
    }

    /// The arguments as written.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    /// Evaluates the call. `field` is the template key (e.g. `value.$`) used in error causes.
    pub fn evaluate(
        &self,
        input: &Value,
        context: &Value,
        entropy: &mut dyn Entropy,
        field: &str,
    ) -> Result<Value, StatesError> {
        self.evaluate_in(input, context, &super::NO_VARIABLES, entropy, field)
    }

    /// [`Call::evaluate`] with the workflow variables in scope (`$name` arguments read them).
    pub fn evaluate_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &super::Variables,
        entropy: &mut dyn Entropy,
        field: &str,
    ) -> Result<Value, StatesError> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            let value = match arg {
                Arg::Literal(v) => v.clone(),
                Arg::Path(path) => match path.try_select_in(input, context, variables)? {
                    Some(v) => v,
                    None => {
                        return Err(StatesError::new(
                            STATES_RUNTIME,
                            format!(
                                "The JSONPath '{}' specified for the field '{}' could not be found in the input '{}'",
                                path.as_str(),
                                field,
                                to_json_text(input)
                            ),
                        ))
                    }
                },
                Arg::Call(call) => call.evaluate_in(input, context, variables, entropy, field)?,
            };
            values.push(value);
        }
        apply(self, values, entropy)
    }
}

struct Parser<'t> {
    text: &'t str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
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
        self.err_at(self.pos, what)
    }

    fn err_at(&self, pos: usize, what: &str) -> ParseError {
        let character = self
            .text
            .get(..pos)
            .map_or(pos, |before| before.chars().count())
            + 1;
        ParseError::new(
            self.text,
            Some(pos),
            format!(
                "invalid intrinsic function call '{}': {what} at character {character}",
                self.text
            ),
        )
    }

    fn call(&mut self, depth: usize) -> Result<Call, ParseError> {
        if depth >= limits::INTRINSIC_NESTING_DEPTH_MAX {
            return Err(self.err(&format!(
                "calls nested deeper than {}",
                limits::INTRINSIC_NESTING_DEPTH_MAX
            )));
        }
        self.skip_ws();
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '.' || c == '_') {
            self.pos += 1;
        }
        let name = &self.text[start..self.pos];
        let function = Function::from_name(name).ok_or_else(|| {
            self.err_at(
                start,
                &format!(
                    "'{name}' is not an intrinsic function (known: {})",
                    Function::ALL.map(Function::name).join(", ")
                ),
            )
        })?;
        self.skip_ws();
        if !self.rest().starts_with('(') {
            return Err(self.err(&format!("expected '(' after {name}")));
        }
        self.pos += 1;
        let mut args = Vec::new();
        let mut first_raw: Option<String> = None;
        self.skip_ws();
        if self.rest().starts_with(')') {
            self.pos += 1;
        } else {
            loop {
                if args.len() >= limits::INTRINSIC_ARGS_MAX {
                    return Err(self.err(&format!(
                        "more than {} arguments",
                        limits::INTRINSIC_ARGS_MAX
                    )));
                }
                let (arg, raw) = self.arg(depth)?;
                if args.is_empty() {
                    first_raw = raw;
                }
                args.push(arg);
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    Some(_) => return Err(self.err("expected ',' or ')'")),
                    None => return Err(self.err("missing ')'")),
                }
            }
        }
        let (least, most) = function.arity();
        let count_ok = args.len() >= least && most.map_or(true, |m| args.len() <= m);
        if !count_ok {
            let expected = match most {
                Some(m) if m == least => format!("{least}"),
                Some(m) => format!("{least} to {m}"),
                None => format!("at least {least}"),
            };
            return Err(self.err_at(
                start,
                &format!("{name} takes {expected} argument(s), found {}", args.len()),
            ));
        }
        let mut call = Call {
            function,
            args,
            format: None,
        };
        let invalid = |why: String| self.err_at(start, &why);
        check_literals(&call).map_err(|e| invalid(e.to_string()))?;
        if let (Function::Format, Some(raw)) = (function, first_raw) {
            let pieces = format_pieces(&raw).map_err(invalid)?;
            let placeholders = pieces
                .iter()
                .filter(|p| **p == FormatPiece::Placeholder)
                .count();
            if placeholders != call.args.len() - 1 {
                return Err(invalid(format!(
                    "States.Format: the template has {placeholders} placeholder(s) '{{}}' but \
                     {} value argument(s) follow it",
                    call.args.len() - 1
                )));
            }
            call.format = Some(pieces);
        }
        Ok(call)
    }

    /// One argument; for a string literal also its raw text (escapes kept).
    fn arg(&mut self, depth: usize) -> Result<(Arg, Option<String>), ParseError> {
        self.skip_ws();
        let rest = self.rest();
        if rest.starts_with('\'') {
            let raw = self.string_literal()?;
            return Ok((Arg::Literal(Value::String(unescape(&raw))), Some(raw)));
        }
        Ok((self.non_string_arg(depth)?, None))
    }

    fn non_string_arg(&mut self, depth: usize) -> Result<Arg, ParseError> {
        let rest = self.rest();
        if rest.starts_with('$') {
            let nested = |e: ParseError| {
                let at = self.pos + e.position_index.unwrap_or(0);
                ParseError::new(
                    self.text,
                    Some(at),
                    format!(
                        "invalid intrinsic function call '{}': {}",
                        self.text, e.message
                    ),
                )
            };
            let (_, used) = jsonpath::parse_prefix(rest).map_err(nested)?;
            let path = Path::parse(&rest[..used]).map_err(nested)?;
            self.pos += used;
            return Ok(Arg::Path(path));
        }
        if rest.starts_with("States.") {
            return Ok(Arg::Call(Box::new(self.call(depth + 1)?)));
        }
        for (word, value) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Ok(Arg::Literal(value));
            }
        }
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.pos += 1;
        }
        let number_text = &self.text[start..self.pos];
        if number_text.is_empty() {
            return Err(self.err(
                "expected an argument: a 'string', a number, true, false, null, a path or a call",
            ));
        }
        let number: Number = number_text
            .parse()
            .map_err(|_| self.err_at(start, &format!("'{number_text}' is not a number")))?;
        Ok(Arg::Literal(Value::Number(number)))
    }

    /// Reads a `'...'` literal and returns its raw inner text (escapes kept).
    fn string_literal(&mut self) -> Result<String, ParseError> {
        debug_assert!(self.rest().starts_with('\''));
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.peek() {
                None => return Err(self.err("unterminated string literal")),
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c) => self.pos += c.len_utf8(),
                        None => return Err(self.err("unterminated escape in string literal")),
                    }
                }
                Some('\'') => {
                    let raw = self.text[start..self.pos].to_string();
                    self.pos += 1;
                    return Ok(raw);
                }
                Some(c) => self.pos += c.len_utf8(),
            }
        }
    }
}

/// Removes `\` escapes: `\'`, `\{`, `\}`, `\\` (and any other `\x` stands for `x`).
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits a Format template at unescaped `{}`; the raw text still holds its escapes.
fn format_pieces(raw: &str) -> Result<Vec<FormatPiece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    text.push(next);
                }
            }
            '{' => {
                if chars.peek() == Some(&'}') {
                    chars.next();
                    if !text.is_empty() {
                        pieces.push(FormatPiece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(FormatPiece::Placeholder);
                } else {
                    return Err("States.Format: an unescaped '{' must be followed by '}' \
                                (write '\\\\{' for a literal brace)"
                        .to_string());
                }
            }
            '}' => {
                return Err("States.Format: an unescaped '}' without '{' \
                            (write '\\\\}' for a literal brace)"
                    .to_string())
            }
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        pieces.push(FormatPiece::Text(text));
    }
    Ok(pieces)
}

/// A literal argument whose type is wrong whatever the input (found when the call is parsed).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum LiteralError {
    /// The first argument is not of the type the function takes.
    #[error("{}: the first argument must be {expected}, found {found}", function.name())]
    FirstArgument {
        /// The function called.
        function: Function,
        /// What it takes, with its article ("a string", "an array").
        expected: &'static str,
        /// The literal written.
        found: Value,
    },
    /// A `States.JsonMerge` argument that is not an object.
    #[error("{}: argument {position} must be an object, found {found}", function.name())]
    NotAnObject {
        /// The function called.
        function: Function,
        /// The argument's 1-based position.
        position: usize,
        /// The literal written.
        found: Value,
    },
    /// A `States.JsonMerge` third argument other than `false`.
    #[error(
        "{}: the third argument must be false (deep merge is not supported), found {found}",
        function.name()
    )]
    DeepMerge {
        /// The function called.
        function: Function,
        /// The literal written.
        found: Value,
    },
    /// A `States.Hash` algorithm it does not know.
    #[error(
        "{}: the algorithm must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512, found {found}",
        function.name()
    )]
    UnknownAlgorithm {
        /// The function called.
        function: Function,
        /// The literal written.
        found: Value,
    },
}

/// Checks literal arguments whose type is wrong whatever the input; precomputes Format pieces.
fn check_literals(call: &Call) -> Result<(), LiteralError> {
    let function = call.function;
    if call.function == Function::Format {
        if let Some(Arg::Literal(other)) = call.args.first() {
            if !other.is_string() {
                return Err(LiteralError::FirstArgument {
                    function,
                    expected: "a string",
                    found: other.clone(),
                });
            }
        }
    }
    let literal_kind = |i: usize| match call.args.get(i) {
        Some(Arg::Literal(v)) => Some(v),
        _ => None,
    };
    let need_array = matches!(
        call.function,
        Function::ArrayPartition
            | Function::ArrayContains
            | Function::ArrayGetItem
            | Function::ArrayLength
            | Function::ArrayUnique
    );
    if need_array {
        if let Some(v) = literal_kind(0) {
            return Err(LiteralError::FirstArgument {
                function,
                expected: "an array",
                found: v.clone(),
            });
        }
    }
    let need_string = matches!(
        call.function,
        Function::StringToJson
            | Function::Base64Encode
            | Function::Base64Decode
            | Function::Hash
            | Function::StringSplit
    );
    if need_string {
        if let Some(v) = literal_kind(0) {
            let bad = if call.function == Function::Hash {
                v.is_null()
            } else {
                !v.is_string()
            };
            if bad {
                return Err(LiteralError::FirstArgument {
                    function,
                    expected: "a string",
                    found: v.clone(),
                });
            }
        }
    }
    if call.function == Function::JsonMerge {
        for i in 0..2 {
            if let Some(v) = literal_kind(i) {
                return Err(LiteralError::NotAnObject {
                    function,
                    position: i + 1,
                    found: v.clone(),
                });
            }
        }
        if let Some(v) = literal_kind(2) {
            if v != &Value::Bool(false) {
                return Err(LiteralError::DeepMerge {
                    function,
                    found: v.clone(),
                });
            }
        }
    }
    if call.function == Function::Hash {
        if let Some(v) = literal_kind(1) {
            let ok = v.as_str().is_some_and(|s| hash_algorithm(s).is_some());
            if !ok {
                return Err(LiteralError::UnknownAlgorithm {
                    function,
                    found: v.clone(),
                });
            }
        }
    }
    Ok(())
}

fn fail(function: Function, why: impl std::fmt::Display) -> StatesError {
    StatesError::new(
        STATES_INTRINSIC_FAILURE,
        format!("Invalid arguments in {}: {why}", function.name()),
    )
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn want_array(f: Function, v: Value, which: &str) -> Result<Vec<Value>, StatesError> {
    match v {
        Value::Array(items) => Ok(items),
        other => Err(fail(
            f,
            format!(
                "the {which} argument must be an array, found {} {}",
                type_name(&other),
                to_json_text(&other)
            ),
        )),
    }
}

fn want_string(f: Function, v: Value, which: &str) -> Result<String, StatesError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(fail(
            f,
            format!(
                "the {which} argument must be a string, found {} {}",
                type_name(&other),
                to_json_text(&other)
            ),
        )),
    }
}

/// An integer argument: a JSON integer, or a number with no fractional part.
fn want_integer(f: Function, v: &Value, which: &str) -> Result<i64, StatesError> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    if let Some(x) = v.as_f64() {
        if x.fract() == 0.0 && x.abs() < 9.0e15 {
            return Ok(x as i64);
        }
    }
    Err(fail(
        f,
        format!(
            "the {which} argument must be an integer, found {}",
            to_json_text(v)
        ),
    ))
}

fn check_string_length(f: Function, s: &str) -> Result<(), StatesError> {
    let chars = s.chars().count();
    if chars > limits::INTRINSIC_STRING_CHARS_MAX {
        return Err(fail(
            f,
            format!(
                "the input is {chars} characters long; the limit is {} characters",
                limits::INTRINSIC_STRING_CHARS_MAX
            ),
        ));
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum HashAlgorithm {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

fn hash_algorithm(name: &str) -> Option<HashAlgorithm> {
    match name {
        "MD5" => Some(HashAlgorithm::Md5),
        "SHA-1" => Some(HashAlgorithm::Sha1),
        "SHA-256" => Some(HashAlgorithm::Sha256),
        "SHA-384" => Some(HashAlgorithm::Sha384),
        "SHA-512" => Some(HashAlgorithm::Sha512),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// How a value prints inside `States.Format`: strings raw, numbers and literals as JSON, and
/// objects and arrays the way AWS prints them (`{a=1, b=[x, y]}`), not as JSON.
fn write_format_arg(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_format_arg(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(key);
                out.push('=');
                write_format_arg(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&to_json_text(other)),
    }
}

fn apply(
    call: &Call,
    mut values: Vec<Value>,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    let f = call.function;
    // Arity was checked at parse time; `take` keeps indexing panic-free regardless.
    let mut take = |i: usize| values.get_mut(i).map(Value::take).unwrap_or(Value::Null);
    match f {
        Function::Format => {
            let template = take(0);
            let template = want_string(f, template, "first")?;
            let computed;
            let pieces: &[FormatPiece] = match &call.format {
                Some(p) => p,
                None => {
                    computed = format_pieces(&template).map_err(|why| fail(f, why))?;
                    &computed
                }
            };
            let placeholders = pieces
                .iter()
                .filter(|p| **p == FormatPiece::Placeholder)
                .count();
            let arg_count = call.args.len() - 1;
            if placeholders != arg_count {
                return Err(fail(
                    f,
                    format!("the template has {placeholders} placeholder(s) but {arg_count} value argument(s) were given"),
                ));
            }
            let mut out = String::new();
            let mut next_arg = 1;
            for piece in pieces {
                match piece {
                    FormatPiece::Text(t) => out.push_str(t),
                    FormatPiece::Placeholder => {
                        write_format_arg(&take(next_arg), &mut out);
                        next_arg += 1;
                    }
                }
            }
            Ok(Value::String(out))
        }
        Function::StringToJson => {
            let s = want_string(f, take(0), "first")?;
            let trimmed = s.trim();
            if trimmed.is_empty() {
                return Ok(Value::Null);
            }
            let parsed: Value = serde_json::from_str(trimmed)
                .map_err(|e| fail(f, format!("the string is not valid JSON ({e}): {s}")))?;
            Ok(integral_negative_zero(parsed, trimmed))
        }
        Function::JsonToString => Ok(Value::String(to_json_text(&take(0)))),
        Function::Array => Ok(Value::Array(values)),
        Function::ArrayPartition => {
            let items = want_array(f, take(0), "first")?;
            let size = want_integer(f, &take(1), "second")?;
            if size <= 0 {
                return Err(fail(
                    f,
                    format!("the chunk size must be greater than 0, found {size}"),
                ));
            }
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            Ok(Value::Array(
                items
                    .chunks(size)
                    .map(|c| Value::Array(c.to_vec()))
                    .collect(),
            ))
        }
        Function::ArrayContains => {
            let items = want_array(f, take(0), "first")?;
            let needle = take(1);
            Ok(Value::Bool(items.iter().any(|v| json_equal(v, &needle))))
        }
        Function::ArrayRange => {
            let start = want_integer(f, &take(0), "first")?;
            let end = want_integer(f, &take(1), "second")?;
            let step = want_integer(f, &take(2), "third")?;
            if step == 0 {
                return Err(fail(f, "the step cannot be 0"));
            }
            let count = if (step > 0 && start > end) || (step < 0 && start < end) {
                0
            } else {
                (i128::from(end) - i128::from(start)) / i128::from(step) + 1
            };
            if count > limits::INTRINSIC_ARRAY_RANGE_ITEMS_MAX as i128 {
                return Err(fail(
                    f,
                    format!(
                        "the range would hold {count} elements; the limit is {}",
                        limits::INTRINSIC_ARRAY_RANGE_ITEMS_MAX
                    ),
                ));
            }
            let mut out = Vec::new();
            let mut v = i128::from(start);
            for _ in 0..count {
                out.push(Value::from(v as i64));
                v += i128::from(step);
            }
            Ok(Value::Array(out))
        }
        Function::ArrayGetItem => {
            let items = want_array(f, take(0), "first")?;
            let index = want_integer(f, &take(1), "second")?;
            let len = items.len();
            usize::try_from(index)
                .ok()
                .and_then(|i| items.into_iter().nth(i))
                .ok_or_else(|| {
                    fail(
                        f,
                        format!(
                            "the index {index} is out of bounds for an array of {len} element(s)"
                        ),
                    )
                })
        }
        Function::ArrayLength => {
            let items = want_array(f, take(0), "first")?;
            Ok(Value::from(items.len()))
        }
        Function::ArrayUnique => {
            let items = want_array(f, take(0), "first")?;
            // A canonical text per element keeps this linear (a pairwise scan is quadratic).
            let mut seen = std::collections::HashSet::with_capacity(items.len());
            let out: Vec<Value> = items
                .into_iter()
                .filter(|item| seen.insert(canonical_key(item)))
                .collect();
            Ok(Value::Array(out))
        }
        Function::Base64Encode => {
            let s = want_string(f, take(0), "first")?;
            check_string_length(f, &s)?;
            Ok(Value::String(
                base64::engine::general_purpose::STANDARD.encode(s.as_bytes()),
            ))
        }
        Function::Base64Decode => {
            let s = want_string(f, take(0), "first")?;
            check_string_length(f, &s)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s.as_bytes())
                .map_err(|e| fail(f, format!("the string is not valid base64 ({e})")))?;
            String::from_utf8(bytes)
                .map(Value::String)
                .map_err(|_| fail(f, "the decoded bytes are not UTF-8 text"))
        }
        Function::Hash => {
            let data = take(0);
            let data = match data {
                Value::String(s) => s,
                Value::Null => return Err(fail(f, "the data to hash is null")),
                other => to_json_text(&other),
            };
            check_string_length(f, &data)?;
            let algorithm = want_string(f, take(1), "second")?;
            let Some(kind) = hash_algorithm(&algorithm) else {
                return Err(fail(
                    f,
                    format!("the algorithm must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512, found '{algorithm}'"),
                ));
            };
            use sha2::Digest as _;
            let bytes = data.as_bytes();
            let digest = match kind {
                HashAlgorithm::Md5 => hex(&md5::Md5::digest(bytes)),
                HashAlgorithm::Sha1 => hex(&sha1::Sha1::digest(bytes)),
                HashAlgorithm::Sha256 => hex(&sha2::Sha256::digest(bytes)),
                HashAlgorithm::Sha384 => hex(&sha2::Sha384::digest(bytes)),
                HashAlgorithm::Sha512 => hex(&sha2::Sha512::digest(bytes)),
            };
            Ok(Value::String(digest))
        }
        Function::JsonMerge => {
            let left = take(0);
            let right = take(1);
            let deep = take(2);
            if deep != Value::Bool(false) {
                return Err(fail(
                    f,
                    format!(
                        "the third argument must be false (deep merge is not supported), found {}",
                        to_json_text(&deep)
                    ),
                ));
            }
            let (Value::Object(mut left), Value::Object(right)) = (left, right) else {
                return Err(fail(f, "the first two arguments must be objects"));
            };
            for (k, v) in right {
                left.insert(k, v);
            }
            Ok(Value::Object(left))
        }
        Function::MathRandom => {
            let start = want_rounded(f, &take(0), "first")?;
            let end = want_rounded(f, &take(1), "second")?;
            if start >= end {
                return Err(fail(
                    f,
                    format!("the start {start} must be less than the end {end}"),
                ));
            }
            let span = (i128::from(end) - i128::from(start)) as u128;
            let draw = match values.get(2) {
                Some(seed) => {
                    let seed = want_integer(f, seed, "third")?;
                    java_random_next_int(seed, span)
                }
                None => u128::from(entropy.next_u64()) % span,
            };
            Ok(Value::from((i128::from(start) + draw as i128) as i64))
        }
        Function::MathAdd => {
            let a = want_rounded(f, &take(0), "first")?;
            let b = want_rounded(f, &take(1), "second")?;
            a.checked_add(b)
                .map(Value::from)
                .ok_or_else(|| fail(f, format!("{a} + {b} overflows a 64-bit integer")))
        }
        Function::StringSplit => {
            let s = want_string(f, take(0), "first")?;
            let delimiters = want_string(f, take(1), "second")?;
            let parts: Vec<Value> = s
                .split(|c: char| delimiters.contains(c))
                .filter(|p| !p.is_empty())
                .map(|p| Value::String(p.to_string()))
                .collect();
            Ok(Value::Array(parts))
        }
        Function::Uuid => {
            let hi = entropy.next_u64();
            let lo = entropy.next_u64();
            Ok(Value::String(uuid_v4(hi, lo)))
        }
    }
}

/// serde_json reads the integer `-0` as the float `-0.0`; AWS reads it as the integer `0`.
/// When the text holds no `-0.` or `-0e`, every `-0.0` came from an integer `-0`.
fn integral_negative_zero(value: Value, text: &str) -> Value {
    let has_float_zero = ["-0.", "-0e", "-0E"].iter().any(|p| text.contains(p));
    if has_float_zero || !text.contains("-0") {
        return value;
    }
    fn fix(v: Value) -> Value {
        match v {
            Value::Number(n) if n.as_f64() == Some(0.0) && n.is_f64() => Value::from(0),
            Value::Array(items) => Value::Array(items.into_iter().map(fix).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, fix(v))).collect())
            }
            other => other,
        }
    }
    fix(value)
}

/// A number rounded the way AWS rounds MathAdd and MathRandom arguments: to the nearest
/// integer, halves toward positive infinity (`-1.5` -> `-1`, `2.5` -> `3`).
fn want_rounded(f: Function, v: &Value, which: &str) -> Result<i64, StatesError> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    match v.as_f64() {
        Some(x) if x.is_finite() && x.abs() < 9.0e15 => Ok((x + 0.5).floor() as i64),
        _ => Err(fail(
            f,
            format!(
                "the {which} argument must be a number, found {}",
                to_json_text(v)
            ),
        )),
    }
}

/// A text equal for two values exactly when [`json_equal`] holds: numbers with an integral value
/// print as integers, object keys are sorted.
fn canonical_key(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => out.push_str(&i.to_string()),
                (None, Some(u), _) => out.push_str(&u.to_string()),
                (None, None, Some(x)) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
                    out.push_str(&(x as i64).to_string())
                }
                _ => out.push_str(&n.to_string()),
            },
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    write(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (k, item) in entries {
                    out.push_str(&to_json_text(&Value::String(k.clone())));
                    out.push(':');
                    write(item, out);
                    out.push(',');
                }
                out.push('}');
            }
            other => out.push_str(&to_json_text(other)),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// JSON equality where `1` equals `1.0`.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A version-4 UUID from 128 random bits.
pub(crate) fn uuid_v4(hi: u64, lo: u64) -> String {
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// A draw in `0..span` from a seeded linear congruential generator (the well-known 48-bit one),
/// so a seeded `States.MathRandom` is deterministic without the caller's entropy.
fn java_random_next_int(seed: i64, span: u128) -> u128 {
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut state = (seed as u64 ^ MULTIPLIER) & MASK;
    state = state.wrapping_mul(MULTIPLIER).wrapping_add(0xB) & MASK;
    let bits = u128::from(state >> 16);
    bits % span
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Literal arguments of the wrong type are refused when the call is parsed, with the
    /// function and the literal named.
    #[test]
    fn wrong_literal_arguments_are_refused_by_name() {
        let cases = [
            (
                "States.ArrayLength('x')",
                "States.ArrayLength: the first argument must be an array, found \"x\"",
            ),
            (
                "States.JsonMerge(1, $.a, false)",
                "States.JsonMerge: argument 1 must be an object, found 1",
            ),
            (
                "States.JsonMerge($.a, $.b, true)",
                "States.JsonMerge: the third argument must be false (deep merge is not supported), found true",
            ),
            (
                "States.Hash($.a, 'MD4')",
                "States.Hash: the algorithm must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512, found \"MD4\"",
            ),
        ];
        for (text, message) in cases {
            let error = Call::parse(text).expect_err(text);
            assert!(error.message.contains(message), "{text}: {}", error.message);
        }
    }
}
