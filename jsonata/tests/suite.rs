//! The jsonata-js v2.0.6 reference suite (`../shared/jsonata-suite` next to the repository, or
//! `STATELOG_JSONATA_SUITE`), every case run through statelog's evaluator.
//!
//! A case gives `expr` (or `expr-file`), `data` or `dataset` (`null`: no input), `bindings`, and
//! one of `result`, `undefinedResult` or `code` (also as `error.code`); `unordered` compares
//! arrays as multisets; `depth` becomes the evaluation depth limit (the reference's runner
//! raises `U1001` past it; the engine raises `D1011`, taken as the same); `timelimit` is
//! checked against the case's own elapsed time. The test prints the passed and failed counts
//! and the failures grouped by suite group and kind, and holds the pass count to a floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use statelog_jsonata::{Bindings, Cancel, EvalError, Expression, Host, Limits};

/// Cases that pass today; a change that passes fewer fails this test.
const FLOOR: usize = 1609;

/// The longest any case may run before it is cancelled.
const CUT_OFF: Duration = Duration::from_secs(10);

struct FixedHost;

impl Host for FixedHost {
    fn now_ms(&mut self) -> i64 {
        1_700_000_000_000
    }
    fn next_u64(&mut self) -> u64 {
        0x5eed
    }
}

fn suite_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("STATELOG_JSONATA_SUITE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/jsonata-suite"),
    };
    dir.join("groups").is_dir().then_some(dir)
}

#[derive(Debug)]
enum Expect {
    Result(Value),
    Undefined,
    Code(String),
}

struct Case {
    group: String,
    name: String,
    expr: String,
    input: Option<Value>,
    bindings: BTreeMap<String, Value>,
    expect: Expect,
    unordered: bool,
    depth: Option<usize>,
    timelimit: Option<Duration>,
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether `text` escapes a lone UTF-16 surrogate (`\uD800`), which no Rust string holds.
fn has_lone_surrogate(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "\\ud8", "\\ud9", "\\uda", "\\udb", "\\udc", "\\udd", "\\ude", "\\udf",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// The cases, and the files skipped with the reason.
fn load(dir: &Path) -> (Vec<Case>, Vec<String>) {
    let mut skipped = Vec::new();
    let mut datasets = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("datasets")).expect("datasets") {
        let path = entry.expect("dataset entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .to_string();
            datasets.insert(name, read_json(&path));
        }
    }
    let mut groups: Vec<PathBuf> = std::fs::read_dir(dir.join("groups"))
        .expect("groups")
        .map(|e| e.expect("group entry").path())
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    let mut cases = Vec::new();
    for group_dir in groups {
        let group = group_dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&group_dir)
            .expect("group")
            .map(|e| e.expect("case entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in files {
            let stem = file
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .to_string();
            let text = std::fs::read_to_string(&file).expect("case file");
            let parsed: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) if has_lone_surrogate(&text) => {
                    skipped.push(format!(
                        "{group}/{stem}: holds a lone UTF-16 surrogate, which a Rust string cannot"
                    ));
                    continue;
                }
                Err(e) => panic!("{}: {e}", file.display()),
            };
            let list = match parsed {
                Value::Array(items) => items,
                one => vec![one],
            };
            let many = list.len() > 1;
            for (i, case) in list.into_iter().enumerate() {
                let name = if many {
                    format!("{stem}[{i}]")
                } else {
                    stem.clone()
                };
                cases.push(case_of(&group, name, &group_dir, &case, &datasets));
            }
        }
    }
    (cases, skipped)
}

fn case_of(
    group: &str,
    name: String,
    group_dir: &Path,
    case: &Value,
    datasets: &BTreeMap<String, Value>,
) -> Case {
    let expr = match (case.get("expr"), case.get("expr-file")) {
        (Some(Value::String(e)), _) => e.clone(),
        (_, Some(Value::String(f))) => std::fs::read_to_string(group_dir.join(f))
            .unwrap_or_else(|e| panic!("{group}/{name}: {f}: {e}")),
        _ => panic!("{group}/{name}: no expr"),
    };
    let input = match (case.get("data"), case.get("dataset")) {
        (Some(data), _) => Some(data.clone()),
        (None, Some(Value::String(d))) => Some(
            datasets
                .get(d)
                .unwrap_or_else(|| panic!("{group}/{name}: no dataset {d}"))
                .clone(),
        ),
        _ => None,
    };
    let bindings = match case.get("bindings") {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => BTreeMap::new(),
    };
    let code = case
        .get("code")
        .or_else(|| case.get("error").and_then(|e| e.get("code")))
        .and_then(Value::as_str);
    let expect = if let Some(code) = code {
        Expect::Code(code.to_string())
    } else if case.get("undefinedResult") == Some(&Value::Bool(true)) {
        Expect::Undefined
    } else if let Some(result) = case.get("result") {
        Expect::Result(result.clone())
    } else {
        panic!("{group}/{name}: no expected outcome")
    };
    Case {
        group: group.to_string(),
        name,
        expr,
        input,
        bindings,
        expect,
        unordered: case.get("unordered") == Some(&Value::Bool(true)),
        depth: case
            .get("depth")
            .and_then(Value::as_u64)
            .map(|d| d as usize),
        timelimit: case
            .get("timelimit")
            .and_then(Value::as_u64)
            .map(Duration::from_millis),
    }
}

/// JSON equality with numbers compared as f64 (`1` equals `1.0`), arrays optionally unordered.
fn same(a: &Value, b: &Value, unordered: bool) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) if unordered => {
            x.len() == y.len() && {
                let mut used = vec![false; y.len()];
                x.iter().all(|xi| {
                    let hit = y
                        .iter()
                        .enumerate()
                        .find(|(j, yj)| !used[*j] && same(xi, yj, true));
                    hit.map(|(j, _)| used[j] = true).is_some()
                })
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b, false))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same(v, w, unordered)))
        }
        _ => a == b,
    }
}

/// `None`: passed; otherwise the failure's kind and detail.
fn run(case: &Case) -> Option<(String, String)> {
    let started = Instant::now();
    let outcome: Result<Option<Value>, String> = match Expression::compile(&case.expr) {
        Err(e) => {
            Err(format!("compile:{}", e.code.clone().unwrap_or_default()) + "|" + &e.to_string())
        }
        Ok(expr) => {
            let mut bindings = Bindings::new();
            for (name, value) in &case.bindings {
                bindings.set(name, value);
            }
            // A watchdog cancels a case that runs past its time limit (or CUT_OFF).
            let cancel = Cancel::new();
            let limits = Limits {
                max_depth: case.depth,
                timeout_ms: None,
                cancel: Some(cancel.clone()),
            };
            let budget = case.timelimit.unwrap_or(CUT_OFF).min(CUT_OFF);
            let (done, finished) = std::sync::mpsc::channel::<()>();
            let watchdog = std::thread::spawn(move || {
                if finished.recv_timeout(budget).is_err() {
                    cancel.cancel();
                }
            });
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                expr.evaluate_with_limits(case.input.as_ref(), &bindings, &mut FixedHost, limits)
            }));
            let _ = done.send(());
            let _ = watchdog.join();
            match result {
                Err(_) => return Some(("panic".into(), String::new())),
                Ok(Ok(v)) => Ok(v),
                Ok(Err(EvalError::Jsonata { code, message })) => {
                    Err(format!("eval:{}|{message}", code.unwrap_or_default()))
                }
                Ok(Err(e @ EvalError::NotJson { .. })) => Err(format!("eval:|{e}")),
            }
        }
    };
    let elapsed = started.elapsed();
    if let Some(limit) = case.timelimit {
        println!(
            "timed {}/{}: {elapsed:.2?} of {limit:?}",
            case.group, case.name
        );
    }
    let failure = match (&case.expect, &outcome) {
        (Expect::Result(want), Ok(Some(got))) if same(want, got, case.unordered) => None,
        (Expect::Result(want), Ok(Some(got))) => Some((
            "wrong result".to_string(),
            format!("want {want}, got {got}"),
        )),
        (Expect::Result(want), Ok(None)) => Some((
            "undefined instead of a result".into(),
            format!("want {want}"),
        )),
        (Expect::Undefined, Ok(None)) => None,
        (Expect::Undefined, Ok(Some(got))) => {
            Some(("a result instead of undefined".into(), format!("got {got}")))
        }
        (Expect::Code(want), Ok(got)) => Some((
            format!("no error (want {want})"),
            format!(
                "got {}",
                got.as_ref().map_or("undefined".into(), Value::to_string)
            ),
        )),
        (Expect::Code(want), Err(e)) => {
            let code = e
                .split('|')
                .next()
                .unwrap_or("")
                .split(':')
                .nth(1)
                .unwrap_or("");
            let depth_overflow = case.depth.is_some() && want == "U1001" && code == "D1011";
            if code == want || depth_overflow {
                None
            } else if case.expr.contains("$eval") && code == "T1006" {
                Some(("$eval refused (Step Functions)".into(), e.clone()))
            } else {
                Some((
                    format!("wrong error code (want {want}, got '{code}')"),
                    e.clone(),
                ))
            }
        }
        (_, Err(e)) if case.expr.contains("$eval") && e.starts_with("eval:T1006") => {
            Some(("$eval refused (Step Functions)".into(), e.clone()))
        }
        (_, Err(e)) => Some(("error instead of a result".into(), e.clone())),
    };
    if failure.is_none() {
        if let Some(limit) = case.timelimit {
            if elapsed > limit {
                return Some((
                    "over its time limit".into(),
                    format!("{elapsed:?} > {limit:?}"),
                ));
            }
        }
    }
    failure
}

#[test]
fn reference_suite() {
    let Some(dir) = suite_dir() else {
        println!(
            "skipped: the JSONata suite is not at ../shared/jsonata-suite (set STATELOG_JSONATA_SUITE)"
        );
        return;
    };
    let (cases, skipped) = load(&dir);
    // A panic inside the engine is counted as a failure, not printed per case.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut passed = 0;
    let verbose = std::env::var_os("STATELOG_JSONATA_SUITE_VERBOSE").is_some();
    for case in &cases {
        if verbose {
            println!("running {}/{}", case.group, case.name);
        }
        match run(case) {
            None => passed += 1,
            Some((kind, detail)) => {
                let line = format!("{}: {}  [{}]", case.name, case.expr.trim(), detail);
                failures
                    .entry((case.group.clone(), kind))
                    .or_default()
                    .push(line);
            }
        }
    }
    std::panic::set_hook(default_hook);
    let failed = cases.len() - passed;
    println!(
        "JSONata reference suite ({}): {} cases",
        dir.display(),
        cases.len()
    );
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for ((group, kind), lines) in &failures {
        *by_kind.entry(kind.clone()).or_default() += lines.len();
        println!("  {group}: {kind}: {}", lines.len());
        let shown = if verbose { lines.len() } else { 3 };
        for line in lines.iter().take(shown) {
            let line: String = line.chars().take(300).collect();
            println!("      {line}");
        }
    }
    println!("failure kinds:");
    for (kind, n) in &by_kind {
        println!("  {kind}: {n}");
    }
    for s in &skipped {
        println!("skipped {s}");
    }
    println!(
        "jsonata suite: {passed} passed, {failed} failed, {} skipped",
        skipped.len()
    );
    assert!(
        passed >= FLOOR,
        "{passed} cases passed, fewer than the floor of {FLOOR}"
    );
}
