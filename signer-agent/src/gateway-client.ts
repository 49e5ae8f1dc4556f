/**
 * JSON requests to the gateway for the command line's own calls (register,
 * summary, the operator's): a typed error for the gateway's refusal (its
 * status, code and message) and another, worded for a person, when it does
 * not answer at all (both in errors.ts).
 */
import { GatewayError, GatewayUnreachable } from "./errors";

export { GatewayError, GatewayUnreachable };

export interface GatewayCall {
  body?: unknown;
  bearer?: string;
  idempotencyKey?: string;
  /** where a wait for the rate limit is said (stderr by default) */
  log?: (line: string) => void;
}

/** how long a rate-limited call waits for the gateway's Retry-After, at most (longer: the refusal is the answer) */
const RATE_LIMIT_WAIT_MAX_S = 60;

/**
 * One JSON call. A 429 (the gateway's rate limit: the call was not processed) is waited out as the gateway's
 * Retry-After says, up to twice and at most a minute each, with a line on stderr; then it is the answer.
 */
export async function gatewayJson(base: string, method: string, path: string, o: GatewayCall = {}): Promise<Record<string, any>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await gatewayJsonOnce(base, method, path, o);
    } catch (err) {
      const wait = err instanceof GatewayError && err.status === 429 ? Number(err.body?.retry_after_seconds ?? 1) : NaN;
      if (!(wait <= RATE_LIMIT_WAIT_MAX_S) || attempt >= 2) throw err;
      (o.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(
        `the gateway rate-limits ${method} ${path}: waiting ${wait} s as it asks, then asking again`,
      );
      await new Promise((done) => setTimeout(done, (wait + 0.5) * 1000));
    }
  }
}

async function gatewayJsonOnce(base: string, method: string, path: string, o: GatewayCall): Promise<Record<string, any>> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(o.body === undefined ? {} : { "content-type": "application/json" }),
        ...(o.bearer ? { authorization: `Bearer ${o.bearer}` } : {}),
        ...(o.idempotencyKey ? { "idempotency-key": o.idempotencyKey } : {}),
      },
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new GatewayUnreachable(
      `the gateway at ${base} does not answer (${cause}): is the local stack running (npm start)? Else point --gateway or SIGNER_GATEWAY_URL at it`,
      { cause: err },
    );
  }
  const text = await res.text();
  let json: Record<string, any>;
  try {
    json = text ? (JSON.parse(text) as Record<string, any>) : {};
  } catch (err) {
    throw new GatewayError(
      res.status,
      "gateway_not_json",
      `${method} ${path}: ${res.status}, and the answer is not JSON (is ${base} the gateway?)`,
      undefined,
      {
        cause: err,
      },
    );
  }
  if (!res.ok) {
    const reason = typeof json.reason === "string" ? ` (${json.reason})` : "";
    throw new GatewayError(res.status, "gateway_refused", `${method} ${path}: ${res.status} ${json.error ?? ""}: ${json.message ?? text}${reason}`, json);
  }
  return json;
}
