/**
 * Malformed payment proofs, no key or funds needed: each is refused with a typed 4xx (a 402 naming what is
 * wrong, or a 400), never a 500 from a stage that read it, and never a 503 with Retry-After (an outage the
 * client would wait out and retry): the proof's shape is checked at the edge, before the facilitator is
 * called. A real facilitator outage still answers 503.
 */
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { channelOf, depositHeader, sessionOffer, voucherHeader, type SessionOffer } from "../helpers/sessions";
import { approvedUptoPayer, uptoProof } from "../helpers/upto";
import { newPayer, SCHEME_ENV, startX402Suite, type X402Stack } from "../helpers/x402-stack";

const HEALTH = "/api/v1/health";
const AUDIT = "/api/v1/audit"; // metered (upto)

let stack: X402Stack;
let base: string;
let offer: SessionOffer;
let uptoOffer: Record<string, unknown>;

beforeAll(async () => {
  ({ stack, base } = await startX402Suite(SCHEME_ENV));
  offer = await sessionOffer(base, HEALTH);
  const required = decodePaymentRequiredHeader((await fetch(`${base}${AUDIT}`)).headers.get("payment-required")!);
  uptoOffer = required.accepts.find((a) => a.scheme === "upto") as unknown as Record<string, unknown>;
}, 120_000);
afterAll(async () => stack?.close());

const decoded = (value: string) => JSON.parse(Buffer.from(value, "base64").toString()) as { accepted: Record<string, unknown>; payload: Record<string, any> };
const header = (payment: unknown) => encodePaymentSignatureHeader(payment as never);
const pay = (path: string, value: string) => fetch(`${base}${path}`, { headers: { "PAYMENT-SIGNATURE": value } });
async function refusal(r: Response): Promise<{ status: number; error: string; retryAfter: string | null }> {
  const required = r.headers.get("payment-required");
  const error = required ? decodePaymentRequiredHeader(required).error! : ((await r.json()) as { error: string }).error;
  return { status: r.status, error, retryAfter: r.headers.get("retry-after") };
}
/** a typed refusal the client can act on: 400 or 402, never 5xx, never a wait */
function expectTypedRefusal(got: { status: number; error: string; retryAfter: string | null }, what: string) {
  expect([400, 402], `${what}: ${got.status} ${got.error}`).toContain(got.status);
  expect(got.error, what).toMatch(/^[a-z_]+$/);
  expect(got.error, what).not.toBe("internal_error");
  expect(got.retryAfter, what).toBeNull();
}

describe("malformed proofs are typed refusals", () => {
  it("a session proof without its parts, or with a null payload", async () => {
    const cases: [string, unknown][] = [
      ["accepted only", { x402Version: 2, accepted: { scheme: "batch-settlement" } }],
      ["null payload", { x402Version: 2, accepted: offer, payload: null }],
      ["string payload", { x402Version: 2, accepted: offer, payload: "x" }],
      ["null accepted", { x402Version: 2, accepted: null, payload: {} }],
    ];

    for (const [what, payment] of cases) expectTypedRefusal(await refusal(await pay(HEALTH, header(payment))), what);
  });

  it("a session channel with a withdraw delay out of range", async () => {
    const payer = await newPayer(stack.chain);
    const sent = decoded(await voucherHeader(payer, offer, channelOf(payer, offer), 1_000n));
    for (const withdrawDelay of [-1, 2 ** 40, 1.5]) {
      const payment = { ...sent, payload: { ...sent.payload, channelConfig: { ...sent.payload.channelConfig, withdrawDelay } } };
      expectTypedRefusal(await refusal(await pay(HEALTH, header(payment))), `withdrawDelay ${withdrawDelay}`);
    }
  });

  it("an upto payment with no payload, or a null one", async () => {
    for (const payload of [undefined, null, {}, { permit2Authorization: null, signature: 1 }])
      expectTypedRefusal(await refusal(await pay(AUDIT, header({ x402Version: 2, accepted: uptoOffer, payload }))), `upto payload ${JSON.stringify(payload)}`);
  });

  it("a session or upto proof whose accepted is malformed is refused before the facilitator (not a 503)", async () => {
    const payer = await newPayer(stack.chain);
    // a deposit otherwise valid: it reaches the facilitator unless its accepted is refused first
    const deposit = decoded(await depositHeader(stack.chain, payer, offer, channelOf(payer, offer), 10_000n, 1_000n));
    for (const edit of [{ maxTimeoutSeconds: "60" }, { extra: null }, { amount: 1000 }, { payTo: null }]) {
      const got = await refusal(await pay(HEALTH, header({ ...deposit, accepted: { ...deposit.accepted, ...edit } })));
      expectTypedRefusal(got, `session accepted ${JSON.stringify(edit)}`);
    }
    for (const edit of [{ maxTimeoutSeconds: "60" }, { extra: null }]) {
      const got = await refusal(await pay(AUDIT, header({ x402Version: 2, accepted: { ...uptoOffer, ...edit }, payload: {} })));
      expectTypedRefusal(got, `upto accepted ${JSON.stringify(edit)}`);
    }
  });
});

describe("a facilitator out of service", () => {
  // last in the file's order of the x402 tests: the facilitator is stopped for good
  it("a well-formed session deposit or upto proof is still a 503 with Retry-After (nothing charged)", async () => {
    const payer = await newPayer(stack.chain);
    const deposit = await depositHeader(stack.chain, payer, offer, channelOf(payer, offer), 10_000n, 1_000n);
    const upto = await uptoProof(stack.chain, await approvedUptoPayer(stack.chain), base, AUDIT);
    const close = stack.facilitator.close.bind(stack.facilitator);
    await close();
    stack.facilitator.close = async () => undefined;
    for (const [path, proof] of [
      [HEALTH, deposit],
      [AUDIT, upto],
    ] as const) {
      const r = await pay(path, proof);
      expect(r.status, path).toBe(503);
      expect(((await r.json()) as { error: string }).error, path).toBe("payment_facilitator_unavailable");
      expect(r.headers.get("retry-after"), path).not.toBeNull();
    }
  });
});

describe("an MCP call's malformed payment or sign-in", () => {
  it("a malformed session or upto proof in _meta: a typed tool error, not an internal error", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const mcp = new Client({ name: "bad-payment", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`)));
    try {
      for (const payment of [
        { x402Version: 2, accepted: { scheme: "batch-settlement" } },
        { x402Version: 2, accepted: offer, payload: null },
        { x402Version: 2, accepted: uptoOffer },
      ]) {
        const r = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": payment } });
        expect(JSON.stringify(r.structuredContent ?? r.content), JSON.stringify(payment)).not.toContain("internal_error");
      }
    } finally {
      await mcp.close();
    }
  });

  it("CR/LF, NUL or U+2028 in _meta's sign-in-with-x: a typed refusal, not an internal error", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const mcp = new Client({ name: "bad-sign-in", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`)));
    try {
      for (const bad of ["abc\r\nx-injected: 1", "abc\u0000", "abc\u2028def", "é"]) {
        const r = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "sign-in-with-x": bad } });
        const body = r.structuredContent as { error: string; http_status?: number };
        expect(r.isError, JSON.stringify(bad)).toBe(true);
        expect(body.error, JSON.stringify(bad)).not.toBe("internal_error");
        expect(body.error, JSON.stringify(bad)).toBe("unauthorized");
      }
    } finally {
      await mcp.close();
    }
  });
});
