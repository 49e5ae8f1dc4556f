/**
 * Attacks on what an x402 proof buys, run over real HTTP with the real x402
 * clients against a local Base Sepolia (Anvil 84532, TestUSDC) and the
 * project's facilitator. Balances are read on chain, to the atomic unit.
 *
 *   - identities that cost nothing: a proof signed by a fresh throwaway key
 *     buys no rate-limit budget of its own, on any route;
 *   - a spent proof (public on chain once settled) replays nobody's answer;
 *   - a malformed proof is the client's fault (402), not the facilitator's (503);
 *   - a proof being served answers 409 on both versions, so no client pays twice;
 *   - a flood of paid MCP tool calls from throwaway wallets costs the
 *     facilitator a bounded number of verifications.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, createTestClient, createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { wrapFetchWithPayment } from "x402-fetch";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { TEST_USDC_ABI } from "../../fixtures/base-sepolia";
import { call, startTestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { newIdempotencyKey } from "../helpers/treasury";
import {
  challengeFor,
  FACILITATOR_API_KEY,
  newPayer,
  paymentHeader,
  paymentRequiredFor,
  paymentSignature,
  startX402Stack,
  type X402Stack,
} from "../helpers/x402-stack";

const LIMITS = { read: 10, write: 5 };
let stack: X402Stack;
let v: ResponseValidator;

beforeAll(async () => {
  // behind a proxy on loopback: each test is a client of its own address (X-Forwarded-For), with fresh buckets
  stack = await startX402Stack({ TRUST_PROXY: "loopback", RATE_LIMIT_READ_PER_MIN: String(LIMITS.read), RATE_LIMIT_WRITE_PER_MIN: String(LIMITS.write) });
  v = new ResponseValidator((await call(stack.gateway.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(() => stack?.close());

let lastClient = 0;
/** a client of its own address: its requests (and its fetch, for x402-fetch) come through the proxy from 198.51.100.N */
const newClient = () => {
  const address = { "x-forwarded-for": `198.51.100.${++lastClient}` };
  return {
    call: (method: string, path: string, opts: Parameters<typeof call>[3] = {}) =>
      call(stack.gateway.url, method, path, { ...opts, headers: { ...opts.headers, ...address } }),
    fetch: (input: string, init: RequestInit = {}) => fetch(input, { ...init, headers: { ...(init.headers as Record<string, string>), ...address } }),
  };
};

const throwaway = () => {
  const account = privateKeyToAccount(generatePrivateKey());
  return { account, wallet: createWalletClient({ account, chain: baseSepolia, transport: http(stack.chain.rpcUrl) }) };
};
const withId = (id: string) => (p: { extensions?: Record<string, unknown> }) =>
  void (p.extensions = { ...p.extensions, "payment-identifier": { info: { required: false, id } } });
const authorizationUsed = (from: `0x${string}`, nonce: `0x${string}`) =>
  createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) }).readContract({
    address: stack.chain.usdc,
    abi: TEST_USDC_ABI,
    functionName: "authorizationState",
    args: [from, nonce],
  });

describe("a proof signed by a throwaway key buys no budget of its own", () => {
  it("on a route that takes no payment: POST /agents/apply and GET gateway-status are counted by client address", async () => {
    const client = newClient();
    const required = await paymentRequiredFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const application = { operator_name: "Flood", operator_email: "flood@example.com", use_case: "twenty characters of use case text" };
    const applies: number[] = [];
    for (let i = 0; i < LIMITS.write + 3; i++) {
      const proof = await paymentSignature(throwaway().account, required);
      applies.push((await client.call("POST", "/api/v1/agents/apply", { body: application, headers: { "payment-signature": proof } })).status);
    }
    // before: every one of them 200 (a fresh bucket per throwaway signer)
    expect(applies).toEqual([...Array(LIMITS.write).fill(200), 429, 429, 429]);

    const challenge = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const reads: number[] = [];
    for (let i = 0; i < LIMITS.read + 3; i++) {
      const header = await paymentHeader(throwaway().wallet, challenge);
      reads.push((await client.call("GET", "/api/v1/public/gateway-status", { headers: { "x-payment": header } })).status);
    }
    expect(reads).toEqual([...Array(LIMITS.read).fill(200), 429, 429, 429]);
  });

  it("on a priced route: an unfunded throwaway payer's proofs count as writes of the client address, and the facilitator verifies at most that many", async () => {
    const client = newClient();
    const verify = vi.spyOn(stack.facilitator.facilitator, "verify");
    try {
      const challenge = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++)
        statuses.push((await client.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(throwaway().wallet, challenge) } })).status);
      // before: 15 x 402 (each a fresh bucket, each a verification)
      expect(statuses).toEqual([...Array(LIMITS.write).fill(402), ...Array(15 - LIMITS.write).fill(429)]);
      expect(verify).toHaveBeenCalledTimes(LIMITS.write);
    } finally {
      verify.mockRestore();
    }
  });

  it("a payer this service has been paid by has its own bucket, untouched by a flood from its address", async () => {
    const client = newClient();
    const { wallet } = await newPayer(stack.chain);
    const challenge = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    // its first payment is counted by address (it proves nothing yet); once settled, the payer is known
    expect((await client.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(wallet, challenge) } })).status).toBe(200);
    for (let i = 0; i < LIMITS.write + 1; i++)
      await client.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(throwaway().wallet, challenge) } });
    expect((await client.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(throwaway().wallet, challenge) } })).status).toBe(429);
    const paid = await client.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(wallet, challenge) } });
    expect(paid.status).toBe(200);
    expect(Number(paid.headers.get("x-ratelimit-remaining"))).toBe(LIMITS.read - 1);
  });

  it("a sign-in beside another payer's proof is counted by the client's address: the payer's bucket is neither borrowed nor drained", async () => {
    const attacker = newClient();
    const victim = newClient();
    const { wallet } = await newPayer(stack.chain);
    const challenge = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
    expect((await victim.call("GET", "/api/v1/treasury", { headers: { "x-payment": await paymentHeader(wallet, challenge) } })).status).toBe(200);
    // the victim's proof, copied (authorizations are public on chain once settled), beside a sign-in that decides the credential
    const copied = await paymentHeader(wallet, challenge);
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.write + 2; i++) {
      const r = await attacker.call("POST", "/api/v1/withdraw", {
        body: { asset: "USDC", amount_usdc: 1 },
        headers: { "idempotency-key": newIdempotencyKey(), "sign-in-with-x": "bm90IGEgc2lnbi1pbg==", "x-payment": copied },
      });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([...Array(LIMITS.write).fill(401), 429, 429]);
    // the victim's writes are its own: not one of them was spent by the attacker
    const own = await victim.call("POST", "/api/v1/withdraw", {
      body: { asset: "USDC", amount_usdc: 1 },
      headers: {
        "idempotency-key": newIdempotencyKey(),
        "x-payment": await paymentHeader(wallet, await challengeFor(stack.gateway.url, "POST", "/api/v1/withdraw")),
      },
    });
    expect(own.status).not.toBe(429);
    expect(Number(own.headers.get("x-ratelimit-remaining"))).toBe(LIMITS.write - 1);
  });

  it("a flood of paid MCP tool calls with throwaway proofs costs at most the write limit in verifications", async () => {
    // MCP's protocol traffic is counted in the read window: a gateway whose reads are not the bound
    const gw = await startTestGateway({
      X402_FACILITATOR: "local",
      X402_FACILITATOR_URL: stack.facilitator.url,
      X402_FACILITATOR_API_KEY: FACILITATOR_API_KEY,
      X402_PAY_TO: stack.payTo,
      RATE_LIMIT_READ_PER_MIN: "1000",
      RATE_LIMIT_WRITE_PER_MIN: String(LIMITS.write),
    });
    const verify = vi.spyOn(stack.facilitator.facilitator, "verify");
    const mcp = new Client({ name: "flooder", version: "1.0.0" });
    try {
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/api/mcp`)));
      const required = (await mcp.callTool({ name: "get_health", arguments: {} })).structuredContent as never;
      const answers: string[] = [];
      const N = 30;
      for (let i = 0; i < N; i++) {
        const payer = new x402Client();
        registerExactEvmScheme(payer, { signer: throwaway().account });
        const r = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": await payer.createPaymentPayload(required) } });
        answers.push(String((r.structuredContent as { error?: string } | undefined)?.error ?? "ok"));
      }
      const verifications = verify.mock.calls.length;
      console.log(
        `[x402-identity] ${N} paid MCP calls from throwaway wallets: ${verifications} facilitator verifications; answers: ${JSON.stringify(Object.fromEntries([...new Set(answers)].map((a) => [a, answers.filter((x) => x === a).length])))}`,
      );
      // before: 30 verifications (the tool's REST twin was not counted for a payer that did not verify)
      expect(verifications).toBe(LIMITS.write);
      expect(answers.slice(LIMITS.write).every((a) => a === "rate_limited")).toBe(true);
    } finally {
      verify.mockRestore();
      await mcp.close();
      await gw.close();
    }
  });
});

describe("a spent proof replays nobody's answer", () => {
  it("v2: a copier re-sending the payer's spent proof with its payment-identifier gets no body; the payer with a fresh proof gets its answer, free", async () => {
    const client = newClient();
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const spent = await paymentSignature(account, required, withId(id));
    const first = await client.call("GET", "/api/v1/treasury", { headers: { "payment-signature": spent } });
    expect(first.status).toBe(200);
    const charged = await stack.chain.balanceOf(account.address);

    // the copier has the proof (public on chain once settled) and the identifier it carries
    const copied = await client.call("GET", "/api/v1/treasury", { headers: { "payment-signature": spent } });
    // before: 200, Idempotent-Replayed: true, and the payer's treasury in the body
    expect(copied.status).toBe(402);
    expect(copied.body.error).toBe("payment_already_used");
    expect(copied.text).not.toContain(first.body.treasury_id);
    v.check("GET", "/api/v1/treasury", 402, copied.body);

    // the real payer proves itself now with a fresh authorization: the stored answer, and the fresh one is not settled
    const fresh = await paymentSignature(account, required, withId(id));
    const again = await client.call("GET", "/api/v1/treasury", { headers: { "payment-signature": fresh } });
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(again.body.treasury_id).toBe(first.body.treasury_id);
    expect(await stack.chain.balanceOf(account.address)).toBe(charged);
    const nonce = (JSON.parse(Buffer.from(fresh, "base64").toString()) as { payload: { authorization: { nonce: `0x${string}` } } }).payload.authorization.nonce;
    expect(await authorizationUsed(account.address, nonce)).toBe(false);
  });

  it("v1: the spent proof with the payer's Idempotency-Key and body replays nothing; the payer's fresh proof replays, free", async () => {
    const client = newClient();
    const { account, wallet } = await newPayer(stack.chain);
    const body = { amount_usdc: 150 };
    const requirements = await challengeFor(stack.gateway.url, "POST", "/api/v1/deposits", body);
    const key = newIdempotencyKey();
    const spent = await paymentHeader(wallet, requirements);
    const first = await client.call("POST", "/api/v1/deposits", { body, headers: { "x-payment": spent, "idempotency-key": key } });
    expect(first.status).toBe(202);
    const charged = await stack.chain.balanceOf(account.address);
    const copied = await client.call("POST", "/api/v1/deposits", { body, headers: { "x-payment": spent, "idempotency-key": key } });
    expect(copied.status).toBe(402);
    expect(copied.body.error).toBe("payment_already_used");
    expect(copied.text).not.toContain(first.body.tx_id);
    const again = await client.call("POST", "/api/v1/deposits", {
      body,
      headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key },
    });
    expect([again.status, again.headers.get("idempotent-replayed"), again.body.tx_id]).toEqual([202, "true", first.body.tx_id]);
    expect(await stack.chain.balanceOf(account.address)).toBe(charged);
  });
});

describe("a malformed proof is the client's fault", () => {
  it("a v2 proof with accepted.extra null is a 402 invalid_payment, not a 503; no parser text is echoed", async () => {
    const client = newClient();
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(stack.gateway.url, "GET", "/api/v1/treasury");
    const broken = await paymentSignature(account, required, (p) => void (p.accepted = { ...p.accepted, extra: null as never }));
    const r = await client.call("GET", "/api/v1/treasury", { headers: { "payment-signature": broken } });
    expect([r.status, r.body.error]).toEqual([402, "invalid_payment"]);
    v.check("GET", "/api/v1/treasury", 402, r.body);
    // a negative value in the authorization: refused without the parser's own words
    const negative = await paymentSignature(
      account,
      required,
      (p) => void ((p.payload as { authorization: { validAfter: string } }).authorization.validAfter = "-5"),
    );
    const n = await client.call("GET", "/api/v1/treasury", { headers: { "payment-signature": negative } });
    expect(n.status).toBe(402);
    expect(n.text).not.toMatch(/safe 256-bit|Number "|BigInt|SyntaxError|viem/i);
  });
});

describe("a proof that is being served answers 409 on both versions", () => {
  it("x402-fetch resending the first request's proof while it runs is told 409 and never pays twice", async () => {
    const client = newClient();
    const { account, wallet } = await newPayer(stack.chain);
    const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
    const before = await stack.chain.balanceOf(account.address);
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    try {
      const requirements = await challengeFor(stack.gateway.url, "GET", "/api/v1/treasury");
      const proof = await paymentHeader(wallet, requirements);
      const first = client.call("GET", "/api/v1/treasury", { headers: { "x-payment": proof } });
      await new Promise((r) => setTimeout(r, 300)); // the first is waiting for its settlement's block
      // the client resends the request with the proof it already made (its answer seemed lost); x402-fetch pays on any 402
      const payingFetch = wrapFetchWithPayment(client.fetch as typeof fetch, wallet as never, 100_000n);
      const retry = await payingFetch(`${stack.gateway.url}/api/v1/treasury`, { headers: { "X-PAYMENT": proof } });
      expect(retry.status).toBe(409);
      expect(((await retry.json()) as { error: string }).error).toBe("payment_in_progress");
      expect((await first).status).toBe(200);
    } finally {
      await test.setAutomine(true);
    }
    // before: the retry got a 402, x402-fetch paid again, and the read was charged twice
    expect(await stack.chain.balanceOf(account.address)).toBe(before - 1_100n);
  });
});
