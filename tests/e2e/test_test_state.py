"""TestState through boto3's `test_state` against `statelog serve` (run.sh starts it): boto3
checks the request and answer shapes against its own service model, so every field name here
is AWS's. The client is made with `inject_host_prefix=False`: botocore sends TestState to the
endpoint's `sync-` host, which a loopback endpoint does not have. One test per kind of answer: DEBUG inspection data, a Choice's next state, a mocked
Task's retry and catch, a whole machine's named state, variables, and the refusals.
"""

import json
import os

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

LAMBDA = "arn:aws:states:::lambda:invoke"


@pytest.fixture(scope="module")
def sfn():
    return boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        # botocore sends TestState to the `sync-` host of the endpoint (as StartSyncExecution);
        # a local endpoint has no such host, so the prefix is turned off.
        config=Config(retries={"max_attempts": 1}, inject_host_prefix=False),
    )


def test_debug_shows_each_data_flow_step(sfn):
    state = {
        "Type": "Pass",
        "InputPath": "$.data",
        "Parameters": {"kept.$": "$.keep"},
        "ResultPath": "$.result",
        "Next": "After",
    }
    answer = sfn.test_state(
        definition=json.dumps(state),
        input=json.dumps({"data": {"keep": 1, "drop": 2}}),
        inspectionLevel="DEBUG",
    )
    assert answer["status"] == "SUCCEEDED"
    assert answer["nextState"] == "After"
    assert json.loads(answer["output"]) == {"data": {"keep": 1, "drop": 2}, "result": {"kept": 1}}
    data = answer["inspectionData"]
    assert json.loads(data["input"]) == {"data": {"keep": 1, "drop": 2}}
    assert json.loads(data["afterInputPath"]) == {"keep": 1, "drop": 2}
    assert json.loads(data["afterParameters"]) == {"kept": 1}
    assert json.loads(data["afterResultSelector"]) == {"kept": 1}
    assert json.loads(data["afterResultPath"]) == {"data": {"keep": 1, "drop": 2}, "result": {"kept": 1}}


def test_info_answers_a_choice_without_inspection_data(sfn):
    state = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.cost", "NumericLessThan": 10, "Next": "Approved"}],
        "Default": "Ask",
    }
    small = sfn.test_state(definition=json.dumps(state), input='{"cost": 9}')
    assert small["nextState"] == "Approved"
    assert "inspectionData" not in small
    large = sfn.test_state(definition=json.dumps(state), input='{"cost": 10}', inspectionLevel="INFO")
    assert large["nextState"] == "Ask"


def test_a_mocked_error_is_retriable_then_caught(sfn):
    state = {
        "Type": "Task",
        "QueryLanguage": "JSONata",
        "Resource": LAMBDA,
        "Arguments": {"FunctionName": "f", "Payload": "{% $states.input.n %}"},
        "Retry": [{"ErrorEquals": ["Mock.Error"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2.0}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": "Recover"}],
        "End": True,
    }
    mock = {"errorOutput": {"error": "Mock.Error", "cause": "mocked"}}
    retriable = sfn.test_state(
        definition=json.dumps(state),
        roleArn=ROLE,
        input='{"n": 7}',
        inspectionLevel="DEBUG",
        mock=mock,
        stateConfiguration={"retrierRetryCount": 2},
    )
    assert retriable["status"] == "RETRIABLE"
    assert retriable["error"] == "Mock.Error"
    assert retriable["cause"] == "mocked"
    assert retriable["inspectionData"]["errorDetails"] == {"retryIndex": 0, "retryBackoffIntervalSeconds": 4}
    assert json.loads(retriable["inspectionData"]["afterArguments"]) == {"FunctionName": "f", "Payload": 7}
    caught = sfn.test_state(
        definition=json.dumps(state),
        roleArn=ROLE,
        input='{"n": 7}',
        inspectionLevel="TRACE",
        mock=mock,
        stateConfiguration={"retrierRetryCount": 3},
    )
    assert caught["status"] == "CAUGHT_ERROR"
    assert caught["nextState"] == "Recover"
    assert json.loads(caught["output"]) == {"Error": "Mock.Error", "Cause": "mocked"}
    assert caught["inspectionData"]["errorDetails"] == {"retryIndex": 0, "catchIndex": 0}


def test_a_mocked_result_and_variables(sfn):
    state = {
        "Type": "Task",
        "QueryLanguage": "JSONata",
        "Resource": LAMBDA,
        "Arguments": {"Payload": "{% $base %}"},
        "Assign": {"seen": "{% $states.result.Payload %}"},
        "Output": "{% $states.result.Payload + $base %}",
        "End": True,
    }
    answer = sfn.test_state(
        definition=json.dumps(state),
        roleArn=ROLE,
        input="{}",
        variables=json.dumps({"base": 5}),
        inspectionLevel="DEBUG",
        mock={"result": json.dumps({"Payload": 10}), "fieldValidationMode": "NONE"},
    )
    assert answer["status"] == "SUCCEEDED"
    assert json.loads(answer["output"]) == 15
    assert json.loads(answer["inspectionData"]["result"]) == {"Payload": 10}
    assert json.loads(answer["inspectionData"]["variables"]) == {"base": 5, "seen": 10}
    assert "nextState" not in answer


def test_a_whole_machine_is_tested_at_the_named_state(sfn):
    machine = {
        "StartAt": "First",
        "States": {
            "First": {"Type": "Pass", "Next": "Stop"},
            "Stop": {"Type": "Fail", "Error": "Stopped", "Cause": "by the test"},
        },
    }
    answer = sfn.test_state(definition=json.dumps(machine), stateName="Stop", input="{}")
    assert answer["status"] == "FAILED"
    assert answer["error"] == "Stopped"
    assert answer["cause"] == "by the test"
    with pytest.raises(ClientError) as missing:
        sfn.test_state(definition=json.dumps(machine), stateName="Elsewhere", input="{}")
    assert missing.value.response["Error"]["Code"] == "ValidationException"


def test_refusals_carry_aws_error_names(sfn):
    pass_state = json.dumps({"Type": "Pass", "End": True})
    with pytest.raises(ClientError) as mocked_pass:
        sfn.test_state(definition=pass_state, mock={"result": "{}"})
    assert mocked_pass.value.response["Error"]["Code"] == "ValidationException"
    assert "not supported when a mock is specified" in mocked_pass.value.response["Error"]["Message"]
    with pytest.raises(sfn.exceptions.InvalidDefinition):
        sfn.test_state(definition=json.dumps({"Type": "Nope"}))
    with pytest.raises(sfn.exceptions.InvalidExecutionInput):
        sfn.test_state(definition=pass_state, input="{not json")
    parallel = {"Type": "Parallel", "End": True, "Branches": [{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}]}
    with pytest.raises(sfn.exceptions.InvalidDefinition):
        sfn.test_state(definition=json.dumps(parallel))
    unmocked_task = json.dumps({"Type": "Task", "Resource": LAMBDA, "End": True})
    with pytest.raises(ClientError) as needs_mock:
        sfn.test_state(definition=unmocked_task, roleArn=ROLE)
    assert needs_mock.value.response["Error"]["Code"] == "ValidationException"
