//! `statelog validate FILE.json` as a user runs it: one `FILE: valid` line and exit 0 for a good
//! definition; one `path: message` line per problem and a non-zero exit for a bad one; exit 2
//! when the file cannot be read.

use std::path::PathBuf;
use std::process::Command;

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("statelog-asl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write definition");
    path
}

fn validate(path: &std::path::Path) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .arg("validate")
        .arg(path)
        .output()
        .expect("run statelog");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn valid_definition_prints_one_line_and_exits_zero() {
    let path = write_temp(
        "ok.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Succeed"}}}"#,
    );
    let (code, stdout) = validate(&path);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout, format!("{}: valid\n", path.display()));
}

#[test]
fn invalid_definition_lists_every_problem_and_exits_nonzero() {
    let path = write_temp(
        "bad.json",
        r#"{"StartAt": "A", "States": {
            "A": {"Type": "Pass", "Next": "Nowhere", "Bogus": 1},
            "B": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
                  "Retry": [{"ErrorEquals": ["E"], "BackoffRate": 0.5}]}}}"#,
    );
    let (code, stdout) = validate(&path);
    assert_eq!(code, 1, "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    for expected in [
        "/States/A/Bogus: ",
        "/States/A/Next: ",
        "/States/B/Retry/0/BackoffRate: ",
        "/States/B: ",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "no line starts with {expected:?} in {lines:?}"
        );
    }
    assert!(lines.len() >= 4, "{lines:?}");
}

#[test]
fn unreadable_file_exits_two() {
    let missing = std::env::temp_dir().join("statelog-asl-cli-does-not-exist.json");
    let (code, stdout) = validate(&missing);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
}
