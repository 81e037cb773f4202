// dom: small helpers every page shares: building elements (text is always set as text, never
// parsed as HTML), dates, durations, status badges, error boxes and confirmation dialogs.

/** An element: `h("a", {href: "#/x", class: "btn"}, "text", child, ...)`. */
export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces `el`'s children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A date from AWS JSON (epoch seconds) as local text. */
export function formatDate(seconds) {
  if (seconds === undefined || seconds === null) return "—";
  const date = new Date(Number(seconds) * 1000);
  return date.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
}

/** Milliseconds as `1h 2m 3.456s`. */
export function formatDuration(ms) {
  if (!Number.isFinite(ms)) return "—";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  const hours = Math.floor(rest / 3600000);
  rest -= hours * 3600000;
  const minutes = Math.floor(rest / 60000);
  rest -= minutes * 60000;
  const seconds = (rest / 1000).toFixed(3);
  if (hours) return `${sign}${hours}h ${minutes}m ${seconds}s`;
  if (minutes) return `${sign}${minutes}m ${seconds}s`;
  return `${sign}${seconds}s`;
}

const STATUS_WORDS = {
  RUNNING: "Running", SUCCEEDED: "Succeeded", FAILED: "Failed", TIMED_OUT: "Timed out",
  ABORTED: "Aborted", PENDING_REDRIVE: "Pending redrive", ACTIVE: "Active",
  OPEN: "Open", CLOSED: "Closed", COMPLETED: "Completed", CANCELED: "Canceled",
  TERMINATED: "Terminated", CONTINUED_AS_NEW: "Continued as new", REGISTERED: "Registered",
  DEPRECATED: "Deprecated",
};

/** A status word in a badge whose colour matches it (the word carries the meaning). */
export function statusBadge(status) {
  const word = STATUS_WORDS[status] ?? String(status ?? "—");
  return h("span", { class: `badge status-${String(status).toLowerCase()}` }, word);
}

/** A box saying what the API answered instead. */
export function errorBox(error, what) {
  const type = error?.type ? `${error.type}: ` : "";
  return h("div", { class: "notice error", role: "alert" },
    h("strong", {}, what ? `${what} failed. ` : "Failed. "),
    `${type}${error?.message ?? error}`);
}

/** A box for an operation this server does not offer (UnsupportedOperation, ...). */
export function unsupportedBox(error, what) {
  return h("div", { class: "notice info", role: "status" },
    h("strong", {}, `${what}: not available on this server. `),
    `${error?.type ?? "Error"}: ${error?.message ?? ""}`);
}

/** True when the API says the operation is not served here. */
export function isUnsupported(error) {
  return ["UnsupportedOperation", "UnknownOperationException"].includes(error?.type);
}

/** A definition list from [label, value] pairs (values may be nodes). */
export function facts(pairs) {
  return h("dl", { class: "facts" },
    pairs.filter(([, v]) => v !== undefined).map(([label, value]) => [h("dt", {}, label), h("dd", {}, value ?? "—")]));
}

/** Pretty JSON text of a JSON string (as is when it is not JSON). */
export function prettyJson(text) {
  if (text === undefined || text === null) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

/** A `<pre>` of JSON with a label for screen readers. */
export function jsonBlock(label, text) {
  return h("pre", { class: "json", tabindex: "0", "aria-label": label }, prettyJson(text));
}

let dialogCount = 0;

/**
 * Asks to confirm: a modal `<dialog>` with `title`, `text`, optional extra `fields` (nodes) and
 * a button labelled `confirmLabel`. Resolves true when confirmed.
 */
export function confirmDialog({ title, text, confirmLabel, fields = [], danger = false }) {
  return new Promise((resolve) => {
    const id = `dialog-${++dialogCount}`;
    const previous = document.activeElement;
    const cancel = h("button", { type: "button", class: "btn" }, "Cancel");
    const confirm = h("button", { type: "submit", class: danger ? "btn danger" : "btn primary" }, confirmLabel);
    const dialog = h("dialog", { class: "confirm", "aria-labelledby": `${id}-title`, "aria-describedby": `${id}-text` },
      h("form", { method: "dialog" },
        h("h2", { id: `${id}-title` }, title),
        h("p", { id: `${id}-text` }, text),
        fields,
        h("div", { class: "actions" }, cancel, confirm)));
    let answered = false;
    const finish = (value) => {
      if (answered) return;
      answered = true;
      dialog.close();
      dialog.remove();
      previous?.focus?.();
      resolve(value);
    };
    cancel.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", () => finish(false));
    dialog.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      finish(true);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/** A hash link to a console page. */
export function link(route, text, attrs = {}) {
  return h("a", { href: `#/${route}`, ...attrs }, text);
}

/** Encodes an ARN for a route. */
export function enc(value) {
  return encodeURIComponent(value);
}

/** A page heading that takes focus when a page opens (screen readers announce it). */
export function pageTitle(text, ...extra) {
  return h("div", { class: "page-head" }, h("h1", { tabindex: "-1", id: "page-title" }, text), extra);
}

/** The last segment of an ARN (a name). */
export function nameOf(arn) {
  const parts = String(arn ?? "").split(":");
  return parts[parts.length - 1] || String(arn ?? "");
}
