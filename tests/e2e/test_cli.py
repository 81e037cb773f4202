"""End-to-end tests of `statelog serve` through the real AWS clients (boto3 and the AWS CLI).

`run.sh` starts a development-mode server and sets STATELOG_ENDPOINT and STATELOG_BIN; the
`secured` fixture starts a second server with a credentials file (two accounts) to check SigV4
acceptance and rejection and account isolation. Executions here are Pass/Choice/Fail machines,
which the engine runs to the end inside StartExecution, so no test waits on the clock.
"""

import datetime
import json
import os
import signal
import subprocess
import tempfile
import uuid
from unittest import mock

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
BIN = os.environ.get("STATELOG_BIN")
REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

FIVE_PASS = {
    "StartAt": "P1",
    "States": {
        "P1": {"Type": "Pass", "Next": "P2"},
        "P2": {"Type": "Pass", "Result": {"step": 2}, "ResultPath": "$.two", "Next": "P3"},
        "P3": {"Type": "Pass", "Next": "P4"},
        "P4": {"Type": "Pass", "Next": "P5"},
        "P5": {"Type": "Pass", "End": True},
    },
}

CHOOSE = {
    "StartAt": "Check",
    "States": {
        "Check": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.amount", "NumericGreaterThan": 100, "Next": "Refuse"}],
            "Default": "Accept",
        },
        "Accept": {"Type": "Pass", "Result": "accepted", "End": True},
        "Refuse": {"Type": "Fail", "Error": "TooMuch", "Cause": "amount over 100"},
    },
}

WAIT = {"StartAt": "Sleep", "States": {"Sleep": {"Type": "Wait", "Seconds": 3600, "End": True}}}


def client(endpoint=None, key="test", secret="test"):
    return boto3.client(
        "stepfunctions",
        endpoint_url=endpoint or ENDPOINT,
        region_name=REGION,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def described_closed(sfn, arn):
    """Pass/Choice/Fail machines close inside StartExecution; a bounded re-read covers a slow host."""
    for _ in range(50):
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
    raise AssertionError(f"{arn} still RUNNING after 50 reads")


@pytest.fixture(scope="module")
def sfn():
    return client()


@pytest.fixture(scope="module")
def five(sfn):
    arn = sfn.create_state_machine(name=unique("five"), definition=json.dumps(FIVE_PASS), roleArn=ROLE)["stateMachineArn"]
    yield arn
    sfn.delete_state_machine(stateMachineArn=arn)


def test_state_machine_lifecycle(sfn):
    name = unique("life")
    created = sfn.create_state_machine(name=name, definition=json.dumps(FIVE_PASS), roleArn=ROLE)
    arn = created["stateMachineArn"]
    assert arn == f"arn:aws:states:{REGION}:000000000000:stateMachine:{name}"
    assert isinstance(created["creationDate"], datetime.datetime)
    described = sfn.describe_state_machine(stateMachineArn=arn)
    assert described["name"] == name
    assert json.loads(described["definition"]) == FIVE_PASS
    assert described["roleArn"] == ROLE
    assert described["type"] == "STANDARD"
    names = [m["name"] for m in sfn.get_paginator("list_state_machines").paginate().build_full_result()["stateMachines"]]
    assert name in names
    sfn.delete_state_machine(stateMachineArn=arn)
    with pytest.raises(ClientError) as excinfo:
        sfn.describe_state_machine(stateMachineArn=arn)
    assert error_code(excinfo) == "StateMachineDoesNotExist"


def test_execution_runs_and_its_history_reads_back(sfn, five):
    started = sfn.start_execution(stateMachineArn=five, name="run-1", input=json.dumps({"order": 7}))
    arn = started["executionArn"]
    assert arn.endswith(":run-1")
    described = described_closed(sfn, arn)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"order": 7, "two": {"step": 2}}
    assert described["stopDate"] >= described["startDate"]
    events = sfn.get_paginator("get_execution_history").paginate(executionArn=arn, maxResults=3).build_full_result()["events"]
    types = [e["type"] for e in events]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"
    assert types.count("PassStateEntered") == 5
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    reverse = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1)
    assert reverse["events"][0]["type"] == "ExecutionSucceeded"
    machine = sfn.describe_state_machine_for_execution(executionArn=arn)
    assert machine["stateMachineArn"] == five
    listed = sfn.list_executions(stateMachineArn=five, statusFilter="SUCCEEDED")["executions"]
    assert arn in [e["executionArn"] for e in listed]


def test_failed_execution_reports_error_and_cause(sfn):
    arn = sfn.create_state_machine(name=unique("choose"), definition=json.dumps(CHOOSE), roleArn=ROLE)["stateMachineArn"]
    ok = described_closed(sfn, sfn.start_execution(stateMachineArn=arn, input='{"amount": 5}')["executionArn"])
    assert ok["status"] == "SUCCEEDED" and ok["output"] == '"accepted"'
    bad = described_closed(sfn, sfn.start_execution(stateMachineArn=arn, input='{"amount": 500}')["executionArn"])
    assert bad["status"] == "FAILED"
    assert bad["error"] == "TooMuch" and bad["cause"] == "amount over 100"


def test_stop_execution(sfn):
    arn = sfn.create_state_machine(name=unique("wait"), definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
    stopped = sfn.stop_execution(executionArn=execution, error="Manual", cause="e2e")
    assert isinstance(stopped["stopDate"], datetime.datetime)
    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["error"], described["cause"]) == ("ABORTED", "Manual", "e2e")
    events = sfn.get_execution_history(executionArn=execution)["events"]
    assert events[-1]["type"] == "ExecutionAborted"


def test_validate_definition(sfn):
    assert sfn.validate_state_machine_definition(definition=json.dumps(FIVE_PASS))["result"] == "OK"
    answer = sfn.validate_state_machine_definition(definition='{"StartAt": "Nowhere", "States": {"A": {"Type": "Pass", "End": true}}}')
    assert answer["result"] == "FAIL"
    assert any(d["location"] == "/StartAt" for d in answer["diagnostics"]), answer["diagnostics"]


def test_bad_input_gets_named_errors(sfn, five):
    with pytest.raises(ClientError) as excinfo:
        sfn.create_state_machine(name=unique("bad"), definition='{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Gone"}}}', roleArn=ROLE)
    assert error_code(excinfo) == "InvalidDefinition"
    assert "/States/A/Next" in str(excinfo.value)
    with pytest.raises(ClientError) as excinfo:
        sfn.start_execution(stateMachineArn=five, input="{not json")
    assert error_code(excinfo) == "InvalidExecutionInput"
    with pytest.raises(ClientError) as excinfo:
        sfn.start_execution(stateMachineArn=five, input=json.dumps("x" * (256 * 1024)))
    assert error_code(excinfo) == "InvalidExecutionInput"
    with pytest.raises(ClientError) as excinfo:
        sfn.describe_execution(executionArn=five.replace(":stateMachine:", ":execution:") + ":ghost")
    assert error_code(excinfo) == "ExecutionDoesNotExist"
    with pytest.raises(ClientError) as excinfo:
        sfn.start_execution(stateMachineArn=five + "-ghost")
    assert error_code(excinfo) == "StateMachineDoesNotExist"
    with pytest.raises(ClientError) as excinfo:
        sfn.describe_execution(executionArn="not-an-arn")
    assert error_code(excinfo) == "InvalidArn"


def test_oversized_members_and_bodies_are_refused(sfn):
    # A definition one byte over its 1 MiB limit travels in a body the server reads (the body
    # limit admits every request whose members are within theirs): the member is refused.
    with pytest.raises(ClientError) as excinfo:
        sfn.create_state_machine(name=unique("huge"), definition="x" * (1024 * 1024 + 1), roleArn=ROLE)
    assert error_code(excinfo) == "InvalidDefinition"
    # A body past the request limit (6,850,432 bytes) is refused before it is read.
    with pytest.raises(ClientError) as excinfo:
        sfn.create_state_machine(name=unique("huge"), definition="x" * (7 * 1024 * 1024), roleArn=ROLE)
    assert error_code(excinfo) == "RequestEntityTooLargeException"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413


def test_every_operation_is_served_and_unknown_ones_are_named(sfn):
    # Every Step Functions operation is served now: a Map Run nobody started is not found.
    with pytest.raises(ClientError) as excinfo:
        sfn.describe_map_run(mapRunArn="arn:aws:states:us-east-1:000000000000:mapRun:x/y:z")
    assert error_code(excinfo) == "ResourceNotFound"
    assert "mapRun:x/y:z" in str(excinfo.value)
    answer = signed_post(ENDPOINT, "AWSStepFunctions.Frobnicate", b"{}", "test", "test")
    assert answer.status_code == 400
    assert answer.json()["__type"] == "UnknownOperationException"
    assert "Frobnicate" in answer.json()["message"]


def signed_post(endpoint, target, body, key, secret, when=None):
    request = botocore.awsrequest.AWSRequest(
        method="POST",
        url=endpoint + "/",
        data=body,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target},
    )
    signer = botocore.auth.SigV4Auth(botocore.credentials.Credentials(key, secret), "states", REGION)
    if when is None:
        signer.add_auth(request)
    else:
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            signer.add_auth(request)
    prepared = request.prepare()
    return requests.post(prepared.url, data=prepared.body, headers=dict(prepared.headers), timeout=30)


def test_aws_cli_lists_and_starts(five):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION=REGION)
    base = ["aws", "--endpoint-url", ENDPOINT, "--output", "json", "stepfunctions"]
    listed = json.loads(subprocess.run(base + ["list-state-machines"], env=env, check=True, capture_output=True, text=True).stdout)
    assert five in [m["stateMachineArn"] for m in listed["stateMachines"]]
    started = json.loads(subprocess.run(base + ["start-execution", "--state-machine-arn", five, "--input", '{"cli": true}'], env=env, check=True, capture_output=True, text=True).stdout)
    described = json.loads(subprocess.run(base + ["describe-execution", "--execution-arn", started["executionArn"]], env=env, check=True, capture_output=True, text=True).stdout)
    assert described["status"] == "SUCCEEDED"
    failed = subprocess.run(base + ["describe-execution", "--execution-arn", five.replace(":stateMachine:", ":execution:") + ":none"], env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "ExecutionDoesNotExist" in failed.stderr


def start_server(args):
    """Starts `statelog serve` with `args` on a free loopback port; returns (process, endpoint)."""
    process = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        raise AssertionError(f"server did not start: {line!r} {process.stderr.read()}")
    return process, line.split("listening on ", 1)[1].strip()


@pytest.fixture(scope="module")
def secured():
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data, tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as creds:
        json.dump(
            {
                "AKIDONE": {"secret_access_key": "one-secret/+", "account_id": "111111111111"},
                "AKIDTWO": {"secret_access_key": "two-secret", "account_id": "222222222222"},
            },
            creds,
        )
        creds.flush()
        # A free port for the metrics listener, so a server already on 9464 does not collide.
        process, endpoint = start_server(["--data-dir", data, "--credentials", creds.name, "--metrics-listen", "127.0.0.1:0"])
        try:
            yield endpoint
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, "graceful shutdown exits 0"
            os.unlink(creds.name)


def test_sigv4_accepted_and_rejected(secured):
    assert client(secured, "AKIDONE", "one-secret/+").list_state_machines()["stateMachines"] == []
    with pytest.raises(ClientError) as excinfo:
        client(secured, "AKIDONE", "wrong").list_state_machines()
    assert error_code(excinfo) == "InvalidSignatureException"
    with pytest.raises(ClientError) as excinfo:
        client(secured, "AKIDNOBODY", "one-secret/+").list_state_machines()
    assert error_code(excinfo) == "UnrecognizedClientException"
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    answer = signed_post(secured, "AWSStepFunctions.ListStateMachines", b"{}", "AKIDONE", "one-secret/+", when=old)
    assert answer.status_code == 403
    assert answer.json()["__type"] == "InvalidSignatureException"
    assert answer.json()["message"].startswith("Signature expired")
    unsigned = requests.post(secured + "/", data=b"{}", headers={"X-Amz-Target": "AWSStepFunctions.ListStateMachines", "Content-Type": "application/x-amz-json-1.0"}, timeout=30)
    assert unsigned.json()["__type"] == "MissingAuthenticationTokenException"


def test_accounts_are_isolated(secured):
    one = client(secured, "AKIDONE", "one-secret/+")
    two = client(secured, "AKIDTWO", "two-secret")
    arn_one = one.create_state_machine(name="same", definition=json.dumps(FIVE_PASS), roleArn=ROLE)["stateMachineArn"]
    arn_two = two.create_state_machine(name="same", definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
    assert ":111111111111:" in arn_one and ":222222222222:" in arn_two
    execution = one.start_execution(stateMachineArn=arn_one)["executionArn"]
    with pytest.raises(ClientError) as excinfo:
        two.describe_execution(executionArn=execution)
    assert error_code(excinfo) == "ExecutionDoesNotExist"
    assert [m["stateMachineArn"] for m in two.list_state_machines()["stateMachines"]] == [arn_two]


def regional_client(endpoint, region, key="test", secret="test"):
    return boto3.client(
        "stepfunctions",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def test_signatures_are_scoped_to_the_servers_region(secured):
    # botocore signs X-Amz-Target and Content-Type (all headers but a few), so it is served...
    assert client(secured, "AKIDONE", "one-secret/+").list_state_machines()["stateMachines"] is not None
    # ...but only for the server's region.
    with pytest.raises(ClientError) as excinfo:
        regional_client(secured, "xx-fake-9", "AKIDONE", "one-secret/+").list_state_machines()
    assert error_code(excinfo) == "InvalidSignatureException"
    assert "Credential should be scoped to a valid region" in excinfo.value.response["Error"]["Message"]


def test_another_accounts_arn_names_nothing_of_the_callers(secured):
    one = client(secured, "AKIDONE", "one-secret/+")
    mine = one.create_state_machine(name="base", definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
    for arn, code in [
        (mine.replace(":111111111111:", ":222222222222:"), "StateMachineDoesNotExist"),
        ("arn:stateMachine:base", "InvalidArn"),
        (mine.replace(":stateMachine:", ":activity:x:stateMachine:"), "InvalidArn"),
    ]:
        with pytest.raises(ClientError) as excinfo:
            one.start_execution(stateMachineArn=arn)
        assert error_code(excinfo) == code, arn
    assert one.list_executions(stateMachineArn=mine)["executions"] == []


def test_region_flag_sets_the_minted_arns_and_the_accepted_scope():
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        process, endpoint = start_server(["--data-dir", data, "--region", "eu-west-1"])
        try:
            arn = regional_client(endpoint, "eu-west-1").create_state_machine(name="m", definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
            assert arn == "arn:aws:states:eu-west-1:000000000000:stateMachine:m"
            with pytest.raises(ClientError) as excinfo:
                regional_client(endpoint, "us-east-1").list_state_machines()
            assert error_code(excinfo) == "InvalidSignatureException"
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0


def test_internal_failures_keep_the_detail_in_the_server_log():
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data, tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as creds:
        json.dump({"AKIDONE": {"secret_access_key": "s", "account_id": "111111111111"}}, creds)
        creds.flush()
        os.makedirs(os.path.join(data, "accounts"))
        # The account's data directory cannot be created: a file is in its place.
        with open(os.path.join(data, "accounts", "111111111111"), "w") as blocker:
            blocker.write("not a directory")
        process, endpoint = start_server(["--data-dir", data, "--credentials", creds.name])
        try:
            with pytest.raises(ClientError) as excinfo:
                client(endpoint, "AKIDONE", "s").list_state_machines()
            error = excinfo.value.response
            assert error["Error"]["Code"] == "InternalFailure"
            assert error["ResponseMetadata"]["HTTPStatusCode"] == 500
            assert "/" not in error["Error"]["Message"] and data not in error["Error"]["Message"]
            request_id = error["ResponseMetadata"]["RequestId"]
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
            os.unlink(creds.name)
        log = process.stderr.read()
        assert any("internal failure" in line and request_id in line and data in line for line in log.splitlines()), log


def test_development_mode_refuses_non_loopback():
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        result = subprocess.run([BIN, "serve", "--data-dir", data, "--listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "loopback" in result.stderr


def test_metrics_count_requests(sfn):
    sfn.list_state_machines()
    text = requests.get(ENDPOINT + "/metrics", timeout=30).text
    assert 'statelog_http_requests_total{operation="ListStateMachines",outcome="ok"}' in text
    assert "statelog_executions_open" in text


def test_sigkill_then_restart_keeps_acknowledged_executions():
    """Executions acknowledged by StartExecution survive a SIGKILL of the server: after a restart
    on the same data directory they are still RUNNING with the same contiguous history, and they
    can be stopped."""
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        process, endpoint = start_server(["--data-dir", data])
        try:
            sfn = client(endpoint)
            machine = sfn.create_state_machine(name="sleepy", definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
            arns = [sfn.start_execution(stateMachineArn=machine, name=f"w{i}", input=json.dumps({"i": i}))["executionArn"] for i in range(5)]
            before = {arn: sfn.get_execution_history(executionArn=arn)["events"] for arn in arns}
        finally:
            process.kill()
            process.wait(timeout=30)
        process, endpoint = start_server(["--data-dir", data])
        try:
            sfn = client(endpoint)
            for i, arn in enumerate(arns):
                described = sfn.describe_execution(executionArn=arn)
                assert described["status"] == "RUNNING"
                assert json.loads(described["input"]) == {"i": i}
                after = sfn.get_execution_history(executionArn=arn)["events"]
                assert [(e["id"], e["type"]) for e in after] == [(e["id"], e["type"]) for e in before[arn]]
                assert [e["id"] for e in after] == list(range(1, len(after) + 1))
            sfn.stop_execution(executionArn=arns[0], error="Restarted")
            assert sfn.describe_execution(executionArn=arns[0])["status"] == "ABORTED"
            running = sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"]
            assert sorted(e["name"] for e in running) == ["w1", "w2", "w3", "w4"]
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0


def test_task_token_operations_refuse_unknown_tokens(sfn):
    for call in (
        lambda: sfn.send_task_success(taskToken="not-a-token", output="{}"),
        lambda: sfn.send_task_failure(taskToken="not-a-token", error="E", cause="c"),
        lambda: sfn.send_task_heartbeat(taskToken="not-a-token"),
    ):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert error_code(excinfo) == "InvalidToken"


def test_redrive_a_failed_execution(sfn):
    arn = sfn.create_state_machine(name=unique("redrive"), definition=json.dumps(CHOOSE), roleArn=ROLE)["stateMachineArn"]
    ok = described_closed(sfn, sfn.start_execution(stateMachineArn=arn, input='{"amount": 5}')["executionArn"])
    with pytest.raises(ClientError) as excinfo:
        sfn.redrive_execution(executionArn=ok["executionArn"])
    assert error_code(excinfo) == "ExecutionNotRedrivable"
    bad = described_closed(sfn, sfn.start_execution(stateMachineArn=arn, input='{"amount": 500}')["executionArn"])
    assert bad["status"] == "FAILED" and bad["redriveCount"] == 0
    assert bad["redriveStatus"] == "REDRIVABLE"
    redriven = sfn.redrive_execution(executionArn=bad["executionArn"], clientToken="e2e-once")
    assert isinstance(redriven["redriveDate"], datetime.datetime)
    again = described_closed(sfn, bad["executionArn"])
    assert again["status"] == "FAILED" and again["redriveCount"] == 1
    assert "redriveDate" in again
    listed = sfn.list_executions(stateMachineArn=arn, redriveFilter="REDRIVEN")["executions"]
    assert [e["executionArn"] for e in listed] == [bad["executionArn"]]
    assert listed[0]["redriveCount"] == 1
    never = sfn.list_executions(stateMachineArn=arn, redriveFilter="NOT_REDRIVEN")["executions"]
    assert [e["executionArn"] for e in never] == [ok["executionArn"]]


def test_activity_worker_and_callback_round_trip(sfn):
    name = unique("act")
    activity = sfn.create_activity(name=name)["activityArn"]
    assert sfn.describe_activity(activityArn=activity)["name"] == name
    assert activity in [a["activityArn"] for a in sfn.list_activities(maxResults=1000)["activities"]]
    definition = {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": activity, "End": True}}}
    machine = sfn.create_state_machine(name=unique("worked"), definition=json.dumps(definition), roleArn=ROLE)["stateMachineArn"]
    ok_arn = sfn.start_execution(stateMachineArn=machine, input='{"n": 21}')["executionArn"]
    failed_arn = sfn.start_execution(stateMachineArn=machine, input='{"n": -1}')["executionArn"]
    # A long poll needs a read timeout above the 60 s the server may hold it.
    worker = boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, read_timeout=70),
    )
    for _ in range(2):
        task = worker.get_activity_task(activityArn=activity, workerName="e2e")
        token = task["taskToken"]
        n = json.loads(task["input"])["n"]
        worker.send_task_heartbeat(taskToken=token)
        if n < 0:
            worker.send_task_failure(taskToken=token, error="Negative", cause=f"n = {n}")
        else:
            worker.send_task_success(taskToken=token, output=json.dumps({"doubled": n * 2}))
    ok = described_closed(sfn, ok_arn)
    assert ok["status"] == "SUCCEEDED" and json.loads(ok["output"]) == {"doubled": 42}
    failed = described_closed(sfn, failed_arn)
    assert failed["status"] == "FAILED" and failed["error"] == "Negative"
    with pytest.raises(ClientError) as excinfo:
        sfn.send_task_success(taskToken=token, output="{}")
    assert error_code(excinfo) == "TaskTimedOut"
    sfn.delete_activity(activityArn=activity)
    with pytest.raises(ClientError) as excinfo:
        sfn.describe_activity(activityArn=activity)
    assert error_code(excinfo) == "ActivityDoesNotExist"


def swf_client():
    """An Amazon SWF client (SigV4 service `swf`) pointed at statelog; the read timeout is above
    the 60 s a PollForActivityTask may be held."""
    return boto3.client(
        "swf",
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, read_timeout=70),
    )


DEV_DOMAIN = "000000000000"  # the SWF domain is the caller's account id


def test_swf_worker_serves_a_task_list(sfn):
    activity = sfn.create_activity(name=unique("swf-act"))["activityArn"]
    task_list = unique("gpu")
    definition = {
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": activity, "TaskList": task_list, "End": True}},
    }
    machine = sfn.create_state_machine(name=unique("swf"), definition=json.dumps(definition), roleArn=ROLE)["stateMachineArn"]
    ok_arn = sfn.start_execution(stateMachineArn=machine, input='{"n": 21}')["executionArn"]
    failed_arn = sfn.start_execution(stateMachineArn=machine, input='{"n": -1}')["executionArn"]
    swf = swf_client()
    for _ in range(50):
        if swf.count_pending_activity_tasks(domain=DEV_DOMAIN, taskList={"name": task_list})["count"] == 2:
            break
    pending = swf.count_pending_activity_tasks(domain=DEV_DOMAIN, taskList={"name": task_list})
    assert pending["count"] == 2 and pending["truncated"] is False
    seen = set()
    for _ in range(2):
        task = swf.poll_for_activity_task(domain=DEV_DOMAIN, taskList={"name": task_list}, identity="swf-e2e")
        token = task["taskToken"]
        assert token
        assert task["activityType"]["name"] == activity.rsplit(":", 1)[1]
        seen.add(task["workflowExecution"]["runId"])
        n = json.loads(task["input"])["n"]
        assert swf.record_activity_task_heartbeat(taskToken=token, details="working")["cancelRequested"] is False
        if n < 0:
            swf.respond_activity_task_failed(taskToken=token, reason="Negative", details=f"n = {n}")
        else:
            swf.respond_activity_task_completed(taskToken=token, result=json.dumps({"doubled": n * 2}))
    assert seen == {ok_arn, failed_arn}
    ok = described_closed(sfn, ok_arn)
    assert ok["status"] == "SUCCEEDED" and json.loads(ok["output"]) == {"doubled": 42}
    failed = described_closed(sfn, failed_arn)
    assert failed["status"] == "FAILED" and failed["error"] == "Negative" and failed["cause"] == "n = -1"
    # A spent token, another domain and the account's domain as an SWF domain (none is
    # registered under that name, which is why the mapping serves it): SWF-shaped errors.
    with pytest.raises(ClientError) as excinfo:
        swf.respond_activity_task_completed(taskToken=token, result="{}")
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        swf.count_pending_activity_tasks(domain="someone-else", taskList={"name": task_list})
    assert error_code(excinfo) == "UnknownResourceFault"
    with pytest.raises(ClientError) as excinfo:
        swf.describe_domain(name=DEV_DOMAIN)
    assert error_code(excinfo) == "UnknownResourceFault"


def test_describe_execution_returns_the_input_as_sent(sfn):
    machine = sfn.create_state_machine(
        name=unique("asis"),
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn=ROLE,
    )["stateMachineArn"]
    sent = '{ "z" : [1,  2],\n  "a":\t{"y": true} }'
    arn = sfn.start_execution(stateMachineArn=machine, input=sent)["executionArn"]
    described = described_closed(sfn, arn)
    assert described["input"] == sent
    assert described["output"] == sent


def test_metrics_show_engine_counters(sfn, five):
    sfn.start_execution(stateMachineArn=five, input="{}")
    text = requests.get(ENDPOINT + "/metrics", timeout=30).text
    for family in (
        "statelog_executions_started_total",
        'statelog_executions_closed_total{account="000000000000",status="SUCCEEDED"}',
        "statelog_state_transitions_total",
        "statelog_wal_commits_total",
        'statelog_wal_commit_seconds_bucket{account="000000000000",le="+Inf"}',
        "# TYPE statelog_wal_commit_seconds histogram",
    ):
        assert family in text, family


def test_update_state_machine_keeps_running_executions_on_their_definition(sfn):
    machine = sfn.create_state_machine(name=unique("upd"), definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
    assert "revisionId" not in sfn.describe_state_machine(stateMachineArn=machine)
    old = sfn.start_execution(stateMachineArn=machine, name="old")["executionArn"]
    updated = sfn.update_state_machine(stateMachineArn=machine, definition=json.dumps(FIVE_PASS))
    assert isinstance(updated["updateDate"], datetime.datetime)
    revision = updated["revisionId"]
    assert sfn.describe_state_machine(stateMachineArn=machine)["revisionId"] == revision
    assert "revisionId" not in sfn.describe_state_machine_for_execution(executionArn=old)
    assert json.loads(sfn.describe_state_machine(stateMachineArn=machine)["definition"]) == FIVE_PASS
    for_old = sfn.describe_state_machine_for_execution(executionArn=old)
    assert json.loads(for_old["definition"]) == WAIT
    assert sfn.describe_execution(executionArn=old)["status"] == "RUNNING"
    new = described_closed(sfn, sfn.start_execution(stateMachineArn=machine, input='{"a": 1}')["executionArn"])
    assert new["status"] == "SUCCEEDED"
    for_new = sfn.describe_state_machine_for_execution(executionArn=new["executionArn"])
    assert json.loads(for_new["definition"]) == FIVE_PASS
    assert for_new["revisionId"] == revision
    role = "arn:aws:iam::000000000000:role/statelog-e2e-other"
    role_revision = sfn.update_state_machine(stateMachineArn=machine, roleArn=role)["revisionId"]
    assert role_revision != revision
    described = sfn.describe_state_machine(stateMachineArn=machine)
    assert (described["roleArn"], described["revisionId"]) == (role, role_revision)
    with pytest.raises(ClientError) as excinfo:
        sfn.update_state_machine(stateMachineArn=machine)
    assert error_code(excinfo) == "MissingRequiredParameter"
    with pytest.raises(ClientError) as excinfo:
        sfn.update_state_machine(stateMachineArn=machine, definition='{"StartAt": "Nowhere", "States": {}}')
    assert error_code(excinfo) == "InvalidDefinition"
    with pytest.raises(ClientError) as excinfo:
        sfn.update_state_machine(stateMachineArn=machine + "-missing", definition=json.dumps(FIVE_PASS))
    assert error_code(excinfo) == "StateMachineDoesNotExist"
    sfn.stop_execution(executionArn=old)


def test_tags_on_state_machines_and_activities(sfn):
    machine = sfn.create_state_machine(
        name=unique("tagged"), definition=json.dumps(FIVE_PASS), roleArn=ROLE, tags=[{"key": "team", "value": "a"}]
    )["stateMachineArn"]
    assert sfn.list_tags_for_resource(resourceArn=machine)["tags"] == [{"key": "team", "value": "a"}]
    sfn.tag_resource(resourceArn=machine, tags=[{"key": "team", "value": "b"}, {"key": "env", "value": ""}])
    sfn.untag_resource(resourceArn=machine, tagKeys=["env"])
    assert sfn.list_tags_for_resource(resourceArn=machine)["tags"] == [{"key": "team", "value": "b"}]
    activity = sfn.create_activity(name=unique("tagged-act"), tags=[{"key": "kind", "value": "gpu"}])["activityArn"]
    assert sfn.list_tags_for_resource(resourceArn=activity)["tags"] == [{"key": "kind", "value": "gpu"}]
    with pytest.raises(ClientError) as excinfo:
        sfn.tag_resource(resourceArn=machine, tags=[{"key": f"k{i}", "value": "v"} for i in range(50)])
    assert error_code(excinfo) == "TooManyTags"
    assert excinfo.value.response.get("resourceName") == machine
    with pytest.raises(ClientError) as excinfo:
        sfn.tag_resource(resourceArn=machine, tags=[{"key": "k" * 129, "value": "v"}])
    assert error_code(excinfo) == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        sfn.list_tags_for_resource(resourceArn=f"arn:aws:states:{REGION}:000000000000:activity:{unique('none')}")
    assert error_code(excinfo) == "ResourceNotFound"
    sfn.delete_state_machine(stateMachineArn=machine)
    sfn.delete_activity(activityArn=activity)


def test_catalog_survives_a_sigkill_and_restart():
    """Activities, tags, an updated definition (with its revisionId) and a redrive client token are
    in the log: after a SIGKILL and a restart on the same data directory they answer as before."""
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        process, endpoint = start_server(["--data-dir", data])
        try:
            sfn = client(endpoint)
            activity = sfn.create_activity(name="kept", tags=[{"key": "kind", "value": "gpu"}])["activityArn"]
            machine = sfn.create_state_machine(name="choose", definition=json.dumps(FIVE_PASS), roleArn=ROLE)["stateMachineArn"]
            revision = sfn.update_state_machine(stateMachineArn=machine, definition=json.dumps(CHOOSE))["revisionId"]
            failed = described_closed(sfn, sfn.start_execution(stateMachineArn=machine, input='{"amount": 500}')["executionArn"])
            assert failed["status"] == "FAILED"
            first = sfn.redrive_execution(executionArn=failed["executionArn"], clientToken="e2e-restart")
        finally:
            process.kill()
            process.wait(timeout=30)
        process, endpoint = start_server(["--data-dir", data])
        try:
            sfn = client(endpoint)
            assert sfn.describe_activity(activityArn=activity)["name"] == "kept"
            assert sfn.list_tags_for_resource(resourceArn=activity)["tags"] == [{"key": "kind", "value": "gpu"}]
            described = sfn.describe_state_machine(stateMachineArn=machine)
            assert json.loads(described["definition"]) == CHOOSE
            assert described["revisionId"] == revision
            assert sfn.describe_state_machine_for_execution(executionArn=failed["executionArn"])["revisionId"] == revision
            again = sfn.redrive_execution(executionArn=failed["executionArn"], clientToken="e2e-restart")
            assert again["redriveDate"] == first["redriveDate"]
            assert sfn.describe_execution(executionArn=failed["executionArn"])["redriveCount"] == 1
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
