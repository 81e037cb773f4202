"""py-swf (PyPI, Yelp) against `statelog serve`: its WorkflowRegistrar registers the domain and
types, its WorkflowClient starts the run, a decider built on its DecisionClient (poll,
walk_execution_history, finish_decision_with_activity, finish_workflow) and two workers built
on its ActivityTaskClient (one per activity task list) run in threads with real long polls.
py-swf has no timer decision, so the decider starts its timer through the same boto3 client
the library wraps; the test sends the signal and reads the outcome.
"""

import json
import threading

import pytest
from py_swf.clients.activity_task import ActivityTaskClient
from py_swf.clients.admin import WorkflowRegistrar
from py_swf.clients.decision import DecisionClient
from py_swf.clients.workflow import WorkflowClient
from py_swf.config_definitions import ActivityTaskConfig, DecisionConfig, WorkflowClientConfig
from py_swf.errors import NoTaskFound

from swf_helpers import ENDPOINT, attrs, history, of_type, swf_client, unique, wait_closed, wait_for_event

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

MAIN = "pyswf-main"
SHIPPING = "pyswf-shipping"


def decision_config(domain, task_list):
    return DecisionConfig(
        domain=domain,
        task_list=task_list,
        schedule_to_close_timeout=60,
        schedule_to_start_timeout=30,
        start_to_close_timeout=30,
        heartbeat_timeout=30,
    )


def decide(events, task_token, decider, shipper):
    """One decision, from the whole history (py-swf hands events as namedtuples)."""
    by_type = {}
    for event in events:
        by_type.setdefault(event.eventType, []).append(event)
    started = by_type["WorkflowExecutionStarted"][0].workflowExecutionStartedEventAttributes
    scheduled = {e.activityTaskScheduledEventAttributes.activityId: e.eventId for e in by_type.get("ActivityTaskScheduled", [])}
    results = {}
    for event in by_type.get("ActivityTaskCompleted", []):
        done = event.activityTaskCompletedEventAttributes
        activity_id = next(k for k, v in scheduled.items() if v == done.scheduledEventId)
        results[activity_id] = done.result
    if by_type.get("ActivityTaskFailed") or by_type.get("ActivityTaskTimedOut"):
        decider.boto_client.respond_decision_task_completed(
            taskToken=task_token,
            decisions=[{"decisionType": "FailWorkflowExecution", "failWorkflowExecutionDecisionAttributes": {"reason": "activity"}}],
        )
    elif "validate" not in scheduled:
        decider.finish_decision_with_activity(task_token, "validate", "validate", "1", started.input)
    elif "validate" in results and "charge" not in scheduled:
        decider.finish_decision_with_activity(task_token, "charge", "charge", "1", results["validate"])
    elif "charge" in results and not by_type.get("TimerStarted"):
        decider.boto_client.respond_decision_task_completed(
            taskToken=task_token,
            decisions=[{"decisionType": "StartTimer", "startTimerDecisionAttributes": {"timerId": "cool-off", "startToFireTimeout": "1"}}],
        )
    elif by_type.get("TimerFired") and by_type.get("WorkflowExecutionSignaled") and "ship" not in scheduled:
        # The second task list: a DecisionClient configured for it schedules the activity.
        shipper.finish_decision_with_activity(task_token, "ship", "ship", "1", results["charge"])
    elif "ship" in results:
        decider.finish_workflow(task_token, results["ship"])
    else:
        decider.boto_client.respond_decision_task_completed(taskToken=task_token, decisions=[])


def work(task):
    order = json.loads(task.input)
    if task.type == "validate":
        return json.dumps(dict(order, valid=bool(order["items"])))
    if task.type == "charge":
        return json.dumps({"id": order["id"], "charged": 5 * len(order["items"])})
    if task.type == "ship":
        return f"shipped {order['id']} ({order['charged']} charged)"
    raise ValueError(task.type)


def loop(stop, errors, poll, handle):
    while not stop.is_set():
        try:
            task = poll()
        except NoTaskFound:
            continue
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
            return
        if stop.is_set():
            return
        try:
            handle(task)
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
            return


def test_pyswf_decider_and_workers_run_an_order_workflow():
    boto = swf_client()
    domain = unique("pyswf")
    registrar = WorkflowRegistrar(boto)
    registrar.register_domain(domain, retention=1)
    registrar.register_domain(domain, retention=1)  # idempotent: DomainAlreadyExistsFault is expected
    registrar.register_workflow_type(domain, "order", "1", task_list_name=MAIN, child_policy="TERMINATE")
    for name in ("validate", "charge", "ship"):
        registrar.register_activity_type(domain, name, "1", task_list_name=MAIN)
    decider = DecisionClient(decision_config(domain, MAIN), boto)
    shipper = DecisionClient(decision_config(domain, SHIPPING), boto)
    workers = [ActivityTaskClient(ActivityTaskConfig(domain, MAIN), swf_client()), ActivityTaskClient(ActivityTaskConfig(domain, SHIPPING), swf_client())]
    stop, errors, seen = threading.Event(), [], []

    def handle_decision(task):
        events = list(decider.walk_execution_history(task.workflow_id, task.workflow_run_id, reverse_order=False))
        assert events[-1].eventType == "DecisionTaskStarted"
        decide(events, task.task_token, decider, shipper)

    def worker_for(client, identity):
        def handle(task):
            seen.append((identity, task.type))
            client.finish(task.task_token, work(task))

        return lambda: loop(stop, errors, lambda: client.poll(identity=identity), handle)

    threads = [
        threading.Thread(target=loop, args=(stop, errors, lambda: decider.poll(identity="pyswf-decider"), handle_decision), daemon=True),
        threading.Thread(target=worker_for(workers[0], "main-worker"), daemon=True),
        threading.Thread(target=worker_for(workers[1], "shipping-worker"), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        client = WorkflowClient(
            WorkflowClientConfig(domain, "order", "1", MAIN, execution_start_to_close_timeout=300, task_start_to_close_timeout=30),
            boto,
        )
        workflow_id = unique("order")
        run_id = client.start_workflow(json.dumps({"id": "o-9", "items": ["pen", "ink", "pad"]}), workflow_id)
        execution = {"workflowId": workflow_id, "runId": run_id}
        wait_for_event(boto, domain, execution, "TimerStarted", timeout=30)
        boto.signal_workflow_execution(domain=domain, workflowId=workflow_id, signalName="approved", input="yes")
        info = wait_closed(boto, domain, execution, timeout=30)
    finally:
        # The pollers stop after their current long poll; they are daemon threads.
        stop.set()
    assert not errors, errors
    assert info["closeStatus"] == "COMPLETED"
    events = history(boto, domain, execution)
    assert attrs(of_type(events, "WorkflowExecutionCompleted")[0])["result"] == "shipped o-9 (15 charged)"
    scheduled = {attrs(e)["activityId"]: attrs(e) for e in of_type(events, "ActivityTaskScheduled")}
    assert scheduled["validate"]["taskList"] == {"name": MAIN}
    assert scheduled["ship"]["taskList"] == {"name": SHIPPING}, "the activity on the second task list"
    started = {attrs(e)["scheduledEventId"]: attrs(e)["identity"] for e in of_type(events, "ActivityTaskStarted")}
    assert started[next(e["eventId"] for e in of_type(events, "ActivityTaskScheduled") if attrs(e)["activityId"] == "ship")] == "shipping-worker"
    assert sorted(seen) == [("main-worker", "charge"), ("main-worker", "validate"), ("shipping-worker", "ship")]
    assert [attrs(e)["timerId"] for e in of_type(events, "TimerFired")] == ["cool-off"]
    assert [attrs(e)["signalName"] for e in of_type(events, "WorkflowExecutionSignaled")] == ["approved"]
    decision_starts = of_type(events, "DecisionTaskStarted")
    assert all(attrs(e)["identity"] == "pyswf-decider" for e in decision_starts)
