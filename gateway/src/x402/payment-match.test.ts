/**
 * Matching an X-PAYMENT proof to a route, with proofs signed by the real x402
 * client library (no chain needed to sign). A proof made for a dearer route
 * does not pay a cheaper one; nor does any other amount, recipient, network or
 * an authorization that outlives the advertised timeout.
 */
import fc from "fast-check";
import { createWalletClient, hashTypedData, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { describe, expect, it } from "vitest";
import { createPaymentHeader } from "x402/client";
import { evm, type PaymentRequirements } from "x402/types";
import { x402Client } from "@x402/core/client";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  authorizationDigest,
  decodePaymentHeader,
  decodePaymentSignatureHeader,
  PAYMENT_HEADERS,
  paymentMismatch,
  fromHeaderJson,
  paymentIdentifier,
  paymentIdentifierDeclaration,
  toHeaderJson,
  paymentOf,
  PAYMENT_IDENTIFIER,
  signedPayer,
  VALIDITY_SKEW_SECONDS,
  X402_CHAIN_ID,
  X402_NETWORK,
  X402_NETWORK_V2,
  type DecodedPaymentV2,
} from "./payment-match";

const asset = { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const, name: "USDC", version: "2" };
const payTo = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as const;
const account = privateKeyToAccount(generatePrivateKey());
const wallet = createWalletClient({ account, chain: baseSepolia, transport: http("http://127.0.0.1:9") });
const requirements = (amount: bigint, over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network: "base-sepolia",
  maxAmountRequired: amount.toString(),
  resource: "https://gw.example/api/v1/health",
  description: "",
  mimeType: "application/json",
  payTo,
  maxTimeoutSeconds: 120,
  asset: asset.address,
  extra: { name: asset.name, version: asset.version },
  ...over,
});
const proof = (amount: bigint, over: Partial<PaymentRequirements> = {}) => createPaymentHeader(wallet as never, 1, requirements(amount, over));
const now = () => BigInt(Math.floor(Date.now() / 1000));
const route = (priceAtomic: bigint) => ({ priceAtomic, payTo, maxTimeoutSeconds: 120, nowSeconds: now() });

describe("paymentMismatch", () => {
  it("accepts a proof of exactly the route's price to the service", async () => {
    expect(paymentMismatch(decodePaymentHeader(await proof(1_000n)), route(1_000n))).toBeNull();
    expect([X402_NETWORK, X402_CHAIN_ID, VALIDITY_SKEW_SECONDS]).toEqual(["base-sepolia", 84532, 30]);
  });

  it("a proof for a dearer route (/treasury, 1,100) does not pay a cheaper one (/health, 1,000), nor the reverse", async () => {
    expect(paymentMismatch(decodePaymentHeader(await proof(1_100n)), route(1_000n))).toEqual({
      error: "payment_does_not_match_route",
      extra: { expected_amount: "1000", received_amount: "1100" },
    });
    expect(paymentMismatch(decodePaymentHeader(await proof(1_000n)), route(1_100n))?.error).toBe("payment_does_not_match_route");
  });

  it("refuses another recipient, another network, an unreadable header", async () => {
    expect(paymentMismatch(decodePaymentHeader(await proof(1_000n, { payTo: "0x0000000000000000000000000000000000000001" })), route(1_000n))).toEqual({
      error: "payment_recipient_mismatch",
    });
    const decoded = decodePaymentHeader(await proof(1_000n))!;
    expect(paymentMismatch({ ...decoded, payment: { ...decoded.payment, network: "base" } }, route(1_000n))).toEqual({
      error: "unsupported_scheme_or_network",
    });
    expect(paymentMismatch({ ...decoded, payment: { ...decoded.payment, scheme: "upto" as never } }, route(1_000n))).toEqual({
      error: "unsupported_scheme_or_network",
    });
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, to: "0xnot" as never } }, route(1_000n))).toEqual({
      error: "payment_recipient_mismatch",
    });
    // an address with anything before or after it is not an address (and never reaches getAddress)
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, to: `${payTo}00` as never } }, route(1_000n))).toEqual({
      error: "payment_recipient_mismatch",
    });
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, to: `00${payTo}` as never } }, route(1_000n))).toEqual({
      error: "payment_recipient_mismatch",
    });
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, value: "1.5" } }, route(1_000n))).toEqual({
      error: "invalid_payment_header",
    });
    // each field as EIP-3009 types it, or the header is malformed (nothing reaches a parser that would answer in its own words)
    const field = (over: Record<string, unknown>) =>
      paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, ...over } as never }, route(1_000n));
    for (const over of [
      { value: "-5" },
      { value: 1000 },
      { value: " 1000" },
      { validAfter: "-5" },
      { validAfter: "0x10" },
      { validBefore: "" },
      { validBefore: "1".repeat(79) },
      { nonce: "0x12" },
      { nonce: `0x${"zz".repeat(32)}` },
      { nonce: undefined },
    ]) {
      expect(field(over), JSON.stringify(over)).toEqual({ error: "invalid_payment_header" });
    }
    expect(field({ validAfter: "0", nonce: `0x${"Ab".repeat(32)}` })).toBeNull();
    expect(paymentMismatch(undefined, route(1_000n))).toEqual({ error: "invalid_payment_header" });
    expect(decodePaymentHeader("not base64 json")).toBeUndefined();
    expect(
      decodePaymentHeader(
        Buffer.from(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: { authorization: { from: "0x12" } } })).toString(
          "base64",
        ),
      ),
    ).toBeUndefined();
    expect(
      decodePaymentHeader(Buffer.from(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: {} })).toString("base64")),
    ).toBeUndefined();
    const header = (from: string) =>
      Buffer.from(JSON.stringify({ ...decoded.payment, payload: { ...decoded.payment.payload, authorization: { ...decoded.authorization, from } } })).toString(
        "base64",
      );
    expect(decodePaymentHeader(header(account.address))?.authorization.from).toBe(account.address);
    expect(decodePaymentHeader(header(`${account.address}ff`))).toBeUndefined();
    expect(decodePaymentHeader(header(`ff${account.address}`))).toBeUndefined();
  });

  it("refuses an authorization that outlives maxTimeoutSeconds plus 30 s of skew", async () => {
    const long = decodePaymentHeader(await proof(1_000n, { maxTimeoutSeconds: 10 * 365 * 86_400 }));
    expect(paymentMismatch(long, route(1_000n))).toMatchObject({ error: "authorization_validity_too_long", extra: { max_timeout_seconds: 120 } });
    const decoded = decodePaymentHeader(await proof(1_000n))!;
    const at = (validBefore: bigint) =>
      paymentMismatch(
        { ...decoded, authorization: { ...decoded.authorization, validBefore: validBefore.toString() } },
        { ...route(1_000n), nowSeconds: 1_000n },
      );
    expect(at(1_150n)).toBeNull(); // 120 + 30
    expect(at(1_151n)?.error).toBe("authorization_validity_too_long");
  });
});

describe("signedPayer", () => {
  it("is the signer when the EIP-3009 signature recovers to `from`, else undefined", async () => {
    const decoded = decodePaymentHeader(await proof(1_000n))!;
    expect(await signedPayer(decoded, asset)).toBe(account.address.toLowerCase());
    // a forged from, another asset domain, no signature, nothing
    expect(await signedPayer({ ...decoded, authorization: { ...decoded.authorization, from: payTo } }, asset)).toBeUndefined();
    expect(await signedPayer(decoded, { ...asset, version: "1" })).toBeUndefined();
    expect(
      await signedPayer({ ...decoded, payment: { ...decoded.payment, payload: { ...decoded.payment.payload, signature: undefined } as never } }, asset),
    ).toBeUndefined();
    expect(
      await signedPayer({ ...decoded, payment: { ...decoded.payment, payload: { ...decoded.payment.payload, signature: "0x1234" } as never } }, asset),
    ).toBeUndefined();
    expect(await signedPayer(undefined, asset)).toBeUndefined();
  });
});

describe("x402 version 2 proofs (PAYMENT-SIGNATURE), made by @x402/core's client", () => {
  const requiredV2 = (amount: bigint, over: Record<string, unknown> = {}) => ({
    x402Version: 2,
    error: "payment_required",
    resource: { url: "https://gw.example/api/v1/health", description: "", mimeType: "application/json" },
    accepts: [
      {
        scheme: "exact",
        network: "eip155:84532",
        amount: amount.toString(),
        asset: asset.address,
        payTo,
        maxTimeoutSeconds: 120,
        extra: { name: asset.name, version: asset.version },
        ...over,
      },
    ],
  });
  const v2Client = () => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    return client;
  };
  const signatureHeader = async (amount: bigint, over: Record<string, unknown> = {}) =>
    encodePaymentSignatureHeader(await v2Client().createPaymentPayload(requiredV2(amount, over) as never));
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");
  const routeV2 = (priceAtomic: bigint) => ({ ...route(priceAtomic), asset: asset.address, resource: "https://gw.example/api/v1/health" });

  it("decodes a v2 proof, and nothing that is not one", async () => {
    const decoded = decodePaymentSignatureHeader(await signatureHeader(1_000n))!;
    expect(decoded.version).toBe(2);
    expect(decoded.authorization.from).toBe(account.address);
    expect(decoded.payment.accepted).toMatchObject({ network: "eip155:84532", amount: "1000" });
    expect(decodePaymentSignatureHeader("not base64 json")).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, x402Version: 1 }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, accepted: undefined }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, accepted: "exact" }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, accepted: { ...decoded.payment.accepted, scheme: 1 } }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, accepted: { ...decoded.payment.accepted, network: null } }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, payload: undefined }))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64({ ...decoded.payment, payload: { authorization: "x" } }))).toBeUndefined();
    expect(
      decodePaymentSignatureHeader(
        b64({ ...decoded.payment, payload: { ...decoded.payment.payload, authorization: { ...decoded.authorization, from: `${account.address}ff` } } }),
      ),
    ).toBeUndefined();
    expect(
      decodePaymentSignatureHeader(
        b64({ ...decoded.payment, payload: { ...decoded.payment.payload, authorization: { ...decoded.authorization, from: `ff${account.address}` } } }),
      ),
    ).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64(null))).toBeUndefined();
    expect(decodePaymentSignatureHeader(b64("x"))).toBeUndefined();
  });

  it("takes PAYMENT-SIGNATURE over X-PAYMENT, X-PAYMENT alone as version 1, and neither as no payment", async () => {
    const v2 = await signatureHeader(1_000n);
    const v1 = await proof(1_000n);
    const headers = (h: Record<string, string>) => (name: string) => h[name];
    expect(paymentOf(headers({ "PAYMENT-SIGNATURE": v2, "X-PAYMENT": v1 }))).toMatchObject({ version: 2, header: v2, decoded: { version: 2 } });
    expect(paymentOf(headers({ "X-PAYMENT": v1 }))).toMatchObject({ version: 1, header: v1, decoded: { version: 1 } });
    expect(paymentOf(headers({ "PAYMENT-SIGNATURE": "junk" }))).toEqual({ version: 2, header: "junk", decoded: undefined });
    expect(paymentOf(headers({ "X-PAYMENT": "junk" }))).toEqual({ version: 1, header: "junk", decoded: undefined });
    expect(paymentOf(headers({}))).toBeUndefined();
    expect(PAYMENT_HEADERS).toEqual({
      1: { payment: "X-PAYMENT", response: "X-PAYMENT-RESPONSE" },
      2: { payment: "PAYMENT-SIGNATURE", response: "PAYMENT-RESPONSE", required: "PAYMENT-REQUIRED" },
    });
  });

  it("matches a v2 proof of exactly this route's requirements, and refuses another amount, network, scheme, payTo, asset or resource", async () => {
    const decoded = decodePaymentSignatureHeader(await signatureHeader(1_000n))!;
    expect(paymentMismatch(decoded, routeV2(1_000n))).toBeNull();
    expect(X402_NETWORK_V2).toBe("eip155:84532");
    const edit = (accepted: Record<string, unknown>, top: Record<string, unknown> = {}) =>
      ({ ...decoded, payment: { ...decoded.payment, ...top, accepted: { ...decoded.payment.accepted, ...accepted } } }) as DecodedPaymentV2;
    expect(paymentMismatch(decodePaymentSignatureHeader(await signatureHeader(1_100n))!, routeV2(1_000n))).toEqual({
      error: "payment_does_not_match_route",
      extra: { expected_amount: "1000", received_amount: "1100" },
    });
    expect(paymentMismatch(edit({ network: "eip155:8453" }), routeV2(1_000n))).toEqual({ error: "unsupported_scheme_or_network" });
    expect(paymentMismatch(edit({ network: "base-sepolia" }), routeV2(1_000n))).toEqual({ error: "unsupported_scheme_or_network" });
    expect(paymentMismatch(edit({ scheme: "upto" }), routeV2(1_000n))).toEqual({ error: "unsupported_scheme_or_network" });
    expect(paymentMismatch(edit({ payTo: "0x0000000000000000000000000000000000000001" }), routeV2(1_000n))).toEqual({ error: "payment_recipient_mismatch" });
    expect(paymentMismatch(edit({ payTo: `${payTo}00` }), routeV2(1_000n))).toEqual({ error: "payment_recipient_mismatch" });
    expect(paymentMismatch(edit({ payTo: 7 }), routeV2(1_000n))).toEqual({ error: "payment_recipient_mismatch" });
    expect(paymentMismatch(edit({ payTo: payTo.toLowerCase() }), routeV2(1_000n))).toBeNull();
    expect(paymentMismatch(edit({ asset: "0x0000000000000000000000000000000000000002" }), routeV2(1_000n))).toEqual({ error: "payment_asset_mismatch" });
    expect(paymentMismatch(edit({ asset: "0x0000000000000000000000000000000000000002" }), route(1_000n))).toBeNull(); // no asset to bind to
    expect(paymentMismatch(edit({}, { resource: { url: "https://gw.example/api/v1/audit" } }), routeV2(1_000n))).toEqual({
      error: "payment_does_not_match_route",
      extra: { expected_resource: "https://gw.example/api/v1/health", received_resource: "https://gw.example/api/v1/audit" },
    });
    expect(paymentMismatch(edit({}, { resource: undefined }), routeV2(1_000n))).toBeNull(); // a resource is optional in v2
    expect(paymentMismatch(edit({}, { resource: { url: "https://gw.example/api/v1/audit" } }), route(1_000n))).toBeNull(); // no resource to bind to
    // the authorization itself is checked as in version 1: it pays exactly the price, to payTo, for no longer than advertised
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, value: "1100" } }, routeV2(1_000n))?.error).toBe(
      "payment_does_not_match_route",
    );
    expect(
      paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, to: "0x0000000000000000000000000000000000000001" } }, routeV2(1_000n)),
    ).toEqual({ error: "payment_recipient_mismatch" });
    expect(paymentMismatch({ ...decoded, authorization: { ...decoded.authorization, validBefore: "99999999999" } }, routeV2(1_000n))?.error).toBe(
      "authorization_validity_too_long",
    );
  });

  it("recovers the payer of a v2 proof as of a v1 one", async () => {
    const decoded = decodePaymentSignatureHeader(await signatureHeader(1_000n))!;
    expect(await signedPayer(decoded, asset)).toBe(account.address.toLowerCase());
  });
});

describe("an authorization's EIP-712 digest", () => {
  const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => `0x${Buffer.from(b).toString("hex")}` as `0x${string}`);
  const uint256 = fc.bigInt({ min: 0n, max: (1n << 256n) - 1n });
  const authorization = fc.record({ from: hex(20), to: hex(20), value: uint256, validAfter: uint256, validBefore: uint256, nonce: hex(32) });

  it("is viem's hashTypedData over x402's typed data, for any fields, in either address case", () => {
    fc.assert(
      fc.property(authorization, fc.boolean(), (a, upper) => {
        const from = upper ? (`0x${a.from.slice(2).toUpperCase()}` as const) : a.from;
        const text = { from, to: a.to, value: a.value.toString(), validAfter: a.validAfter.toString(), validBefore: a.validBefore.toString(), nonce: a.nonce };
        const viem = hashTypedData({
          domain: { name: asset.name, version: asset.version, chainId: X402_CHAIN_ID, verifyingContract: asset.address },
          types: evm.authorizationTypes,
          primaryType: evm.authorizationPrimaryType,
          message: { ...a, from: a.from },
        });
        expect(authorizationDigest(text, asset)).toBe(viem);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a field EIP-3009 does not type so", () => {
    const good = { from: account.address, to: payTo, value: "1", validAfter: "0", validBefore: "9", nonce: `0x${"ab".repeat(32)}` } as const;
    for (const bad of [
      { value: "-1" },
      { value: "0x10" },
      { value: ((1n << 256n) + 0n).toString() },
      { validBefore: "1e3" },
      { nonce: "0xab" },
      { to: "0x1234" },
      { from: 7 },
    ]) {
      expect(() => authorizationDigest({ ...good, ...bad } as never, asset), JSON.stringify(bad)).toThrow();
    }
  });
});

describe("the payment-identifier extension", () => {
  const v2 = (extensions: unknown) => ({ x402Version: 2, accepted: {}, payload: {}, extensions });
  const withId = (id: unknown) => v2({ [PAYMENT_IDENTIFIER]: { info: { required: false, id } } });

  it("reads a v2 proof's id, refuses a malformed one, and finds none elsewhere", () => {
    expect(paymentIdentifier(withId("pay_7d5d747be160e280"))).toEqual({ id: "pay_7d5d747be160e280" });
    expect(paymentIdentifier(withId("a".repeat(16)))).toEqual({ id: "a".repeat(16) });
    expect(paymentIdentifier(withId("A-z_09".padEnd(128, "x")))).toEqual({ id: "A-z_09".padEnd(128, "x") });
    for (const bad of ["a".repeat(15), "a".repeat(129), "pay 7d5d747be160e280", "pay.7d5d747be160e280", "pay_7d5d747be160e28é", 12345678901234567, null]) {
      expect(paymentIdentifier(withId(bad)), String(bad)).toMatchObject({ invalid: expect.stringMatching(/16 to 128 characters/) });
    }
    expect(paymentIdentifier(withId(undefined))).toBeUndefined();
    expect(paymentIdentifier(v2(undefined))).toBeUndefined();
    expect(paymentIdentifier(v2({}))).toBeUndefined();
    expect(paymentIdentifier(v2({ [PAYMENT_IDENTIFIER]: {} }))).toBeUndefined();
    expect(paymentIdentifier(v2({ other: { info: { id: "pay_7d5d747be160e280" } } }))).toBeUndefined();
    expect(paymentIdentifier({ x402Version: 1, extensions: { [PAYMENT_IDENTIFIER]: { info: { id: "pay_7d5d747be160e280" } } } })).toBeUndefined();
    expect(paymentIdentifier(v2({ [PAYMENT_IDENTIFIER]: null }))).toBeUndefined();
    expect(paymentIdentifier(v2({ [PAYMENT_IDENTIFIER]: { info: null } }))).toBeUndefined();
    // a session's or an upto proof carries it as an exact one does
    expect(paymentIdentifier({ ...withId("pay_7d5d747be160e280"), accepted: { scheme: "batch-settlement" } })).toEqual({ id: "pay_7d5d747be160e280" });
    expect(paymentIdentifier(undefined)).toBeUndefined();
  });

  it("is declared optional, with the extension's schema", () => {
    expect(paymentIdentifierDeclaration()).toEqual({
      info: { required: false },
      schema: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { required: { type: "boolean" }, id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$" } },
        required: ["required"],
      },
    });
  });
});

describe("x402 version 2's header encoding", () => {
  it("round-trips an object through base64 JSON and reads nothing else as one", () => {
    const value = { x402Version: 2, accepts: [{ amount: "1000" }], note: "é" };
    expect(toHeaderJson(value)).toBe(Buffer.from(JSON.stringify(value)).toString("base64"));
    expect(fromHeaderJson(toHeaderJson(value))).toEqual(value);
    for (const other of [null, undefined, "", "not base64 json", toHeaderJson(null), toHeaderJson("text"), toHeaderJson(7)])
      expect(fromHeaderJson(other), String(other)).toBeUndefined();
  });
});
