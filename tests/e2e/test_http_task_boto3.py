"""The HTTP Task (`arn:aws:states:::http:invoke`) through boto3, against `statelog serve
--connections FILE` (started here, from STATELOG_BIN) and a real HTTP server on loopback
(Python's http.server, started here): the result's shape, the connection's credentials on the
wire, a 404 caught by its `States.Http.StatusCode.404` error, the secrets absent from
GetExecutionHistory and the server's log, and `.waitForTaskToken` refused at creation.
"""

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

BIN = os.environ.get("STATELOG_BIN")
ROLE = "arn:aws:iam::000000000000:role/statelog-e2e"
API_KEY = "e2e-api-key-4b7f90"
PASSWORD = "e2e-basic-pw-c02d"

pytestmark = pytest.mark.skipif(not BIN, reason="STATELOG_BIN not set (run tests/e2e/run.sh)")


class Recorder(BaseHTTPRequestHandler):
    """Records each request; answers 404 on /missing, else 200 with JSON."""

    requests = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Recorder.requests.append({"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        status = 404 if self.path.startswith("/missing") else 200
        payload = json.dumps({"path": self.path, "ok": status == 200}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def served():
    with tempfile.TemporaryDirectory() as work:
        connections = os.path.join(work, "connections.json")
        with open(connections, "w") as f:
            json.dump(
                {
                    "shop": {"authorizationType": "API_KEY", "apiKeyName": "x-api-key", "apiKeyValue": API_KEY},
                    "partner": {"authorizationType": "BASIC", "username": "ann", "password": PASSWORD},
                },
                f,
            )
        log_path = os.path.join(work, "serve.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(work, "data"), "--connections", connections],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "RUST_LOG": "debug"},
            )
            line = process.stdout.readline()
            if not line.startswith("listening on "):
                process.kill()
                raise AssertionError(f"server did not start: {line!r}")
            endpoint = line.split("listening on ", 1)[1].strip()
            try:
                yield endpoint, log_path
            finally:
                process.send_signal(signal.SIGTERM)
                assert process.wait(timeout=30) == 0


def sfn(endpoint):
    return boto3.client(
        "stepfunctions",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}),
    )


def connection(name):
    return f"arn:aws:events:us-east-1:000000000000:connection/{name}/7e1d"


def run(client, definition):
    name = f"http-{uuid.uuid4().hex[:10]}"
    machine = client.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)["stateMachineArn"]
    execution = client.start_execution(stateMachineArn=machine, input=json.dumps({"order": 7}))["executionArn"]
    deadline = time.monotonic() + 60
    while True:
        described = client.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return described
        assert time.monotonic() < deadline, described
        time.sleep(0.05)


def history_text(client, execution_arn):
    events = client.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    return json.dumps(events, default=str)


def test_the_call_answers_in_aws_shape_and_its_secrets_stay_on_the_wire(served, api):
    endpoint, log_path = served
    client = sfn(endpoint)
    call = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::http:invoke",
                "Parameters": {
                    "ApiEndpoint": f"{api}/orders",
                    "Method": "POST",
                    "QueryParameters": {"source": "e2e"},
                    "RequestBody": {"order.$": "$.order"},
                    "Authentication": {"ConnectionArn": connection("shop")},
                },
                "End": True,
            }
        },
    }
    described = run(client, call)
    assert described["status"] == "SUCCEEDED", described
    output = json.loads(described["output"])
    assert output["StatusCode"] == 200
    assert output["StatusText"] == "OK"
    assert output["ResponseBody"] == {"path": "/orders?source=e2e", "ok": True}
    assert output["Headers"]["content-type"] == ["application/json"]
    sent = next(r for r in Recorder.requests if r["path"].startswith("/orders"))
    assert sent["method"] == "POST"
    assert sent["headers"]["x-api-key"] == API_KEY
    assert json.loads(sent["body"]) == {"order": 7}
    assert sent["headers"]["idempotency-key"].startswith(described["executionArn"] + "/")

    caught = run(
        client,
        {
            "StartAt": "Call",
            "States": {
                "Call": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::http:invoke",
                    "Parameters": {"ApiEndpoint": f"{api}/missing", "Method": "DELETE", "Authentication": {"ConnectionArn": connection("partner")}},
                    "Catch": [{"ErrorEquals": ["States.Http.StatusCode.404"], "Next": "Gone"}],
                    "End": True,
                },
                "Gone": {"Type": "Pass", "End": True},
            },
        },
    )
    assert caught["status"] == "SUCCEEDED", caught
    assert json.loads(caught["output"])["Error"] == "States.Http.StatusCode.404"
    basic = next(r for r in Recorder.requests if r["path"].startswith("/missing"))
    assert basic["headers"]["authorization"].startswith("Basic ")

    texts = [history_text(client, described["executionArn"]), history_text(client, caught["executionArn"])]
    assert "ConnectionArn" in texts[0]
    with open(log_path) as log:
        texts.append(log.read())
    for text in texts:
        assert API_KEY not in text
        assert PASSWORD not in text


def test_http_invoke_with_a_callback_is_refused_at_creation(served):
    endpoint, _ = served
    definition = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::http:invoke.waitForTaskToken",
                "Parameters": {"ApiEndpoint": "https://api.example.com", "Method": "GET", "Authentication": {"ConnectionArn": connection("shop")}},
                "End": True,
            }
        },
    }
    with pytest.raises(ClientError) as excinfo:
        sfn(endpoint).create_state_machine(name=f"cb-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition), roleArn=ROLE)
    assert excinfo.value.response["Error"]["Code"] == "InvalidDefinition"
