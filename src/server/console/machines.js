// machines: the state machines list and one machine's page: its details, graph, definition,
// versions and aliases (when the server has them), and its newest executions.

import { sfn } from "./api.js";
import {
  h, replace, facts, formatDate, errorBox, unsupportedBox, isUnsupported, link, enc, pageTitle, nameOf, prettyJson,
} from "./dom.js";
import { graphFigure } from "./graph.js";
import { allMachines, executionsTable } from "./executions.js";

/** The list of state machines. */
export async function machinesPage(main) {
  let machines;
  try {
    machines = await allMachines();
  } catch (error) {
    replace(main, pageTitle("State machines"), errorBox(error, "ListStateMachines"));
    return;
  }
  machines.sort((a, b) => a.name.localeCompare(b.name));
  replace(main, pageTitle("State machines"),
    h("div", { class: "table-scroll card" }, h("table", { class: "list", id: "machines-table" },
      h("caption", { class: "sr-only" }, "State machines"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Type"),
        h("th", { scope: "col" }, "Created"), h("th", { scope: "col" }, "Executions"))),
      h("tbody", {}, machines.length ? machines.map((m) => h("tr", {},
        h("th", { scope: "row" }, link(`machine/${enc(m.stateMachineArn)}`, m.name)),
        h("td", {}, m.type),
        h("td", {}, formatDate(m.creationDate)),
        h("td", {}, link(`executions?machine=${enc(m.stateMachineArn)}`, "Executions"))))
        : h("tr", {}, h("td", { colspan: "4", class: "empty" }, "No state machines yet: create one with the AWS CLI or an SDK."))))));
}

/** One state machine's page. */
export async function machinePage(main, arn) {
  let machine;
  try {
    machine = await sfn("DescribeStateMachine", { stateMachineArn: arn });
  } catch (error) {
    replace(main, pageTitle("State machine"), errorBox(error, "DescribeStateMachine"));
    return;
  }
  const versions = h("section", { class: "card", "aria-labelledby": "versions-heading" }, h("h2", { id: "versions-heading" }, "Versions and aliases"), h("p", { class: "muted" }, "Loading…"));
  const recent = h("section", { class: "card", "aria-labelledby": "recent-heading" }, h("h2", { id: "recent-heading" }, "Newest executions"), h("p", { class: "muted" }, "Loading…"));
  replace(main,
    pageTitle(machine.name,
      link(`start?machine=${enc(machine.stateMachineArn)}`, "Start execution", { class: "btn primary", id: "start-link" }),
      link(`executions?machine=${enc(machine.stateMachineArn)}`, "All executions", { class: "btn" })),
    h("p", { class: "crumbs" }, link("machines", "State machines"), " / ", machine.name),
    h("section", { class: "card", "aria-labelledby": "machine-heading" },
      h("h2", { id: "machine-heading" }, "Details"),
      facts([
        ["Type", machine.type], ["Status", machine.status], ["Created", formatDate(machine.creationDate)],
        ["Role", machine.roleArn], machine.description ? ["Description", machine.description] : [undefined],
        ["ARN", h("code", {}, machine.stateMachineArn)],
      ].filter(([label]) => label))),
    h("section", { class: "card", "aria-labelledby": "graph-heading" }, h("h2", { id: "graph-heading" }, "Graph"),
      graphFigure(machine.definition, null, `Graph of ${machine.name}`)),
    h("section", { class: "card", "aria-labelledby": "definition-heading" }, h("h2", { id: "definition-heading" }, "Definition"),
      h("pre", { class: "json definition", tabindex: "0", "aria-label": "Definition" }, prettyJson(machine.definition))),
    versions, recent);

  try {
    const answer = await sfn("ListExecutions", { stateMachineArn: arn, maxResults: 10 });
    replace(recent, recent.querySelector("h2"), executionsTable(answer.executions ?? [], `Newest executions of ${machine.name}`));
  } catch (error) {
    replace(recent, recent.querySelector("h2"), errorBox(error, "ListExecutions"));
  }
  const parts = [versions.querySelector("h2")];
  try {
    const answer = await sfn("ListStateMachineVersions", { stateMachineArn: arn, maxResults: 100 });
    const items = answer.stateMachineVersions ?? [];
    parts.push(h("h3", {}, "Versions"), items.length
      ? h("ul", { class: "plain" }, items.map((v) => h("li", {}, link(`machine/${enc(v.stateMachineVersionArn)}`, `Version ${nameOf(v.stateMachineVersionArn)}`), ` — ${formatDate(v.creationDate)}`)))
      : h("p", { class: "muted" }, "No published versions."));
  } catch (error) {
    parts.push(isUnsupported(error) ? unsupportedBox(error, "Versions") : errorBox(error, "ListStateMachineVersions"));
  }
  try {
    const answer = await sfn("ListStateMachineAliases", { stateMachineArn: arn, maxResults: 100 });
    const items = answer.stateMachineAliases ?? [];
    parts.push(h("h3", {}, "Aliases"), items.length
      ? h("ul", { class: "plain" }, items.map((a) => h("li", {}, h("code", {}, nameOf(a.stateMachineAliasArn)), ` — ${formatDate(a.creationDate)}`)))
      : h("p", { class: "muted" }, "No aliases."));
  } catch (error) {
    parts.push(isUnsupported(error) ? unsupportedBox(error, "Aliases") : errorBox(error, "ListStateMachineAliases"));
  }
  replace(versions, ...parts);
}
