/**
 * No one spends another payer's name. Run over real HTTP with the real x402 clients (exact, sessions, upto)
 * against a local Base Sepolia (Anvil 84532, TestUSDC) and the project's facilitator; each client is an
 * address of its own behind a proxy on loopback (X-Forwarded-For).
 *
 *   - a spent proof is public (on chain, or in a session's channel) and its signature still recovers to its
 *     payer: replayed from many addresses, it never fills the payer's rate-limit bucket, so the payer's fresh
 *     payment, its sign-in read and its free sign-in exit are served;
 *   - a payer's payment-identifier wrapped inside another payer's session voucher replays nothing: the
 *     identifier's scope is the payer of the scheme that pays.
 */
import { createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type JsonResponse } from "../helpers/gateway";
import type { ResponseValidator } from "../helpers/openapi";
import { rowsOf } from "../helpers/rows";
import { channelIdOf, channelOf, depositHeader, sessionOffer, voucherHeader, type ChannelConfig, type SessionOffer } from "../helpers/sessions";
import { newIdempotencyKey } from "../helpers/treasury";
import { approvedUptoPayer, uptoProof } from "../helpers/upto";
import { challengeFor, newPayer, paymentHeader, paymentRequiredFor, paymentSignature, SCHEME_ENV, startX402Suite, type X402Stack } from "../helpers/x402-stack";

const LIMITS = { read: 8, write: 4 };
const TREASURY = "/api/v1/treasury";
const HEALTH = "/api/v1/health";
const HEALTH_PRICE = 1_000n;
const AUDIT = "/api/v1/audit";
let stack: X402Stack;
let base: string;
let v: ResponseValidator;
let offer: SessionOffer;

beforeAll(async () => {
  ({ stack, base, v } = await startX402Suite({
    ...SCHEME_ENV,
    TRUST_PROXY: "loopback",
    RATE_LIMIT_READ_PER_MIN: String(LIMITS.read),
    RATE_LIMIT_WRITE_PER_MIN: String(LIMITS.write),
    // vouchers are redeemed only when a test asks (the policy's count, amount and age are out of reach)
    X402_SESSION_REDEEM_VOUCHERS: "100000",
    X402_SESSION_REDEEM_SECONDS: "300",
    X402_SESSION_REDEEM_AMOUNT: "1000000000",
  }));
  offer = await sessionOffer(base, HEALTH);
}, 120_000);
afterAll(() => stack?.close());

let lastClient = 0;
/** a client of its own address: its requests come through the proxy from 198.51.100.N */
function newClient() {
  const from = { "x-forwarded-for": `198.51.100.${++lastClient}` };
  return (method: string, path: string, opts: Parameters<typeof call>[3] = {}) => call(base, method, path, { ...opts, headers: { ...opts.headers, ...from } });
}
type Caller = ReturnType<typeof newClient>;

/** the same request from `n` fresh addresses: what a proof replayed from a botnet gets */
async function fromManyAddresses(n: number, method: string, path: string, opts: Parameters<typeof call>[3]): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await newClient()(method, path, opts)).status);
  return statuses;
}

const remaining = (r: JsonResponse) => [r.status, Number(r.headers.get("x-ratelimit-remaining"))];

/** the official client's SIGN-IN-WITH-X for this request, signed by `account` on the challenge the request's own 402 carries */
async function signedIn(client: Caller, account: PrivateKeyAccount, method: "GET" | "POST", path: string, body?: unknown) {
  const headers: Record<string, string> = method === "POST" ? { "idempotency-key": newIdempotencyKey() } : {};
  const asked = await client(method, path, { ...(body === undefined ? {} : { body }), headers });
  expect(asked.status, asked.text).toBe(402);
  const ext = asked.body.extensions["sign-in-with-x"];
  const signature = encodeSIWxHeader(await createSIWxPayload({ ...ext.info, chainId: "eip155:8453", type: "eip191" }, account, `${base}${path}`));
  const r = await client(method, path, { ...(body === undefined ? {} : { body }), headers: { ...headers, "sign-in-with-x": signature } });
  v.check(method, path, r.status, r.body);
  return r;
}

describe("a spent proof never fills its payer's bucket", () => {
  it("exact: a settled proof replayed from many addresses on a read and on a write; the payer's fresh payment, sign-in read and sign-in exit keep their own bucket", async () => {
    const own = newClient();
    const payer = await newPayer(stack.chain);
    const challenge = await challengeFor(base, "GET", TREASURY);
    const spent = await paymentHeader(payer.wallet, challenge);
    // its first payment is counted by its address (it proved nothing yet); settled, the payer is known
    expect((await own("GET", TREASURY, { headers: { "x-payment": spent } })).status).toBe(200);

    // the proof is public on chain: replayed from more addresses than the payer's read and write windows hold
    const reads = await fromManyAddresses(LIMITS.read + 2, "GET", TREASURY, { headers: { "x-payment": spent } });
    const writes = await fromManyAddresses(LIMITS.write + 2, "POST", "/api/v1/withdraw", {
      body: { asset: "USDC", amount_usdc: 1 },
      headers: { "x-payment": spent, "idempotency-key": newIdempotencyKey() },
    });
    // before: the first replays counted in the payer's bucket (402 each), the last ones 429 (the payer's bucket full)
    expect([...reads, ...writes]).toEqual(Array(LIMITS.read + LIMITS.write + 4).fill(402));

    // before: 429, 429, 429
    const fresh = await own("GET", TREASURY, { headers: { "x-payment": await paymentHeader(payer.wallet, challenge) } });
    expect(remaining(fresh)).toEqual([200, LIMITS.read - 1]);
    expect(remaining(await signedIn(own, payer.account, "GET", TREASURY))).toEqual([200, LIMITS.read - 2]);
    const exit = await signedIn(own, payer.account, "POST", "/api/v1/exit", {});
    expect(exit.status, exit.text).not.toBe(429);
    expect(Number(exit.headers.get("x-ratelimit-remaining"))).toBe(LIMITS.write - 1);
  });

  it("exact v2: the spent PAYMENT-SIGNATURE replayed from many addresses; the payer's fresh one keeps its bucket", async () => {
    const own = newClient();
    const { account } = await newPayer(stack.chain);
    const required = await paymentRequiredFor(base, "GET", TREASURY);
    const spent = await paymentSignature(account, required);
    expect((await own("GET", TREASURY, { headers: { "payment-signature": spent } })).status).toBe(200);
    const replays = await fromManyAddresses(LIMITS.read + 2, "GET", TREASURY, { headers: { "payment-signature": spent } });
    expect(replays).toEqual(Array(LIMITS.read + 2).fill(402));
    const fresh = await own("GET", TREASURY, { headers: { "payment-signature": await paymentSignature(account, required) } });
    expect(remaining(fresh)).toEqual([200, LIMITS.read - 1]);
  });

  it("session: a charged voucher replayed from many addresses; the payer's next voucher keeps its bucket", async () => {
    const own = newClient();
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const pay = (header: string, client: Caller = own) => client("GET", HEALTH, { headers: { "payment-signature": header } });
    expect((await pay(await depositHeader(stack.chain, payer, offer, config, 100_000n, HEALTH_PRICE))).status).toBe(200);
    const charged = await voucherHeader(payer, offer, config, 2n * HEALTH_PRICE);
    expect(remaining(await pay(charged))).toEqual([200, LIMITS.read - 1]);
    // the voucher was sent in the clear and is charged: its signature still recovers to the payer authorizer
    const replays = await fromManyAddresses(LIMITS.read + 2, "GET", HEALTH, { headers: { "payment-signature": charged } });
    expect(replays).toEqual(Array(LIMITS.read + 2).fill(402));
    // before: 429
    expect(remaining(await pay(await voucherHeader(payer, offer, config, 3n * HEALTH_PRICE)))).toEqual([200, LIMITS.read - 2]);
  });

  it("upto: a settled authorization replayed from many addresses; the payer's fresh one keeps its bucket", async () => {
    const own = newClient();
    const payer = await approvedUptoPayer(stack.chain);
    const spent = await uptoProof(stack.chain, payer, base, AUDIT);
    expect((await own("GET", AUDIT, { headers: { "payment-signature": spent } })).status).toBe(200);
    const replays = await fromManyAddresses(LIMITS.read + 2, "GET", AUDIT, { headers: { "payment-signature": spent } });
    expect(replays).toEqual(Array(LIMITS.read + 2).fill(402));
    // before: 429
    const fresh = await own("GET", AUDIT, { headers: { "payment-signature": await uptoProof(stack.chain, payer, base, AUDIT) } });
    expect(remaining(fresh)).toEqual([200, LIMITS.read - 1]);
  });
});

/** a PAYMENT-SIGNATURE's object, and one made of it */
const decoded = (header: string) => JSON.parse(Buffer.from(header, "base64").toString("utf8")) as Record<string, any>;
const encoded = (payment: unknown) => Buffer.from(JSON.stringify(payment), "utf8").toString("base64");

describe("a payment-identifier is the paying payer's only", () => {
  it("the payer's spent authorization and identifier wrapped in another payer's voucher: the voucher pays for its own payer's call, nothing is replayed", async () => {
    const victimClient = newClient();
    const victim = await newPayer(stack.chain);
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const required = await paymentRequiredFor(base, "GET", HEALTH);
    const spent = await paymentSignature(victim.account, required, (p) => void (p.extensions = { "payment-identifier": { info: { required: false, id } } }));
    const first = await victimClient("GET", HEALTH, { headers: { "payment-signature": spent } });
    expect(first.status, first.text).toBe(200);
    const victimTreasury = first.headers.get("x-treasury-id");

    // the attacker's own session: a deposit pays its first call (its treasury is made by it)
    const attackerClient = newClient();
    const attacker = await newPayer(stack.chain);
    const config = channelOf(attacker, offer);
    const opened = await attackerClient("GET", HEALTH, {
      headers: { "payment-signature": await depositHeader(stack.chain, attacker, offer, config, 100_000n, HEALTH_PRICE) },
    });
    expect(opened.status, opened.text).toBe(200);
    const attackerTreasury = opened.headers.get("x-treasury-id");
    const voucher = decoded(await voucherHeader(attacker, offer, config, 2n * HEALTH_PRICE));
    const smuggled = {
      ...voucher,
      payload: { ...voucher.payload, authorization: decoded(spent).payload.authorization, signature: decoded(spent).payload.signature },
      extensions: decoded(spent).extensions,
    };
    const r = await attackerClient("GET", HEALTH, { headers: { "payment-signature": encoded(smuggled) } });
    // before: 200, Idempotent-Replayed: true, the victim's treasury's answer, and the attacker's voucher released unsettled
    expect(r.headers.get("idempotent-replayed")).not.toBe("true");
    expect(r.headers.get("x-treasury-id")).not.toBe(victimTreasury);
    expect(r.text).not.toBe(first.text);
    // the voucher paid for the attacker's own call, on its own treasury: charged
    expect([r.status, r.headers.get("x-treasury-id")]).toEqual([200, attackerTreasury]);
    expect(await charged(config)).toBe(2n * HEALTH_PRICE);
  });

  it("a session's own identifier: its retry with the channel's next voucher gets the first answer, and that voucher is released uncharged", async () => {
    const client = newClient();
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const id = `pay_${crypto.randomUUID().replaceAll("-", "")}`;
    const withId = (header: string) => encoded({ ...decoded(header), extensions: { "payment-identifier": { info: { required: false, id } } } });
    const deposit = withId(await depositHeader(stack.chain, payer, offer, config, 100_000n, HEALTH_PRICE));
    const first = await client("GET", HEALTH, { headers: { "payment-signature": deposit } });
    expect(first.status, first.text).toBe(200);
    const retry = await client("GET", HEALTH, { headers: { "payment-signature": withId(await voucherHeader(payer, offer, config, 2n * HEALTH_PRICE)) } });
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.text]).toEqual([200, "true", first.text]);
    expect(await charged(config)).toBe(HEALTH_PRICE);
  });
});

const charged = async (config: ChannelConfig) =>
  BigInt((await rowsOf<{ charged: string }>(stack.gateway.ctx.db, "x402_channels", { channel_id: channelIdOf(config) }))[0]!.charged);
