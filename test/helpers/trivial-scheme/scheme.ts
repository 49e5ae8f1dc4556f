/**
 * A trivial x402 scheme, the recipe of docs/ARCHITECTURE.md ("How to add an x402 scheme") followed from one
 * folder: `ticket`. The payer signs (EIP-191) `x402 ticket <id> for <amount> to <payTo>`; the gateway checks the
 * signature itself (no facilitator), locks (payer, `ticket:<id>`), and settles by recording it (no money moves:
 * a test's scheme). Everything else (the 402's offer, the lock, the payer's treasury, the credential, the
 * release, the rate limit's identity, the receipt) is the gate's.
 */
import { getAddress, recoverMessageAddress, type Hex } from "viem";
import { toHeaderJson, type PaymentPayloadV2 } from "../../../gateway/src/x402/payment-match";
import type { PaymentScheme } from "../../../gateway/src/x402/schemes/scheme";

export const TICKET_SCHEME = "ticket";

export interface Ticket {
  id: string;
  amount: string;
  payTo: string;
  signature: Hex;
}

/** the message a payer signs for a ticket */
export const ticketMessage = (t: Pick<Ticket, "id" | "amount" | "payTo">) => `x402 ticket ${t.id} for ${t.amount} to ${t.payTo.toLowerCase()}`;

const signerOf = async (t: Ticket) => {
  try {
    return (await recoverMessageAddress({ message: ticketMessage(t), signature: t.signature })).toLowerCase();
  } catch {
    return undefined;
  }
};

const settlementHeader = (payer: string, transaction: string) => ({
  "PAYMENT-RESPONSE": toHeaderJson({ success: true, transaction, network: "eip155:84532", payer }),
});

export const ticketScheme: PaymentScheme<Ticket, { id: string }> = {
  name: TICKET_SCHEME,
  recognizes: (sent) => (sent.raw?.accepted as { scheme?: unknown } | undefined)?.scheme === TICKET_SCHEME,
  decode(sent) {
    const t = (sent.raw as unknown as PaymentPayloadV2).payload as Partial<Ticket>;
    const ok = typeof t.id === "string" && /^[a-z0-9]{8,64}$/.test(t.id) && typeof t.amount === "string" && typeof t.payTo === "string";
    return ok && typeof t.signature === "string" && /^0x[0-9a-f]{130}$/i.test(t.signature) ? (t as Ticket) : undefined;
  },
  offers: (env, price) => [{ ...env.requirements.v2(price), scheme: TICKET_SCHEME, extra: {} }],
  match: (env, t, at) =>
    t.amount !== at.price.atomic.toString()
      ? { error: "payment_does_not_match_route", extra: { expected_amount: at.price.atomic.toString(), received_amount: t.amount } }
      : getAddress(t.payTo) !== env.requirements.payTo
        ? { error: "payment_recipient_mismatch" }
        : null,
  async verify(_env, t) {
    const signer = await signerOf(t);
    if (!signer) return { error: "invalid_payment", extra: { reason: "invalid_ticket_signature" } };
    return { payer: getAddress(signer), nonce: `ticket:${t.id}`, settling: { id: t.id } };
  },
  payer: (_env, t) => signerOf(t),
  async validNow(env, t, at) {
    const signer = await signerOf(t);
    if (!signer || ticketScheme.match(env, t, at, undefined as never)) return null;
    return (await env.ctx.stores.payments.seen(signer, `ticket:${t.id}`)) ? null : signer;
  },
  async settle(env, locked) {
    const transaction = `ticket:${locked.settling.id}`;
    await env.ctx.stores.payments.settled(locked.payer, locked.nonce, transaction, locked.treasuryId, env.ctx.clock.now().toISOString());
    return { kind: "settled", headers: settlementHeader(locked.payer, transaction) };
  },
  settledAgain: async (_env, locked, transaction) => settlementHeader(locked.payer, transaction),
};
