/**
 * x402 version 2 beside version 1 on the local Base Sepolia (Anvil 84532,
 * TestUSDC) with the project's facilitator: every 402 offers both versions, a
 * v2 proof (PAYMENT-SIGNATURE) is answered with PAYMENT-RESPONSE, and the
 * guarantees of version 1 hold across versions (one authorization is one
 * payment, whichever header brings it). Real v2 clients: @x402/fetch 2.x and
 * @x402/axios; balances checked to the atomic unit.
 */
import { decodePaymentResponseHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapAxiosWithPayment, x402Client as AxiosX402Client } from "@x402/axios";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import axios from "axios";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey } from "../helpers/treasury";
import {
  AUTHORIZER_KEY,
  envelopeCount,
  expireEnvelopes,
  newPayer,
  ONE_PROOF_LOSER,
  paymentRequiredFor,
  paymentSignature,
  startX402Suite,
  UPTO_KEY,
  type X402Stack,
  FACILITATOR_AUTH,
} from "../helpers/x402-stack";

let stack: X402Stack;
let base: string;
let v: ResponseValidator;

beforeAll(async () => void ({ stack, base, v } = await startX402Suite()), 60_000);
afterAll(() => stack?.close());

const handlerRuns = (treasuryId: string) => envelopeCount(stack.gateway, treasuryId);

describe("one 402, both versions", () => {
  it("every priced route's 402 carries the v1 body and a v2 PAYMENT-REQUIRED header with the same price", async () => {
    const prices = (await call(base, "GET", "/x402/prices.json")).body;
    expect(prices).toMatchObject({ x402_versions: [1, 2], networks: { "1": "base-sepolia", "2": "eip155:84532" } });
    for (const p of prices.prices) {
      const r = await call(base, p.method, p.path, { ...(p.method === "POST" ? { body: {} } : {}), headers: { "idempotency-key": newIdempotencyKey() } });
      expect(r.status).toBe(402);
      v.check(p.method, p.path, 402, r.body);
      expect(r.body).toMatchObject({ x402Version: 1, accepts: [{ network: "base-sepolia", maxAmountRequired: p.amount_atomic }] });
      expect(r.headers.get("www-authenticate")).toContain('header="PAYMENT-SIGNATURE"');
      const required = await paymentRequiredFor(base, p.method, p.path, p.method === "POST" ? {} : undefined);
      expect(required).toEqual({
        x402Version: 2,
        error: "payment_required",
        resource: { url: `${base}${p.path}`, description: p.description, mimeType: "application/json" },
        accepts: [
          {
            scheme: "exact",
            network: "eip155:84532",
            amount: p.amount_atomic,
            asset: stack.chain.usdc,
            payTo: stack.payTo,
            maxTimeoutSeconds: 120,
            extra: { name: "USDC", version: "2" },
          },
        ],
        extensions: {
          "payment-identifier": expect.objectContaining({ info: { required: false } }),
          bazaar: expect.objectContaining({ info: expect.any(Object) }),
          // x402's offer-receipt: the service's signed offer of each entry of accepts (test/gateway/x402-receipts.test.ts checks them)
          "offer-receipt": expect.objectContaining({ info: { offers: [{ format: "jws", acceptIndex: 0, signature: expect.any(String) }] } }),
          // a downward leg or a read of the wallet's own treasury is never kept from by money: it offers the wallet's own signature too, free
          ...([
            "/api/v1/repay",
            "/api/v1/withdraw",
            "/api/v1/sell",
            "/api/v1/exit",
            "/api/v1/health",
            "/api/v1/treasury",
            "/api/v1/policy-state",
            "/api/v1/audit",
            "/api/v1/events",
          ].includes(p.path)
            ? { "sign-in-with-x": expect.objectContaining({ info: expect.objectContaining({ uri: `${base}${p.path}` }) }) }
            : {}),
        },
      });
    }
  });
});

describe("real v2 clients pay in version 2", () => {
  it("@x402/fetch pays for the event stream like a read: settled before its first byte, then the payer's treasury's events as they come", async () => {
    const { account } = await newPayer(stack.chain);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    const pay = wrapFetchWithPayment(fetch, client);
    const before = await stack.chain.balanceOf(account.address);
    const done = new AbortController();
    const res = await pay(`${base}/api/v1/events`, { headers: { accept: "text/event-stream" }, signal: done.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(decodePaymentResponseHeader(res.headers.get("payment-response")!)).toMatchObject({ success: true, payer: account.address });
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 1_400n);
    // the payment's own event reaches the stream that paid for it
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: payment.settled")) text += (await reader.read()).value ?? "";
    expect(text).toMatch(/^retry: 2000\n\n/);
    expect(text).toMatch(/"amount_usdc":"0\.0014"/);
    done.abort();
  });

  it("@x402/fetch 2.x pays GET /api/v1/health and a deposit envelope; PAYMENT-RESPONSE names eip155:84532; balances move by exactly the prices", async () => {
    const { account } = await newPayer(stack.chain);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    const sent: string[] = [];
    const pay = wrapFetchWithPayment(async (input: string | URL | Request, init?: RequestInit) => {
      const h = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      if (h.has("payment-signature")) sent.push("v2");
      if (h.has("x-payment")) sent.push("v1");
      return fetch(input, init);
    }, client);
    const before = { payer: await stack.chain.balanceOf(account.address), payTo: await stack.chain.balanceOf(stack.payTo) };
    const health = await pay(`${base}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("x-payment-response")).toBeNull();
    const settled = decodePaymentResponseHeader(health.headers.get("payment-response")!);
    expect(settled).toMatchObject({ success: true, network: "eip155:84532", payer: account.address });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const deposit = await pay(`${base}/api/v1/deposits`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": newIdempotencyKey() },
      body: JSON.stringify({ amount_usdc: 500 }),
    });
    expect(deposit.status).toBe(202);
    expect(((await deposit.json()) as { unsigned_transaction: { data: string } }).unsigned_transaction.data).toMatch(/^0x617ba037/);
    expect(sent).toEqual(["v2", "v2"]);
    expect(await stack.chain.balanceOf(account.address)).toBe(before.payer - 1_000n - 50_000n);
    expect(await stack.chain.balanceOf(stack.payTo)).toBe(before.payTo + 1_000n + 50_000n);
  });

  it("@x402/axios pays POST /api/v1/estimate in version 2", async () => {
    const { account } = await newPayer(stack.chain);
    const client = new AxiosX402Client();
    registerExactEvmScheme(client as never, { signer: account });
    const api = wrapAxiosWithPayment(axios.create({ baseURL: base }), client);
    const before = await stack.chain.balanceOf(account.address);
    const r = await api.post("/api/v1/estimate", { action: "deposit", amount_usdc: 1000 });
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    expect(r.data).toMatchObject({ object: "action_preview", service_fee_usdc: 20 });
    expect(decodePaymentResponseHeader(r.headers["payment-response"] as string)).toMatchObject({ success: true, network: "eip155:84532" });
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 10_000n);
  });
});

describe("the guarantees hold in version 2 and across versions", () => {
  it("a replayed PAYMENT-SIGNATURE never runs the handler again; the same authorization as a v1 X-PAYMENT is the same spent payment", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "POST", "/api/v1/deposits", { amount_usdc: 500 });
    const proof = await paymentSignature(account, required);
    const first = await call(base, "POST", "/api/v1/deposits", {
      body: { amount_usdc: 500 },
      headers: { "payment-signature": proof, "idempotency-key": newIdempotencyKey() },
    });
    expect(first.status, first.text).toBe(202);
    const treasuryId = first.headers.get("x-treasury-id")!;
    const balance = await stack.chain.balanceOf(account.address);
    await expireEnvelopes(stack.gateway, treasuryId);

    const again = await call(base, "POST", "/api/v1/deposits", {
      body: { amount_usdc: 500 },
      headers: { "payment-signature": proof, "idempotency-key": newIdempotencyKey() },
    });
    expect(again.status).toBe(402);
    expect(again.body.error).toBe("payment_already_used");
    expect(again.headers.get("payment-required")).toBeTruthy();
    // the v2 payload's authorization and signature, sent as a version 1 proof: the same payment, already spent
    const v2 = JSON.parse(Buffer.from(proof, "base64").toString());
    const asV1 = Buffer.from(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: v2.payload })).toString("base64");
    const crossed = await call(base, "POST", "/api/v1/deposits", {
      body: { amount_usdc: 500 },
      headers: { "x-payment": asV1, "idempotency-key": newIdempotencyKey() },
    });
    expect(crossed.status).toBe(402);
    expect(crossed.body.error).toBe("payment_already_used");
    expect(await handlerRuns(treasuryId)).toBe(1);
    expect(await stack.chain.balanceOf(account.address)).toBe(balance);
  });

  it("two concurrent requests with one v2 proof run the handler once and charge once", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "POST", "/api/v1/deposits", { amount_usdc: 500 });
    const proof = await paymentSignature(account, required);
    const before = await stack.chain.balanceOf(account.address);
    const both = await Promise.all(
      [0, 1].map(() =>
        call(base, "POST", "/api/v1/deposits", { body: { amount_usdc: 500 }, headers: { "payment-signature": proof, "idempotency-key": newIdempotencyKey() } }),
      ),
    );
    expect(both.filter((r) => r.status === 202)).toHaveLength(1);
    const loser = both.find((r) => r.status !== 202)!;
    expect(ONE_PROOF_LOSER).toContainEqual([loser.status, loser.body.error]);
    const treasuryId = both.find((r) => r.status === 202)!.headers.get("x-treasury-id")!;
    expect(await handlerRuns(treasuryId)).toBe(1);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 50_000n);
  });

  it("refuses a v2 proof whose accepted requirements or resource are another route's, or another network's, and charges nothing", async () => {
    const { account } = await newPayer(stack.chain);
    const before = await stack.chain.balanceOf(account.address);
    const health = await paymentRequiredFor(base, "GET", "/api/v1/health");
    const treasury = await paymentRequiredFor(base, "GET", "/api/v1/treasury");
    // a proof made for /treasury (1,100) sent to /health (1,000)
    const dearer = await call(base, "GET", "/api/v1/health", { headers: { "payment-signature": await paymentSignature(account, treasury) } });
    expect([dearer.status, dearer.body.error]).toEqual([402, "payment_does_not_match_route"]);
    v.check("GET", "/api/v1/health", 402, dearer.body);
    // the right amount, but the resource of another route
    const elsewhere = await call(base, "GET", "/api/v1/health", {
      headers: { "payment-signature": await paymentSignature(account, health, (p) => void (p.resource = { ...p.resource!, url: `${base}/api/v1/audit` })) },
    });
    expect([elsewhere.status, elsewhere.body.error]).toEqual([402, "payment_does_not_match_route"]);
    // the requirements echoed on another network
    const mainnet = await call(base, "GET", "/api/v1/health", {
      headers: { "payment-signature": await paymentSignature(account, health, (p) => void (p.accepted = { ...p.accepted, network: "eip155:8453" })) },
    });
    expect([mainnet.status, mainnet.body.error]).toEqual([402, "unsupported_scheme_or_network"]);
    const garbage = await call(base, "GET", "/api/v1/health", { headers: { "payment-signature": "bm90IGpzb24=" } });
    expect([garbage.status, garbage.body.error]).toEqual([402, "invalid_payment_header"]);
    expect(await stack.chain.balanceOf(account.address)).toBe(before);
  });
});

describe("the facilitator speaks version 2", () => {
  it("answers /supported in the v2 shape and verifies and settles a v2 payment once", async () => {
    const supported = await (await fetch(`${stack.facilitator.url}/supported`, { headers: FACILITATOR_AUTH })).json();
    expect(supported).toEqual({
      kinds: [
        { x402Version: 2, scheme: "exact", network: "eip155:84532" },
        { x402Version: 1, scheme: "exact", network: "base-sepolia" },
        // sessions and upto, each settled with a key of its own (the stack's facilitator has all three)
        { x402Version: 2, scheme: "batch-settlement", network: "eip155:84532", extra: { receiverAuthorizer: privateKeyToAccount(AUTHORIZER_KEY).address } },
        { x402Version: 2, scheme: "upto", network: "eip155:84532", extra: { facilitatorAddress: privateKeyToAccount(UPTO_KEY).address } },
      ],
      extensions: [],
      signers: { "eip155:*": [stack.facilitator.facilitator.address] },
    });
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "GET", "/api/v1/audit");
    const paymentPayload = JSON.parse(Buffer.from(await paymentSignature(account, required), "base64").toString());
    const post = (path: string, paymentRequirements: unknown) =>
      fetch(`${stack.facilitator.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...FACILITATOR_AUTH },
        body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements }),
      }).then((r) => r.json());
    const reqs = required.accepts[0]!;
    expect(await post("/verify", reqs)).toMatchObject({ isValid: true, payer: account.address });
    expect(await post("/verify", { ...reqs, amount: "1" })).toMatchObject({ isValid: false, invalidReason: "invalid_payment_requirements" });
    expect(await post("/settle", reqs)).toMatchObject({ success: true, network: "eip155:84532", payer: account.address });
    expect(await post("/verify", reqs)).toMatchObject({ isValid: false, invalidReason: "invalid_exact_evm_payload_authorization_nonce_used" });
  });
});

describe("the payment-identifier extension", () => {
  const withId = (id: string) => (p: { extensions?: Record<string, unknown> }) =>
    void (p.extensions = { ...p.extensions, "payment-identifier": { info: { required: false, id } } });
  const paid = (path: string, proof: string, key = newIdempotencyKey(), body: unknown = { amount_usdc: 500 }) =>
    call(base, "POST", path, { body, headers: { "payment-signature": proof, "idempotency-key": key } });

  it("a retry with the same id and a fresh proof gets the first answer and is never charged; the fresh proof stays unspent", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "POST", "/api/v1/deposits", { amount_usdc: 500 });
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const key = newIdempotencyKey();
    const before = await stack.chain.balanceOf(account.address);
    const first = await paid("/api/v1/deposits", await paymentSignature(account, required, withId(id)), key);
    expect(first.status, first.text).toBe(202);
    const again = await paid("/api/v1/deposits", await paymentSignature(account, required, withId(id)), key);
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.tx_id).toBe(first.body.tx_id);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 50_000n);
    expect(await handlerRuns(first.headers.get("x-treasury-id")!)).toBe(1);
    // the same id for another request: 409, nothing charged
    const other = await paid("/api/v1/deposits", await paymentSignature(account, required, withId(id)), newIdempotencyKey(), { amount_usdc: 600 });
    expect([other.status, other.body.error]).toEqual([409, "payment_identifier_reused"]);
    v.check("POST", "/api/v1/deposits", 409, other.body);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 50_000n);
  });

  it("a retry sent while the first is still being served is a 409 with Retry-After, never a 402; one charge in all", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "GET", "/api/v1/treasury");
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const before = await stack.chain.balanceOf(account.address);
    const proofs = await Promise.all([0, 1, 2].map(() => paymentSignature(account, required, withId(id))));
    const answers = await Promise.all(proofs.map((proof) => call(base, "GET", "/api/v1/treasury", { headers: { "payment-signature": proof } })));
    expect(
      answers.map((a) => a.status).every((s) => s === 200 || s === 409),
      JSON.stringify(answers.map((a) => a.status)),
    ).toBe(true);
    expect(answers.filter((a) => a.status === 200 && a.headers.get("idempotent-replayed") !== "true")).toHaveLength(1);
    for (const a of answers.filter((a) => a.status === 409)) expect([a.body.error, a.headers.get("retry-after")]).toEqual(["payment_in_progress", "1"]);
    // afterwards the same id answers the stored 200, free
    const later = await call(base, "GET", "/api/v1/treasury", { headers: { "payment-signature": await paymentSignature(account, required, withId(id)) } });
    expect([later.status, later.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 1_100n);
  });

  it("refuses a malformed id with 400 before anything is verified or charged", async () => {
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "GET", "/api/v1/health");
    const r = await call(base, "GET", "/api/v1/health", { headers: { "payment-signature": await paymentSignature(account, required, withId("short")) } });
    expect([r.status, r.body.error]).toEqual([400, "invalid_payment_identifier"]);
    v.check("GET", "/api/v1/health", 400, r.body);
  });
});

const r402HeaderOf = (required: unknown) => Buffer.from(JSON.stringify(required)).toString("base64");

describe("bazaar discovery metadata", () => {
  it("every priced route's 402 carries its bazaar entry made from its schemas, and /x402/discovery/resources lists them all", async () => {
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const listed = await call(base, "GET", "/x402/discovery/resources");
    expect(listed.status).toBe(200);
    v.check("GET", "/x402/discovery/resources", 200, listed.body);
    const prices = (await call(base, "GET", "/x402/prices.json")).body.prices;
    expect(listed.body.items.map((i: any) => i.resource).sort()).toEqual(prices.map((p: any) => `${base}${p.path}`).sort());
    for (const p of prices) {
      const required = await paymentRequiredFor(base, p.method, p.path, p.method === "POST" ? {} : undefined);
      const bazaar = (required.extensions as any).bazaar;
      const entry = listed.body.items.find((i: any) => i.resource === `${base}${p.path}`).metadata.bazaar;
      // the same entry, but for the answers' schema, which only the list carries (it would make the 402's header too large)
      expect(entry.info).toEqual(bazaar.info);
      expect(entry.schema.properties.input).toEqual(bazaar.schema.properties.input);
      expect(entry.schema.properties.output.properties.example).not.toEqual({ type: "object" });
      expect(ajv.validate(entry.schema, entry.info), ajv.errorsText()).toBe(true);
      // with the service's signed offers (offer-receipt, about 1.5 KB per offer) the header stays within 8 KiB, the common header buffer
      expect(Buffer.byteLength(r402HeaderOf(required))).toBeLessThan(8192);
      // info is valid against its own schema
      expect(ajv.validate(bazaar.schema, bazaar.info), `${p.path}: ${ajv.errorsText()}`).toBe(true);
      expect(bazaar.info.input).toMatchObject({ type: "http", method: p.method });
      if (p.method === "POST") {
        // the body schema is the route's own: its example is accepted by it and by the route
        const bodySchema = bazaar.schema.properties.input.properties.body;
        expect(ajv.validate(bodySchema, bazaar.info.input.body)).toBe(true);
        expect(ajv.validate(bodySchema, { amount_usdc: "lots" })).toBe(false);
      }
    }
    const deposit = listed.body.items.find((i: any) => i.resource.endsWith("/api/v1/deposits"));
    expect(deposit.metadata.bazaar.info.input).toEqual({ type: "http", method: "POST", bodyType: "json", body: { amount_usdc: 1000 } });
    expect(deposit.accepts[0]).toMatchObject({ network: "eip155:84532", amount: "50000" });
  });
});
