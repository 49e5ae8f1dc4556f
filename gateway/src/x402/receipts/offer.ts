/**
 * Signed offers (x402's offer-receipt extension, spec §4): the 402 commits, under the receipt key, to the
 * terms of each entry of `accepts` (scheme, network, asset, payTo, amount, until when). They travel in the
 * 402's `extensions["offer-receipt"].info.offers[]`, in both the v1 body and the v2 PAYMENT-REQUIRED header
 * (the challenge passes its `extensions` to both; an MCP refusal carries the v2 object), one offer per entry
 * with its `acceptIndex`. The payload is exactly the spec's (JWS, signed by the same key as the receipts, so
 * the offer's kid is also where a client first sees the key it will pin).
 *
 * v1 entries name the network `base-sepolia` and the amount `maxAmountRequired`; the offer states them as
 * the spec asks, CAIP-2 (`eip155:84532`) and `amount`. `validUntil` is now + the entry's maxTimeoutSeconds
 * (what the extension's own server hook uses), from the injected clock.
 */
import { convertNetworkStringToCAIP2, createJWS, OFFER_RECEIPT, type JWSSignedOffer, type OfferPayload } from "@x402/extensions/offer-receipt";
import type { Clock } from "../../lib/clock";
import type { ReceiptSigningKey } from "./receipt-key";
import { ReceiptInputError } from "./receipt";

export const OFFER_EXTENSION_KEY = OFFER_RECEIPT;

/** the extension's schema of JWS offers (spec §6.3) */
export const OFFER_EXTENSION_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    offers: {
      type: "array",
      items: {
        type: "object",
        properties: {
          format: { type: "string", const: "jws" },
          acceptIndex: { type: "integer" },
          signature: { type: "string", description: "JWS compact serialization containing the offer payload" },
        },
        required: ["format", "signature"],
      },
    },
  },
  required: ["offers"],
} as const;

/** one entry of `accepts`, in either version's shape */
export interface OfferTerms {
  scheme: string;
  network: string;
  asset: string;
  payTo: string;
  /** v2 */
  amount?: string;
  /** v1 */
  maxAmountRequired?: string;
  maxTimeoutSeconds: number;
}

export interface OfferExtension {
  info: { offers: JWSSignedOffer[] };
  schema: typeof OFFER_EXTENSION_SCHEMA;
}

/** the offer payload of one entry, at `now` (Unix seconds) */
export function offerPayload(resourceUrl: string, terms: OfferTerms, now: number): OfferPayload {
  const amount = terms.amount ?? terms.maxAmountRequired;
  if (amount === undefined || !/^\d+$/.test(amount)) throw new ReceiptInputError("an offer's amount is an integer string in token units");
  if (!Number.isInteger(terms.maxTimeoutSeconds) || terms.maxTimeoutSeconds <= 0)
    throw new ReceiptInputError("an offer's maxTimeoutSeconds is a positive integer");
  let network: string;
  try {
    network = convertNetworkStringToCAIP2(terms.network);
  } catch {
    throw new ReceiptInputError(`unknown network ${JSON.stringify(terms.network)}`);
  }
  return {
    version: 1,
    resourceUrl,
    scheme: terms.scheme,
    network,
    asset: terms.asset,
    payTo: terms.payTo,
    amount,
    validUntil: now + terms.maxTimeoutSeconds,
  };
}

/** `extensions["offer-receipt"]` of a 402: one signed offer per entry of `accepts`, in order */
export async function signOffers(key: ReceiptSigningKey, resourceUrl: string, accepts: readonly OfferTerms[], clock: Clock): Promise<OfferExtension> {
  const now = Math.floor(clock.now().getTime() / 1000);
  const offers = await Promise.all(
    accepts.map(async (terms, acceptIndex): Promise<JWSSignedOffer> => ({
      format: "jws",
      acceptIndex,
      signature: await createJWS(offerPayload(resourceUrl, terms, now), key.signer),
    })),
  );
  return { info: { offers }, schema: OFFER_EXTENSION_SCHEMA };
}
