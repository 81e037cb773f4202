"""simpleflow (PyPI, botify-labs) against `statelog serve`: its own `decider.start` and
`worker.start` processes (one worker per activity task list) run `swf_simpleflow_app.OrderFlow`,
started with its own `workflow.start`; the test only registers the domain, sends the signal and
reads the outcome. simpleflow's clients reach statelog through boto3's endpoint variable
(`AWS_ENDPOINT_URL_SWF`), with the development server's any-signature credentials.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from swf_helpers import ENDPOINT, REGION, attrs, history, of_type, swf_client, unique, wait_closed, wait_for, wait_for_event

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

HERE = os.path.dirname(os.path.abspath(__file__))


def simpleflow_env():
    env = dict(os.environ)
    env.update(
        AWS_ENDPOINT_URL_SWF=ENDPOINT,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_DEFAULT_REGION=REGION,
        PYTHONPATH=os.pathsep.join([HERE, env.get("PYTHONPATH", "")]),
        LOG_LEVEL="INFO",
    )
    return env


def simpleflow(*args, log=None, background=False):
    command = [sys.executable, "-m", "simpleflow", *args]
    if background:
        # Its own session, so the supervisor and the children it forks stop together.
        return subprocess.Popen(command, env=simpleflow_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return subprocess.run(command, env=simpleflow_env(), capture_output=True, text=True, timeout=60, check=True)


def stop(processes):
    """SIGTERM to every process group, then SIGKILL to those still there after 2 s (a
    simpleflow poller stops gracefully only once its long poll returns, up to 60 s)."""
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=5)


def test_simpleflow_decider_and_workers_run_an_order_workflow():
    import swf_simpleflow_app as app

    c = swf_client()
    domain = unique("simpleflow")
    c.register_domain(name=domain, workflowExecutionRetentionPeriodInDays="1")
    with tempfile.TemporaryFile("w+") as log:
        processes = [
            simpleflow("decider.start", "--domain", domain, "--nb-processes", "1", "swf_simpleflow_app.OrderFlow", log=log, background=True),
            simpleflow("worker.start", "--domain", domain, "--task-list", app.MAIN_LIST, "--nb-processes", "1", log=log, background=True),
            simpleflow("worker.start", "--domain", domain, "--task-list", app.SHIPPING_LIST, "--nb-processes", "1", log=log, background=True),
        ]
        try:
            workflow_id = unique("order")
            order = {"id": "o-17", "items": ["book", "lamp"]}
            started = simpleflow(
                "workflow.start",
                "--domain",
                domain,
                "--workflow-id",
                workflow_id,
                "--execution-timeout",
                "300",
                "--decision-tasks-timeout",
                "30",
                "--input",
                json.dumps([order]),
                "swf_simpleflow_app.OrderFlow",
            )
            started_id, run_id = started.stdout.split()[-2:]
            assert started_id == workflow_id
            execution = {"workflowId": workflow_id, "runId": run_id}
            # The signal comes once the timer is running: the decider must wait for both.
            wait_for_event(c, domain, execution, "TimerStarted", timeout=60)
            c.signal_workflow_execution(domain=domain, workflowId=workflow_id, signalName="approved", input=json.dumps({"by": "e2e"}))
            info = wait_closed(c, domain, execution, timeout=60)
        except BaseException:
            log.seek(0)
            print(log.read()[-20000:])
            raise
        finally:
            stop(processes)
    assert info["closeStatus"] == "COMPLETED"
    events = history(c, domain, execution)
    completed = attrs(of_type(events, "WorkflowExecutionCompleted")[0])
    assert json.loads(completed["result"]) == "shipped o-17 (10 charged)"
    scheduled = {attrs(e)["activityType"]["name"].rsplit(".", 1)[-1]: attrs(e) for e in of_type(events, "ActivityTaskScheduled")}
    assert set(scheduled) == {"validate", "charge", "ship"}
    assert scheduled["validate"]["taskList"] == {"name": app.MAIN_LIST}
    assert scheduled["ship"]["taskList"] == {"name": app.SHIPPING_LIST}, "the activity on the second task list"
    assert len(of_type(events, "ActivityTaskCompleted")) == 3
    assert [attrs(e)["timerId"] for e in of_type(events, "TimerFired")] == ["cool-off"]
    assert [attrs(e)["signalName"] for e in of_type(events, "WorkflowExecutionSignaled")] == ["approved"]
    # The signal arrived while the timer ran; shipping waited for both.
    signal_id = of_type(events, "WorkflowExecutionSignaled")[0]["eventId"]
    fired_id = of_type(events, "TimerFired")[0]["eventId"]
    ship_id = next(e["eventId"] for e in of_type(events, "ActivityTaskScheduled") if attrs(e)["activityType"]["name"].endswith("ship"))
    assert ship_id > max(signal_id, fired_id)
    wait_for("no open decision task", lambda: c.count_pending_decision_tasks(domain=domain, taskList={"name": app.DECISIONS_LIST})["count"] == 0)
