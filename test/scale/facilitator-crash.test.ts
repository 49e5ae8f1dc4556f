/**
 * kill -9 of the facilitator between sending a settlement and its receipt, on
 * a chain that mines a block every 2 s as Base does. The transfer is mined
 * after the facilitator died: the payer was charged. The gateway must not call
 * that a failure (it used to answer 402 settlement_failed, forget the lock,
 * and refuse the retry): it answers 503 payment_settlement_unknown, keeps the
 * lock, and the retry with the same proof (or, on an action, the same
 * Idempotency-Key with a fresh proof) is served once, charged once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { createTestClient, http } from "viem";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { freePort } from "../../fixtures/anvil";
import { call, startTestGateway, type JsonResponse, type TestGateway } from "../helpers/gateway";
import { rowCount, rowsOf } from "../helpers/rows";
import { startScriptedServer } from "../helpers/scripted-server";
import { newIdempotencyKey } from "../helpers/treasury";
import { challengeFor, FACILITATOR_KEY, newPayer, paymentHeader } from "../helpers/x402-stack";

const ROOT = path.resolve(__dirname, "../..");
let chain: BaseSepoliaNode;
let gateway: TestGateway;
let port: number;
let facilitator: ChildProcess | undefined;

/** the facilitator as its own process, on a fixed port (a restart keeps the gateway's URL) */
async function startFacilitatorProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/x402/facilitator/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, FACILITATOR_RPC_URL: chain.rpcUrl, FACILITATOR_PRIVATE_KEY: FACILITATOR_KEY, FACILITATOR_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("facilitator listening")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`facilitator exited with ${code}: ${out}`)));
  });
  return child;
}

const rpc = async (method: string, params: unknown[] = []) =>
  (
    (await (
      await fetch(chain.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      })
    ).json()) as { result: any }
  ).result;

/** the facilitator has sent a settlement that is waiting in the node's pool for its block */
async function settlementSent(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Number((await rpc("txpool_status")).pending) === 0) {
    if (Date.now() > deadline) throw new Error("no settlement was sent");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** the pool is empty: whatever was sent is mined */
async function mined(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Number((await rpc("txpool_status")).pending) > 0) {
    if (Date.now() > deadline) throw new Error("the settlement was never mined");
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  chain = await startBaseSepolia();
  port = await freePort();
  facilitator = await startFacilitatorProcess();
  gateway = await startTestGateway({ X402_FACILITATOR: "local", X402_FACILITATOR_URL: `http://127.0.0.1:${port}`, X402_PAY_TO: devAccount(2).address });
  const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport: http(chain.rpcUrl) });
  await test.setAutomine(false);
  await test.setIntervalMining({ interval: 2 });
}, 60_000);
afterAll(async () => {
  facilitator?.kill("SIGKILL");
  await gateway?.close();
  await chain?.stop();
});

/** send a paid request, kill the facilitator once its settlement is in the pool, and return the gateway's answer */
async function killedMidSettlement(send: () => Promise<JsonResponse>): Promise<JsonResponse> {
  const answer = send();
  await settlementSent();
  facilitator!.kill("SIGKILL");
  const first = await answer;
  await mined();
  facilitator = await startFacilitatorProcess();
  return first;
}

const settledRows = (payer: string) =>
  rowsOf(gateway.ctx.db, "x402_payments", { payer: payer.toLowerCase() }, { columns: ["state", "outcome_status"], orderBy: "created_at" });

describe("the facilitator dies between sending a settlement and its receipt", () => {
  it("a paid deposit: 503 payment_settlement_unknown, then the retry with the same proof and key is served once, charged once", async () => {
    const { account, wallet } = await newPayer(chain);
    const body = { amount_usdc: 300 };
    const requirements = await challengeFor(gateway.url, "POST", "/api/v1/deposits", body);
    const proof = await paymentHeader(wallet, requirements);
    const key = newIdempotencyKey();
    const before = await chain.balanceOf(account.address);
    const send = () => call(gateway.url, "POST", "/api/v1/deposits", { body, headers: { "x-payment": proof, "idempotency-key": key } });

    const first = await killedMidSettlement(send);
    // before: 402 settlement_failed ("socket hang up"), the lock forgotten, while the transfer was mined
    expect([first.status, first.body.error], first.text).toEqual([503, "payment_settlement_unknown"]);
    expect(first.headers.get("retry-after")).toBe("2");
    expect(await chain.balanceOf(account.address)).toBe(before - 50_000n); // mined after the facilitator died: charged

    const retry = await send();
    expect(retry.status, retry.text).toBe(202);
    expect(retry.body.object).toBe("unsigned_transaction");
    expect(await chain.balanceOf(account.address)).toBe(before - 50_000n);
    expect(await settledRows(account.address)).toEqual([{ state: "settled", outcome_status: 202 }]);
    const treasuryId = retry.headers.get("x-treasury-id")!;
    expect(await rowCount(gateway.ctx.db, "envelopes", { treasury_id: treasuryId })).toBe(1);
    // and once only: the same proof again is spent
    expect((await send()).body.error).toBe("payment_already_used");
  });

  it("a paid deposit whose client retries the same key with a fresh proof: served once, the first payment is the one charged", async () => {
    const { account, wallet } = await newPayer(chain);
    const body = { amount_usdc: 310 };
    const requirements = await challengeFor(gateway.url, "POST", "/api/v1/deposits", body);
    const key = newIdempotencyKey();
    const before = await chain.balanceOf(account.address);
    const first = await killedMidSettlement(async () =>
      call(gateway.url, "POST", "/api/v1/deposits", { body, headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key } }),
    );
    expect([first.status, first.body.error]).toEqual([503, "payment_settlement_unknown"]);

    const retry = await call(gateway.url, "POST", "/api/v1/deposits", {
      body,
      headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key },
    });
    expect(retry.status, retry.text).toBe(202);
    await new Promise((r) => setTimeout(r, 2_500)); // a block: anything the retry sent would be mined now
    expect(await chain.balanceOf(account.address)).toBe(before - 50_000n);
    expect((await settledRows(account.address)).map((r) => r.state)).toEqual(["settled"]);
  });

  it("a paid read: the retry with the same proof is served once, charged once", async () => {
    const { account, wallet } = await newPayer(chain);
    const proof = await paymentHeader(wallet, await challengeFor(gateway.url, "GET", "/api/v1/treasury"));
    const before = await chain.balanceOf(account.address);
    const send = () => call(gateway.url, "GET", "/api/v1/treasury", { headers: { "x-payment": proof } });
    const first = await killedMidSettlement(send);
    expect([first.status, first.body.error]).toEqual([503, "payment_settlement_unknown"]);
    const retry = await send();
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.object).toBe("treasury_state");
    expect(await chain.balanceOf(account.address)).toBe(before - 1_100n);
    expect(await settledRows(account.address)).toEqual([{ state: "settled", outcome_status: 200 }]);
  });
});

describe("a public facilitator that times out on the settlement", () => {
  it("is treated the same way: 503 payment_settlement_unknown, the lock kept; the retry with the same proof is settled and served once", async () => {
    // a stand-in for a public facilitator (this machine reaches none): verifies, then hangs on the first settlement
    const scripted = await startScriptedServer();
    const gw = await startTestGateway({
      X402_FACILITATOR: "public",
      X402_FACILITATOR_URL: scripted.url,
      X402_FACILITATOR_TIMEOUT_MS: "500",
      X402_PAY_TO: devAccount(2).address,
    });
    try {
      const { account, wallet } = await newPayer(chain);
      const proof = await paymentHeader(wallet, await challengeFor(gw.url, "GET", "/api/v1/treasury"));
      const transaction = `0x${"ab".repeat(32)}`;
      let settles = 0;
      const answerSettle = (hang: boolean) => {
        scripted.answer = (body: { paymentPayload: { payload: { authorization: { from: string } } } }, url) => {
          const payer = body.paymentPayload.payload.authorization.from;
          if (url !== "/settle") return { status: 200, body: JSON.stringify({ isValid: true, payer }) };
          settles++;
          return hang ? "hang" : { status: 200, body: JSON.stringify({ success: true, transaction, network: "base-sepolia", payer }) };
        };
      };
      answerSettle(true);
      const first = await call(gw.url, "GET", "/api/v1/treasury", { headers: { "x-payment": proof } });
      expect([first.status, first.body.error]).toEqual([503, "payment_settlement_unknown"]);
      answerSettle(false);
      const retry = await call(gw.url, "GET", "/api/v1/treasury", { headers: { "x-payment": proof } });
      expect(retry.status, retry.text).toBe(200);
      expect(settles).toBe(2); // the same authorization, settled again (a facilitator settles it at most once)
      const rows = await rowsOf(
        gw.ctx.db,
        "x402_payments",
        { payer: account.address.toLowerCase() },
        { columns: ["state", "outcome_status", "transaction_hash"] },
      );
      expect(rows).toEqual([{ state: "settled", outcome_status: 200, transaction_hash: transaction }]);
    } finally {
      await gw.close();
      scripted.close();
    }
  });
});
