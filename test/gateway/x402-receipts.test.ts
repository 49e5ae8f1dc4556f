/**
 * x402's offer-receipt extension on the real stack (Anvil 84532, TestUSDC, the project's facilitator): every
 * 402 carries signed offers and every paid answer a receipt signed by the service, read back and checked with
 * the extension's own client functions (`extractReceiptFromResponse`, `verifyReceiptSignatureJWS`,
 * `verifyOfferSignatureJWS`) against the key served at /.well-known/x402-receipt-keys.json. Each receipt's
 * binding is recomputed here, from the bytes this test sent and received (SHA-256; the MCP tool's arguments and
 * result as RFC 8785 JSON), so a receipt of one answer does not pass for another.
 */
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureJWS,
  type JWSSignedOffer,
  type JWSSignedReceipt,
  type SignedReceipt,
} from "@x402/extensions/offer-receipt";
import type { PrivateKeyAccount } from "viem/accounts";
import { createPaymentHeader } from "x402/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyReceipt, type ReceiptExpectation } from "../../gateway/src/x402/receipts/verify";
import { call } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey } from "../helpers/treasury";
import { newPayer, paymentFor, paymentRequiredFor, paymentSignature, startX402Suite, type X402Stack } from "../helpers/x402-stack";

let stack: X402Stack;
let base: string;
let v: ResponseValidator;
/** the served key set, and its one key */
let jwks: { keys: { kty: "OKP"; crv: "Ed25519"; x: string; kid: string; alg: "EdDSA"; use: "sig" }[] };
let prices: Record<string, bigint>;

const KEYS_PATH = "/.well-known/x402-receipt-keys.json";

beforeAll(async () => {
  ({ stack, base, v } = await startX402Suite());
  const served = await call(base, "GET", KEYS_PATH);
  expect(served.status).toBe(200);
  v.check("GET", KEYS_PATH, 200, served.body);
  jwks = served.body;
  prices = Object.fromEntries(
    (await call(base, "GET", "/x402/prices.json")).body.prices.map((p: { method: string; path: string; amount_atomic: string }) => [
      `${p.method} ${p.path}`,
      BigInt(p.amount_atomic),
    ]),
  );
}, 60_000);
afterAll(() => stack?.close());

const sha256 = (bytes: string | Uint8Array) => createHash("sha256").update(bytes).digest("hex");
/** RFC 8785 for what JSON.parse gives: members sorted by UTF-16 code units, everything else as JSON.stringify writes it */
const jcs = (value: unknown): string =>
  value === null || typeof value !== "object"
    ? JSON.stringify(value)
    : Array.isArray(value)
      ? `[${value.map(jcs).join(",")}]`
      : `{${Object.keys(value)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${jcs((value as Record<string, unknown>)[k])}`)
          .join(",")}}`;

const key = () => jwks.keys[0]!;
const settlementOf = (res: Response) => {
  const header = res.headers.get("payment-response") ?? res.headers.get("x-payment-response");
  return JSON.parse(Buffer.from(header!, "base64").toString("utf8")) as Record<string, any>;
};

/** a paid request as sent (exact bytes) and its answer as received */
interface Paid {
  method: string;
  path: string;
  sent: string;
  res: Response;
  received: Uint8Array;
}

async function send(method: string, path: string, headers: Record<string, string>, sent = ""): Promise<Paid> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(sent === "" ? {} : { "content-type": "application/json" }), ...headers },
    body: sent === "" ? undefined : sent,
  });
  return { method, path, sent, res, received: new Uint8Array(await res.arrayBuffer()) };
}

/** the answer's receipt, found by the extension's client and checked by its verifier with the served key; the binding recomputed from the bytes */
async function checkedReceipt(p: Paid, payer: string) {
  expect(p.res.status, Buffer.from(p.received).toString()).toBeLessThan(300);
  const receipt = extractReceiptFromResponse(p.res) as JWSSignedReceipt;
  expect(receipt?.format).toBe("jws");
  const payload = (await verifyReceiptSignatureJWS(receipt, key())) as Record<string, any>;
  const settlement = settlementOf(p.res);
  expect(payload).toMatchObject({
    version: 1,
    network: "eip155:84532",
    resourceUrl: `${base}${p.path.split("?")[0]}`,
    payer,
    transaction: settlement.transaction,
    binding: {
      version: 1,
      digest: "sha-256",
      request: { transport: "http", method: p.method, path: p.path, body: sha256(p.sent) },
      answer: sha256(p.received),
      payment: {
        scheme: "exact",
        asset: stack.chain.usdc,
        payTo: stack.payTo,
        amount: prices[`${p.method} ${p.path.split("?")[0]}`]!.toString(),
        transaction: settlement.transaction,
      },
    },
  });
  expect(settlement).toMatchObject({ success: true, payer });
  expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  return { receipt, payload };
}

const expectationOf = (p: Paid): ReceiptExpectation => ({
  keys: jwks.keys,
  request: { transport: "http", method: p.method, path: p.path, body: p.sent },
  answer: { transport: "http", body: p.received },
});

describe("the receipt key", () => {
  it("is served as a JWKS of one Ed25519 key whose kid names it (did:jwk)", () => {
    expect(jwks.keys).toHaveLength(1);
    const k = key();
    expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    const named = JSON.parse(Buffer.from(k.kid.replace(/^did:jwk:/, "").replace(/#0$/, ""), "base64url").toString("utf8"));
    expect(named).toEqual({ kty: "OKP", crv: "Ed25519", x: k.x });
  });
});

describe("signed offers on every 402", () => {
  it("a challenge carries one offer per v2 entry, in the v2 header and the v1 body, verified with the served key", async () => {
    for (const [method, path, body] of [
      ["GET", "/api/v1/health", undefined],
      ["POST", "/api/v1/deposits", { amount_usdc: 500 }],
    ] as const) {
      const required = await paymentRequiredFor(base, method, path, body);
      const offers = extractOffersFromPaymentRequired(required) as JWSSignedOffer[];
      expect(offers).toHaveLength(required.accepts.length);
      const payload = await verifyOfferSignatureJWS(offers[0]!, key());
      expect(payload).toMatchObject({
        version: 1,
        resourceUrl: `${base}${path}`,
        scheme: "exact",
        network: "eip155:84532",
        asset: stack.chain.usdc,
        payTo: stack.payTo,
        amount: prices[`${method} ${path}`]!.toString(),
      });
      expect(payload.validUntil).toBeGreaterThan(Date.now() / 1000);
      expect(findAcceptsObjectFromSignedOffer(decodeSignedOffers(offers)[0]!, required.accepts)).toBe(required.accepts[0]);
      // the v1 body carries the same signed offers
      const v1 = await call(base, method, path, { ...(body ? { body } : {}), headers: { "idempotency-key": newIdempotencyKey() } });
      expect(v1.status).toBe(402);
      v.check(method, path, 402, v1.body);
      const v1Offers = v1.body.extensions["offer-receipt"].info.offers as JWSSignedOffer[];
      expect(await verifyOfferSignatureJWS(v1Offers[0]!, key())).toMatchObject({ resourceUrl: `${base}${path}`, amount: payload.amount });
    }
  });

  it("a refused proof's 402 carries them too", async () => {
    const garbage = await send("GET", "/api/v1/health", { "payment-signature": "bm90IGpzb24=" });
    expect(garbage.res.status).toBe(402);
    const required = JSON.parse(Buffer.from(garbage.res.headers.get("payment-required")!, "base64").toString("utf8"));
    expect(required.error).toBe("invalid_payment_header");
    const offers = extractOffersFromPaymentRequired(required) as JWSSignedOffer[];
    expect(await verifyOfferSignatureJWS(offers[0]!, key())).toMatchObject({ resourceUrl: `${base}/api/v1/health`, scheme: "exact" });
    const body = JSON.parse(Buffer.from(garbage.received).toString("utf8"));
    expect(body.extensions["offer-receipt"].info.offers).toEqual(offers);
  });
});

describe("a signed receipt on every paid HTTP answer, bound to the request and the answer", () => {
  it("x402 v1: a paid GET, a paid POST read and a paid POST write", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const read = await send("GET", "/api/v1/health", { "x-payment": await paymentFor(wallet, base, "GET", "/api/v1/health") });
    const estimate = '{ "amount_usdc" : 1000,"action":"deposit" }';
    const posted = await send(
      "POST",
      "/api/v1/estimate",
      { "x-payment": await paymentFor(wallet, base, "POST", "/api/v1/estimate", JSON.parse(estimate)) },
      estimate,
    );
    const deposit = '{"amount_usdc":  500}';
    const written = await send(
      "POST",
      "/api/v1/deposits",
      { "x-payment": await paymentFor(wallet, base, "POST", "/api/v1/deposits", JSON.parse(deposit)), "idempotency-key": newIdempotencyKey() },
      deposit,
    );
    for (const p of [read, posted, written]) {
      expect(p.res.headers.get("payment-response")).toBeNull();
      const { receipt } = await checkedReceipt(p, account.address);
      await expect(verifyReceipt(receipt, { ...expectationOf(p), payer: account.address })).resolves.toMatchObject({ payer: account.address });
    }
    expect(written.res.status).toBe(202);
  });

  it("x402 v2: a paid GET and a paid POST write; a replay by payment-identifier returns the same receipt", async () => {
    const { account } = await newPayer(stack.chain);
    const read = await send("GET", "/api/v1/health", {
      "payment-signature": await paymentSignature(account, await paymentRequiredFor(base, "GET", "/api/v1/health")),
    });
    const deposit = '{"amount_usdc":500}';
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const withId = (p: { extensions?: Record<string, unknown> }) =>
      void (p.extensions = { ...p.extensions, "payment-identifier": { info: { required: false, id } } });
    const required = await paymentRequiredFor(base, "POST", "/api/v1/deposits", JSON.parse(deposit));
    const idempotencyKey = newIdempotencyKey();
    const written = await send(
      "POST",
      "/api/v1/deposits",
      { "payment-signature": await paymentSignature(account, required, withId), "idempotency-key": idempotencyKey },
      deposit,
    );
    for (const p of [read, written]) {
      expect(p.res.headers.get("x-payment-response")).toBeNull();
      await checkedReceipt(p, account.address);
    }
    const replay = await send(
      "POST",
      "/api/v1/deposits",
      { "payment-signature": await paymentSignature(account, required, withId), "idempotency-key": idempotencyKey },
      deposit,
    );
    expect(replay.res.headers.get("idempotent-replayed")).toBe("true");
    expect(extractReceiptFromResponse(replay.res)).toEqual(extractReceiptFromResponse(written.res));
  });

  it("a receipt of one answer does not pass for another request, answer or payment, nor for an edited payload", async () => {
    const { account } = await newPayer(stack.chain);
    const pay = async (path: string) =>
      send("GET", path, { "payment-signature": await paymentSignature(account, await paymentRequiredFor(base, "GET", path)) });
    const health = await pay("/api/v1/health");
    const again = await pay("/api/v1/health");
    const treasury = await pay("/api/v1/treasury");
    const a = await checkedReceipt(health, account.address);
    const b = await checkedReceipt(again, account.address);
    const c = await checkedReceipt(treasury, account.address);
    // another route: another request, another answer
    expect(sha256(health.received)).not.toBe(sha256(treasury.received));
    await expect(verifyReceipt(a.receipt, expectationOf(treasury))).rejects.toMatchObject({ code: "request_mismatch" });
    await expect(verifyReceipt(a.receipt, { ...expectationOf(health), answer: expectationOf(treasury).answer })).rejects.toMatchObject({
      code: "answer_mismatch",
    });
    await expect(verifyReceipt(c.receipt, expectationOf(health))).rejects.toMatchObject({ code: "request_mismatch" });
    // the same request and answer paid twice: each receipt names its own payment
    expect(a.payload.transaction).not.toBe(b.payload.transaction);
    await expect(verifyReceipt(a.receipt, { ...expectationOf(again), transaction: b.payload.transaction })).rejects.toMatchObject({ code: "payment_mismatch" });
    await expect(verifyReceipt(b.receipt, { ...expectationOf(again), transaction: b.payload.transaction })).resolves.toMatchObject({ payer: account.address });
    // c's payload under a's signature: the extension's verifier refuses it
    const [header, , signature] = a.receipt.signature.split(".");
    const swapped: JWSSignedReceipt = { format: "jws", signature: `${header}.${c.receipt.signature.split(".")[1]}.${signature}` };
    await expect(verifyReceiptSignatureJWS(swapped, key())).rejects.toThrow();
  });

  it("the receipt matches the 402's offer by the extension's own check", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "GET", "/api/v1/audit");
    const offer = decodeSignedOffers(extractOffersFromPaymentRequired(required))[0]!;
    const paid = await send("GET", "/api/v1/audit", { "payment-signature": await paymentSignature(account, required) });
    const { receipt } = await checkedReceipt(paid, account.address);
    expect(verifyReceiptMatchesOffer(receipt, offer, [account.address])).toBe(true);
  });
});

describe("a signed receipt on a paid MCP tool call", () => {
  async function connect(): Promise<Client> {
    const client = new Client({ name: "paying-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`)));
    return client;
  }
  const payFor = (account: PrivateKeyAccount, required: unknown) => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    return client.createPaymentPayload(required as never);
  };
  const receiptIn = (result: Record<string, any>) => result._meta["x402/payment-response"].extensions["offer-receipt"].info.receipt as SignedReceipt;

  it("binds the tool, the arguments as sent and the result as received; the 402's offers verify", async () => {
    const { account } = await newPayer(stack.chain);
    const mcp = await connect();
    try {
      // the arguments in the client's own order
      const args = { idempotency_key: newIdempotencyKey(), amount_usdc: 500 };
      const unpaid = await mcp.callTool({ name: "prepare_deposit", arguments: args });
      const required = unpaid.structuredContent as Record<string, any>;
      const offers = extractOffersFromPaymentRequired(required as never) as JWSSignedOffer[];
      expect(await verifyOfferSignatureJWS(offers[0]!, key())).toMatchObject({ resourceUrl: `${base}/api/v1/deposits`, amount: "50000" });

      const paid = JSON.parse(
        JSON.stringify(await mcp.callTool({ name: "prepare_deposit", arguments: args, _meta: { "x402/payment": await payFor(account, required) } })),
      ) as Record<string, any>;
      expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
      const receipt = receiptIn(paid);
      const payload = (await verifyReceiptSignatureJWS(receipt as JWSSignedReceipt, key())) as Record<string, any>;
      const { _meta, ...answer } = paid;
      const settlement = _meta["x402/payment-response"];
      expect(payload).toMatchObject({
        network: "eip155:84532",
        resourceUrl: `${base}/api/v1/deposits`,
        payer: account.address,
        transaction: settlement.transaction,
        binding: {
          request: { transport: "mcp", tool: "prepare_deposit", arguments: sha256(jcs(args)) },
          answer: sha256(jcs(answer)),
          payment: { scheme: "exact", amount: "50000", payTo: stack.payTo, asset: stack.chain.usdc, transaction: settlement.transaction },
        },
      });
      const expectation: ReceiptExpectation = {
        keys: jwks.keys,
        request: { transport: "mcp", tool: "prepare_deposit", arguments: args },
        answer: { transport: "mcp", result: paid },
        payer: account.address,
        amount: 50_000n,
      };
      await expect(verifyReceipt(receipt, expectation)).resolves.toMatchObject({ payer: account.address });
      // another tool call's arguments, or another result: refused
      await expect(
        verifyReceipt(receipt, { ...expectation, request: { ...expectation.request, arguments: { ...args, amount_usdc: 501 } } as never }),
      ).rejects.toMatchObject({
        code: "request_mismatch",
      });
      await expect(
        verifyReceipt(receipt, {
          ...expectation,
          answer: { transport: "mcp", result: { ...paid, structuredContent: { ...paid.structuredContent, tx_id: "tx_other" } } },
        }),
      ).rejects.toMatchObject({ code: "answer_mismatch" });
    } finally {
      await mcp.close();
    }
  }, 60_000);

  it("an x402 v1 payload too: a read-only tool's receipt binds its (empty) arguments and its result", async () => {
    const { account, wallet } = await newPayer(stack.chain);
    const mcp = await connect();
    try {
      const required = (await mcp.callTool({ name: "get_health", arguments: {} })).structuredContent as Record<string, any>;
      const accepted = required.accepts[0];
      const v1 = JSON.parse(
        Buffer.from(
          await createPaymentHeader(wallet as never, 1, {
            scheme: "exact",
            network: "base-sepolia",
            maxAmountRequired: accepted.amount,
            resource: required.resource.url,
            description: "",
            mimeType: "application/json",
            payTo: accepted.payTo,
            maxTimeoutSeconds: accepted.maxTimeoutSeconds,
            asset: accepted.asset,
            extra: accepted.extra,
          }),
          "base64",
        ).toString(),
      );
      const paid = JSON.parse(JSON.stringify(await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": v1 } }))) as Record<string, any>;
      expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
      expect(paid._meta["x402/payment-response"]).toMatchObject({ success: true, network: "base-sepolia" });
      const { _meta, ...answer } = paid;
      expect(await verifyReceiptSignatureJWS(receiptIn(paid) as JWSSignedReceipt, key())).toMatchObject({
        network: "eip155:84532",
        payer: account.address,
        binding: { request: { transport: "mcp", tool: "get_health", arguments: sha256("{}") }, answer: sha256(jcs(answer)), payment: { amount: "1000" } },
      });
    } finally {
      await mcp.close();
    }
  }, 60_000);
});
