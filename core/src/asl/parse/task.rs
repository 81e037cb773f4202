//! The Task state's fields: `Resource` (checked against the embedder's registry),
//! `TimeoutSeconds[Path]`, `HeartbeatSeconds[Path]`, the activity task list, its data flow,
//! Retry and Catch.

use super::*;

impl Ctx<'_> {
    pub(super) fn seconds_pair(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        path_key: &str,
    ) -> Option<SecondsField> {
        match (obj.get(key), obj.get(path_key)) {
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    format!("a state cannot have both '{key}' and '{path_key}'"),
                );
                None
            }
            (Some(_), None) => self
                .uint(obj, key, 1, SECONDS_MAX)
                .map(SecondsField::Literal),
            (None, Some(_)) => self.reference(obj, path_key).map(SecondsField::Path),
            (None, None) => None,
        }
    }

    /// A Task state's `Resource` (required), in either query language; `Credentials` is
    /// refused as not supported.
    pub(super) fn task_resource(&mut self, obj: Obj<'_>) -> Option<crate::asl::Resource> {
        if obj.get("Credentials").is_some() {
            self.unsupported(
                &obj.ptr("Credentials"),
                "'Credentials' (cross-account tasks)",
            );
        }
        self.required(obj, "Resource", "a Task state")
            .and_then(|_| self.resource(obj))
    }

    /// Reports a literal `HeartbeatSeconds` that is not smaller than a literal
    /// `TimeoutSeconds` (either query language).
    pub(super) fn check_heartbeat_below_timeout(
        &mut self,
        obj: Obj<'_>,
        timeout: Option<&SecondsField>,
        heartbeat: Option<&SecondsField>,
    ) {
        if let (Some(SecondsField::Literal(t)), Some(SecondsField::Literal(h))) =
            (timeout, heartbeat)
        {
            if h >= t {
                self.schema(
                    &obj.ptr("HeartbeatSeconds"),
                    format!("'HeartbeatSeconds' ({h}) must be smaller than 'TimeoutSeconds' ({t})"),
                );
            }
        }
    }

    pub(super) fn task(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        flow: &mut JsonPathFlow,
    ) -> Option<TaskState> {
        let resource = self.task_resource(obj);
        let parameters = self.template(obj, "Parameters", false);
        let result_selector = self.template(obj, "ResultSelector", true);
        let result_path = self.result_path(obj, "ResultPath");
        let timeout = self.seconds_pair(obj, "TimeoutSeconds", "TimeoutSecondsPath");
        let heartbeat = self.seconds_pair(obj, "HeartbeatSeconds", "HeartbeatSecondsPath");
        self.check_heartbeat_below_timeout(obj, timeout.as_ref(), heartbeat.as_ref());
        let task_list = self.task_list(obj, resource.as_ref());
        let retry = self.retriers(obj);
        let catch = self.catchers(obj, node);
        let next = self.transition(obj, node);
        let task = TaskState {
            resource: resource?,
            timeout: present_or_fail_any(obj, &["TimeoutSeconds", "TimeoutSecondsPath"], timeout)?,
            heartbeat: present_or_fail_any(
                obj,
                &["HeartbeatSeconds", "HeartbeatSecondsPath"],
                heartbeat,
            )?,
            task_list: present_or_fail_any(obj, &["TaskList", "TaskListPath"], task_list)?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.parameters = present_or_fail(obj, "Parameters", parameters)?;
        flow.result_selector = present_or_fail(obj, "ResultSelector", result_selector)?;
        flow.result_path = present_or_fail(obj, "ResultPath", result_path)?;
        Some(task)
    }

    /// `TaskList` / `TaskListPath` (statelog extensions): only on activity resources, one of
    /// the two, a list name of 1..=TASK_LIST_NAME_CHARS_MAX characters.
    pub(super) fn task_list(
        &mut self,
        obj: Obj<'_>,
        resource: Option<&crate::asl::model::Resource>,
    ) -> Option<crate::asl::model::TaskListField> {
        use crate::asl::model::TaskListField;
        let key = match (obj.get("TaskList"), obj.get("TaskListPath")) {
            (None, None) => return None,
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    "a state cannot have both 'TaskList' and 'TaskListPath'".to_string(),
                );
                return None;
            }
            (Some(_), None) => "TaskList",
            (None, Some(_)) => "TaskListPath",
        };
        if resource.is_some_and(|r| !r.is_activity()) {
            self.schema(
                &obj.ptr(key),
                format!("'{key}' (a statelog extension) is allowed only with an activity resource"),
            );
            return None;
        }
        if key == "TaskListPath" {
            return self.reference(obj, key).map(TaskListField::Path);
        }
        let name = self.string(obj, key)?;
        let max = crate::limits::TASK_LIST_NAME_CHARS_MAX;
        if name.is_empty() || name.chars().count() > max {
            self.schema(
                &obj.ptr(key),
                format!("'{key}' must have 1 to {max} characters"),
            );
            return None;
        }
        Some(TaskListField::Literal(name))
    }

    pub(super) fn resource(&mut self, obj: Obj<'_>) -> Option<crate::asl::model::Resource> {
        let raw = self.string(obj, "Resource")?;
        let at = obj.ptr("Resource");
        let resource = match parse_resource(&raw) {
            Ok(resource) => resource,
            Err(error) => {
                self.error(&at, DiagnosticCode::InvalidResource, error.message);
                return None;
            }
        };
        // The HTTP Task answers its call only (AWS refuses `.sync` and `.waitForTaskToken`).
        let http_invoke = resource.namespace == "states"
            && matches!(&resource.kind, ResourceKind::Integration { service, action, .. }
                if service == "http" && action == "invoke");
        if http_invoke && resource.pattern() != IntegrationPattern::RequestResponse {
            self.error(
                &at,
                DiagnosticCode::InvalidResource,
                format!(
                    "the HTTP Task (arn:aws:states:::http:invoke) supports only request/response; \
                     '{}' is not supported",
                    resource.pattern().suffix()
                ),
            );
            return None;
        }
        if self.options.machine_type == MachineType::Express {
            // AWS's wording, trailing space included for '.waitForTaskToken'.
            let refusal = match (&resource.kind, resource.pattern()) {
                (ResourceKind::Activity { .. }, _) => {
                    Some("Express state machine does not support Activity ARN".to_string())
                }
                (_, IntegrationPattern::WaitForTaskToken) => Some(
                    "Express state machine does not support '.waitForTaskToken' service integration "
                        .to_string(),
                ),
                (_, IntegrationPattern::RequestResponse) => None,
                (_, pattern) => Some(format!(
                    "Express state machine does not support '{}' service integration",
                    pattern.suffix()
                )),
            };
            if let Some(message) = refusal {
                self.schema(&at, message);
                return None;
            }
        }
        if let Some(registry) = &self.options.resources {
            if let Err(refusal) = registry.check(&resource) {
                self.error(&at, DiagnosticCode::InvalidResource, refusal.to_string());
                return None;
            }
        }
        Some(resource)
    }
}
