// events: the Events table of one execution, as the Step Functions console shows it: 25 events
// a page (GetExecutionHistory with maxResults 25 and nextToken, reverseOrder for newest first;
// nothing past the page shown is read), id, type, state, elapsed time from the start, details
// expandable, failures in red with a text marker, a filter by type. A filtered view reads the
// history in pages of PAGE_SCAN_MAX until it has the events of the page asked for.

import { sfn } from "./api.js";
import { h, replace, formatDate, formatDuration, errorBox } from "./dom.js";
import { isFailure, stateOf, detailsOf, EVENT_TYPES } from "./history.js";

/** Events a page (the Step Functions console's). */
export const PAGE_EVENTS = 25;
/** The page size of a filtered view's scan (GetExecutionHistory's largest). */
const PAGE_SCAN_MAX = 1000;
/** Events remembered for naming states (previousEventId walks). */
const KNOWN_EVENTS_MAX = 50000;

/**
 * The Events table of `executionArn`, whose start is `startSeconds` (AWS JSON). Returns a
 * section that loads its first page at once, then calls `afterFirstPage` (answered or not).
 */
export function eventsTable(executionArn, startSeconds, afterFirstPage = () => {}) {
  const known = new Map();
  const view = { reverse: false, type: "", page: 0, tokens: [null], matches: [], scanToken: null, scanDone: false };
  let generation = 0;

  const order = h("select", { id: "events-order", name: "order" },
    h("option", { value: "asc" }, "Oldest first"),
    h("option", { value: "desc" }, "Newest first"));
  const typeFilter = h("select", { id: "events-type", name: "type" },
    h("option", { value: "" }, "All event types"),
    EVENT_TYPES.map((t) => h("option", { value: t }, t)));
  const prev = h("button", { type: "button", class: "btn", id: "events-prev" }, "← Previous");
  const next = h("button", { type: "button", class: "btn", id: "events-next" }, "Next →");
  const pageLabel = h("span", { class: "page-label", id: "events-page", "aria-live": "polite" }, "");
  const status = h("p", { class: "table-status", role: "status" }, "Loading events…");
  const body = h("tbody", {});
  const table = h("table", { class: "events", "aria-describedby": "events-page" },
    h("caption", { class: "sr-only" }, "Events of this execution"),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col", class: "num" }, "ID"),
      h("th", { scope: "col" }, "Type"),
      h("th", { scope: "col" }, "State"),
      h("th", { scope: "col", class: "num" }, "Elapsed time"),
      h("th", { scope: "col" }, "Details"))),
    body);

  const row = (event) => {
    const failed = isFailure(event.type);
    const elapsed = (Number(event.timestamp) - Number(startSeconds)) * 1000;
    const details = detailsOf(event);
    const shown = { timestamp: formatDate(event.timestamp), previousEventId: event.previousEventId, ...(details ?? {}) };
    const state = stateOf(event, known);
    return h("tr", { class: failed ? "failed" : null, "data-event-id": event.id, "data-event-type": event.type },
      h("td", { class: "num" }, String(event.id)),
      h("td", { class: "type" },
        failed ? h("span", { class: "fail-mark" }, h("span", { "aria-hidden": "true" }, "✕ "), "Failure: ") : null,
        event.type),
      h("td", {}, state ?? h("span", { class: "muted" }, "—")),
      h("td", { class: "num" }, formatDuration(elapsed)),
      h("td", {}, h("details", {},
        h("summary", {}, details ? summaryOf(event, details) : "Details"),
        h("pre", { class: "json" }, JSON.stringify(shown, null, 2)))));
  };

  const remember = (events) => {
    if (known.size > KNOWN_EVENTS_MAX) known.clear();
    for (const event of events) known.set(event.id, event);
  };

  const history = (token, maxResults) => sfn("GetExecutionHistory", {
    executionArn,
    maxResults,
    reverseOrder: view.reverse,
    includeExecutionData: true,
    ...(token ? { nextToken: token } : {}),
  });

  const show = (events, hasNext) => {
    replace(body, events.length ? events.map(row) : h("tr", {}, h("td", { colspan: "5", class: "empty" }, "No events match.")));
    prev.disabled = view.page === 0;
    next.disabled = !hasNext;
    const first = view.page * PAGE_EVENTS + 1;
    replace(pageLabel, events.length
      ? `Page ${view.page + 1}: events ${first}–${first + events.length - 1}${view.type ? ` of type ${view.type}` : ""}`
      : `Page ${view.page + 1}`);
    status.textContent = "";
  };

  const load = async () => {
    const mine = ++generation;
    status.textContent = "Loading events…";
    prev.disabled = true;
    next.disabled = true;
    try {
      if (!view.type) {
        const answer = await history(view.tokens[view.page], PAGE_EVENTS);
        if (mine !== generation) return;
        remember(answer.events ?? []);
        view.tokens[view.page + 1] = answer.nextToken ?? undefined;
        show(answer.events ?? [], Boolean(answer.nextToken));
      } else {
        const need = (view.page + 1) * PAGE_EVENTS + 1;
        while (view.matches.length < need && !view.scanDone) {
          status.textContent = `Reading the history for ${view.type} events…`;
          const answer = await history(view.scanToken, PAGE_SCAN_MAX);
          if (mine !== generation) return;
          remember(answer.events ?? []);
          view.matches.push(...(answer.events ?? []).filter((e) => e.type === view.type));
          view.scanToken = answer.nextToken ?? null;
          view.scanDone = !answer.nextToken;
        }
        const start = view.page * PAGE_EVENTS;
        show(view.matches.slice(start, start + PAGE_EVENTS), view.matches.length > start + PAGE_EVENTS);
      }
      if (!performance.getEntriesByName("statelog-events-first-page").length) {
        performance.mark("statelog-events-first-page");
      }
    } catch (error) {
      if (mine !== generation) return;
      replace(body, h("tr", {}, h("td", { colspan: "5" }, errorBox(error, "Reading the history"))));
      status.textContent = "";
    }
  };

  const restart = () => {
    view.page = 0;
    view.tokens = [null];
    view.matches = [];
    view.scanToken = null;
    view.scanDone = false;
    load();
  };
  order.addEventListener("change", () => {
    view.reverse = order.value === "desc";
    restart();
  });
  typeFilter.addEventListener("change", () => {
    view.type = typeFilter.value;
    restart();
  });
  prev.addEventListener("click", () => {
    if (view.page > 0) {
      view.page -= 1;
      load();
    }
  });
  next.addEventListener("click", () => {
    view.page += 1;
    load();
  });
  load().finally(afterFirstPage);

  return h("section", { class: "card", "aria-labelledby": "events-heading", id: "events" },
    h("div", { class: "card-head" },
      h("h2", { id: "events-heading" }, "Events"),
      h("div", { class: "toolbar" },
        h("label", { for: "events-order" }, "Order"), order,
        h("label", { for: "events-type" }, "Type"), typeFilter)),
    status,
    h("div", { class: "table-scroll" }, table),
    h("nav", { class: "pager", "aria-label": "Pages of events" }, prev, pageLabel, next));
}

/** Text of at most `SUMMARY_CHARS_MAX` characters. */
const SUMMARY_CHARS_MAX = 100;
function clip(text) {
  const line = String(text).replace(/\s+/g, " ");
  return line.length > SUMMARY_CHARS_MAX ? `${line.slice(0, SUMMARY_CHARS_MAX - 1)}…` : line;
}

/** A one-line summary of an event's details for its `<summary>`: what a reader looks for first. */
function summaryOf(event, details) {
  if (details.error || details.cause) return clip([details.error, details.cause].filter(Boolean).join(": "));
  if (details.resource) return clip(`${details.resourceType ?? ""} ${details.resource}`.trim());
  if (details.output !== undefined) return clip(`Output ${details.output}`);
  if (details.input !== undefined) return clip(`Input ${details.input}`);
  return "Details";
}
