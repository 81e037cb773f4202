//! sigv4: AWS Signature Version 4, both sides: verifying a request (the server) and signing one
//! (tests, benches, and any Rust client that talks to `statelog serve`).
//!
//! Owns the canonical request, the string to sign, the signing key and the comparison.
//! Invariants: the signature is compared in constant time (`Mac::verify_slice`); the request
//! time is checked against the injected clock, never the system clock; every malformed piece of
//! the `Authorization` header is an [`Error::IncompleteSignature`] naming it; the headers that
//! select the operation ([`HEADERS_SIGNED_WHEN_PRESENT`]) are signed whenever present, in
//! development mode too. Must not: log or
//! echo secrets or signatures.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::error::Error;
use super::limits::{
    AUTHORIZATION_HEADER_BYTES_MAX, SIGNATURE_CLOCK_SKEW_MS_MAX, SIGNED_HEADERS_COUNT_MAX,
    SIGNING_KEYS_CACHED_MAX,
};

type HmacSha256 = Hmac<Sha256>;

/// The only signing algorithm AWS JSON services accept.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Headers that must be signed whenever a request carries them: `x-amz-target` names the
/// operation and `content-type` how the body is read, so a captured request replayed with
/// either changed must not verify. AWS SDKs and the AWS CLI sign both.
pub const HEADERS_SIGNED_WHEN_PRESENT: [&str; 2] = ["x-amz-target", "content-type"];

/// The terminator of every credential scope.
const SCOPE_TERMINATOR: &str = "aws4_request";

/// The parsed `Authorization` header of a SigV4-signed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The access key id (`Credential=<id>/...`).
    pub access_key_id: String,
    /// The scope date, `YYYYMMDD`.
    pub scope_date: String,
    /// The region of the scope (`us-east-1`).
    pub region: String,
    /// The service of the scope (`states`).
    pub service: String,
    /// Lowercase header names, in the order the client signed them.
    pub signed_headers: Vec<String>,
    /// The 32-byte signature, decoded from hex.
    pub signature: Vec<u8>,
}

/// The parts of an HTTP request a signature covers.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// `POST`, `GET`, ...
    pub method: &'a str,
    /// The path as sent (still percent-encoded), e.g. `/`.
    pub path: &'a str,
    /// The query string as sent, without `?` (empty when none).
    pub query: &'a str,
    /// All request headers.
    pub headers: &'a HeaderMap,
    /// The body bytes.
    pub body: &'a [u8],
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    };
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC-SHA256 takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The SigV4 signing key: HMAC chain over date, region, service and `aws4_request`.
pub fn signing_key(
    secret_access_key: &str,
    scope_date: &str,
    region: &str,
    service: &str,
) -> Vec<u8> {
    let date_key = hmac(
        format!("AWS4{secret_access_key}").as_bytes(),
        scope_date.as_bytes(),
    );
    let region_key = hmac(&date_key, region.as_bytes());
    let service_key = hmac(&region_key, service.as_bytes());
    hmac(&service_key, SCOPE_TERMINATOR.as_bytes())
}

/// What is malformed in a request's signature ([`Error::IncompleteSignature`]): the
/// `Authorization` header, the `X-Amz-Date` it relies on, or the headers it signs. Each message
/// is the one AWS-shaped clients and scripts read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureReason {
    /// The header is longer than [`AUTHORIZATION_HEADER_BYTES_MAX`].
    #[error("the Authorization header is {size_bytes} bytes; the limit is {limit_bytes}")]
    HeaderTooLarge {
        /// The header's length.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// The header does not start with [`ALGORITHM`].
    #[error(
        "Authorization header must start with '{ALGORITHM} ' (other algorithms are not supported)"
    )]
    WrongAlgorithm,
    /// A comma-separated element without `=`.
    #[error("Authorization header element '{element}' is not key=value")]
    ElementNotKeyValue {
        /// The element as sent.
        element: String,
    },
    /// An element other than `Credential`, `SignedHeaders` and `Signature`.
    #[error("Authorization header has an unknown element '{element}'")]
    UnknownElement {
        /// Its key.
        element: String,
    },
    /// An element given twice.
    #[error("Authorization header repeats '{element}'")]
    RepeatedElement {
        /// Its key.
        element: String,
    },
    /// A required element is absent.
    #[error("Authorization header requires '{element}' parameter")]
    MissingElement {
        /// Its key.
        element: &'static str,
    },
    /// The credential scope is not five `/`-separated parts.
    #[error("Credential must be <access key id>/<YYYYMMDD>/<region>/<service>/aws4_request, got {parts_count} parts")]
    CredentialParts {
        /// How many parts it has.
        parts_count: usize,
    },
    /// The access key id, region or service of the scope is empty.
    #[error("Credential has an empty access key id, region or service")]
    CredentialEmptyPart,
    /// The scope's date is not eight digits.
    #[error("Credential date '{date}' is not YYYYMMDD")]
    CredentialDate {
        /// The date as sent.
        date: String,
    },
    /// The scope does not end in `aws4_request`.
    #[error("Credential should be scoped with a valid terminator: '{SCOPE_TERMINATOR}', not '{terminator}'")]
    WrongTerminator {
        /// The terminator as sent.
        terminator: String,
    },
    /// The scope names another service than the one this listener signs for.
    #[error("Credential should be scoped to correct service: '{expected}', not '{found}'")]
    WrongService {
        /// The service of this listener.
        expected: String,
        /// The service of the scope.
        found: String,
    },
    /// More signed headers than [`SIGNED_HEADERS_COUNT_MAX`].
    #[error("SignedHeaders lists {count} headers; the limit is {limit}")]
    TooManySignedHeaders {
        /// How many are listed.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A signed header name that is empty, upper case or holds a space or control byte.
    #[error("SignedHeaders must be lowercase header names separated by ';'")]
    SignedHeadersMalformed,
    /// `host` is not signed.
    #[error("SignedHeaders must include 'host'")]
    HostNotSigned,
    /// `x-amz-date` is not signed.
    #[error("SignedHeaders must include 'x-amz-date'")]
    DateNotSigned,
    /// A header of [`HEADERS_SIGNED_WHEN_PRESENT`] is present but not signed.
    #[error("SignedHeaders must include '{name}' when the request carries it (it selects the operation or how the body is read)")]
    HeaderNotSigned {
        /// The header's name.
        name: &'static str,
    },
    /// A header the signature lists is not in the request.
    #[error("signed header '{name}' is not in the request")]
    SignedHeaderAbsent {
        /// The header's name.
        name: String,
    },
    /// The signature is not 64 hex digits.
    #[error("Signature must be 64 hexadecimal digits")]
    SignatureNotHex,
    /// The `Authorization` header holds bytes other than visible ASCII.
    #[error("the Authorization header is not visible ASCII")]
    HeaderNotAscii,
    /// No readable `X-Amz-Date` header.
    #[error("the request must carry an X-Amz-Date header (YYYYMMDDTHHMMSSZ)")]
    MissingDate,
    /// `X-Amz-Date` is not `YYYYMMDDTHHMMSSZ`.
    #[error("X-Amz-Date '{amz_date}' is not YYYYMMDDTHHMMSSZ")]
    MalformedDate {
        /// The header as sent.
        amz_date: String,
    },
    /// The scope's date is not the day of `X-Amz-Date`.
    #[error("Credential date {scope_date} does not match X-Amz-Date {amz_date}")]
    DateMismatch {
        /// The scope's date.
        scope_date: String,
        /// The header as sent.
        amz_date: String,
    },
    /// Signing: the request time does not make a header value.
    #[error("the request time does not format as a header")]
    TimeNotHeader,
    /// Signing: a value does not make a header value.
    #[error("the {what} {text:?} is not a valid header value")]
    InvalidHeaderValue {
        /// Which header.
        what: String,
        /// The value.
        text: String,
    },
}

/// Parses `AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/states/aws4_request,
/// SignedHeaders=host;x-amz-date, Signature=<64 hex>`.
pub fn parse_authorization(header: &str) -> Result<Authorization, Error> {
    let incomplete = |reason: SignatureReason| Error::IncompleteSignature { reason };
    if header.len() > AUTHORIZATION_HEADER_BYTES_MAX {
        return Err(incomplete(SignatureReason::HeaderTooLarge {
            size_bytes: header.len(),
            limit_bytes: AUTHORIZATION_HEADER_BYTES_MAX,
        }));
    }
    let rest = header
        .strip_prefix(ALGORITHM)
        .filter(|rest| rest.starts_with(' '))
        .ok_or_else(|| incomplete(SignatureReason::WrongAlgorithm))?;
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for part in rest.split(',') {
        let part = part.trim();
        let Some((key, value)) = part.split_once('=') else {
            return Err(incomplete(SignatureReason::ElementNotKeyValue {
                element: part.to_owned(),
            }));
        };
        let slot = match key {
            "Credential" => &mut credential,
            "SignedHeaders" => &mut signed_headers,
            "Signature" => &mut signature,
            other => {
                return Err(incomplete(SignatureReason::UnknownElement {
                    element: other.to_owned(),
                }))
            }
        };
        if slot.replace(value).is_some() {
            return Err(incomplete(SignatureReason::RepeatedElement {
                element: key.to_owned(),
            }));
        }
    }
    let missing = |element| incomplete(SignatureReason::MissingElement { element });
    let credential = credential.ok_or_else(|| missing("Credential"))?;
    let signed_headers = signed_headers.ok_or_else(|| missing("SignedHeaders"))?;
    let signature = signature.ok_or_else(|| missing("Signature"))?;

    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key_id, scope_date, region, service, terminator] = scope[..] else {
        return Err(incomplete(SignatureReason::CredentialParts {
            parts_count: scope.len(),
        }));
    };
    if access_key_id.is_empty() || region.is_empty() || service.is_empty() {
        return Err(incomplete(SignatureReason::CredentialEmptyPart));
    }
    if scope_date.len() != 8 || !scope_date.bytes().all(|b| b.is_ascii_digit()) {
        return Err(incomplete(SignatureReason::CredentialDate {
            date: scope_date.to_owned(),
        }));
    }
    if terminator != SCOPE_TERMINATOR {
        return Err(incomplete(SignatureReason::WrongTerminator {
            terminator: terminator.to_owned(),
        }));
    }
    let names: Vec<String> = signed_headers.split(';').map(str::to_owned).collect();
    if names.len() > SIGNED_HEADERS_COUNT_MAX {
        return Err(incomplete(SignatureReason::TooManySignedHeaders {
            count: names.len(),
            limit: SIGNED_HEADERS_COUNT_MAX,
        }));
    }
    if names
        .iter()
        .any(|n| n.is_empty() || n.bytes().any(|b| b.is_ascii_uppercase() || b <= b' '))
    {
        return Err(incomplete(SignatureReason::SignedHeadersMalformed));
    }
    if !names.iter().any(|n| n == "host") {
        return Err(incomplete(SignatureReason::HostNotSigned));
    }
    let signature = unhex(signature)
        .filter(|bytes| bytes.len() == 32)
        .ok_or_else(|| incomplete(SignatureReason::SignatureNotHex))?;
    Ok(Authorization {
        access_key_id: access_key_id.to_owned(),
        scope_date: scope_date.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        signed_headers: names,
        signature,
    })
}

/// URI-encodes `text` as SigV4 wants: every byte but `A-Z a-z 0-9 - _ . ~` (and `/` when
/// `keep_slash`) as `%XX` uppercase.
fn uri_encode(text: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text {
        let plain = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && byte == b'/');
        if plain {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' && index + 2 < bytes.len() {
            let high = (bytes[index + 1] as char).to_digit(16);
            let low = (bytes[index + 2] as char).to_digit(16);
            if let (Some(high), Some(low)) = (high, low) {
                // Two hex digits make at most 255.
                out.push((high * 16 + low) as u8);
                index += 3;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    out
}

fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                uri_encode(&percent_decode(key), false),
                uri_encode(&percent_decode(value), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn canonical_header_value(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The SigV4 canonical request. Errors when a signed header is absent from the request.
pub fn canonical_request(
    parts: &RequestParts<'_>,
    signed_headers: &[String],
) -> Result<String, Error> {
    let mut out = String::new();
    out.push_str(parts.method);
    out.push('\n');
    // The path as sent is already encoded once; AWS (for every service but S3) encodes it
    // again, so a literal `%` becomes `%25`.
    let path = if parts.path.is_empty() {
        "/"
    } else {
        parts.path
    };
    out.push_str(&uri_encode(path.as_bytes(), true));
    out.push('\n');
    out.push_str(&canonical_query(parts.query));
    out.push('\n');
    for name in signed_headers {
        let values: Vec<String> = parts
            .headers
            .get_all(name.as_str())
            .iter()
            .map(|v| canonical_header_value(v.as_bytes()))
            .collect();
        if values.is_empty() {
            return Err(Error::IncompleteSignature {
                reason: SignatureReason::SignedHeaderAbsent { name: name.clone() },
            });
        }
        out.push_str(name);
        out.push(':');
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&signed_headers.join(";"));
    out.push('\n');
    out.push_str(&sha256_hex(parts.body));
    Ok(out)
}

/// The SigV4 string to sign.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

fn scope_of(auth: &Authorization) -> String {
    format!(
        "{}/{}/{}/{SCOPE_TERMINATOR}",
        auth.scope_date, auth.region, auth.service
    )
}

const AMZ_DATE_FORMAT: &[time::format_description::FormatItem<'static>] =
    time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");

/// Milliseconds since the epoch of an `X-Amz-Date` value (`20150830T123600Z`).
pub fn parse_amz_date(text: &str) -> Option<u64> {
    let parsed = time::PrimitiveDateTime::parse(text, AMZ_DATE_FORMAT).ok()?;
    let seconds = parsed.assume_utc().unix_timestamp();
    u64::try_from(seconds).ok()?.checked_mul(1000)
}

/// The `X-Amz-Date` form of `now_ms`.
pub fn format_amz_date(now_ms: u64) -> String {
    let seconds = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.format(AMZ_DATE_FORMAT).ok())
        .unwrap_or_else(|| "99991231T235959Z".to_owned())
}

/// What checking a request's signature needs from the server.
#[derive(Debug, Clone, Copy)]
pub enum Check<'a> {
    /// Verify against this secret and the clock.
    Secret {
        /// The secret access key of the request's access key id.
        secret_access_key: &'a str,
        /// The server's time, from the engine's clock.
        now_ms: u64,
    },
    /// Development mode: the header must be well formed; the signature is not checked.
    FormOnly,
}

/// Reads the `Authorization` header of `parts` and parses it.
pub fn authorization_of(parts: &RequestParts<'_>) -> Result<Authorization, Error> {
    let header = parts
        .headers
        .get("authorization")
        .ok_or(Error::MissingAuthentication)?;
    let text = header.to_str().map_err(|_| Error::IncompleteSignature {
        reason: SignatureReason::HeaderNotAscii,
    })?;
    parse_authorization(text)
}

/// Verifies the signature of a request whose `Authorization` header parsed into `auth`.
pub fn verify(
    parts: &RequestParts<'_>,
    auth: &Authorization,
    check: Check<'_>,
) -> Result<(), Error> {
    verify_with(parts, auth, check, None)
}

/// Signing keys derived before, by (secret, scope date, region, service): a key changes once a
/// day per access key, so a server derives it once instead of with four HMACs per request.
/// Bounded by [`SIGNING_KEYS_CACHED_MAX`]; when full it starts over.
#[derive(Debug, Default)]
pub struct SigningKeyCache {
    keys: parking_lot::Mutex<std::collections::HashMap<String, Vec<u8>>>,
}

impl SigningKeyCache {
    /// The signing key of the scope, derived on first use.
    pub fn get(&self, secret_access_key: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
        let id = format!("{secret_access_key}\n{date}\n{region}\n{service}");
        if let Some(key) = self.keys.lock().get(&id) {
            return key.clone();
        }
        let key = signing_key(secret_access_key, date, region, service);
        let mut keys = self.keys.lock();
        if keys.len() >= SIGNING_KEYS_CACHED_MAX {
            keys.clear();
        }
        keys.insert(id, key.clone());
        key
    }

    /// How many keys are held.
    pub fn len(&self) -> usize {
        self.keys.lock().len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.lock().is_empty()
    }
}

/// The signing key of the scope: from `cache` when given (derived there on first use), else
/// derived now.
fn signing_key_in(
    cache: Option<&SigningKeyCache>,
    secret_access_key: &str,
    date: &str,
    region: &str,
    service: &str,
) -> Vec<u8> {
    match cache {
        Some(cache) => cache.get(secret_access_key, date, region, service),
        None => signing_key(secret_access_key, date, region, service),
    }
}

/// [`verify`], taking the signing key from `cache` when given.
pub fn verify_with(
    parts: &RequestParts<'_>,
    auth: &Authorization,
    check: Check<'_>,
    cache: Option<&SigningKeyCache>,
) -> Result<(), Error> {
    let amz_date = parts
        .headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::IncompleteSignature {
            reason: SignatureReason::MissingDate,
        })?;
    let request_ms = parse_amz_date(amz_date).ok_or_else(|| Error::IncompleteSignature {
        reason: SignatureReason::MalformedDate {
            amz_date: amz_date.to_owned(),
        },
    })?;
    if !amz_date.starts_with(&auth.scope_date) {
        return Err(Error::IncompleteSignature {
            reason: SignatureReason::DateMismatch {
                scope_date: auth.scope_date.clone(),
                amz_date: amz_date.to_owned(),
            },
        });
    }
    if !auth.signed_headers.iter().any(|n| n == "x-amz-date") {
        return Err(Error::IncompleteSignature {
            reason: SignatureReason::DateNotSigned,
        });
    }
    for name in HEADERS_SIGNED_WHEN_PRESENT {
        if parts.headers.contains_key(name) && !auth.signed_headers.iter().any(|n| n == name) {
            return Err(Error::IncompleteSignature {
                reason: SignatureReason::HeaderNotSigned { name },
            });
        }
    }
    let canonical = canonical_request(parts, &auth.signed_headers)?;
    let Check::Secret {
        secret_access_key,
        now_ms,
    } = check
    else {
        return Ok(());
    };
    let earliest_ms = now_ms.saturating_sub(SIGNATURE_CLOCK_SKEW_MS_MAX);
    let latest_ms = now_ms.saturating_add(SIGNATURE_CLOCK_SKEW_MS_MAX);
    if request_ms < earliest_ms {
        return Err(Error::SignatureExpired {
            request_time: amz_date.to_owned(),
            earliest_time: format_amz_date(earliest_ms),
            now_time: format_amz_date(now_ms),
        });
    }
    if request_ms > latest_ms {
        return Err(Error::SignatureNotYetCurrent {
            request_time: amz_date.to_owned(),
            latest_time: format_amz_date(latest_ms),
            now_time: format_amz_date(now_ms),
        });
    }
    let to_sign = string_to_sign(amz_date, &scope_of(auth), &canonical);
    let key = signing_key_in(
        cache,
        secret_access_key,
        &auth.scope_date,
        &auth.region,
        &auth.service,
    );
    let mut mac = HmacSha256::new_from_slice(&key).expect("HMAC-SHA256 takes a key of any length");
    mac.update(to_sign.as_bytes());
    // `verify_slice` compares in constant time.
    mac.verify_slice(&auth.signature)
        .map_err(|_| Error::SignatureMismatch)
}

/// What a client needs to sign a request.
#[derive(Debug, Clone, Copy)]
pub struct SigningParams<'a> {
    /// The access key id.
    pub access_key_id: &'a str,
    /// Its secret.
    pub secret_access_key: &'a str,
    /// The region of the scope.
    pub region: &'a str,
    /// The service of the scope (`states`).
    pub service: &'a str,
    /// The request time, ms since the epoch.
    pub now_ms: u64,
}

/// Signs a request as an AWS SDK would: sets `x-amz-date` in `headers` and returns the
/// `Authorization` header value covering every header present (names lowercased, sorted).
/// `headers` must already hold `host`.
pub fn sign(
    method: &str,
    path: &str,
    query: &str,
    headers: &mut HeaderMap,
    body: &[u8],
    params: &SigningParams<'_>,
) -> Result<String, Error> {
    sign_with(method, path, query, headers, body, params, None)
}

/// [`sign`], taking the signing key from `cache` when given (a client signing many requests
/// derives its key once a day instead of with four HMACs per request).
pub fn sign_with(
    method: &str,
    path: &str,
    query: &str,
    headers: &mut HeaderMap,
    body: &[u8],
    params: &SigningParams<'_>,
    cache: Option<&SigningKeyCache>,
) -> Result<String, Error> {
    let amz_date = format_amz_date(params.now_ms);
    let value =
        axum::http::HeaderValue::from_str(&amz_date).map_err(|_| Error::IncompleteSignature {
            reason: SignatureReason::TimeNotHeader,
        })?;
    headers.insert("x-amz-date", value);
    let mut names: Vec<String> = headers.keys().map(|k| k.as_str().to_owned()).collect();
    names.sort();
    names.dedup();
    let parts = RequestParts {
        method,
        path,
        query,
        headers,
        body,
    };
    let canonical = canonical_request(&parts, &names)?;
    let scope_date = &amz_date[..8];
    let scope = format!(
        "{scope_date}/{}/{}/{SCOPE_TERMINATOR}",
        params.region, params.service
    );
    let to_sign = string_to_sign(&amz_date, &scope, &canonical);
    let key = signing_key_in(
        cache,
        params.secret_access_key,
        scope_date,
        params.region,
        params.service,
    );
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    Ok(format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={}, Signature={signature}",
        params.access_key_id,
        names.join(";")
    ))
}

/// Every header of an AWS JSON 1.0 call (`POST /` to `host`, `X-Amz-Target: target`, carrying
/// `body`), signed as an AWS SDK signs it: `host`, `content-type`, `x-amz-target`,
/// `x-amz-date` and `authorization`. What a Rust client of `statelog serve` sends.
pub fn signed_json_headers(
    host: &str,
    target: &str,
    body: &[u8],
    params: &SigningParams<'_>,
) -> Result<HeaderMap, Error> {
    let header = |what: &str, text: &str| {
        HeaderValue::from_str(text).map_err(|_| Error::IncompleteSignature {
            reason: SignatureReason::InvalidHeaderValue {
                what: what.to_owned(),
                text: text.to_owned(),
            },
        })
    };
    let mut headers = HeaderMap::new();
    headers.insert("host", header("host", host)?);
    headers.insert(
        "content-type",
        HeaderValue::from_static(super::protocol::CONTENT_TYPE),
    );
    headers.insert("x-amz-target", header("target", target)?);
    let authorization = sign("POST", "/", "", &mut headers, body, params)?;
    headers.insert("authorization", header("authorization", &authorization)?);
    Ok(headers)
}

/// [`signed_json_headers`] on a whole `POST /` request carrying `body`.
pub fn signed_json_request(
    host: &str,
    target: &str,
    body: Vec<u8>,
    params: &SigningParams<'_>,
) -> Result<Request<Body>, Error> {
    let headers = signed_json_headers(host, target, &body, params)?;
    let mut request = Request::new(Body::from(body));
    *request.method_mut() = Method::POST;
    *request.headers_mut() = headers;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(header: &str) -> String {
        match parse_authorization(header) {
            Err(Error::IncompleteSignature { reason }) => reason.to_string(),
            other => panic!("{header}: {other:?}"),
        }
    }

    /// A signature made with a cached signing key is the one made with a key derived for the
    /// request, and the cache derives each day's key once.
    #[test]
    fn a_cached_signing_key_signs_as_a_derived_one() {
        let cache = SigningKeyCache::default();
        let day_ms = 86_400_000;
        for now_ms in [
            1_440_892_800_000,
            1_440_892_800_000 + 1_000,
            1_440_892_800_000 + day_ms,
        ] {
            let params = SigningParams {
                access_key_id: "AKID",
                secret_access_key: "secret",
                region: "us-east-1",
                service: "states",
                now_ms,
            };
            let signed = |cache: Option<&SigningKeyCache>| {
                let mut headers = HeaderMap::new();
                headers.insert("host", axum::http::HeaderValue::from_static("localhost"));
                sign_with("POST", "/", "", &mut headers, b"{}", &params, cache).expect("signs")
            };
            assert_eq!(signed(Some(&cache)), signed(None), "at {now_ms}");
        }
        assert_eq!(cache.len(), 2, "one key per scope date");
    }

    /// Each malformed header is answered with the sentence the `reason: String` held before it
    /// had a variant (clients match `IncompleteSignatureException` messages).
    #[test]
    fn malformed_headers_are_named_with_their_old_messages() {
        let scope = "Credential=AKID/20150830/us-east-1/states/aws4_request";
        let signature = format!("Signature={}", "ab".repeat(32));
        let cases = [
            (
                "Basic dXNlcg==".to_string(),
                "Authorization header must start with 'AWS4-HMAC-SHA256 ' (other algorithms are not supported)",
            ),
            (
                format!("{ALGORITHM} {scope}, SignedHeaders"),
                "Authorization header element 'SignedHeaders' is not key=value",
            ),
            (
                format!("{ALGORITHM} {scope}, Extra=1"),
                "Authorization header has an unknown element 'Extra'",
            ),
            (
                format!("{ALGORITHM} {scope}, {scope}"),
                "Authorization header repeats 'Credential'",
            ),
            (
                format!("{ALGORITHM} {scope}, {signature}"),
                "Authorization header requires 'SignedHeaders' parameter",
            ),
            (
                format!("{ALGORITHM} Credential=AKID/20150830/us-east-1, SignedHeaders=host, {signature}"),
                "Credential must be <access key id>/<YYYYMMDD>/<region>/<service>/aws4_request, got 3 parts",
            ),
            (
                format!("{ALGORITHM} Credential=AKID/2015083/us-east-1/states/aws4_request, SignedHeaders=host, {signature}"),
                "Credential date '2015083' is not YYYYMMDD",
            ),
            (
                format!("{ALGORITHM} Credential=AKID/20150830/us-east-1/states/aws5_request, SignedHeaders=host, {signature}"),
                "Credential should be scoped with a valid terminator: 'aws4_request', not 'aws5_request'",
            ),
            (
                format!("{ALGORITHM} {scope}, SignedHeaders=x-amz-date, {signature}"),
                "SignedHeaders must include 'host'",
            ),
            (
                format!("{ALGORITHM} {scope}, SignedHeaders=Host, {signature}"),
                "SignedHeaders must be lowercase header names separated by ';'",
            ),
            (
                format!("{ALGORITHM} {scope}, SignedHeaders=host, Signature=abc"),
                "Signature must be 64 hexadecimal digits",
            ),
        ];
        for (header, expected) in cases {
            assert_eq!(message(&header), expected, "{header}");
        }
        let long = format!("{ALGORITHM} {}", "x".repeat(AUTHORIZATION_HEADER_BYTES_MAX));
        assert_eq!(
            message(&long),
            format!(
                "the Authorization header is {} bytes; the limit is {AUTHORIZATION_HEADER_BYTES_MAX}",
                long.len()
            )
        );
    }
}
