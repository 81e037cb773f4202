//! `statelog cluster init` as an operator runs it, against a real 3-server NATS cluster: the
//! first init creates the cluster, the same count again says it already is, another count is
//! refused naming both with a non-zero exit, and a bad count or no server fails the same way.
//!
//! Scenario guarded: an operator re-running init with a different count must not move every
//! execution; the message must say what the cluster has.

use std::process::Command;

use statelog_nats::testing::TestCluster;

/// Runs `statelog cluster init --nats URLS --partitions N`: exit code, stdout, stderr.
fn init(urls: &str, partitions: &str) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args([
            "cluster",
            "init",
            "--nats",
            urls,
            "--partitions",
            partitions,
        ])
        .output()
        .expect("run statelog");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn cluster_init_creates_once_and_refuses_another_count() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let urls = cluster.urls().join(",");
    let (code, stdout, stderr) = init(&urls, "12");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "initialized cluster: 12 partitions\n");

    // One URL of the three is enough.
    let (code, stdout, stderr) = init(&cluster.url(2), "12");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "already initialized: 12 partitions\n");

    let (code, stdout, stderr) = init(&urls, "5");
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("already initialized with 12 partitions") && stderr.contains("5 requested"),
        "{stderr}"
    );

    let (code, _, stderr) = init(&urls, "0");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("partition count 0 is outside 1..=1024"),
        "{stderr}"
    );
}

#[test]
fn cluster_init_without_a_server_fails_naming_the_urls() {
    // A port nothing listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let (code, stdout, stderr) = init(&url, "4");
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot connect to NATS at") && stderr.contains(&url),
        "{stderr}"
    );
}
