/**
 * x402 sessions and `upto` across processes. A gateway killed (kill -9) after answering vouchers and before
 * redeeming them loses none (another process on the same store redeems them, and the receiver gets exactly
 * what was charged); a gateway killed while an `upto` settlement waits for its block (2 s blocks) leaves a
 * payment the retry serves once and charges once. Three instances on one PostgreSQL charge a voucher once
 * however many of them receive it, redeem a channel once however many redeem at the same time, and settle
 * an `upto` authorization once however many receive it.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, signVoucher } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, createTestClient, http } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import { openDatabase } from "../../gateway/src/store/open-database";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { gatewayProcess } from "../helpers/gateway-process";
import { rowsOf } from "../helpers/rows";
import { freshDatabase, TEST_STORE } from "../helpers/store";
import { approvedUptoPayer, uptoProof } from "../helpers/upto";
import { FACILITATOR_KEYS, newPayer, SCHEME_ENV } from "../helpers/x402-stack";

const PRICE = 1_000n;
const PATH = "/api/v1/health";
/** the metered route (x402 upto): a page of no entries costs 300 */
const AUDIT = "/api/v1/audit";
const payTo = devAccount(2).address;
const children: ChildProcess[] = [];

let chain: BaseSepoliaNode;
let facilitator: Awaited<ReturnType<typeof startFacilitator>>;

const sessionEnv = (redeemSeconds: string) => ({
  X402_FACILITATOR: "local",
  X402_FACILITATOR_URL: facilitator.url,
  X402_PAY_TO: payTo,
  ...SCHEME_ENV,
  X402_SESSION_REDEEM_VOUCHERS: "100000",
  X402_SESSION_REDEEM_AMOUNT: "1000000000",
  X402_SESSION_REDEEM_SECONDS: redeemSeconds,
});

function sessionFetch(account: PrivateKeyAccount) {
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
  const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient), { depositPolicy: { depositMultiplier: 50 } });
  const client = new x402Client();
  client.register("eip155:84532", scheme);
  return { fetch: wrapFetchWithPayment(fetch, client), client };
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  chain = await startBaseSepolia();
  facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, ...FACILITATOR_KEYS, port: 0 });
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await facilitator?.close();
  await chain?.stop();
});

describe("x402 sessions: kill -9 between answering and redeeming", () => {
  it("the vouchers a killed gateway answered are redeemed by the next one, exactly", async () => {
    const location: DatabaseLocation = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "session-crash-")));
    // the first process never redeems (its policy is far off); it answers a deposit and five vouchers, then dies
    const first = await gatewayProcess(location, sessionEnv("300"), children);
    const payer = await newPayer(chain);
    const { fetch: paid } = sessionFetch(payer.account);
    for (let i = 0; i < 6; i++) expect((await paid(`${base(first.url)}${PATH}`)).status).toBe(200);
    const receiverBefore = await chain.balanceOf(payTo);
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    // nothing was redeemed: the receiver has not been paid for the vouchers
    expect(await chain.balanceOf(payTo)).toBe(receiverBefore);

    // the next process redeems what the dead one charged (its policy: vouchers older than a second)
    const second = await gatewayProcess(location, sessionEnv("1"), children);
    const paidOut = await until(
      async () => (await chain.balanceOf(payTo)) - receiverBefore,
      (v) => v >= 6n * PRICE,
    );
    expect(paidOut).toBe(6n * PRICE);
    second.child.kill("SIGKILL");
  }, 120_000);
});

const base = (url: string) => url;

describe("x402 upto: kill -9 while the settlement waits for its block (2 s blocks)", () => {
  it("the retry with the same proof is served once and charged once what it used", async () => {
    const location: DatabaseLocation = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "upto-crash-")));
    const payer = await approvedUptoPayer(chain);
    const first = await gatewayProcess(location, sessionEnv("300"), children);
    const header = await uptoProof(chain, payer, first.url, AUDIT);
    const before = await chain.balanceOf(payer.account.address);
    const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport: http(chain.rpcUrl) });
    await test.setAutomine(false);
    await test.setIntervalMining({ interval: 2 });
    try {
      const send = (url: string) => fetch(`${url}${AUDIT}`, { headers: { "PAYMENT-SIGNATURE": header } });
      const inFlight = send(first.url).catch(() => undefined);
      // the settlement is sent (in the mempool, waiting for its block): the gateway dies
      await until(
        async () => Number(((await test.request({ method: "txpool_status" as never })) as { pending: string }).pending),
        (n) => n > 0,
        10_000,
      );
      first.child.kill("SIGKILL");
      expect(await inFlight).toBeUndefined();
      const second = await gatewayProcess(location, sessionEnv("300"), children);
      const answer = await until(
        () => send(second.url),
        (r) => r.status !== 409,
        40_000,
      );
      expect(answer.status, await answer.clone().text()).toBe(200);
      await new Promise((r) => setTimeout(r, 2_500));
      // charged once, what the page used (no entries: the base price)
      expect(before - (await chain.balanceOf(payer.account.address))).toBe(300n);
      const db = await openDatabase(location);
      try {
        expect(
          await rowsOf(db, "x402_payments", { payer: payer.account.address.toLowerCase() }, { columns: ["state", "amount_atomic", "outcome_status"] }),
        ).toEqual([{ state: "settled", amount_atomic: "300", outcome_status: 200 }]);
      } finally {
        await db.close();
      }
      // the same proof once more: spent
      expect((await send(second.url)).status).toBe(402);
      second.child.kill("SIGKILL");
    } finally {
      await test.setIntervalMining({ interval: 0 });
      await test.setAutomine(true);
    }
  }, 120_000);
});

describe.skipIf(TEST_STORE !== "postgres")("x402 sessions: three instances, one PostgreSQL", () => {
  let instances: TestGateway[] = [];
  beforeAll(async () => {
    const database = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "session-instances-")));
    instances = await Promise.all([0, 1, 2].map(() => startTestGateway(sessionEnv("300"), { database })));
  }, 90_000);
  afterAll(async () => Promise.all(instances.map((g) => g.close())));

  it("one voucher sent to three instances thirty times is charged once; concurrent redeemers claim each channel once", async () => {
    const payer = await newPayer(chain);
    const { client } = sessionFetch(payer.account);
    const at = (i: number) => instances[i % 3]!.url;
    const required = decodePaymentRequiredHeader((await fetch(`${at(0)}${PATH}`)).headers.get("payment-required")!);
    const deposit = await client.createPaymentPayload(required);
    expect((await fetch(`${at(0)}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(deposit) } })).status).toBe(200);

    const { channelConfig, voucher: first } = deposit.payload as { channelConfig: unknown; voucher: { channelId: `0x${string}` } };
    const signer = toClientEvmSigner(payer.account);
    const voucher = await signVoucher(signer, first.channelId, (2n * PRICE).toString(), "eip155:84532");
    const header = encodePaymentSignatureHeader({ ...deposit, payload: { type: "voucher", channelConfig, voucher } } as never);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => fetch(`${at(i)}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(
      statuses.every((s) => s === 200 || s === 402 || s === 409),
      statuses.join(","),
    ).toBe(true);
    const [channel] = await rowsOf(instances[0]!.ctx.db, "x402_channels", { channel_id: first.channelId.toLowerCase() });
    expect(channel).toMatchObject({ charged: (2n * PRICE).toString(), vouchers_unredeemed: 2 });

    // eight more vouchers, one instance after another
    for (let n = 3n; n <= 10n; n++) {
      const v = await signVoucher(signer, first.channelId, (n * PRICE).toString(), "eip155:84532");
      const r = await fetch(`${at(Number(n))}${PATH}`, {
        headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader({ ...deposit, payload: { type: "voucher", channelConfig, voucher: v } } as never) },
      });
      expect(r.status).toBe(200);
    }
    const receiverBefore = await chain.balanceOf(payTo);
    const results = await Promise.all(instances.map((g) => g.gateway.services.payments.redeemer!.redeem()));
    const redeemedBy = results.filter((r) => r !== undefined && !r.failed);
    expect(redeemedBy).toHaveLength(1);
    expect(redeemedBy[0]).toMatchObject({ channels: 1, vouchers: 10, amount: 10n * PRICE });
    expect((await chain.balanceOf(payTo)) - receiverBefore).toBe(10n * PRICE);
    const [after] = await rowsOf(instances[0]!.ctx.db, "x402_channels", { channel_id: first.channelId.toLowerCase() });
    expect(after).toMatchObject({ total_claimed: (10n * PRICE).toString(), vouchers_unredeemed: 0 });
  }, 120_000);

  it("one upto authorization sent to three instances thirty times is settled once", async () => {
    const payer = await approvedUptoPayer(chain);
    const header = await uptoProof(chain, payer, instances[0]!.url, AUDIT);
    const before = await chain.balanceOf(payer.account.address);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => fetch(`${instances[i % 3]!.url}${AUDIT}`, { headers: { "PAYMENT-SIGNATURE": header } })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(
      statuses.every((s) => s === 200 || s === 402 || s === 409),
      statuses.join(","),
    ).toBe(true);
    expect(before - (await chain.balanceOf(payer.account.address))).toBe(300n);
    expect(
      await rowsOf(instances[0]!.ctx.db, "x402_payments", { payer: payer.account.address.toLowerCase(), state: "settled" }, { columns: ["amount_atomic"] }),
    ).toEqual([{ amount_atomic: "300" }]);
  }, 60_000);
});
