"""Scenario: a node is SIGSTOPped past its lease (3 leases and until the others hold every
partition it held), then SIGCONTed: a stale owner that wakes up with open engines, due timers
and requests waiting in its sockets.

Before the stop, executions are started in the partitions the node holds: Waits of 3 s (due
while it is stopped), and token Tasks. During the stop, requests for it queue in its sockets
(SendTaskSuccess for half of the tokens, DescribeExecution, GetExecutionHistory, StartExecution
of new names in its partitions); through the other nodes, an execution started in each of its
partitions succeeds (progress continues: the takeover) and its Waits finish. After SIGCONT,
the other half of the tokens is answered through it, and reads through it are checked between
two reads through the others.

Checked:
- every answer of the resumed node is right or a retryable error (5xx, throttling, a dropped
  connection): an acknowledged token answer is in the history, an acknowledged start exists
  and succeeds, a refused token answer was right to be refused (the others then refuse it too),
  a read is not older than a read through the others that finished before it was sent, nor
  newer than one sent after it, and every history it shows is a prefix of the final one;
- every history is contiguous and the machine's exact sequence (each event once);
- after every node is SIGKILLed and started again (each partition replayed from JetStream by
  its next owner) every history is the same as before: nothing the stale node appended
  reached a stream unseen;
- the resumed node answers reads correctly within a bounded time.
"""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from botocore.exceptions import ClientError

from harness import NODE_NAMES, name_in_partition
from workload import (
    Machines,
    Sfn,
    error_code,
    histories,
    history_problems,
    is_prefix,
    output_of,
    retryable,
    token_of,
    wait_closed,
)

WAIT_S = 3
STOPPED_S_MIN_FACTOR = 3  # leases
TAKEOVER_S_MAX = 60.0
PARKED_READ_TIMEOUT_S = 60
RANK = {"RUNNING": 0, "SUCCEEDED": 1, "FAILED": 1, "ABORTED": 1, "TIMED_OUT": 1}
TEST_S_MAX = 150.0  # the whole test, past which no call is re-sent


class Parked:
    """One request sent to the stopped node; its outcome once the node runs again."""

    def __init__(self, sfn: Sfn, node: str, label: str, operation: str, **kwargs):
        self.label = label
        self.operation = operation
        self.kwargs = kwargs
        self.answer = None
        self.error: Exception | None = None
        self.sent_at = time.monotonic()

        def send():
            try:
                client = sfn.client(node, read_timeout_s=PARKED_READ_TIMEOUT_S)
                self.answer = getattr(client, operation)(**kwargs)
            except Exception as error:  # noqa: BLE001 - classified by the test
                self.error = error

        self.thread = threading.Thread(target=send, daemon=True)
        self.thread.start()


def test_a_node_stopped_past_its_lease_and_resumed_changes_nothing_it_no_longer_owns(cluster, figures):
    sfn = Sfn(cluster)
    sfn.give_up_at = time.monotonic() + TEST_S_MAX
    machines = Machines(sfn)
    owners = cluster.wait_balanced(list(NODE_NAMES))
    victim = max(NODE_NAMES, key=lambda name: sum(1 for owner in owners.values() if owner == name))
    others = [name for name in NODE_NAMES if name != victim]
    held = [partition for partition, owner in owners.items() if owner == victim]
    other_partition = next(partition for partition, owner in owners.items() if owner != victim)

    # name -> {"kind", "arn"}; every execution of the test, checked at the end.
    executions: dict[str, dict] = {}

    def start(kind: str, name: str, input_doc: dict, nodes=None) -> str:
        started = sfn.start(machines.arns[kind], name, json.dumps(input_doc), nodes=nodes)
        executions[name] = {"kind": kind, "arn": started["executionArn"]}
        return started["executionArn"]

    tokens_parked: dict[str, str] = {}  # name -> token, answered through the stopped node
    tokens_after: dict[str, str] = {}  # name -> token, answered through it after SIGCONT
    waits_held: list[str] = []
    for partition in held:
        for index, group in enumerate((tokens_parked, tokens_after)):
            name = name_in_partition(machines.name("token"), f"stale-p{partition}-t{index}", partition)
            group[name] = start("token", name, {"name": name})
        name = name_in_partition(machines.name("wait"), f"stale-p{partition}-w", partition)
        start("wait", name, {"name": name, "wait": WAIT_S})
        waits_held.append(name)
    control = name_in_partition(machines.name("token"), f"stale-p{other_partition}-control", other_partition)
    tokens_after[control] = start("token", control, {"name": control})
    for group in (tokens_parked, tokens_after):
        for name, arn in group.items():
            deadline = time.monotonic() + 30
            token = None
            while token is None and time.monotonic() < deadline:
                token = token_of(sfn.history(arn))
                if token is None:
                    time.sleep(0.1)
            assert token is not None, f"{name}: no TaskScheduled within 30 s"
            group[name] = token

    # ---- the stop ----
    stopped_at = time.monotonic()
    cluster.stop_node(victim)
    lease_moved: dict[str, float | None] = {}
    lease_watch = threading.Thread(
        target=lambda: lease_moved.update(ms=cluster.lease_moved_ms(victim, held, stopped_at, TAKEOVER_S_MAX)), daemon=True)
    lease_watch.start()
    parked: list[Parked] = []
    for name, token in tokens_parked.items():
        output = json.dumps({"answer": name, "via": f"{victim} while stopped"})
        parked.append(Parked(sfn, victim, name, "send_task_success", taskToken=token, output=output))
    for name in waits_held:
        parked.append(Parked(sfn, victim, name, "describe_execution", executionArn=executions[name]["arn"]))
        parked.append(Parked(sfn, victim, name, "get_execution_history", executionArn=executions[name]["arn"]))
    for partition in held:
        name = name_in_partition(machines.name("pass"), f"stale-p{partition}-parked-start", partition)
        parked.append(Parked(sfn, victim, name, "start_execution", stateMachineArn=machines.arns["pass"], name=name, input="{}"))

    # Progress through the others: an execution in each held partition succeeds.
    takeover_ms: dict[int, float] = {}

    def probe(partition: int) -> None:
        name = name_in_partition(machines.name("pass"), f"stale-p{partition}-probe", partition)
        arn = start("pass", name, {"partition": partition}, nodes=others)
        while time.monotonic() - stopped_at < TAKEOVER_S_MAX:
            if sfn.call("describe_execution", nodes=others, executionArn=arn)[0]["status"] == "SUCCEEDED":
                takeover_ms[partition] = (time.monotonic() - stopped_at) * 1000
                return
            time.sleep(0.05)

    with ThreadPoolExecutor(len(held)) as pool:
        list(pool.map(probe, held))
    assert sorted(takeover_ms) == sorted(held), f"no progress in partitions {sorted(set(held) - set(takeover_ms))} within {TAKEOVER_S_MAX} s"
    cluster.wait_owned_by_others(victim, held, TAKEOVER_S_MAX)
    lease_watch.join(TAKEOVER_S_MAX)
    remaining_s = STOPPED_S_MIN_FACTOR * cluster.lease_ms / 1000 - (time.monotonic() - stopped_at)
    if remaining_s > 0:
        time.sleep(remaining_s)
    # The Waits due while it is stopped finish on the new owners.
    waits_closed = {arn: answer["status"] for arn, answer in
                    wait_closed(sfn, [executions[name]["arn"] for name in waits_held], 30).items()}
    assert set(waits_closed.values()) == {"SUCCEEDED"}, f"Waits in the taken partitions did not finish: {waits_closed}"
    before_resume = {name: sfn.history(executions[name]["arn"], nodes=others) for name in waits_held}
    stopped_s = time.monotonic() - stopped_at

    # ---- the resume ----
    cluster.continue_node(victim)
    problems: list[str] = []
    acknowledged: dict[str, str] = {}  # token execution name -> output a node said 200 to
    refused: dict[str, str] = {}  # token execution name -> the resumed node's refusal (not retryable)
    victim_histories: list[tuple[str, list[dict]]] = []

    def sandwich(name: str) -> None:
        """Authoritative read, read through the resumed node, authoritative read."""
        arn = executions[name]["arn"]
        first = sfn.call("describe_execution", nodes=others, executionArn=arn)[0]
        try:
            middle = sfn.client(victim).describe_execution(executionArn=arn)
        except Exception as error:  # noqa: BLE001 - classified here
            if not retryable(error):
                problems.append(f"describe {name} through {victim} after SIGCONT: {error_code(error)} {error}")
            return
        last = sfn.call("describe_execution", nodes=others, executionArn=arn)[0]
        if not RANK[first["status"]] <= RANK[middle["status"]] <= RANK[last["status"]]:
            problems.append(f"describe {name} through {victim}: {middle['status']} between {first['status']} and {last['status']}")
        if middle["input"] != first["input"]:
            problems.append(f"describe {name} through {victim}: input {middle['input']!r}, not {first['input']!r}")

    def answer_after(name: str, token: str) -> None:
        output = json.dumps({"answer": name, "via": f"{victim} after SIGCONT"})
        try:
            sfn.client(victim).send_task_success(taskToken=token, output=output)
            acknowledged[name] = output
        except Exception as error:  # noqa: BLE001 - classified here
            if not retryable(error):
                refused[name] = error_code(error)

    with ThreadPoolExecutor(8) as pool:
        jobs = [pool.submit(sandwich, name) for name in waits_held]
        jobs += [pool.submit(answer_after, name, token) for name, token in tokens_after.items()]
        for job in jobs:
            job.result()
    for request in parked:
        request.thread.join(PARKED_READ_TIMEOUT_S + 10)
    resumed_at = time.monotonic()

    # Outcomes of the requests that waited in the stopped node's sockets.
    parked_outcomes: dict[str, int] = {}
    for request in parked:
        outcome = "200" if request.error is None else error_code(request.error)
        parked_outcomes[f"{request.operation} {outcome}"] = parked_outcomes.get(f"{request.operation} {outcome}", 0) + 1
        if request.error is not None and not retryable(request.error):
            if request.operation == "send_task_success":
                refused[request.label] = error_code(request.error)
            else:
                problems.append(f"{request.operation} {request.label} through the stopped {victim}: {error_code(request.error)} {request.error}")
            continue
        if request.error is not None:
            continue
        if request.operation == "send_task_success":
            acknowledged[request.label] = request.kwargs["output"]
        elif request.operation == "start_execution":
            executions[request.label] = {"kind": "pass", "arn": request.answer["executionArn"]}
        elif request.operation == "get_execution_history":
            victim_histories.append((request.label, request.answer["events"]))
        elif request.operation == "describe_execution" and request.answer["input"] != json.dumps({"name": request.label, "wait": WAIT_S}):
            problems.append(f"describe {request.label} through the stopped {victim}: input {request.answer['input']!r}")

    # Tokens not acknowledged by the resumed node: answered through the others. A token it
    # refused (e.g. TaskTimedOut) must be refused by them too: its task must be closed.
    for name, token in {**tokens_parked, **tokens_after}.items():
        if name in acknowledged:
            continue
        output = json.dumps({"answer": name, "via": "others"})
        try:
            sfn.call("send_task_success", nodes=others, taskToken=token, output=output)
            acknowledged[name] = output
            if name in refused:
                problems.append(f"SendTaskSuccess {name}: {victim} refused it ({refused[name]}) but its task was open")
        except ClientError as error:
            if error_code(error) != "TaskTimedOut":
                problems.append(f"SendTaskSuccess {name} through {others}: {error_code(error)} {error}")

    closed = wait_closed(sfn, [record["arn"] for record in executions.values()], 60)
    for arn, answer in closed.items():
        if answer["status"] != "SUCCEEDED":
            problems.append(f"{arn}: {answer['status']}")
    final = histories(sfn, [record["arn"] for record in executions.values()])
    for name, record in executions.items():
        events = final[record["arn"]]
        problems += [f"{name}: {problem}" for problem in history_problems(record["kind"], events)]
        if record["kind"] == "token":
            outputs = output_of(events, "TaskSucceeded")
            if name in acknowledged and outputs != [json.loads(acknowledged[name])]:
                problems.append(f"{name}: acknowledged {acknowledged[name]} but TaskSucceeded outputs {outputs}")
    for name, events in victim_histories:
        if not is_prefix(events, final[executions[name]["arn"]]):
            problems.append(f"{name}: the history through {victim} is not a prefix of the final one: {[e['type'] for e in events]}")
    for name, events in before_resume.items():
        if events != final[executions[name]["arn"]]:
            problems.append(f"{name}: a finished history changed after {victim} resumed")

    # The resumed node answers reads right within a bound (retryable errors meanwhile).
    answers_right_s = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            wrong = []
            for name in waits_held:
                answer = sfn.client(victim).describe_execution(executionArn=executions[name]["arn"])
                if answer["status"] != "SUCCEEDED":
                    wrong.append(f"{name}: {answer['status']}")
            if wrong:
                problems.append(f"describe through the resumed {victim} (all SUCCEEDED elsewhere): {wrong}")
                break
            answers_right_s = time.monotonic() - resumed_at
            break
        except Exception as error:  # noqa: BLE001 - classified here
            if not retryable(error):
                problems.append(f"describe through the resumed {victim}: {error_code(error)} {error}")
                break
            time.sleep(0.2)
    if answers_right_s is None and not any("resumed" in problem for problem in problems):
        problems.append(f"the resumed {victim} did not answer a describe within 30 s")

    # Every node restarted: each partition replayed from its stream shows the same histories.
    for name in NODE_NAMES:
        cluster.kill_node(name)
    for name in NODE_NAMES:
        cluster.start_node(name)
    cluster.wait_balanced(list(NODE_NAMES))
    replayed = histories(sfn, [record["arn"] for record in executions.values()])
    for name, record in executions.items():
        if replayed[record["arn"]] != final[record["arn"]]:
            problems.append(f"{name}: history after replay differs: {[e['type'] for e in replayed[record['arn']]]}")

    figures(
        f"SIGSTOP node {victim} (held {held}) for {stopped_s:.1f} s (lease {cluster.lease_ms} ms); its leases held by others "
        f"after {lease_moved.get('ms') and round(lease_moved['ms'])} ms; an execution in each "
        f"held partition SUCCEEDED through {others} after (ms) { {p: round(ms) for p, ms in sorted(takeover_ms.items())} }"
    )
    figures(
        f"requests queued at the stopped {victim}, answered after SIGCONT: {parked_outcomes}; token answers it refused "
        f"after SIGCONT: {refused}; "
        f"reads through it right {answers_right_s if answers_right_s is None else round(answers_right_s, 2)} s after resume"
    )
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])
