/** permit.ts: an `upto` payment's Permit2 authorization decoded and matched to a metered route. */
import { x402UptoPermit2ProxyAddress } from "@x402/evm";
import { getAddress } from "viem";
import { describe, expect, it } from "vitest";
import type { PaymentPayloadV2 } from "../../payment-match";
import { decodeUptoAuthorization, isUptoPayment, UPTO_SCHEME, uptoMismatch } from "./permit";

const FROM = getAddress("0x1111111111111111111111111111111111111111");
const PAY_TO = getAddress("0x2222222222222222222222222222222222222222");
const TOKEN = getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e");
const FACILITATOR = getAddress("0x4444444444444444444444444444444444444444");
const PROXY = getAddress(x402UptoPermit2ProxyAddress);
const NOW = 1_800_000_000n;

const authorization = (over: Record<string, unknown> = {}) => ({
  from: FROM.toLowerCase(),
  permitted: { token: TOKEN.toLowerCase(), amount: "5000" },
  spender: PROXY.toLowerCase(),
  nonce: "42",
  deadline: String(NOW + 60n),
  witness: { to: PAY_TO.toLowerCase(), facilitator: FACILITATOR.toLowerCase(), validAfter: String(NOW - 10n) },
  ...over,
});

const payment = (over: { accepted?: Record<string, unknown>; authorization?: Record<string, unknown>; signature?: string } = {}) =>
  ({
    x402Version: 2,
    accepted: { scheme: UPTO_SCHEME, network: "eip155:84532", amount: "5000", asset: TOKEN, payTo: PAY_TO, maxTimeoutSeconds: 60, ...over.accepted },
    payload: { signature: over.signature ?? `0x${"12".repeat(65)}`, permit2Authorization: authorization(over.authorization) },
  }) as unknown as PaymentPayloadV2;

const route = { priceAtomic: 5000n, payTo: PAY_TO, asset: TOKEN, facilitator: FACILITATOR, maxTimeoutSeconds: 60, nowSeconds: NOW };
const mismatchOf = (p: PaymentPayloadV2, over: Partial<typeof route> = {}) => uptoMismatch(p, decodeUptoAuthorization(p)!, { ...route, ...over });

describe("permit: decoding", () => {
  it("the authorization's fields, addresses checksummed, amounts and times as bigints", () => {
    expect(decodeUptoAuthorization(payment())).toEqual({
      from: FROM,
      maximum: 5000n,
      token: TOKEN,
      spender: PROXY,
      nonce: "42",
      deadline: NOW + 60n,
      to: PAY_TO,
      facilitator: FACILITATOR,
      validAfter: NOW - 10n,
    });
  });

  it("a malformed authorization or signature is no authorization", () => {
    expect(decodeUptoAuthorization(payment({ authorization: { from: "0x12" } }))).toBeUndefined();
    expect(decodeUptoAuthorization(payment({ authorization: { nonce: "-1" } }))).toBeUndefined();
    expect(decodeUptoAuthorization(payment({ authorization: { deadline: 5 } }))).toBeUndefined();
    expect(decodeUptoAuthorization(payment({ authorization: { witness: { to: PAY_TO } } }))).toBeUndefined();
    expect(decodeUptoAuthorization(payment({ signature: "0x1234" }))).toBeUndefined();
    expect(decodeUptoAuthorization({ ...payment(), x402Version: 1 } as unknown as PaymentPayloadV2)).toBeUndefined();
  });

  it("is an upto payment: version 2 with the upto scheme, whatever its content", () => {
    expect(isUptoPayment(payment())).toBe(true);
    expect(isUptoPayment({ x402Version: 2, accepted: { scheme: "upto" } })).toBe(true);
    expect(isUptoPayment({ ...payment(), x402Version: 1 })).toBe(false);
    expect(isUptoPayment(payment({ accepted: { scheme: "exact" } }))).toBe(false);
    expect(isUptoPayment({ x402Version: 2 })).toBe(false);
    expect(isUptoPayment(null)).toBe(false);
    expect(isUptoPayment("upto")).toBe(false);
  });
});

describe("permit: matching a metered route", () => {
  it("the route's price as the maximum, to this payTo, in this asset, through the proxy for this facilitator: a match", () => {
    expect(mismatchOf(payment())).toBeNull();
    // the accepted requirements' addresses in another case are the same
    expect(mismatchOf(payment({ accepted: { payTo: PAY_TO.toLowerCase(), asset: TOKEN.toLowerCase() } }))).toBeNull();
  });

  it("another network is unsupported", () => {
    expect(mismatchOf(payment({ accepted: { network: "eip155:8453" } }))).toEqual({ error: "unsupported_scheme_or_network" });
  });

  it("a maximum that is not the route's price, in the accepted requirements or the signed authorization", () => {
    const wrong = (received: string) => ({ error: "payment_does_not_match_route", extra: { expected_amount: "5000", received_amount: received } });
    expect(mismatchOf(payment({ accepted: { amount: "4000" } }))).toEqual(wrong("5000"));
    expect(mismatchOf(payment({ authorization: { permitted: { token: TOKEN, amount: "4999" } } }))).toEqual(wrong("4999"));
    expect(mismatchOf(payment(), { priceAtomic: 5001n })).toEqual({
      error: "payment_does_not_match_route",
      extra: { expected_amount: "5001", received_amount: "5000" },
    });
  });

  it("another payee, asset, spender or facilitator", () => {
    const other = getAddress("0x5555555555555555555555555555555555555555");
    expect(mismatchOf(payment({ accepted: { payTo: other } }))).toEqual({ error: "payment_recipient_mismatch" });
    // an accepted payTo that is no address (the shape is checked where the proof is decoded; here, the match alone)
    expect(uptoMismatch(payment({ accepted: { payTo: "nope" } }), decodeUptoAuthorization(payment())!, route)).toEqual({ error: "payment_recipient_mismatch" });
    expect(uptoMismatch(payment({ accepted: { payTo: [PAY_TO] } }), decodeUptoAuthorization(payment())!, route)).toEqual({
      error: "payment_recipient_mismatch",
    });
    expect(mismatchOf(payment({ authorization: { witness: { to: other, facilitator: FACILITATOR, validAfter: "0" } } }))).toEqual({
      error: "payment_recipient_mismatch",
    });
    expect(mismatchOf(payment({ accepted: { asset: other } }))).toEqual({ error: "payment_asset_mismatch" });
    expect(mismatchOf(payment({ authorization: { permitted: { token: other, amount: "5000" } } }))).toEqual({ error: "payment_asset_mismatch" });
    const proxyOrFacilitator = { error: "invalid_payment", extra: { reason: "upto_spender_or_facilitator_mismatch" } };
    expect(mismatchOf(payment({ authorization: { spender: other } }))).toEqual(proxyOrFacilitator);
    expect(mismatchOf(payment(), { facilitator: other })).toEqual(proxyOrFacilitator);
  });

  it("valid for longer than maxTimeoutSeconds (+30 s of skew) is a standing order, refused", () => {
    expect(mismatchOf(payment({ authorization: { deadline: String(NOW + 90n) } }))).toBeNull();
    expect(mismatchOf(payment({ authorization: { deadline: String(NOW + 91n) } }))).toEqual({
      error: "authorization_validity_too_long",
      extra: { max_timeout_seconds: 60, valid_before: String(NOW + 91n) },
    });
  });
});
