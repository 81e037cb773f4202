//! console: the web console's static assets (`src/server/console/`), compiled into the binary
//! and served at `/console/` by the API's listener (`statelog serve`, off with `--no-console`).
//!
//! The console is HTML, CSS and JavaScript modules we write; in the browser it talks to the
//! server only through the AWS JSON API every SDK uses, signing each request with SigV4 (Web
//! Crypto). This module serves bytes and nothing else: it holds no API logic, authenticates
//! nothing and opens no second way in.
//!
//! - `GET /console/` (and `/console`, redirected) answers `index.html` with two `<meta>` tags
//!   filled in: the region the server signs for and whether it runs in development mode (no
//!   credentials: the console then signs with a fixed development key and asks for none).
//!   `Cache-Control: no-cache` with a strong `ETag`, so a new binary's console is seen at once.
//! - `GET /console/assets/<version>/<file>` answers one asset; `<version>` is a digest of every
//!   asset's bytes, so an asset URL never changes meaning and is cached as `immutable`.
//!
//! Invariants: a path is answered only when it equals one of [`ASSETS`]' names (a lookup in a
//! fixed table; nothing is read from the file system, so `..` or an encoded slash can name
//! nothing else); every answer carries its `Content-Type`, `X-Content-Type-Options: nosniff` and
//! a `Content-Security-Policy` that allows only this origin. Must not: fetch anything at build
//! or run time, or accept any method but `GET` and `HEAD`.

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::sigv4::hex;

/// Where the console is mounted.
pub const MOUNT: &str = "/console";

/// One compiled-in file of the console.
struct Asset {
    /// Its name under `assets/<version>/`.
    name: &'static str,
    /// Its `Content-Type`.
    content_type: &'static str,
    /// Its bytes.
    bytes: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// Compiles the named files of `src/server/console/` into [`ASSETS`].
macro_rules! assets {
    ($($name:literal => $content_type:expr),* $(,)?) => {
        &[$(Asset {
            name: $name,
            content_type: $content_type,
            bytes: include_bytes!(concat!("console/", $name)),
        }),*]
    };
}

/// Every asset of the console, `index.html` excepted.
const ASSETS: &[Asset] = assets![
    "style.css" => "text/css; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
    "app.js" => JS,
    "api.js" => JS,
    "sigv4.js" => JS,
    "dom.js" => JS,
    "graph.js" => JS,
    "layout.js" => JS,
    "history.js" => JS,
    "events.js" => JS,
    "machines.js" => JS,
    "executions.js" => JS,
    "execution.js" => JS,
    "activities.js" => JS,
    "map_runs.js" => JS,
    "swf.js" => JS,
];

/// The page every console URL starts from; `{{VERSION}}`, `{{REGION}}` and `{{MODE}}` are
/// filled in when it is served.
const INDEX_TEMPLATE: &str = include_str!("console/index.html");

/// Only this origin: scripts, styles, images and API calls. No inline script runs.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Immutable assets: a year (the longest lifetime caches honour), never revalidated.
const ASSET_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The console's answers, for one server: its `index.html` rendered once.
#[derive(Debug)]
pub struct Console {
    version: &'static str,
    index: String,
    index_etag: String,
}

impl Console {
    /// The console of a server for `region`; `development_mode` when it has no credentials.
    pub fn new(region: &str, development_mode: bool) -> Self {
        let version = assets_version();
        let mode = if development_mode {
            "development"
        } else {
            "credentials"
        };
        let index = INDEX_TEMPLATE
            .replace("{{VERSION}}", version)
            .replace("{{REGION}}", &escape_attribute(region))
            .replace("{{MODE}}", mode);
        let index_etag = format!("\"{}\"", &hex(&Sha256::digest(index.as_bytes()))[..32]);
        Self {
            version,
            index,
            index_etag,
        }
    }

    /// Answers a request under [`MOUNT`]: `path` is the full request path.
    pub fn answer(&self, method: &Method, path: &str, headers: &HeaderMap) -> Response {
        if method != Method::GET && method != Method::HEAD {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} {path}: the console answers only GET and HEAD"),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let Some(rest) = path.strip_prefix(MOUNT) else {
            return not_found(path);
        };
        match rest {
            "" => redirect_to_index(),
            "/" | "/index.html" => file(
                headers,
                "text/html; charset=utf-8",
                self.index.clone().into_bytes(),
                &self.index_etag,
                "no-cache",
            ),
            _ => {
                let asset = rest
                    .strip_prefix("/assets/")
                    .and_then(|r| r.strip_prefix(self.version))
                    .and_then(|r| r.strip_prefix('/'))
                    .and_then(|name| ASSETS.iter().find(|a| a.name == name));
                match asset {
                    Some(asset) => file(
                        headers,
                        asset.content_type,
                        asset.bytes.to_vec(),
                        &format!("\"{}-{}\"", self.version, asset.name),
                        ASSET_CACHE_CONTROL,
                    ),
                    None => not_found(path),
                }
            }
        }
    }
}

/// What `/console/...` answers when the console is off (`serve --no-console`).
pub fn turned_off(path: &str) -> Response {
    plain(
        StatusCode::NOT_FOUND,
        format!("{path}: the web console is turned off (statelog serve --no-console)"),
    )
}

/// The first 16 hex digits of SHA-256 over every asset's name and bytes and the index page.
fn assets_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut digest = Sha256::new();
        for asset in ASSETS {
            digest.update(asset.name.as_bytes());
            digest.update((asset.bytes.len() as u64).to_be_bytes());
            digest.update(asset.bytes);
        }
        digest.update(INDEX_TEMPLATE.as_bytes());
        hex(&digest.finalize())[..16].to_owned()
    })
}

/// `text` safe inside a double-quoted HTML attribute.
fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn file(
    headers: &HeaderMap,
    content_type: &'static str,
    bytes: Vec<u8>,
    etag: &str,
    cache_control: &'static str,
) -> Response {
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, Body::from(bytes)).into_response()
    };
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    if let Ok(etag) = HeaderValue::from_str(etag) {
        out.insert(header::ETAG, etag);
    }
    secure(out);
    response
}

fn redirect_to_index() -> Response {
    let mut response = StatusCode::PERMANENT_REDIRECT.into_response();
    let out = response.headers_mut();
    out.insert(header::LOCATION, HeaderValue::from_static("/console/"));
    secure(out);
    response
}

fn not_found(path: &str) -> Response {
    plain(
        StatusCode::NOT_FOUND,
        format!("{path}: no such page or asset of the console"),
    )
}

fn plain(status: StatusCode, text: String) -> Response {
    let mut response = (status, text).into_response();
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    secure(out);
    response
}

/// The headers every console answer carries.
fn secure(out: &mut HeaderMap) {
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    out.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(console: &Console, path: &str) -> Response {
        console.answer(&Method::GET, path, &HeaderMap::new())
    }

    #[test]
    fn every_asset_is_served_under_the_version_with_its_type() {
        let console = Console::new("us-east-1", true);
        for asset in ASSETS {
            let path = format!("/console/assets/{}/{}", console.version, asset.name);
            let response = get(&console, &path);
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert_eq!(
                response.headers()[header::CONTENT_TYPE],
                asset.content_type,
                "{path}"
            );
            assert_eq!(
                response.headers()[header::CACHE_CONTROL],
                ASSET_CACHE_CONTROL
            );
        }
    }

    #[test]
    fn index_names_the_mode_region_and_version_and_revalidates() {
        let console = Console::new("eu-west-3", false);
        assert!(console.index.contains("content=\"eu-west-3\""));
        assert!(console.index.contains("content=\"credentials\""));
        assert!(console
            .index
            .contains(&format!("/console/assets/{}/app.js", console.version)));
        assert!(!console.index.contains("{{"));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&console.index_etag).expect("an ETag is a header value"),
        );
        let response = console.answer(&Method::GET, "/console/", &headers);
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    }

    #[test]
    fn a_stale_version_traversal_or_other_method_is_refused() {
        let console = Console::new("us-east-1", true);
        for path in [
            "/console/assets/0000000000000000/app.js",
            "/console/app.js",
            &format!("/console/assets/{}/../../Cargo.toml", console.version),
            &format!("/console/assets/{}/%2e%2e%2fCargo.toml", console.version),
            "/console/../Cargo.toml",
        ] {
            assert_eq!(
                get(&console, path).status(),
                StatusCode::NOT_FOUND,
                "{path}"
            );
        }
        let response = console.answer(&Method::POST, "/console/", &HeaderMap::new());
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn the_region_is_escaped_in_the_page() {
        let console = Console::new("x\"><script>", true);
        assert!(!console.index.contains("<script>\""));
        assert!(console.index.contains("x&quot;&gt;&lt;script&gt;"));
    }
}
