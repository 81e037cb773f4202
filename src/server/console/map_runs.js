// map_runs: one Map Run (a Distributed Map's run): its status, item and child execution counts
// (DescribeMapRun), and its child executions (ListExecutions with mapRunArn). A server without
// Distributed Map answers UnsupportedOperation, which the page says plainly.

import { sfn } from "./api.js";
import { h, replace, facts, formatDate, statusBadge, errorBox, unsupportedBox, isUnsupported, pageTitle, link, enc, nameOf } from "./dom.js";
import { executionsTable, pager } from "./executions.js";

const COUNTS = ["pending", "running", "succeeded", "failed", "timedOut", "aborted", "total", "resultsWritten", "failuresNotRedrivable", "pendingRedrive"];

function countsTable(caption, counts) {
  const present = COUNTS.filter((k) => counts?.[k] !== undefined);
  return h("table", { class: "list counts" }, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, present.map((k) => h("th", { scope: "col", class: "num" }, k)))),
    h("tbody", {}, h("tr", {}, present.map((k) => h("td", { class: "num" }, String(counts[k]))))));
}

export async function mapRunPage(main, arn) {
  let run;
  try {
    run = await sfn("DescribeMapRun", { mapRunArn: arn });
  } catch (error) {
    replace(main, pageTitle("Map Run"), isUnsupported(error) ? unsupportedBox(error, "Map Runs") : errorBox(error, "DescribeMapRun"));
    return;
  }
  const children = h("section", { class: "card", "aria-labelledby": "children-heading" }, h("h2", { id: "children-heading" }, "Child executions"), h("p", { class: "muted" }, "Loading…"));
  replace(main,
    pageTitle(`Map Run ${nameOf(arn)}`, statusBadge(run.status)),
    h("section", { class: "card", "aria-labelledby": "run-heading" }, h("h2", { id: "run-heading" }, "Details"),
      facts([
        ["Execution", link(`execution/${enc(run.executionArn)}`, nameOf(run.executionArn))],
        ["Started", formatDate(run.startDate)], ["Stopped", run.stopDate ? formatDate(run.stopDate) : "—"],
        ["Max concurrency", String(run.maxConcurrency ?? "—")],
        ["Tolerated failures", `${run.toleratedFailureCount ?? 0} (${run.toleratedFailurePercentage ?? 0}%)`],
        ["Redrives", String(run.redriveCount ?? 0)],
        ["ARN", h("code", {}, arn)],
      ]),
      countsTable("Items", run.itemCounts), countsTable("Child executions", run.executionCounts)),
    children);
  const tokens = [null];
  let page = 0;
  const load = async () => {
    try {
      const answer = await sfn("ListExecutions", { mapRunArn: arn, maxResults: 25, ...(tokens[page] ? { nextToken: tokens[page] } : {}) });
      tokens[page + 1] = answer.nextToken;
      replace(children, children.querySelector("h2"), executionsTable(answer.executions ?? [], "Child executions"),
        pager(page, Boolean(answer.nextToken), (d) => { page += d; load(); }));
    } catch (error) {
      replace(children, children.querySelector("h2"), errorBox(error, "ListExecutions"));
    }
  };
  load();
}
