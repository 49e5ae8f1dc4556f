/**
 * A request's x402 proof, read once (x402/sent-payment.ts: its header decoded, its scheme found and its proof
 * decoded) and kept on the request's own locals: the rate limit's identity (app.ts), the request's stages
 * (RequestState.sentPayment) and the gate all read this one reading.
 */
import type { Request } from "express";
import type { PaymentGate, SentPayment } from "../x402/payment-gate";

/** the proof the request sent, read on first use, or undefined when it sent none (or x402 is off) */
export function sentPaymentOf(req: Request, gate: Pick<PaymentGate, "enabled" | "read"> | undefined): SentPayment | undefined {
  if (!gate?.enabled) return undefined;
  const locals = (req.res?.locals ?? {}) as { sentPayment?: { value: SentPayment | undefined } };
  return (locals.sentPayment ??= { value: gate.read((name) => req.header(name)) }).value;
}
