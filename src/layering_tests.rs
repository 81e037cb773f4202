//! Layering checks: the dependency rules of `STYLE.md` §2 that the compiler does not enforce.
//!
//! - The server and the CLI use only the engine's public API: no file under `src/server/`,
//!   `src/cli/` or `src/main.rs` names `statelog_core`, `statelog_store`, `statelog_wal`,
//!   `statelog_jsonata`, or the
//!   root crate's re-exports of them (`crate::{asl, history, paths, interpreter, store}`,
//!   `statelog::{...}`). What they need comes from `statelog_engine` (`crate::engine`).
//! - The core stays pure: `statelog-core`'s normal dependencies (default features) bring no
//!   tokio, mio, socket2, getrandom, rand, chrono, jsonata-core or memmap2, no workspace crate
//!   (the JSONata evaluator is above it), and libc only under `stacker`
//!   (and `cpufeatures` on targets where it reads the CPU's features); its source names no
//!   `std::fs`, `std::net`, `std::process`, `SystemTime` or `Instant::now`.
//! - The WAL depends on no workspace crate; nor do the cluster crate and the items crate.
//! - The SWF model stays pure: `statelog-swf` depends directly on serde, serde_json, thiserror
//!   and postcard only, reaches no crate the core may not reach, no libc and no workspace
//!   crate; its source names no `std::fs`, `std::net`, `std::process`, `SystemTime`,
//!   `Instant::now` or `std::thread`.
//!
//! Each failure names the offending file and line, or the dependency path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The modules of the root crate that re-export the layers below the engine.
const LOWER_MODULES: [&str; 5] = ["asl", "history", "paths", "interpreter", "store"];

/// The crates below the engine, as Rust spells them (the JSONata evaluator included: the
/// engine hands it to the parser, nothing above names it; the SWF model too: the server names
/// its API types through the engine's `engine::swf`).
const LOWER_CRATES: [&str; 5] = [
    "statelog_core",
    "statelog_store",
    "statelog_wal",
    "statelog_jsonata",
    "statelog_swf",
];

/// Crates the core must not depend on, even indirectly: the runtime, OS randomness, file maps,
/// and the JSONata evaluator with its generator and clock (the core holds only the seam).
const CORE_FORBIDDEN_CRATES: [&str; 9] = [
    "tokio",
    "mio",
    "getrandom",
    "memmap2",
    "socket2",
    "rand",
    "rand_core",
    "chrono",
    "jsonata-core",
];

/// The only crates of the core's graph allowed to depend on libc: `stacker` grows the stack to
/// read deeply nested stored payloads (`history::depth`); `cpufeatures` reads the CPU's features
/// for sha1/sha2 on some targets. Neither does I/O.
const LIBC_DEPENDENTS_ALLOWED: [&str; 2] = ["stacker", "cpufeatures"];

/// Spellings the core's source must not contain: files, sockets and wall or monotonic time.
const CORE_FORBIDDEN_SOURCE: [&str; 5] = [
    "std::fs",
    "std::net",
    "SystemTime",
    "Instant::now",
    "std::process",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `source` with comments and string and char literals blanked out (newlines kept, so line
/// numbers hold): only code is left to match.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && !is_ident(prev(&chars, i)) {
            // A raw string: r"..." or r#"..."#, closed by a quote and as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < chars.len() {
                if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            chars[i..j.min(chars.len())]
                .iter()
                .for_each(|&c| out.push(blank(c)));
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    out.push(blank(c));
                }
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\''), not a lifetime ('a).
            let mut j = i + 1;
            if chars.get(j) == Some(&'\\') {
                j += 1;
            }
            j += 1;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            (i..=j.min(chars.len() - 1)).for_each(|_| out.push(' '));
            i = j + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev(chars: &[char], i: usize) -> Option<char> {
    i.checked_sub(1).map(|p| chars[p])
}

fn is_ident(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The identifier that starts at byte `at` of `code`, if one does.
fn ident_at(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The first identifier of every top-level item of the `{...}` group that opens at byte `open`.
fn group_heads(code: &str, open: usize) -> Vec<(usize, &str)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (offset, c) in code[open..].char_indices() {
        let at = open + offset;
        match c {
            '{' => {
                depth += 1;
                item_start = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => item_start = true,
            c if c.is_whitespace() => {}
            _ if depth == 1 && item_start => {
                heads.push((at, ident_at(code, at)));
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every place in `source` that names a layer below the engine: `(line number, what it names)`.
fn lower_layer_uses(source: &str) -> Vec<(usize, String)> {
    let code = code_only(source);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, _) in code.char_indices() {
        if is_ident(code[..at].chars().next_back()) {
            continue;
        }
        let word = ident_at(&code, at);
        if word.is_empty() {
            continue;
        }
        if LOWER_CRATES.contains(&word) {
            found.push((line_of(at), word.to_string()));
            continue;
        }
        if word != "crate" && word != "statelog" {
            continue;
        }
        let after = &code[at + word.len()..];
        let Some(path) = after.strip_prefix("::") else {
            continue;
        };
        let path = path.trim_start();
        let path_at = code.len() - path.len();
        if path.starts_with('{') {
            for (head_at, head) in group_heads(&code, path_at) {
                if LOWER_MODULES.contains(&head) {
                    found.push((line_of(head_at), format!("{word}::{{{head}}}")));
                }
            }
        } else {
            let head = ident_at(&code, path_at);
            if LOWER_MODULES.contains(&head) {
                found.push((line_of(at), format!("{word}::{head}")));
            }
        }
    }
    found
}

#[test]
fn the_scanner_finds_every_spelling_and_skips_comments_and_strings() {
    let source = r##"
use crate::asl::parse_definition;
use statelog::{engine::Engine, history::HistoryEvent};
use statelog_wal::Lsn;
fn f() -> statelog_store::Store { todo!() }
// use statelog_core::asl; in a comment
/* crate::store in a block comment */
const METRIC: &str = "statelog_wal_commits_total";
const RAW: &str = r#"statelog::asl"#;
const QUOTE: char = '"';
use crate::engine::validate;
fn g<'a>(x: &'a str) -> &'a str { x }
use crate::{clock::Clock, store};
mod statelog_walker {}
"##;
    let found = lower_layer_uses(source);
    let expected = [
        (2, "crate::asl"),
        (3, "statelog::{history}"),
        (4, "statelog_wal"),
        (5, "statelog_store"),
        (13, "crate::{store}"),
    ];
    let found: Vec<(usize, &str)> = found.iter().map(|(l, w)| (*l, w.as_str())).collect();
    assert_eq!(found, expected);
}

#[test]
fn the_server_and_the_cli_use_only_the_engine_api() {
    let root = root();
    let mut files = rust_files(&root.join("src/server"));
    files.extend(rust_files(&root.join("src/cli")));
    files.push(root.join("src/main.rs"));
    assert!(files.len() > 10, "the scan found only {files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let source =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let relative = file.strip_prefix(&root).unwrap_or(file);
        for (line, what) in lower_layer_uses(&source) {
            offences.push(format!("{}:{line}: names {what}", relative.display()));
        }
    }
    assert!(
        offences.is_empty(),
        "the server and the CLI must use only the engine's API (crate::engine / \
         statelog::engine); add what they need to statelog-engine instead:\n{}",
        offences.join("\n")
    );
}

/// The workspace's resolved crate graph for the host: package names by id, each package's
/// normal (not dev, not build) dependencies, and the names of the optional ones it declares.
/// The resolve unifies the features of the whole workspace (the store's tests turn on the
/// core's `test-support`), so a walk from one crate skips its own optional dependencies.
struct Graph {
    names: BTreeMap<String, String>,
    normal_deps: BTreeMap<String, Vec<String>>,
    optional_deps: BTreeMap<String, BTreeSet<String>>,
}

fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let output = Command::new(&rustc)
        .arg("-vV")
        .output()
        .unwrap_or_else(|e| panic!("{rustc} -vV: {e}"));
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("no host line in `{rustc} -vV`: {text}"))
        .to_string()
}

fn graph() -> Graph {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--offline", "--format-version", "1"])
        .args(["--filter-platform", &host_triple()])
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let id = |p: &Value| p["id"].as_str().expect("package id").to_string();
    let names = packages
        .iter()
        .map(|p| (id(p), p["name"].as_str().expect("package name").to_string()))
        .collect();
    let optional_deps = packages
        .iter()
        .map(|p| {
            let optional = p["dependencies"]
                .as_array()
                .expect("package dependencies")
                .iter()
                .filter(|d| d["optional"] == Value::Bool(true))
                .map(|d| d["name"].as_str().expect("dependency name").to_string())
                .collect();
            (id(p), optional)
        })
        .collect();
    let normal_deps = metadata["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .expect("node deps")
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds")
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|dep| dep["pkg"].as_str().expect("dep pkg").to_string())
                .collect();
            (node["id"].as_str().expect("node id").to_string(), deps)
        })
        .collect();
    Graph {
        names,
        normal_deps,
        optional_deps,
    }
}

impl Graph {
    fn id_of(&self, name: &str) -> &str {
        let ids: Vec<&String> = self
            .names
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids.len(), 1, "one package named {name}: {ids:?}");
        ids[0]
    }

    fn name<'a>(&'a self, id: &'a str) -> &'a str {
        self.names.get(id).map_or(id, String::as_str)
    }

    /// Every package `from` reaches through normal dependencies, with its default features
    /// (none of its own optional dependencies), each with the path that reaches it first
    /// (breadth first: a shortest path).
    fn reachable(&self, from: &str) -> BTreeMap<String, Vec<String>> {
        let mut paths = BTreeMap::new();
        paths.insert(from.to_string(), vec![self.name(from).to_string()]);
        let mut queue = std::collections::VecDeque::from([from.to_string()]);
        let no_optional = BTreeSet::new();
        let optional = self.optional_deps.get(from).unwrap_or(&no_optional);
        while let Some(id) = queue.pop_front() {
            let path = paths[&id].clone();
            for dep in self.normal_deps.get(&id).into_iter().flatten() {
                if id == from && optional.contains(self.name(dep)) {
                    continue;
                }
                if !paths.contains_key(dep) {
                    let mut longer = path.clone();
                    longer.push(self.name(dep).to_string());
                    paths.insert(dep.clone(), longer);
                    queue.push_back(dep.clone());
                }
            }
        }
        paths
    }
}

/// Workspace crates every layer may use: they depend on nothing at all (checked below), so they
/// bring no layer in. `statelog-rng` is the seeded test generator (fuzz entries, the simulated
/// disk).
const DEPENDENCY_FREE_CRATES: [&str; 1] = ["statelog-rng"];

#[test]
fn the_dependency_free_crates_depend_on_nothing() {
    let graph = graph();
    for name in DEPENDENCY_FREE_CRATES {
        let id = graph.id_of(name);
        let deps: Vec<&str> = graph
            .normal_deps
            .get(id)
            .into_iter()
            .flatten()
            .map(|d| graph.name(d))
            .collect();
        assert!(deps.is_empty(), "{name} depends on {deps:?}");
    }
}

#[test]
fn the_core_depends_on_no_runtime_no_randomness_and_libc_only_under_stacker() {
    let graph = graph();
    let core = graph.id_of("statelog-core");
    let reachable = graph.reachable(core);
    let mut offences = Vec::new();
    for (id, path) in &reachable {
        let name = graph.name(id);
        if CORE_FORBIDDEN_CRATES.contains(&name) {
            offences.push(format!("{name}: {}", path.join(" -> ")));
        }
        let deps = graph.normal_deps.get(id).into_iter().flatten();
        if deps.map(|d| graph.name(d)).any(|d| d == "libc")
            && !LIBC_DEPENDENTS_ALLOWED.contains(&name)
        {
            offences.push(format!("libc under {name}: {} -> libc", path.join(" -> ")));
        }
        if name.starts_with("statelog-") && id != core && !DEPENDENCY_FREE_CRATES.contains(&name) {
            offences.push(format!("a workspace crate: {}", path.join(" -> ")));
        }
    }
    assert!(
        reachable.len() > 5,
        "the core's graph looks empty: {reachable:?}"
    );
    assert!(
        offences.is_empty(),
        "statelog-core must stay pure (core/Cargo.toml):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_wal_depends_on_no_workspace_crate() {
    let graph = graph();
    let wal = graph.id_of("statelog-wal");
    let workspace: BTreeSet<String> = graph
        .reachable(wal)
        .into_iter()
        .filter(|(id, _)| {
            id != wal
                && graph.name(id).starts_with("statelog")
                && !DEPENDENCY_FREE_CRATES.contains(&graph.name(id))
        })
        .map(|(_, path)| path.join(" -> "))
        .collect();
    assert!(workspace.is_empty(), "{workspace:?}");
}

/// The cluster crate (partition map, config, leases) sits beside the log: the engine and the
/// server will depend on it, so it depends on no workspace crate (statelog-nats only in its
/// tests, for the test cluster).
#[test]
fn the_cluster_crate_depends_on_no_workspace_crate() {
    let graph = graph();
    let cluster = graph.id_of("statelog-cluster");
    let workspace: BTreeSet<String> = graph
        .reachable(cluster)
        .into_iter()
        .filter(|(id, _)| id != cluster && graph.name(id).starts_with("statelog"))
        .map(|(_, path)| path.join(" -> "))
        .collect();
    assert!(workspace.is_empty(), "{workspace:?}");
}

/// The item readers and result writer (Distributed Map) sit beside the engine, which will
/// depend on them: they depend on no workspace crate.
#[test]
fn the_items_crate_depends_on_no_workspace_crate() {
    let graph = graph();
    let items = graph.id_of("statelog-items");
    let workspace: BTreeSet<String> = graph
        .reachable(items)
        .into_iter()
        .filter(|(id, _)| id != items && graph.name(id).starts_with("statelog"))
        .map(|(_, path)| path.join(" -> "))
        .collect();
    assert!(workspace.is_empty(), "{workspace:?}");
}

#[test]
fn the_core_source_does_no_io_and_reads_no_clock() {
    let core_src = root().join("core/src");
    let files = rust_files(&core_src);
    assert!(files.len() > 10, "the scan found only {files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let source =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let code = code_only(&source);
        for (index, line) in code.lines().enumerate() {
            for spelling in CORE_FORBIDDEN_SOURCE {
                if line.contains(spelling) {
                    let relative = file.strip_prefix(root()).unwrap_or(file);
                    offences.push(format!("{}:{}: {spelling}", relative.display(), index + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the core does no I/O and reads no clock (the engine's Clock does):\n{}",
        offences.join("\n")
    );
}

/// The only direct dependencies of the SWF model (`swf/Cargo.toml`).
const SWF_DIRECT_DEPENDENCIES: [&str; 4] = ["postcard", "serde", "serde_json", "thiserror"];

#[test]
fn the_swf_model_depends_only_on_serde_serde_json_thiserror_and_postcard() {
    let graph = graph();
    let swf = graph.id_of("statelog-swf");
    let mut direct: Vec<&str> = graph
        .normal_deps
        .get(swf)
        .into_iter()
        .flatten()
        .map(|d| graph.name(d))
        .collect();
    direct.sort_unstable();
    assert_eq!(
        direct, SWF_DIRECT_DEPENDENCIES,
        "swf/Cargo.toml [dependencies]"
    );
    let reachable = graph.reachable(swf);
    let mut offences = Vec::new();
    for (id, path) in &reachable {
        let name = graph.name(id);
        if CORE_FORBIDDEN_CRATES.contains(&name) || name == "libc" {
            offences.push(format!("{name}: {}", path.join(" -> ")));
        }
        if name.starts_with("statelog") && id != swf {
            offences.push(format!("a workspace crate: {}", path.join(" -> ")));
        }
    }
    assert!(
        reachable.len() > 4,
        "the SWF model's graph looks empty: {reachable:?}"
    );
    assert!(
        offences.is_empty(),
        "statelog-swf must stay pure (swf/Cargo.toml):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_swf_model_source_does_no_io_reads_no_clock_and_spawns_nothing() {
    let files = rust_files(&root().join("swf/src"));
    assert!(files.len() >= 8, "the scan found only {files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let source =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let code = code_only(&source);
        for (index, line) in code.lines().enumerate() {
            for spelling in CORE_FORBIDDEN_SOURCE.iter().chain(&["std::thread"]) {
                if line.contains(spelling) {
                    let relative = file.strip_prefix(root()).unwrap_or(file);
                    offences.push(format!("{}:{}: {spelling}", relative.display(), index + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the SWF model does no I/O, reads no clock and spawns no thread:\n{}",
        offences.join("\n")
    );
}
