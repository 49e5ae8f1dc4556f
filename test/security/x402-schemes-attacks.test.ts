/**
 * Attacks on x402's `upto` and sessions (`batch-settlement`) against the gateway, its facilitator and the
 * contracts, on one local Base Sepolia: served without paying, the service made to pay (gas) for others, a payer
 * charged twice. Each attack is run and its harm checked absent: the facilitator answers its gateway only, a
 * settlement below the use is not served, only low-s 65-byte voucher signatures with v 27/28 are taken, the chain's refusal
 * at a re-sync stands, a payer leaving pays no more calls, a channel whose claim reverts is set aside. `upto` runs first: the session tests at the end move the chain's clock past the
 * withdrawal delay, after which authorizations signed by the wall clock are expired on chain.
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { createTestClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowCount, rowsOf, setRow } from "../helpers/rows";
import {
  channelIdOf,
  channelOf,
  channelOnChain,
  depositHeader,
  payerExit,
  sessionOffer,
  voucherHeader,
  type ChannelConfig,
  type SessionOffer,
} from "../helpers/sessions";
import { approvedUptoPayer, uptoClient, uptoProof } from "../helpers/upto";
import { FACILITATOR_AUTH, newPayer, SCHEME_ENV, startX402Suite, type Payer, type X402Stack } from "../helpers/x402-stack";

const HEALTH = "/api/v1/health";
const PRICE = 1_000n; // GET /api/v1/health
const TREASURY = "/api/v1/treasury";
const TREASURY_PRICE = 1_100n;
const AUDIT = "/api/v1/audit"; // metered: at most 1,300, a page of no entries 300
const AUDIT_MAX = 1_300n;
const AUDIT_BASE = 300n;
const FUNDS = 10_000_000n;

let stack: X402Stack;
let base: string;
let offer: SessionOffer;

beforeAll(async () => {
  // vouchers are redeemed only when a test asks (the policy's count, amount and age are out of reach)
  ({ stack, base } = await startX402Suite({
    ...SCHEME_ENV,
    X402_SESSION_REDEEM_VOUCHERS: "100000",
    X402_SESSION_REDEEM_SECONDS: "300",
    X402_SESSION_REDEEM_AMOUNT: "1000000000",
  }));
  offer = await sessionOffer(base, HEALTH);
}, 120_000);
afterAll(async () => stack?.close());

const pay = (path: string, header: string) => fetch(`${base}${path}`, { headers: { "PAYMENT-SIGNATURE": header } });
/** the typed error of a refusal (v2's PAYMENT-REQUIRED, else the body's) */
async function errorOf(r: Response): Promise<string> {
  const required = r.headers.get("payment-required");
  return required ? decodePaymentRequiredHeader(required).error! : ((await r.json()) as { error: string }).error;
}
const db = () => stack.gateway.ctx.db;
const redeemer = () => stack.gateway.gateway.services.payments.redeemer!;
const channelRow = async (config: ChannelConfig) =>
  (await rowsOf<{ charged: string; balance: string; withdraw_requested_at: number }>(db(), "x402_channels", { channel_id: channelIdOf(config) }))[0];
/** earlier tests' channels leave the next batch: each redemption test sees only its own */
const quiesce = () => setRow(db(), "x402_channels", {}, { vouchers_unredeemed: 0 });
/** the gateway's record of a channel is older than its sync interval (the time a silent payer waits) */
const ageSync = (config: ChannelConfig) => setRow(db(), "x402_channels", { channel_id: channelIdOf(config) }, { synced_at: "2000-01-01T00:00:00.000Z" });
/** the facilitator's HTTP face called by a payer (no credential), or by its gateway (`asGateway`); a refusal of any shape reads as not done */
const facilitatorCall = (op: "verify" | "settle", paymentPayload: unknown, paymentRequirements: unknown, asGateway = false) =>
  fetch(`${stack.facilitator.url}/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(asGateway ? FACILITATOR_AUTH : {}) },
    body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements }),
  })
    .then((r) => r.json() as Promise<{ success?: boolean; isValid?: boolean; amount?: string; errorReason?: string }>)
    .catch(() => ({ success: false }));

/** a session on the health route: a deposit of `deposit` paying the first call, then `calls - 1` vouchers; every call answered */
async function openSession(payer: Payer, deposit: bigint, calls: number, edit: Partial<ChannelConfig> = {}): Promise<ChannelConfig> {
  const config = channelOf(payer, offer, edit);
  const first = await pay(HEALTH, await depositHeader(stack.chain, payer, offer, config, deposit, PRICE));
  expect(first.status, await first.clone().text()).toBe(200);
  for (let i = 2n; i <= BigInt(calls); i++) expect((await pay(HEALTH, await voucherHeader(payer, offer, config, i * PRICE))).status).toBe(200);
  return config;
}

describe("x402 upto: attacks", () => {
  it("a payer cannot have the facilitator settle its own authorization for 1 unit (it answers its gateway only), and a settlement below the use is never served", async () => {
    const payer = await approvedUptoPayer(stack.chain);
    const header = await uptoProof(stack.chain, payer, base, AUDIT);
    const payment = decodePaymentSignatureHeader(header);
    const before = await stack.chain.balanceOf(payer.account.address);
    const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
    // blocks every 2 s, as on Base: a settlement waits in the mempool for its block
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    let served: Response;
    try {
      // the payer's own settle of 1 unit, sent to the facilitator (127.0.0.1, no authentication), is in the mempool...
      const own = facilitatorCall("settle", payment, { ...payment.accepted, amount: "1" });
      await new Promise((r) => setTimeout(r, 500));
      // ...when the paid request is verified (the nonce is still free at the latest block), answered, and settled
      served = await pay(AUDIT, header);
      // as run today it answers { success: true, amount: "1" }
      await own;
    } finally {
      await test.setIntervalMining({ interval: 0 });
      await test.setAutomine(true);
    }
    const spent = before - (await stack.chain.balanceOf(payer.account.address));
    const settle = served.headers.get("payment-response") ? decodePaymentResponseHeader(served.headers.get("payment-response")!) : undefined;
    // an answer costs at least its base (300): an answer served for less is served without paying
    expect({ status: served.status, spent, charged: settle?.amount }).toEqual(
      served.status === 200 ? { status: 200, spent: AUDIT_BASE, charged: AUDIT_BASE.toString() } : { status: served.status, spent, charged: undefined },
    );
  });

  it("a maximum signed for another price, or upto on a route that is not metered, is refused and moves nothing", async () => {
    const payer = await approvedUptoPayer(stack.chain);
    const before = await stack.chain.balanceOf(payer.account.address);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${AUDIT}`)).headers.get("payment-required")!);
    const audit = required.accepts.find((a) => a.scheme === "upto")!;
    // the health route's price as the maximum (its own route offers no upto: it is not metered)
    const asHealth = await uptoClient(stack.chain, payer).createPaymentPayload({ ...required, accepts: [{ ...audit, amount: PRICE.toString() }] });
    const encoded = encodePaymentSignatureHeader(asHealth);
    const onHealth = await pay(HEALTH, encoded);
    expect([onHealth.status, await errorOf(onHealth)]).toEqual([402, "unsupported_scheme_or_network"]);
    const onAudit = await pay(AUDIT, encoded);
    expect([onAudit.status, await errorOf(onAudit)]).toEqual([402, "payment_does_not_match_route"]);
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(before);
  });

  it("the facilitator refuses to settle above the signed maximum; a call refused before its answer charges nothing; the authorization then pays once", async () => {
    const payer = await approvedUptoPayer(stack.chain);
    const header = await uptoProof(stack.chain, payer, base, AUDIT);
    const payment = decodePaymentSignatureHeader(header);
    const before = await stack.chain.balanceOf(payer.account.address);
    // even its own gateway cannot have it settle above the signed maximum
    expect(await facilitatorCall("settle", payment, { ...payment.accepted, amount: (AUDIT_MAX + 1n).toString() }, true)).toMatchObject({ success: false });
    const invalid = await fetch(`${base}${AUDIT}?limit=0`, { headers: { "PAYMENT-SIGNATURE": header } });
    expect(invalid.status).toBe(400);
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(before);
    const ok = await pay(AUDIT, header);
    expect(ok.status).toBe(200);
    expect(before - (await stack.chain.balanceOf(payer.account.address))).toBe(AUDIT_BASE);
    expect((await pay(AUDIT, header)).status).toBe(402);
    expect(before - (await stack.chain.balanceOf(payer.account.address))).toBe(AUDIT_BASE);
  });
});

describe("x402 sessions: attacks refused", () => {
  it("a deposit below one call, a voucher of another channel, a contract or no payer authorizer, an unknown channel: refused, nothing deposited", async () => {
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const cases: [string, string][] = [
      // the facilitator's verification refuses it first (the gateway's own check, session_deposit_exceeded, is behind it)
      [await depositHeader(stack.chain, payer, offer, config, PRICE - 1n, PRICE), "invalid_batch_settlement_evm_cumulative_exceeds_balance"],
      [await depositHeader(stack.chain, payer, offer, config, 20n * PRICE, PRICE, { voucherChannel: channelOf(payer, offer) }), "invalid_payment"],
      [await depositHeader(stack.chain, payer, offer, channelOf(payer, offer, { payerAuthorizer: stack.chain.usdc }), 20n * PRICE, PRICE), "invalid_payment"],
      [
        await depositHeader(
          stack.chain,
          payer,
          offer,
          channelOf(payer, offer, { payerAuthorizer: "0x0000000000000000000000000000000000000000" }),
          20n * PRICE,
          PRICE,
        ),
        "session_terms_mismatch",
      ],
      [await voucherHeader(payer, offer, config, PRICE), "session_channel_unknown"],
    ];
    for (const [header, error] of cases) {
      const r = await pay(HEALTH, header);
      expect([r.status, await errorOf(r)]).toEqual([402, error]);
    }
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(FUNDS);
    expect(await rowCount(db(), "x402_channels", { payer: payer.account.address.toLowerCase() })).toBe(0);
  });

  it("two deposits into one channel at once: one call served, one deposit taken", async () => {
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const headers = await Promise.all([1, 2].map(() => depositHeader(stack.chain, payer, offer, config, 20n * PRICE, PRICE)));
    const answers = await Promise.all(headers.map((h) => pay(HEALTH, h)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, answers.some((r) => r.status === 409) ? 409 : 402]);
    expect(await channelOnChain(stack.chain, config)).toEqual({ balance: 20n * PRICE, totalClaimed: 0n });
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(FUNDS - 20n * PRICE);
    expect((await channelRow(config))!.charged).toBe(PRICE.toString());
  });

  it("a voucher replayed on another route, one for another price, one on a route without a price: none is charged", async () => {
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const deposit = await depositHeader(stack.chain, payer, offer, config, 20n * PRICE, PRICE);
    expect((await pay(HEALTH, deposit)).status).toBe(200);
    const treasury = await sessionOffer(base, TREASURY);
    // the deposit's voucher again, naming the treasury route's price: a replay (another route), not a retry
    const replay = await depositHeader(stack.chain, payer, treasury, config, 20n * PRICE, PRICE);
    const replayed = await pay(TREASURY, replay);
    expect([replayed.status, await errorOf(replayed)]).toEqual([402, "invalid_batch_settlement_evm_cumulative_amount_mismatch"]);
    // the health route's next voucher on the treasury route (another price)
    const next = await voucherHeader(payer, offer, config, 2n * PRICE, { amount: TREASURY_PRICE });
    const wrong = await pay(TREASURY, next);
    expect([wrong.status, await errorOf(wrong)]).toEqual([402, "invalid_batch_settlement_evm_cumulative_amount_mismatch"]);
    // a route without a price takes no payment
    expect((await pay("/x402/prices.json", await voucherHeader(payer, offer, config, 2n * PRICE))).status).toBe(200);
    expect((await channelRow(config))!.charged).toBe(PRICE.toString());
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(FUNDS - 20n * PRICE);
    // the next voucher still pays the next call, once
    expect((await pay(HEALTH, await voucherHeader(payer, offer, config, 2n * PRICE))).status).toBe(200);
    expect((await channelRow(config))!.charged).toBe((2n * PRICE).toString());
  });

  it("a deposit settled on chain and never recorded (a crash between the two): its retry is refused, a new deposit is charged once, a re-sync credits both", async () => {
    const payer = await newPayer(stack.chain);
    const config = channelOf(payer, offer);
    const lost = await depositHeader(stack.chain, payer, offer, config, 5n * PRICE, PRICE);
    const payment = decodePaymentSignatureHeader(lost);
    // the gateway's facilitator settled it, and the gateway died before recording the channel
    expect(await stack.facilitator.facilitator.settle(payment as never, payment.accepted as never)).toMatchObject({ success: true });
    const retry = await pay(HEALTH, lost);
    expect(retry.status).toBe(402);
    expect(await rowCount(db(), "x402_channels", { channel_id: channelIdOf(config) })).toBe(0);
    expect((await pay(HEALTH, await depositHeader(stack.chain, payer, offer, config, 5n * PRICE, PRICE))).status).toBe(200);
    expect((await channelRow(config))!.charged).toBe(PRICE.toString());
    await ageSync(config);
    expect((await pay(HEALTH, await voucherHeader(payer, offer, config, 2n * PRICE))).status).toBe(200);
    expect(await channelRow(config)).toMatchObject({ balance: (10n * PRICE).toString(), charged: (2n * PRICE).toString() });
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(FUNDS - 10n * PRICE);
  });

  it("a stranger's voucher on a payer's channel gets no channel state (the payer's last voucher stays private)", async () => {
    const payer = await newPayer(stack.chain);
    const config = await openSession(payer, 20n * PRICE, 2);
    const stranger = await newPayer(stack.chain);
    const r = await pay(HEALTH, await voucherHeader(payer, offer, config, 3n * PRICE, { signer: stranger }));
    expect([r.status, await errorOf(r)]).toEqual([402, "invalid_payment"]);
    const session = decodePaymentRequiredHeader(r.headers.get("payment-required")!).accepts.find((a) => a.scheme === "batch-settlement")!;
    expect(session.extra).not.toHaveProperty("channelState");
    expect(session.extra).not.toHaveProperty("voucherState");
  });
});

describe("x402 sessions: attacks that harm", () => {
  it("a voucher signed with the high-s twin of its signature (which the contract refuses) is not charged, and every batch still redeems", async () => {
    await quiesce();
    const honest = await newPayer(stack.chain);
    const honestChannel = await openSession(honest, 20n * PRICE, 2);
    const attacker = await newPayer(stack.chain);
    const config = await openSession(attacker, 20n * PRICE, 1);
    const twin = await pay(HEALTH, await voucherHeader(attacker, offer, config, 2n * PRICE, { malleate: true }));
    // a voucher the chain will not honour must not be charged (nor served)
    // refused as malformed: the gateway takes only the 65-byte, low-s signatures the contract verifies
    expect.soft([twin.status, twin.status === 402 ? await errorOf(twin) : "served"]).toEqual([402, "invalid_payment_header"]);
    const receiverBefore = await stack.chain.balanceOf(stack.payTo);
    const r = await redeemer().redeem();
    expect.soft(r?.failed).toBeUndefined();
    expect(await channelOnChain(stack.chain, honestChannel)).toMatchObject({ totalClaimed: 2n * PRICE });
    expect((await stack.chain.balanceOf(stack.payTo)) - receiverBefore).toBeGreaterThanOrEqual(2n * PRICE);
  });

  it("a voucher whose v is 0/1 (which the contract on Base refuses: never claimable) is refused with a typed 402 and not charged", async () => {
    const payer = await newPayer(stack.chain);
    const config = await openSession(payer, 20n * PRICE, 1);
    const r = await pay(HEALTH, await voucherHeader(payer, offer, config, 2n * PRICE, { vZeroOne: true }));
    expect.soft([r.status, r.status === 402 ? await errorOf(r) : "served"]).toEqual([402, "invalid_payment"]);
    expect((await channelRow(config))?.charged).toBe(PRICE.toString());
    // the same voucher with v 27/28 is served
    expect((await pay(HEALTH, await voucherHeader(payer, offer, config, 2n * PRICE))).status).toBe(200);
  });

  it("a payer cannot have the facilitator deposit into (and pay the gas of) a channel whose receiver is not this service", async () => {
    const payer = await newPayer(stack.chain);
    const outsider = privateKeyToAccount(generatePrivateKey()).address;
    const foreign: SessionOffer = { ...offer, payTo: outsider, extra: { ...offer.extra, receiverAuthorizer: outsider } };
    const config = channelOf(payer, foreign);
    const payment = decodePaymentSignatureHeader(await depositHeader(stack.chain, payer, foreign, config, 5n * PRICE, PRICE));
    const settled = await facilitatorCall("settle", payment, foreign);
    expect.soft(settled.success === true, "the facilitator settled a deposit for a receiver that is not this service").toBe(false);
    expect(await channelOnChain(stack.chain, config)).toEqual({ balance: 0n, totalClaimed: 0n });
  });
});

describe("x402 sessions: the payer's on-chain withdrawal", () => {
  it("one channel whose claim reverts (its payer withdrew what was charged) is set aside: every other channel is still redeemed", async () => {
    await quiesce();
    const honest = await newPayer(stack.chain);
    const honestChannel = await openSession(honest, 5n * PRICE, 2);
    const leaver = await newPayer(stack.chain);
    const config = await openSession(leaver, 5n * PRICE, 2);
    // the redeemer did not run before the delay passed (the facilitator was down, say): the payer takes its deposit back
    const exit = await payerExit(stack.chain, leaver, config);
    await exit.initiate(5n * PRICE);
    await exit.waitDelay();
    await exit.finalize();
    expect(await channelOnChain(stack.chain, config)).toEqual({ balance: 0n, totalClaimed: 0n });
    // the honest payer's vouchers are still claimable: the batch must claim them
    const r = await redeemer().redeem();
    expect.soft(r?.failed).toBeUndefined();
    expect(await channelOnChain(stack.chain, honestChannel)).toEqual({ balance: 5n * PRICE, totalClaimed: 2n * PRICE });
  });

  it("vouchers on a channel whose payer withdrew on chain are refused at the re-sync (the chain's refusal is not overridden by the remembered balance)", async () => {
    await quiesce();
    const payer = await newPayer(stack.chain);
    const config = await openSession(payer, 5n * PRICE, 1);
    const exit = await payerExit(stack.chain, payer, config);
    await exit.initiate(5n * PRICE);
    await exit.waitDelay();
    await exit.finalize();
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(FUNDS);
    // the payer was silent through the delay: the gateway's record is older than its sync interval
    await ageSync(config);
    const statuses: number[] = [];
    for (let i = 2n; i <= 5n; i++) statuses.push((await pay(HEALTH, await voucherHeader(payer, offer, config, i * PRICE))).status);
    // nothing is left in the channel: no call may be served on it
    expect(statuses).toEqual([402, 402, 402, 402]);
  });

  it("a deposit into a channel whose withdrawal is ready does not hide the withdrawal: refused, and what was charged is claimed first", async () => {
    await quiesce();
    const payer = await newPayer(stack.chain);
    const config = await openSession(payer, 5n * PRICE, 1);
    const exit = await payerExit(stack.chain, payer, config);
    await exit.initiate(5n * PRICE);
    await exit.waitDelay();
    await ageSync(config);
    // a second deposit: the channel is recorded as the chain has it (the withdrawal pending), and the call is refused
    const second = await pay(HEALTH, await depositHeader(stack.chain, payer, offer, config, 5n * PRICE, 2n * PRICE));
    expect([second.status, await errorOf(second)]).toEqual([402, "session_withdrawal_pending"]);
    expect.soft((await channelRow(config))!.withdraw_requested_at, "the gateway does not know the withdrawal is pending").toBeGreaterThan(0);
    // and so is every voucher after it: a payer leaving pays no more calls
    for (let i = 2n; i <= 4n; i++) expect((await pay(HEALTH, await voucherHeader(payer, offer, config, i * PRICE))).status).toBe(402);
    // the redeemer's timer: a pending withdrawal makes a batch due at once
    if (await redeemer().due()) await redeemer().redeem();
    await exit.finalize();
    // what the gateway charged is what the receiver could claim
    expect((await channelOnChain(stack.chain, config)).totalClaimed).toBe(BigInt((await channelRow(config))!.charged));
  });
});
