"""Fixtures of the cluster suite.

`cluster`: a fresh `harness.Cluster` per test (3 NATS servers, `cluster init --partitions 8`,
nodes a, b, c with `--lease-ms 2000`) under the test's tmp_path; closed (every process killed
and reaped) by its finalizer, also when the test fails. A failing test's report gets a
`cluster logs` section: the harness's events, each node's stderr tail, each server's log tail.

`figures`: what a test measured (executions/s, takeover times). Printed at the end of the run
under `cluster figures`, so the lead can quote them without -s.
"""

import os
import signal
from pathlib import Path

import pytest

from harness import Cluster

ROOT = Path(__file__).resolve().parents[2]
FIGURES: list[str] = []


def _interrupt(signum, frame):
    # SIGTERM (e.g. from `timeout`) would end Python without running the fixtures'
    # finalizers and leave every server and node running: make it an interrupt instead.
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)


def statelog_binary() -> Path:
    return Path(os.environ.get("STATELOG_BIN") or ROOT / "target" / "debug" / "statelog")


@pytest.fixture
def cluster(tmp_path):
    binary = statelog_binary()
    if not binary.is_file():
        pytest.fail(f"no statelog binary at {binary} (cargo build --bin statelog, or set STATELOG_BIN)")
    instance = Cluster(tmp_path, binary)
    try:
        try:
            instance.start()
        except Exception as error:  # noqa: BLE001 - the report says what did not start
            pytest.fail(f"the cluster did not start: {error}\n{instance.report()}")
        yield instance
    finally:
        instance.close()


@pytest.fixture
def figures(request):
    def record(text: str) -> None:
        FIGURES.append(f"{request.node.name}: {text}")
        print(text)

    return record


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        instance = item.funcargs.get("cluster") if hasattr(item, "funcargs") else None
        if instance is not None:
            report.sections.append(("cluster logs", instance.report()))


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("cluster figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
