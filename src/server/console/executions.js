// executions: the executions list (one state machine's, paged by the API 25 at a time, or the
// newest of every machine merged), newest first, filtered by status; and the Start execution
// form, whose input editor checks the JSON as it is typed.

import { sfn } from "./api.js";
import { h, replace, formatDate, statusBadge, errorBox, link, enc, pageTitle, nameOf } from "./dom.js";

const PAGE = 25;
/** Executions read per machine when every machine's are merged. */
const MERGED_PER_MACHINE_MAX = 100;
const STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"];

/** Every state machine (paged through). */
export async function allMachines() {
  const machines = [];
  let token = null;
  do {
    const page = await sfn("ListStateMachines", { maxResults: 1000, ...(token ? { nextToken: token } : {}) });
    machines.push(...(page.stateMachines ?? []));
    token = page.nextToken;
  } while (token);
  return machines;
}

/** A table of executions (ListExecutions items). */
export function executionsTable(items, caption) {
  return h("div", { class: "table-scroll" }, h("table", { class: "list", id: "executions-table" },
    h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Status"),
      h("th", { scope: "col" }, "State machine"), h("th", { scope: "col" }, "Started"),
      h("th", { scope: "col" }, "Stopped"))),
    h("tbody", {}, items.length ? items.map((e) => h("tr", { "data-status": e.status },
      h("th", { scope: "row" }, link(`execution/${enc(e.executionArn)}`, e.name)),
      h("td", {}, statusBadge(e.status)),
      h("td", {}, link(`machine/${enc(e.stateMachineArn)}`, nameOf(e.stateMachineArn))),
      h("td", {}, formatDate(e.startDate)),
      h("td", {}, e.stopDate ? formatDate(e.stopDate) : "—")))
      : h("tr", {}, h("td", { colspan: "5", class: "empty" }, "No executions.")))));
}

/** The executions page; `params`: machine (ARN) and status. */
export async function executionsPage(main, params) {
  const machineArn = params.get("machine") ?? "";
  const status = params.get("status") ?? "";
  let machines;
  try {
    machines = await allMachines();
  } catch (error) {
    replace(main, pageTitle("Executions"), errorBox(error, "ListStateMachines"));
    return;
  }
  const go = (machine, filter) => {
    const query = new URLSearchParams();
    if (machine) query.set("machine", machine);
    if (filter) query.set("status", filter);
    location.hash = `#/executions${query.toString() ? `?${query}` : ""}`;
  };
  const machineSelect = h("select", { id: "filter-machine", onchange: (e) => go(e.target.value, status) },
    h("option", { value: "" }, "All state machines"),
    machines.map((m) => h("option", { value: m.stateMachineArn, selected: m.stateMachineArn === machineArn }, m.name)));
  const statusSelect = h("select", { id: "filter-status", onchange: (e) => go(machineArn, e.target.value) },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((s) => h("option", { value: s, selected: s === status }, s.replace("_", " ").toLowerCase().replace(/^./, (c) => c.toUpperCase()))));
  const start = machineArn
    ? link(`start?machine=${enc(machineArn)}`, "Start execution", { class: "btn primary", id: "start-link" })
    : null;
  const listing = h("div", {}, h("p", { class: "muted", role: "status" }, "Loading executions…"));
  replace(main,
    pageTitle("Executions", start),
    h("div", { class: "toolbar card" },
      h("label", { for: "filter-machine" }, "State machine"), machineSelect,
      h("label", { for: "filter-status" }, "Status"), statusSelect),
    listing);

  const filter = status ? { statusFilter: status } : {};
  if (machineArn) {
    const tokens = [null];
    let page = 0;
    const load = async () => {
      try {
        const answer = await sfn("ListExecutions", { stateMachineArn: machineArn, maxResults: PAGE, ...filter, ...(tokens[page] ? { nextToken: tokens[page] } : {}) });
        tokens[page + 1] = answer.nextToken;
        replace(listing, executionsTable(answer.executions ?? [], `Executions of ${nameOf(machineArn)}`),
          pager(page, Boolean(answer.nextToken), (delta) => { page += delta; load(); }));
      } catch (error) {
        replace(listing, errorBox(error, "ListExecutions"));
      }
    };
    load();
    return;
  }
  try {
    const lists = await Promise.all(machines.map((m) => sfn("ListExecutions", { stateMachineArn: m.stateMachineArn, maxResults: MERGED_PER_MACHINE_MAX, ...filter })));
    const merged = lists.flatMap((l) => l.executions ?? []).sort((a, b) => b.startDate - a.startDate);
    const truncated = lists.some((l) => l.nextToken);
    let page = 0;
    const show = () => replace(listing,
      executionsTable(merged.slice(page * PAGE, (page + 1) * PAGE), "Executions of every state machine"),
      pager(page, merged.length > (page + 1) * PAGE, (delta) => { page += delta; show(); }),
      truncated ? h("p", { class: "muted" }, `Showing the newest ${MERGED_PER_MACHINE_MAX} executions of each state machine; choose a state machine to page through all of its executions.`) : null);
    show();
  } catch (error) {
    replace(listing, errorBox(error, "ListExecutions"));
  }
}

/** Previous / Next buttons; `move(delta)` turns the page. */
export function pager(page, hasNext, move) {
  return h("nav", { class: "pager", "aria-label": "Pages" },
    h("button", { type: "button", class: "btn", disabled: page === 0, onclick: () => move(-1) }, "← Previous"),
    h("span", { class: "page-label" }, `Page ${page + 1}`),
    h("button", { type: "button", class: "btn", disabled: !hasNext, onclick: () => move(1) }, "Next →"));
}

/** The Start execution form for `params.machine`. */
export async function startPage(main, params) {
  const machineArn = params.get("machine") ?? "";
  const name = h("input", { id: "start-name", name: "name", maxlength: "80", autocomplete: "off", "aria-describedby": "start-name-help" });
  const input = h("textarea", { id: "start-input", name: "input", rows: "12", spellcheck: "false", "aria-describedby": "start-input-status" }, "{}");
  const inputStatus = h("p", { id: "start-input-status", class: "field-status", "aria-live": "polite" }, "Valid JSON.");
  const submit = h("button", { type: "submit", class: "btn primary", id: "start-submit" }, "Start execution");
  const outcome = h("div", { "aria-live": "polite" });
  const check = () => {
    try {
      JSON.parse(input.value);
      input.removeAttribute("aria-invalid");
      inputStatus.className = "field-status ok";
      inputStatus.textContent = "Valid JSON.";
      submit.disabled = false;
      return true;
    } catch (error) {
      input.setAttribute("aria-invalid", "true");
      inputStatus.className = "field-status bad";
      inputStatus.textContent = `Not valid JSON: ${error.message}`;
      submit.disabled = true;
      return false;
    }
  };
  input.addEventListener("input", check);
  const format = h("button", { type: "button", class: "btn", onclick: () => { if (check()) input.value = JSON.stringify(JSON.parse(input.value), null, 2); } }, "Format");
  const form = h("form", { class: "card form", id: "start-form" },
    h("p", {}, "State machine: ", link(`machine/${enc(machineArn)}`, nameOf(machineArn))),
    h("label", { for: "start-name" }, "Name (optional)"), name,
    h("p", { id: "start-name-help", class: "help" }, "1–80 characters; a name is chosen for you when left empty."),
    h("label", { for: "start-input" }, "Input (JSON)"), input, inputStatus,
    h("div", { class: "actions" }, format, submit),
    outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!check()) return;
    submit.disabled = true;
    try {
      const answer = await sfn("StartExecution", { stateMachineArn: machineArn, input: input.value, ...(name.value ? { name: name.value } : {}) });
      location.hash = `#/execution/${enc(answer.executionArn)}`;
    } catch (error) {
      replace(outcome, errorBox(error, "StartExecution"));
      submit.disabled = false;
    }
  });
  replace(main, pageTitle("Start execution"), form);
}
