/**
 * Charged exactly once even when a request fails after its payment settled
 * (issue 10, finding 5): the settlement on Base Sepolia is held (mining off)
 * while the payer's wallet is drained on the fork, so the deposit that was
 * paid for can no longer execute. Its Idempotency-Key keeps a prepaid credit:
 * the retry with the same key executes and is not charged again, whatever
 * proof it carries. Real parts throughout: the fork, Base Sepolia, the
 * project's facilitator, the x402 client library.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createWalletClient, http } from "viem";
import { base } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { newIdempotencyKey } from "../helpers/treasury";
import { challengeFor, FACILITATOR_KEY, newPayer, paymentHeader } from "../helpers/x402-stack";

let fork: BaseForkNode;
let sepolia: BaseSepoliaNode;
let facilitator: Awaited<ReturnType<typeof startFacilitator>>;
let gw: TestGateway;

beforeAll(async () => {
  [fork, sepolia] = await Promise.all([startBaseFork(), startBaseSepolia()]);
  facilitator = await startFacilitator({ rpcUrl: sepolia.rpcUrl, privateKey: FACILITATOR_KEY, port: 0 });
  gw = await startTestGateway({
    BASE_RPC_URL: fork.rpcUrl,
    X402_FACILITATOR: "local",
    X402_FACILITATOR_URL: facilitator.url,
    X402_PAY_TO: devAccount(2).address,
  });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await facilitator?.close();
  await Promise.all([fork?.stop(), sepolia?.stop()]);
});

const rpc = (method: string, params: unknown[]) =>
  fetch(sepolia.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  }).then((r) => r.json() as Promise<{ result: string }>);
const mining = (on: boolean) => rpc("evm_setAutomine", [on]);

it("a deposit settled and then refused leaves a prepaid credit: its retry executes and is not charged again", async () => {
  const { account, wallet } = await newPayer(sepolia);
  await fork.fund(account.address, 1_000_000_000n); // 1,000 USDC and ETH on the fork
  const body = { amount_usdc: 500 };
  const key = newIdempotencyKey();
  const requirements = await challengeFor(gw.url, "POST", "/api/v1/deposits", body);
  const before = await sepolia.balanceOf(account.address);

  // the settlement is held in Base Sepolia's mempool while the wallet spends its USDC on the fork
  await mining(false);
  const pending = call(gw.url, "POST", "/api/v1/deposits", {
    body,
    headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key },
  });
  // wait until the facilitator's settlement transaction waits in the mempool (the request is past every check)
  const settler = devAccount(1).address;
  for (let i = 0; i < 200; i++) {
    const [pendingCount, minedCount] = await Promise.all([
      rpc("eth_getTransactionCount", [settler, "pending"]),
      rpc("eth_getTransactionCount", [settler, "latest"]),
    ]);
    if (BigInt(pendingCount.result) > BigInt(minedCount.result)) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const spender = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) });
  await spender.writeContract({
    address: AaveV3Base.ASSETS.USDC.UNDERLYING,
    abi: ERC20_ABI,
    functionName: "transfer",
    args: [devAccount(7).address, 1_000_000_000n],
  });
  await rpc("evm_mine", []);
  await mining(true);
  const refused = await pending;
  // paid, then refused: the wallet no longer holds the 500 USDC
  expect(refused.status).toBe(400);
  expect(refused.body.error).toBe("insufficient_balance");
  expect(await sepolia.balanceOf(account.address)).toBe(before - 50_000n);

  // the wallet is funded again; the retry of the same request and key carries a fresh proof that is not settled
  await fork.fund(account.address, 1_000_000_000n);
  const retry = await call(gw.url, "POST", "/api/v1/deposits", {
    body,
    headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": key },
  });
  expect(retry.status).toBe(202);
  expect(retry.headers.get("x-payment-response")).toBeNull();
  expect(await sepolia.balanceOf(account.address)).toBe(before - 50_000n);
  // the credit was used once: a third request with another key pays again
  const other = await call(gw.url, "POST", "/api/v1/deposits", {
    body,
    headers: { "x-payment": await paymentHeader(wallet, requirements), "idempotency-key": newIdempotencyKey() },
  });
  expect(other.status).toBe(409); // the envelope of the retry awaits its signature
  expect(await sepolia.balanceOf(account.address)).toBe(before - 50_000n);
}, 60_000);
