//! arn: the one parser of the Step Functions ARNs the API takes.
//!
//! Grammar: `arn:<partition>:states:<region>:<account>:<type>:<name>[:<name>]`, where `<type>`
//! is `stateMachine` (one name), `activity` (one name), `execution` (the machine's name, then
//! the execution's) or `express` (an Express execution: the machine's name, the execution's,
//! then the id that tells apart executions of the same name). A name is never empty and never holds `:` (AWS's naming rules forbid it).
//!
//! Invariants: a text is either a whole [`Arn`] or an [`Error::InvalidArn`] naming what is wrong;
//! nothing resolves a resource by the tail of a text. A state machine, activity or tag ARN names
//! the engine's resource only when [`Arn::is_in`] its partition, region and account; an
//! execution ARN is looked up whole (the store's key), so another's matches nothing.
//! Must not: look anything up (that is the engine's), allocate to parse a well-formed ARN.

use std::fmt;

use super::error::{ArnReason, Error};

/// The only service of the ARNs the engine owns.
pub const SERVICE: &str = "states";

/// The partition of every ARN the engine mints.
pub const PARTITION: &str = "aws";

/// How many digits an AWS account id has.
pub(crate) const ACCOUNT_ID_DIGITS_COUNT: usize = 12;

/// The kind of resource an ARN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    /// `stateMachine:<name>`.
    StateMachine,
    /// `execution:<machine>:<name>`.
    Execution,
    /// `activity:<name>`.
    Activity,
    /// `express:<machine>:<name>:<id>`: an Express execution.
    Express,
}

impl ResourceType {
    /// The resource type as written in an ARN.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceType::StateMachine => "stateMachine",
            ResourceType::Execution => "execution",
            ResourceType::Activity => "activity",
            ResourceType::Express => "express",
        }
    }

    /// What follows the resource type in an ARN of this type.
    pub fn shape(self) -> &'static str {
        match self {
            ResourceType::Execution => "execution:<state machine name>:<execution name>",
            ResourceType::StateMachine => "stateMachine:<name>",
            ResourceType::Activity => "activity:<name>",
            ResourceType::Express => "express:<state machine name>:<execution name>:<id>",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "stateMachine" => Some(ResourceType::StateMachine),
            "execution" => Some(ResourceType::Execution),
            "activity" => Some(ResourceType::Activity),
            "express" => Some(ResourceType::Express),
            _ => None,
        }
    }
}

impl fmt::Display for ResourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a resource ARN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource<'a> {
    /// A state machine.
    StateMachine {
        /// Its name.
        name: &'a str,
    },
    /// An execution of a state machine.
    Execution {
        /// The state machine's name.
        machine: &'a str,
        /// The execution's name.
        name: &'a str,
    },
    /// An activity.
    Activity {
        /// Its name.
        name: &'a str,
    },
    /// An Express execution (names repeat: `id` tells them apart).
    Express {
        /// The state machine's name.
        machine: &'a str,
        /// The execution's name.
        name: &'a str,
        /// The id the engine drew for it.
        id: &'a str,
    },
}

impl<'a> Resource<'a> {
    /// The resource's type.
    pub fn resource_type(&self) -> ResourceType {
        match self {
            Resource::StateMachine { .. } => ResourceType::StateMachine,
            Resource::Execution { .. } => ResourceType::Execution,
            Resource::Activity { .. } => ResourceType::Activity,
            Resource::Express { .. } => ResourceType::Express,
        }
    }

    /// The resource's own name (an execution's, not its machine's).
    pub fn name(&self) -> &'a str {
        match *self {
            Resource::StateMachine { name }
            | Resource::Execution { name, .. }
            | Resource::Express { name, .. }
            | Resource::Activity { name } => name,
        }
    }
}

/// A parsed Step Functions ARN, borrowing the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arn<'a> {
    /// `aws`, `aws-cn`, ...
    pub partition: &'a str,
    /// `us-east-1`, ...
    pub region: &'a str,
    /// The 12-digit account id.
    pub account: &'a str,
    /// What it names.
    pub resource: Resource<'a>,
}

impl<'a> Arn<'a> {
    /// Parses `text` as a Step Functions ARN of any resource type.
    pub fn parse(text: &'a str) -> Result<Self, Error> {
        let invalid = |reason: ArnReason| Error::InvalidArn {
            arn: text.to_string(),
            reason,
        };
        let mut fields = text.splitn(7, ':');
        let mut next = || fields.next().unwrap_or_default();
        let (prefix, partition, service, region, account, kind, rest) =
            (next(), next(), next(), next(), next(), next(), next());
        if prefix != "arn" {
            return Err(invalid(ArnReason::Prefix));
        }
        if !is_word(partition) {
            return Err(invalid(ArnReason::Partition {
                partition: partition.to_string(),
            }));
        }
        if service != SERVICE {
            return Err(invalid(ArnReason::Service {
                service: service.to_string(),
            }));
        }
        if !is_word(region) {
            return Err(invalid(ArnReason::Region {
                region: region.to_string(),
            }));
        }
        if account.len() != ACCOUNT_ID_DIGITS_COUNT || !account.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(invalid(ArnReason::Account {
                account: account.to_string(),
            }));
        }
        let resource_type = ResourceType::from_name(kind).ok_or_else(|| {
            invalid(ArnReason::ResourceType {
                resource_type: kind.to_string(),
            })
        })?;
        let mut names = rest.split(':');
        let first = names.next().unwrap_or_default();
        let second = names.next();
        let third = names.next();
        let resource = match (resource_type, second, third, names.next()) {
            (ResourceType::StateMachine, None, None, None) => {
                Resource::StateMachine { name: first }
            }
            (ResourceType::Activity, None, None, None) => Resource::Activity { name: first },
            (ResourceType::Execution, Some(name), None, None) => Resource::Execution {
                machine: first,
                name,
            },
            (ResourceType::Express, Some(name), Some(id), None) if !id.is_empty() => {
                Resource::Express {
                    machine: first,
                    name,
                    id,
                }
            }
            _ => return Err(invalid(ArnReason::Shape { resource_type })),
        };
        if first.is_empty() || resource.name().is_empty() {
            return Err(invalid(ArnReason::Shape { resource_type }));
        }
        let arn = Arn {
            partition,
            region,
            account,
            resource,
        };
        debug_assert_eq!(arn.to_string(), text, "an ARN prints as it was parsed");
        Ok(arn)
    }

    /// Parses `text` as an ARN of one of the types `allowed` (the operation's context).
    pub fn parse_as(text: &'a str, allowed: &[ResourceType]) -> Result<Self, Error> {
        assert!(
            !allowed.is_empty(),
            "an operation accepts some resource type"
        );
        let arn = Self::parse(text)?;
        let found = arn.resource.resource_type();
        if allowed.contains(&found) {
            Ok(arn)
        } else {
            Err(Error::InvalidArn {
                arn: text.to_string(),
                reason: ArnReason::WrongType { found },
            })
        }
    }

    /// Whether the ARN lies in `region` of `account` (and in the engine's partition).
    pub fn is_in(&self, region: &str, account: &str) -> bool {
        self.partition == PARTITION && self.region == region && self.account == account
    }
}

impl fmt::Display for Arn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "arn:{}:{SERVICE}:{}:{}:{}:",
            self.partition,
            self.region,
            self.account,
            self.resource.resource_type()
        )?;
        match self.resource {
            Resource::Execution { machine, name } => write!(f, "{machine}:{name}"),
            Resource::Express { machine, name, id } => write!(f, "{machine}:{name}:{id}"),
            Resource::StateMachine { name } | Resource::Activity { name } => f.write_str(name),
        }
    }
}

/// What follows a state machine's name in a qualified state machine ARN
/// (`stateMachine:<name>:<qualifier>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qualifier<'a> {
    /// A version number (digits only, from 1).
    Version(u32),
    /// An alias name (anything else without `:`).
    Alias(&'a str),
}

/// Parses a state machine ARN that may carry a version or alias qualifier: the unqualified ARN
/// (parsed as [`Arn::parse_as`] a state machine) and the qualifier, if any. `InvalidArn` for an
/// empty qualifier, a version 0 or one past `u32`, or more than one qualifier.
pub fn parse_machine(text: &str) -> Result<(Arn<'_>, Option<Qualifier<'_>>), Error> {
    let shape = || Error::InvalidArn {
        arn: text.to_string(),
        reason: ArnReason::Shape {
            resource_type: ResourceType::StateMachine,
        },
    };
    // `arn:p:states:r:a:stateMachine:<name>:<qualifier>` has seven `:`.
    if text.matches(':').count() != 7 {
        return Ok((Arn::parse_as(text, &[ResourceType::StateMachine])?, None));
    }
    let (base, qualifier) = text.rsplit_once(':').ok_or_else(shape)?;
    let Ok(arn) = Arn::parse_as(base, &[ResourceType::StateMachine]) else {
        // Not a qualified state machine ARN: the whole text's refusal names what it is.
        return Err(match Arn::parse_as(text, &[ResourceType::StateMachine]) {
            Err(error) => error,
            Ok(_) => shape(),
        });
    };
    if qualifier.is_empty() {
        return Err(shape());
    }
    let qualifier = if qualifier.bytes().all(|b| b.is_ascii_digit()) {
        match qualifier.parse::<u32>() {
            Ok(number) if number >= 1 => Qualifier::Version(number),
            _ => return Err(shape()),
        }
    } else {
        Qualifier::Alias(qualifier)
    };
    Ok((arn, Some(qualifier)))
}

/// A partition or region: lowercase letters, digits and `-`, not empty.
fn is_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: &str = "000000000000";

    #[test]
    fn well_formed_arns_parse_into_their_fields() {
        let arn = Arn::parse("arn:aws:states:us-east-1:000000000000:execution:m:e").expect("ok");
        assert_eq!(
            arn.resource,
            Resource::Execution {
                machine: "m",
                name: "e"
            }
        );
        assert!(arn.is_in("us-east-1", ACCOUNT));
        assert!(!arn.is_in("eu-west-1", ACCOUNT));
        assert!(!arn.is_in("us-east-1", "111111111111"));
        let arn = Arn::parse("arn:aws-cn:states:cn-north-1:000000000000:activity:a").expect("ok");
        assert_eq!(arn.resource, Resource::Activity { name: "a" });
        assert!(!arn.is_in("cn-north-1", ACCOUNT), "another partition");
    }

    #[test]
    fn malformed_arns_are_invalid_arn() {
        for text in [
            "",
            "base",
            "arn:stateMachine:base",
            "arn:aws:states:us-east-1:000000000000:activity:x:stateMachine:base",
            "arn:aws:lambda:us-east-1:000000000000:stateMachine:base",
            "arn:aws:states:us-east-1:42:stateMachine:base",
            "arn:aws:states::000000000000:stateMachine:base",
            "arn:aws:states:US-EAST-1:000000000000:stateMachine:base",
            "arn:aws:states:us-east-1:000000000000:stateMachine:",
            "arn:aws:states:us-east-1:000000000000:stateMachine:base:1",
            "arn:aws:states:us-east-1:000000000000:execution:base",
            "arn:aws:states:us-east-1:000000000000:execution::e",
            "arn:aws:states:us-east-1:000000000000:mapRun:base:e",
        ] {
            let error = Arn::parse(text).expect_err(text);
            assert_eq!(error.aws_name(), "InvalidArn", "{text}");
        }
    }

    /// An Express execution ARN has three names; where an execution ARN is asked for it is
    /// refused as AWS refuses it ("Resource type not valid in this context: express").
    #[test]
    fn express_execution_arns_parse_and_are_refused_where_an_execution_is_asked_for() {
        let text = "arn:aws:states:us-east-1:000000000000:express:m:e:0b7c1d2e";
        let arn = Arn::parse(text).expect("ok");
        assert_eq!(
            arn.resource,
            Resource::Express {
                machine: "m",
                name: "e",
                id: "0b7c1d2e"
            }
        );
        assert_eq!(arn.to_string(), text);
        let error = Arn::parse_as(text, &[ResourceType::Execution]).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!("invalid ARN '{text}': Resource type not valid in this context: express")
        );
        for shape in [
            "arn:aws:states:us-east-1:000000000000:express:m:e",
            "arn:aws:states:us-east-1:000000000000:express:m:e:",
            "arn:aws:states:us-east-1:000000000000:express:m:e:i:j",
        ] {
            assert_eq!(Arn::parse(shape).expect_err(shape).aws_name(), "InvalidArn");
        }
    }

    #[test]
    fn qualified_machine_arns_parse_into_the_machine_and_its_qualifier() {
        let base = "arn:aws:states:us-east-1:000000000000:stateMachine:m";
        let (arn, qualifier) = parse_machine(base).expect("ok");
        assert_eq!(arn.resource, Resource::StateMachine { name: "m" });
        assert_eq!(qualifier, None);
        let text = format!("{base}:12");
        let (arn, qualifier) = parse_machine(&text).expect("ok");
        assert_eq!(arn.to_string(), base);
        assert_eq!(qualifier, Some(Qualifier::Version(12)));
        let text = format!("{base}:PROD-1");
        assert_eq!(
            parse_machine(&text).expect("ok").1,
            Some(Qualifier::Alias("PROD-1"))
        );
        for bad in [
            format!("{base}:"),
            format!("{base}:0"),
            format!("{base}:99999999999"),
            format!("{base}:a:b"),
            "arn:aws:states:us-east-1:000000000000:activity:m:1".to_string(),
        ] {
            let error = parse_machine(&bad).expect_err(&bad);
            assert_eq!(error.aws_name(), "InvalidArn", "{bad}");
        }
    }

    #[test]
    fn a_resource_type_outside_the_context_is_invalid_arn() {
        let text = "arn:aws:states:us-east-1:000000000000:activity:x";
        let error = Arn::parse_as(text, &[ResourceType::StateMachine]).expect_err("refused");
        assert!(
            error
                .to_string()
                .contains("Resource type not valid in this context: activity"),
            "{error}"
        );
        Arn::parse_as(text, &[ResourceType::StateMachine, ResourceType::Activity]).expect("ok");
    }
}
