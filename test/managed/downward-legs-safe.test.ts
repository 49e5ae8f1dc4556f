/**
 * The downward legs on a managed Safe, on the Base fork: withdraw, sell and
 * exit are each one queued Safe transaction (the same calls as a wallet's
 * envelope, batched through MultiSendCallOnly), signed by the Safe's owner and
 * executed by the service; the chain ends as the receipt says, to the unit; no
 * fee moves; the audit trail has each execution with its trigger.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { SafeExecutor } from "../../gateway/src/protection/safe-executor";
import { Operator } from "../../signer-agent/src/operator";
import { startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, registerTreasury } from "../helpers/treasury";

const A = AaveV3Base.ASSETS;
let fork: BaseForkNode;
let gw: TestGateway;
let executor: SafeExecutor;
let v: ResponseValidator;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);

beforeAll(async () => {
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  // the fork prices gas far above Base's own: a budget that five executions fit in
  executor = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey, gasUsdPerMonth: 100 });
  v = new ResponseValidator((await authed(gw.url, "").get("/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

const pub = () => createPublicClient({ chain: base, transport: http(fork.rpcUrl) });
const balanceOf = (token: `0x${string}`, who: `0x${string}`) => pub().readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [who] });

/** the owner signs the one queued Safe transaction of a receipt, the service executes it: the receipt read again */
async function signAndExecute(api: ReturnType<typeof authed>, operator: Operator, receipt: any, idField: string) {
  expect(receipt.safe_transaction?.status, JSON.stringify(receipt)).toBe("awaiting_signatures");
  const stx = (await api.get(`/api/v1/safe-transactions/${receipt.safe_transaction.id}`)).body;
  const signed = await api.post(`/api/v1/safe-transactions/${stx.id}/signatures`, { signature: await operator.signQueued(stx) }, null);
  expect(signed.status, signed.text).toBe(200);
  const ran = (await executor.tick()).filter((r) => r.id === stx.id);
  expect(ran, JSON.stringify(ran)).toMatchObject([{ outcome: "executed" }]);
  const after = (await api.get(`/api/v1/receipts/${receipt[idField]}`)).body;
  expect(after).toMatchObject({ status: "completed", tx_hash: ran[0]!.txHash });
  return { stx, after };
}

describe("withdraw, sell and exit on a managed Safe: queued, signed by the owner, executed by the service", () => {
  it("a Safe with ETH collateral and a USDC debt withdraws, sells and exits; zero debt, zero aTokens; no fee; audited with their trigger", async () => {
    const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
    await fork.fund(operator.account.address);
    const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    const ownership_proof = await operator.ownershipProof(gw.url, "managed");
    const tenant = await registerTreasury(gw.url, { wallet_address: safe, execution_mode: "managed", ownership_proof });
    const api = authed(gw.url, tenant.key);
    await fork.fund(safe, 7_000_000_000n);
    // into a position through the Safe: 6,000 USDC to ETH collateral, 2,000 USDC borrowed
    const convert = await api.post("/api/v1/convert", { amount_usdc: 6_000, target: "eth" });
    await signAndExecute(api, operator, convert.body, "conversion_id");
    const borrow = await api.post("/api/v1/borrow", { amount_usdc: 2_000 });
    await signAndExecute(api, operator, borrow.body, "borrow_id");
    const feeRecipient = gw.ctx.config.feeRecipient;
    const fees = await balanceOf(A.USDC.UNDERLYING, feeRecipient);

    // withdraw 0.1 ETH: one Aave call to the Safe itself
    const weth = await balanceOf(A.WETH.UNDERLYING, safe);
    const w = await api.post("/api/v1/withdraw", { asset: "ETH", amount: 0.1 });
    v.check("POST", "/api/v1/withdraw", w.status, w.body);
    expect([w.status, w.body.fee_usdc]).toEqual([200, 0]);
    const { stx: wTx } = await signAndExecute(api, operator, w.body, "withdrawal_id");
    expect(wTx.calls.map((c: any) => c.kind)).toEqual(["pool_call"]);
    expect(wTx.title).toBe("withdraw 0.1 ETH from Aave");
    expect(await balanceOf(A.WETH.UNDERLYING, safe)).toBe(weth + 10n ** 17n);

    // sell 0.2 ETH of collateral: withdraw, approve, swap for USDC bounded under the pool's quote; the USDC stays in the Safe
    const usdc = await balanceOf(A.USDC.UNDERLYING, safe);
    const s = await api.post("/api/v1/sell", { asset: "ETH", amount: 0.2 });
    v.check("POST", "/api/v1/sell", s.status, s.body);
    expect([s.status, s.body.fee_usdc]).toEqual([200, 0]);
    const { stx: sTx } = await signAndExecute(api, operator, s.body, "sale_id");
    expect(sTx.calls.map((c: any) => c.kind)).toEqual(["pool_call", "approval", "swap"]);
    expect(sTx.title).toMatch(/^sell 0\.2 ETH of collateral for USDC \(at least [\d.]+ USDC\)$/);
    const got = (await balanceOf(A.USDC.UNDERLYING, safe)) - usdc;
    expect(got).toBeGreaterThanOrEqual(BigInt(Math.round(s.body.min_out_usdc * 1e6)));
    expect(await balanceOf(A.WETH.UNDERLYING, safe)).toBe(weth + 10n ** 17n);

    // exit: all of the debt repaid (max), everything withdrawn (max)
    const e = await api.post("/api/v1/exit", {});
    v.check("POST", "/api/v1/exit", e.status, e.body);
    expect([e.status, e.body.fee_usdc]).toEqual([200, 0]);
    const { after, stx: eTx } = await signAndExecute(api, operator, e.body, "exit_id");
    expect(eTx.title).toBe("exit: repay all USDC debt, withdraw everything supplied");
    expect(after).toMatchObject({ action: "exit", fee_usdc: 0 });
    expect({
      debt: await balanceOf(A.USDC.V_TOKEN, safe),
      aUsdc: await balanceOf(A.USDC.A_TOKEN, safe),
      aWeth: await balanceOf(A.WETH.A_TOKEN, safe),
    }).toEqual({ debt: 0n, aUsdc: 0n, aWeth: 0n });
    expect(await balanceOf(A.USDC.UNDERLYING, feeRecipient)).toBe(fees);
    const audit = (await api.get("/api/v1/audit")).body.data as any[];
    // each proposed with the treasury's key (api_request), executed once its owner signed
    expect(audit.slice(-3).map((a) => [a.action, a.fee_usdc, a.trigger])).toEqual([
      ["withdraw", 0, "api_request"],
      ["sell", 0, "api_request"],
      ["exit", 0, "api_request"],
    ]);
  }, 120_000);
});
