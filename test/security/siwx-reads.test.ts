/**
 * A wallet that paid once reads what it paid for with its own signature (x402 sign-in-with-x), paying
 * nothing: its receipt, its treasury's state, health, policy state and fee audit trail. Run over real HTTP
 * with the official client helpers (createSIWxPayload / encodeSIWxHeader) against a local Base Sepolia
 * (Anvil 84532, TestUSDC) and the project's facilitator; balances are read on chain, to the atomic unit.
 *
 *   - the signature opens only the treasury the address stands behind (its proven registration, or the one
 *     its own payment created): a stranger, a bare registration, a registration of someone else's address
 *     are refused or see only their own;
 *   - a signature is good once, for one route, one request and this host;
 *   - a priced read still offers the payment beside the sign-in;
 *   - the rate limits count a sign-in as a payer: the signer's own bucket once proven, else the address's
 *     write window.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestDigest } from "../../gateway/src/x402/sign-in-with-x";
import { call } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey, registerProven, registerTreasury } from "../helpers/treasury";
import { newPayer, paymentHeader, settledPaymentCount, startX402Suite, type Payer, type X402Stack } from "../helpers/x402-stack";

const LIMITS = { read: 1000, write: 500 };
const CHAIN = "eip155:8453";
let stack: X402Stack;
let base: string;
let v: ResponseValidator;

// behind a proxy on loopback: each client below is an address of its own (X-Forwarded-For)
beforeAll(
  async () =>
    void ({ stack, base, v } = await startX402Suite({
      TRUST_PROXY: "loopback",
      RATE_LIMIT_READ_PER_MIN: String(LIMITS.read),
      RATE_LIMIT_WRITE_PER_MIN: String(LIMITS.write),
    })),
  60_000,
);
afterAll(() => stack?.close());

let lastClient = 0;
/** a client of its own address: its requests come through the proxy from 198.51.100.N */
function newClient() {
  const from = { "x-forwarded-for": `198.51.100.${++lastClient}` };
  return (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => call(base, method, path, { ...opts, headers: { ...opts.headers, ...from } });
}
type Caller = ReturnType<typeof newClient>;

/** the sign-in challenge a request without a credential is answered with (402 on a priced route, 401 on a key-only one) */
async function challenge(client: Caller, path: string, status: 401 | 402) {
  const r = await client("GET", path);
  expect(r.status, r.text).toBe(status);
  v.check("GET", path.split("?")[0]!, status, r.body);
  return r.body.extensions["sign-in-with-x"];
}

/** the official client's SIGN-IN-WITH-X header for a GET of `path`, signed by `account` on the challenge `path`'s own answer carried */
async function signedHeader(client: Caller, account: PrivateKeyAccount, path: string, status: 401 | 402 = 402): Promise<string> {
  const ext = await challenge(client, path, status);
  return encodeSIWxHeader(await createSIWxPayload({ ...ext.info, chainId: CHAIN, type: "eip191" }, account, `${base}${path}`));
}

/** a GET signed in by `account` */
async function signedGet(client: Caller, account: PrivateKeyAccount, path: string, status: 401 | 402 = 402) {
  const r = await client("GET", path, { headers: { "sign-in-with-x": await signedHeader(client, account, path, status) } });
  v.check("GET", path.split("?")[0]!, r.status, r.body);
  return r;
}

/** one paid request, with a fresh x402 version 1 proof for the route's own requirements */
async function paid(client: Caller, payer: Payer, method: string, path: string, body?: unknown) {
  const asked = await client(method, path, {
    ...(body === undefined ? {} : { body }),
    headers: method === "POST" ? { "idempotency-key": newIdempotencyKey() } : {},
  });
  expect(asked.status, asked.text).toBe(402);
  const header = await paymentHeader(payer.wallet, asked.body.accepts[0]);
  const headers: Record<string, string> = { "x-payment": header, ...(method === "POST" ? { "idempotency-key": newIdempotencyKey() } : {}) };
  const r = await client(method, path, { ...(body === undefined ? {} : { body }), headers });
  v.check(method, path, r.status, r.body);
  return r;
}

/** what the payer and the gateway's payee hold on chain, and the payments recorded as settled */
const money = async (payer: `0x${string}`) => ({
  payer: await stack.chain.balanceOf(payer),
  payee: await stack.chain.balanceOf(stack.payTo),
  settled: await settledPaymentCount(stack.gateway, payer),
});

/**
 * A wallet that paid once: an x402 deposit (its first paid call creates its treasury, wallet mode), the
 * envelope's one transaction signed and relayed (free), so a receipt stands on its treasury.
 */
async function paidOnce() {
  const client = newClient();
  const payer = await newPayer(stack.chain);
  const deposit = await paid(client, payer, "POST", "/api/v1/deposits", { amount_usdc: 150 });
  expect(deposit.status, deposit.text).toBe(202);
  const u = deposit.body.unsigned_transaction;
  const signed = await payer.account.signTransaction({
    type: "eip1559",
    chainId: u.chain_id,
    nonce: 0,
    to: u.to,
    data: u.data,
    value: BigInt(u.value),
    gas: 300_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  });
  const relayed = await client("POST", "/api/v1/relay", {
    body: { tx_id: deposit.body.tx_id, signed_transaction: signed as Hex },
    headers: { "idempotency-key": newIdempotencyKey() },
  });
  expect(relayed.status, relayed.text).toBe(200);
  const receipt = relayed.body.result.receipt;
  const receiptId = receipt.deposit_id as string;
  expect(receiptId).toMatch(/^dep_[0-9a-f]{32}$/);
  return { client, payer, treasuryId: deposit.body.treasury_id as string, receipt, receiptId };
}

let victim: Awaited<ReturnType<typeof paidOnce>>;
beforeAll(async () => {
  victim = await paidOnce();
}, 60_000);

const READS = ["/api/v1/treasury", "/api/v1/health", "/api/v1/policy-state", "/api/v1/audit"];

describe("a wallet that paid once reads what it paid for with its signature", () => {
  it("its receipt, state, health, policy state and fee audit trail: 200 for its own treasury, and not one atomic unit paid", async () => {
    const { client, payer, treasuryId, receipt, receiptId } = victim;
    const before = await money(payer.account.address);
    expect(before.settled).toBe(1);

    const r = await signedGet(client, payer.account, `/api/v1/receipts/${receiptId}`, 401);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("x-treasury-id")).toBe(treasuryId);
    expect(r.body).toMatchObject({ deposit_id: receiptId, action: "deposit", amount_usdc: receipt.amount_usdc, fee_usdc: receipt.fee_usdc });

    for (const path of READS) {
      const read = await signedGet(client, payer.account, path);
      expect([path, read.status], read.text).toEqual([path, 200]);
      expect(read.headers.get("x-treasury-id")).toBe(treasuryId);
      // nothing was settled: no payment response header
      expect([read.headers.get("x-payment-response"), read.headers.get("payment-response")]).toEqual([null, null]);
    }
    const audit = await signedGet(client, payer.account, "/api/v1/audit?limit=5");
    expect(audit.body.data).toEqual([expect.objectContaining({ action: "deposit", trigger: "relayed_signature" })]);
    const state = await signedGet(client, payer.account, "/api/v1/treasury");
    expect(state.body).toMatchObject({ execution_mode: "wallet" });

    expect(await money(payer.account.address)).toEqual(before);
  });

  it("a priced read's 402 offers the payment beside the sign-in (both versions), bound to that request; a key-only read's 401 carries the sign-in", async () => {
    const client = newClient();
    const r = await client("GET", "/api/v1/treasury");
    expect(r.status).toBe(402);
    expect(r.body.accepts).toEqual([expect.objectContaining({ maxAmountRequired: "1100", payTo: stack.payTo })]);
    const info = r.body.extensions["sign-in-with-x"].info;
    expect(info).toMatchObject({ domain: new URL(base).host, uri: `${base}/api/v1/treasury`, version: "1" });
    // bound to this very request: GET, its path, no Idempotency-Key, no body
    expect(info.resources).toEqual([`${base}/api/v1/treasury`, `urn:x402:request:${requestDigest("GET", "/api/v1/treasury", undefined, undefined)}`]);
    expect(r.body.extensions["sign-in-with-x"].supportedChains).toEqual([
      { chainId: "eip155:8453", type: "eip191" },
      { chainId: "eip155:42161", type: "eip191" },
    ]);
    const v2 = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    expect(v2.accepts).toEqual([expect.objectContaining({ amount: "1100", network: "eip155:84532" })]);
    expect(v2.extensions?.["sign-in-with-x"]).toMatchObject({ info: { uri: `${base}/api/v1/treasury` } });

    const key = await client("GET", `/api/v1/receipts/${victim.receiptId}`);
    expect([key.status, key.body.error]).toEqual([401, "unauthorized"]);
    expect(key.headers.get("www-authenticate")).toContain("SIWX");
    expect(key.body.extensions["sign-in-with-x"].info.uri).toBe(`${base}/api/v1/receipts/${victim.receiptId}`);
  });

  it("an MCP client without a key: get_health's payment-required offers the sign-in for that call; _meta carries it, nothing is paid", async () => {
    const { payer, treasuryId } = victim;
    const before = await money(payer.account.address);
    const mcp = new Client({ name: "siwx-reader", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`)));
    try {
      const required = (await mcp.callTool({ name: "get_health", arguments: {} })).structuredContent as any;
      expect(required.http_status).toBe(402);
      const info = required.extensions["sign-in-with-x"].info;
      expect(info.resources).toContain(`urn:x402:request:${requestDigest("GET", "/api/v1/health", undefined, undefined)}`);
      const header = encodeSIWxHeader(await createSIWxPayload({ ...info, chainId: CHAIN, type: "eip191" }, payer.account, `${base}/api/v1/health`));
      const health = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "sign-in-with-x": header } });
      expect(health.isError ?? false, JSON.stringify(health.structuredContent)).toBe(false);
      expect(health.structuredContent).toMatchObject({ http_status: 200, ltv: expect.any(Number) });
      expect(health._meta).toBeUndefined();
      // the same header again: its nonce is spent
      const again = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "sign-in-with-x": header } });
      expect(again.structuredContent).toMatchObject({ http_status: 401, error: "unauthorized" });
    } finally {
      await mcp.close();
    }
    expect(await money(payer.account.address)).toEqual(before);
    expect(treasuryId).toMatch(/^trs_/);
  });
});

describe("the signature opens only the treasury its address stands behind", () => {
  it("a stranger without a treasury is refused (401, typed, a fresh challenge), on the victim's receipt and on every read", async () => {
    const client = newClient();
    const stranger = privateKeyToAccount(generatePrivateKey());
    const r = await signedGet(client, stranger, `/api/v1/receipts/${victim.receiptId}`, 401);
    expect([r.status, r.body.error]).toEqual([401, "unauthorized"]);
    expect(r.body).toMatchObject({ message: expect.stringContaining(`stands behind ${stranger.address}`), request_id: expect.any(String) });
    expect(r.body.extensions["sign-in-with-x"].info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(r.body).not.toHaveProperty("deposit_id");
    for (const path of READS) {
      const read = await signedGet(client, stranger, path);
      expect([path, read.status, read.body.error]).toEqual([path, 401, "unauthorized"]);
      expect(read.headers.get("x-treasury-id")).toBeNull();
    }
  });

  it("a bare registration of its own address is not enough: refused as if it had none", async () => {
    const client = newClient();
    const bare = privateKeyToAccount(generatePrivateKey());
    const t = await registerTreasury(base, { wallet_address: bare.address, execution_mode: "wallet" });
    expect(t.treasuryId).toMatch(/^trs_/);
    for (const path of [`/api/v1/receipts/${victim.receiptId}`, "/api/v1/treasury"]) {
      const r = await signedGet(client, bare, path, path === "/api/v1/treasury" ? 402 : 401);
      expect([path, r.status, r.body.error]).toEqual([path, 401, "unauthorized"]);
    }
  });

  it("an attacker's bare registration of the victim's address neither captures nor shadows the victim's sign-in", async () => {
    const squat = await registerTreasury(base, { wallet_address: victim.payer.account.address, execution_mode: "managed", preset: "aggressive" });
    const r = await signedGet(victim.client, victim.payer.account, "/api/v1/treasury");
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("x-treasury-id")).toBe(victim.treasuryId);
    expect(r.headers.get("x-treasury-id")).not.toBe(squat.treasuryId);
    expect(r.body).toMatchObject({ execution_mode: "wallet" });
  });

  it("a stranger with a treasury of its own (paid, or proven) sees only its own: the victim's receipt is not found (404, typed)", async () => {
    const client = newClient();
    const payer = await newPayer(stack.chain);
    const own = await paid(client, payer, "GET", "/api/v1/treasury");
    expect(own.status, own.text).toBe(200);
    const ownTreasury = own.headers.get("x-treasury-id")!;
    const proven = privateKeyToAccount(generatePrivateKey());
    const registered = await registerProven(base, proven);
    for (const [account, treasuryId] of [
      [payer.account, ownTreasury],
      [proven, registered.treasuryId],
    ] as const) {
      const receipt = await signedGet(client, account, `/api/v1/receipts/${victim.receiptId}`, 401);
      expect([receipt.status, receipt.body.error]).toEqual([404, "not_found"]);
      expect(receipt.body).toMatchObject({ message: expect.any(String), request_id: expect.any(String) });
      expect(receipt.headers.get("x-treasury-id")).toBe(treasuryId);
      const state = await signedGet(client, account, "/api/v1/treasury");
      expect(state.status, state.text).toBe(200);
      expect(state.headers.get("x-treasury-id")).toBe(treasuryId);
      expect(treasuryId).not.toBe(victim.treasuryId);
      const audit = await signedGet(client, account, "/api/v1/audit");
      expect(audit.body.data).toEqual([]);
    }
  });
});

describe("a signature is good once, for one route, one request, this host", () => {
  it("replayed: refused (401), also when sent twice at once (exactly one is served)", async () => {
    const { client, payer } = victim;
    const before = await money(payer.account.address);
    const header = await signedHeader(client, payer.account, "/api/v1/health");
    expect((await client("GET", "/api/v1/health", { headers: { "sign-in-with-x": header } })).status).toBe(200);
    const replay = await client("GET", "/api/v1/health", { headers: { "sign-in-with-x": header } });
    expect([replay.status, replay.body.error]).toEqual([401, "unauthorized"]);
    expect(replay.body.message).toContain("nonce was used");
    v.check("GET", "/api/v1/health", 401, replay.body);

    const twice = await signedHeader(client, payer.account, `/api/v1/receipts/${victim.receiptId}`, 401);
    const both = await Promise.all([0, 1].map(() => client("GET", `/api/v1/receipts/${victim.receiptId}`, { headers: { "sign-in-with-x": twice } })));
    expect(both.map((r) => r.status).sort()).toEqual([200, 401]);
    expect(await money(payer.account.address)).toEqual(before);
  });

  it("for another route, another request of the route, another host or a chain no treasury lives on: refused (401)", async () => {
    const { client, payer } = victim;
    const refused = async (path: string, header: string, why: string) => {
      const r = await client("GET", path, { headers: { "sign-in-with-x": header } });
      expect([path, r.status, r.body.error], r.text).toEqual([path, 401, "unauthorized"]);
      expect(r.body.message).toContain(why);
    };
    // signed for /health, sent to /treasury and to the receipt
    const health = await signedHeader(client, payer.account, "/api/v1/health");
    await refused("/api/v1/treasury", health, "uri_mismatch");
    await refused(`/api/v1/receipts/${victim.receiptId}`, health, "uri_mismatch");
    // signed for one receipt, sent for another id
    const receipt = await signedHeader(client, payer.account, `/api/v1/receipts/${victim.receiptId}`, 401);
    await refused(`/api/v1/receipts/dep_${"0".repeat(32)}`, receipt, "uri_mismatch");
    // signed for one page of the audit trail, sent for another (same route, another request)
    const page = await signedHeader(client, payer.account, "/api/v1/audit?limit=1");
    await refused("/api/v1/audit?limit=2", page, "request_mismatch");
    // signed for a downward leg (POST /repay), sent to a read
    const leg = (await client("POST", "/api/v1/repay", { body: { amount_usdc: 1 }, headers: { "idempotency-key": newIdempotencyKey() } })).body.extensions[
      "sign-in-with-x"
    ];
    const repay = encodeSIWxHeader(await createSIWxPayload({ ...leg.info, chainId: CHAIN, type: "eip191" }, payer.account, `${base}/api/v1/repay`));
    await refused("/api/v1/treasury", repay, "uri_mismatch");
    // the same message for another host
    const ext = await challenge(client, "/api/v1/treasury", 402);
    const elsewhere = { ...ext.info, domain: "evil.example", uri: "https://evil.example/api/v1/treasury" };
    const phished = encodeSIWxHeader(
      await createSIWxPayload({ ...elsewhere, chainId: CHAIN, type: "eip191" }, payer.account, "https://evil.example/api/v1/treasury"),
    );
    await refused("/api/v1/treasury", phished, "domain_mismatch");
    // Arbitrum: a chain the service knows, where this wallet stands behind no treasury
    const arbitrum = encodeSIWxHeader(
      await createSIWxPayload({ ...ext.info, chainId: "eip155:42161", type: "eip191" }, payer.account, `${base}/api/v1/treasury`),
    );
    await refused("/api/v1/treasury", arbitrum, "no treasury on arbitrum");
    // and each of those was refused on its own merits: the victim's fresh signature still reads
    expect((await signedGet(client, payer.account, "/api/v1/treasury")).status).toBe(200);
  });
});

describe("rate limits count a sign-in as a payer", () => {
  it("a proven signer is counted in its own bucket, the one its payments use, from any address", async () => {
    const { payer } = victim;
    const [a, b, c] = [newClient(), newClient(), newClient()];
    const remaining = (r: { headers: Headers }): [number, number] => [
      Number(r.headers.get("x-ratelimit-limit")),
      Number(r.headers.get("x-ratelimit-remaining")),
    ];
    const first = await a("GET", "/api/v1/health", { headers: { "sign-in-with-x": await signedHeader(a, payer.account, "/api/v1/health") } });
    expect(first.status).toBe(200);
    const [limit, left] = remaining(first);
    expect(limit).toBe(LIMITS.read);
    // from another address: the same bucket, one hit on
    const second = await b("GET", "/api/v1/health", { headers: { "sign-in-with-x": await signedHeader(b, payer.account, "/api/v1/health") } });
    expect(remaining(second)).toEqual([LIMITS.read, left - 1]);
    // a payment of the same wallet (a payer this service has been paid by): still that bucket
    const asked = await c("GET", "/api/v1/health");
    const payment = await c("GET", "/api/v1/health", { headers: { "x-payment": await paymentHeader(payer.wallet, asked.body.accepts[0]) } });
    expect(payment.status, payment.text).toBe(200);
    expect(remaining(payment)).toEqual([LIMITS.read, left - 2]);
  });

  it("a sign-in that proves nothing (a stranger, a bad signature) is counted by client address in the write window, as an unproven payer", async () => {
    const client = newClient();
    const stranger = privateKeyToAccount(generatePrivateKey());
    const header = await signedHeader(client, stranger, "/api/v1/health");
    const r = await client("GET", "/api/v1/health", { headers: { "sign-in-with-x": header } });
    expect([r.status, Number(r.headers.get("x-ratelimit-limit")), Number(r.headers.get("x-ratelimit-remaining"))]).toEqual([
      401,
      LIMITS.write,
      LIMITS.write - 1,
    ]);
    const junk = await client("GET", "/api/v1/health", { headers: { "sign-in-with-x": "bm90IGEgc2lnbi1pbg==" } });
    expect([junk.status, Number(junk.headers.get("x-ratelimit-limit")), Number(junk.headers.get("x-ratelimit-remaining"))]).toEqual([
      401,
      LIMITS.write,
      LIMITS.write - 2,
    ]);
  });
});
