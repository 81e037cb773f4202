//! Tests of the SWF service on a manual clock (no sleeps): the registry and its faults, and
//! that every change survives a reopen of the same log.

use std::sync::Arc;

use serde_json::json;
use statelog_store::MemoryLog;

use super::api::{self, Fault};
use crate::clock::ManualClock;
use crate::{Engine, EngineOptions};

pub(super) const T0: u64 = 1_704_067_200_000;

pub(super) fn options(clock: &ManualClock) -> EngineOptions {
    EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        compaction_interval_ms: 0,
        ..EngineOptions::default()
    }
}

pub(super) fn engine_on(log: &Arc<MemoryLog>, clock: &ManualClock) -> Engine {
    Engine::open_with_log(log.clone(), options(clock)).expect("opens")
}

pub(super) fn input<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("an input of the API")
}

pub(super) fn fault<T: std::fmt::Debug>(result: Result<T, api::SwfError>) -> Fault {
    result.expect_err("a fault").fault
}

pub(super) fn register_domain(engine: &Engine, name: &str, days: &str) {
    engine
        .swf()
        .register_domain(&input(json!({
            "name": name, "workflowExecutionRetentionPeriodInDays": days
        })))
        .expect("registers");
}

#[test]
fn domains_register_describe_list_deprecate_and_answer_swf_faults() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = engine_on(&log, &clock);
    let swf = engine.swf();
    swf.register_domain(&input(json!({
        "name": "orders", "description": "the orders",
        "workflowExecutionRetentionPeriodInDays": "3",
        "tags": [{"key": "team", "value": "a"}]
    })))
    .expect("registers");
    register_domain(&engine, "billing", "0");
    assert_eq!(
        fault(swf.register_domain(&input(json!({
            "name": "orders", "workflowExecutionRetentionPeriodInDays": "1"
        })))),
        Fault::DomainAlreadyExists
    );
    for bad in [
        json!({"name": "a:b", "workflowExecutionRetentionPeriodInDays": "1"}),
        json!({"name": "ok", "workflowExecutionRetentionPeriodInDays": "91"}),
        json!({"name": "arn", "workflowExecutionRetentionPeriodInDays": "1"}),
    ] {
        assert_eq!(fault(swf.register_domain(&input(bad))), Fault::Validation);
    }
    let detail = swf
        .describe_domain(&input(json!({"name": "orders"})))
        .expect("describes");
    assert_eq!(
        serde_json::to_value(&detail).expect("json"),
        json!({
            "domainInfo": {"name": "orders", "status": "REGISTERED", "description": "the orders",
                           "arn": "arn:aws:swf:us-east-1:000000000000:/domain/orders"},
            "configuration": {"workflowExecutionRetentionPeriodInDays": "3"}
        })
    );
    assert_eq!(
        fault(swf.describe_domain(&input(json!({"name": "nope"})))),
        Fault::UnknownResource
    );
    let tags = swf
        .list_tags_for_resource(&input(json!({
            "resourceArn": "arn:aws:swf:us-east-1:000000000000:/domain/orders"
        })))
        .expect("lists tags");
    assert_eq!(tags.tags.len(), 1);

    swf.deprecate_domain(&input(json!({"name": "billing"})))
        .expect("deprecates");
    assert_eq!(
        fault(swf.deprecate_domain(&input(json!({"name": "billing"})))),
        Fault::DomainDeprecated
    );
    assert_eq!(
        fault(swf.undeprecate_domain(&input(json!({"name": "orders"})))),
        Fault::DomainAlreadyExists
    );
    let registered = swf
        .list_domains(&input(json!({"registrationStatus": "REGISTERED"})))
        .expect("lists");
    let names: Vec<&str> = registered
        .domain_infos
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["orders"]);
    let deprecated = swf
        .list_domains(&input(json!({"registrationStatus": "DEPRECATED"})))
        .expect("lists");
    assert_eq!(deprecated.domain_infos[0].name, "billing");
    // Types cannot go into a deprecated domain.
    assert_eq!(
        fault(swf.register_workflow_type(&input(json!({
            "domain": "billing", "name": "w", "version": "1"
        })))),
        Fault::UnknownResource
    );
    swf.undeprecate_domain(&input(json!({"name": "billing"})))
        .expect("undeprecates");
    // Delete needs a deprecated domain.
    assert_eq!(
        fault(swf.delete_domain(&input(json!({"name": "billing"})))),
        Fault::OperationNotPermitted
    );
    swf.deprecate_domain(&input(json!({"name": "billing"})))
        .expect("deprecates");
    swf.delete_domain(&input(json!({"name": "billing"})))
        .expect("deletes");
    assert_eq!(
        fault(swf.describe_domain(&input(json!({"name": "billing"})))),
        Fault::UnknownResource
    );

    // Everything is in the log: a reopen shows the same registry.
    drop(engine);
    let engine = engine_on(&log, &clock);
    let swf = engine.swf();
    let all = swf
        .list_domains(&input(json!({"registrationStatus": "REGISTERED"})))
        .expect("lists");
    assert_eq!(all.domain_infos.len(), 1);
    assert_eq!(
        swf.describe_domain(&input(json!({"name": "orders"})))
            .expect("describes"),
        detail
    );
}

#[test]
fn list_domains_pages_by_name_in_both_orders_and_checks_its_token() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = engine_on(&log, &clock);
    for name in ["c", "a", "e", "b", "d"] {
        register_domain(&engine, name, "1");
    }
    let swf = engine.swf();
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = swf
            .list_domains(&input(json!({
                "registrationStatus": "REGISTERED", "maximumPageSize": 2,
                "nextPageToken": token, "reverseOrder": true
            })))
            .expect("a page");
        assert!(page.domain_infos.len() <= 2);
        seen.extend(page.domain_infos.into_iter().map(|d| d.name));
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(seen, ["e", "d", "c", "b", "a"]);
    let forward = swf
        .list_domains(&input(
            json!({"registrationStatus": "REGISTERED", "maximumPageSize": 2}),
        ))
        .expect("a page");
    // A forward token read in reverse is refused, and so is a made-up one.
    assert_eq!(
        fault(swf.list_domains(&input(json!({
            "registrationStatus": "REGISTERED", "reverseOrder": true,
            "nextPageToken": forward.next_page_token
        })))),
        Fault::Validation
    );
    assert_eq!(
        fault(swf.list_domains(&input(json!({
            "registrationStatus": "REGISTERED", "nextPageToken": "zz"
        })))),
        Fault::Validation
    );
    assert_eq!(
        fault(swf.list_domains(&input(json!({
            "registrationStatus": "REGISTERED", "maximumPageSize": 1001
        })))),
        Fault::Validation
    );
}

#[test]
fn types_register_describe_deprecate_undeprecate_delete_with_their_faults() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = engine_on(&log, &clock);
    register_domain(&engine, "d", "1");
    let swf = engine.swf();
    swf.register_workflow_type(&input(json!({
        "domain": "d", "name": "order", "version": "1",
        "defaultTaskStartToCloseTimeout": "30", "defaultExecutionStartToCloseTimeout": "3600",
        "defaultTaskList": {"name": "deciders"}, "defaultTaskPriority": "5",
        "defaultChildPolicy": "TERMINATE"
    })))
    .expect("registers");
    swf.register_activity_type(&input(json!({
        "domain": "d", "name": "charge", "version": "1",
        "defaultTaskStartToCloseTimeout": "60", "defaultTaskHeartbeatTimeout": "NONE",
        "defaultTaskList": {"name": "workers"}, "defaultTaskScheduleToStartTimeout": "10",
        "defaultTaskScheduleToCloseTimeout": "70"
    })))
    .expect("registers");
    assert_eq!(
        fault(swf.register_workflow_type(&input(json!({
            "domain": "d", "name": "order", "version": "1"
        })))),
        Fault::TypeAlreadyExists
    );
    assert_eq!(
        fault(swf.register_workflow_type(&input(json!({
            "domain": "nope", "name": "order", "version": "1"
        })))),
        Fault::UnknownResource
    );
    assert_eq!(
        fault(swf.register_activity_type(&input(json!({
            "domain": "d", "name": "x", "version": "1", "defaultTaskHeartbeatTimeout": "soon"
        })))),
        Fault::Validation
    );
    let detail = swf
        .describe_workflow_type(&input(json!({
            "domain": "d", "workflowType": {"name": "order", "version": "1"}
        })))
        .expect("describes");
    assert_eq!(
        serde_json::to_value(&detail.configuration).expect("json"),
        json!({
            "defaultTaskStartToCloseTimeout": "30", "defaultExecutionStartToCloseTimeout": "3600",
            "defaultTaskList": {"name": "deciders"}, "defaultTaskPriority": "5",
            "defaultChildPolicy": "TERMINATE"
        })
    );
    assert_eq!(detail.type_info.creation_date, api::timestamp_from_ms(T0));
    let activity = swf
        .describe_activity_type(&input(json!({
            "domain": "d", "activityType": {"name": "charge", "version": "1"}
        })))
        .expect("describes");
    assert_eq!(
        activity
            .configuration
            .default_task_schedule_to_close_timeout
            .as_deref(),
        Some("70")
    );
    let wt = json!({"domain": "d", "workflowType": {"name": "order", "version": "1"}});
    assert_eq!(
        fault(swf.undeprecate_workflow_type(&input(wt.clone()))),
        Fault::TypeAlreadyExists
    );
    assert_eq!(
        fault(swf.delete_workflow_type(&input(wt.clone()))),
        Fault::TypeNotDeprecated
    );
    clock.advance_ms(1_000);
    swf.deprecate_workflow_type(&input(wt.clone()))
        .expect("deprecates");
    assert_eq!(
        fault(swf.deprecate_workflow_type(&input(wt.clone()))),
        Fault::TypeDeprecated
    );
    let listed = swf
        .list_workflow_types(&input(
            json!({"domain": "d", "registrationStatus": "DEPRECATED"}),
        ))
        .expect("lists");
    assert_eq!(listed.type_infos.len(), 1);
    assert_eq!(
        listed.type_infos[0].deprecation_date,
        Some(api::timestamp_from_ms(T0 + 1_000))
    );
    swf.undeprecate_workflow_type(&input(wt.clone()))
        .expect("undeprecates");
    swf.deprecate_workflow_type(&input(wt.clone()))
        .expect("deprecates");
    swf.delete_workflow_type(&input(wt.clone()))
        .expect("deletes");
    assert_eq!(
        fault(swf.describe_workflow_type(&input(wt))),
        Fault::UnknownResource
    );
    let activities = swf
        .list_activity_types(&input(json!({
            "domain": "d", "registrationStatus": "REGISTERED", "name": "charge"
        })))
        .expect("lists");
    assert_eq!(activities.type_infos.len(), 1);
    // A reopen shows the same types.
    drop(engine);
    let engine = engine_on(&log, &clock);
    let again = engine
        .swf()
        .describe_activity_type(&input(json!({
            "domain": "d", "activityType": {"name": "charge", "version": "1"}
        })))
        .expect("describes");
    assert_eq!(again, activity);
    assert_eq!(
        fault(engine.swf().describe_workflow_type(&input(json!({
            "domain": "d", "workflowType": {"name": "order", "version": "1"}
        })))),
        Fault::UnknownResource,
        "the deleted type stays deleted after a reopen"
    );
}

#[test]
fn tags_of_domains_add_replace_remove_and_refuse_too_many_or_unknown() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = engine_on(&log, &clock);
    register_domain(&engine, "d", "1");
    let swf = engine.swf();
    let arn = swf.domain_arn("d");
    swf.tag_resource(&input(json!({"resourceArn": arn, "tags": [
        {"key": "a", "value": "1"}, {"key": "b"}
    ]})))
    .expect("tags");
    swf.tag_resource(&input(
        json!({"resourceArn": arn, "tags": [{"key": "a", "value": "2"}]}),
    ))
    .expect("tags");
    swf.untag_resource(&input(json!({"resourceArn": arn, "tagKeys": ["b", "zz"]})))
        .expect("untags");
    let tags = swf
        .list_tags_for_resource(&input(json!({"resourceArn": arn})))
        .expect("lists");
    assert_eq!(
        serde_json::to_value(&tags).expect("json"),
        json!({"tags": [{"key": "a", "value": "2"}]})
    );
    let many: Vec<_> = (0..50).map(|i| json!({"key": format!("k{i}")})).collect();
    assert_eq!(
        fault(swf.tag_resource(&input(json!({"resourceArn": arn, "tags": many})))),
        Fault::TooManyTags,
        "50 new keys on top of one make 51"
    );
    assert_eq!(
        fault(swf.list_tags_for_resource(&input(json!({
            "resourceArn": "arn:aws:swf:us-east-1:111111111111:/domain/d"
        })))),
        Fault::UnknownResource,
        "another account's domain"
    );
    drop(engine);
    let engine = engine_on(&log, &clock);
    let again = engine
        .swf()
        .list_tags_for_resource(&input(json!({"resourceArn": arn})))
        .expect("lists");
    assert_eq!(again, tags);
}
