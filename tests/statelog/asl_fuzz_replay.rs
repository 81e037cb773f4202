//! Replays the `asl_parse_validate` fuzz corpus and regressions through the same oracle the
//! fuzz target uses, as a plain `cargo test` on stable (no cargo-fuzz needed).

use std::path::PathBuf;

#[test]
fn asl_parse_validate_corpus_replays_cleanly() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz"));
    let mut replayed = 0;
    for dir in [
        "corpus/asl_parse_validate",
        "regressions/asl_parse_validate",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            println!("no {dir}: nothing to replay there");
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            statelog::asl::fuzz::parse_validate_oracle(&data);
            replayed += 1;
        }
    }
    println!("replayed {replayed} asl_parse_validate inputs");
    assert!(
        replayed >= 4,
        "the seed corpus is missing: only {replayed} inputs"
    );
}
