/**
 * x402's payment-identifier (a v2 client's idempotency key for a paid request, scoped to its signer):
 * claimed before the proof is even verified, so a retry with the same identifier (with the same or a
 * fresh proof) gets the first answer and is never charged again, and one sent while the first is still
 * running gets 409 payment_in_progress, never a 402 that would make a conforming client pay twice. The
 * same identifier for another request is 409 payment_identifier_reused. An answer is kept when the
 * request was charged or succeeded; a refusal before settlement frees the identifier. An unsigned or
 * forged proof goes the normal way (and is refused there): only a signer's identifier is honoured, and its
 * scope is the payer of the scheme that pays (its `payer`, on the proof as the request read it once, the
 * reading authorize makes): an authorization carried beside another scheme's proof names nobody.
 */
import type { Response } from "express";
import { TreasuryError } from "@treasury/core/lib/errors";
import { requestFingerprint, whileLeased } from "../../services/idempotency";
import { newHolder } from "../../store/lease";
import { PAYMENT_HEADERS, paymentIdentifier as identifierOf } from "../../x402/payment-match";
import { authorizeRequest, forgetPayment } from "./authorize-payment";
import { sendOutcome } from "./respond";
import { paidRoute, takesPayment, type Next, type RequestStage, type RequestState } from "./stage";

/** the headers of a paid answer that a replay gives again */
const PAYMENT_RESPONSE_HEADER_NAMES = [PAYMENT_HEADERS[1].response.toLowerCase(), PAYMENT_HEADERS[2].response.toLowerCase()];
const KEPT_HEADERS = ["content-type", "x-treasury-id", ...PAYMENT_RESPONSE_HEADER_NAMES];

export const paymentIdentifier: RequestStage = {
  name: "payment-identifier",
  takesPart: takesPayment,
  errors: () => ["invalid_payment_identifier", "payment_identifier_reused", "payment_in_progress"],
  async run(state, next) {
    if (!state.paying) return next();
    const { hooks, sentPayment } = state;
    const pid = identifierOf(sentPayment?.raw);
    if (pid && "invalid" in pid) throw new TreasuryError("invalid_payment_identifier", pid.invalid);
    // the scope is the payer of the scheme that pays (a session's voucher, an upto authorization, else the
    // EIP-3009 authorization), never an authorization carried beside it
    const payer = pid ? await hooks.payments!.verifiedPayer(sentPayment) : undefined;
    if (pid && payer) return await byPaymentIdentifier(state, payer, pid.id, next);
    return next();
  },
};

async function byPaymentIdentifier(state: RequestState, payer: string, id: string, pay: Next): Promise<void> {
  const { req, res, hooks, now } = state;
  const store = hooks.idempotency!;
  const scope = `x402-payment-identifier:${payer.toLowerCase()}`;
  const fingerprint = requestFingerprint(`${req.method} ${req.path}`, { body: req.body ?? null, query: req.query });
  const holder = newHolder("pid");
  const taken = await store.claim(scope, id, fingerprint, now(), holder);
  if (taken.kind === "replay") {
    // the stored answer goes only to whoever proves to be the payer now: a fresh authorization of the same payer,
    // verified and then released unsettled. A copied proof (public on chain once settled) is refused.
    const fresh = await authorizeRequest(state);
    if (!fresh) return;
    await fresh.release();
    // served only to the payer that paid: the scope's payer is the fresh payment's (the same reading), checked again
    if (fresh.payer.toLowerCase() !== payer.toLowerCase()) {
      forgetPayment(state);
      throw new TreasuryError("payment_identifier_reused", "this payment-identifier belongs to another payer's request; use a fresh id");
    }
    return sendOutcome(res, taken.response, true);
  }
  if (taken.kind === "mismatch")
    throw new TreasuryError("payment_identifier_reused", "this payment-identifier was already used for a different request; use a fresh id");
  if (taken.kind === "in_progress") {
    throw new TreasuryError(
      "payment_in_progress",
      "a request with this payment-identifier is still being served; retry after Retry-After seconds with the same id (nothing more is charged)",
      { retry_after_seconds: 1 },
      { "Retry-After": "1" },
    );
  }
  const sent = recordSent(res);
  try {
    await whileLeased(() => store.renew(scope, id, holder, now()), pay);
  } catch (err) {
    await store.release(scope, id, holder);
    throw err;
  }
  const charged = PAYMENT_RESPONSE_HEADER_NAMES.some((h) => res.getHeader(h) !== undefined);
  // answered through sendJson (the routes, errors) or through res.send (x402-express's own answers)
  const body = sent() ?? (res.locals.sentJson as string | undefined);
  if (body !== undefined && (charged || (res.statusCode >= 200 && res.statusCode < 300))) {
    const headers = Object.fromEntries(KEPT_HEADERS.flatMap((h) => (res.getHeader(h) === undefined ? [] : [[h, String(res.getHeader(h))]])));
    await store.complete(scope, id, { status: res.statusCode, headers, body }, holder);
  } else await store.release(scope, id, holder);
}

/** keep the first body the answer sends through res.send; returns what was sent */
function recordSent(res: Response): () => string | undefined {
  let sent: string | undefined;
  const send = res.send.bind(res);
  res.send = ((body?: unknown) => {
    sent ??= typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : JSON.stringify(body);
    return send(body as never);
  }) as Response["send"];
  return () => sent;
}
