//! credentials: the operator's credentials file, mapping access key ids to a secret and an
//! account id (the account is the namespace every call runs in).
//!
//! Format, JSON (`.json`, or any file that parses as JSON):
//! `{"AKIDEXAMPLE": {"secret_access_key": "...", "account_id": "123456789012"}}`;
//! or TOML (`.toml`, or any file that is not JSON):
//! `[AKIDEXAMPLE]` / `secret_access_key = "..."` / `account_id = "123456789012"`.
//!
//! Invariants: account ids are 12 digits; access key ids and secrets are non-empty and printable.
//! Must not: print a secret (its `Debug` is redacted).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::error::Error;
use super::limits::CREDENTIALS_FILE_BYTES_MAX;

/// The account used in development mode (no credentials file), as AWS's local tools do.
pub const DEV_ACCOUNT_ID: &str = "000000000000";

/// One access key's secret and account.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The secret access key that signs requests.
    pub secret_access_key: String,
    /// The 12-digit account id; the namespace of everything this key touches.
    pub account_id: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("secret_access_key", &"<redacted>")
            .field("account_id", &self.account_id)
            .finish()
    }
}

/// What is wrong with a credentials file ([`Error::Credentials`] names the file). TOML's
/// errors are boxed: they are large, and every server call returns this error type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsReason {
    /// The file defines no access key.
    #[error("no access keys are defined")]
    NoKeys,
    /// An access key id that is empty or not letters and digits.
    #[error("access key id {access_key_id:?} must be non-empty letters and digits")]
    BadAccessKeyId {
        /// The id as written.
        access_key_id: String,
    },
    /// A secret that is empty or not printable ASCII (the secret itself is never shown).
    #[error("the secret of {access_key_id} must be non-empty printable ASCII")]
    BadSecret {
        /// The key whose secret it is.
        access_key_id: String,
    },
    /// An account id that is not 12 digits.
    #[error("account_id {account_id:?} of {access_key_id} must be 12 digits")]
    BadAccountId {
        /// The account id as written.
        account_id: String,
        /// The key it belongs to.
        access_key_id: String,
    },
    /// A `.toml` file that does not parse.
    #[error("not valid TOML: {0}")]
    Toml(#[source] Box<toml::de::Error>),
    /// A `.json` file that does not parse.
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A file of another extension that parses as neither.
    #[error("neither JSON ({json}) nor TOML ({toml})")]
    NeitherJsonNorToml {
        /// Why it is not JSON.
        json: serde_json::Error,
        /// Why it is not TOML.
        toml: Box<toml::de::Error>,
    },
    /// The file cannot be read.
    #[error("{0}")]
    Read(#[source] std::io::Error),
    /// The file is larger than [`CREDENTIALS_FILE_BYTES_MAX`].
    #[error("{size_bytes} bytes; the limit is {limit_bytes}")]
    TooLarge {
        /// The file's size.
        size_bytes: u64,
        /// The limit.
        limit_bytes: usize,
    },
}

/// Every configured access key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    keys: BTreeMap<String, Credential>,
}

impl Credentials {
    /// Builds from pairs, validating each.
    pub fn from_map(keys: BTreeMap<String, Credential>, origin: &str) -> Result<Self, Error> {
        let bad = |reason: CredentialsReason| Error::Credentials {
            path: origin.to_owned(),
            reason,
        };
        if keys.is_empty() {
            return Err(bad(CredentialsReason::NoKeys));
        }
        for (id, credential) in &keys {
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(bad(CredentialsReason::BadAccessKeyId {
                    access_key_id: id.clone(),
                }));
            }
            if credential.secret_access_key.is_empty()
                || credential
                    .secret_access_key
                    .bytes()
                    .any(|b| !b.is_ascii_graphic())
            {
                return Err(bad(CredentialsReason::BadSecret {
                    access_key_id: id.clone(),
                }));
            }
            let account = &credential.account_id;
            if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(CredentialsReason::BadAccountId {
                    account_id: account.clone(),
                    access_key_id: id.clone(),
                }));
            }
        }
        Ok(Self { keys })
    }

    /// Parses the text of a credentials file; `origin` names it in errors. JSON is tried first
    /// unless `origin` ends in `.toml`.
    pub fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let bad = |reason: CredentialsReason| Error::Credentials {
            path: origin.to_owned(),
            reason,
        };
        let keys: BTreeMap<String, Credential> = if origin.ends_with(".toml") {
            toml::from_str(text).map_err(|e| bad(CredentialsReason::Toml(Box::new(e))))?
        } else {
            match serde_json::from_str(text) {
                Ok(keys) => keys,
                Err(json_error) if origin.ends_with(".json") => {
                    return Err(bad(CredentialsReason::Json(json_error)))
                }
                Err(json_error) => toml::from_str(text).map_err(|toml_error| {
                    bad(CredentialsReason::NeitherJsonNorToml {
                        json: json_error,
                        toml: Box::new(toml_error),
                    })
                })?,
            }
        };
        Self::from_map(keys, origin)
    }

    /// Reads and parses a credentials file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let metadata = std::fs::metadata(path).map_err(|e| Error::Credentials {
            path: origin.clone(),
            reason: CredentialsReason::Read(e),
        })?;
        if metadata.len() > CREDENTIALS_FILE_BYTES_MAX as u64 {
            return Err(Error::Credentials {
                path: origin,
                reason: CredentialsReason::TooLarge {
                    size_bytes: metadata.len(),
                    limit_bytes: CREDENTIALS_FILE_BYTES_MAX,
                },
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::Credentials {
            path: origin.clone(),
            reason: CredentialsReason::Read(e),
        })?;
        Self::parse(&text, &origin)
    }

    /// The credential of `access_key_id`, if configured.
    pub fn get(&self, access_key_id: &str) -> Option<&Credential> {
        self.keys.get(access_key_id)
    }

    /// The accounts the keys belong to.
    pub fn account_ids(&self) -> std::collections::BTreeSet<&str> {
        self.keys
            .values()
            .map(|credential| credential.account_id.as_str())
            .collect()
    }

    /// How many access keys are configured.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is configured (never true for a loaded file).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_toml_give_the_same_keys() {
        let json = r#"{"AKIDA": {"secret_access_key": "s3cret/+", "account_id": "111111111111"}}"#;
        let toml = "[AKIDA]\nsecret_access_key = \"s3cret/+\"\naccount_id = \"111111111111\"\n";
        let a = Credentials::parse(json, "c.json").expect("json parses");
        let b = Credentials::parse(toml, "c.toml").expect("toml parses");
        let c = Credentials::parse(toml, "credentials").expect("toml found without extension");
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(
            a.get("AKIDA").map(|c| c.account_id.as_str()),
            Some("111111111111")
        );
        assert!(a.get("AKIDB").is_none());
        assert!(
            !format!("{a:?}").contains("s3cret"),
            "Debug must redact secrets"
        );
    }

    #[test]
    fn bad_files_name_the_problem() {
        let cases = [
            (
                r#"{"AKIDA": {"secret_access_key": "x", "account_id": "12"}}"#,
                "12 digits",
            ),
            (
                r#"{"AKIDA": {"secret_access_key": "", "account_id": "111111111111"}}"#,
                "secret",
            ),
            (
                r#"{"AK-1": {"secret_access_key": "x", "account_id": "111111111111"}}"#,
                "AK-1",
            ),
            ("{}", "no access keys"),
            ("{not json", "not valid JSON"),
            (
                r#"{"AKIDA": {"secret_access_key": "x", "account_id": "111111111111", "extra": 1}}"#,
                "extra",
            ),
        ];
        for (text, needle) in cases {
            let error = Credentials::parse(text, "c.json").expect_err(text);
            assert!(
                error.to_string().contains(needle),
                "{error} should mention {needle}"
            );
            assert!(error.to_string().contains("c.json"));
        }
    }
}
