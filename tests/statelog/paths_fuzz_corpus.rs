//! Scenario: every saved fuzz input of the `jsonpath_eval` and `intrinsic_parse` targets (seed
//! corpus and minimized crash regressions) still runs cleanly through the same entry functions
//! the fuzz targets call, on stable, without cargo-fuzz. Also feeds a set of hostile inputs
//! (deep nesting, blow-up paths, huge unions) that must finish quickly and without a panic.

use std::path::PathBuf;

use statelog::paths::fuzzing::{intrinsic_parse, jsonpath_eval};

fn replay(target: &str, entry: fn(&[u8])) -> usize {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz"));
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        let dir = root.join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for file in entries.flatten() {
            let path = file.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            let bytes = std::fs::read(&path).expect("corpus file readable");
            entry(&bytes);
            count += 1;
        }
    }
    count
}

#[test]
fn jsonpath_eval_corpus_replays() {
    let count = replay("jsonpath_eval", jsonpath_eval);
    println!("jsonpath_eval: {count} inputs replayed");
    assert!(count >= 7, "the seed corpus is missing ({count} files)");
}

#[test]
fn intrinsic_parse_corpus_replays() {
    let count = replay("intrinsic_parse", intrinsic_parse);
    println!("intrinsic_parse: {count} inputs replayed");
    assert!(count >= 8, "the seed corpus is missing ({count} files)");
}

#[test]
fn hostile_inputs_finish_without_panic() {
    let deep_doc = format!("{}1{}", "[".repeat(120), "]".repeat(120));
    let wide_doc = format!("[{}1]", "[1,[1,[1,{\"a\":1}]]],".repeat(2000));
    let hostile_paths = [
        format!("$..*..*..*..*..*..*\n{wide_doc}"),
        format!("$..a..a..a..a..a..a..a\n{wide_doc}"),
        format!("$[{}]\n{wide_doc}", vec!["0"; 256].join(",")),
        format!(
            "$.*[*][*][*]{}\n{wide_doc}",
            "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]".repeat(20)
        ),
        format!("$..[?(@ == $..*)]\n{wide_doc}"),
        format!("$..*\n{deep_doc}"),
        format!("$[?({}@{})]", "(".repeat(200), ")".repeat(200)),
        format!("$[?({}@)]", "!".repeat(5000)),
        format!("$.{}", ".a".repeat(5000)),
        "$['\\".to_string(),
        "$[-9223372036854775808]".to_string(),
        "$[9223372036854775807:-9223372036854775808:-9223372036854775807]\n[1,2,3]".to_string(),
        "$[::-1]\n[1,2,3]".to_string(),
        "\u{0}$\u{ffff}".to_string(),
    ];
    for input in &hostile_paths {
        jsonpath_eval(input.as_bytes());
    }
    let hostile_calls = [
        format!("{}1{}", "States.Array(".repeat(100), ")".repeat(100)),
        format!("States.Array({})", vec!["1"; 300].join(",")),
        "States.ArrayRange(-9223372036854775808, 9223372036854775807, 1)".to_string(),
        "States.ArrayRange(9223372036854775807, -9223372036854775808, -9223372036854775808)".to_string(),
        "States.ArrayPartition(States.ArrayRange(1, 1000, 1), 9223372036854775807)".to_string(),
        "States.MathAdd(9223372036854775807, 9223372036854775807)".to_string(),
        "States.MathAdd(1e300, 1)".to_string(),
        "States.MathRandom(-9223372036854775808, 9223372036854775807)".to_string(),
        "States.MathRandom(-9223372036854775808, 9223372036854775807, -1)".to_string(),
        "States.ArrayGetItem($.a, -9223372036854775808)".to_string(),
        "States.Format('{}{}{}{}', 1)".to_string(),
        "States.Format('\\".to_string(),
        "States.StringToJson('[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[')".to_string(),
        "States.Base64Decode('////')".to_string(),
        "States.Hash($.o, 'MD5')".to_string(),
    ];
    for input in &hostile_calls {
        intrinsic_parse(input.as_bytes());
    }
}
