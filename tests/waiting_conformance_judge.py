#!/usr/bin/env python3
"""Lists the conformance cases of `.waitForTaskToken` tasks (needs `callback`) for
tests/waiting_conformance.rs, with the answers AWS recorded; judging is conformance_judge.py's.

    waiting_conformance_judge.py CONFORMANCE_DIR list           -> JSON: the cases to run
    waiting_conformance_judge.py CONFORMANCE_DIR judge RESULTS  -> as conformance_judge.py, after
        replacing each result's "tokens" by the recorder's `<task_token>` placeholders

Each answer is one of {"submitted": output}, {"output": text}, {"error", "cause"} or
{"timed_out": error}, in the order of the recorded events.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance_judge  # noqa: E402

# Cases whose outside services are answered from the recording.
RUNNABLE_NEEDS = conformance_judge.RUNNABLE_NEEDS | {"callback", "input-placeholders"}


def recorded_answers(events: list) -> list:
    compact = conformance_judge.compact
    answers = []
    for event in events:
        kind = event.get("type")
        if kind == "TaskSubmitted":
            answers.append({"submitted": compact(event["taskSubmittedEventDetails"]["output"])})
        elif kind == "TaskSucceeded":
            answers.append({"output": compact(event["taskSucceededEventDetails"]["output"])})
        elif kind == "TaskFailed":
            details = event["taskFailedEventDetails"]
            answers.append({
                "error": details.get("error", ""),
                "cause": compact(details.get("cause", "")),
            })
        elif kind == "TaskTimedOut":
            answers.append({"timed_out": event["taskTimedOutEventDetails"].get("error", "")})
    return answers


def recorded_role(events: list, default: str) -> str:
    """The role to start with: these tests ran under a role of their own, recorded as a
    placeholder (`role/<resource:1>`); a role of that shape normalizes to the same text."""
    for event in events:
        role = event.get("executionStartedEventDetails", {}).get("roleArn", "")
        if "role/<resource" in role:
            return "arn:aws:iam::000000000000:" + role.split(":iam::", 1)[1].split(":", 1)[1]
    return default


def main() -> int:
    conformance_dir, mode = sys.argv[1], sys.argv[2]
    sys.path.insert(0, conformance_dir)
    import run  # noqa: E402

    if mode == "judge":
        # The recorder replaced every task token by a placeholder (localstack's snapshot
        # transformer); put the same placeholder where our tokens are, then judge as usual.
        by_id = {case["id"]: case for case in run.load_manifest()["cases"]}
        with open(sys.argv[3]) as fh:
            results = json.load(fh)
        for result in results:
            tokens = result.pop("tokens", [])
            if not tokens or "events" not in result:
                continue
            recorded = json.dumps(run.expected_events(by_id[result["id"]]))
            placeholders = []
            for found in re.findall(r"<<task_token>:\d+>|<task_token:\d+>|<task_token>", recorded):
                if found not in placeholders:
                    placeholders.append(found)
            text = json.dumps(result["events"])
            for i, token in enumerate(tokens):
                if placeholders:
                    text = text.replace(token, placeholders[min(i, len(placeholders) - 1)])
            result["events"] = json.loads(text)
        with open(sys.argv[3], "w") as fh:
            json.dump(results, fh)
        return conformance_judge.main()
    if mode != "list":
        return conformance_judge.main()

    out = []
    for case in run.load_manifest()["cases"]:
        needs = set(case["needs"])
        if "callback" not in needs or not needs <= RUNNABLE_NEEDS:
            continue
        out.append({
            "id": case["id"],
            "definition": json.dumps(run.case_definition(case)),
            "input": case["input"],
            "expected_status": case["expected_status"],
            "role_arn": recorded_role(run.expected_events(case), run.ROLE_ARN),
            "answers": recorded_answers(run.expected_events(case)),
        })
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
