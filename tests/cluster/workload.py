"""What the cluster tests drive through boto3, and what they check afterwards.

`Sfn`: one boto3 Step Functions client per node (development mode: any signature, account
000000000000, us-east-1), botocore's own retries off. `Sfn.call` sends an operation to a node
chosen round robin and, on a connection error, a timeout or a retryable answer (HTTP 5xx,
ThrottlingException), sends it again to the next node, until it gets an answer or its bounded
time runs out; every re-send is counted per operation (`Sfn.retries`). `Sfn.start` makes a
start idempotent across re-sends: the same name and the same input; a re-send answered
`ExecutionAlreadyExists` is the first send's execution when its input is the same (AWS's
answer for a closed name).

`Machines`: the state machines of the suite. `wait` (a Wait of `$.wait` seconds), `token` (a
`.waitForTaskToken` Task on `sqs:sendMessage`, which `serve` has no handler for: the task waits,
and its token is in the TaskScheduled parameters), `activity` (an activity Task, retried on a
heartbeat timeout so a task lost with a node is offered again), `pass` (one Pass state).

`history_problems`: what is wrong with a finished history: ids not 1..n, a previousEventId that
names no earlier event, an event sequence other than the machine's (a duplicated event shows as
one).

Invariants: an operation counts as acknowledged only when a node answered it with HTTP 200.
Must not: retry an answer that is not retryable (a 4xx other than throttling is returned to
the caller, which decides).
"""

from __future__ import annotations

import itertools
import json
import queue
import re
import threading
import time
from collections import Counter

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from harness import ACCOUNT, REGION, Cluster

ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/statelog-cluster-test"
CALL_S_MAX = 90.0
RETRY_PAUSE_S_MIN = 0.05
RETRY_PAUSE_S_MAX = 0.5
READ_TIMEOUT_S = 20
POLL_READ_TIMEOUT_S = 75  # GetActivityTask holds a poll up to 60 s
RETRYABLE_CODES = {"ThrottlingException", "ServiceUnavailable", "InternalFailure", "InternalServerError"}


class CallFailed(Exception):
    """An operation got no answer that is not retryable within its bound."""


def retryable(error: Exception) -> bool:
    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return status >= 500 or error.response.get("Error", {}).get("Code") in RETRYABLE_CODES
    return isinstance(error, BotoCoreError)


def error_code(error: Exception) -> str:
    if isinstance(error, ClientError):
        return error.response.get("Error", {}).get("Code", "")
    return type(error).__name__


class Sfn:
    """Step Functions clients for every node of a cluster, with counted failover re-sends."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.retries: Counter = Counter()
        self.errors: Counter = Counter()
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, int], object] = {}
        self._turn = itertools.count()
        # A test's own bound: past it no call is sent again (a cluster that does not recover
        # fails the test in bounded time, not after every call's own bound in turn).
        self.give_up_at: float | None = None

    def client(self, name: str, read_timeout_s: int = READ_TIMEOUT_S):
        endpoint = self.cluster.nodes[name].endpoint
        if endpoint is None:
            raise CallFailed(f"node {name} is not running")
        key = (endpoint, read_timeout_s)
        with self._lock:
            if key not in self._clients:
                config = Config(
                    retries={"total_max_attempts": 1},
                    connect_timeout=3,
                    read_timeout=read_timeout_s,
                    max_pool_connections=32,
                )
                self._clients[key] = boto3.session.Session().client(
                    "stepfunctions",
                    endpoint_url=endpoint,
                    region_name=REGION,
                    aws_access_key_id="AKIDCLUSTERTEST",
                    aws_secret_access_key="cluster-test-secret",
                    config=config,
                )
            return self._clients[key]

    def live(self) -> list[str]:
        return [name for name, node in self.cluster.nodes.items() if node.endpoint and not node.process.stopped]

    def call(self, operation: str, nodes: list[str] | None = None, deadline_s: float = CALL_S_MAX,
             read_timeout_s: int = READ_TIMEOUT_S, rotate: bool = True, **kwargs):
        """(answer, node name, sends) of `operation`; re-sent to the next node on a retryable error.

        The first send goes to the next node round robin, or to `nodes[0]` when `rotate` is off.
        """
        started = time.monotonic()
        turn = next(self._turn) if rotate else 0
        pause_s = RETRY_PAUSE_S_MIN
        last: Exception | None = None
        for attempt in itertools.count():
            candidates = nodes if nodes is not None else self.live()
            if not candidates:
                raise CallFailed(f"{operation}: no node to send to")
            name = candidates[(turn + attempt) % len(candidates)]
            try:
                answer = getattr(self.client(name, read_timeout_s), operation)(**kwargs)
                return answer, name, attempt + 1
            except (ClientError, BotoCoreError, CallFailed) as error:
                if isinstance(error, CallFailed) or retryable(error):
                    last = error
                    with self._lock:
                        self.retries[operation] += 1
                        self.errors[f"{operation}: {error_code(error)}"] += 1
                else:
                    error.statelog_sends = attempt + 1
                    raise
            if time.monotonic() - started > deadline_s:
                raise CallFailed(f"{operation} not answered within {deadline_s} s, {attempt + 1} sends; last: {last}")
            if self.give_up_at is not None and time.monotonic() > self.give_up_at:
                raise CallFailed(f"{operation}: the test's time bound passed after {attempt + 1} sends; last: {last}")
            time.sleep(pause_s)
            pause_s = min(pause_s * 2, RETRY_PAUSE_S_MAX)
        raise AssertionError("unreachable: itertools.count() does not end")

    def start(self, machine_arn: str, name: str, input_text: str, nodes: list[str] | None = None) -> dict:
        """StartExecution, idempotent across re-sends. Returns {"executionArn", "node", "sends"}.

        A re-send answered `ExecutionAlreadyExists` is taken as this start's execution only
        when that execution's input is this input (an earlier send started it, and it closed).
        """
        try:
            answer, node, sends = self.call("start_execution", nodes=nodes, stateMachineArn=machine_arn,
                                            name=name, input=input_text)
            return {"executionArn": answer["executionArn"], "node": node, "sends": sends}
        except ClientError as error:
            sends = getattr(error, "statelog_sends", 1)
            if error_code(error) != "ExecutionAlreadyExists" or sends == 1:
                raise
            arn = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{machine_arn.rsplit(':', 1)[1]}:{name}"
            described, _, _ = self.call("describe_execution", nodes=nodes, executionArn=arn)
            if described["input"] != input_text:
                raise
            with self._lock:
                self.retries["start_execution: closed on a re-send"] += 1
            return {"executionArn": arn, "node": None, "sends": sends}

    def history(self, arn: str, nodes: list[str] | None = None) -> list[dict]:
        """Every event of an execution, paged (each page from the next node)."""
        events: list[dict] = []
        token = None
        while True:
            kwargs = {"executionArn": arn, "maxResults": 1000}
            if token:
                kwargs["nextToken"] = token
            answer, _, _ = self.call("get_execution_history", nodes=nodes, **kwargs)
            events.extend(answer["events"])
            token = answer.get("nextToken")
            if not token:
                return events

    def list_executions(self, machine_arn: str, page_size: int = 100) -> list[str]:
        """Every execution ARN of a machine, paged, each page through the next node."""
        arns: list[str] = []
        token = None
        while True:
            kwargs = {"stateMachineArn": machine_arn, "maxResults": page_size}
            if token:
                kwargs["nextToken"] = token
            answer, _, _ = self.call("list_executions", **kwargs)
            arns.extend(item["executionArn"] for item in answer["executions"])
            token = answer.get("nextToken")
            if not token:
                return arns


class Machines:
    """The suite's state machines and its activity, created through the cluster."""

    def __init__(self, sfn: Sfn, suffix: str = ""):
        self.sfn = sfn
        activity, _, _ = sfn.call("create_activity", name=f"work{suffix}")
        self.activity_arn = activity["activityArn"]
        definitions = {
            "wait": {"StartAt": "W", "States": {"W": {"Type": "Wait", "SecondsPath": "$.wait", "End": True}}},
            "token": {
                "StartAt": "T",
                "States": {
                    "T": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                        "Parameters": {
                            "QueueUrl": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/cluster-test",
                            "MessageBody": {"Token.$": "$$.Task.Token", "Input.$": "$"},
                        },
                        "End": True,
                    }
                },
            },
            "activity": {
                "StartAt": "A",
                "States": {
                    "A": {
                        "Type": "Task",
                        "Resource": self.activity_arn,
                        "HeartbeatSeconds": 10,
                        "Retry": [{"ErrorEquals": ["States.HeartbeatTimeout"], "IntervalSeconds": 1, "MaxAttempts": 5}],
                        "End": True,
                    }
                },
            },
            "pass": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
        }
        self.arns: dict[str, str] = {}
        for kind, definition in definitions.items():
            answer, _, _ = sfn.call("create_state_machine", name=f"{kind}{suffix}", definition=json.dumps(definition),
                                    roleArn=ROLE_ARN)
            self.arns[kind] = answer["stateMachineArn"]

    def name(self, kind: str) -> str:
        return self.arns[kind].rsplit(":", 1)[1]


EXPECTED_SEQUENCES = {
    "wait": r"ExecutionStarted WaitStateEntered WaitStateExited ExecutionSucceeded",
    "token": r"ExecutionStarted TaskStateEntered TaskScheduled TaskStarted (TaskSubmitted )?TaskSucceeded TaskStateExited ExecutionSucceeded",
    "activity": r"ExecutionStarted TaskStateEntered (ActivityScheduled (ActivityStarted )?ActivityTimedOut )*"
                r"ActivityScheduled ActivityStarted ActivitySucceeded TaskStateExited ExecutionSucceeded",
    "pass": r"ExecutionStarted PassStateEntered PassStateExited ExecutionSucceeded",
}


def history_problems(kind: str, events: list[dict]) -> list[str]:
    """What is wrong with one execution's history (empty: nothing)."""
    problems = []
    ids = [event["id"] for event in events]
    if ids != list(range(1, len(events) + 1)):
        problems.append(f"ids are not 1..{len(events)}: {ids}")
    for event in events:
        previous = event.get("previousEventId", 0)
        if not 0 <= previous < event["id"]:
            problems.append(f"event {event['id']} ({event['type']}) has previousEventId {previous}")
    types = [event["type"] for event in events]
    if not re.fullmatch(EXPECTED_SEQUENCES[kind], " ".join(types)):
        problems.append(f"sequence {types} is not a finished {kind} history")
    return problems


def token_of(events: list[dict]) -> str | None:
    """The task token in the last TaskScheduled's parameters, if any."""
    for event in reversed(events):
        if event["type"] == "TaskScheduled":
            parameters = json.loads(event["taskScheduledEventDetails"]["parameters"])
            return parameters["MessageBody"]["Token"]
    return None


def is_prefix(before: list[dict], after: list[dict]) -> bool:
    """Whether `before` is the start of `after`, event for event (timestamps included)."""
    return len(before) <= len(after) and all(one == other for one, other in zip(before, after))


class TokenAnswerer:
    """Threads that answer `token` executions: read the token from the history through one node,
    send SendTaskSuccess through another. `acknowledged[name]` is the output a node answered 200
    for; `unsure[name]` an output whose re-send was answered TaskTimedOut (an earlier send may
    have landed). `problems`: wrong answers (a first send refused); `notes`: calls that ran out
    of their bound (tried again later)."""

    def __init__(self, sfn: Sfn, threads: int = 2):
        self.sfn = sfn
        self.queue: "queue.Queue[tuple[float, str, str]]" = queue.Queue()
        self.acknowledged: dict[str, str] = {}
        self.unsure: dict[str, str] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, daemon=True, name=f"answerer-{i}") for i in range(threads)]

    def begin(self) -> None:
        for thread in self.threads:
            thread.start()

    def add(self, name: str, arn: str) -> None:
        self.queue.put((time.monotonic(), name, arn))

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                due, name, arn = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                self._answer(name, arn)
            except CallFailed as error:
                with self._lock:
                    self.notes.append(f"answering {name}: {error}")
                self.queue.put((time.monotonic() + 1.0, name, arn))

    def _answer(self, name: str, arn: str) -> None:
        live = self.sfn.live()
        if not live:
            self.queue.put((time.monotonic() + 0.5, name, arn))
            return
        reader = live[hash(name) % len(live)]
        try:
            events = self.sfn.history(arn, nodes=[reader] + [node for node in live if node != reader])
        except ClientError as error:
            with self._lock:
                self.problems.append(f"history of {name} answered {error_code(error)}: {error}")
            return
        token = token_of(events)
        if token is None:
            self.queue.put((time.monotonic() + 0.2, name, arn))
            return
        output = json.dumps({"answer": name, "via": "token"})
        others = [node for node in live if node != reader] + [reader]
        try:
            self.sfn.call("send_task_success", nodes=others, rotate=False, taskToken=token, output=output)
            with self._lock:
                self.acknowledged[name] = output
        except ClientError as error:
            with self._lock:
                if error_code(error) == "TaskTimedOut" and getattr(error, "statelog_sends", 1) > 1:
                    self.unsure[name] = output
                else:
                    self.problems.append(f"SendTaskSuccess for {name} answered {error_code(error)}: {error}")


class ActivityWorkers:
    """Threads doing GetActivityTask and SendTaskSuccess against the nodes in turn.
    `acknowledged[name]` is the output a node answered 200 for (at most one per execution);
    `unsure[name]` outputs answered TaskTimedOut (a task lost with a node and offered again, or
    an earlier send landed) or never answered. `problems`: wrong answers; `notes`: calls that
    ran out of their bound."""

    def __init__(self, sfn: Sfn, activity_arn: str, threads: int = 4):
        self.sfn = sfn
        self.activity_arn = activity_arn
        self.acknowledged: dict[str, str] = {}
        self.unsure: dict[str, list[str]] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.tasks = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True, name=f"worker-{i}") for i in range(threads)]

    def begin(self) -> None:
        for thread in self.threads:
            thread.start()

    def _run(self, index: int) -> None:
        worker = f"worker-{index}"
        while not self.stop.is_set():
            try:
                task, _, _ = self.sfn.call("get_activity_task", read_timeout_s=POLL_READ_TIMEOUT_S, deadline_s=30,
                                           activityArn=self.activity_arn, workerName=worker)
            except CallFailed as error:
                with self._lock:
                    self.notes.append(f"{worker} poll: {error}")
                continue
            except ClientError as error:
                with self._lock:
                    self.problems.append(f"{worker} poll answered {error_code(error)}: {error}")
                time.sleep(0.2)
                continue
            token = task.get("taskToken")
            if not token:
                continue
            name = json.loads(task["input"])["name"]
            output = json.dumps({"answer": name, "via": worker, "task": token.rsplit(".", 1)[1]})
            with self._lock:
                self.tasks += 1
            try:
                self.sfn.call("send_task_success", taskToken=token, output=output)
            except ClientError as error:
                with self._lock:
                    self.unsure.setdefault(name, []).append(output)
                    if error_code(error) != "TaskTimedOut":
                        self.problems.append(f"SendTaskSuccess for {name} answered {error_code(error)}: {error}")
                continue
            except CallFailed as error:
                with self._lock:
                    self.unsure.setdefault(name, []).append(output)
                    self.notes.append(f"SendTaskSuccess for {name}: {error}")
                continue
            with self._lock:
                if name in self.acknowledged:
                    self.problems.append(f"two results acknowledged for {name}: {self.acknowledged[name]} and {output}")
                self.acknowledged[name] = output


def describe(sfn: Sfn, arn: str) -> dict:
    """DescribeExecution; a refusal (e.g. ExecutionDoesNotExist) as status `REFUSED:<code>`, no
    answer within the call's bound as RUNNING (asked again)."""
    try:
        return sfn.call("describe_execution", executionArn=arn)[0]
    except ClientError as error:
        return {"status": f"REFUSED:{error_code(error)}", "error": str(error)}
    except CallFailed as error:
        return {"status": "RUNNING", "error": str(error)}


def wait_closed(sfn: Sfn, arns: list[str], timeout_s: float, threads: int = 8) -> dict[str, dict]:
    """Describes every execution until it is closed or `timeout_s` runs out; returns arn ->
    the last DescribeExecution answer (status RUNNING for those still open at the end)."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    last: dict[str, dict] = {}
    open_arns = list(arns)
    with ThreadPoolExecutor(threads) as pool:
        while open_arns and time.monotonic() - started < timeout_s:
            answers = list(pool.map(lambda arn: describe(sfn, arn), open_arns))
            for arn, answer in zip(open_arns, answers):
                last[arn] = answer
            open_arns = [arn for arn in open_arns if last[arn]["status"] == "RUNNING"]
            if open_arns:
                time.sleep(0.5)
    return last


def histories(sfn: Sfn, arns: list[str], threads: int = 8) -> dict[str, list[dict]]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        return dict(zip(arns, pool.map(sfn.history, arns)))


def output_of(events: list[dict], event_type: str) -> list:
    """The outputs (parsed: the engine re-serializes JSON) of every `event_type` event
    (TaskSucceeded, ActivitySucceeded)."""
    key = event_type[0].lower() + event_type[1:] + "EventDetails"
    return [json.loads(event[key]["output"]) for event in events if event["type"] == event_type]
