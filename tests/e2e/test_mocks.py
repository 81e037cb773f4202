"""`statelog serve --mock-config` through boto3 and the AWS CLI: a Step Functions Local mock
configuration, test cases started as `stateMachineArn#TestCase`, and the histories they give.

The module starts its own server (STATELOG_BIN) with the mock file; the mocked tasks answer at
once, so the executions close within a few reads. Retries wait 1 s of real time (the smallest
IntervalSeconds) in the retry path only.
"""

import json
import os
import signal
import subprocess
import tempfile
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

BIN = os.environ.get("STATELOG_BIN")
REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not BIN, reason="STATELOG_BIN not set (run tests/e2e/run.sh)")

MACHINE = "LambdaSQSIntegration"

MOCKS = {
    "StateMachines": {
        MACHINE: {
            "TestCases": {
                "HappyPath": {"LambdaState": "MockedLambdaSuccess", "SQSState": "MockedSQSSuccess"},
                "RetryPath": {"LambdaState": "MockedLambdaRetry", "SQSState": "MockedSQSSuccess"},
                "CaughtPath": {"LambdaState": "MockedLambdaDown"},
            }
        }
    },
    "MockedResponses": {
        "MockedLambdaSuccess": {"0": {"Return": {"StatusCode": 200, "Payload": {"body": "Hello from Lambda!"}}}},
        "MockedSQSSuccess": {"0": {"Return": {"MD5OfMessageBody": "3bcb6e8e", "MessageId": "3bcb6e8e-8b51"}}},
        "MockedLambdaRetry": {
            "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "Lambda resource is not ready."}},
            "1": {"Return": {"StatusCode": 200, "Payload": {"body": "Hello again"}}},
        },
        "MockedLambdaDown": {"0-9": {"Throw": {"Error": "Lambda.ServiceException", "Cause": "down"}}},
    },
}

DEFINITION = {
    "StartAt": "LambdaState",
    "States": {
        "LambdaState": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "HelloFunction", "Payload.$": "$"},
            "ResultSelector": {"body.$": "$.Payload.body"},
            "Retry": [{"ErrorEquals": ["Lambda.ResourceNotReadyException"], "IntervalSeconds": 1, "MaxAttempts": 2}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Down"}],
            "Next": "SQSState",
        },
        "SQSState": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/000000000000/q", "MessageBody.$": "$.body"},
            "End": True,
        },
        "Down": {"Type": "Pass", "Result": "handled", "End": True},
    },
}


@pytest.fixture(scope="module")
def mocked():
    """A server with the mock file; yields (client, endpoint, machine ARN)."""
    with tempfile.TemporaryDirectory() as data:
        mock_file = os.path.join(data, "MockConfigFile.json")
        with open(mock_file, "w") as fh:
            json.dump(MOCKS, fh)
        process = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(data, "data"), "--mock-config", mock_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            process.kill()
            raise AssertionError(f"server did not start: {line!r} {process.stderr.read()}")
        endpoint = line.split("listening on ", 1)[1].strip()
        sfn = boto3.client(
            "stepfunctions", endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id="test", aws_secret_access_key="test", config=Config(retries={"max_attempts": 1}),
        )
        arn = sfn.create_state_machine(name=MACHINE, definition=json.dumps(DEFINITION), roleArn=ROLE)["stateMachineArn"]
        try:
            yield sfn, endpoint, arn
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, "graceful shutdown exits 0"


def closed(sfn, arn, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"{arn} still RUNNING after {seconds} s")


def history(sfn, arn):
    return sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]


def test_happy_path_gives_the_mocked_services_history(mocked):
    sfn, _, machine = mocked
    started = sfn.start_execution(stateMachineArn=f"{machine}#HappyPath", name="happy", input='{"order": 7}')
    assert started["executionArn"] == f"arn:aws:states:{REGION}:000000000000:execution:{MACHINE}:happy"
    described = closed(sfn, started["executionArn"])
    assert described["status"] == "SUCCEEDED"
    assert described["stateMachineArn"] == machine
    assert json.loads(described["output"]) == {"MD5OfMessageBody": "3bcb6e8e", "MessageId": "3bcb6e8e-8b51"}
    events = history(sfn, started["executionArn"])
    assert [e["type"] for e in events] == [
        "ExecutionStarted",
        "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
        "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
        "ExecutionSucceeded",
    ]
    scheduled = events[2]["taskScheduledEventDetails"]
    assert (scheduled["resourceType"], scheduled["resource"]) == ("lambda", "invoke")
    assert json.loads(scheduled["parameters"]) == {"FunctionName": "HelloFunction", "Payload": {"order": 7}}
    assert json.loads(events[4]["taskSucceededEventDetails"]["output"]) == MOCKS["MockedResponses"]["MockedLambdaSuccess"]["0"]["Return"]
    assert events[9]["taskSucceededEventDetails"]["resourceType"] == "sqs"


def test_throws_are_retried_and_caught(mocked):
    sfn, _, machine = mocked
    retried = sfn.start_execution(stateMachineArn=f"{machine}#RetryPath")["executionArn"]
    assert closed(sfn, retried)["status"] == "SUCCEEDED"
    failed = [e["taskFailedEventDetails"] for e in history(sfn, retried) if e["type"] == "TaskFailed"]
    assert failed == [{
        "resourceType": "lambda", "resource": "invoke",
        "error": "Lambda.ResourceNotReadyException", "cause": "Lambda resource is not ready.",
    }]
    caught = sfn.start_execution(stateMachineArn=f"{machine}#CaughtPath")["executionArn"]
    described = closed(sfn, caught)
    assert described["status"] == "SUCCEEDED"
    assert described["output"] == '"handled"'


def test_unknown_test_case_is_invalid_arn(mocked):
    sfn, _, machine = mocked
    with pytest.raises(ClientError) as excinfo:
        sfn.start_execution(stateMachineArn=f"{machine}#NoSuchCase")
    assert excinfo.value.response["Error"]["Code"] == "InvalidArn"
    assert "NoSuchCase" in excinfo.value.response["Error"]["Message"]


def test_aws_cli_starts_a_test_case(mocked):
    _, endpoint, machine = mocked
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION=REGION)
    base = ["aws", "--endpoint-url", endpoint, "stepfunctions"]
    started = json.loads(subprocess.run(
        base + ["start-execution", "--state-machine-arn", f"{machine}#HappyPath", "--name", "from-cli"],
        env=env, check=True, capture_output=True, text=True).stdout)
    assert started["executionArn"].endswith(f":execution:{MACHINE}:from-cli")


def test_a_malformed_mock_file_is_a_startup_error():
    with tempfile.TemporaryDirectory() as data:
        mock_file = os.path.join(data, "MockConfigFile.json")
        with open(mock_file, "w") as fh:
            json.dump({"StateMachines": {MACHINE: {"TestCases": {"C": {"S": "Missing"}}}}, "MockedResponses": {}}, fh)
        done = subprocess.run(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(data, "data"), "--mock-config", mock_file],
            capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 2
    assert f"mock configuration at $.StateMachines.{MACHINE}.TestCases.C.S: no mocked response named 'Missing'" in done.stderr
