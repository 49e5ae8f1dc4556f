/**
 * Aave 3.6's errors as the gateway and the signer agent read them. The ABI they decode with (AAVE_ERRORS_ABI) is
 * the ABI of `Errors.sol` as solc compiles it from @aave-dao/aave-v3-origin (fixtures/aave-origin.ts), error for
 * error. On the fork: a relayed borrow Aave refuses is 422 `borrow_refused`, a relayed withdraw that would leave the
 * position liquidatable 422 `would_be_liquidatable`, each with Aave's error named; the signer agent's preflight
 * types the same refusal. The prices that make Aave refuse derive from FORK_RISK.
 */
import { AaveV3Base } from "@aave-dao/aave-address-book";
import { createWalletClient, http, parseAbi, publicActions, toFunctionSelector, type AbiParameter, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { formatAbiItem } from "viem/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AAVE_ERRORS_ABI } from "@treasury/core/contracts/aave-errors";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { aaveOrigin, AAVE_ORIGIN_VERSION } from "../../fixtures/aave-origin";
import { FORK_PRICES_USD, FORK_RISK, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { PreflightError } from "../../signer-agent/src/errors";
import { Preflight } from "../../signer-agent/src/preflight";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { registerNew } from "../helpers/spec-flow";
import { authed, registerTreasury } from "../helpers/treasury";

type AbiError = { type: "error"; name: string; inputs: readonly AbiParameter[] };

/** an error as its signature and parameter names: what decoding depends on (solc's internalType aside) */
const shape = (e: AbiError) => ({
  name: e.name,
  selector: toFunctionSelector(formatAbiItem(e)),
  inputs: e.inputs.map((p: AbiParameter) => ({ name: p.name, type: p.type })),
});
const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);

describe(`Aave ${AAVE_ORIGIN_VERSION}'s errors`, () => {
  it("AAVE_ERRORS_ABI is the compiled Errors library's ABI", () => {
    const compiled = aaveOrigin("Errors").abi.filter((item): item is AbiError => item.type === "error");
    expect(compiled.length).toBeGreaterThan(0);
    expect(AAVE_ERRORS_ABI.map(shape).sort(byName)).toEqual(compiled.map(shape).sort(byName));
    expect(aaveOrigin("Errors").abi.filter((item) => item.type !== "error")).toEqual([]);
  });

  it("names the errors the gateway maps by the selectors 3.6 reverts with", () => {
    const selector = (name: string) => toFunctionSelector(formatAbiItem(AAVE_ERRORS_ABI.find((e) => e.name === name)!));
    expect(selector("HealthFactorLowerThanLiquidationThreshold")).toBe("0x6679996d");
    expect(selector("CollateralCannotCoverNewBorrow")).toBe(toFunctionSelector("CollateralCannotCoverNewBorrow()"));
  });
});

describe("Aave's refusals relayed on the fork", () => {
  let fork: BaseForkNode;
  let gw: TestGateway;
  beforeAll(async () => {
    // its own fork: the file moves WETH's price (docs/TESTING.md, chains shared per worker)
    fork = await startBaseFork();
    gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl });
  });
  afterAll(async () => {
    await gw?.close();
    await fork?.stop();
  });

  const WETH = AaveV3Base.ASSETS.WETH.UNDERLYING;
  const USDC = AaveV3Base.ASSETS.USDC.UNDERLYING;
  const risk = FORK_RISK.WETH;
  const DEBT_USD = 10_000;

  /** a new wallet with 10 WETH supplied, registered in wallet mode: its API, its sends and its relay */
  async function walletWith10Weth() {
    const pk = generatePrivateKey();
    const account = privateKeyToAccount(pk);
    const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
    const send = async (address: Hex, abi: any, functionName: string, args: unknown[], value?: bigint) => {
      const r = await wallet.waitForTransactionReceipt({ hash: await wallet.writeContract({ address, abi, functionName, args, value } as never) });
      expect(r.status).toBe("success");
    };
    await fork.fund(account.address);
    await send(WETH, parseAbi(["function deposit() payable"]), "deposit", [], 10n * 10n ** 18n);
    await send(WETH, ERC20_ABI, "approve", [AaveV3Base.POOL, 10n * 10n ** 18n]);
    await send(AaveV3Base.POOL, AAVE_POOL_ABI, "supply", [WETH, 10n * 10n ** 18n, account.address, 0]);
    const t = await registerTreasury(gw.url, { wallet_address: account.address });
    const api = authed(gw.url, t.key);
    /** sign a step as it is (no estimate: the call reverts) and relay it under its own tx_id */
    const relay = async (step: { tx_id: string; unsigned_transaction: { to: Hex; data: Hex; value: string } }) => {
      const u = step.unsigned_transaction;
      const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: u.to, data: u.data, value: BigInt(u.value), gas: 600_000n }));
      return api.post("/api/v1/relay", { tx_id: step.tx_id, signed_transaction: signed });
    };
    const poolCall = (envelope: { steps: { kind: string }[] }) => envelope.steps.find((s) => s.kind === "pool_call") as never;

    return { account, send, api, relay, poolCall };
  }

  it("a borrow Aave refuses at relay (the price fell since the envelope): 422 borrow_refused, CollateralCannotCoverNewBorrow", async () => {
    const { api, relay, poolCall } = await walletWith10Weth();
    // the borrow, under the rail at the fork's price
    const borrow = await api.post("/api/v1/borrow", { amount_usdc: DEBT_USD });
    expect(borrow.status, borrow.text).toBe(202);
    // WETH falls so that the borrowed debt lands between the LTV and the liquidation threshold: the health factor stays
    // above 1 and the LTV check refuses it
    const between = Math.floor((DEBT_USD * 20_000) / (10 * (risk.ltvBps + risk.liquidationThresholdBps)));
    expect(DEBT_USD * 10_000 > 10 * between * risk.ltvBps && DEBT_USD * 10_000 < 10 * between * risk.liquidationThresholdBps).toBe(true);
    await fork.setPrice("WETH", between);
    const refused = await relay(poolCall(borrow.body));
    expect([refused.status, refused.body.error, refused.body.aave_error, refused.body.revert_reason]).toEqual([
      422,
      "borrow_refused",
      "CollateralCannotCoverNewBorrow",
      "CollateralCannotCoverNewBorrow()",
    ]);
    expect(refused.body.message).toMatch(/Aave refuses it, the collateral cannot cover the new debt/);
    await fork.setPrice("WETH", Number(FORK_PRICES_USD.WETH));
  });

  it("a withdraw that would leave the position liquidatable at relay (the price fell since the envelope): 422 would_be_liquidatable, HealthFactorLowerThanLiquidationThreshold; the signer agent's preflight refuses it typed the same", async () => {
    const { account, send, api, relay, poolCall } = await walletWith10Weth();
    // a debt of its own, then a withdraw of 2 of the 10 WETH, under the rail at the fork's price
    await send(AaveV3Base.POOL, AAVE_POOL_ABI, "borrow", [USDC, BigInt(DEBT_USD) * 10n ** 6n, 2n, 0, account.address]);
    const withdraw = await api.post("/api/v1/withdraw", { asset: "ETH", amount: 2 });
    expect(withdraw.status, withdraw.text).toBe(202);
    // WETH falls so that the position holds with 10 WETH (health factor >= 1) and not with 8
    const holdsWithNine = Math.floor((DEBT_USD * 10_000) / (9 * risk.liquidationThresholdBps));
    expect(10 * holdsWithNine * risk.liquidationThresholdBps >= DEBT_USD * 10_000 && 8 * holdsWithNine * risk.liquidationThresholdBps < DEBT_USD * 10_000).toBe(
      true,
    );
    await fork.setPrice("WETH", holdsWithNine);
    const step = poolCall(withdraw.body) as { tx_id: string; unsigned_transaction: { to: Hex; data: Hex; value: string } };
    const liquidatable = await relay(step);
    expect([liquidatable.status, liquidatable.body.error, liquidatable.body.aave_error, liquidatable.body.revert_reason]).toEqual([
      422,
      "would_be_liquidatable",
      "HealthFactorLowerThanLiquidationThreshold",
      "HealthFactorLowerThanLiquidationThreshold()",
    ]);
    // the signer agent's preflight refuses it before signing, typed the same
    const preflight = await new Preflight(fork.rpcUrl).prepare({ chain_id: 8453, ...step.unsigned_transaction }, account.address).catch((e: unknown) => e);
    expect(preflight).toBeInstanceOf(PreflightError);
    expect([(preflight as PreflightError).refusal, (preflight as PreflightError).aaveError, (preflight as PreflightError).shortMessage]).toEqual([
      "would_be_liquidatable",
      "HealthFactorLowerThanLiquidationThreshold",
      "the call reverts on the fork: Aave refuses it, the health factor would fall under 1: the position would be liquidatable (HealthFactorLowerThanLiquidationThreshold)",
    ]);
    await fork.setPrice("WETH", Number(FORK_PRICES_USD.WETH));
  });

  it("a managed sandbox borrow Aave refuses on the fork (its USDC reserve frozen by the risk admin): 422 borrow_refused, the failed step's ReserveFrozen() named, nothing recorded", async () => {
    const t = await registerNew({ gatewayUrl: gw.url, rpcUrl: fork.rpcUrl }, "managed");
    const deposited = await t.act("/api/v1/deposits", { amount_usdc: 1000 });
    expect(deposited.status, deposited.text).toBe(200);
    // the fixture's deployer is the market's risk admin
    const admin = createWalletClient({ account: devAccount(0), chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
    const freeze = async (frozen: boolean) => {
      const hash = await admin.writeContract({
        address: fork.manifest.aave.pool_configurator,
        abi: parseAbi(["function setReserveFreeze(address asset, bool freeze)"]),
        functionName: "setReserveFreeze",
        args: [USDC, frozen],
      });
      expect((await admin.waitForTransactionReceipt({ hash })).status).toBe("success");
    };
    await freeze(true);
    try {
      const refused = await t.act("/api/v1/borrow", { amount_usdc: 100 });
      expect([refused.status, refused.body.error, refused.body.executed_steps]).toEqual([422, "borrow_refused", []]);
      expect(refused.body.failed_step).toMatchObject({ kind: "pool_call", revert_reason: "ReserveFrozen()", aave_error: "ReserveFrozen" });
      expect(refused.body.message).toMatch(/did not execute on the local fork: Aave refuses it, the reserve is frozen \(ReserveFrozen\)/);
      const receipts = await call(gw.url, "GET", "/api/v1/audit", { headers: { authorization: `Bearer ${t.apiKey}` } });
      expect(receipts.body.data.map((e: { action: string }) => e.action)).toEqual(["deposit"]);
    } finally {
      await freeze(false);
    }
  });
});
