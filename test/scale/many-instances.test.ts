/**
 * Three gateway instances on one PostgreSQL, requests sprayed round-robin
 * (issue 11, "every invariant across instances"). Each instance has its own
 * connection pool and its own process-level state; only the store is shared.
 * The store tests of the SQLite pass cover one instance; these need the
 * shared server and run in the PostgreSQL pass (npm test runs both).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import { POSTGRES_MIGRATIONS } from "../../gateway/src/store/migrations";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { rowsOf } from "../helpers/rows";
import { freshDatabase, TEST_STORE } from "../helpers/store";
import { authed, newIdempotencyKey, registerTreasury, sandboxTenant } from "../helpers/treasury";
import { challengeFor, FACILITATOR_KEY, newPayer, paymentHeader, settledPaymentCount } from "../helpers/x402-stack";

const FEE_RECIPIENT = devAccount(5).address;
let database: DatabaseLocation;
let fork: BaseForkNode;
let sepolia: BaseSepoliaNode;
let facilitator: Awaited<ReturnType<typeof startFacilitator>>;
let instances: TestGateway[] = [];
const payTo = devAccount(2).address;

describe.skipIf(TEST_STORE !== "postgres")("three instances, one PostgreSQL", () => {
  beforeAll(async () => {
    database = await freshDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "instances-")));
    [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
    facilitator = await startFacilitator({ rpcUrl: sepolia.rpcUrl, privateKey: FACILITATOR_KEY, port: 0 });
    const env = {
      BASE_RPC_URL: fork.rpcUrl,
      FEE_RECIPIENT,
      X402_FACILITATOR: "local",
      X402_FACILITATOR_URL: facilitator.url,
      X402_PAY_TO: payTo,
      RATE_LIMIT_READ_PER_MIN: "10",
    };
    // the instances start at once: each runs the migrations, each version is applied once
    instances = await Promise.all([0, 1, 2].map(() => startTestGateway(env, { database })));
  }, 90_000);
  afterAll(async () => {
    await Promise.all(instances.map((g) => g.close()));
    await facilitator?.close();
    await Promise.all([fork?.stop(), sepolia?.stop()]);
  });

  const at = (i: number) => instances[i % instances.length]!;
  const stores = () => instances[0]!.ctx.stores;

  it("started together, they applied each migration once", async () => {
    const rows = await rowsOf<{ version: number }>(instances[0]!.ctx.db, "schema_migrations", {}, { columns: ["version"], orderBy: "version" });
    expect(rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    expect(rows.length).toBeGreaterThan(1);
  });

  it("the same Idempotency-Key from 50 concurrent requests over three instances executes once", async () => {
    const t = await sandboxTenant(at(0).url);
    const key = newIdempotencyKey();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(at(i).url, "POST", "/api/v1/deposits", { body: { amount_usdc: 500 }, headers: { authorization: `Bearer ${t.key}`, "idempotency-key": key } }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.every((s) => s === 200 || s === 409),
      statuses.join(","),
    ).toBe(true);
    const served = answers.filter((a) => a.status === 200);
    expect(served.length).toBeGreaterThanOrEqual(1);
    // one execution, one fee row; every 200 is the same receipt (the first, or its replay)
    expect(await stores().executions.count(t.treasuryId)).toBe(1);
    expect(await stores().fees.forTreasury(t.treasuryId)).toHaveLength(1);
    expect(new Set(served.map((a) => a.text)).size).toBe(1);
    // and after the first finished, every instance replays it
    const late = await Promise.all(
      [0, 1, 2].map((i) =>
        call(at(i).url, "POST", "/api/v1/deposits", { body: { amount_usdc: 500 }, headers: { authorization: `Bearer ${t.key}`, "idempotency-key": key } }),
      ),
    );
    for (const r of late) expect([r.status, r.headers.get("idempotent-replayed"), r.text]).toEqual([200, "true", served[0]!.text]);
  });

  it("one x402 proof presented to all three instances at once is served once and settled once", async () => {
    const { account, wallet } = await newPayer(sepolia);
    const requirements = await challengeFor(at(0).url, "GET", "/api/v1/treasury");
    const header = await paymentHeader(wallet, requirements);
    const before = await sepolia.balanceOf(account.address);
    const answers = await Promise.all([0, 1, 2].map((i) => call(at(i).url, "GET", "/api/v1/treasury", { headers: { "x-payment": header } })));
    const served = answers.filter((a) => a.status === 200);
    expect(served).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect([
        [409, "payment_in_progress"],
        [402, "payment_already_used"],
        [402, "invalid_exact_evm_payload_authorization_nonce_used"],
      ]).toContainEqual([a.status, a.body.error]);
    }
    expect(await sepolia.balanceOf(account.address)).toBe(before - BigInt(requirements.maxAmountRequired));
    expect(await settledPaymentCount(instances[0]!, account.address)).toBe(1);
    // presented again later, to any instance: refused, never charged again
    for (const i of [0, 1, 2])
      expect((await call(at(i).url, "GET", "/api/v1/treasury", { headers: { "x-payment": header } })).body.error).toBe("payment_already_used");
    expect(await sepolia.balanceOf(account.address)).toBe(before - BigInt(requirements.maxAmountRequired));
  });

  it("one envelope step relayed to all three at once, and two signatures of it, are broadcast once", async () => {
    const pub = createPublicClient({ chain: base, transport: http(fork.rpcUrl), pollingInterval: 50 });
    const account = privateKeyToAccount(generatePrivateKey());
    await fork.fund(account.address, 10_000_000_000n);
    const t = await registerTreasury(at(0).url, { wallet_address: account.address });
    const env = (await authed(at(1).url, t.key).post("/api/v1/deposits", { amount_usdc: 300 })).body;
    const step = env.steps[0] as { tx_id: string; unsigned_transaction: { to: Hex; data: Hex } };
    const sign = (maxPriorityFeePerGas: bigint) =>
      account.signTransaction({
        type: "eip1559",
        chainId: 8453,
        nonce: 0,
        to: step.unsigned_transaction.to,
        data: step.unsigned_transaction.data,
        value: 0n,
        gas: 400_000n,
        maxFeePerGas: 2_000_000_000n,
        maxPriorityFeePerGas,
      });
    const [first, second] = [await sign(1_000_000n), await sign(2_000_000n)];
    // the same signed transaction to all three, and a second signature of the same step, all at once
    const relays = await Promise.all(
      [first, first, first, second].map((signed, i) =>
        call(at(i).url, "POST", "/api/v1/relay", {
          body: { tx_id: step.tx_id, signed_transaction: signed },
          headers: { "idempotency-key": newIdempotencyKey() },
        }),
      ),
    );
    const ok = relays.filter((r) => r.status === 200 || r.status === 202);
    expect(ok.length, relays.map((r) => `${r.status} ${r.body?.error ?? ""}`).join("; ")).toBeGreaterThanOrEqual(1);
    // one hash was claimed; every success names it
    expect(new Set(ok.map((r) => r.body.tx_hash)).size).toBe(1);
    // on chain: the wallet's nonce moved once, and only the claimed signature exists
    expect(await pub.getTransactionCount({ address: account.address })).toBe(1);
    const claimed = ok[0]!.body.tx_hash as Hex;
    const other = claimed.toLowerCase() === (await import("viem")).keccak256(first).toLowerCase() ? second : first;
    await expect(pub.getTransaction({ hash: (await import("viem")).keccak256(other) })).rejects.toThrow();
    expect((await stores().envelopes.step(step.tx_id))!.txHash).not.toBeNull();
  });

  it("rate limits are counted once across the instances, not once per instance", async () => {
    // 10 reads a minute for one client address: 15 reads spread over three instances get 10 answers and 5 refusals
    const answers = [];
    for (let i = 0; i < 15; i++) answers.push(await call(at(i).url, "GET", "/api/v1/public/market-rates"));
    // earlier tests of this file spent some of the window: at most 10 are served in all
    const served = answers.filter((a) => a.status !== 429).length;
    expect(served).toBeLessThanOrEqual(10);
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThanOrEqual(5);
    const remaining = answers.map((a) => Number(a.headers.get("x-ratelimit-remaining")));
    // the counter is one: remaining falls by one per request whichever instance answers
    for (let i = 1; i < served; i++) expect(remaining[i]).toBe(remaining[i - 1]! - 1);
  });
});
