//! The web console as `statelog serve` serves it, over real HTTP from the real binary: the page
//! and every asset it names (status, `Content-Type`, cache policy), a path that tries to leave
//! the console refused, and `--no-console` answering 404 while the API still answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::serve_common::socket::{parse_answer, Answer};

const BIN: &str = env!("CARGO_BIN_EXE_statelog");

/// A `statelog serve` child on a free loopback port; killed when dropped.
struct Served {
    child: Child,
    addr: String,
    _data: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(extra: &[&str]) -> Served {
    let data = tempfile::tempdir().expect("a temporary directory");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path().join("data"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("statelog serve starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads the first line");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("no listening line: {line:?}"))
        .to_owned();
    Served {
        child,
        addr,
        _data: data,
    }
}

fn get(served: &Served, path: &str) -> Answer {
    let mut stream = TcpStream::connect(&served.addr).expect("connects");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        served.addr
    )
    .expect("writes");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("reads to the end");
    parse_answer(&bytes)
}

/// Every `/console/assets/...` URL the page names (its `href` and `src` attributes).
fn asset_urls(page: &str) -> Vec<String> {
    page.split('"')
        .filter(|piece| piece.starts_with("/console/assets/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_console_page_and_its_assets_are_served_with_their_types() {
    let served = serve(&[]);
    let page = get(&served, "/console/");
    assert_eq!(page.status, 200, "{}", page.head);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(page
        .header("content-security-policy")
        .is_some_and(|csp| csp.contains("script-src 'self'")));
    let html = String::from_utf8(page.body).expect("UTF-8");
    assert!(html.contains(r#"<meta name="statelog-mode" content="development">"#));
    assert!(html.contains(r#"<meta name="statelog-region" content="us-east-1">"#));
    let urls = asset_urls(&html);
    assert!(
        urls.iter().any(|u| u.ends_with("/app.js")),
        "the page loads app.js: {urls:?}"
    );
    assert!(urls.iter().any(|u| u.ends_with("/style.css")));
    for url in &urls {
        let asset = get(&served, url);
        assert_eq!(asset.status, 200, "{url}");
        let expected = if url.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else if url.ends_with(".css") {
            "text/css; charset=utf-8"
        } else {
            "image/svg+xml"
        };
        assert_eq!(asset.header("content-type"), Some(expected), "{url}");
        assert_eq!(
            asset.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{url}"
        );
        assert!(!asset.body.is_empty(), "{url}");
    }
    // app.js imports its modules by relative paths: they are served beside it.
    let app = urls
        .iter()
        .find(|u| u.ends_with("/app.js"))
        .expect("app.js");
    let base = app.trim_end_matches("app.js");
    let script = String::from_utf8(get(&served, app).body).expect("UTF-8");
    for import in script
        .lines()
        .filter_map(|l| l.split("from \"./").nth(1))
        .filter_map(|rest| rest.split('"').next())
    {
        let module = get(&served, &format!("{base}{import}"));
        assert_eq!(module.status, 200, "{import}");
    }
    let redirect = get(&served, "/console");
    assert_eq!(redirect.status, 308);
    assert_eq!(redirect.header("location"), Some("/console/"));
}

#[test]
fn paths_outside_the_console_s_assets_are_refused() {
    let served = serve(&[]);
    let html = String::from_utf8(get(&served, "/console/").body).expect("UTF-8");
    let app = asset_urls(&html)
        .into_iter()
        .find(|u| u.ends_with("/app.js"))
        .expect("app.js");
    let base = app.trim_end_matches("app.js");
    for path in [
        format!("{base}../../../Cargo.toml"),
        format!("{base}..%2f..%2f..%2fCargo.toml"),
        format!("{base}%2e%2e/%2e%2e/Cargo.toml"),
        "/console/../Cargo.toml".to_owned(),
        "/console/assets/0000000000000000/app.js".to_owned(),
        "/console/app.js".to_owned(),
        "/console/assets/".to_owned(),
    ] {
        let answer = get(&served, &path);
        assert_eq!(answer.status, 404, "{path}: {}", answer.head);
        assert!(
            !String::from_utf8_lossy(&answer.body).contains("[package]"),
            "{path}"
        );
    }
}

#[test]
fn no_console_answers_404_and_the_api_still_answers() {
    let served = serve(&["--no-console"]);
    for path in ["/console/", "/console", "/console/index.html"] {
        let answer = get(&served, path);
        assert_eq!(answer.status, 404, "{path}");
        assert!(String::from_utf8_lossy(&answer.body).contains("--no-console"));
    }
    assert_eq!(get(&served, "/health").status, 200);
}

#[test]
fn with_credentials_the_page_asks_for_keys() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let credentials = dir.path().join("credentials.json");
    std::fs::write(
        &credentials,
        r#"{"AKIDCONSOLE": {"secret_access_key": "s", "account_id": "123456789012"}}"#,
    )
    .expect("writes");
    let path = credentials.to_str().expect("UTF-8 path");
    let served = serve(&[
        "--credentials",
        path,
        "--metrics-listen",
        "off",
        "--region",
        "eu-west-3",
    ]);
    let page = get(&served, "/console/");
    assert_eq!(page.status, 200);
    let html = String::from_utf8(page.body).expect("UTF-8");
    assert!(html.contains(r#"<meta name="statelog-mode" content="credentials">"#));
    assert!(html.contains(r#"<meta name="statelog-region" content="eu-west-3">"#));
}
