#!/usr/bin/env python3
"""The recorded service-integration cases of the conformance corpus, run over HTTP against
`statelog serve --mock-config`, each Task answered by a mock built from what AWS recorded.

    conformance_mocks.py CONFORMANCE_DIR build MOCK_FILE PLAN_FILE
        Picks the manifest's cases whose needs include lambda, sqs, sns or dynamodb and lie
        within {lambda, sqs, sns, dynamodb, jsonata, variables, input-placeholders}, and writes
        a Step Functions Local mock configuration (one state machine `conf-mock-<n>` per case,
        test case `Recorded`: each Task state's recorded TaskSucceeded/TaskFailed answers, in
        order, as invocations "0", "1", ...) and the plan (the cases, by machine name).
    conformance_mocks.py CONFORMANCE_DIR run ENDPOINT PLAN_FILE
        Against a server started with --mock-config MOCK_FILE: creates each machine, starts
        `stateMachineArn#Recorded`, waits for the end, reads the history and judges it with
        the official comparator (run.judge, as tests/conformance_judge.py does). Prints one
        line per case, then "N passed, M failed".

Inputs with recorder placeholders (`<lambda_function_name>`) are sent as they are: no mocked
service reads them, and the recording shows the same text where the input flows. One thing in
a definition is filled in: the template placeholder of a Lambda function's ARN, with the ARN the
recording shows the task called (in this server's region and account); and a machine is created
with the role its recording shows, where the recorder left a role ARN rather than its own
placeholder.
"""
import json
import os
import sys
import time

SERVICES = {"lambda", "sqs", "sns", "dynamodb"}
ALLOWED = SERVICES | {"jsonata", "variables", "input-placeholders"}
TEST_CASE = "Recorded"
# How long one execution may run before the case is an error (every answer is mocked: a case
# still running after this is stuck).
CASE_TIMEOUT_S = 30.0
# The template placeholder for a Lambda function's ARN, which the original tests filled in.
LAMBDA_PLACEHOLDER = "%LAMBDA_FUNCTION_ARN_LITERAL_PLACEHOLDER%"
# The recorder wrote every account id as this one; the server runs in development mode.
RECORDED_ACCOUNT = "111111111111"
ACCOUNT = "000000000000"
REGION = "us-east-1"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance_judge import compact  # noqa: E402  (the judge's own payload text rule)


def selected(cases):
    for index, case in enumerate(cases):
        needs = set(case["needs"])
        if needs & SERVICES and needs <= ALLOWED:
            yield index, case


def task_answers(events):
    """Each Task state's recorded answers, in order: state name -> [Return or Throw entry].

    An answer belongs to the state whose TaskStateEntered its previousEventId chain reaches
    (Parallel branches and Map iterations chain apart); in a recording whose Parallel events
    lost their ids, to the Task state entered last."""
    state_of = {}
    last_entered = None
    answers = {}
    for event in events:
        event_id = event.get("id")
        kind = event.get("type")
        if kind == "TaskStateEntered":
            state = event["stateEnteredEventDetails"]["name"]
            last_entered = state
        elif isinstance(event_id, int):
            state = state_of.get(event.get("previousEventId"), last_entered)
        else:
            state = last_entered
        if isinstance(event_id, int):
            state_of[event_id] = state
        if kind == "TaskSucceeded":
            output = event["taskSucceededEventDetails"].get("output")
            value = json.loads(output) if isinstance(output, str) else output
            answers.setdefault(state, []).append({"Return": value})
        elif kind == "TaskFailed":
            details = event["taskFailedEventDetails"]
            throw = {"Error": details.get("error", "")}
            if "cause" in details:
                throw["Cause"] = compact(details["cause"])
            answers.setdefault(state, []).append({"Throw": throw})
    return answers


def recorded_function_arn(events):
    """The Lambda function ARN the recording's first TaskScheduled called, back from the
    recorder's normalization into this server's partition, region and account."""
    for event in events:
        if event.get("type") != "TaskScheduled":
            continue
        parameters = event["taskScheduledEventDetails"].get("parameters")
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        name = parameters.get("FunctionName") if isinstance(parameters, dict) else None
        if isinstance(name, str) and ":function:" in name:
            return (name.replace("arn:<partition>:", "arn:aws:")
                    .replace("<region>", REGION)
                    .replace(RECORDED_ACCOUNT, ACCOUNT))
    return None


def definition_of(run, case):
    """The case's definition; a template's Lambda ARN placeholder becomes the ARN the
    recording shows the task called (the one substitution the recording makes unambiguous)."""
    text = json.dumps(run.case_definition(case))
    if LAMBDA_PLACEHOLDER in text:
        arn = recorded_function_arn(run.expected_events(case))
        if arn is not None:
            text = text.replace(LAMBDA_PLACEHOLDER, arn)
    return text


def role_of(run, case):
    """The role the machine is created with: the recording's, where the recorder left one
    other than its own placeholder (back in this server's partition and account), else the
    runner's."""
    for event in run.expected_events(case):
        if event.get("type") == "ExecutionStarted":
            role = event.get("executionStartedEventDetails", {}).get("roleArn")
            if isinstance(role, str) and role.startswith("arn:<partition>:iam::"):
                return role.replace("arn:<partition>:", "arn:aws:").replace(
                    RECORDED_ACCOUNT, ACCOUNT)
    return run.ROLE_ARN


def build(run, mock_file, plan_file):
    cases = run.load_manifest()["cases"]
    machines, responses, plan = {}, {}, []
    for index, case in selected(cases):
        machine = f"conf-mock-{index}"
        states = {}
        for state, answers in task_answers(run.expected_events(case)).items():
            response = f"{machine}-{len(states)}"
            responses[response] = {str(n): answer for n, answer in enumerate(answers)}
            states[state] = response
        machines[machine] = {"TestCases": {TEST_CASE: states}}
        plan.append({
            "id": case["id"],
            "machine": machine,
            "definition": definition_of(run, case),
            "role": role_of(run, case),
        })
    with open(mock_file, "w") as fh:
        json.dump({"StateMachines": machines, "MockedResponses": responses}, fh)
    with open(plan_file, "w") as fh:
        json.dump(plan, fh)
    print(f"{len(plan)} cases, {len(responses)} mocked responses")
    return 0


def run_one(run, client, case, machine, definition, role):
    created = client.create_state_machine(name=machine, definition=definition, roleArn=role)
    sm_arn = created["stateMachineArn"]
    started = client.start_execution(stateMachineArn=f"{sm_arn}#{TEST_CASE}", input=case["input"])
    exec_arn = started["executionArn"]
    deadline = time.monotonic() + CASE_TIMEOUT_S
    status = "RUNNING"
    while time.monotonic() < deadline:
        status = client.describe_execution(executionArn=exec_arn)["status"]
        if status != "RUNNING":
            break
        time.sleep(0.05)
    if status == "RUNNING":
        return "ERROR", f"still RUNNING after {CASE_TIMEOUT_S}s"
    events, token = [], None
    while True:
        kw = {"executionArn": exec_arn, "maxResults": 1000}
        if token:
            kw["nextToken"] = token
        page = client.get_execution_history(**kw)
        events.extend(page.get("events", []))
        token = page.get("nextToken")
        if not token:
            break
    ctx = run.LiveContext(sm_arn, exec_arn, run.ROLE_ARN)
    return run.judge(case, events, ctx, status, False)


def run_plan(run, endpoint, plan_file):
    by_id = {case["id"]: case for case in run.load_manifest()["cases"]}
    with open(plan_file) as fh:
        plan = json.load(fh)
    client = run.make_client(endpoint)
    passed = failed = 0
    for item in plan:
        case = by_id[item["id"]]
        try:
            verdict, why = run_one(
                run, client, case, item["machine"], item["definition"], item["role"])
        except Exception as exc:  # a refused call is a failed case, not a crash of the run
            verdict, why = "ERROR", repr(exc)
        if verdict == "PASS":
            passed += 1
            print(f"PASS {case['id']}")
        else:
            failed += 1
            print(f"{verdict} {case['id']} :: {why}")
    print(f"{passed} passed, {failed} failed")
    return 0


def main() -> int:
    if len(sys.argv) != 5 or sys.argv[2] not in ("build", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    conformance_dir, mode = sys.argv[1], sys.argv[2]
    sys.path.insert(0, conformance_dir)
    import run  # noqa: E402  (the official runner: manifest, definitions, client, judge)

    if mode == "build":
        return build(run, sys.argv[3], sys.argv[4])
    return run_plan(run, sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    sys.exit(main())
