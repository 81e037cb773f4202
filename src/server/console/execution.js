// execution: one execution's page: status, dates, input, output, error and cause; Stop and
// Redrive with confirmation; the graph of its definition coloured by its history; the Events
// table; its Map Runs. The Events table's first page is asked for first and the graph's read of
// the whole history waits for it, so a long history shows its events at once.

import { sfn } from "./api.js";
import {
  h, replace, facts, formatDate, formatDuration, statusBadge, errorBox, unsupportedBox,
  isUnsupported, jsonBlock, link, enc, pageTitle, confirmDialog, nameOf,
} from "./dom.js";
import { eventsTable } from "./events.js";
import { graphFigure } from "./graph.js";
import { foldStatuses } from "./history.js";

/** Events read at most to colour the graph (AWS's history limit). */
const GRAPH_EVENTS_MAX = 25000;
const REDRIVABLE = new Set(["FAILED", "TIMED_OUT", "ABORTED"]);

/** Renders the page of `arn` into `main`; `refresh` renders it again. */
export async function executionPage(main, arn, refresh) {
  let execution;
  try {
    execution = await sfn("DescribeExecution", { executionArn: arn });
  } catch (error) {
    replace(main, pageTitle("Execution"), errorBox(error, "DescribeExecution"));
    return;
  }
  // The events first: their first page must not wait for anything else, and the graph's read
  // of the whole history starts once it is shown.
  const graphSlot = h("div", { class: "graph-slot" }, h("p", { class: "muted", role: "status" }, "Drawing the graph…"));
  const events = eventsTable(arn, execution.startDate, () => drawGraph(arn, execution.status, graphSlot));

  const actions = h("div", { class: "actions" });
  const notice = h("div", { "aria-live": "polite" });
  if (execution.status === "RUNNING") {
    actions.append(h("button", { type: "button", class: "btn danger", id: "stop-execution", onclick: () => stop(arn, notice, refresh) }, "Stop execution"));
  }
  if (REDRIVABLE.has(execution.status)) {
    const redrivable = execution.redriveStatus !== "NOT_REDRIVABLE";
    actions.append(h("button", {
      type: "button", class: "btn primary", id: "redrive-execution", disabled: !redrivable,
      title: redrivable ? null : execution.redriveStatusReason ?? "Not redrivable",
      onclick: () => redrive(arn, notice, refresh),
    }, "Redrive"));
  }
  const machineArn = execution.stateMachineVersionArn ?? execution.stateMachineArn;
  const stopMs = execution.stopDate ? execution.stopDate * 1000 : Date.now();
  const summary = h("section", { class: "card", "aria-labelledby": "details-heading" },
    h("h2", { id: "details-heading" }, "Details"),
    facts([
      ["Status", h("span", { id: "execution-status" }, statusBadge(execution.status))],
      ["State machine", link(`machine/${enc(execution.stateMachineArn)}`, nameOf(execution.stateMachineArn))],
      machineArn !== execution.stateMachineArn ? ["Version", machineArn] : [undefined, undefined],
      ["Started", formatDate(execution.startDate)],
      ["Stopped", execution.stopDate ? formatDate(execution.stopDate) : "—"],
      ["Duration", formatDuration(stopMs - execution.startDate * 1000)],
      ["Redrives", h("span", { id: "redrive-count" }, String(execution.redriveCount ?? 0))],
      execution.redriveDate ? ["Last redrive", formatDate(execution.redriveDate)] : [undefined, undefined],
      execution.mapRunArn ? ["Map Run", link(`maprun/${enc(execution.mapRunArn)}`, nameOf(execution.mapRunArn))] : [undefined, undefined],
      ["ARN", h("code", {}, arn)],
    ].filter(([label]) => label)));
  const problem = execution.error || execution.cause
    ? h("section", { class: "card problem", "aria-labelledby": "problem-heading", id: "execution-error" },
        h("h2", { id: "problem-heading" }, h("span", { "aria-hidden": "true" }, "✕ "), "Error"),
        facts([["Error", h("code", {}, execution.error ?? "—")], ["Cause", h("pre", { class: "cause" }, execution.cause ?? "—")]]))
    : null;
  const io = h("section", { class: "card two", "aria-label": "Input and output" },
    h("div", {}, h("h2", {}, "Input"), jsonBlock("Execution input", execution.input)),
    h("div", {}, h("h2", {}, "Output"), execution.output !== undefined
      ? jsonBlock("Execution output", execution.output)
      : h("p", { class: "muted" }, execution.status === "RUNNING" ? "Not yet: the execution is running." : "None.")));
  const graph = h("section", { class: "card", "aria-labelledby": "graph-heading", id: "graph" },
    h("h2", { id: "graph-heading" }, "Graph"), graphSlot);
  const mapRuns = h("section", { class: "card", "aria-labelledby": "mapruns-heading", id: "map-runs" },
    h("h2", { id: "mapruns-heading" }, "Map Runs"), h("p", { class: "muted" }, "Loading…"));

  replace(main,
    pageTitle(execution.name, statusBadge(execution.status), actions),
    h("p", { class: "crumbs" }, link("executions", "Executions"), " / ",
      link(`executions?machine=${enc(execution.stateMachineArn)}`, nameOf(execution.stateMachineArn)), " / ", execution.name),
    notice, problem, summary, graph, io, events, mapRuns);

  listMapRuns(arn, mapRuns);
}

async function drawGraph(arn, status, slot) {
  try {
    const described = await sfn("DescribeStateMachineForExecution", { executionArn: arn });
    const events = [];
    let token = null;
    do {
      const page = await sfn("GetExecutionHistory", { executionArn: arn, maxResults: 1000, includeExecutionData: false, ...(token ? { nextToken: token } : {}) });
      events.push(...(page.events ?? []));
      token = page.nextToken;
    } while (token && events.length < GRAPH_EVENTS_MAX);
    replace(slot, graphFigure(described.definition, foldStatuses(events, status), `Graph of ${described.name}`));
  } catch (error) {
    replace(slot, errorBox(error, "Drawing the graph"));
  }
}

async function listMapRuns(arn, section) {
  const heading = section.querySelector("h2");
  try {
    const answer = await sfn("ListMapRuns", { executionArn: arn, maxResults: 100 });
    const runs = answer.mapRuns ?? [];
    replace(section, heading, runs.length
      ? h("ul", { class: "plain" }, runs.map((r) => h("li", {}, link(`maprun/${enc(r.mapRunArn)}`, nameOf(r.mapRunArn)), ` — started ${formatDate(r.startDate)}`)))
      : h("p", { class: "muted" }, "This execution has no Distributed Map runs."));
  } catch (error) {
    replace(section, heading, isUnsupported(error) ? unsupportedBox(error, "Map Runs") : errorBox(error, "ListMapRuns"));
  }
}

async function stop(arn, notice, refresh) {
  const error = h("input", { id: "stop-error", name: "error", maxlength: "256", autocomplete: "off" });
  const cause = h("textarea", { id: "stop-cause", name: "cause", rows: "3", maxlength: "32768" });
  const ok = await confirmDialog({
    title: "Stop this execution?",
    text: "A stopped execution cannot be resumed; a redrive may restart it from where it stopped.",
    confirmLabel: "Stop execution",
    danger: true,
    fields: [
      h("label", { for: "stop-error" }, "Error (optional)"), error,
      h("label", { for: "stop-cause" }, "Cause (optional)"), cause,
    ],
  });
  if (!ok) return;
  try {
    await sfn("StopExecution", {
      executionArn: arn,
      ...(error.value ? { error: error.value } : {}),
      ...(cause.value ? { cause: cause.value } : {}),
    });
    refresh();
  } catch (failure) {
    replace(notice, errorBox(failure, "StopExecution"));
  }
}

async function redrive(arn, notice, refresh) {
  const ok = await confirmDialog({
    title: "Redrive this execution?",
    text: "The execution restarts from the states that did not succeed, with the same input; the states that succeeded are not run again.",
    confirmLabel: "Redrive",
  });
  if (!ok) return;
  try {
    await sfn("RedriveExecution", { executionArn: arn, clientToken: crypto.randomUUID?.() ?? String(Date.now()) });
    refresh();
  } catch (failure) {
    replace(notice, errorBox(failure, "RedriveExecution"));
  }
}
