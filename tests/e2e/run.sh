#!/usr/bin/env bash
# End-to-end tests of `statelog serve` with the real AWS clients.
#
# Builds the binary, starts `statelog serve` in development mode on a free loopback port with a
# temporary data directory, runs tests/e2e (pytest + boto3 + awscli; the Amazon SWF tests with
# boto3's `swf` client and the PyPI SWF libraries simpleflow and py-swf; the web console in
# headless Chromium through selenium, screenshots in target/ci-artifacts/console/), then the official
# conformance runner twice when ../shared/conformance exists (`--needs-none`, and `--needs jsonata
# --needs variables --needs distributed-map`), then the lambda/sqs/sns/dynamodb cases against a second server with
# `--mock-config` (tests/conformance_mocks.py), and stops the servers. Exit status: pytest's, or 1
# when a conformance count drops below its floor (STATELOG_CONFORMANCE_FLOOR,
# STATELOG_CONFORMANCE_JSONATA_FLOOR, STATELOG_CONFORMANCE_MOCKS_FLOOR).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

if ! python3 -c "import boto3, pytest, requests, simpleflow, py_swf, selenium" 2>/dev/null || ! command -v aws >/dev/null; then
    python3 -m pip install --quiet boto3 awscli pytest requests simpleflow py-swf selenium
fi

cargo build --quiet --bin statelog
BIN="$ROOT/target/debug/statelog"

DATA=$(mktemp -d)
OUT="$DATA.out"
LOG="$DATA.log"
"$BIN" serve --data-dir "$DATA/data" --listen 127.0.0.1:0 >"$OUT" 2>"$LOG" &
PID=$!
cleanup() {
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    rm -rf "$DATA" "$OUT" "$LOG"
}
trap cleanup EXIT

# Wait (at most 60 s) for the "listening on http://127.0.0.1:PORT" line.
ENDPOINT=""
for _ in $(seq 1 600); do
    if ENDPOINT=$(sed -n 's/^listening on //p' "$OUT" 2>/dev/null) && [ -n "$ENDPOINT" ]; then
        break
    fi
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "statelog serve exited early:" >&2
        cat "$LOG" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$ENDPOINT" ]; then
    echo "statelog serve did not start within 60 s" >&2
    cat "$LOG" >&2
    exit 1
fi
echo "== statelog serve at $ENDPOINT (data $DATA/data)"

status=0
# --durations: the slowest tests' times, so the suite's cost stays visible (the SWF empty poll
# holds its 60 s in the background while the other SWF tests run).
STATELOG_ENDPOINT="$ENDPOINT" STATELOG_BIN="$BIN" STATELOG_OBJECTS_DIR="$DATA/data/objects" python3 -m pytest -q -p no:cacheprovider --durations=8 tests/e2e || status=$?

CONFORMANCE_DIR="${STATELOG_CONFORMANCE_DIR:-$ROOT/../shared/conformance}"
# One run of the official runner over HTTP: $1 names the selection in the output, $2 is its
# floor, the rest are the runner's selection flags. A count below the floor fails the script.
conformance() {
    local name=$1 floor=$2
    shift 2
    echo "== conformance runner ($*) against $ENDPOINT"
    local log="$DATA.conformance"
    python3 "$CONFORMANCE_DIR/run.py" --endpoint "$ENDPOINT" "$@" >"$log" 2>&1 || true
    # The runner ends with "N passed, M failed"; it is reported here in other words so CI does
    # not read it as this script's own test count.
    local counts passed failed
    counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || true)
    passed=$(echo "$counts" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    failed=$(echo "$counts" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    echo "conformance over HTTP ($name): passed=${passed:-?} failed=${failed:-?} floor=$floor"
    if [ "${passed:-0}" -lt "$floor" ]; then
        echo "conformance over HTTP ($name) dropped below its floor ($floor)" >&2
        status=1
    fi
    if [ -n "${STATELOG_CONFORMANCE_LOG:-}" ]; then
        cp "$log" "$STATELOG_CONFORMANCE_LOG.$name"
    fi
    rm -f "$log"
}
# The lambda/sqs/sns/dynamodb cases over HTTP against a second server started with
# --mock-config: tests/conformance_mocks.py builds the mock file from the recorded answers,
# runs each case as `stateMachineArn#Recorded` and judges it with the official comparator.
conformance_mocks() {
    local floor=$1
    local mocks="$DATA.mocks"
    mkdir -p "$mocks"
    python3 tests/conformance_mocks.py "$CONFORMANCE_DIR" build "$mocks/mock.json" "$mocks/plan.json"
    "$BIN" serve --data-dir "$mocks/data" --listen 127.0.0.1:0 --mock-config "$mocks/mock.json" \
        >"$mocks/out" 2>"$mocks/err" &
    local mock_pid=$! endpoint=""
    for _ in $(seq 1 600); do
        endpoint=$(sed -n 's/^listening on //p' "$mocks/out" 2>/dev/null)
        [ -n "$endpoint" ] && break
        kill -0 "$mock_pid" 2>/dev/null || break
        sleep 0.1
    done
    local log="$mocks/log"
    if [ -n "$endpoint" ]; then
        echo "== conformance with mocked services against $endpoint"
        python3 tests/conformance_mocks.py "$CONFORMANCE_DIR" run "$endpoint" "$mocks/plan.json" >"$log" 2>&1 || true
    else
        echo "statelog serve --mock-config did not start:" >&2
        cat "$mocks/err" >&2
    fi
    kill -TERM "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
    local counts passed failed
    counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" 2>/dev/null | tail -1 || true)
    passed=$(echo "$counts" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    failed=$(echo "$counts" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    echo "conformance over HTTP (mocked-services): passed=${passed:-?} failed=${failed:-?} floor=$floor"
    if [ "${passed:-0}" -lt "$floor" ]; then
        echo "conformance over HTTP (mocked-services) dropped below its floor ($floor)" >&2
        status=1
    fi
    if [ -n "${STATELOG_CONFORMANCE_LOG:-}" ] && [ -f "$log" ]; then
        cp "$log" "$STATELOG_CONFORMANCE_LOG.mocked-services"
    fi
    rm -rf "$mocks"
}
if [ -f "$CONFORMANCE_DIR/run.py" ]; then
    conformance needs-none "${STATELOG_CONFORMANCE_FLOOR:-0}" --needs-none
    # The JSONata, variables and Distributed Map cases (each case's needs within those three;
    # the Distributed Map cases that read S3 data or call Lambda are outside).
    conformance jsonata-variables-distributed-map "${STATELOG_CONFORMANCE_JSONATA_FLOOR:-0}" \
        --needs jsonata --needs variables --needs distributed-map
    conformance_mocks "${STATELOG_CONFORMANCE_MOCKS_FLOOR:-0}"
else
    echo "skip: conformance runner not found at $CONFORMANCE_DIR/run.py"
fi

exit "$status"
