"""The SWF empty poll conftest.py started as the session began; this file is named to run last,
so the poll has had its 60 s while the other tests ran."""

import pytest

from swf_helpers import ENDPOINT

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)")


def test_an_empty_decision_poll_answers_an_empty_token_after_60_s(empty_decision_poll):
    thread, result = empty_decision_poll
    thread.join(timeout=75)
    assert not thread.is_alive(), "the poll returned"
    assert "error" not in result, result.get("error")
    answer = result["answer"]
    assert answer["taskToken"] == ""
    assert "events" not in answer
    assert answer["startedEventId"] == 0
    assert 55 <= result["seconds"] <= 70
