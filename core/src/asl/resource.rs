//! resource: splits a Task `Resource` ARN into its parts, and the registry an embedder fills
//! with the resources that exist and the integration patterns each supports.
//!
//! Invariant: a [`Resource`] returned by [`parse_resource`] has `raw` starting with `arn:` and six
//! `:`-separated fields at least. Must not: call anything (a resource is a name, not a handle).

use std::collections::{BTreeMap, BTreeSet};

use super::model::{IntegrationPattern, Resource, ResourceKind};

/// Why a `Resource` string is not a usable ARN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ResourceError {
    /// A sentence naming what is wrong.
    pub message: String,
}

fn resource_error(raw: &str, why: &str) -> ResourceError {
    ResourceError {
        message: format!("Resource '{raw}' is not a valid ARN: {why}"),
    }
}

/// Parses a Task `Resource` (`arn:<partition>:<namespace>:<region>:<account>:<resource>`).
pub fn parse_resource(raw: &str) -> Result<Resource, ResourceError> {
    let mut fields = raw.splitn(6, ':');
    let (Some(arn), Some(partition), Some(namespace), Some(region), Some(account), Some(rest)) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(resource_error(
            raw,
            "expected arn:<partition>:<service>:<region>:<account>:<resource>",
        ));
    };
    if arn != "arn" {
        return Err(resource_error(raw, "it must start with 'arn:'"));
    }
    if partition.is_empty() {
        return Err(resource_error(raw, "the partition is empty"));
    }
    if namespace.is_empty() {
        return Err(resource_error(raw, "the service is empty"));
    }
    if rest.is_empty() {
        return Err(resource_error(raw, "the resource part is empty"));
    }
    let kind = if namespace == "states" {
        if let Some(name) = rest.strip_prefix("activity:") {
            if name.is_empty() {
                return Err(resource_error(raw, "the activity name is empty"));
            }
            ResourceKind::Activity {
                name: name.to_string(),
            }
        } else {
            let (body, pattern) = split_pattern(rest);
            let Some((service, action)) = body.rsplit_once(':') else {
                return Err(resource_error(
                    raw,
                    "expected <service>:<action> after the account",
                ));
            };
            if service.is_empty() || action.is_empty() {
                return Err(resource_error(raw, "the service or the action is empty"));
            }
            ResourceKind::Integration {
                service: service.to_string(),
                action: action.to_string(),
                pattern,
            }
        }
    } else {
        ResourceKind::Other {
            resource: rest.to_string(),
        }
    };
    Ok(Resource {
        raw: raw.to_string(),
        partition: partition.to_string(),
        namespace: namespace.to_string(),
        region: region.to_string(),
        account: account.to_string(),
        kind,
    })
}

/// Splits a pattern suffix off `body` (`sns:publish.sync` -> `sns:publish`, `Sync`).
fn split_pattern(body: &str) -> (&str, IntegrationPattern) {
    // Longest suffix first: ".sync:2" also ends like nothing else, but keep the order explicit.
    for pattern in [
        IntegrationPattern::Sync2,
        IntegrationPattern::Sync,
        IntegrationPattern::WaitForTaskToken,
    ] {
        if let Some(stripped) = body.strip_suffix(pattern.suffix()) {
            return (stripped, pattern);
        }
    }
    (body, IntegrationPattern::RequestResponse)
}

/// The resources an embedder provides, with the patterns each supports.
///
/// A resource is registered under its ARN without the pattern suffix (e.g.
/// `arn:aws:states:::sns:publish`); region and account are compared as written. Activities are
/// accepted when [`ResourceRegistry::allow_activities`] is on (they are created at run time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRegistry {
    resources: BTreeMap<String, BTreeSet<IntegrationPattern>>,
    activities_allowed: bool,
}

impl ResourceRegistry {
    /// An empty registry: no resource exists, activities are refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `base_arn` (no suffix) with the patterns it supports; adds to earlier patterns.
    pub fn register(&mut self, base_arn: &str, patterns: &[IntegrationPattern]) -> &mut Self {
        self.resources
            .entry(base_arn.to_string())
            .or_default()
            .extend(patterns.iter().copied());
        self
    }

    /// Accepts (or refuses) activity resources.
    pub fn allow_activities(&mut self, allowed: bool) -> &mut Self {
        self.activities_allowed = allowed;
        self
    }

    /// The patterns registered for `base_arn`, if it is registered.
    pub fn patterns(&self, base_arn: &str) -> Option<&BTreeSet<IntegrationPattern>> {
        self.resources.get(base_arn)
    }

    /// Checks `resource` against the registry; the error names the problem.
    pub fn check(&self, resource: &Resource) -> Result<(), RegistryRefusal> {
        if resource.is_activity() {
            return if self.activities_allowed {
                Ok(())
            } else {
                Err(RegistryRefusal::ActivitiesDisabled {
                    resource: resource.raw.clone(),
                })
            };
        }
        let base = resource.base();
        let pattern = resource.pattern();
        match self.resources.get(base) {
            None => Err(RegistryRefusal::NotRegistered {
                base: base.to_string(),
            }),
            Some(patterns) if !patterns.contains(&pattern) => {
                Err(RegistryRefusal::PatternUnsupported {
                    base: base.to_string(),
                    pattern,
                    supported: patterns.iter().copied().collect(),
                })
            }
            Some(_) => Ok(()),
        }
    }
}

/// Why [`ResourceRegistry::check`] refuses a resource. Its text is the `InvalidResource`
/// diagnostic's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryRefusal {
    /// An activity ARN while activities are not enabled.
    #[error("activity resources are not enabled; '{resource}' is refused")]
    ActivitiesDisabled {
        /// The resource as written.
        resource: String,
    },
    /// A resource whose base ARN is not registered.
    #[error("resource '{base}' is not registered")]
    NotRegistered {
        /// The ARN without its pattern suffix.
        base: String,
    },
    /// A registered resource asked for with a pattern it does not support.
    #[error(
        "resource '{base}' does not support the pattern '{}'; it supports: {}",
        pattern_label(*pattern),
        supported.iter().map(|p| pattern_label(*p)).collect::<Vec<_>>().join(", ")
    )]
    PatternUnsupported {
        /// The ARN without its pattern suffix.
        base: String,
        /// The pattern asked for.
        pattern: IntegrationPattern,
        /// The patterns registered for `base`, in order.
        supported: Vec<IntegrationPattern>,
    },
}

/// How a pattern reads in a refusal: its suffix, or "(no suffix)" for request-response.
fn pattern_label(pattern: IntegrationPattern) -> &'static str {
    match pattern {
        IntegrationPattern::RequestResponse => "(no suffix)",
        other => other.suffix(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_integrations_activities_and_other_arns() {
        let table: &[(&str, ResourceKind)] = &[
            (
                "arn:aws:states:::sns:publish",
                ResourceKind::Integration {
                    service: "sns".into(),
                    action: "publish".into(),
                    pattern: IntegrationPattern::RequestResponse,
                },
            ),
            (
                "arn:aws:states:::ecs:runTask.sync",
                ResourceKind::Integration {
                    service: "ecs".into(),
                    action: "runTask".into(),
                    pattern: IntegrationPattern::Sync,
                },
            ),
            (
                "arn:aws:states:::states:startExecution.sync:2",
                ResourceKind::Integration {
                    service: "states".into(),
                    action: "startExecution".into(),
                    pattern: IntegrationPattern::Sync2,
                },
            ),
            (
                "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                ResourceKind::Integration {
                    service: "sqs".into(),
                    action: "sendMessage".into(),
                    pattern: IntegrationPattern::WaitForTaskToken,
                },
            ),
            (
                "arn:aws:states:::aws-sdk:s3:listBuckets",
                ResourceKind::Integration {
                    service: "aws-sdk:s3".into(),
                    action: "listBuckets".into(),
                    pattern: IntegrationPattern::RequestResponse,
                },
            ),
            (
                "arn:aws:states:us-east-1:111111111111:activity:work",
                ResourceKind::Activity {
                    name: "work".into(),
                },
            ),
            (
                "arn:aws:lambda:us-east-1:111111111111:function:f",
                ResourceKind::Other {
                    resource: "function:f".into(),
                },
            ),
        ];
        for (raw, kind) in table {
            let resource = parse_resource(raw).expect(raw);
            assert_eq!(&resource.kind, kind, "{raw}");
            assert_eq!(resource.raw, *raw);
        }
        let r = parse_resource("arn:aws:states:::sns:publish.waitForTaskToken").expect("arn");
        assert_eq!(r.base(), "arn:aws:states:::sns:publish");
        assert_eq!(r.pattern(), IntegrationPattern::WaitForTaskToken);
    }

    #[test]
    fn rejects_malformed_arns() {
        for raw in [
            "",
            "sns:publish",
            "arn:aws:states",
            "urn:aws:states:::sns:publish",
            "arn::states:::sns:publish",
            "arn:aws::::x",
            "arn:aws:states:::",
            "arn:aws:states:::publish",
            "arn:aws:states:r:a:activity:",
        ] {
            assert!(parse_resource(raw).is_err(), "{raw:?} should be rejected");
        }
    }

    #[test]
    fn registry_checks_existence_and_patterns() {
        let mut registry = ResourceRegistry::new();
        registry.register(
            "arn:aws:states:::sns:publish",
            &[
                IntegrationPattern::RequestResponse,
                IntegrationPattern::WaitForTaskToken,
            ],
        );
        let ok = parse_resource("arn:aws:states:::sns:publish.waitForTaskToken").expect("arn");
        assert_eq!(registry.check(&ok), Ok(()));
        let sync = parse_resource("arn:aws:states:::sns:publish.sync").expect("arn");
        let err = registry.check(&sync).expect_err("sync unsupported");
        assert_eq!(
            err.to_string(),
            "resource 'arn:aws:states:::sns:publish' does not support the pattern '.sync'; \
             it supports: (no suffix), .waitForTaskToken"
        );
        let unknown = parse_resource("arn:aws:states:::sqs:sendMessage").expect("arn");
        assert_eq!(
            registry.check(&unknown),
            Err(RegistryRefusal::NotRegistered {
                base: "arn:aws:states:::sqs:sendMessage".into()
            })
        );
        let activity = parse_resource("arn:aws:states:r:1:activity:a").expect("arn");
        assert!(registry.check(&activity).is_err());
        registry.allow_activities(true);
        assert_eq!(registry.check(&activity), Ok(()));
    }
}
