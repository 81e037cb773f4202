"""Session-wide pieces of the end-to-end suite.

`empty_decision_poll`: SWF holds a poll that finds no task for 60 s, then answers an empty
`taskToken` and no `events`. Checking that costs a minute, so the poll starts in the background
as the session begins (against its own domain, on a list no task ever reaches) and
test_swf_zz_empty_poll.py, the last file, reads its answer: the minute overlaps the suite.
"""

import threading
import time

import pytest

from swf_helpers import ENDPOINT, swf_client, unique


@pytest.fixture(scope="session", autouse=True)
def empty_decision_poll():
    result = {}
    if not ENDPOINT:
        yield None, result
        return
    client = swf_client()
    domain = unique("empty-poll")
    client.register_domain(name=domain, workflowExecutionRetentionPeriodInDays="0")

    def poll():
        started = time.monotonic()
        try:
            result["answer"] = client.poll_for_decision_task(domain=domain, taskList={"name": unique("nobody")})
        except Exception as error:  # noqa: BLE001 - reported by the test that reads it
            result["error"] = error
        result["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    yield thread, result
