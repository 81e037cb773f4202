// api: the console's only way to the server: AWS JSON 1.0 calls to `POST /`, signed with SigV4
// (sigv4.js) exactly as an SDK signs them. Step Functions calls sign for the service `states`,
// Amazon SWF calls for `swf`. The keys live in sessionStorage (this tab only); in development
// mode the server accepts any well-formed signature and the console signs with a fixed key.

import * as sigv4 from "./sigv4.js";

const KEYS = "statelog.console.keys";
const DEVELOPMENT_KEYS = { accessKeyId: "statelog-console", secretAccessKey: "development" };

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";

/** The server's region and mode, from the page. */
export const server = {
  region: meta("statelog-region") || "us-east-1",
  development: meta("statelog-mode") === "development",
};

/** An error the API answered (`type` is AWS's error name) or the network failed. */
export class ApiError extends Error {
  constructor(type, message, status) {
    super(message || type);
    this.type = type;
    this.status = status;
  }
}

/** The keys in use, or null when the user must type them in. */
export function keys() {
  if (server.development) return DEVELOPMENT_KEYS;
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEYS) ?? "null");
    return stored && stored.accessKeyId && stored.secretAccessKey ? stored : null;
  } catch {
    return null;
  }
}

/** Keeps `value` ({accessKeyId, secretAccessKey}) for this tab's session. */
export function setKeys(value) {
  sessionStorage.setItem(KEYS, JSON.stringify(value));
}

/** Forgets the keys. */
export function forgetKeys() {
  sessionStorage.removeItem(KEYS);
}

/** Errors that mean the keys were refused. */
export const AUTH_ERRORS = new Set([
  "UnrecognizedClientException",
  "InvalidSignatureException",
  "IncompleteSignatureException",
  "MissingAuthenticationTokenException",
]);

async function call(service, target, input, credentials = keys()) {
  if (!credentials) throw new ApiError("MissingAuthenticationTokenException", "Sign in with an access key first.");
  if (!sigv4.available()) {
    throw new ApiError(
      "InsecureContext",
      "This page is not a secure context, so the browser offers no Web Crypto to sign requests: open the console over HTTPS or on a loopback address.",
    );
  }
  const body = JSON.stringify(input ?? {});
  const date = new Date();
  const headers = {
    "content-type": "application/x-amz-json-1.0",
    host: location.host,
    "x-amz-date": sigv4.amzDate(date),
    "x-amz-target": target,
  };
  const authorization = await sigv4.authorization({
    method: "POST",
    path: "/",
    headers,
    body,
    credentials,
    region: server.region,
    service,
    date,
  });
  const sent = { ...headers, authorization };
  delete sent.host; // the browser sends it, and may not be told to
  let response;
  try {
    response = await fetch("/", { method: "POST", headers: sent, body, credentials: "omit", cache: "no-store" });
  } catch (error) {
    throw new ApiError("NetworkError", `The server did not answer: ${error.message}`, 0);
  }
  const text = await response.text();
  let answer = {};
  try {
    answer = text ? JSON.parse(text) : {};
  } catch {
    throw new ApiError("SerializationException", `The server answered something that is not JSON (HTTP ${response.status}).`, response.status);
  }
  if (!response.ok) {
    const type = String(answer.__type ?? response.headers.get("x-amzn-errortype") ?? "Error").split("#").pop();
    throw new ApiError(type, answer.message ?? answer.Message ?? `HTTP ${response.status}`, response.status);
  }
  return answer;
}

/** A Step Functions operation (`ListExecutions`, ...). */
export function sfn(operation, input, credentials) {
  return call("states", `AWSStepFunctions.${operation}`, input, credentials);
}

/** An Amazon SWF operation (`ListDomains`, ...). */
export function swf(operation, input, credentials) {
  return call("swf", `SimpleWorkflowService.${operation}`, input, credentials);
}

/** The account id inside an ARN (`arn:aws:states:REGION:ACCOUNT:...`). */
export function accountOf(arn) {
  return String(arn).split(":")[4] ?? "";
}
