#!/usr/bin/env python3
"""Bridge between statelog's Rust conformance test and the official comparator (run.py).

    conformance_judge.py CONFORMANCE_DIR list            -> JSON: the cases to run
    conformance_judge.py CONFORMANCE_DIR list jsonata    -> JSON: the JSONata cases to run
                                                            (no variables)
    conformance_judge.py CONFORMANCE_DIR judge RESULTS   -> one line per case, then
                                                            "N passed, M failed"

RESULTS is a JSON list of {"id", "status", "sm_arn", "exec_arn", "events"} where events are
rendered in the AWS GetExecutionHistory shape. Judging is run.judge itself (same normalization
and comparison as a live run); this script only feeds it.
"""
import json
import sys


# Needs the pure interpreter can meet: StopExecution (sent right after the start),
# request/response service integrations (answered with the outcomes AWS recorded) and task
# timeouts that such a case sets, and workflow variables (`Assign`, in either query language).
RUNNABLE_NEEDS = {
    "stop-execution", "lambda", "sns", "sqs", "dynamodb", "aws-sdk", "s3", "events",
    "secretsmanager", "apigateway", "sfn", "timeouts", "variables",
}


def compact(value) -> str:
    """A recorded payload back as text: strings stay, parsed JSON is re-serialized compactly."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def recorded_answers(events: list) -> list:
    """The task outcomes of a recorded history, in order, for a scripted handler."""
    answers = []
    for event in events:
        if event.get("type") == "TaskSucceeded":
            answers.append({"output": compact(event["taskSucceededEventDetails"]["output"])})
        elif event.get("type") == "TaskFailed":
            details = event["taskFailedEventDetails"]
            answers.append({
                "error": details.get("error", ""),
                "cause": compact(details.get("cause", "")),
            })
    return answers


def main() -> int:
    conformance_dir, mode = sys.argv[1], sys.argv[2]
    sys.path.insert(0, conformance_dir)
    import run  # noqa: E402  (boto3 is imported lazily by run.py, never here)

    cases = run.load_manifest()["cases"]
    if mode == "list":
        jsonata = sys.argv[3:] == ["jsonata"]
        out = []
        for case in cases:
            # The core language, plus StopExecution right after the start (which the test can
            # send through decide as well), plus Lambda tasks answered with what AWS recorded;
            # with `jsonata`, the JSONata cases among those (with or without variables).
            needs = set(case["needs"])
            if jsonata != ("jsonata" in needs):
                continue
            if not needs - {"jsonata"} <= RUNNABLE_NEEDS:
                continue
            out.append({
                "id": case["id"],
                "needs": case["needs"],
                "definition": json.dumps(run.case_definition(case)),
                "input": case["input"],
                "expected_status": case["expected_status"],
                "role_arn": run.ROLE_ARN,
                "stop": case["needs"] == ["stop-execution"],
                "answers": recorded_answers(run.expected_events(case)),
            })
        json.dump(out, sys.stdout)
        return 0
    if mode == "judge":
        by_id = {case["id"]: case for case in cases}
        with open(sys.argv[3]) as fh:
            results = json.load(fh)
        passed = failed = 0
        for result in results:
            case = by_id[result["id"]]
            if result.get("error"):
                verdict, why = "ERROR", result["error"]
            else:
                ctx = run.LiveContext(result["sm_arn"], result["exec_arn"], run.ROLE_ARN)
                try:
                    verdict, why = run.judge(case, result["events"], ctx, result["status"], False)
                except Exception as exc:  # a comparator crash is a failed case, not a crash
                    verdict, why = "ERROR", f"judge raised {exc!r}"
            if verdict == "PASS":
                passed += 1
                print(f"PASS {case['id']}")
            else:
                failed += 1
                print(f"{verdict} {case['id']} :: {why}")
        print(f"{passed} passed, {failed} failed")
        return 0
    print(f"unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
