//! Shared harness of the conformance tests: where the corpus recorded on real AWS lives, the
//! cases a judge script selects, and judging our rendered histories with the corpus's own
//! comparator (`run.judge`, called by the judge script). A test that finds no corpus or no
//! python3 prints why and passes.

#![allow(dead_code)]

pub mod interpreter;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The corpus: `STATELOG_CONFORMANCE_DIR`, else `../shared/conformance` beside the repository.
pub fn conformance_dir() -> PathBuf {
    match std::env::var_os("STATELOG_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance"),
    }
}

/// A judge script under `tests/` and the corpus it reads.
pub struct Judge {
    script: PathBuf,
    dir: PathBuf,
}

impl Judge {
    /// The cases `tests/<script_name>` lists, or `None` (after printing the reason) when the
    /// corpus or python3 is absent.
    pub fn list(script_name: &str) -> Option<(Judge, Vec<Value>)> {
        Judge::list_selected(script_name, &[])
    }

    /// [`Judge::list`] with a selection the script understands (`["jsonata"]`).
    pub fn list_selected(script_name: &str, selection: &[&str]) -> Option<(Judge, Vec<Value>)> {
        let dir = conformance_dir();
        if !dir.join("manifest.json").exists() {
            println!(
                "SKIP: no conformance corpus at {} (set STATELOG_CONFORMANCE_DIR)",
                dir.display()
            );
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(script_name);
        let listed = match Command::new("python3")
            .arg(&script)
            .arg(&dir)
            .arg("list")
            .args(selection)
            .output()
        {
            Ok(out) if out.status.success() => out.stdout,
            Ok(out) => panic!("listing failed: {}", String::from_utf8_lossy(&out.stderr)),
            Err(e) => {
                println!("SKIP: python3 is not available ({e})");
                return None;
            }
        };
        let cases: Vec<Value> = serde_json::from_slice(&listed).expect("case list is JSON");
        Some((Judge { script, dir }, cases))
    }

    /// Judges `results` (one object per case: id, status, ARNs and AWS-shaped events, or an
    /// error), prints every line that is not a pass, asserts at least `floor` passes, and
    /// returns the ids of the cases that passed.
    pub fn judge_and_report(&self, results: &[Value], label: &str, floor: usize) -> Vec<String> {
        // Two suites may judge at once in one process: each its own file.
        static JUDGED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let results_path = std::env::temp_dir().join(format!(
            "statelog-conformance-{}-{}-{}.json",
            self.script
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("judge"),
            std::process::id(),
            JUDGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(
            &results_path,
            serde_json::to_vec(results).expect("results serialize"),
        )
        .expect("write results");
        let out = Command::new("python3")
            .arg(&self.script)
            .arg(&self.dir)
            .arg("judge")
            .arg(&results_path)
            .output()
            .expect("run the judge");
        let _ = std::fs::remove_file(&results_path);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "judge failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in text.lines().filter(|l| !l.starts_with("PASS ")) {
            println!("{line}");
        }
        let passed_ids: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("PASS "))
            .map(str::to_string)
            .collect();
        let passed = passed_ids.len();
        println!("{label}: {passed}/{} passed", results.len());
        assert!(
            passed >= floor,
            "{passed} passed, below the floor of {floor}"
        );
        passed_ids
    }
}

/// Prints how many of the listed `cases` that need `need` ran and passed (`passed`: the ids
/// [`Judge::judge_and_report`] returned), and asserts at least `floor` passes among them.
pub fn report_need(cases: &[Value], passed: &[String], need: &str, label: &str, floor: usize) {
    let with_need: Vec<&str> = cases
        .iter()
        .filter(|case| {
            case["needs"]
                .as_array()
                .is_some_and(|needs| needs.iter().any(|n| n == need))
        })
        .filter_map(|case| case["id"].as_str())
        .collect();
    let passed_count = with_need
        .iter()
        .filter(|id| passed.iter().any(|p| p == *id))
        .count();
    println!(
        "{label}: {passed_count}/{} of the cases that need '{need}' passed",
        with_need.len()
    );
    assert!(
        passed_count >= floor,
        "{passed_count} '{need}' cases passed, below the floor of {floor}"
    );
}
