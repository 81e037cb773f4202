//! swf::registry: Amazon SWF domains, workflow types and activity types, and the tags of
//! domains, for one engine (= one account). Every change is one durable store record
//! (`store::swf::SwfRecord`), checked here against the registry under one lock, so two racing
//! registrations of a name cannot both succeed. Reads come from the store's index.
//!
//! Faults, as SWF answers them: an unknown (or deleted) domain or type is
//! `UnknownResourceFault`; registering a name that exists (registered or deprecated) is
//! `DomainAlreadyExistsFault` / `TypeAlreadyExistsFault`, and so is undeprecating one that is
//! registered; deprecating a deprecated domain is `DomainDeprecatedFault`, a deprecated type
//! `TypeDeprecatedFault`; deleting a type that is not deprecated is `TypeNotDeprecatedFault`;
//! registering types in a deprecated domain is `UnknownResourceFault` (SWF names no other
//! fault for it); more than `SWF_DOMAINS_MAX` domains, or types per domain, is
//! `LimitExceededFault`; more than 50 tags `TooManyTagsFault`.
//!
//! `DeleteDomain` is no SWF operation (SWF only deprecates); the engine API offers it for
//! embedders: the domain must be deprecated and have no open run (`OperationNotPermittedFault`
//! otherwise); its types and tags go with it, its closed runs expire by their retention.
//!
//! Must not: write a record that was not checked under `registry_writes`; read wall time.

use statelog_store::swf::{
    domain_of_arn, DomainEntry, RegistrationStatus as StoreStatus, SwfRecord, TypeDefaults,
    TypeEntry, TypeKind,
};
use statelog_swf::api::{self, Fault, SwfError};
use statelog_swf::limits;

use super::{internal, model, Swf};
use crate::limits::{SWF_DOMAINS_MAX, SWF_TYPES_PER_DOMAIN_MAX};

fn status_of(status: StoreStatus) -> api::RegistrationStatus {
    match status {
        StoreStatus::Registered => api::RegistrationStatus::Registered,
        StoreStatus::Deprecated => api::RegistrationStatus::Deprecated,
    }
}

fn child_policy_name(policy: api::ChildPolicy) -> String {
    match policy {
        api::ChildPolicy::Terminate => "TERMINATE",
        api::ChildPolicy::RequestCancel => "REQUEST_CANCEL",
        api::ChildPolicy::Abandon => "ABANDON",
    }
    .to_string()
}

/// The child policy a stored default names (written by `child_policy_name`).
pub(crate) fn child_policy_of(name: &str) -> Option<api::ChildPolicy> {
    Some(match name {
        "TERMINATE" => api::ChildPolicy::Terminate,
        "REQUEST_CANCEL" => api::ChildPolicy::RequestCancel,
        "ABANDON" => api::ChildPolicy::Abandon,
        _ => return None,
    })
}

/// A page token of a name-ordered list: the last key shown, hex-encoded, behind a prefix that
/// names the list and direction (a token of another list is refused).
fn page_token(kind: &str, reverse: bool, last: &str) -> String {
    let hex: String = last.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{kind}{}{hex}", if reverse { 'r' } else { 'f' })
}

fn read_page_token(kind: &str, reverse: bool, token: &str) -> Result<String, SwfError> {
    let bad = || {
        SwfError::validation(format!(
            "Invalid nextPageToken '{}': it was not given by this listing (or the listing's \
             order changed)",
            token.chars().take(64).collect::<String>()
        ))
    };
    let prefix = format!("{kind}{}", if reverse { 'r' } else { 'f' });
    let hex = token.strip_prefix(&prefix).ok_or_else(bad)?;
    if hex.len() % 2 != 0 || hex.len() > limits::PAGE_TOKEN_CHARS_MAX || !hex.is_ascii() {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| bad())?;
    String::from_utf8(bytes).map_err(|_| bad())
}

/// One page of `items` ordered by `key` (ascending, or descending when `reverse`), after the
/// token's key; with the token of the next page.
fn page<T>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> String,
    kind: &str,
    token: Option<&str>,
    size: Option<u32>,
    reverse: bool,
) -> Result<(Vec<T>, Option<String>), SwfError> {
    let size = api::page_size(size)? as usize;
    items.sort_by_key(|item| key(item));
    if reverse {
        items.reverse();
    }
    if let Some(token) = token {
        let after = read_page_token(kind, reverse, token)?;
        items.retain(|item| {
            let k = key(item);
            if reverse {
                k < after
            } else {
                k > after
            }
        });
    }
    let next = if items.len() > size {
        items.truncate(size);
        items
            .last()
            .map(|last| page_token(kind, reverse, &key(last)))
    } else {
        None
    };
    Ok((items, next))
}

/// The key of a type in name order (a NUL cannot occur in a name).
fn type_order_key(entry: &TypeEntry) -> String {
    format!("{}\u{0}{}", entry.name, entry.version)
}

impl Swf<'_> {
    /// The domain's ARN: `arn:aws:swf:<region>:<account>:/domain/<name>`.
    pub fn domain_arn(&self, name: &str) -> String {
        let options = &self.engine.inner.options;
        format!(
            "arn:aws:swf:{}:{}:/domain/{name}",
            options.region, options.account
        )
    }

    /// A live domain, or `UnknownResourceFault`.
    pub(crate) fn domain(&self, name: &str) -> Result<DomainEntry, SwfError> {
        self.engine
            .inner
            .store
            .swf_domain(name)
            .ok_or_else(|| SwfError::unknown_resource(format!("Unknown domain: {name}")))
    }

    /// A live domain that is not deprecated (new work may go into it), or
    /// `UnknownResourceFault`.
    pub(crate) fn usable_domain(&self, name: &str) -> Result<DomainEntry, SwfError> {
        let domain = self.domain(name)?;
        if domain.status == StoreStatus::Deprecated {
            return Err(SwfError::unknown_resource(format!(
                "Domain {name} is deprecated: it takes no new types or executions"
            )));
        }
        Ok(domain)
    }

    fn append_registry(&self, records: Vec<SwfRecord>) -> Result<(), SwfError> {
        if self.engine.inner.options.read_only {
            return Err(SwfError::new(
                Fault::OperationNotPermitted,
                "the engine is open read-only",
            ));
        }
        self.engine
            .inner
            .store
            .swf_append_registry(records)
            .map_err(internal)
    }

    fn now_ms(&self) -> u64 {
        self.engine.inner.options.clock.now_ms()
    }

    /// RegisterDomain.
    pub fn register_domain(&self, input: &api::RegisterDomainInput) -> Result<(), SwfError> {
        api::check_name("name", &input.name, limits::NAME_CHARS_MAX)?;
        api::check_optional_length(
            "description",
            input.description.as_deref(),
            limits::DESCRIPTION_CHARS_MAX,
        )?;
        let retention_days =
            api::parse_retention_days(&input.workflow_execution_retention_period_in_days)?;
        let tags = input.tags.clone().unwrap_or_default();
        api::check_resource_tags(&tags)?;
        let _serial = self.service().registry_writes.lock();
        let store = &self.engine.inner.store;
        if store.swf_domain(&input.name).is_some() {
            return Err(SwfError::new(
                Fault::DomainAlreadyExists,
                format!("Domain already exists: {}", input.name),
            ));
        }
        if store.swf_domains().len() >= SWF_DOMAINS_MAX {
            return Err(SwfError::new(
                Fault::LimitExceeded,
                format!("This account already has the maximum of {SWF_DOMAINS_MAX} domains"),
            ));
        }
        let mut records = vec![SwfRecord::DomainRegistered {
            name: input.name.clone(),
            description: input.description.clone(),
            retention_days,
            registered_ms: self.now_ms(),
        }];
        if !tags.is_empty() {
            records.push(SwfRecord::TagsSet {
                resource_arn: self.domain_arn(&input.name),
                tags: tag_pairs(tags),
            });
        }
        self.append_registry(records)
    }

    /// DescribeDomain.
    pub fn describe_domain(
        &self,
        input: &api::DescribeDomainInput,
    ) -> Result<api::DomainDetail, SwfError> {
        let domain = self.domain(&input.name)?;
        Ok(api::DomainDetail {
            domain_info: self.domain_info(&domain),
            configuration: api::DomainConfiguration {
                workflow_execution_retention_period_in_days: domain.retention_days.to_string(),
            },
        })
    }

    fn domain_info(&self, domain: &DomainEntry) -> api::DomainInfo {
        api::DomainInfo {
            name: domain.name.clone(),
            status: status_of(domain.status),
            description: domain.description.clone(),
            arn: Some(self.domain_arn(&domain.name)),
        }
    }

    /// ListDomains (by name; `reverseOrder` descending).
    pub fn list_domains(
        &self,
        input: &api::ListDomainsInput,
    ) -> Result<api::DomainInfos, SwfError> {
        let wanted = input.registration_status;
        let domains: Vec<DomainEntry> = self
            .engine
            .inner
            .store
            .swf_domains()
            .into_iter()
            .filter(|d| status_of(d.status) == wanted)
            .collect();
        let (domains, next_page_token) = page(
            domains,
            |d| d.name.clone(),
            "d",
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )?;
        Ok(api::DomainInfos {
            domain_infos: domains.iter().map(|d| self.domain_info(d)).collect(),
            next_page_token,
        })
    }

    /// DeprecateDomain.
    pub fn deprecate_domain(&self, input: &api::DeprecateDomainInput) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let domain = self.domain(&input.name)?;
        if domain.status == StoreStatus::Deprecated {
            return Err(SwfError::new(
                Fault::DomainDeprecated,
                format!("Domain is already deprecated: {}", input.name),
            ));
        }
        self.append_registry(vec![SwfRecord::DomainDeprecated {
            name: input.name.clone(),
            at_ms: self.now_ms(),
        }])
    }

    /// UndeprecateDomain.
    pub fn undeprecate_domain(&self, input: &api::UndeprecateDomainInput) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let domain = self.domain(&input.name)?;
        if domain.status == StoreStatus::Registered {
            return Err(SwfError::new(
                Fault::DomainAlreadyExists,
                format!("Domain is registered (not deprecated): {}", input.name),
            ));
        }
        self.append_registry(vec![SwfRecord::DomainUndeprecated {
            name: input.name.clone(),
            at_ms: self.now_ms(),
        }])
    }

    /// Deletes a deprecated domain with no open run (no SWF operation; see the module docs).
    pub fn delete_domain(&self, input: &api::DeleteDomainInput) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let domain = self.domain(&input.name)?;
        if domain.status != StoreStatus::Deprecated {
            return Err(SwfError::new(
                Fault::OperationNotPermitted,
                format!(
                    "Domain {} is registered: deprecate it before deleting it",
                    input.name
                ),
            ));
        }
        let open = self
            .engine
            .inner
            .store
            .swf_open_runs()
            .into_iter()
            .filter(|r| r.domain == input.name)
            .count();
        if open > 0 {
            return Err(SwfError::new(
                Fault::OperationNotPermitted,
                format!(
                    "Domain {} has {open} open workflow executions: close them before deleting it",
                    input.name
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::DomainDeleted {
            name: input.name.clone(),
            at_ms: self.now_ms(),
        }])
    }

    fn register_type(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
        description: Option<&str>,
        defaults: TypeDefaults,
    ) -> Result<(), SwfError> {
        api::check_name("domain", domain, limits::NAME_CHARS_MAX)?;
        api::check_name("name", name, limits::NAME_CHARS_MAX)?;
        api::check_name("version", version, limits::VERSION_CHARS_MAX)?;
        api::check_optional_length("description", description, limits::DESCRIPTION_CHARS_MAX)?;
        let _serial = self.service().registry_writes.lock();
        self.usable_domain(domain)?;
        let store = &self.engine.inner.store;
        if store.swf_type(domain, kind, name, version).is_some() {
            return Err(SwfError::new(
                Fault::TypeAlreadyExists,
                format!(
                    "{} already exists: [name={name}, version={version}]",
                    kind_name(kind)
                ),
            ));
        }
        if store.swf_types(domain, kind).len() >= SWF_TYPES_PER_DOMAIN_MAX {
            return Err(SwfError::new(
                Fault::LimitExceeded,
                format!(
                    "Domain {domain} already has the maximum of {SWF_TYPES_PER_DOMAIN_MAX} {}s",
                    kind_name(kind)
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::TypeRegistered {
            domain: domain.to_string(),
            kind,
            name: name.to_string(),
            version: version.to_string(),
            description: description.map(str::to_string),
            defaults,
            registered_ms: self.now_ms(),
        }])
    }

    /// A live type, or `UnknownResourceFault` (an unknown domain too).
    pub(crate) fn type_entry(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
    ) -> Result<TypeEntry, SwfError> {
        self.domain(domain)?;
        self.engine
            .inner
            .store
            .swf_type(domain, kind, name, version)
            .ok_or_else(|| {
                SwfError::unknown_resource(format!(
                    "Unknown type: {}=[name={name}, version={version}]",
                    kind_name(kind)
                ))
            })
    }

    fn deprecate_type(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
    ) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let entry = self.type_entry(domain, kind, name, version)?;
        if entry.status == StoreStatus::Deprecated {
            return Err(SwfError::new(
                Fault::TypeDeprecated,
                format!(
                    "{} is already deprecated: [name={name}, version={version}]",
                    kind_name(kind)
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::TypeDeprecated {
            domain: domain.to_string(),
            kind,
            name: name.to_string(),
            version: version.to_string(),
            at_ms: self.now_ms(),
        }])
    }

    fn undeprecate_type(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
    ) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let entry = self.type_entry(domain, kind, name, version)?;
        if entry.status == StoreStatus::Registered {
            return Err(SwfError::new(
                Fault::TypeAlreadyExists,
                format!(
                    "{} is registered (not deprecated): [name={name}, version={version}]",
                    kind_name(kind)
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::TypeUndeprecated {
            domain: domain.to_string(),
            kind,
            name: name.to_string(),
            version: version.to_string(),
            at_ms: self.now_ms(),
        }])
    }

    fn delete_type(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
    ) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        let entry = self.type_entry(domain, kind, name, version)?;
        if entry.status != StoreStatus::Deprecated {
            return Err(SwfError::new(
                Fault::TypeNotDeprecated,
                format!(
                    "{} is not deprecated: [name={name}, version={version}]",
                    kind_name(kind)
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::TypeDeleted {
            domain: domain.to_string(),
            kind,
            name: name.to_string(),
            version: version.to_string(),
            at_ms: self.now_ms(),
        }])
    }

    fn list_types(
        &self,
        input: &api::ListWorkflowTypesInput,
        kind: TypeKind,
    ) -> Result<(Vec<TypeEntry>, Option<String>), SwfError> {
        self.domain(&input.domain)?;
        if let Some(name) = &input.name {
            api::check_name("name", name, limits::NAME_CHARS_MAX)?;
        }
        let wanted = input.registration_status;
        let types: Vec<TypeEntry> = self
            .engine
            .inner
            .store
            .swf_types(&input.domain, kind)
            .into_iter()
            .filter(|t| status_of(t.status) == wanted)
            .filter(|t| input.name.as_ref().map_or(true, |n| *n == t.name))
            .collect();
        page(
            types,
            type_order_key,
            match kind {
                TypeKind::Workflow => "w",
                TypeKind::Activity => "a",
            },
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )
    }

    /// RegisterWorkflowType.
    pub fn register_workflow_type(
        &self,
        input: &api::RegisterWorkflowTypeInput,
    ) -> Result<(), SwfError> {
        api::Timeout::parse_optional(
            "defaultTaskStartToCloseTimeout",
            input.default_task_start_to_close_timeout.as_deref(),
        )?;
        api::Timeout::parse_optional(
            "defaultExecutionStartToCloseTimeout",
            input.default_execution_start_to_close_timeout.as_deref(),
        )?;
        api::parse_optional_task_priority(
            "defaultTaskPriority",
            input.default_task_priority.as_deref(),
        )?;
        if let Some(list) = &input.default_task_list {
            api::check_name("defaultTaskList.name", &list.name, limits::NAME_CHARS_MAX)?;
        }
        let defaults = TypeDefaults {
            task_start_to_close: input.default_task_start_to_close_timeout.clone(),
            execution_start_to_close: input.default_execution_start_to_close_timeout.clone(),
            task_list: input.default_task_list.as_ref().map(|l| l.name.clone()),
            task_priority: input.default_task_priority.clone(),
            child_policy: input.default_child_policy.map(child_policy_name),
            lambda_role: input.default_lambda_role.clone(),
            ..TypeDefaults::default()
        };
        self.register_type(
            &input.domain,
            TypeKind::Workflow,
            &input.name,
            &input.version,
            input.description.as_deref(),
            defaults,
        )
    }

    /// DescribeWorkflowType.
    pub fn describe_workflow_type(
        &self,
        input: &api::DescribeWorkflowTypeInput,
    ) -> Result<api::WorkflowTypeDetail, SwfError> {
        let t = &input.workflow_type;
        let entry = self.type_entry(&input.domain, TypeKind::Workflow, &t.name, &t.version)?;
        Ok(api::WorkflowTypeDetail {
            type_info: workflow_type_info(&entry),
            configuration: model::workflow_type_view(&entry).configuration,
        })
    }

    /// ListWorkflowTypes (by name, then version).
    pub fn list_workflow_types(
        &self,
        input: &api::ListWorkflowTypesInput,
    ) -> Result<api::WorkflowTypeInfos, SwfError> {
        let (types, next_page_token) = self.list_types(input, TypeKind::Workflow)?;
        Ok(api::WorkflowTypeInfos {
            type_infos: types.iter().map(workflow_type_info).collect(),
            next_page_token,
        })
    }

    /// DeprecateWorkflowType.
    pub fn deprecate_workflow_type(
        &self,
        input: &api::DeprecateWorkflowTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.workflow_type;
        self.deprecate_type(&input.domain, TypeKind::Workflow, &t.name, &t.version)
    }

    /// UndeprecateWorkflowType.
    pub fn undeprecate_workflow_type(
        &self,
        input: &api::UndeprecateWorkflowTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.workflow_type;
        self.undeprecate_type(&input.domain, TypeKind::Workflow, &t.name, &t.version)
    }

    /// DeleteWorkflowType (a deprecated type).
    pub fn delete_workflow_type(
        &self,
        input: &api::DeleteWorkflowTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.workflow_type;
        self.delete_type(&input.domain, TypeKind::Workflow, &t.name, &t.version)
    }

    /// RegisterActivityType.
    pub fn register_activity_type(
        &self,
        input: &api::RegisterActivityTypeInput,
    ) -> Result<(), SwfError> {
        for (field, value) in [
            (
                "defaultTaskStartToCloseTimeout",
                &input.default_task_start_to_close_timeout,
            ),
            (
                "defaultTaskHeartbeatTimeout",
                &input.default_task_heartbeat_timeout,
            ),
            (
                "defaultTaskScheduleToStartTimeout",
                &input.default_task_schedule_to_start_timeout,
            ),
            (
                "defaultTaskScheduleToCloseTimeout",
                &input.default_task_schedule_to_close_timeout,
            ),
        ] {
            api::Timeout::parse_optional(field, value.as_deref())?;
        }
        api::parse_optional_task_priority(
            "defaultTaskPriority",
            input.default_task_priority.as_deref(),
        )?;
        if let Some(list) = &input.default_task_list {
            api::check_name("defaultTaskList.name", &list.name, limits::NAME_CHARS_MAX)?;
        }
        let defaults = TypeDefaults {
            task_start_to_close: input.default_task_start_to_close_timeout.clone(),
            task_list: input.default_task_list.as_ref().map(|l| l.name.clone()),
            task_priority: input.default_task_priority.clone(),
            heartbeat: input.default_task_heartbeat_timeout.clone(),
            schedule_to_start: input.default_task_schedule_to_start_timeout.clone(),
            schedule_to_close: input.default_task_schedule_to_close_timeout.clone(),
            ..TypeDefaults::default()
        };
        self.register_type(
            &input.domain,
            TypeKind::Activity,
            &input.name,
            &input.version,
            input.description.as_deref(),
            defaults,
        )
    }

    /// DescribeActivityType.
    pub fn describe_activity_type(
        &self,
        input: &api::DescribeActivityTypeInput,
    ) -> Result<api::ActivityTypeDetail, SwfError> {
        let t = &input.activity_type;
        let entry = self.type_entry(&input.domain, TypeKind::Activity, &t.name, &t.version)?;
        Ok(api::ActivityTypeDetail {
            type_info: activity_type_info(&entry),
            configuration: model::activity_type_view(&entry).configuration,
        })
    }

    /// ListActivityTypes (by name, then version).
    pub fn list_activity_types(
        &self,
        input: &api::ListActivityTypesInput,
    ) -> Result<api::ActivityTypeInfos, SwfError> {
        let (types, next_page_token) = self.list_types(input, TypeKind::Activity)?;
        Ok(api::ActivityTypeInfos {
            type_infos: types.iter().map(activity_type_info).collect(),
            next_page_token,
        })
    }

    /// DeprecateActivityType.
    pub fn deprecate_activity_type(
        &self,
        input: &api::DeprecateActivityTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.activity_type;
        self.deprecate_type(&input.domain, TypeKind::Activity, &t.name, &t.version)
    }

    /// UndeprecateActivityType.
    pub fn undeprecate_activity_type(
        &self,
        input: &api::UndeprecateActivityTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.activity_type;
        self.undeprecate_type(&input.domain, TypeKind::Activity, &t.name, &t.version)
    }

    /// DeleteActivityType (a deprecated type).
    pub fn delete_activity_type(
        &self,
        input: &api::DeleteActivityTypeInput,
    ) -> Result<(), SwfError> {
        let t = &input.activity_type;
        self.delete_type(&input.domain, TypeKind::Activity, &t.name, &t.version)
    }

    /// The live domain a resource ARN of this engine names, or `UnknownResourceFault`.
    fn tagged_domain(&self, resource_arn: &str) -> Result<String, SwfError> {
        let unknown = || SwfError::unknown_resource(format!("Unknown resource: {resource_arn}"));
        let name = domain_of_arn(resource_arn).ok_or_else(unknown)?;
        if self.domain_arn(name) != resource_arn {
            return Err(unknown());
        }
        self.domain(name)?;
        Ok(name.to_string())
    }

    /// TagResource: adds or replaces tags of a domain.
    pub fn tag_resource(&self, input: &api::TagResourceInput) -> Result<(), SwfError> {
        api::check_resource_tags(&input.tags)?;
        let _serial = self.service().registry_writes.lock();
        self.tagged_domain(&input.resource_arn)?;
        let mut tags: std::collections::BTreeMap<String, String> = self
            .engine
            .inner
            .store
            .swf_tags(&input.resource_arn)
            .into_iter()
            .collect();
        for tag in &input.tags {
            tags.insert(tag.key.clone(), tag.value.clone().unwrap_or_default());
        }
        if tags.len() > limits::RESOURCE_TAGS_MAX {
            return Err(SwfError::new(
                Fault::TooManyTags,
                format!(
                    "{} would have {} tags; the maximum is {}",
                    input.resource_arn,
                    tags.len(),
                    limits::RESOURCE_TAGS_MAX
                ),
            ));
        }
        self.append_registry(vec![SwfRecord::TagsSet {
            resource_arn: input.resource_arn.clone(),
            tags: tags.into_iter().collect(),
        }])
    }

    /// UntagResource: removes tags of a domain by key (absent keys are ignored).
    pub fn untag_resource(&self, input: &api::UntagResourceInput) -> Result<(), SwfError> {
        let _serial = self.service().registry_writes.lock();
        self.tagged_domain(&input.resource_arn)?;
        let mut tags = self.engine.inner.store.swf_tags(&input.resource_arn);
        let before = tags.len();
        tags.retain(|(key, _)| !input.tag_keys.contains(key));
        if tags.len() == before {
            return Ok(());
        }
        self.append_registry(vec![SwfRecord::TagsSet {
            resource_arn: input.resource_arn.clone(),
            tags,
        }])
    }

    /// ListTagsForResource.
    pub fn list_tags_for_resource(
        &self,
        input: &api::ListTagsForResourceInput,
    ) -> Result<api::ListTagsForResourceOutput, SwfError> {
        self.tagged_domain(&input.resource_arn)?;
        let tags = self.engine.inner.store.swf_tags(&input.resource_arn);
        Ok(api::ListTagsForResourceOutput {
            tags: tags
                .into_iter()
                .map(|(key, value)| api::ResourceTag {
                    key,
                    value: Some(value),
                })
                .collect(),
        })
    }
}

fn kind_name(kind: TypeKind) -> &'static str {
    match kind {
        TypeKind::Workflow => "WorkflowType",
        TypeKind::Activity => "ActivityType",
    }
}

fn tag_pairs(tags: Vec<api::ResourceTag>) -> Vec<(String, String)> {
    let map: std::collections::BTreeMap<String, String> = tags
        .into_iter()
        .map(|t| (t.key, t.value.unwrap_or_default()))
        .collect();
    map.into_iter().collect()
}

fn workflow_type_info(entry: &TypeEntry) -> api::WorkflowTypeInfo {
    api::WorkflowTypeInfo {
        workflow_type: api::WorkflowType {
            name: entry.name.clone(),
            version: entry.version.clone(),
        },
        status: status_of(entry.status),
        description: entry.description.clone(),
        creation_date: api::timestamp_from_ms(entry.registered_ms),
        deprecation_date: entry.deprecated_ms.map(api::timestamp_from_ms),
    }
}

fn activity_type_info(entry: &TypeEntry) -> api::ActivityTypeInfo {
    api::ActivityTypeInfo {
        activity_type: api::ActivityType {
            name: entry.name.clone(),
            version: entry.version.clone(),
        },
        status: status_of(entry.status),
        description: entry.description.clone(),
        creation_date: api::timestamp_from_ms(entry.registered_ms),
        deprecation_date: entry.deprecated_ms.map(api::timestamp_from_ms),
    }
}
