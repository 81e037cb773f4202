"""Scenario: every NATS server is SIGKILLed at once and started again on the same ports and
store directories, with executions of every kind finished and in flight (Waits due during the
outage, token Tasks and activity Tasks waiting), and a thread starting executions all along.

Checked:
- every history read before the outage is still there after it, event for event (the whole
  history of a finished execution, a prefix of a running one's);
- the nodes recover by themselves: an execution started in each partition after the restart
  succeeds (bounded), and so does everything in flight and every start acknowledged during
  the outage;
- every history is contiguous and the machine's exact sequence; every acknowledged token
  answer and activity result is in it.

Figures: how long JetStream took to answer again, and per partition the time from the
restart until an execution started there was seen SUCCEEDED.
"""

import itertools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from botocore.exceptions import ClientError

from harness import NODE_NAMES, name_in_partition
from workload import (
    ActivityWorkers,
    CallFailed,
    Machines,
    Sfn,
    TokenAnswerer,
    histories,
    history_problems,
    is_prefix,
    output_of,
    wait_closed,
)

FINISHED_COUNT = 30
IN_FLIGHT_COUNT = 15  # of each kind
IN_FLIGHT_WAIT_S = 6
OUTAGE_S = 1.0
RECOVERY_S_MAX = 90.0
TEST_S_MAX = 120.0  # the whole test, past which no call is re-sent


def test_a_full_nats_restart_keeps_every_acknowledged_event_and_the_nodes_recover(cluster, figures):
    sfn = Sfn(cluster)
    sfn.give_up_at = time.monotonic() + TEST_S_MAX
    machines = Machines(sfn)
    cluster.wait_balanced(list(NODE_NAMES))
    executions: dict[str, dict] = {}  # name -> {"kind", "arn"}
    lock = threading.Lock()

    def start(kind: str, name: str, input_doc: dict) -> str:
        started = sfn.start(machines.arns[kind], name, json.dumps(input_doc))
        with lock:
            executions[name] = {"kind": kind, "arn": started["executionArn"]}
        return started["executionArn"]

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: start("pass", f"done-pass-{i}", {}), range(FINISHED_COUNT)))
        list(pool.map(lambda i: start("wait", f"done-wait-{i}", {"name": f"done-wait-{i}", "wait": 1}), range(FINISHED_COUNT)))
    finished = [record["arn"] for record in executions.values()]
    closed = wait_closed(sfn, finished, 60)
    assert {answer["status"] for answer in closed.values()} == {"SUCCEEDED"}, "the executions before the outage did not finish"

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: start("wait", f"flight-wait-{i}", {"name": f"flight-wait-{i}", "wait": IN_FLIGHT_WAIT_S}), range(IN_FLIGHT_COUNT)))
        list(pool.map(lambda i: start("token", f"flight-token-{i}", {"name": f"flight-token-{i}"}), range(IN_FLIGHT_COUNT)))
        list(pool.map(lambda i: start("activity", f"flight-activity-{i}", {"name": f"flight-activity-{i}"}), range(IN_FLIGHT_COUNT)))
    before = histories(sfn, [record["arn"] for record in executions.values()])

    # A thread starting executions before, during and after the outage.
    stop_starting = threading.Event()
    during_failed: list[str] = []

    def keep_starting() -> None:
        for index in itertools.count():
            if stop_starting.is_set():
                return
            name = f"during-{index}"
            try:
                start("pass", name, {})
            except (CallFailed, ClientError) as error:
                during_failed.append(f"{name}: {error}")

    starter = threading.Thread(target=keep_starting, daemon=True)
    starter.start()
    time.sleep(0.5)

    # ---- the outage ----
    for server in cluster.nats:
        cluster.nats_kill(server.index)
    time.sleep(OUTAGE_S)
    for server in cluster.nats:
        cluster.nats_restart(server.index)
    restarted_at = time.monotonic()
    ready_s = cluster.wait_nats_ready()

    recovered_ms: dict[int, float] = {}

    def probe(partition: int) -> None:
        name = name_in_partition(machines.name("pass"), f"after-p{partition}", partition)
        arn = start("pass", name, {"partition": partition})
        while time.monotonic() - restarted_at < RECOVERY_S_MAX:
            if sfn.call("describe_execution", executionArn=arn)[0]["status"] == "SUCCEEDED":
                recovered_ms[partition] = (time.monotonic() - restarted_at) * 1000
                return
            time.sleep(0.05)

    with ThreadPoolExecutor(cluster.partitions) as pool:
        list(pool.map(probe, range(cluster.partitions)))
    stop_starting.set()
    starter.join(120)
    assert sorted(recovered_ms) == list(range(cluster.partitions)), (
        f"partitions {sorted(set(range(cluster.partitions)) - set(recovered_ms))} ran no new execution within {RECOVERY_S_MAX} s"
    )

    answerer = TokenAnswerer(sfn)
    workers = ActivityWorkers(sfn, machines.activity_arn, threads=2)
    answerer.begin()
    workers.begin()
    for name, record in list(executions.items()):
        if record["kind"] == "token":
            answerer.add(name, record["arn"])
    closed = wait_closed(sfn, [record["arn"] for record in executions.values()], RECOVERY_S_MAX)
    answerer.stop.set()
    workers.stop.set()

    problems: list[str] = [f"start during the outage not acknowledged: {failure}" for failure in during_failed]
    problems += [f"{arn}: {answer['status']}" for arn, answer in closed.items() if answer["status"] != "SUCCEEDED"]
    after = histories(sfn, [record["arn"] for record in executions.values()])
    for name, record in executions.items():
        events = after[record["arn"]]
        problems += [f"{name}: {problem}" for problem in history_problems(record["kind"], events)]
        if record["arn"] in before:
            if record["arn"] in finished and before[record["arn"]] != events:
                problems.append(f"{name}: its finished history changed over the outage")
            elif not is_prefix(before[record["arn"]], events):
                problems.append(f"{name}: the history read before the outage is not a prefix of the one after: "
                                f"{[e['type'] for e in before[record['arn']]]} vs {[e['type'] for e in events]}")
        if record["kind"] == "token" and name in answerer.acknowledged:
            if output_of(events, "TaskSucceeded") != [json.loads(answerer.acknowledged[name])]:
                problems.append(f"{name}: acknowledged token answer not in its history")
        if record["kind"] == "activity" and name in workers.acknowledged:
            if output_of(events, "ActivitySucceeded") != [json.loads(workers.acknowledged[name])]:
                problems.append(f"{name}: acknowledged activity result not in its history")
    problems += answerer.problems + workers.problems

    during = sum(1 for name in executions if name.startswith("during-"))
    figures(
        f"all 3 NATS servers SIGKILLed, restarted after {OUTAGE_S} s; JetStream answered {ready_s:.2f} s after the restart; "
        f"an execution started in each partition SUCCEEDED after (ms, from the restart) "
        f"{ {p: round(ms) for p, ms in sorted(recovered_ms.items())} }"
    )
    figures(f"{during} starts acknowledged by the thread starting all along; re-sends: {dict(sfn.retries)}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])
