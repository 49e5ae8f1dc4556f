/**
 * No credential in any log line, in any position: every object the gateway
 * logs passes through `scrubLogObject` (a pino child formatter, see app.ts).
 *
 * - API keys (sk_test_..., sk_live_..., console sessions sk_console_...) are masked wherever they appear: a
 *   header of any name, the query string, an error message;
 * - configured secrets (the admin token) are masked literally;
 * - credential headers (Authorization, X-Payment, X-Api-Key, cookies, admin
 *   and payment-signature headers) are replaced whole;
 * - query parameters whose name says secret (key, token, secret, password,
 *   auth, signature, payment) have their values replaced.
 */
const API_KEY = /sk_(test|live|console)_[A-Za-z0-9_-]+/g;
const CREDENTIAL_HEADERS = new Set([
  "authorization",
  "proxy-authorization",
  "x-payment",
  "payment-signature",
  "x-api-key",
  "api-key",
  "cookie",
  "set-cookie",
  "x-admin-token",
  "x-treasury-internal-dispatch",
]);
const SECRET_PARAM = /key|token|secret|password|auth|signature|payment/i;
const REDACTED = "[redacted]";

export function scrubText(text: string, literals: readonly string[] = []): string {
  let out = text.replace(API_KEY, `sk_$1_${REDACTED}`);
  for (const secret of literals) if (secret) out = out.split(secret).join(REDACTED);
  return out;
}

/** a URL with secret-looking query values replaced, and keys masked anywhere */
export function scrubUrl(url: string, literals: readonly string[] = []): string {
  const q = url.indexOf("?");
  if (q < 0) return scrubText(url, literals);
  const params = url
    .slice(q + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && SECRET_PARAM.test(decodeURIComponentSafe(name)) ? `${name}=${REDACTED}` : pair;
    });
  return scrubText(`${url.slice(0, q)}?${params.join("&")}`, literals);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** deep copy of a log object with every credential masked (bounded depth; cycles cut) */
export function scrubLogObject(value: unknown, literals: readonly string[] = [], depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === "string") return scrubText(value, literals);
  if (value === null || typeof value !== "object") return value;
  if (depth > 8 || seen.has(value)) return "[truncated]";
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => scrubLogObject(v, literals, depth + 1, seen));
  if (value instanceof Error) {
    return { type: value.name, message: scrubText(value.message, literals), stack: value.stack ? scrubText(value.stack, literals) : undefined };
  }
  // live objects (a request, a response) are left to their serializers, which scrub what they keep
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (CREDENTIAL_HEADERS.has(k.toLowerCase()) && v !== undefined) out[k] = REDACTED;
    else if ((k === "url" || k === "originalUrl") && typeof v === "string") out[k] = scrubUrl(v, literals);
    else out[k] = scrubLogObject(v, literals, depth + 1, seen);
  }
  return out;
}
