/**
 * The shapes of the version 2 payment proofs this service takes, checked at the edge: a proof that does not
 * parse is malformed (a typed 402 `invalid_payment_header`), whatever stage reads it (the rate limit's
 * identity, the payment-identifier, authorize), before any of its fields is used or sent to the facilitator.
 * One schema per scheme's payload; the decoders (schemes/session/voucher.ts, schemes/upto/permit.ts) parse with them.
 * `accepted` is the requirements the client says it accepted: what the facilitator is given to verify, so a
 * field of the wrong type there is the client's error, not the facilitator's outage.
 */
import { z } from "@treasury/core/schemas/zod";

export const ADDRESS = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const BYTES32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
/** an unsigned integer in token units or seconds, as a decimal string (at most a uint256) */
const UINT = z.string().regex(/^\d{1,78}$/);
/** the largest withdraw delay a channel configuration holds (a uint40 in the scheme's EIP-712 type) */
const MAX_WITHDRAW_DELAY = 2 ** 40 - 1;

/** the requirements a version 2 proof names as accepted (one entry of a 402's `accepts`) */
export const AcceptedRequirements = z.looseObject({
  scheme: z.string(),
  network: z.string(),
  amount: UINT,
  asset: ADDRESS,
  payTo: ADDRESS,
  maxTimeoutSeconds: z.number().int().positive(),
  extra: z.record(z.string(), z.unknown()).optional(),
});

const ChannelConfigShape = z.object({
  payer: ADDRESS,
  payerAuthorizer: ADDRESS,
  receiver: ADDRESS,
  receiverAuthorizer: ADDRESS,
  token: ADDRESS,
  withdrawDelay: z.number().int().min(0).max(MAX_WITHDRAW_DELAY),
  salt: BYTES32,
});

/** a session (`batch-settlement`) payload: a voucher alone, or a deposit with its first voucher (the voucher's own fields: schemes/session/voucher.ts) */
export const SessionPayload = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("voucher"), channelConfig: ChannelConfigShape, voucher: z.record(z.string(), z.unknown()) }),
  z.looseObject({
    type: z.literal("deposit"),
    channelConfig: ChannelConfigShape,
    voucher: z.record(z.string(), z.unknown()),
    deposit: z.looseObject({
      amount: UINT.refine((a) => BigInt(a) > 0n),
      authorization: z.looseObject({ erc3009Authorization: z.looseObject({ salt: z.union([z.string(), z.number()]) }) }),
    }),
  }),
]);

/** a session proof: its accepted requirements carry the channel terms (`extra`) */
export const SessionProof = z.looseObject({
  x402Version: z.literal(2),
  accepted: AcceptedRequirements.extend({ extra: z.record(z.string(), z.unknown()) }),
  payload: SessionPayload,
});

/** an `upto` payload: a Permit2 authorization of a maximum, with a witness naming the payTo and the settling facilitator */
export const UptoPayload = z.looseObject({
  signature: z.string().regex(/^0x[0-9a-fA-F]{128,}$/),
  permit2Authorization: z.looseObject({
    from: ADDRESS,
    permitted: z.looseObject({ token: ADDRESS, amount: UINT }),
    spender: ADDRESS,
    nonce: UINT,
    deadline: UINT,
    witness: z.looseObject({ to: ADDRESS, facilitator: ADDRESS, validAfter: UINT }),
  }),
});

export const UptoProof = z.looseObject({ x402Version: z.literal(2), accepted: AcceptedRequirements, payload: UptoPayload });
