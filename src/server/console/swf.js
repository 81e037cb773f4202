// swf: Amazon SWF, as the server speaks it: the registered domains (ListDomains), and one
// domain's open and closed workflow executions (ListOpenWorkflowExecutions,
// ListClosedWorkflowExecutions), signed for the service `swf`.

import { swf } from "./api.js";
import { h, replace, formatDate, statusBadge, errorBox, unsupportedBox, isUnsupported, link, enc, pageTitle } from "./dom.js";

export async function swfPage(main) {
  let domains = [];
  try {
    for (const registrationStatus of ["REGISTERED", "DEPRECATED"]) {
      let token = null;
      do {
        const page = await swf("ListDomains", { registrationStatus, maximumPageSize: 1000, ...(token ? { nextPageToken: token } : {}) });
        domains.push(...(page.domainInfos ?? []));
        token = page.nextPageToken;
      } while (token);
    }
  } catch (error) {
    replace(main, pageTitle("Amazon SWF domains"), isUnsupported(error) ? unsupportedBox(error, "Amazon SWF") : errorBox(error, "ListDomains"));
    return;
  }
  domains = domains.sort((a, b) => a.name.localeCompare(b.name));
  replace(main, pageTitle("Amazon SWF domains"),
    h("div", { class: "table-scroll card" }, h("table", { class: "list", id: "swf-domains" },
      h("caption", { class: "sr-only" }, "Amazon SWF domains"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Domain"), h("th", { scope: "col" }, "Status"), h("th", { scope: "col" }, "Description"))),
      h("tbody", {}, domains.length ? domains.map((d) => h("tr", {},
        h("th", { scope: "row" }, link(`swf/${enc(d.name)}`, d.name)),
        h("td", {}, statusBadge(d.status)),
        h("td", {}, d.description ?? "")))
        : h("tr", {}, h("td", { colspan: "3", class: "empty" }, "No domains."))))));
}

async function listAll(operation, domain) {
  const items = [];
  let token = null;
  do {
    const page = await swf(operation, {
      domain, startTimeFilter: { oldestDate: 0 }, maximumPageSize: 1000, reverseOrder: false,
      ...(token ? { nextPageToken: token } : {}),
    });
    items.push(...(page.executionInfos ?? []));
    token = page.nextPageToken;
  } while (token && items.length < 5000);
  return items;
}

export async function swfDomainPage(main, domain) {
  let open;
  let closed;
  try {
    [open, closed] = await Promise.all([listAll("ListOpenWorkflowExecutions", domain), listAll("ListClosedWorkflowExecutions", domain)]);
  } catch (error) {
    replace(main, pageTitle(`Domain ${domain}`), errorBox(error, "Listing the workflow executions"));
    return;
  }
  const all = [...open, ...closed].sort((a, b) => b.startTimestamp - a.startTimestamp);
  replace(main, pageTitle(`Domain ${domain}`),
    h("p", { class: "crumbs" }, link("swf", "Amazon SWF"), " / ", domain),
    h("div", { class: "table-scroll card" }, h("table", { class: "list", id: "swf-executions" },
      h("caption", {}, `${open.length} open, ${closed.length} closed workflow executions`),
      h("thead", {}, h("tr", {}, ["Workflow id", "Run id", "Type", "Status", "Started", "Closed"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, all.length ? all.map((e) => h("tr", {},
        h("th", { scope: "row" }, e.execution?.workflowId),
        h("td", {}, h("code", {}, e.execution?.runId)),
        h("td", {}, `${e.workflowType?.name} ${e.workflowType?.version}`),
        h("td", {}, statusBadge(e.executionStatus === "CLOSED" ? e.closeStatus : e.executionStatus)),
        h("td", {}, formatDate(e.startTimestamp)),
        h("td", {}, e.closeTimestamp ? formatDate(e.closeTimestamp) : "—")))
        : h("tr", {}, h("td", { colspan: "6", class: "empty" }, "No workflow executions."))))));
}
