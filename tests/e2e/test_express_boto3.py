"""Express workflows through the real AWS clients (boto3 and the AWS CLI) against `statelog serve`.

botocore sends StartSyncExecution to the host `sync-<endpoint host>` (the operation's
`endpoint.hostPrefix`), also for an IP address: against `http://127.0.0.1:PORT` that host does not
resolve. A user of a custom endpoint turns the prefix off, as here: boto3 with
`Config(inject_host_prefix=False)`, the AWS CLI (and any SDK reading the shared config) with
`AWS_DISABLE_HOST_PREFIX_INJECTION=true` (or `disable_host_prefix_injection = true` in
~/.aws/config). `docs/serve.md` says the same.
"""

import json
import os
import subprocess
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

PASS_RESULT = {
    "StartAt": "State_1",
    "States": {"State_1": {"Type": "Pass", "Result": {"Arg1": "argument1"}, "End": True}},
}

RAISE_FAILURE = {
    "StartAt": "FailState",
    "States": {
        "FailState": {
            "Type": "Fail",
            "Error": "SomeFailure",
            "Cause": "This state machines raises a 'SomeFailure' failure.",
        }
    },
}


def client(inject_host_prefix=False):
    return boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, inject_host_prefix=inject_host_prefix),
    )


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


@pytest.fixture(scope="module")
def sfn():
    return client()


def express_machine(sfn, definition):
    return sfn.create_state_machine(
        name=unique("express"), definition=json.dumps(definition), roleArn=ROLE, type="EXPRESS"
    )["stateMachineArn"]


def test_express_machine_is_described_and_listed_with_its_type(sfn):
    arn = express_machine(sfn, PASS_RESULT)
    described = sfn.describe_state_machine(stateMachineArn=arn)
    assert described["type"] == "EXPRESS"
    listed = {m["stateMachineArn"]: m["type"] for m in sfn.list_state_machines()["stateMachines"]}
    assert listed[arn] == "EXPRESS"
    sfn.delete_state_machine(stateMachineArn=arn)


def test_start_sync_execution_answers_as_aws(sfn):
    arn = express_machine(sfn, PASS_RESULT)
    answer = sfn.start_sync_execution(stateMachineArn=arn, input="{}")
    assert answer["status"] == "SUCCEEDED"
    assert json.loads(answer["output"]) == {"Arg1": "argument1"}
    assert answer["input"] == "{}"
    assert answer["inputDetails"] == {"included": True}
    assert answer["outputDetails"] == {"included": True}
    assert answer["billingDetails"] == {"billedMemoryUsedInMB": 64, "billedDurationInMilliseconds": 100}
    assert answer["stateMachineArn"] == arn
    machine_name = arn.split(":")[-1]
    prefix = f"arn:aws:states:{REGION}:000000000000:express:{machine_name}:{answer['name']}:"
    assert answer["executionArn"].startswith(prefix)
    assert answer["stopDate"] >= answer["startDate"]

    failing = express_machine(sfn, RAISE_FAILURE)
    failed = sfn.start_sync_execution(stateMachineArn=failing, name="run")
    assert failed["status"] == "FAILED"
    assert failed["error"] == "SomeFailure"
    assert failed["cause"] == "This state machines raises a 'SomeFailure' failure."
    assert "output" not in failed


def test_express_executions_are_not_described_listed_or_stopped(sfn):
    arn = express_machine(sfn, PASS_RESULT)
    first = sfn.start_execution(stateMachineArn=arn, name="same")["executionArn"]
    second = sfn.start_execution(stateMachineArn=arn, name="same")["executionArn"]
    assert first != second, "an Express name is not unique"
    assert ":express:" in first
    for call in (
        lambda: sfn.describe_execution(executionArn=first),
        lambda: sfn.get_execution_history(executionArn=first),
        lambda: sfn.stop_execution(executionArn=first),
    ):
        with pytest.raises(ClientError) as excinfo:
            call()
        assert error_code(excinfo) == "InvalidArn"
        assert "Resource type not valid in this context: express" in str(excinfo.value)
    with pytest.raises(ClientError) as excinfo:
        sfn.list_executions(stateMachineArn=arn)
    assert error_code(excinfo) == "StateMachineTypeNotSupported"


def test_standard_machine_refuses_sync_and_express_refuses_callbacks(sfn):
    standard = sfn.create_state_machine(name=unique("standard"), definition=json.dumps(PASS_RESULT), roleArn=ROLE)[
        "stateMachineArn"
    ]
    with pytest.raises(ClientError) as excinfo:
        sfn.start_sync_execution(stateMachineArn=standard)
    assert error_code(excinfo) == "StateMachineTypeNotSupported"
    callback = {
        "StartAt": "Publish",
        "States": {
            "Publish": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish.waitForTaskToken", "End": True}
        },
    }
    with pytest.raises(ClientError) as excinfo:
        express_machine(sfn, callback)
    assert error_code(excinfo) == "InvalidDefinition"
    assert ".waitForTaskToken" in str(excinfo.value)


def test_the_default_host_prefix_does_not_reach_an_ip_endpoint():
    """What a user sees without turning the prefix off: botocore asks for `sync-127.0.0.1`."""
    if "127.0.0.1" not in ENDPOINT:
        pytest.skip("the endpoint is not an IP address")
    plain = client(inject_host_prefix=True)
    arn = express_machine(plain, PASS_RESULT)
    with pytest.raises(EndpointConnectionError) as excinfo:
        plain.start_sync_execution(stateMachineArn=arn)
    assert "sync-127.0.0.1" in str(excinfo.value)


def test_aws_cli_starts_a_sync_execution_with_the_prefix_turned_off(sfn):
    arn = express_machine(sfn, PASS_RESULT)
    env = dict(
        os.environ,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_DEFAULT_REGION=REGION,
        AWS_DISABLE_HOST_PREFIX_INJECTION="true",
    )
    base = ["aws", "--endpoint-url", ENDPOINT, "--output", "json", "stepfunctions"]
    result = subprocess.run(
        base + ["start-sync-execution", "--state-machine-arn", arn, "--input", '{"cli": true}'],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["status"] == "SUCCEEDED"
    assert json.loads(answer["output"]) == {"Arg1": "argument1"}
