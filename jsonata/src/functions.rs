//! The functions Step Functions adds to JSONata (`$partition`, `$range`, `$hash`, `$random`
//! with an optional seed, `$uuid`, `$parse`), `$eval` refused, and the engine's impure
//! built-ins (`$now`, `$millis`, `$random`, `$shuffle`) answered from the caller's [`Host`].
//!
//! Only the functions an expression names are registered for its evaluation, and the host is
//! asked only for what those need.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use jsonata_core::ast::AstNode;
use jsonata_core::evaluator::{Context, Evaluator, EvaluatorError};
use jsonata_core::value::JValue;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::{EvalError, Host};

/// The most items `$range` makes: the bound JSONata puts on its own range operator (`D2014`).
const MAX_RANGE_ITEMS: f64 = 1e7;

type HostResult = Result<JValue, EvaluatorError>;

/// A host function as registered.
type HostFunction = Box<dyn Fn(&[JValue]) -> HostResult>;

fn coded(code: &str, message: impl std::fmt::Display) -> EvaluatorError {
    EvaluatorError::EvaluationError(format!("{code}: {message}"))
}

/// A message without a JSONata code (Step Functions' own functions refusing an argument).
fn plain(message: impl Into<String>) -> EvaluatorError {
    EvaluatorError::EvaluationError(message.into())
}

fn signature_mismatch(function: &str, position: usize) -> EvaluatorError {
    coded(
        "T0410",
        format!("Argument {position} of function \"{function}\" does not match function signature"),
    )
}

fn too_many(function: &str, args: &[JValue], most: usize) -> Result<(), EvaluatorError> {
    if args.len() > most {
        return Err(signature_mismatch(function, most + 1));
    }
    Ok(())
}

fn arg(args: &[JValue], i: usize) -> &JValue {
    args.get(i).unwrap_or(&JValue::Undefined)
}

fn engine_error(what: &str, e: EvaluatorError) -> EvalError {
    EvalError::Jsonata {
        code: None,
        message: format!("registering {what}: {}", e.message()),
    }
}

/// Registers, on `evaluator`, the functions named in `calls` that statelog supplies, asking
/// `host` for the time and a seed if those functions need them.
pub(crate) fn register(
    evaluator: &mut Evaluator,
    calls: &BTreeSet<String>,
    host: &mut dyn Host,
) -> Result<(), EvalError> {
    let named = |n: &str| calls.contains(n);
    let overriding = |ev: &mut Evaluator, name: &str, f: HostFunction| {
        ev.register_fn_override(name, move |args: &[JValue]| f(args))
            .map_err(|e| engine_error(name, e))
    };
    let adding = |ev: &mut Evaluator, name: &str, f: fn(&[JValue]) -> HostResult| {
        ev.register_fn(name, f).map_err(|e| engine_error(name, e))
    };

    if named("now") || named("millis") {
        let now = host.now_ms();
        overriding(evaluator, "millis", Box::new(move |args| millis(now, args)))?;
        let format = Rc::new(FromMillis::default());
        overriding(
            evaluator,
            "now",
            Box::new(move |args| format.now(now, args)),
        )?;
    }
    if named("random") || named("uuid") || named("shuffle") {
        let rng = Rc::new(RefCell::new(SplitMix64(host.next_u64())));
        let r = Rc::clone(&rng);
        overriding(evaluator, "random", Box::new(move |args| random(&r, args)))?;
        let r = Rc::clone(&rng);
        overriding(
            evaluator,
            "shuffle",
            Box::new(move |args| shuffle(&r, args)),
        )?;
        let r = rng;
        evaluator
            .register_fn("uuid", move |args: &[JValue]| uuid(&r, args))
            .map_err(|e| engine_error("uuid", e))?;
    }
    if named("eval") {
        overriding(evaluator, "eval", Box::new(|_| Err(eval_refused())))?;
    }
    if named("partition") {
        adding(evaluator, "partition", partition)?;
    }
    if named("range") {
        adding(evaluator, "range", range)?;
    }
    if named("hash") {
        adding(evaluator, "hash", hash)?;
    }
    if named("parse") {
        adding(evaluator, "parse", parse)?;
    }
    Ok(())
}

/// `$eval` is not offered in Step Functions (`$parse` reads JSON text); calling it is calling
/// a name that holds no function.
fn eval_refused() -> EvaluatorError {
    coded("T1006", "Attempted to invoke a non-function")
}

fn millis(now: i64, args: &[JValue]) -> HostResult {
    too_many("millis", args, 0)?;
    Ok(JValue::Number(now as f64))
}

/// `$now([picture [, timezone]])` formats the host's instant with the engine's own
/// `$fromMillis`, so the picture language is the engine's.
#[derive(Default)]
struct FromMillis {
    parsed: RefCell<Vec<(usize, Rc<AstNode>)>>,
}

impl FromMillis {
    fn now(&self, now: i64, args: &[JValue]) -> HostResult {
        too_many("now", args, 2)?;
        let count = args
            .iter()
            .rposition(|a| !a.is_undefined())
            .map_or(0, |i| i + 1);
        let ast = self.expression(count)?;
        let mut context = Context::new();
        context.bind("ms".to_string(), JValue::Number(now as f64));
        for (i, name) in ["picture", "timezone"].iter().enumerate().take(count) {
            context.bind((*name).to_string(), arg(args, i).clone());
        }
        Evaluator::with_context(context).evaluate(&ast, &JValue::Undefined)
    }

    fn expression(&self, count: usize) -> Result<Rc<AstNode>, EvaluatorError> {
        if let Some((_, ast)) = self.parsed.borrow().iter().find(|(n, _)| *n == count) {
            return Ok(Rc::clone(ast));
        }
        let text = match count {
            0 => "$fromMillis($ms)",
            1 => "$fromMillis($ms, $picture)",
            _ => "$fromMillis($ms, $picture, $timezone)",
        };
        let ast = jsonata_core::parser::parse(text)
            .map(Rc::new)
            .map_err(|e| plain(format!("$now: {e}")))?;
        self.parsed.borrow_mut().push((count, Rc::clone(&ast)));
        Ok(ast)
    }
}

/// The generator `$random()`, `$shuffle` and `$uuid` share during one evaluation, seeded
/// from the host (SplitMix64).
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in `[0, 1)` with 53 random bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `$random()`: the next draw of the evaluation's generator. `$random(seed)`: a draw that
/// depends only on the integer `seed` (the 48-bit linear congruential generator, first
/// double), so the same seed always gives the same number.
fn random(rng: &RefCell<SplitMix64>, args: &[JValue]) -> HostResult {
    too_many("random", args, 1)?;
    match arg(args, 0) {
        JValue::Undefined => Ok(JValue::Number(rng.borrow_mut().next_f64())),
        JValue::Number(seed) if seed.fract() == 0.0 && seed.is_finite() => {
            Ok(JValue::Number(seeded_random(*seed as i64)))
        }
        _ => Err(plain(
            "The seed argument of the random function must be an integer",
        )),
    }
}

pub(crate) fn seeded_random(seed: i64) -> f64 {
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut state = (seed as u64 ^ MULTIPLIER) & MASK;
    let mut next = |bits: u32| {
        state = state.wrapping_mul(MULTIPLIER).wrapping_add(0xB) & MASK;
        state >> (48 - bits)
    };
    let high = next(26);
    let low = next(27);
    ((high << 27) + low) as f64 / (1u64 << 53) as f64
}

/// `$shuffle(array)` with the evaluation's generator (Fisher-Yates).
fn shuffle(rng: &RefCell<SplitMix64>, args: &[JValue]) -> HostResult {
    too_many("shuffle", args, 1)?;
    let mut items = match arg(args, 0) {
        JValue::Undefined => return Ok(JValue::Undefined),
        JValue::Array(items) => items.iter().cloned().collect::<Vec<_>>(),
        other => vec![other.clone()],
    };
    let mut rng = rng.borrow_mut();
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
    Ok(JValue::array(items))
}

/// `$uuid()`: a version 4 UUID from the evaluation's generator.
fn uuid(rng: &RefCell<SplitMix64>, args: &[JValue]) -> HostResult {
    too_many("uuid", args, 0)?;
    let mut rng = rng.borrow_mut();
    let (hi, lo) = (rng.next_u64(), rng.next_u64());
    Ok(JValue::string(uuid_v4(hi, lo)))
}

pub(crate) fn uuid_v4(hi: u64, lo: u64) -> String {
    let hi = (hi & !0xF000) | 0x4000; // version 4
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62); // RFC 4122 variant
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}

/// An integer argument, or `None` where it is not one.
fn integer(value: &JValue) -> Option<i64> {
    match value {
        JValue::Number(n)
            if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 =>
        {
            Some(*n as i64)
        }
        _ => None,
    }
}

/// `$partition(array, size)`: the array cut into chunks of `size` items, the last one
/// shorter when the items run out. A value that is not an array counts as a one-item array.
fn partition(args: &[JValue]) -> HostResult {
    too_many("partition", args, 2)?;
    let items: Vec<JValue> = match arg(args, 0) {
        JValue::Undefined => return Ok(JValue::Undefined),
        JValue::Array(items) => items.iter().cloned().collect(),
        JValue::Lambda(_) | JValue::Builtin { .. } | JValue::Regex { .. } => {
            return Err(signature_mismatch("partition", 1))
        }
        other => vec![other.clone()],
    };
    let size =
        match arg(args, 1) {
            JValue::Number(_) => match integer(arg(args, 1)) {
                Some(n) if n > 0 => n as usize,
                _ => return Err(plain(
                    "The chunk size argument of the partition function must be a positive integer",
                )),
            },
            _ => return Err(signature_mismatch("partition", 2)),
        };
    let chunks = items
        .chunks(size)
        .map(|c| JValue::array(c.to_vec()))
        .collect();
    Ok(JValue::array(chunks))
}

/// `$range(start, end, step)`: the integers from `start` stepping by `step` up to and
/// including `end` (down to it when `step` is negative); a sequence, so a single item comes
/// out as itself.
fn range(args: &[JValue]) -> HostResult {
    too_many("range", args, 3)?;
    if args.iter().any(JValue::is_undefined) {
        return Ok(JValue::Undefined);
    }
    if args.len() < 3 {
        return Err(signature_mismatch("range", args.len() + 1));
    }
    let mut ints = [0i64; 3];
    for (i, slot) in ints.iter_mut().enumerate() {
        *slot = match arg(args, i) {
            JValue::Number(_) => integer(arg(args, i)).ok_or_else(|| {
                plain(format!(
                    "Argument {} of the range function must be an integer",
                    i + 1
                ))
            })?,
            _ => return Err(signature_mismatch("range", i + 1)),
        };
    }
    let [start, end, step] = ints;
    if step == 0 {
        return Err(plain(
            "The step argument of the range function must not be 0",
        ));
    }
    let count = if (step > 0 && end < start) || (step < 0 && end > start) {
        0.0
    } else {
        ((end as f64 - start as f64) / step as f64).floor() + 1.0
    };
    if count > MAX_RANGE_ITEMS {
        return Err(coded(
            "D2014",
            format!(
                "The size of the sequence allocated by the range function must not exceed {MAX_RANGE_ITEMS:e}. Attempted to allocate {count:e}."
            ),
        ));
    }
    let items = (0..count as i64)
        .map(|k| JValue::Number((start + k * step) as f64))
        .collect();
    Ok(JValue::sequence(items))
}

/// `$hash(text, algorithm)`: the lowercase hex digest of the UTF-8 text with `MD5`, `SHA-1`,
/// `SHA-256`, `SHA-384` or `SHA-512`.
fn hash(args: &[JValue]) -> HostResult {
    too_many("hash", args, 2)?;
    let text = match arg(args, 0) {
        JValue::Undefined => return Ok(JValue::Undefined),
        JValue::String(s) => s.clone(),
        _ => return Err(signature_mismatch("hash", 1)),
    };
    let algorithm = match arg(args, 1) {
        JValue::String(s) => s.clone(),
        _ => return Err(signature_mismatch("hash", 2)),
    };
    let bytes = text.as_bytes();
    let digest: Vec<u8> = match &*algorithm {
        "MD5" => Md5::digest(bytes).to_vec(),
        "SHA-1" => Sha1::digest(bytes).to_vec(),
        "SHA-256" => Sha256::digest(bytes).to_vec(),
        "SHA-384" => Sha384::digest(bytes).to_vec(),
        "SHA-512" => Sha512::digest(bytes).to_vec(),
        other => {
            return Err(plain(format!(
                "The hash algorithm of the hash function must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512; got '{other}'"
            )))
        }
    };
    let mut hex = String::with_capacity(digest.len() * 2);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    Ok(JValue::string(hex))
}

/// `$parse(text)`: the JSON value the text holds.
fn parse(args: &[JValue]) -> HostResult {
    too_many("parse", args, 1)?;
    let text = match arg(args, 0) {
        JValue::Undefined => return Ok(JValue::Undefined),
        JValue::String(s) => s.clone(),
        _ => return Err(signature_mismatch("parse", 1)),
    };
    let not_json = |e: serde_json::Error| {
        plain(format!(
            "The argument of the parse function is not JSON: {e}"
        ))
    };
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    deserializer.disable_recursion_limit();
    let value: serde_json::Value =
        serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut deserializer))
            .map_err(not_json)?;
    deserializer.end().map_err(not_json)?;
    Ok(crate::convert::to_jvalue(&value))
}
