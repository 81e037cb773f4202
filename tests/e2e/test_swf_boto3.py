"""Amazon SWF workflows over `statelog serve`, through the plain boto3 `swf` client: each test is a
decider and a worker written out call by call, checking what the Amazon SWF API reference says
the service answers (registration and its faults, defaults and overrides, priorities, routing,
the decision-task rules, every timeout kind, cancel, signal, marker, timers, terminate, history
paging and startAtPreviousStartedEvent, listing with filters, tags, tokens, and the quotas
statelog enforces, on a second server started with small limits).

Timeouts are 1-2 s and the tests that wait on them share one wait (the `timeouts` fixture sets
every scenario up at once). A poll is only made where a task is known to wait (the pending count
says so first), so no test sits in a 60 s long poll; the one empty poll runs in the background
for the whole session (conftest.py) and test_swf_zz_empty_poll.py checks it last.
"""

import datetime
import json
import time

import pytest
from botocore.exceptions import ClientError

from swf_helpers import (
    BIN,
    ENDPOINT,
    attrs,
    error_code,
    history,
    of_type,
    signed_post,
    swf_client,
    types,
    unique,
    wait_closed,
    wait_for,
    wait_for_event,
)

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

IDENTITY = "e2e-boto3"


@pytest.fixture(scope="module")
def c():
    return swf_client()


def register_domain(c, **extra):
    name = unique("dom")
    c.register_domain(name=name, workflowExecutionRetentionPeriodInDays="1", **extra)
    return name


@pytest.fixture(scope="module")
def domain(c):
    return register_domain(c, description="statelog e2e")


WORKFLOW_DEFAULTS = {
    "defaultTaskStartToCloseTimeout": "30",
    "defaultExecutionStartToCloseTimeout": "600",
    "defaultChildPolicy": "TERMINATE",
}

ACTIVITY_DEFAULTS = {
    "defaultTaskScheduleToStartTimeout": "60",
    "defaultTaskScheduleToCloseTimeout": "120",
    "defaultTaskStartToCloseTimeout": "60",
    "defaultTaskHeartbeatTimeout": "NONE",
}


def register_workflow(c, domain, **overrides):
    """A workflow type with a unique name and its own default decision task list; an override
    of None leaves that default out."""
    name = unique("wf")
    args = dict(WORKFLOW_DEFAULTS, defaultTaskList={"name": unique("decide")})
    args.update(overrides)
    args = {k: v for k, v in args.items() if v is not None}
    c.register_workflow_type(domain=domain, name=name, version="1", **args)
    return {"type": {"name": name, "version": "1"}, "list": args.get("defaultTaskList", {}).get("name")}


def register_activity(c, domain, **overrides):
    name = unique("act")
    args = dict(ACTIVITY_DEFAULTS, defaultTaskList={"name": unique("work")})
    args.update(overrides)
    args = {k: v for k, v in args.items() if v is not None}
    c.register_activity_type(domain=domain, name=name, version="1", **args)
    return {"type": {"name": name, "version": "1"}, "list": args.get("defaultTaskList", {}).get("name")}


def start(c, domain, wf, **kwargs):
    workflow_id = kwargs.pop("workflowId", None) or unique("run")
    run = c.start_workflow_execution(domain=domain, workflowId=workflow_id, workflowType=wf["type"], **kwargs)
    return {"workflowId": workflow_id, "runId": run["runId"]}


def poll_decision(c, domain, task_list, **kwargs):
    """A decision task from `task_list`, once the list says one waits (never an empty 60 s poll)."""
    wait_for(
        f"a decision task in {task_list}",
        lambda: c.count_pending_decision_tasks(domain=domain, taskList={"name": task_list})["count"] > 0,
    )
    task = c.poll_for_decision_task(domain=domain, taskList={"name": task_list}, identity=IDENTITY, **kwargs)
    assert task["taskToken"], "a decision task was pending"
    return task


def poll_activity(c, domain, task_list):
    wait_for(
        f"an activity task in {task_list}",
        lambda: c.count_pending_activity_tasks(domain=domain, taskList={"name": task_list})["count"] > 0,
    )
    task = c.poll_for_activity_task(domain=domain, taskList={"name": task_list}, identity=IDENTITY)
    assert task["taskToken"], "an activity task was pending"
    return task


def respond(c, task, *decisions, **kwargs):
    c.respond_decision_task_completed(taskToken=task["taskToken"], decisions=list(decisions), **kwargs)


def schedule(activity, activity_id, **extra):
    attributes = {"activityType": activity["type"], "activityId": activity_id}
    attributes.update(extra)
    return {"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": attributes}


def complete(result=None):
    attributes = {} if result is None else {"result": result}
    return {"decisionType": "CompleteWorkflowExecution", "completeWorkflowExecutionDecisionAttributes": attributes}


def start_timer(timer_id, seconds):
    return {
        "decisionType": "StartTimer",
        "startTimerDecisionAttributes": {"timerId": timer_id, "startToFireTimeout": str(seconds)},
    }


def cancel_timer(timer_id):
    return {"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": timer_id}}


def started_at_decision(c, domain, **workflow_overrides):
    """A new workflow type, a run of it, and that run's first decision task (polled)."""
    wf = register_workflow(c, domain, **workflow_overrides)
    execution = start(c, domain, wf)
    return wf, execution, poll_decision(c, domain, wf["list"])


def counted(answer):
    """A count answer's `count`, checking it is not truncated (absent means not truncated)."""
    assert answer.get("truncated", False) is False, answer
    return answer["count"]


def last_of(events, event_type):
    found = of_type(events, event_type)
    assert found, f"no {event_type} in {types(events)}"
    return found[-1]


# ---------------------------------------------------------------------------------------------
# Registration and its faults


def test_domain_registration_describe_list_deprecate(c):
    name = register_domain(c, description="first")
    detail = c.describe_domain(name=name)
    assert detail["domainInfo"]["name"] == name
    assert detail["domainInfo"]["status"] == "REGISTERED"
    assert detail["domainInfo"]["description"] == "first"
    assert detail["domainInfo"]["arn"].endswith(f":/domain/{name}")
    assert detail["configuration"] == {"workflowExecutionRetentionPeriodInDays": "1"}
    with pytest.raises(ClientError) as excinfo:
        c.register_domain(name=name, workflowExecutionRetentionPeriodInDays="1")
    assert error_code(excinfo) == "DomainAlreadyExistsFault"
    listed = [d["name"] for d in c.list_domains(registrationStatus="REGISTERED")["domainInfos"]]
    assert name in listed
    c.deprecate_domain(name=name)
    assert c.describe_domain(name=name)["domainInfo"]["status"] == "DEPRECATED"
    assert name not in [d["name"] for d in c.list_domains(registrationStatus="REGISTERED")["domainInfos"]]
    assert name in [d["name"] for d in c.list_domains(registrationStatus="DEPRECATED")["domainInfos"]]
    with pytest.raises(ClientError) as excinfo:
        c.deprecate_domain(name=name)
    assert error_code(excinfo) == "DomainDeprecatedFault"
    # A deprecated domain takes no new types (SWF names no fault of its own for it).
    with pytest.raises(ClientError) as excinfo:
        c.register_workflow_type(domain=name, name="late", version="1")
    assert error_code(excinfo) == "UnknownResourceFault"
    c.undeprecate_domain(name=name)
    assert c.describe_domain(name=name)["domainInfo"]["status"] == "REGISTERED"
    with pytest.raises(ClientError) as excinfo:
        c.undeprecate_domain(name=name)
    assert error_code(excinfo) == "DomainAlreadyExistsFault"
    for call in (
        lambda: c.describe_domain(name=unique("nowhere")),
        lambda: c.deprecate_domain(name=unique("nowhere")),
        lambda: c.list_workflow_types(domain=unique("nowhere"), registrationStatus="REGISTERED"),
    ):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert error_code(excinfo) == "UnknownResourceFault"


def test_list_domains_pages_by_name(c):
    names = sorted(register_domain(c) for _ in range(3))
    seen, token = [], None
    while True:
        page = c.list_domains(registrationStatus="REGISTERED", maximumPageSize=2, **({"nextPageToken": token} if token else {}))
        assert len(page["domainInfos"]) <= 2
        seen.extend(d["name"] for d in page["domainInfos"])
        token = page.get("nextPageToken")
        if not token:
            break
    assert [n for n in seen if n in names] == names, "ascending by name"
    reverse = [d["name"] for d in c.list_domains(registrationStatus="REGISTERED", reverseOrder=True)["domainInfos"]]
    assert [n for n in reverse if n in names] == names[::-1]


def test_workflow_type_lifecycle(c, domain):
    wf = register_workflow(c, domain, defaultTaskPriority="3", description="orders")
    detail = c.describe_workflow_type(domain=domain, workflowType=wf["type"])
    assert detail["typeInfo"]["workflowType"] == wf["type"]
    assert detail["typeInfo"]["status"] == "REGISTERED"
    assert detail["typeInfo"]["description"] == "orders"
    assert isinstance(detail["typeInfo"]["creationDate"], datetime.datetime)
    assert detail["configuration"] == {
        "defaultTaskStartToCloseTimeout": "30",
        "defaultExecutionStartToCloseTimeout": "600",
        "defaultTaskList": {"name": wf["list"]},
        "defaultTaskPriority": "3",
        "defaultChildPolicy": "TERMINATE",
    }
    with pytest.raises(ClientError) as excinfo:
        c.register_workflow_type(domain=domain, name=wf["type"]["name"], version="1")
    assert error_code(excinfo) == "TypeAlreadyExistsFault"
    # Another version of the same name is another type.
    c.register_workflow_type(domain=domain, name=wf["type"]["name"], version="2")
    listed = c.list_workflow_types(domain=domain, registrationStatus="REGISTERED", name=wf["type"]["name"])["typeInfos"]
    assert [t["workflowType"]["version"] for t in listed] == ["1", "2"]
    with pytest.raises(ClientError) as excinfo:
        c.delete_workflow_type(domain=domain, workflowType=wf["type"])
    assert error_code(excinfo) == "TypeNotDeprecatedFault"
    c.deprecate_workflow_type(domain=domain, workflowType=wf["type"])
    detail = c.describe_workflow_type(domain=domain, workflowType=wf["type"])
    assert detail["typeInfo"]["status"] == "DEPRECATED"
    assert isinstance(detail["typeInfo"]["deprecationDate"], datetime.datetime)
    with pytest.raises(ClientError) as excinfo:
        c.deprecate_workflow_type(domain=domain, workflowType=wf["type"])
    assert error_code(excinfo) == "TypeDeprecatedFault"
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, wf)
    assert error_code(excinfo) == "TypeDeprecatedFault"
    deprecated = c.list_workflow_types(domain=domain, registrationStatus="DEPRECATED")["typeInfos"]
    assert wf["type"] in [t["workflowType"] for t in deprecated]
    c.undeprecate_workflow_type(domain=domain, workflowType=wf["type"])
    with pytest.raises(ClientError) as excinfo:
        c.undeprecate_workflow_type(domain=domain, workflowType=wf["type"])
    assert error_code(excinfo) == "TypeAlreadyExistsFault"
    start(c, domain, wf)
    c.deprecate_workflow_type(domain=domain, workflowType=wf["type"])
    c.delete_workflow_type(domain=domain, workflowType=wf["type"])
    with pytest.raises(ClientError) as excinfo:
        c.describe_workflow_type(domain=domain, workflowType=wf["type"])
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        c.describe_workflow_type(domain=domain, workflowType={"name": unique("none"), "version": "1"})
    assert error_code(excinfo) == "UnknownResourceFault"


def test_activity_type_lifecycle_and_deprecated_types_in_decisions(c, domain):
    activity = register_activity(c, domain, defaultTaskPriority="7", description="resize")
    detail = c.describe_activity_type(domain=domain, activityType=activity["type"])
    assert detail["typeInfo"]["activityType"] == activity["type"]
    assert detail["typeInfo"]["status"] == "REGISTERED"
    assert detail["typeInfo"]["description"] == "resize"
    assert detail["configuration"] == {
        "defaultTaskStartToCloseTimeout": "60",
        "defaultTaskHeartbeatTimeout": "NONE",
        "defaultTaskList": {"name": activity["list"]},
        "defaultTaskPriority": "7",
        "defaultTaskScheduleToStartTimeout": "60",
        "defaultTaskScheduleToCloseTimeout": "120",
    }
    with pytest.raises(ClientError) as excinfo:
        c.register_activity_type(domain=domain, name=activity["type"]["name"], version="1")
    assert error_code(excinfo) == "TypeAlreadyExistsFault"
    listed = c.list_activity_types(domain=domain, registrationStatus="REGISTERED", name=activity["type"]["name"])
    assert [t["activityType"] for t in listed["typeInfos"]] == [activity["type"]]
    with pytest.raises(ClientError) as excinfo:
        c.delete_activity_type(domain=domain, activityType=activity["type"])
    assert error_code(excinfo) == "TypeNotDeprecatedFault"
    c.deprecate_activity_type(domain=domain, activityType=activity["type"])
    with pytest.raises(ClientError) as excinfo:
        c.deprecate_activity_type(domain=domain, activityType=activity["type"])
    assert error_code(excinfo) == "TypeDeprecatedFault"
    # Scheduling a deprecated or unknown type fails the decision, not the call.
    _, execution, task = started_at_decision(c, domain)
    missing = {"type": {"name": unique("missing"), "version": "1"}}
    respond(c, task, schedule(activity, "a1"), schedule(missing, "a2"))
    events = history(c, domain, execution)
    failed = of_type(events, "ScheduleActivityTaskFailed")
    assert [(attrs(e)["activityId"], attrs(e)["cause"]) for e in failed] == [
        ("a1", "ACTIVITY_TYPE_DEPRECATED"),
        ("a2", "ACTIVITY_TYPE_DOES_NOT_EXIST"),
    ]
    completed = last_of(events, "DecisionTaskCompleted")
    assert all(attrs(e)["decisionTaskCompletedEventId"] == completed["eventId"] for e in failed)
    assert attrs(failed[1])["activityType"] == missing["type"]
    assert types(events)[-1] == "DecisionTaskScheduled", "a failed decision schedules a decision task"
    c.undeprecate_activity_type(domain=domain, activityType=activity["type"])
    assert c.describe_activity_type(domain=domain, activityType=activity["type"])["typeInfo"]["status"] == "REGISTERED"
    c.deprecate_activity_type(domain=domain, activityType=activity["type"])
    c.delete_activity_type(domain=domain, activityType=activity["type"])
    with pytest.raises(ClientError) as excinfo:
        c.describe_activity_type(domain=domain, activityType=activity["type"])
    assert error_code(excinfo) == "UnknownResourceFault"


def test_names_and_bodies_are_validated(c, domain):
    for bad in ("a:b", "a/b", "a|b", "arn", "tab\there"):
        with pytest.raises(ClientError) as excinfo:
            c.register_domain(name=bad, workflowExecutionRetentionPeriodInDays="1")
        assert error_code(excinfo) == "ValidationException", bad
    with pytest.raises(ClientError) as excinfo:
        c.register_workflow_type(domain=domain, name="x" * 257, version="1")
    assert error_code(excinfo) == "ValidationException"
    # What boto3 would refuse to send: a missing required member, a wrong type, not JSON.
    answer = signed_post("SimpleWorkflowService.RegisterDomain", b'{"workflowExecutionRetentionPeriodInDays": "1"}')
    assert answer.status_code == 400
    assert answer.json()["__type"].endswith("ValidationException")
    assert "name" in answer.json()["message"]
    answer = signed_post("SimpleWorkflowService.DescribeDomain", b'{"name": 7}')
    assert answer.status_code == 400
    assert answer.json()["__type"].endswith("SerializationException")
    answer = signed_post("SimpleWorkflowService.DescribeDomain", b"{not json")
    assert answer.status_code == 400
    assert answer.json()["__type"].endswith("SerializationException")
    # A fault is answered in SWF's JSON 1.0 shape.
    answer = signed_post("SimpleWorkflowService.DescribeDomain", json.dumps({"name": unique("nowhere")}).encode())
    assert answer.status_code == 400
    assert answer.json()["__type"] == "com.amazonaws.swf.base.model#UnknownResourceFault"
    assert answer.json()["message"]
    answer = signed_post("SimpleWorkflowService.NoSuchThing", b"{}")
    assert answer.status_code == 400
    assert "NoSuchThing" in answer.json()["message"]


def test_too_many_tags_and_tag_operations(c):
    with pytest.raises(ClientError) as excinfo:
        c.register_domain(
            name=unique("tags"),
            workflowExecutionRetentionPeriodInDays="1",
            tags=[{"key": f"k{i}", "value": "v"} for i in range(51)],
        )
    assert error_code(excinfo) == "TooManyTagsFault"
    name = register_domain(c, tags=[{"key": "team", "value": "blue"}])
    arn = c.describe_domain(name=name)["domainInfo"]["arn"]
    assert c.list_tags_for_resource(resourceArn=arn)["tags"] == [{"key": "team", "value": "blue"}]
    c.tag_resource(resourceArn=arn, tags=[{"key": "cost", "value": "7"}, {"key": "team", "value": "red"}])
    tags = sorted(c.list_tags_for_resource(resourceArn=arn)["tags"], key=lambda t: t["key"])
    assert tags == [{"key": "cost", "value": "7"}, {"key": "team", "value": "red"}]
    c.untag_resource(resourceArn=arn, tagKeys=["team"])
    assert c.list_tags_for_resource(resourceArn=arn)["tags"] == [{"key": "cost", "value": "7"}]
    with pytest.raises(ClientError) as excinfo:
        c.tag_resource(resourceArn=arn, tags=[{"key": f"k{i}", "value": "v"} for i in range(50)])
    assert error_code(excinfo) == "TooManyTagsFault"
    with pytest.raises(ClientError) as excinfo:
        c.list_tags_for_resource(resourceArn=arn.replace(name, unique("nowhere")))
    assert error_code(excinfo) == "UnknownResourceFault"


# ---------------------------------------------------------------------------------------------
# Starting: defaults, overrides, faults


def test_start_takes_the_types_defaults(c, domain):
    wf = register_workflow(c, domain, defaultTaskPriority="4")
    execution = start(c, domain, wf, input="hello", tagList=["a", "b"])
    events = history(c, domain, execution)
    assert types(events) == ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
    assert [e["eventId"] for e in events] == [1, 2]
    assert all(isinstance(e["eventTimestamp"], datetime.datetime) for e in events)
    started = attrs(events[0])
    assert started["workflowType"] == wf["type"]
    assert started["taskList"] == {"name": wf["list"]}
    assert started["taskStartToCloseTimeout"] == "30"
    assert started["executionStartToCloseTimeout"] == "600"
    assert started["childPolicy"] == "TERMINATE"
    assert started["taskPriority"] == "4"
    assert started["input"] == "hello"
    assert started["tagList"] == ["a", "b"]
    scheduled = attrs(events[1])
    assert scheduled["taskList"] == {"name": wf["list"]}
    assert scheduled["startToCloseTimeout"] == "30"
    assert scheduled["taskPriority"] == "4"
    detail = c.describe_workflow_execution(domain=domain, execution=execution)
    assert detail["executionInfo"]["execution"] == execution
    assert detail["executionInfo"]["executionStatus"] == "OPEN"
    assert detail["executionInfo"]["tagList"] == ["a", "b"]
    assert detail["executionConfiguration"] == {
        "taskStartToCloseTimeout": "30",
        "executionStartToCloseTimeout": "600",
        "taskList": {"name": wf["list"]},
        "taskPriority": "4",
        "childPolicy": "TERMINATE",
    }
    assert detail["openCounts"]["openDecisionTasks"] == 1
    assert detail["openCounts"]["openActivityTasks"] == 0
    assert detail["openCounts"]["openTimers"] == 0


def test_describe_shows_cancel_requested_false(c, domain):
    execution = start(c, domain, register_workflow(c, domain))
    assert c.describe_workflow_execution(domain=domain, execution=execution)["executionInfo"]["cancelRequested"] is False


def test_start_overrides_route_the_decision_task(c, domain):
    wf = register_workflow(c, domain)
    other = unique("other-deciders")
    execution = start(
        c,
        domain,
        wf,
        taskList={"name": other},
        taskPriority="-5",
        taskStartToCloseTimeout="15",
        executionStartToCloseTimeout="900",
        childPolicy="ABANDON",
    )
    started = attrs(history(c, domain, execution)[0])
    assert started["taskList"] == {"name": other}
    assert started["taskPriority"] == "-5"
    assert started["taskStartToCloseTimeout"] == "15"
    assert started["executionStartToCloseTimeout"] == "900"
    assert started["childPolicy"] == "ABANDON"
    assert counted(c.count_pending_decision_tasks(domain=domain, taskList={"name": wf["list"]})) == 0
    assert counted(c.count_pending_decision_tasks(domain=domain, taskList={"name": other})) == 1
    task = poll_decision(c, domain, other)
    assert task["workflowExecution"] == execution
    assert task["workflowType"] == wf["type"]


def test_default_undefined_and_already_started(c, domain):
    no_list = register_workflow(c, domain, defaultTaskList=None)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, no_list)
    assert error_code(excinfo) == "DefaultUndefinedFault"
    start(c, domain, no_list, taskList={"name": unique("given")})
    no_timeout = register_workflow(c, domain, defaultExecutionStartToCloseTimeout=None)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, no_timeout)
    assert error_code(excinfo) == "DefaultUndefinedFault"
    no_policy = register_workflow(c, domain, defaultChildPolicy=None)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, no_policy)
    assert error_code(excinfo) == "DefaultUndefinedFault"
    wf = register_workflow(c, domain)
    first = start(c, domain, wf)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, wf, workflowId=first["workflowId"])
    assert error_code(excinfo) == "WorkflowExecutionAlreadyStartedFault"
    # Once closed, the workflow id may be used again, by a new run.
    c.terminate_workflow_execution(domain=domain, workflowId=first["workflowId"])
    second = start(c, domain, wf, workflowId=first["workflowId"])
    assert second["runId"] != first["runId"]
    with pytest.raises(ClientError) as excinfo:
        start(c, unique("nowhere"), wf)
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, {"type": {"name": unique("unregistered"), "version": "1"}})
    assert error_code(excinfo) == "UnknownResourceFault"


# ---------------------------------------------------------------------------------------------
# Decision tasks: ids, one at a time, unhandled events


def test_decision_and_activity_round_trip_with_event_ids(c, domain):
    activity = register_activity(c, domain)
    wf, execution, task = started_at_decision(c, domain)
    assert task["startedEventId"] == 3
    assert task["previousStartedEventId"] == 0
    assert task["workflowExecution"] == execution
    assert task["workflowType"] == wf["type"]
    assert types(task["events"]) == ["WorkflowExecutionStarted", "DecisionTaskScheduled", "DecisionTaskStarted"]
    assert attrs(task["events"][2]) == {"identity": IDENTITY, "scheduledEventId": 2}
    respond(c, task, schedule(activity, "resize-1", input="img.png"), executionContext="ctx-1")
    work = poll_activity(c, domain, activity["list"])
    assert work["activityId"] == "resize-1"
    assert work["activityType"] == activity["type"]
    assert work["input"] == "img.png"
    assert work["workflowExecution"] == execution
    assert work["startedEventId"] == 6
    c.respond_activity_task_completed(taskToken=work["taskToken"], result="done")
    task = poll_decision(c, domain, wf["list"])
    assert task["startedEventId"] == 9
    assert task["previousStartedEventId"] == 3
    events = task["events"]
    assert types(events) == [
        "WorkflowExecutionStarted",
        "DecisionTaskScheduled",
        "DecisionTaskStarted",
        "DecisionTaskCompleted",
        "ActivityTaskScheduled",
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "DecisionTaskScheduled",
        "DecisionTaskStarted",
    ]
    assert [e["eventId"] for e in events] == list(range(1, 10))
    assert attrs(events[3]) == {"executionContext": "ctx-1", "scheduledEventId": 2, "startedEventId": 3}
    scheduled = attrs(events[4])
    assert scheduled["activityId"] == "resize-1"
    assert scheduled["decisionTaskCompletedEventId"] == 4
    assert attrs(events[5]) == {"identity": IDENTITY, "scheduledEventId": 5}
    assert attrs(events[6]) == {"result": "done", "scheduledEventId": 5, "startedEventId": 6}
    detail = c.describe_workflow_execution(domain=domain, execution=execution)
    assert detail["latestExecutionContext"] == "ctx-1"
    assert isinstance(detail["latestActivityTaskTimestamp"], datetime.datetime)
    respond(c, task, complete("all done"))
    info = wait_closed(c, domain, execution)
    assert info["closeStatus"] == "COMPLETED"
    assert isinstance(info["closeTimestamp"], datetime.datetime)
    last = history(c, domain, execution)[-1]
    assert last["eventType"] == "WorkflowExecutionCompleted"
    assert attrs(last) == {"result": "all done", "decisionTaskCompletedEventId": 10}


def test_one_decision_task_at_a_time(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    for n in range(2):
        c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName=f"s{n}", input=str(n))
    # The started task holds the execution: the signals wait for it to be answered.
    assert c.count_pending_decision_tasks(domain=domain, taskList={"name": wf["list"]})["count"] == 0
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openDecisionTasks"] == 1
    assert types(history(c, domain, execution))[-2:] == ["WorkflowExecutionSignaled", "WorkflowExecutionSignaled"]
    respond(c, task)
    events = history(c, domain, execution)
    assert types(events)[-2:] == ["DecisionTaskCompleted", "DecisionTaskScheduled"]
    second = poll_decision(c, domain, wf["list"])
    assert second["previousStartedEventId"] == 3
    signals = [attrs(e) for e in of_type(second["events"], "WorkflowExecutionSignaled")]
    assert [(s["signalName"], s["input"]) for s in signals] == [("s0", "0"), ("s1", "1")]
    # A decision task answered with nothing new to see schedules no other.
    respond(c, second)
    assert types(history(c, domain, execution))[-1] == "DecisionTaskCompleted"
    assert c.count_pending_decision_tasks(domain=domain, taskList={"name": wf["list"]})["count"] == 0


def test_closing_with_unhandled_events_fails_the_decision(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName="late")
    respond(c, task, complete("too early"))
    events = history(c, domain, execution)
    failed = last_of(events, "CompleteWorkflowExecutionFailed")
    assert attrs(failed)["cause"] == "UNHANDLED_DECISION"
    assert c.describe_workflow_execution(domain=domain, execution=execution)["executionInfo"]["executionStatus"] == "OPEN"
    again = poll_decision(c, domain, wf["list"])
    respond(c, again, complete("now"))
    assert wait_closed(c, domain, execution)["closeStatus"] == "COMPLETED"


def test_tokens_are_single_use_and_unforgeable(c, domain):
    activity = register_activity(c, domain)
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, schedule(activity, "x"))
    with pytest.raises(ClientError) as excinfo:
        respond(c, task, complete())
    assert error_code(excinfo) == "UnknownResourceFault"
    work = poll_activity(c, domain, activity["list"])
    for call in (
        lambda: c.respond_activity_task_completed(taskToken=task["taskToken"]),
        lambda: c.respond_decision_task_completed(taskToken=work["taskToken"], decisions=[]),
        lambda: c.respond_activity_task_completed(taskToken="AAAA" + work["taskToken"][4:]),
        lambda: c.respond_activity_task_failed(taskToken="not-a-token"),
        lambda: c.respond_activity_task_canceled(taskToken="not-a-token"),
        lambda: c.record_activity_task_heartbeat(taskToken="not-a-token"),
        lambda: c.respond_decision_task_completed(taskToken="not-a-token", decisions=[]),
    ):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert error_code(excinfo) == "UnknownResourceFault"
    c.respond_activity_task_completed(taskToken=work["taskToken"], result="ok")
    with pytest.raises(ClientError) as excinfo:
        c.respond_activity_task_completed(taskToken=work["taskToken"], result="twice")
    assert error_code(excinfo) == "UnknownResourceFault"
    completed = of_type(history(c, domain, execution), "ActivityTaskCompleted")
    assert [attrs(e)["result"] for e in completed] == ["ok"]


# ---------------------------------------------------------------------------------------------
# Activities: defaults, overrides, routing, priorities, failures


def test_activity_defaults_overrides_and_a_second_task_list(c, domain):
    activity = register_activity(c, domain, defaultTaskPriority="2")
    second = unique("gpu")
    wf, execution, task = started_at_decision(c, domain)
    respond(
        c,
        task,
        schedule(activity, "by-default"),
        schedule(
            activity,
            "routed",
            taskList={"name": second},
            taskPriority="9",
            scheduleToStartTimeout="30",
            scheduleToCloseTimeout="90",
            startToCloseTimeout="45",
            heartbeatTimeout="20",
            control="c1",
        ),
    )
    scheduled = {attrs(e)["activityId"]: attrs(e) for e in of_type(history(c, domain, execution), "ActivityTaskScheduled")}
    default = scheduled["by-default"]
    assert default["taskList"] == {"name": activity["list"]}
    assert default["taskPriority"] == "2"
    assert default["scheduleToStartTimeout"] == "60"
    assert default["scheduleToCloseTimeout"] == "120"
    assert default["startToCloseTimeout"] == "60"
    assert default["heartbeatTimeout"] == "NONE"
    routed = scheduled["routed"]
    assert routed["taskList"] == {"name": second}
    assert routed["taskPriority"] == "9"
    assert routed["scheduleToStartTimeout"] == "30"
    assert routed["scheduleToCloseTimeout"] == "90"
    assert routed["startToCloseTimeout"] == "45"
    assert routed["heartbeatTimeout"] == "20"
    assert routed["control"] == "c1"
    assert counted(c.count_pending_activity_tasks(domain=domain, taskList={"name": activity["list"]})) == 1
    assert counted(c.count_pending_activity_tasks(domain=domain, taskList={"name": second})) == 1
    assert poll_activity(c, domain, second)["activityId"] == "routed"
    assert poll_activity(c, domain, activity["list"])["activityId"] == "by-default"
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openActivityTasks"] == 2


def test_schedule_failures_name_the_cause(c, domain):
    no_list = register_activity(c, domain, defaultTaskList=None)
    no_close = register_activity(c, domain, defaultTaskScheduleToCloseTimeout=None)
    plain = register_activity(c, domain)
    _, execution, task = started_at_decision(c, domain)
    respond(c, task, schedule(no_list, "n1"), schedule(no_close, "n2"), schedule(plain, "dup"), schedule(plain, "dup"))
    events = history(c, domain, execution)
    causes = {attrs(e)["activityId"]: attrs(e)["cause"] for e in of_type(events, "ScheduleActivityTaskFailed")}
    assert causes == {
        "n1": "DEFAULT_TASK_LIST_UNDEFINED",
        "n2": "DEFAULT_SCHEDULE_TO_CLOSE_TIMEOUT_UNDEFINED",
        "dup": "ACTIVITY_ID_ALREADY_IN_USE",
    }
    assert [attrs(e)["activityId"] for e in of_type(events, "ActivityTaskScheduled")] == ["dup"]
    # With the missing pieces given in the decision, the same types schedule.
    task = poll_decision(c, domain, attrs(events[0])["taskList"]["name"])
    respond(
        c,
        task,
        schedule(no_list, "n1", taskList={"name": unique("given")}),
        schedule(no_close, "n2", scheduleToCloseTimeout="100"),
    )
    scheduled = [attrs(e)["activityId"] for e in of_type(history(c, domain, execution), "ActivityTaskScheduled")]
    assert scheduled == ["dup", "n1", "n2"]


def test_task_priority_orders_a_list(c, domain):
    activity = register_activity(c, domain)
    _, _, task = started_at_decision(c, domain)
    respond(
        c,
        task,
        schedule(activity, "low", taskPriority="1"),
        schedule(activity, "high", taskPriority="10"),
        schedule(activity, "mid-z", taskPriority="5"),
        schedule(activity, "mid-a", taskPriority="5"),
    )
    order = [poll_activity(c, domain, activity["list"])["activityId"] for _ in range(4)]
    # "mid-z" was scheduled first: equal priorities go in scheduling order, not by activityId.
    assert order == ["high", "mid-z", "mid-a", "low"], "higher first, then in scheduling order"
    # Decision tasks too: the higher-priority run's task is handed out first.
    wf = register_workflow(c, domain)
    low = start(c, domain, wf, taskPriority="1")
    high = start(c, domain, wf, taskPriority="9")
    assert poll_decision(c, domain, wf["list"])["workflowExecution"] == high
    assert poll_decision(c, domain, wf["list"])["workflowExecution"] == low


def test_activity_failure_and_cancellation(c, domain):
    activity = register_activity(c, domain)
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, schedule(activity, "fails"), schedule(activity, "cancelled"), schedule(activity, "never-started"))
    work = {}
    for _ in range(2):
        polled = poll_activity(c, domain, activity["list"])
        work[polled["activityId"]] = polled
    assert set(work) == {"fails", "cancelled"}
    c.respond_activity_task_failed(taskToken=work["fails"]["taskToken"], reason="Boom", details="stack")
    task = poll_decision(c, domain, wf["list"])
    failed = attrs(last_of(task["events"], "ActivityTaskFailed"))
    assert failed["reason"] == "Boom" and failed["details"] == "stack"
    assert failed["startedEventId"] == work["fails"]["startedEventId"]
    respond(
        c,
        task,
        {"decisionType": "RequestCancelActivityTask", "requestCancelActivityTaskDecisionAttributes": {"activityId": "cancelled"}},
        {"decisionType": "RequestCancelActivityTask", "requestCancelActivityTaskDecisionAttributes": {"activityId": "never-started"}},
        {"decisionType": "RequestCancelActivityTask", "requestCancelActivityTaskDecisionAttributes": {"activityId": "unknown"}},
    )
    events = history(c, domain, execution)
    requested = [attrs(e)["activityId"] for e in of_type(events, "ActivityTaskCancelRequested")]
    assert requested == ["cancelled", "never-started"]
    unknown = attrs(last_of(events, "RequestCancelActivityTaskFailed"))
    assert unknown["activityId"] == "unknown" and unknown["cause"] == "ACTIVITY_ID_UNKNOWN"
    # A task no worker holds is cancelled at once; a started one is told on its next heartbeat.
    canceled = {attrs(e)["scheduledEventId"] for e in of_type(events, "ActivityTaskCanceled")}
    never_started = next(e for e in of_type(events, "ActivityTaskScheduled") if attrs(e)["activityId"] == "never-started")
    assert canceled == {never_started["eventId"]}
    assert c.record_activity_task_heartbeat(taskToken=work["cancelled"]["taskToken"], details="50%")["cancelRequested"] is True
    c.respond_activity_task_canceled(taskToken=work["cancelled"]["taskToken"], details="stopped")
    events = history(c, domain, execution)
    last = attrs(last_of(events, "ActivityTaskCanceled"))
    assert last["details"] == "stopped"
    assert last["startedEventId"] == work["cancelled"]["startedEventId"]
    cancel_requested = next(e for e in of_type(events, "ActivityTaskCancelRequested") if attrs(e)["activityId"] == "cancelled")
    assert last["latestCancelRequestedEventId"] == cancel_requested["eventId"]
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openActivityTasks"] == 0


# ---------------------------------------------------------------------------------------------
# Signals, markers, timers, cancel, terminate, fail, continue-as-new


def test_signals(c, domain):
    wf = register_workflow(c, domain)
    execution = start(c, domain, wf)
    c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName="go", input="now")
    c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], runId=execution["runId"], signalName="again")
    events = history(c, domain, execution)
    assert types(events) == ["WorkflowExecutionStarted", "DecisionTaskScheduled", "WorkflowExecutionSignaled", "WorkflowExecutionSignaled"]
    assert attrs(events[2]) == {"signalName": "go", "input": "now"}
    assert attrs(events[3]) == {"signalName": "again"}
    for kwargs in ({"workflowId": unique("nobody")}, {"workflowId": execution["workflowId"], "runId": "0" + execution["runId"][1:]}):
        with pytest.raises(ClientError) as excinfo:
            c.signal_workflow_execution(domain=domain, signalName="x", **kwargs)
        assert error_code(excinfo) == "UnknownResourceFault"
    c.terminate_workflow_execution(domain=domain, workflowId=execution["workflowId"])
    with pytest.raises(ClientError) as excinfo:
        c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName="closed")
    assert error_code(excinfo) == "UnknownResourceFault"


def test_marker_is_recorded_and_schedules_nothing(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, {"decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {"markerName": "checkpoint", "details": "step 1"}})
    events = history(c, domain, execution)
    assert types(events)[-2:] == ["DecisionTaskCompleted", "MarkerRecorded"]
    assert attrs(events[-1]) == {"markerName": "checkpoint", "details": "step 1", "decisionTaskCompletedEventId": events[-2]["eventId"]}
    assert c.count_pending_decision_tasks(domain=domain, taskList={"name": wf["list"]})["count"] == 0


def test_timers(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, start_timer("short", 1), start_timer("short", 5), start_timer("long", 600))
    events = history(c, domain, execution)
    started = {attrs(e)["timerId"]: attrs(e) for e in of_type(events, "TimerStarted")}
    assert started["short"]["startToFireTimeout"] == "1"
    assert started["long"]["startToFireTimeout"] == "600"
    failed = attrs(last_of(events, "StartTimerFailed"))
    assert failed["timerId"] == "short" and failed["cause"] == "TIMER_ID_ALREADY_IN_USE"
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openTimers"] == 2
    task = poll_decision(c, domain, wf["list"])
    respond(c, task, cancel_timer("long"), cancel_timer("unknown"))
    events = history(c, domain, execution)
    long_started = next(e for e in of_type(events, "TimerStarted") if attrs(e)["timerId"] == "long")
    canceled = attrs(last_of(events, "TimerCanceled"))
    assert canceled["timerId"] == "long" and canceled["startedEventId"] == long_started["eventId"]
    unknown = attrs(last_of(events, "CancelTimerFailed"))
    assert unknown["timerId"] == "unknown" and unknown["cause"] == "TIMER_ID_UNKNOWN"
    task = poll_decision(c, domain, wf["list"])  # scheduled by CancelTimerFailed
    respond(c, task)
    events = wait_for_event(c, domain, execution, "TimerFired", timeout=10)
    fired = attrs(last_of(events, "TimerFired"))
    short_started = next(e for e in of_type(events, "TimerStarted") if attrs(e)["timerId"] == "short")
    assert fired == {"timerId": "short", "startedEventId": short_started["eventId"]}
    assert (last_of(events, "TimerFired")["eventTimestamp"] - short_started["eventTimestamp"]).total_seconds() >= 0.9
    task = poll_decision(c, domain, wf["list"])
    assert types(task["events"])[-3:] == ["TimerFired", "DecisionTaskScheduled", "DecisionTaskStarted"]
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openTimers"] == 0


def test_request_cancel_workflow(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task)
    c.request_cancel_workflow_execution(domain=domain, workflowId=execution["workflowId"])
    assert c.describe_workflow_execution(domain=domain, execution=execution)["executionInfo"]["cancelRequested"] is True
    task = poll_decision(c, domain, wf["list"])
    assert "WorkflowExecutionCancelRequested" in types(task["events"])
    respond(c, task, {"decisionType": "CancelWorkflowExecution", "cancelWorkflowExecutionDecisionAttributes": {"details": "bye"}})
    info = wait_closed(c, domain, execution)
    assert info["closeStatus"] == "CANCELED"
    last = history(c, domain, execution)[-1]
    assert last["eventType"] == "WorkflowExecutionCanceled" and attrs(last)["details"] == "bye"
    with pytest.raises(ClientError) as excinfo:
        c.request_cancel_workflow_execution(domain=domain, workflowId=unique("nobody"))
    assert error_code(excinfo) == "UnknownResourceFault"


def test_terminate_closes_the_run_and_its_tokens(c, domain):
    activity = register_activity(c, domain)
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, schedule(activity, "busy"))
    work = poll_activity(c, domain, activity["list"])
    c.terminate_workflow_execution(
        domain=domain, workflowId=execution["workflowId"], reason="operator", details="cleanup", childPolicy="ABANDON"
    )
    info = wait_closed(c, domain, execution)
    assert info["closeStatus"] == "TERMINATED"
    last = history(c, domain, execution)[-1]
    assert last["eventType"] == "WorkflowExecutionTerminated"
    assert attrs(last)["reason"] == "operator"
    assert attrs(last)["details"] == "cleanup"
    assert attrs(last)["childPolicy"] == "ABANDON"
    with pytest.raises(ClientError) as excinfo:
        c.respond_activity_task_completed(taskToken=work["taskToken"], result="late")
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        c.terminate_workflow_execution(domain=domain, workflowId=execution["workflowId"])
    assert error_code(excinfo) == "UnknownResourceFault"
    assert c.count_pending_decision_tasks(domain=domain, taskList={"name": wf["list"]})["count"] == 0


def test_fail_and_continue_as_new(c, domain):
    wf, execution, task = started_at_decision(c, domain)
    respond(c, task, {"decisionType": "FailWorkflowExecution", "failWorkflowExecutionDecisionAttributes": {"reason": "bad", "details": "input"}})
    assert wait_closed(c, domain, execution)["closeStatus"] == "FAILED"
    last = history(c, domain, execution)[-1]
    assert last["eventType"] == "WorkflowExecutionFailed"
    assert attrs(last)["reason"] == "bad" and attrs(last)["details"] == "input"

    wf, execution, task = started_at_decision(c, domain)
    respond(
        c,
        task,
        {
            "decisionType": "ContinueAsNewWorkflowExecution",
            "continueAsNewWorkflowExecutionDecisionAttributes": {"input": "round 2", "tagList": ["next"]},
        },
    )
    assert wait_closed(c, domain, execution)["closeStatus"] == "CONTINUED_AS_NEW"
    continued = attrs(history(c, domain, execution)[-1])
    new_run = continued["newExecutionRunId"]
    assert new_run and new_run != execution["runId"]
    assert continued["input"] == "round 2"
    assert continued["workflowType"] == wf["type"]
    assert continued["taskList"] == {"name": wf["list"]}
    following = {"workflowId": execution["workflowId"], "runId": new_run}
    started = attrs(history(c, domain, following)[0])
    assert started["continuedExecutionRunId"] == execution["runId"]
    assert started["input"] == "round 2"
    assert started["tagList"] == ["next"]
    task = poll_decision(c, domain, wf["list"])
    assert task["workflowExecution"] == following
    respond(c, task, complete())
    assert wait_closed(c, domain, following)["closeStatus"] == "COMPLETED"


# ---------------------------------------------------------------------------------------------
# Child workflows, SignalExternal, RequestCancelExternal


def start_child_decision(wf, workflow_id, **extra):
    attributes = {"workflowType": wf["type"], "workflowId": workflow_id}
    attributes.update(extra)
    return {"decisionType": "StartChildWorkflowExecution", "startChildWorkflowExecutionDecisionAttributes": attributes}


def parent_with_child(c, domain, parent_policy="TERMINATE", **child_extra):
    """A parent run (its child policy `parent_policy`) whose first decision started a child of the
    same type on its own decision task list: (wf, parent, child, the child's list)."""
    wf = register_workflow(c, domain)
    parent = start(c, domain, wf, childPolicy=parent_policy)
    kid_list = unique("kids")
    kid_id = unique("kid")
    task = poll_decision(c, domain, wf["list"])
    respond(c, task, start_child_decision(wf, kid_id, taskList={"name": kid_list}, input="kid-in", control="ctl", **child_extra))
    started = attrs(last_of(history(c, domain, parent), "ChildWorkflowExecutionStarted"))
    child = started["workflowExecution"]
    assert child["workflowId"] == kid_id
    return wf, parent, child, kid_list


def test_a_child_starts_and_its_completion_wakes_the_parent(c, domain):
    wf, parent, child, kid_list = parent_with_child(c, domain)
    events = history(c, domain, parent)
    assert types(events)[-3:] == ["StartChildWorkflowExecutionInitiated", "ChildWorkflowExecutionStarted", "DecisionTaskScheduled"]
    initiated = attrs(events[-3])
    assert initiated["workflowId"] == child["workflowId"]
    assert initiated["taskList"] == {"name": kid_list}
    assert initiated["control"] == "ctl"
    assert initiated["childPolicy"] == "TERMINATE"
    assert initiated["executionStartToCloseTimeout"] == "600"
    assert initiated["taskStartToCloseTimeout"] == "30"
    assert attrs(events[-2])["initiatedEventId"] == events[-3]["eventId"]
    kid = history(c, domain, child)
    assert types(kid) == ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
    started = attrs(kid[0])
    assert started["parentWorkflowExecution"] == parent
    assert started["parentInitiatedEventId"] == events[-3]["eventId"]
    assert started["input"] == "kid-in"
    assert started["taskList"] == {"name": kid_list}
    described = c.describe_workflow_execution(domain=domain, execution=parent)
    assert described["openCounts"]["openChildWorkflowExecutions"] == 1
    assert c.describe_workflow_execution(domain=domain, execution=child)["executionInfo"]["parent"] == parent
    respond(c, poll_decision(c, domain, wf["list"]))
    task = poll_decision(c, domain, kid_list)
    assert task["workflowExecution"] == child
    respond(c, task, complete("kid-out"))
    assert wait_closed(c, domain, child)["closeStatus"] == "COMPLETED"
    events = history(c, domain, parent)
    done = attrs(last_of(events, "ChildWorkflowExecutionCompleted"))
    assert done["result"] == "kid-out"
    assert done["workflowExecution"] == child
    assert done["initiatedEventId"] == initiated_id(events)
    assert done["startedEventId"] == last_of(events, "ChildWorkflowExecutionStarted")["eventId"]
    task = poll_decision(c, domain, wf["list"])
    assert types(task["events"])[-3:] == ["ChildWorkflowExecutionCompleted", "DecisionTaskScheduled", "DecisionTaskStarted"]
    assert c.describe_workflow_execution(domain=domain, execution=parent)["openCounts"]["openChildWorkflowExecutions"] == 0
    respond(c, task, complete())


def initiated_id(events):
    return last_of(events, "StartChildWorkflowExecutionInitiated")["eventId"]


@pytest.mark.parametrize("how", ["fail", "cancel", "timeout", "terminate"])
def test_a_child_that_does_not_complete_tells_its_parent_how(c, domain, how):
    extra = {"executionStartToCloseTimeout": "1"} if how == "timeout" else {}
    wf, parent, child, kid_list = parent_with_child(c, domain, **extra)
    if how == "fail":
        task = poll_decision(c, domain, kid_list)
        respond(c, task, {"decisionType": "FailWorkflowExecution", "failWorkflowExecutionDecisionAttributes": {"reason": "r", "details": "d"}})
        expected, fields = "ChildWorkflowExecutionFailed", {"reason": "r", "details": "d"}
    elif how == "cancel":
        task = poll_decision(c, domain, kid_list)
        respond(c, task, {"decisionType": "CancelWorkflowExecution", "cancelWorkflowExecutionDecisionAttributes": {"details": "cd"}})
        expected, fields = "ChildWorkflowExecutionCanceled", {"details": "cd"}
    elif how == "timeout":
        expected, fields = "ChildWorkflowExecutionTimedOut", {"timeoutType": "START_TO_CLOSE"}
    else:
        c.terminate_workflow_execution(domain=domain, workflowId=child["workflowId"], reason="op")
        expected, fields = "ChildWorkflowExecutionTerminated", {}
    events = wait_for_event(c, domain, parent, expected, timeout=10)
    got = attrs(last_of(events, expected))
    assert got["workflowExecution"] == child
    assert got["workflowType"] == wf["type"]
    assert got["initiatedEventId"] == initiated_id(events)
    for key, value in fields.items():
        assert got[key] == value
    assert wait_closed(c, domain, child)["executionStatus"] == "CLOSED"
    c.terminate_workflow_execution(domain=domain, workflowId=parent["workflowId"])


@pytest.mark.parametrize("policy", ["TERMINATE", "REQUEST_CANCEL", "ABANDON"])
def test_a_closing_parent_applies_its_child_policy(c, domain, policy):
    wf, parent, child, kid_list = parent_with_child(c, domain, parent_policy=policy)
    task = poll_decision(c, domain, wf["list"])
    respond(c, task, complete("parent done"))
    assert wait_closed(c, domain, parent)["closeStatus"] == "COMPLETED"
    kid = history(c, domain, child)
    info = c.describe_workflow_execution(domain=domain, execution=child)["executionInfo"]
    if policy == "TERMINATE":
        assert info["closeStatus"] == "TERMINATED"
        assert attrs(kid[-1])["cause"] == "CHILD_POLICY_APPLIED"
    elif policy == "REQUEST_CANCEL":
        assert info["executionStatus"] == "OPEN" and info["cancelRequested"] is True
        assert attrs(last_of(kid, "WorkflowExecutionCancelRequested"))["cause"] == "CHILD_POLICY_APPLIED"
        task = poll_decision(c, domain, kid_list)
        respond(c, task, {"decisionType": "CancelWorkflowExecution", "cancelWorkflowExecutionDecisionAttributes": {}})
        assert wait_closed(c, domain, child)["closeStatus"] == "CANCELED"
    else:
        assert info["executionStatus"] == "OPEN" and info["cancelRequested"] is False
        assert types(kid) == ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
        respond(c, poll_decision(c, domain, kid_list), complete())
        assert wait_closed(c, domain, child)["closeStatus"] == "COMPLETED"
    # A closed parent hears nothing more.
    assert types(history(c, domain, parent))[-1] == "WorkflowExecutionCompleted"


def test_terminate_and_continue_as_new_apply_the_child_policy_too(c, domain):
    wf, parent, child, _ = parent_with_child(c, domain, parent_policy="ABANDON")
    c.terminate_workflow_execution(domain=domain, workflowId=parent["workflowId"], childPolicy="TERMINATE")
    assert c.describe_workflow_execution(domain=domain, execution=child)["executionInfo"]["closeStatus"] == "TERMINATED"
    wf, parent, child, _ = parent_with_child(c, domain, parent_policy="TERMINATE")
    respond(c, poll_decision(c, domain, wf["list"]), {"decisionType": "ContinueAsNewWorkflowExecution", "continueAsNewWorkflowExecutionDecisionAttributes": {}})
    assert wait_closed(c, domain, parent)["closeStatus"] == "CONTINUED_AS_NEW"
    assert c.describe_workflow_execution(domain=domain, execution=child)["executionInfo"]["closeStatus"] == "TERMINATED"


def test_start_child_failures_name_the_cause(c, domain):
    bare = register_workflow(c, domain, defaultChildPolicy=None)
    wf, execution, task = started_at_decision(c, domain)
    taken = start(c, domain, wf)
    respond(
        c,
        task,
        start_child_decision({"type": {"name": unique("missing"), "version": "1"}}, unique("k"), control="c1"),
        start_child_decision(wf, taken["workflowId"]),
        start_child_decision(bare, unique("k"), taskList={"name": "x"}),
    )
    events = history(c, domain, execution)
    failed = [attrs(e) for e in of_type(events, "StartChildWorkflowExecutionFailed")]
    assert [f["cause"] for f in failed] == ["WORKFLOW_TYPE_DOES_NOT_EXIST", "WORKFLOW_ALREADY_RUNNING", "DEFAULT_CHILD_POLICY_UNDEFINED"]
    assert failed[0]["control"] == "c1" and failed[0]["initiatedEventId"] == 0
    assert failed[1]["initiatedEventId"] == initiated_id(events)
    assert types(events)[-1] == "DecisionTaskScheduled"
    assert c.describe_workflow_execution(domain=domain, execution=execution)["openCounts"]["openChildWorkflowExecutions"] == 0


def test_signal_external_reaches_an_open_run_and_fails_for_an_unknown_one(c, domain):
    target_wf = register_workflow(c, domain)
    target = start(c, domain, target_wf)
    respond(c, poll_decision(c, domain, target_wf["list"]))
    wf, sender, task = started_at_decision(c, domain)
    nobody = unique("nobody")
    respond(
        c,
        task,
        {"decisionType": "SignalExternalWorkflowExecution", "signalExternalWorkflowExecutionDecisionAttributes": {
            "workflowId": target["workflowId"], "runId": target["runId"], "signalName": "go", "input": "gi", "control": "c"}},
        {"decisionType": "SignalExternalWorkflowExecution", "signalExternalWorkflowExecutionDecisionAttributes": {
            "workflowId": nobody, "signalName": "go"}},
    )
    events = history(c, domain, sender)
    assert types(events)[-5:] == [
        "SignalExternalWorkflowExecutionInitiated", "ExternalWorkflowExecutionSignaled",
        "SignalExternalWorkflowExecutionInitiated", "SignalExternalWorkflowExecutionFailed", "DecisionTaskScheduled",
    ]
    initiated = events[-5]
    assert attrs(initiated)["signalName"] == "go" and attrs(initiated)["control"] == "c"
    assert attrs(events[-4]) == {"workflowExecution": target, "initiatedEventId": initiated["eventId"]}
    failed = attrs(events[-2])
    assert failed["cause"] == "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION"
    assert failed["workflowId"] == nobody and failed["initiatedEventId"] == events[-3]["eventId"]
    got = history(c, domain, target)
    signaled = attrs(last_of(got, "WorkflowExecutionSignaled"))
    assert signaled == {"signalName": "go", "input": "gi", "externalWorkflowExecution": sender, "externalInitiatedEventId": initiated["eventId"]}
    task = poll_decision(c, domain, target_wf["list"])
    assert "WorkflowExecutionSignaled" in types(task["events"])


def test_request_cancel_external_reaches_an_open_run_and_fails_for_an_unknown_one(c, domain):
    target_wf = register_workflow(c, domain)
    target = start(c, domain, target_wf)
    closed = start(c, domain, target_wf)
    c.terminate_workflow_execution(domain=domain, workflowId=closed["workflowId"])
    wf, sender, task = started_at_decision(c, domain)
    respond(
        c,
        task,
        {"decisionType": "RequestCancelExternalWorkflowExecution", "requestCancelExternalWorkflowExecutionDecisionAttributes": {
            "workflowId": target["workflowId"]}},
        {"decisionType": "RequestCancelExternalWorkflowExecution", "requestCancelExternalWorkflowExecutionDecisionAttributes": {
            "workflowId": closed["workflowId"], "runId": closed["runId"], "control": "c2"}},
    )
    events = history(c, domain, sender)
    assert types(events)[-5:] == [
        "RequestCancelExternalWorkflowExecutionInitiated", "ExternalWorkflowExecutionCancelRequested",
        "RequestCancelExternalWorkflowExecutionInitiated", "RequestCancelExternalWorkflowExecutionFailed", "DecisionTaskScheduled",
    ]
    assert attrs(events[-4])["workflowExecution"] == target
    failed = attrs(events[-2])
    assert failed["cause"] == "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION" and failed["control"] == "c2"
    requested = attrs(last_of(history(c, domain, target), "WorkflowExecutionCancelRequested"))
    assert requested == {"externalWorkflowExecution": sender, "externalInitiatedEventId": events[-5]["eventId"]}
    assert c.describe_workflow_execution(domain=domain, execution=target)["executionInfo"]["cancelRequested"] is True


# ---------------------------------------------------------------------------------------------
# History paging


def test_history_paging_and_reverse_order(c, domain):
    wf = register_workflow(c, domain)
    execution = start(c, domain, wf)
    for n in range(7):
        c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName=f"s{n}")
    everything = history(c, domain, execution)
    assert [e["eventId"] for e in everything] == list(range(1, 10))
    assert [e["eventId"] for e in history(c, domain, execution, page_size=2)] == list(range(1, 10))
    assert [e["eventId"] for e in history(c, domain, execution, reverse=True, page_size=4)] == list(range(9, 0, -1))
    first = c.get_workflow_execution_history(domain=domain, execution=execution, maximumPageSize=4)
    assert len(first["events"]) == 4 and first["nextPageToken"]
    with pytest.raises(ClientError) as excinfo:
        c.get_workflow_execution_history(domain=domain, execution=execution, maximumPageSize=4, nextPageToken="garbage")
    assert error_code(excinfo) == "ValidationException"
    other = start(c, domain, wf)
    with pytest.raises(ClientError) as excinfo:
        c.get_workflow_execution_history(domain=domain, execution=other, maximumPageSize=4, nextPageToken=first["nextPageToken"])
    assert error_code(excinfo) == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        c.get_workflow_execution_history(domain=domain, execution={"workflowId": unique("nobody"), "runId": execution["runId"]})
    assert error_code(excinfo) == "UnknownResourceFault"
    # A decision task pages its history too: further pages come from polls with the token, and
    # those polls hand out no new task.
    task = poll_decision(c, domain, wf["list"], maximumPageSize=4)
    events, token = list(task["events"]), task.get("nextPageToken")
    assert len(events) == 4 and token
    while token:
        page = c.poll_for_decision_task(domain=domain, taskList={"name": wf["list"]}, maximumPageSize=4, nextPageToken=token)
        assert page["taskToken"] == task["taskToken"]
        events.extend(page["events"])
        token = page.get("nextPageToken")
    assert [e["eventId"] for e in events] == list(range(1, task["startedEventId"] + 1))
    respond(c, task)
    other_task = poll_decision(c, domain, wf["list"], reverseOrder=True)
    assert other_task["workflowExecution"] == other
    assert [e["eventId"] for e in other_task["events"]] == [3, 2, 1]


def test_start_at_previous_started_event(c, domain):
    """With startAtPreviousStartedEvent a decision task shows the events from the previous
    decision task's DecisionTaskStarted on; it pages (in both orders) like the whole history."""
    wf = register_workflow(c, domain)
    execution = start(c, domain, wf)
    first = poll_decision(c, domain, wf["list"], startAtPreviousStartedEvent=True)
    assert first["previousStartedEventId"] == 0
    assert [e["eventId"] for e in first["events"]] == [1, 2, 3], "a first task shows everything"
    respond(c, first, {"decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {"markerName": "m"}})
    for n in range(3):
        c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName=f"s{n}")
    second = poll_decision(c, domain, wf["list"])
    respond(c, second)
    c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName="last")
    third = poll_decision(c, domain, wf["list"], startAtPreviousStartedEvent=True)
    previous = third["previousStartedEventId"]
    assert previous == second["startedEventId"]
    ids = [e["eventId"] for e in third["events"]]
    assert ids[-1] == third["startedEventId"]
    assert previous in ids and ids == list(range(ids[0], third["startedEventId"] + 1)), ids
    # Every event before the previous started one that is shown shares its timestamp (written in
    # the same instant); none before it is newer.
    by_id = {e["eventId"]: e for e in history(c, domain, execution)}
    since = by_id[previous]["eventTimestamp"]
    assert all(by_id[i]["eventTimestamp"] >= since for i in ids)
    assert ids[0] == 1 or by_id[ids[0] - 1]["eventTimestamp"] < since
    assert len(ids) < third["startedEventId"], "earlier events are left out"
    respond(c, third)
    c.signal_workflow_execution(domain=domain, workflowId=execution["workflowId"], signalName="paged")
    # Paged newest first, 2 a page: the pages together are the same tail, reversed.
    fourth = poll_decision(c, domain, wf["list"], startAtPreviousStartedEvent=True, maximumPageSize=2, reverseOrder=True)
    events, token = list(fourth["events"]), fourth.get("nextPageToken")
    while token:
        page = c.poll_for_decision_task(
            domain=domain,
            taskList={"name": wf["list"]},
            maximumPageSize=2,
            reverseOrder=True,
            startAtPreviousStartedEvent=True,
            nextPageToken=token,
        )
        assert page["taskToken"] == fourth["taskToken"]
        events.extend(page["events"])
        token = page.get("nextPageToken")
    got = [e["eventId"] for e in events]
    assert got[0] == fourth["startedEventId"] and fourth["previousStartedEventId"] in got, got
    assert got == sorted(got, reverse=True) and len(got) == len(set(got))
    respond(c, fourth, complete())


# ---------------------------------------------------------------------------------------------
# Quotas (a second server started with small limits)


@pytest.fixture(scope="module")
def limited():
    """`statelog serve` with --swf-open-executions-max 2 and --swf-task-list-pending-max 1."""
    import signal
    import subprocess
    import tempfile

    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", data,
             "--swf-open-executions-max", "2", "--swf-task-list-pending-max", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            process.kill()
            raise AssertionError(f"server did not start: {line!r} {process.stderr.read()}")
        try:
            yield swf_client(line.split("listening on ", 1)[1].strip())
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def test_open_executions_past_the_domains_limit_are_refused(limited):
    c = limited
    domain = register_domain(c)
    other = register_domain(c)
    wf = register_workflow(c, domain)
    wf_other = register_workflow(c, other, defaultTaskList={"name": wf["list"]})
    first = start(c, domain, wf)
    start(c, domain, wf)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, wf)
    assert error_code(excinfo) == "LimitExceededFault"
    assert "open workflow executions" in excinfo.value.response["Error"]["Message"]
    start(c, other, wf_other)  # another domain has its own count
    assert counted(c.count_open_workflow_executions(domain=domain, startTimeFilter={"oldestDate": 0})) == 2
    c.terminate_workflow_execution(domain=domain, workflowId=first["workflowId"])
    start(c, domain, wf)
    with pytest.raises(ClientError) as excinfo:
        start(c, domain, wf)
    assert error_code(excinfo) == "LimitExceededFault"


def test_a_full_activity_list_fails_the_schedule_and_loses_nothing(limited):
    c = limited
    domain = register_domain(c)
    wf = register_workflow(c, domain)
    act = register_activity(c, domain)
    execution = start(c, domain, wf)
    task = poll_decision(c, domain, wf["list"])
    respond(c, task, schedule(act, "a1"), schedule(act, "a2"))
    events = history(c, domain, execution)
    failed = of_type(events, "ScheduleActivityTaskFailed")
    assert [attrs(e)["activityId"] for e in failed] == ["a2"], types(events)
    assert attrs(failed[0])["cause"] == "ACTIVITY_CREATION_RATE_EXCEEDED"
    assert counted(c.count_pending_activity_tasks(domain=domain, taskList={"name": act["list"]})) == 1
    # The decider is woken by the failure and schedules again once the worker took the task.
    worker_task = poll_activity(c, domain, act["list"])
    assert worker_task["activityId"] == "a1"
    task = poll_decision(c, domain, wf["list"])
    respond(c, task, schedule(act, "a2"))
    assert counted(c.count_pending_activity_tasks(domain=domain, taskList={"name": act["list"]})) == 1
    assert poll_activity(c, domain, act["list"])["activityId"] == "a2"


# ---------------------------------------------------------------------------------------------
# Listing and counting executions


def test_list_and_count_with_filters(c):
    domain = register_domain(c)
    since = {"oldestDate": datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)}
    a = register_workflow(c, domain)
    b = register_workflow(c, domain)
    runs = []
    for wf, tags in ((a, ["blue"]), (a, []), (a, ["blue", "green"]), (b, [])):
        runs.append(start(c, domain, wf, tagList=tags))
        time.sleep(0.01)
    task = poll_decision(c, domain, a["list"])
    assert task["workflowExecution"] == runs[0]
    respond(c, task, complete())
    c.terminate_workflow_execution(domain=domain, workflowId=runs[1]["workflowId"])

    def listed(kind, **kwargs):
        call = c.list_open_workflow_executions if kind == "open" else c.list_closed_workflow_executions
        return [i["execution"] for i in call(domain=domain, **kwargs)["executionInfos"]]

    assert listed("open", startTimeFilter=since) == [runs[3], runs[2]], "newest start first"
    assert listed("open", startTimeFilter=since, reverseOrder=True) == [runs[2], runs[3]]
    assert listed("open", startTimeFilter=since, typeFilter={"name": a["type"]["name"]}) == [runs[2]]
    assert listed("open", startTimeFilter=since, tagFilter={"tag": "green"}) == [runs[2]]
    assert listed("open", startTimeFilter=since, executionFilter={"workflowId": runs[3]["workflowId"]}) == [runs[3]]
    future = {"oldestDate": datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)}
    assert listed("open", startTimeFilter=future) == []
    assert listed("closed", startTimeFilter=since) == [runs[1], runs[0]]
    assert listed("closed", closeTimeFilter=since, closeStatusFilter={"status": "COMPLETED"}) == [runs[0]]
    assert listed("closed", startTimeFilter=since, closeStatusFilter={"status": "TERMINATED"}) == [runs[1]]
    assert listed("closed", startTimeFilter=since, tagFilter={"tag": "blue"}) == [runs[0]]
    closed = c.list_closed_workflow_executions(domain=domain, startTimeFilter=since, executionFilter={"workflowId": runs[0]["workflowId"]})
    info = closed["executionInfos"][0]
    assert info["workflowType"] == a["type"] and info["executionStatus"] == "CLOSED" and info["closeStatus"] == "COMPLETED"
    assert info["tagList"] == ["blue"]
    # Pages of one.
    seen, token = [], None
    while True:
        page = c.list_open_workflow_executions(
            domain=domain, startTimeFilter=since, maximumPageSize=1, **({"nextPageToken": token} if token else {})
        )
        assert len(page["executionInfos"]) <= 1
        seen.extend(i["execution"] for i in page["executionInfos"])
        token = page.get("nextPageToken")
        if not token:
            break
    assert seen == [runs[3], runs[2]]
    assert counted(c.count_open_workflow_executions(domain=domain, startTimeFilter=since)) == 2
    assert c.count_open_workflow_executions(domain=domain, startTimeFilter=since, tagFilter={"tag": "blue"})["count"] == 1
    assert c.count_open_workflow_executions(domain=domain, startTimeFilter=since, typeFilter={"name": b["type"]["name"], "version": "1"})["count"] == 1
    assert c.count_closed_workflow_executions(domain=domain, startTimeFilter=since)["count"] == 2
    assert c.count_closed_workflow_executions(domain=domain, closeTimeFilter=since, closeStatusFilter={"status": "TERMINATED"})["count"] == 1
    # Filters SWF calls mutually exclusive.
    for call in (
        lambda: c.list_open_workflow_executions(domain=domain, startTimeFilter=since, tagFilter={"tag": "blue"}, typeFilter={"name": a["type"]["name"]}),
        lambda: c.list_closed_workflow_executions(domain=domain, startTimeFilter=since, closeTimeFilter=since),
        lambda: c.list_closed_workflow_executions(domain=domain),
        lambda: c.count_closed_workflow_executions(domain=domain, startTimeFilter=since, executionFilter={"workflowId": "x"}, closeStatusFilter={"status": "FAILED"}),
    ):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert error_code(excinfo) == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        c.list_open_workflow_executions(domain=unique("nowhere"), startTimeFilter=since)
    assert error_code(excinfo) == "UnknownResourceFault"


# ---------------------------------------------------------------------------------------------
# Timeouts: every scenario is set up at once, then each test waits for its own event.


@pytest.fixture(scope="module")
def timeouts(c, domain):
    scenarios = {}

    def with_activity(name, **timeouts_):
        activity = register_activity(c, domain)
        wf, execution, task = started_at_decision(c, domain)
        respond(c, task, schedule(activity, name, **timeouts_))
        scenarios[name] = {"execution": execution, "activity": activity, "wf": wf}
        return activity

    wf = register_workflow(c, domain)
    execution = start(c, domain, wf, taskStartToCloseTimeout="1")
    scenarios["decision"] = {"execution": execution, "wf": wf, "task": poll_decision(c, domain, wf["list"])}
    wf = register_workflow(c, domain)
    scenarios["execution"] = {"execution": start(c, domain, wf, executionStartToCloseTimeout="2"), "wf": wf}
    with_activity("schedule-to-start", scheduleToStartTimeout="1", scheduleToCloseTimeout="60", startToCloseTimeout="60")
    activity = with_activity("start-to-close", scheduleToStartTimeout="60", scheduleToCloseTimeout="60", startToCloseTimeout="1")
    scenarios["start-to-close"]["work"] = poll_activity(c, domain, activity["list"])
    activity = with_activity("schedule-to-close", scheduleToStartTimeout="60", scheduleToCloseTimeout="2", startToCloseTimeout="60")
    scenarios["schedule-to-close"]["work"] = poll_activity(c, domain, activity["list"])
    activity = with_activity(
        "heartbeat", scheduleToStartTimeout="60", scheduleToCloseTimeout="60", startToCloseTimeout="60", heartbeatTimeout="1"
    )
    work = poll_activity(c, domain, activity["list"])
    assert c.record_activity_task_heartbeat(taskToken=work["taskToken"], details="halfway")["cancelRequested"] is False
    scenarios["heartbeat"]["work"] = work
    return scenarios


def test_decision_task_start_to_close_timeout(c, domain, timeouts):
    scenario = timeouts["decision"]
    events = wait_for_event(c, domain, scenario["execution"], "DecisionTaskTimedOut")
    timed_out = last_of(events, "DecisionTaskTimedOut")
    assert attrs(timed_out) == {"timeoutType": "START_TO_CLOSE", "scheduledEventId": 2, "startedEventId": 3}
    assert events[timed_out["eventId"]]["eventType"] == "DecisionTaskScheduled", "a new decision task follows"
    with pytest.raises(ClientError) as excinfo:
        respond(c, scenario["task"], complete())
    assert error_code(excinfo) == "UnknownResourceFault"
    task = poll_decision(c, domain, scenario["wf"]["list"])
    assert task["startedEventId"] == timed_out["eventId"] + 2
    respond(c, task, complete())


def test_execution_start_to_close_timeout(c, domain, timeouts):
    execution = timeouts["execution"]["execution"]
    info = wait_closed(c, domain, execution, timeout=10)
    assert info["closeStatus"] == "TIMED_OUT"
    last = history(c, domain, execution)[-1]
    assert last["eventType"] == "WorkflowExecutionTimedOut"
    assert attrs(last) == {"timeoutType": "START_TO_CLOSE", "childPolicy": "TERMINATE"}
    assert c.count_pending_decision_tasks(domain=domain, taskList={"name": timeouts["execution"]["wf"]["list"]})["count"] == 0


@pytest.mark.parametrize(
    "name,timeout_type",
    [
        ("schedule-to-start", "SCHEDULE_TO_START"),
        ("start-to-close", "START_TO_CLOSE"),
        ("schedule-to-close", "SCHEDULE_TO_CLOSE"),
        ("heartbeat", "HEARTBEAT"),
    ],
)
def test_activity_timeouts(c, domain, timeouts, name, timeout_type):
    scenario = timeouts[name]
    events = wait_for_event(c, domain, scenario["execution"], "ActivityTaskTimedOut")
    timed_out = attrs(last_of(events, "ActivityTaskTimedOut"))
    assert timed_out["timeoutType"] == timeout_type
    scheduled = last_of(events, "ActivityTaskScheduled")
    assert timed_out["scheduledEventId"] == scheduled["eventId"]
    if "work" in scenario:
        assert timed_out["startedEventId"] == scenario["work"]["startedEventId"]
        with pytest.raises(ClientError) as excinfo:
            c.respond_activity_task_completed(taskToken=scenario["work"]["taskToken"], result="late")
        assert error_code(excinfo) == "UnknownResourceFault"
    else:
        assert c.count_pending_activity_tasks(domain=domain, taskList={"name": scenario["activity"]["list"]})["count"] == 0
    if name == "heartbeat":
        assert timed_out["details"] == "halfway", "the last heartbeat's details"
    task = poll_decision(c, domain, scenario["wf"]["list"])
    assert "ActivityTaskTimedOut" in types(task["events"])


# ---------------------------------------------------------------------------------------------
# Accounts, the Step Functions mapping, limits (a second server with two accounts)


@pytest.fixture(scope="module")
def secured():
    import os
    import signal
    import subprocess
    import tempfile

    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data, tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as creds:
        json.dump(
            {
                "AKIDONE": {"secret_access_key": "one-secret", "account_id": "111111111111"},
                "AKIDTWO": {"secret_access_key": "two-secret", "account_id": "222222222222"},
            },
            creds,
        )
        creds.flush()
        process = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--credentials", creds.name, "--metrics-listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            process.kill()
            raise AssertionError(f"server did not start: {line!r} {process.stderr.read()}")
        try:
            yield line.split("listening on ", 1)[1].strip()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            os.unlink(creds.name)


def test_domains_are_per_account(secured):
    one = swf_client(secured, "AKIDONE", "one-secret")
    two = swf_client(secured, "AKIDTWO", "two-secret")
    one.register_domain(name="shared-name", workflowExecutionRetentionPeriodInDays="1", description="one")
    with pytest.raises(ClientError) as excinfo:
        two.describe_domain(name="shared-name")
    assert error_code(excinfo) == "UnknownResourceFault"
    two.register_domain(name="shared-name", workflowExecutionRetentionPeriodInDays="2", description="two")
    assert one.describe_domain(name="shared-name")["domainInfo"]["description"] == "one"
    assert two.describe_domain(name="shared-name")["configuration"]["workflowExecutionRetentionPeriodInDays"] == "2"
    assert ":111111111111:" in one.describe_domain(name="shared-name")["domainInfo"]["arn"]
    wf = register_workflow(one, "shared-name")
    execution = start(one, "shared-name", wf)
    with pytest.raises(ClientError) as excinfo:
        two.describe_workflow_execution(domain="shared-name", execution=execution)
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        two.signal_workflow_execution(domain="shared-name", workflowId=execution["workflowId"], signalName="x")
    assert error_code(excinfo) == "UnknownResourceFault"
    task = poll_decision(one, "shared-name", wf["list"])
    with pytest.raises(ClientError) as excinfo:
        two.respond_decision_task_completed(taskToken=task["taskToken"], decisions=[])
    assert error_code(excinfo) == "UnknownResourceFault"


def test_an_swf_domain_named_after_the_account_serves_swf_task_lists(secured):
    """Without an SWF domain of that name, the account id is the Step Functions mapping's domain
    (test_cli.py covers it); once one is registered, its SWF task lists serve."""
    one = swf_client(secured, "AKIDONE", "one-secret")
    account = "111111111111"
    task_list = unique("shared-list")
    assert one.count_pending_activity_tasks(domain=account, taskList={"name": task_list})["count"] == 0
    with pytest.raises(ClientError) as excinfo:
        one.describe_domain(name=account)
    assert error_code(excinfo) == "UnknownResourceFault"
    one.register_domain(name=account, workflowExecutionRetentionPeriodInDays="1")
    activity = register_activity(one, account, defaultTaskList={"name": task_list})
    _, execution, task = started_at_decision(one, account)
    respond(one, task, schedule(activity, "swf-side"))
    assert one.count_pending_activity_tasks(domain=account, taskList={"name": task_list})["count"] == 1
    work = poll_activity(one, account, task_list)
    assert work["activityId"] == "swf-side" and work["workflowExecution"] == execution
    one.respond_activity_task_completed(taskToken=work["taskToken"], result="r")
    assert attrs(last_of(history(one, account, execution), "ActivityTaskCompleted"))["result"] == "r"


def test_an_account_holds_at_most_100_domains(secured):
    """SWF's limit on registered domains per account is LimitExceededFault past it."""
    two = swf_client(secured, "AKIDTWO", "two-secret")

    def held():
        return sum(len(two.list_domains(registrationStatus=s)["domainInfos"]) for s in ("REGISTERED", "DEPRECATED"))

    while held() < 100:
        two.register_domain(name=unique("many"), workflowExecutionRetentionPeriodInDays="0")
    with pytest.raises(ClientError) as excinfo:
        two.register_domain(name=unique("one-too-many"), workflowExecutionRetentionPeriodInDays="0")
    assert error_code(excinfo) == "LimitExceededFault"
    assert held() == 100
    # Another account is not affected.
    swf_client(secured, "AKIDONE", "one-secret").register_domain(name=unique("room"), workflowExecutionRetentionPeriodInDays="0")
