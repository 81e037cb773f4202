// sigv4: AWS Signature Version 4 for the AWS JSON requests the console sends, with Web Crypto
// (HMAC-SHA256, SHA-256). Follows the AWS General Reference's signing steps: canonical request,
// string to sign, derived signing key, signature. Signs every header it is given (lowercased);
// the caller passes host, content-type, x-amz-date and x-amz-target. Never logs a secret.

const ALGORITHM = "AWS4-HMAC-SHA256";
const encoder = new TextEncoder();

/** True when this page may use Web Crypto (a secure context: HTTPS or loopback). */
export function available() {
  return Boolean(globalThis.crypto && globalThis.crypto.subtle);
}

function toHex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256Hex(text) {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

async function hmac(key, text) {
  const raw = typeof key === "string" ? encoder.encode(key) : key;
  const cryptoKey = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(text));
}

/** `YYYYMMDDTHHMMSSZ` of `date` (UTC). */
export function amzDate(date) {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/** The canonical request of a POST to `path` (no query) with `headers` (all signed). */
export async function canonicalRequest(method, path, headers, body) {
  const names = Object.keys(headers).map((n) => n.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
  const canonicalHeaders = names
    .map((n) => `${n}:${String(lower[n]).trim().replace(/\s+/g, " ")}\n`)
    .join("");
  const signedHeaders = names.join(";");
  const payloadHash = await sha256Hex(body);
  return {
    text: [method, path, "", canonicalHeaders, signedHeaders, payloadHash].join("\n"),
    signedHeaders,
  };
}

/**
 * Signs a request: returns the `Authorization` header value.
 * `credentials`: {accessKeyId, secretAccessKey}; `scope`: {region, service}; `date`: a Date
 * whose `amzDate` is in `headers["x-amz-date"]`.
 */
export async function authorization({ method, path, headers, body, credentials, region, service, date }) {
  const stamp = amzDate(date);
  const day = stamp.slice(0, 8);
  const scope = `${day}/${region}/${service}/aws4_request`;
  const canonical = await canonicalRequest(method, path, headers, body);
  const stringToSign = [ALGORITHM, stamp, scope, await sha256Hex(canonical.text)].join("\n");
  const kDate = await hmac(`AWS4${credentials.secretAccessKey}`, day);
  const kRegion = await hmac(kDate, region);
  const kService = await hmac(kRegion, service);
  const kSigning = await hmac(kService, "aws4_request");
  const signature = toHex(await hmac(kSigning, stringToSign));
  return `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${canonical.signedHeaders}, Signature=${signature}`;
}
