/**
 * JSON requests to the gateway for the command line's own calls (register,
 * summary, the operator's): a typed error for the gateway's refusal (its
 * status, code and message) and another, worded for a person, when it does
 * not answer at all.
 */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export class GatewayUnreachable extends Error {}

export interface GatewayCall {
  body?: unknown;
  bearer?: string;
  idempotencyKey?: string;
}

export async function gatewayJson(base: string, method: string, path: string, o: GatewayCall = {}): Promise<Record<string, any>> {
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
    throw new GatewayUnreachable(`the gateway at ${base} does not answer (${cause}): is the local stack running (npm start)? Else point --gateway or SIGNER_GATEWAY_URL at it`);
  }
  const text = await res.text();
  let json: Record<string, any>;
  try {
    json = text ? (JSON.parse(text) as Record<string, any>) : {};
  } catch {
    throw new GatewayError(res.status, "not_json", `${method} ${path}: ${res.status}, and the answer is not JSON (is ${base} the gateway?)`);
  }
  if (!res.ok) {
    const reason = typeof json.reason === "string" ? ` (${json.reason})` : "";
    throw new GatewayError(res.status, String(json.error ?? res.status), `${method} ${path}: ${res.status} ${json.error ?? ""}: ${json.message ?? text}${reason}`, json);
  }
  return json;
}
