/**
 * One paid call, one store transaction: a session voucher on a paid read is charged, its payment recorded
 * (settled) and its outcome written in ONE transaction of the store, and nothing else of the payment is
 * written outside it. Two requests with the same voucher: one served and charged, the other refused with
 * the scheme's corrective 402, and the channel moved once.
 *
 * The store is watched through the gateway's own `Db` (its `transaction`, `run` and `get`, which the stores
 * call): each write statement is put in the transaction it ran in, or in the list of writes made outside any.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, signVoucher } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Db } from "../../gateway/src/store/db";
import { rowsOf } from "../helpers/rows";
import { AUTHORIZER_KEY, newPayer, startX402Suite, type X402Stack } from "../helpers/x402-stack";

const PRICE = 1_000n; // GET /api/v1/health
const PATH = "/api/v1/health";
/** the tables a paid call's payment writes (the rate limit's count, the payer's treasury, the payment, the channel) */
const PAYMENT_TABLES = /\b(x402_payments|x402_channels|rate_limit_hits|treasuries)\b/;

let stack: X402Stack;
let base: string;

beforeAll(async () => {
  ({ stack, base } = await startX402Suite({
    X402_SESSION_RECEIVER_AUTHORIZER: privateKeyToAccount(AUTHORIZER_KEY).address,
    X402_SESSION_REDEEM_VOUCHERS: "100000",
    X402_SESSION_REDEEM_SECONDS: "300",
    X402_SESSION_REDEEM_AMOUNT: "1000000000",
  }));
}, 120_000);
afterAll(async () => stack?.close());

/** the payment's writes while `during` runs: per transaction, the tables its write statements name; and those written outside any */
async function paymentWrites(db: Db, during: () => Promise<void>): Promise<{ transactions: string[][]; outside: string[] }> {
  const inTx = new AsyncLocalStorage<string[]>();
  const transactions: string[][] = [];
  const outside: string[] = [];
  const write = (sql: string) => {
    const table = /^\s*(INSERT|UPDATE|DELETE)/i.test(sql) ? PAYMENT_TABLES.exec(sql)?.[1] : undefined;
    if (table) (inTx.getStore() ?? outside).push(table);
  };
  const transaction = db.transaction.bind(db);
  const run = db.run.bind(db);
  const get = db.get.bind(db);
  const spies = [
    vi.spyOn(db, "transaction").mockImplementation(<T>(fn: () => Promise<T>) => {
      if (inTx.getStore()) return fn();
      const statements: string[] = [];
      return transaction(async () => {
        const result = await inTx.run(statements, fn);
        if (statements.length > 0) transactions.push(statements);
        return result;
      });
    }),
    vi.spyOn(db, "run").mockImplementation((sql, ...params) => (write(sql), run(sql, ...params))),
    vi.spyOn(db, "get").mockImplementation(<T>(sql: string, ...params: Parameters<Db["get"]>[1][]) => (write(sql), get<T>(sql, ...params))),
  ];
  try {
    await during();
  } finally {
    for (const s of spies) s.mockRestore();
  }
  return { transactions, outside };
}

function sessionClient(account: Parameters<typeof toClientEvmSigner>[0]) {
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
  const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient), { depositPolicy: { depositMultiplier: 20 } });
  const client = new x402Client();
  client.register("eip155:84532", scheme);
  return { fetch: wrapFetchWithPayment(fetch, client), client };
}

describe("x402 sessions: one paid call, one store transaction", () => {
  it("a voucher on a paid read: its charge, its payment settled and its outcome in one transaction, nothing written outside it", async () => {
    const payer = await newPayer(stack.chain);
    const { fetch: paid } = sessionClient(payer.account);
    // the deposit, then a first voucher (its payer's rate-limit block is taken from the shared count once)
    for (let i = 0; i < 2; i++) expect((await paid(`${base}${PATH}`)).status).toBe(200);

    for (let n = 3n; n <= 5n; n++) {
      let answer: Response | undefined;
      const writes = await paymentWrites(stack.gateway.ctx.db, async () => {
        answer = await paid(`${base}${PATH}`);
      });
      expect(answer!.status).toBe(200);
      expect(decodePaymentResponseHeader(answer!.headers.get("payment-response")!).extra).toMatchObject({
        chargedAmount: PRICE.toString(),
        channelState: { chargedCumulativeAmount: (n * PRICE).toString() },
      });
      expect(writes).toEqual({ transactions: [["x402_channels", "x402_payments"]], outside: [] });
    }
    const [channel] = await rowsOf(stack.gateway.ctx.db, "x402_channels", { payer: payer.account.address.toLowerCase() });
    expect(channel).toMatchObject({ charged: (5n * PRICE).toString(), vouchers_unredeemed: 5 });
    const nonce = `session:${channel!.channel_id as string}:${5n * PRICE}`;
    expect(
      await rowsOf(
        stack.gateway.ctx.db,
        "x402_payments",
        { payer: payer.account.address.toLowerCase(), nonce },
        { columns: ["route", "amount_atomic", "state", "transaction_hash", "outcome_status", "lease_holder", "lease_expires_at", "pending_settlement"] },
      ),
    ).toEqual([
      {
        route: `GET ${PATH}`,
        amount_atomic: PRICE.toString(),
        state: "settled",
        transaction_hash: `${channel!.channel_id as string}:${5n * PRICE}`,
        outcome_status: 200,
        lease_holder: null,
        lease_expires_at: null,
        pending_settlement: null,
      },
    ]);
  });

  it("the same voucher twice at once: one answer served and charged, the other refused with the corrective 402; the channel moved once", async () => {
    const payer = await newPayer(stack.chain);
    const { client } = sessionClient(payer.account);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const deposit = await client.createPaymentPayload(required);
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(deposit) } })).status).toBe(200);
    const { channelConfig, voucher: first } = deposit.payload as { channelConfig: unknown; voucher: { channelId: `0x${string}` } };
    const voucher = await signVoucher(toClientEvmSigner(payer.account), first.channelId, (2n * PRICE).toString(), "eip155:84532");
    const header = encodePaymentSignatureHeader({ ...deposit, payload: { type: "voucher", channelConfig, voucher } } as never);

    const answers = await Promise.all([0, 1].map(() => fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402]);
    const refused = answers.find((a) => a.status === 402)!;
    const refusal = decodePaymentRequiredHeader(refused.headers.get("payment-required")!);
    expect(refusal.error).toBe("invalid_batch_settlement_evm_cumulative_amount_mismatch");
    expect(refusal.accepts.find((a) => a.scheme === "batch-settlement")!.extra).toMatchObject({
      channelState: { chargedCumulativeAmount: (2n * PRICE).toString() },
    });
    const [channel] = await rowsOf(stack.gateway.ctx.db, "x402_channels", { channel_id: first.channelId.toLowerCase() });
    expect(channel).toMatchObject({ charged: (2n * PRICE).toString(), vouchers_unredeemed: 2 });
    expect(
      await rowsOf(stack.gateway.ctx.db, "x402_payments", { payer: payer.account.address.toLowerCase(), state: "settled" }, { columns: ["outcome_status"] }),
    ).toEqual([{ outcome_status: 200 }, { outcome_status: 200 }]);
    // the same voucher once more, alone: spent
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } })).status).toBe(402);
  });
});
