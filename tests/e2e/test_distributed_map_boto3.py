"""Distributed Map through boto3 against `statelog serve`: a Map Run's children are executions of
the account (ListExecutions by mapRunArn, DescribeExecution), ListMapRuns, DescribeMapRun and
UpdateMapRun answer in AWS's shapes, and stopping the parent aborts the run and its children."""

import json
import os
import time
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
# The server's --objects-dir (a bucket is a directory under it); run.sh sets it.
OBJECTS_DIR = os.environ.get("STATELOG_OBJECTS_DIR")
REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")


def client():
    return boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}),
    )


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def distributed(child_states, start_at, extra=None):
    state = {
        "Type": "Map",
        "ItemsPath": "$.items",
        "Label": "Lab",
        "MaxConcurrency": 2,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": start_at,
            "States": child_states,
        },
        "End": True,
    }
    state.update(extra or {})
    return {"StartAt": "M", "States": {"M": state}}


def wait_closed(sfn, arn, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"{arn} still running after {seconds} s")


def test_a_map_run_is_listed_described_and_its_children_are_executions():
    sfn = client()
    definition = distributed({"P": {"Type": "Pass", "End": True}}, "P")
    machine = sfn.create_state_machine(name=unique("dmap"), definition=json.dumps(definition), roleArn=ROLE)
    started = sfn.start_execution(
        stateMachineArn=machine["stateMachineArn"], input=json.dumps({"items": [1, 2, 3, 4, 5]})
    )
    described = wait_closed(sfn, started["executionArn"])
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == [1, 2, 3, 4, 5]

    runs = sfn.list_map_runs(executionArn=started["executionArn"])["mapRuns"]
    assert len(runs) == 1
    map_run_arn = runs[0]["mapRunArn"]
    assert ":mapRun:" in map_run_arn and "/Lab:" in map_run_arn
    assert runs[0]["stateMachineArn"].endswith("/Lab")

    run = sfn.describe_map_run(mapRunArn=map_run_arn)
    assert run["status"] == "SUCCEEDED"
    assert run["executionArn"] == started["executionArn"]
    assert run["maxConcurrency"] == 2
    assert run["itemCounts"]["total"] == 5
    assert run["itemCounts"]["succeeded"] == 5
    assert run["executionCounts"]["succeeded"] == 5
    assert "stopDate" in run

    children = sfn.list_executions(mapRunArn=map_run_arn)["executions"]
    assert len(children) == 5
    for child in children:
        assert child["status"] == "SUCCEEDED"
        assert child["mapRunArn"] == map_run_arn
        assert ":execution:" in child["executionArn"] and "/Lab:" in child["executionArn"]
        described_child = sfn.describe_execution(executionArn=child["executionArn"])
        assert described_child["status"] == "SUCCEEDED"
        assert described_child["mapRunArn"] == map_run_arn
    # A child's machine names its Map Run and the Map's label; a parent's names neither.
    child_machine = sfn.describe_state_machine_for_execution(executionArn=children[0]["executionArn"])
    assert child_machine["mapRunArn"] == map_run_arn
    assert child_machine["label"] == "Lab"
    assert child_machine["stateMachineArn"].endswith("/Lab")
    parent_machine = sfn.describe_state_machine_for_execution(executionArn=started["executionArn"])
    assert "mapRunArn" not in parent_machine and "label" not in parent_machine
    assert "mapRunArn" not in sfn.describe_execution(executionArn=started["executionArn"])
    listed = sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]
    assert listed and all("mapRunArn" not in item for item in listed)
    page = sfn.list_executions(mapRunArn=map_run_arn, maxResults=2)
    assert len(page["executions"]) == 2 and "nextToken" in page

    # The parent's history holds the Map Run's events, none of its children's.
    types = [e["type"] for e in sfn.get_execution_history(executionArn=started["executionArn"])["events"]]
    assert types == [
        "ExecutionStarted",
        "MapStateEntered",
        "MapStateStarted",
        "MapRunStarted",
        "MapRunSucceeded",
        "MapStateSucceeded",
        "MapStateExited",
        "ExecutionSucceeded",
    ]


def test_update_map_run_while_running_and_stop_aborts_the_run():
    sfn = client()
    definition = distributed({"W": {"Type": "Wait", "Seconds": 600, "End": True}}, "W")
    machine = sfn.create_state_machine(name=unique("dmap-wait"), definition=json.dumps(definition), roleArn=ROLE)
    started = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input=json.dumps({"items": [1, 2, 3]}))
    deadline = time.monotonic() + 30
    runs = []
    while not runs and time.monotonic() < deadline:
        runs = sfn.list_map_runs(executionArn=started["executionArn"])["mapRuns"]
        time.sleep(0.05)
    map_run_arn = runs[0]["mapRunArn"]
    while sfn.describe_map_run(mapRunArn=map_run_arn)["executionCounts"]["running"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    running = sfn.describe_map_run(mapRunArn=map_run_arn)
    assert running["status"] == "RUNNING"
    assert running["executionCounts"]["running"] == 2, "MaxConcurrency 2"
    assert running["executionCounts"]["pending"] == 1

    sfn.update_map_run(mapRunArn=map_run_arn, maxConcurrency=3, toleratedFailureCount=1)
    while sfn.describe_map_run(mapRunArn=map_run_arn)["executionCounts"]["running"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    updated = sfn.describe_map_run(mapRunArn=map_run_arn)
    assert updated["maxConcurrency"] == 3
    assert updated["toleratedFailureCount"] == 1

    with pytest.raises(ClientError) as refused:
        sfn.update_map_run(mapRunArn=map_run_arn, toleratedFailurePercentage=101)
    assert refused.value.response["Error"]["Code"] == "ValidationException"

    sfn.stop_execution(executionArn=started["executionArn"])
    assert sfn.describe_map_run(mapRunArn=map_run_arn)["status"] == "ABORTED"
    children = sfn.list_executions(mapRunArn=map_run_arn)["executions"]
    assert len(children) == 3
    for child in children:
        assert wait_closed(sfn, child["executionArn"])["status"] == "ABORTED"


def test_map_run_errors_are_aws_names():
    sfn = client()
    with pytest.raises(ClientError) as missing:
        sfn.describe_map_run(
            mapRunArn=f"arn:aws:states:{REGION}:000000000000:mapRun:{unique('nothing')}/L:00000000-0000-4000-a000-000000000000"
        )
    assert missing.value.response["Error"]["Code"] == "ResourceNotFound"
    with pytest.raises(ClientError) as invalid:
        sfn.describe_map_run(mapRunArn="arn:aws:states:us-east-1:000000000000:mapRun:nolabel")
    assert invalid.value.response["Error"]["Code"] == "InvalidArn"


@pytest.mark.skipif(not OBJECTS_DIR, reason="STATELOG_OBJECTS_DIR not set (run tests/e2e/run.sh)")
def test_item_reader_and_result_writer_over_the_servers_object_store():
    sfn = client()
    bucket = unique("bucket")
    os.makedirs(os.path.join(OBJECTS_DIR, bucket))
    with open(os.path.join(OBJECTS_DIR, bucket, "items.jsonl"), "w") as items:
        for n in range(40):
            items.write(json.dumps({"n": n}) + "\n")
    definition = {
        "StartAt": "M",
        "States": {
            "M": {
                "Type": "Map",
                "MaxConcurrency": 8,
                "ItemReader": {
                    "Resource": "arn:aws:states:::s3:getObject",
                    "Parameters": {"Bucket": bucket, "Key": "items.jsonl"},
                    "ReaderConfig": {"InputType": "JSONL"},
                },
                "ResultWriter": {
                    "Resource": "arn:aws:states:::s3:putObject",
                    "Parameters": {"Bucket": bucket, "Prefix": "results"},
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                    "StartAt": "P",
                    "States": {"P": {"Type": "Pass", "End": True}},
                },
                "End": True,
            }
        },
    }
    machine = sfn.create_state_machine(name=unique("dmap-s3"), definition=json.dumps(definition), roleArn=ROLE)
    started = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input="{}")
    described = wait_closed(sfn, started["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    output = json.loads(described["output"])
    details = output["ResultWriterDetails"]
    assert details["Bucket"] == bucket
    with open(os.path.join(OBJECTS_DIR, bucket, details["Key"])) as manifest_file:
        manifest = json.load(manifest_file)
    assert manifest["MapRunArn"] == output["MapRunArn"]
    written = 0
    for entry in manifest["ResultFiles"]["SUCCEEDED"]:
        with open(os.path.join(OBJECTS_DIR, bucket, entry["Key"])) as results:
            written += len(json.load(results))
    assert written == 40
    run = sfn.describe_map_run(mapRunArn=output["MapRunArn"])
    assert run["itemCounts"]["total"] == 40
    assert run["itemCounts"]["resultsWritten"] == 40
