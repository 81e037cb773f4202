"""Shared pieces of the Amazon SWF end-to-end tests (test_swf_*.py): clients pointed at the
server `run.sh` started (STATELOG_ENDPOINT), unique names, history reading and bounded waits.

Nothing here decides or works: each test file drives the service through boto3 or through a
client library's own machinery.
"""

import os
import time
import uuid

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import requests
from botocore.config import Config

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
BIN = os.environ.get("STATELOG_BIN")
REGION = "us-east-1"


def swf_client(endpoint=None, key="test", secret="test"):
    """A boto3 `swf` client; the read timeout is above the 60 s a poll may be held (SWF asks
    pollers for 70 s)."""
    return boto3.client(
        "swf",
        endpoint_url=endpoint or ENDPOINT,
        region_name=REGION,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}, read_timeout=70, max_pool_connections=64),
    )


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def signed_post(target, body, endpoint=None, key="test", secret="test"):
    """One SigV4-signed (service `swf`) POST with a body boto3 would not send, for the server's
    own answers to malformed input."""
    request = botocore.awsrequest.AWSRequest(
        method="POST",
        url=(endpoint or ENDPOINT) + "/",
        data=body,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target},
    )
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(key, secret), "swf", REGION).add_auth(request)
    prepared = request.prepare()
    return requests.post(prepared.url, data=prepared.body, headers=dict(prepared.headers), timeout=30)


def attrs(event):
    """The `<type>EventAttributes` of an event (the one key SWF names after its type)."""
    key = event["eventType"][0].lower() + event["eventType"][1:] + "EventAttributes"
    return event[key]


def history(client, domain, execution, reverse=False, page_size=None):
    """Every event of a run, following `nextPageToken`."""
    kwargs = {"domain": domain, "execution": execution, "reverseOrder": reverse}
    if page_size:
        kwargs["maximumPageSize"] = page_size
    events = []
    while True:
        page = client.get_workflow_execution_history(**kwargs)
        events.extend(page["events"])
        token = page.get("nextPageToken")
        if not token:
            return events
        kwargs["nextPageToken"] = token


def types(events):
    return [e["eventType"] for e in events]


def of_type(events, event_type):
    return [e for e in events if e["eventType"] == event_type]


def wait_for(what, predicate, timeout=10.0, step=0.05):
    """Re-evaluates `predicate` until it returns something truthy (returned) or `timeout` s pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def wait_for_event(client, domain, execution, event_type, count=1, timeout=10.0):
    """The history once it holds `count` events of `event_type`."""
    return wait_for(
        f"{count} x {event_type} in {execution['workflowId']}",
        lambda: (lambda h: h if len(of_type(h, event_type)) >= count else None)(history(client, domain, execution)),
        timeout=timeout,
    )


def wait_closed(client, domain, execution, timeout=30.0):
    """DescribeWorkflowExecution's executionInfo once the run is closed."""
    return wait_for(
        f"{execution['workflowId']} to close",
        lambda: (
            lambda info: info if info["executionStatus"] == "CLOSED" else None
        )(client.describe_workflow_execution(domain=domain, execution=execution)["executionInfo"]),
        timeout=timeout,
        step=0.2,
    )
