//! The SIGKILL crash tests' harness. A child is this test binary run again with one test selected
//! (`--exact NAME`) and environment variables that put that test in child mode; the parent reads
//! the child's progress lines and kills it with SIGKILL after a seeded random number of them, so
//! it never sleeps. `STATELOG_CRASH_SEED` and `STATELOG_CRASH_CYCLES` tune every such test.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The seeded generator of kill points for `seed`: xorshift64 with the low bit forced, as the
/// kill points were always drawn, so a printed `STATELOG_CRASH_SEED` replays the same kills.
pub fn kill_points(seed: u64) -> statelog_rng::Rng {
    statelog_rng::Rng::new(seed | 1)
}

/// The seed and the number of cycles, from `STATELOG_CRASH_SEED` and `STATELOG_CRASH_CYCLES`, or
/// these defaults; printed under `name` so that a failure can be replayed.
pub fn seed_and_cycles(name: &str, default_seed: u64, default_cycles: u64) -> (u64, u64) {
    let read = |var: &str| std::env::var(var).ok().and_then(|s| s.parse().ok());
    let seed = read("STATELOG_CRASH_SEED").unwrap_or(default_seed);
    let cycles = read("STATELOG_CRASH_CYCLES").unwrap_or(default_cycles);
    println!("{name}: seed {seed}, {cycles} cycles (STATELOG_CRASH_SEED to replay)");
    (seed, cycles)
}

/// The name libtest selects test `name` of module `module` by: `module` is the caller's
/// `module_path!()`, which starts with the crate's name where libtest's names do not
/// (`statelog::engine_crash` and `crash_child` give `engine_crash::crash_child`).
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, inside)) => format!("{inside}::{name}"),
        None => name.to_string(),
    }
}

/// Runs this test binary again with only the test `test` of module `module` (the caller's
/// `module_path!()`) selected and `env` set, its standard output piped to the caller. An
/// `--exact` name that matches nothing would run no test and exit 0, a child that "finished"
/// without doing anything, so the name is built here rather than spelt by each caller.
pub fn spawn_child(module: &str, test: &str, env: &[(&str, String)]) -> Child {
    let exe = std::env::current_exe().expect("test binary path");
    let test = test_path(module, test);
    Command::new(exe)
        .args(["--exact", &test, "--nocapture", "--test-threads", "1"])
        .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("child starts")
}

/// Hands each line of `child` to `on_line`, which says whether it counts, and SIGKILLs the
/// child at the `lines_before_kill`-th line that counts. Reaps it; a child that ends before
/// that must have succeeded. Returns whether it was killed.
pub fn run_until_killed(
    mut child: Child,
    lines_before_kill: u64,
    mut on_line: impl FnMut(&str) -> bool,
) -> bool {
    let stdout = child.stdout.take().expect("piped");
    let (mut counted, mut killed) = (0u64, false);
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if !on_line(&line) {
            continue;
        }
        counted += 1;
        if counted >= lines_before_kill {
            child.kill().expect("SIGKILL");
            killed = true;
            break;
        }
    }
    let status = child.wait().expect("child reaped");
    assert!(
        status.success() || killed,
        "the child failed on its own: {status}"
    );
    killed
}

/// Hands every line of `child` to `on_line` (to the end: a closed pipe would fail the child's
/// last prints) and asserts that it succeeded.
pub fn run_to_end(mut child: Child, mut on_line: impl FnMut(&str)) {
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        on_line(&line);
    }
    assert!(
        child.wait().expect("child reaped").success(),
        "the last child finishes"
    );
}

#[test]
fn test_path_drops_the_crate_name_as_libtest_does() {
    assert_eq!(
        test_path("statelog::engine_crash", "crash_child"),
        "engine_crash::crash_child"
    );
    assert_eq!(test_path("statelog::a::b", "t"), "a::b::t");
    assert_eq!(test_path("statelog", "t"), "t");
    // This very test, as libtest names it.
    assert_eq!(
        test_path(
            module_path!(),
            "test_path_drops_the_crate_name_as_libtest_does"
        ),
        "kill_common::test_path_drops_the_crate_name_as_libtest_does"
    );
}
