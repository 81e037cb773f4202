// app: the console's entry: the sign-in form (skipped in development mode), the hash router
// (#/executions, #/execution/ARN, ...) and the header. Each page module renders into <main>;
// after a page opens its heading takes focus so screen readers announce it.

import { server, keys, setKeys, forgetKeys, sfn, AUTH_ERRORS, ApiError } from "./api.js";
import { available } from "./sigv4.js";
import { h, replace, errorBox, pageTitle } from "./dom.js";
import { machinesPage, machinePage } from "./machines.js";
import { executionsPage, startPage } from "./executions.js";
import { executionPage } from "./execution.js";
import { activitiesPage } from "./activities.js";
import { mapRunPage } from "./map_runs.js";
import { swfPage, swfDomainPage } from "./swf.js";

const main = document.getElementById("main");
const who = document.getElementById("who");

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [section = "", ...rest] = path.split("/");
  return { section, arg: rest.length ? decodeURIComponent(rest.join("/")) : "", params: new URLSearchParams(query) };
}

const PAGES = {
  machines: () => machinesPage(main),
  machine: (r) => machinePage(main, r.arg),
  executions: (r) => executionsPage(main, r.params),
  execution: (r) => executionPage(main, r.arg, render),
  start: (r) => startPage(main, r.params),
  activities: () => activitiesPage(main),
  maprun: (r) => mapRunPage(main, r.arg),
  swf: (r) => (r.arg ? swfDomainPage(main, r.arg) : swfPage(main)),
};
const SECTION_OF = { machine: "machines", execution: "executions", start: "executions", maprun: "executions" };

async function render() {
  const route = parseRoute();
  if (!available()) {
    replace(main, pageTitle("The console cannot sign requests"), errorBox(new ApiError("InsecureContext",
      "This page is not a secure context, so the browser offers no Web Crypto to sign API requests. Open the console over HTTPS (a reverse proxy that keeps the Host header) or on a loopback address.")));
    return;
  }
  if (!keys()) {
    signIn();
    return;
  }
  header();
  const page = PAGES[route.section];
  if (!page) {
    location.replace("#/executions");
    return;
  }
  const section = SECTION_OF[route.section] ?? route.section;
  for (const a of document.querySelectorAll("nav a[data-section]")) {
    if (a.dataset.section === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  replace(main, h("p", { class: "loading", role: "status" }, "Loading…"));
  document.title = `${section.replace(/^./, (c) => c.toUpperCase())} · statelog console`;
  try {
    await page(route);
  } catch (error) {
    if (AUTH_ERRORS.has(error.type) && !server.development) {
      forgetKeys();
      signIn(error);
      return;
    }
    replace(main, pageTitle("Something went wrong"), errorBox(error));
  }
  const title = document.getElementById("page-title");
  if (title) {
    document.title = `${title.textContent} · statelog console`;
    title.focus({ preventScroll: true });
  }
}

function header() {
  replace(who, server.development
    ? h("span", { class: "badge mode" }, "Development mode")
    : [h("span", { class: "muted" }, keys()?.accessKeyId ?? ""), " ",
       h("button", { type: "button", class: "btn small", onclick: () => { forgetKeys(); signIn(); } }, "Sign out")]);
  who.append(" ", h("span", { class: "muted region" }, server.region));
}

function signIn(failure) {
  replace(who, h("span", { class: "muted region" }, server.region));
  const keyId = h("input", { id: "access-key-id", name: "accessKeyId", required: true, autocomplete: "username", spellcheck: "false" });
  const secret = h("input", { id: "secret-access-key", name: "secretAccessKey", type: "password", required: true, autocomplete: "current-password" });
  const outcome = h("div", { "aria-live": "polite" }, failure ? errorBox(failure, "Signing in") : null);
  const submit = h("button", { type: "submit", class: "btn primary", id: "sign-in" }, "Sign in");
  const form = h("form", { class: "card form sign-in", id: "sign-in-form" },
    h("p", {}, "This server checks every request's AWS Signature Version 4. Type an access key of its credentials file: it signs the console's requests in this browser and is kept for this tab only (session storage); it is never sent."),
    h("label", { for: "access-key-id" }, "Access key ID"), keyId,
    h("label", { for: "secret-access-key" }, "Secret access key"), secret,
    h("div", { class: "actions" }, submit), outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = { accessKeyId: keyId.value.trim(), secretAccessKey: secret.value };
    submit.disabled = true;
    try {
      await sfn("ListStateMachines", { maxResults: 1 }, candidate);
      setKeys(candidate);
      if (!location.hash || location.hash === "#/") location.hash = "#/executions";
      else render();
    } catch (error) {
      replace(outcome, errorBox(error, "Signing in"));
      submit.disabled = false;
    }
  });
  replace(main, pageTitle("Sign in"), form);
  keyId.focus();
}

window.addEventListener("hashchange", render);
if (!location.hash || location.hash === "#/") history.replaceState(null, "", "#/executions");
render();
