"""The web console (`/console/`) in a real browser: headless Chromium driven through WebDriver
(selenium + chromedriver), against the development-mode server run.sh started, and against a
second server with a credentials file (started here) for the console's own SigV4 signing.

Machines made through boto3: one that succeeds, one that fails in a Parallel branch and is
caught, one whose Parallel branch failure is not caught (FAILED, then redriven from its page),
one waiting on a task token, and a loop of Pass and Choice states whose one execution has
2,006 events. In the browser: the lists show them; the graphs mark the failed state, the
caught Parallel and the running Task; the Events table shows failures in red with a text
marker; page 2 of the long history shows events 26-50 (newest first starts at the last);
the Start execution form checks its JSON and starts; Redrive works; an activity shows its pending
task; an SWF domain lists its open workflow execution; a Distributed Map's run opens from its
execution's page with its counts and child executions. Screenshots go to
STATELOG_CONSOLE_ARTIFACTS (default target/ci-artifacts/console/).

`test_first_events_page_of_25000_events` prints (does not assert) the time from navigation to
the first page of a 25,000-event execution's Events table, by the Performance API.

Skipped, with the reason, when Chromium, chromedriver or selenium are absent.
"""

import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from swf_helpers import wait_for
from test_cli import start_server

ENDPOINT = os.environ.get("STATELOG_ENDPOINT")
BIN = os.environ.get("STATELOG_BIN")
ROLE = "arn:aws:iam::000000000000:role/statelog-console"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("STATELOG_CONSOLE_ARTIFACTS", ROOT / "target" / "ci-artifacts" / "console"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    SELENIUM = True
except ImportError:
    SELENIUM = False

pytestmark = [
    pytest.mark.skipif(not ENDPOINT, reason="STATELOG_ENDPOINT not set (run tests/e2e/run.sh)"),
    pytest.mark.skipif(not SELENIUM, reason="selenium not installed (pip install selenium)"),
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER),
        reason="chromium and chromedriver not found (Debian: apt-get install chromium chromium-driver)",
    ),
]

WAIT_S = 20

SUCCEEDS = {
    "Comment": "Two Pass states",
    "StartAt": "Hello",
    "States": {
        "Hello": {"Type": "Pass", "Result": {"greeting": "hello"}, "Next": "World"},
        "World": {"Type": "Pass", "End": True},
    },
}


def parallel(caught):
    fan = {
        "Type": "Parallel",
        "Branches": [
            {"StartAt": "Left", "States": {"Left": {"Type": "Pass", "End": True}}},
            {
                "StartAt": "Prep",
                "States": {
                    "Prep": {"Type": "Pass", "Next": "Boom"},
                    "Boom": {"Type": "Fail", "Error": "Boom.Error", "Cause": "the right branch failed"},
                },
            },
        ],
        "Next": "Done",
    }
    states = {"Fan": fan, "Done": {"Type": "Succeed"}}
    if caught:
        fan["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recover"}]
        states["Recover"] = {"Type": "Pass", "End": True}
    return {"StartAt": "Fan", "States": states}


TOKEN = {
    "StartAt": "Prepare",
    "States": {
        "Prepare": {"Type": "Pass", "Next": "Callback"},
        "Callback": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/000000000000/q", "MessageBody": {"token.$": "$$.Task.Token"}},
            "Next": "After",
        },
        "After": {"Type": "Pass", "End": True},
    },
}


def loop(times):
    """Init, then `times` rounds of Inc (Pass) and More (Choice): 4 events a round, 6 more."""
    return {
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Result": 0, "ResultPath": "$.i", "Next": "Inc"},
            "Inc": {"Type": "Pass", "Parameters": {"i.$": "States.MathAdd($.i, 1)"}, "Next": "More"},
            "More": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.i", "NumericLessThan": times, "Next": "Inc"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }


def boto(endpoint, key="test", secret="test"):
    return boto3.client(
        "stepfunctions",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def wait_status(sfn, arn, wanted, timeout=30.0):
    """Waits until the execution's status is one of `wanted`; returns it."""

    def reached():
        status = sfn.describe_execution(executionArn=arn)["status"]
        return status if status in wanted else None

    return wait_for(f"{arn} to reach {wanted}", reached, timeout)


@pytest.fixture(scope="module")
def world():
    """The machines and executions every browser test reads."""
    sfn = boto(ENDPOINT)
    tag = uuid.uuid4().hex[:8]

    def machine(name, definition):
        return sfn.create_state_machine(name=f"console-{name}-{tag}", definition=json.dumps(definition), roleArn=ROLE)["stateMachineArn"]

    def start(arn, name, payload=None):
        return sfn.start_execution(stateMachineArn=arn, name=f"{name}-{tag}", input=json.dumps(payload or {}))["executionArn"]

    w = {"sfn": sfn, "tag": tag}
    w["ok_machine"] = machine("succeeds", SUCCEEDS)
    w["ok"] = start(w["ok_machine"], "ok", {"n": 1})
    w["caught"] = start(machine("caught", parallel(True)), "caught")
    w["failed_machine"] = machine("fails", parallel(False))
    w["failed"] = start(w["failed_machine"], "failed")
    w["waiting"] = start(machine("token", TOKEN), "waiting")
    w["large"] = start(machine("loop", loop(500)), "large")
    assert wait_status(sfn, w["ok"], {"SUCCEEDED"}) == "SUCCEEDED"
    assert wait_status(sfn, w["caught"], {"SUCCEEDED"}) == "SUCCEEDED"
    assert wait_status(sfn, w["failed"], {"FAILED"}) == "FAILED"
    assert wait_status(sfn, w["large"], {"SUCCEEDED"}) == "SUCCEEDED"
    wait_for("the callback task to start", lambda: any(e["type"] == "TaskStarted" for e in sfn.get_execution_history(executionArn=w["waiting"])["events"]))
    w["large_events"] = count_events(sfn, w["large"])
    assert w["large_events"] >= 2000
    yield w
    if sfn.describe_execution(executionArn=w["waiting"])["status"] == "RUNNING":
        sfn.stop_execution(executionArn=w["waiting"])


def count_events(sfn, arn):
    count, token = 0, None
    while True:
        page = sfn.get_execution_history(executionArn=arn, maxResults=1000, **({"nextToken": token} if token else {}))
        count += len(page["events"])
        token = page.get("nextToken")
        if not token:
            return count


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,1100", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def url(path, endpoint=None):
    return f"{endpoint or ENDPOINT}/console/#/{path}"


def open_page(driver, path, endpoint=None):
    driver.get(url(path, endpoint))
    # Pages re-render as their answers arrive: an element found a moment ago may be gone.
    return WebDriverWait(driver, WAIT_S, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))


def shot(driver, name):
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def enc(arn):
    from urllib.parse import quote

    return quote(arn, safe="")


def graph_outcome(driver, state):
    return driver.find_element(By.CSS_SELECTOR, f'svg.graph g[data-state="{state}"]').get_attribute("data-outcome")


def wait_graph(wait):
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "svg.graph g[data-outcome]")))


def event_ids(driver):
    """The ids of the Events table's rows, read in one script (the table may be re-rendering)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('table.events tbody tr[data-event-id]')].map((r) => Number(r.dataset.eventId))"
    )


def event_types(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('table.events tbody tr[data-event-id]')].map((r) => r.dataset.eventType)"
    )


def wait_events(wait, driver, first_id):
    wait.until(lambda d: event_ids(d)[:1] == [first_id])


def test_lists_show_the_machines_and_executions(world, browser):
    wait = open_page(browser, "executions")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#executions-table")))
    text = browser.find_element(By.ID, "executions-table").text
    tag = world["tag"]
    for name in ("ok", "caught", "failed", "waiting", "large"):
        assert f"{name}-{tag}" in text, f"{name}-{tag} missing from the executions list"
    shot(browser, "executions")
    # Filtered by status, of one machine.
    wait = open_page(browser, f"executions?machine={enc(world['failed_machine'])}&status=FAILED")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#executions-table tbody tr[data-status]")))
    statuses = {row.get_attribute("data-status") for row in browser.find_elements(By.CSS_SELECTOR, "#executions-table tbody tr[data-status]")}
    assert statuses == {"FAILED"}
    wait = open_page(browser, "machines")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#machines-table")))
    machines = browser.find_element(By.ID, "machines-table").text
    for name in ("succeeds", "caught", "fails", "token", "loop"):
        assert f"console-{name}-{tag}" in machines
    shot(browser, "machines")


def test_caught_parallel_failure_in_the_graph_and_events(world, browser):
    wait = open_page(browser, f"execution/{enc(world['caught'])}")
    wait_graph(wait)
    wait.until(lambda d: graph_outcome(d, "Boom") == "failed")
    assert graph_outcome(browser, "Fan") == "caught"
    assert graph_outcome(browser, "Recover") == "succeeded"
    assert graph_outcome(browser, "Left") == "succeeded"
    assert graph_outcome(browser, "Done") == "not-reached"
    label = browser.find_element(By.CSS_SELECTOR, 'svg.graph g[data-state="Boom"]').get_attribute("aria-label")
    assert "Failed" in label
    wait_events(wait, browser, 1)
    failed_rows = browser.find_elements(By.CSS_SELECTOR, "table.events tbody tr.failed")
    assert [r.get_attribute("data-event-type") for r in failed_rows] == ["ParallelStateFailed"]
    assert "failure" in failed_rows[0].text.lower()
    shot(browser, "execution-caught")


def test_failed_execution_graph_events_in_red_and_redrive(world, browser):
    sfn = world["sfn"]
    wait = open_page(browser, f"execution/{enc(world['failed'])}")
    wait_graph(wait)
    wait.until(lambda d: graph_outcome(d, "Boom") == "failed")
    assert graph_outcome(browser, "Fan") == "failed"
    assert graph_outcome(browser, "Done") == "not-reached"
    assert "Boom.Error" in browser.find_element(By.ID, "execution-error").text
    wait_events(wait, browser, 1)
    failed = browser.find_elements(By.CSS_SELECTOR, "table.events tbody tr.failed")
    types = [r.get_attribute("data-event-type") for r in failed]
    assert types == ["ParallelStateFailed", "ExecutionFailed"]
    red = failed[-1].find_element(By.CSS_SELECTOR, "td").value_of_css_property("color")
    plain = browser.find_element(By.CSS_SELECTOR, "table.events tbody tr:not(.failed) td").value_of_css_property("color")
    assert red != plain, "failed rows are drawn in another colour"
    assert "failure" in failed[-1].text.lower()
    shot(browser, "execution-failed")
    # Map Runs: none here, or (a server without Distributed Map) a notice saying so.
    wait.until(lambda d: "Loading" not in d.find_element(By.ID, "map-runs").text)
    map_runs = browser.find_element(By.ID, "map-runs").text
    assert "no Distributed Map runs" in map_runs or "not available on this server" in map_runs, map_runs
    browser.execute_script("document.getElementById('events').scrollIntoView()")
    shot(browser, "events-failed")

    browser.find_element(By.ID, "redrive-execution").click()
    dialog = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "dialog.confirm")))
    dialog.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: d.find_element(By.ID, "redrive-count").text == "1")
    assert sfn.describe_execution(executionArn=world["failed"])["redriveCount"] == 1
    wait_status(sfn, world["failed"], {"FAILED"})
    history = sfn.get_execution_history(executionArn=world["failed"], maxResults=1000)["events"]
    assert any(e["type"] == "ExecutionRedriven" for e in history)


def test_waiting_execution_is_running(world, browser):
    wait = open_page(browser, f"execution/{enc(world['waiting'])}")
    wait_graph(wait)
    wait.until(lambda d: graph_outcome(d, "Callback") == "running")
    assert graph_outcome(browser, "Prepare") == "succeeded"
    assert graph_outcome(browser, "After") == "not-reached"
    assert browser.find_element(By.ID, "execution-status").text == "Running"
    shot(browser, "execution-waiting")
    # The page's heading has the focus (a screen reader announces the page).
    assert browser.switch_to.active_element.get_attribute("id") == "page-title"
    # Stop, with an error and cause typed into the confirmation dialog; Cancel first does nothing.
    browser.find_element(By.ID, "stop-execution").click()
    dialog = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "dialog.confirm")))
    dialog.find_element(By.XPATH, ".//button[normalize-space()='Cancel']").click()
    assert world["sfn"].describe_execution(executionArn=world["waiting"])["status"] == "RUNNING"
    browser.find_element(By.ID, "stop-execution").click()
    dialog = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "dialog.confirm")))
    dialog.find_element(By.ID, "stop-error").send_keys("Console.Stop")
    dialog.find_element(By.ID, "stop-cause").send_keys("stopped from the console test")
    dialog.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: d.find_element(By.ID, "execution-status").text == "Aborted")
    described = world["sfn"].describe_execution(executionArn=world["waiting"])
    assert (described["status"], described["error"], described["cause"]) == ("ABORTED", "Console.Stop", "stopped from the console test")


def test_large_history_pages_of_25(world, browser):
    wait = open_page(browser, f"execution/{enc(world['large'])}")
    wait_events(wait, browser, 1)
    assert event_ids(browser) == list(range(1, 26))
    browser.find_element(By.ID, "events-next").click()
    wait_events(wait, browser, 26)
    assert event_ids(browser) == list(range(26, 51))
    assert "events 26–50" in browser.find_element(By.ID, "events-page").text
    shot(browser, "events-page-2")
    browser.find_element(By.ID, "events-prev").click()
    wait_events(wait, browser, 1)
    Select(browser.find_element(By.ID, "events-order")).select_by_value("desc")
    total = world["large_events"]
    wait_events(wait, browser, total)
    assert event_ids(browser) == list(range(total, total - 25, -1))
    # Filter by type: only ChoiceStateEntered events, 25 of them.
    Select(browser.find_element(By.ID, "events-order")).select_by_value("asc")
    Select(browser.find_element(By.ID, "events-type")).select_by_value("ChoiceStateEntered")
    wait.until(lambda d: event_types(d) == ["ChoiceStateEntered"] * 25)
    assert event_ids(browser)[:2] == [6, 10]


def test_start_execution_from_the_form(world, browser):
    sfn = world["sfn"]
    wait = open_page(browser, f"start?machine={enc(world['ok_machine'])}")
    editor = wait.until(EC.presence_of_element_located((By.ID, "start-input")))
    editor.clear()
    editor.send_keys('{"from": "console",')
    wait.until(lambda d: d.find_element(By.ID, "start-input").get_attribute("aria-invalid") == "true")
    assert not browser.find_element(By.ID, "start-submit").is_enabled()
    assert "Not valid JSON" in browser.find_element(By.ID, "start-input-status").text
    editor.send_keys(' "n": 7}')
    wait.until(lambda d: d.find_element(By.ID, "start-submit").is_enabled())
    name = f"from-form-{world['tag']}"
    browser.find_element(By.ID, "start-name").send_keys(name)
    browser.find_element(By.ID, "start-submit").click()
    wait.until(lambda d: "#/execution/" in d.current_url)
    arn = world["ok_machine"].replace(":stateMachine:", ":execution:") + f":{name}"
    wait_status(sfn, arn, {"SUCCEEDED"})
    assert json.loads(sfn.describe_execution(executionArn=arn)["input"]) == {"from": "console", "n": 7}
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#page-title").text == name)


def test_activities_show_their_pending_tasks(world, browser):
    sfn = world["sfn"]
    activity = sfn.create_activity(name=f"console-activity-{world['tag']}")["activityArn"]
    machine = sfn.create_state_machine(
        name=f"console-activity-{world['tag']}",
        definition=json.dumps({"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": activity, "End": True}}}),
        roleArn=ROLE,
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine)["executionArn"]
    try:
        wait = open_page(browser, "activities")
        row = f"//table[@id='activities-table']//tr[th[normalize-space()='console-activity-{world['tag']}']]"
        wait.until(lambda d: d.find_element(By.XPATH, f"{row}/td[2]").text == "1")
        shot(browser, "activities")
    finally:
        sfn.stop_execution(executionArn=execution)


def test_swf_domains_and_their_executions(world, browser):
    swf = boto3.client("swf", endpoint_url=ENDPOINT, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
    domain = f"console-domain-{world['tag']}"
    swf.register_domain(name=domain, workflowExecutionRetentionPeriodInDays="1")
    swf.register_workflow_type(
        domain=domain, name="ship", version="1", defaultTaskStartToCloseTimeout="30",
        defaultExecutionStartToCloseTimeout="300", defaultChildPolicy="TERMINATE", defaultTaskList={"name": "console"},
    )
    swf.start_workflow_execution(domain=domain, workflowId="order-1", workflowType={"name": "ship", "version": "1"})
    try:
        wait = open_page(browser, "swf")
        wait.until(lambda d: domain in d.find_element(By.ID, "swf-domains").text)
        browser.find_element(By.LINK_TEXT, domain).click()
        wait.until(lambda d: "order-1" in d.find_element(By.ID, "swf-executions").text)
        assert "Open" in browser.find_element(By.ID, "swf-executions").text
    finally:
        swf.terminate_workflow_execution(domain=domain, workflowId="order-1")


LAYOUT_CHECK = """
const [done] = [arguments[arguments.length - 1]];
const base = document.querySelector('script[type=module]').src.replace(/app\\.js$/, '');
Promise.all([import(base + 'layout.js'), import(base + 'history.js')]).then(([layout, history]) => {
  const definition = {
    StartAt: 'Route',
    States: {
      Route: {Type: 'Choice', Choices: [{Variable: '$.k', StringEquals: 'a', Next: 'Fan'}], Default: 'Reject'},
      Fan: {Type: 'Parallel', Branches: [
        {StartAt: 'L1', States: {L1: {Type: 'Pass', Next: 'L2'}, L2: {Type: 'Pass', End: true}}},
        {StartAt: 'R1', States: {R1: {Type: 'Fail', Error: 'E'}}}],
        Catch: [{ErrorEquals: ['States.ALL'], Next: 'Reject'}], Next: 'Each'},
      Each: {Type: 'Map', ItemProcessor: {ProcessorConfig: {Mode: 'DISTRIBUTED'}, StartAt: 'I', States: {I: {Type: 'Pass', End: true}}}, Next: 'Again'},
      Again: {Type: 'Choice', Choices: [{Variable: '$.again', BooleanEquals: true, Next: 'Route'}], Default: 'Done'},
      Reject: {Type: 'Fail', Error: 'Rejected'},
      Done: {Type: 'Succeed'},
    },
  };
  const placed = layout.layoutDefinition(definition);
  const events = [
    {id: 1, previousEventId: 0, type: 'ExecutionStarted'},
    {id: 2, previousEventId: 1, type: 'ChoiceStateEntered', stateEnteredEventDetails: {name: 'Route'}},
    {id: 3, previousEventId: 2, type: 'ChoiceStateExited', stateExitedEventDetails: {name: 'Route'}},
    {id: 4, previousEventId: 3, type: 'ParallelStateEntered', stateEnteredEventDetails: {name: 'Fan'}},
    {id: 5, previousEventId: 4, type: 'ParallelStateStarted'},
    {id: 6, previousEventId: 5, type: 'PassStateEntered', stateEnteredEventDetails: {name: 'L1'}},
    {id: 7, previousEventId: 5, type: 'FailStateEntered', stateEnteredEventDetails: {name: 'R1'}},
    {id: 8, previousEventId: 6, type: 'PassStateExited', stateExitedEventDetails: {name: 'L1'}},
    {id: 9, previousEventId: 7, type: 'ParallelStateFailed'},
    {id: 10, previousEventId: 9, type: 'ParallelStateExited', stateExitedEventDetails: {name: 'Fan'}},
    {id: 11, previousEventId: 10, type: 'FailStateEntered', stateEnteredEventDetails: {name: 'Reject'}},
    {id: 12, previousEventId: 11, type: 'ExecutionFailed'},
  ];
  const statuses = Object.fromEntries(history.foldStatuses(events, 'FAILED'));
  const running = Object.fromEntries(history.foldStatuses(events.slice(0, 6), 'RUNNING'));
  done({nodes: placed.nodes, edges: placed.edges, width: placed.width, height: placed.height, statuses, running,
        failure: ['TaskFailed', 'ExecutionTimedOut', 'MapRunAborted', 'TaskSucceeded'].map(history.isFailure)});
}).catch((error) => done({error: String(error)}));
"""


DISTRIBUTED = {
    "StartAt": "Fan",
    "States": {
        "Fan": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "Label": "console",
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                "StartAt": "Echo",
                "States": {"Echo": {"Type": "Pass", "End": True}},
            },
            "End": True,
        }
    },
}


def test_map_run_page_shows_its_counts_and_children(world, browser):
    sfn, tag = world["sfn"], world["tag"]
    machine = sfn.create_state_machine(name=f"console-dmap-{tag}", definition=json.dumps(DISTRIBUTED), roleArn=ROLE)["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, name=f"dmap-{tag}", input=json.dumps({"items": [1, 2, 3]}))["executionArn"]
    assert wait_status(sfn, arn, {"SUCCEEDED"}) == "SUCCEEDED"
    (run,) = sfn.list_map_runs(executionArn=arn)["mapRuns"]
    # The parent's page links its Map Run.
    wait = open_page(browser, f"execution/{enc(arn)}")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#map-runs a"))
    browser.find_element(By.CSS_SELECTOR, "#map-runs a").click()
    # The Map Run's page: its status, its counts and its three children.
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#executions-table tbody tr[data-status]")) == 3)
    assert run["mapRunArn"].split(":")[-1] in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.CSS_SELECTOR, ".page-head .badge").get_attribute("class").endswith("status-succeeded")
    statuses = {row.get_attribute("data-status") for row in browser.find_elements(By.CSS_SELECTOR, "#executions-table tbody tr[data-status]")}
    assert statuses == {"SUCCEEDED"}
    counts = browser.find_elements(By.CSS_SELECTOR, "table.counts")
    assert len(counts) == 2
    assert "3" in counts[1].text
    shot(browser, "map-run")


def test_layout_and_history_fold_in_the_browser(world, browser):
    """The console's own layout and fold, run in the browser on a definition with a Choice loop,
    a Parallel whose branch fails and is caught, and a Distributed Map."""
    open_page(browser, "machines").until(EC.presence_of_element_located((By.ID, "machines-table")))
    result = browser.execute_async_script(LAYOUT_CHECK)
    assert "error" not in result, result
    nodes = {n["name"]: n for n in result["nodes"] if not n.get("terminal")}
    assert set(nodes) == {"Route", "Fan", "L1", "L2", "R1", "Each", "I", "Again", "Reject", "Done"}

    def inside(inner, outer):
        return (outer["x"] <= inner["x"] and inner["x"] + inner["w"] <= outer["x"] + outer["w"]
                and outer["y"] <= inner["y"] and inner["y"] + inner["h"] <= outer["y"] + outer["h"])

    for child, parent in [("L1", "Fan"), ("L2", "Fan"), ("R1", "Fan"), ("I", "Each")]:
        assert inside(nodes[child], nodes[parent]), (child, parent)
    leaves = [n for n in nodes.values() if not n.get("compound")]
    for i, a in enumerate(leaves):
        for b in leaves[i + 1:]:
            apart = a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"] or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"]
            assert apart, (a["name"], b["name"])
    for n in result["nodes"]:
        assert 0 <= n["x"] and n["x"] + n["w"] <= result["width"] and 0 <= n["y"] and n["y"] + n["h"] <= result["height"], n["name"]
    assert nodes["Route"]["y"] < nodes["Fan"]["y"] < nodes["Each"]["y"] < nodes["Again"]["y"]
    assert "distributed" in nodes["Each"]["typeLabel"]
    kinds = {(e["from"], e["to"]): e for e in result["edges"]}
    assert kinds[("Again", "Route")]["loop"], "the loop back to Route goes around"
    assert kinds[("Fan", "Reject")]["kind"] == "catch"
    assert kinds[("Route", "Reject")]["kind"] == "default"
    assert all(len(e["points"]) >= 2 for e in result["edges"])
    assert result["statuses"] == {"Route": "succeeded", "Fan": "caught", "L1": "succeeded", "R1": "failed", "Reject": "failed"}
    assert result["running"] == {"Route": "succeeded", "Fan": "running", "L1": "running"}
    assert result["failure"] == [True, True, True, False]


@pytest.fixture(scope="module")
def secured():
    """A second server, with a credentials file: the console must sign with a typed key."""
    if not BIN:
        pytest.skip("STATELOG_BIN not set")
    with tempfile.TemporaryDirectory() as data:
        creds = Path(data) / "credentials.json"
        creds.write_text(json.dumps({"AKIDCONSOLE": {"secret_access_key": "console-secret/+", "account_id": "123456789012"}}))
        process, endpoint = start_server(["--data-dir", str(Path(data) / "data"), "--credentials", str(creds), "--metrics-listen", "off"])
        try:
            yield endpoint
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def test_sign_in_signs_with_sigv4(secured, browser):
    sfn = boto(secured, "AKIDCONSOLE", "console-secret/+")
    sfn.create_state_machine(name="signed-machine", definition=json.dumps(SUCCEEDS), roleArn="arn:aws:iam::123456789012:role/r")
    wait = open_page(browser, "machines", secured)
    wait.until(EC.presence_of_element_located((By.ID, "sign-in-form")))
    browser.find_element(By.ID, "access-key-id").send_keys("AKIDCONSOLE")
    browser.find_element(By.ID, "secret-access-key").send_keys("wrong-secret")
    browser.find_element(By.ID, "sign-in").click()
    alert = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#sign-in-form .notice.error")))
    assert "InvalidSignatureException" in alert.text
    secret = browser.find_element(By.ID, "secret-access-key")
    secret.clear()
    secret.send_keys("console-secret/+")
    browser.find_element(By.ID, "sign-in").click()
    wait.until(EC.presence_of_element_located((By.ID, "machines-table")))
    assert "signed-machine" in browser.find_element(By.ID, "machines-table").text
    # The keys stay for the tab: a reload opens the page again without asking.
    browser.refresh()
    wait.until(EC.presence_of_element_located((By.ID, "machines-table")))
    browser.execute_script("sessionStorage.clear()")


def test_first_events_page_of_25000_events(world, browser, capsys):
    """Reports (does not assert) the time to the first Events page of a 25,000-event history:
    a loop that would run longer stops at the history limit with exactly 25,000 events."""
    sfn = world["sfn"]
    arn = sfn.create_state_machine(name=f"console-big-{world['tag']}", definition=json.dumps(loop(10_000)), roleArn=ROLE)["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, name=f"big-{world['tag']}")["executionArn"]
    wait_status(sfn, execution, {"FAILED"}, timeout=120)
    total = count_events(sfn, execution)
    assert total == 25000
    figures = []
    for _ in range(3):
        browser.get("about:blank")
        wait = open_page(browser, f"execution/{enc(execution)}")
        wait_events(wait, browser, 1)
        figures.append(browser.execute_script("return performance.getEntriesByName('statelog-events-first-page')[0].startTime"))
    shot(browser, "execution-25000-events")
    figure = (f"console figures: first Events page of a {total}-event execution: "
              f"{', '.join(f'{ms:.0f}' for ms in figures)} ms from navigation (3 loads)")
    (ARTIFACTS / "figures.txt").write_text(figure + "\n")
    # Printed past pytest's capture, so run.sh's quiet run shows it too.
    with capsys.disabled():
        print(f"\n{figure}")
