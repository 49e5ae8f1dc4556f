/**
 * A request's payment proof, read once: v2's PAYMENT-SIGNATURE if sent (its base64 JSON decoded), else v1's
 * X-PAYMENT, given to the first scheme of the registry that recognizes it (else to the registry's first,
 * which refuses it) and decoded by that scheme. The HTTP layer reads it once per request and keeps it in the
 * request's state; every reader (the rate limit's identity, the payment-identifier, the gate) takes it there.
 */
import { fromHeaderJson, PAYMENT_HEADERS } from "./payment-match";
import type { AnyScheme, RawPayment, SentPayment } from "./schemes/scheme";

/** the proof a request carries, by the scheme that pays it, or undefined when it carries none */
export function readPayment(header: (name: string) => string | undefined, schemes: readonly AnyScheme[]): SentPayment | undefined {
  const v2 = header(PAYMENT_HEADERS[2].payment);
  const v1 = v2 ? undefined : header(PAYMENT_HEADERS[1].payment);
  const raw: RawPayment | undefined = v2 ? { version: 2, header: v2, raw: fromHeaderJson(v2) } : v1 ? { version: 1, header: v1, raw: undefined } : undefined;
  if (!raw) return undefined;
  const scheme = schemes.find((s) => s.recognizes(raw)) ?? schemes[0]!;
  let proof: unknown;
  try {
    proof = scheme.decode(raw);
  } catch {
    proof = undefined; // a malformed proof decodes to nothing
  }
  return { ...raw, scheme, proof };
}
