"""State machine versions and aliases through boto3 against `statelog serve` (started by run.sh).

Publish on create and update, an alias routing to two versions by weight, starts through the
alias (each execution shows the version drawn and the alias), an alias update that leaves a
running execution on its version, and a version in use by an alias refused deletion with
ConflictException. The Wait machine keeps its executions running (they are stopped at the end);
the Pass machine closes inside StartExecution.
"""

import json
import os
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")

WAIT = {"StartAt": "Sleep", "States": {"Sleep": {"Type": "Wait", "Seconds": 3600, "End": True}}}
PASS = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"v": 2}, "End": True}}}


@pytest.fixture(scope="module")
def sfn():
    return boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}),
    )


def test_versions_and_a_weighted_alias(sfn):
    name = f"versioned-{uuid.uuid4().hex[:10]}"
    created = sfn.create_state_machine(
        name=name, definition=json.dumps(WAIT), roleArn=ROLE, publish=True, versionDescription="waits"
    )
    machine = created["stateMachineArn"]
    v1 = created["stateMachineVersionArn"]
    assert v1 == f"{machine}:1"
    updated = sfn.update_state_machine(stateMachineArn=machine, definition=json.dumps(PASS), publish=True)
    v2 = updated["stateMachineVersionArn"]
    assert v2 == f"{machine}:2"
    assert sfn.publish_state_machine_version(stateMachineArn=machine)["stateMachineVersionArn"] == v2
    listed = sfn.list_state_machine_versions(stateMachineArn=machine)["stateMachineVersions"]
    assert [v["stateMachineVersionArn"] for v in listed] == [v2, v1]
    described = sfn.describe_state_machine(stateMachineArn=v1)
    assert json.loads(described["definition"]) == WAIT
    assert described["description"] == "waits"

    alias = sfn.create_state_machine_alias(
        name="split",
        description="half and half",
        routingConfiguration=[
            {"stateMachineVersionArn": v1, "weight": 50},
            {"stateMachineVersionArn": v2, "weight": 50},
        ],
    )["stateMachineAliasArn"]
    assert alias == f"{machine}:split"
    shown = sfn.describe_state_machine_alias(stateMachineAliasArn=alias)
    assert [r["weight"] for r in shown["routingConfiguration"]] == [50, 50]
    assert [a["stateMachineAliasArn"] for a in sfn.list_state_machine_aliases(stateMachineArn=machine)["stateMachineAliases"]] == [alias]

    by_version = {v1: [], v2: []}
    for i in range(20):
        arn = sfn.start_execution(stateMachineArn=alias, name=f"e{i}")["executionArn"]
        d = sfn.describe_execution(executionArn=arn)
        assert d["stateMachineArn"] == machine
        assert d["stateMachineAliasArn"] == alias
        by_version[d["stateMachineVersionArn"]].append(arn)
    # Twenty draws at 50/50 all on one side: about two chances in a million.
    assert by_version[v1] and by_version[v2], by_version
    for arn in by_version[v2]:
        d = sfn.describe_execution(executionArn=arn)
        assert d["status"] == "SUCCEEDED"
        assert json.loads(d["output"]) == {"v": 2}
    history = sfn.get_execution_history(executionArn=by_version[v1][0])["events"]
    started = history[0]["executionStartedEventDetails"]
    assert started["stateMachineVersionArn"] == v1
    assert started["stateMachineAliasArn"] == alias

    # The alias moves to version 2 alone: what runs on version 1 stays there.
    sfn.update_state_machine_alias(
        stateMachineAliasArn=alias, routingConfiguration=[{"stateMachineVersionArn": v2, "weight": 100}]
    )
    for arn in by_version[v1]:
        d = sfn.describe_execution(executionArn=arn)
        assert d["status"] == "RUNNING"
        assert d["stateMachineVersionArn"] == v1
        ran = sfn.describe_state_machine_for_execution(executionArn=arn)
        assert json.loads(ran["definition"]) == WAIT
    listed = sfn.list_executions(stateMachineArn=v1)["executions"]
    assert sorted(e["executionArn"] for e in listed) == sorted(by_version[v1])

    # Version 2 is what the alias routes to: it cannot be deleted.
    with pytest.raises(ClientError) as excinfo:
        sfn.delete_state_machine_version(stateMachineVersionArn=v2)
    assert excinfo.value.response["Error"]["Code"] == "ConflictException"
    with pytest.raises(ClientError) as excinfo:
        sfn.create_state_machine_alias(
            name="bad", routingConfiguration=[
                {"stateMachineVersionArn": v1, "weight": 70},
                {"stateMachineVersionArn": v2, "weight": 29},
            ]
        )
    assert excinfo.value.response["Error"]["Code"] == "ValidationException"

    for arn in by_version[v1]:
        sfn.stop_execution(executionArn=arn)
    sfn.delete_state_machine_alias(stateMachineAliasArn=alias)
    sfn.delete_state_machine_version(stateMachineVersionArn=v2)
    sfn.delete_state_machine(stateMachineArn=machine)
