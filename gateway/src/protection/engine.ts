/**
 * The protection engine: watches managed treasuries' Aave positions on their
 * chain and, when the health score falls below the protect threshold (1.3 by
 * default, tighter per treasury), repays toward the park target through the
 * Safe's ProtectionModule with the service's automation key.
 *
 * - never acts without active delegation (state derived from the chain);
 * - once per trigger: it disarms before sending; it re-arms only when it sees
 *   the health score back above the threshold (normally right after the
 *   repayment), so an action that did not restore the position is not
 *   repeated for the same fall, and concurrent passes never act twice;
 * - gas caps (spec 2.12): the automation key pays the gas, so the estimated
 *   cost (gas x max fee x the oracle's ETH price) must stay within 0.25 USD per
 *   action and 5 USD per month per treasury, an off-chain budget;
 * - every action is recorded in the fee audit trail with trigger `protection`
 *   and fee 0 (downward legs are free), through the one execution recorder;
 * - only delegations attached with the Safe's own signature are acted on, and
 *   actions are recorded on the treasury the Safe named (its owner's);
 * - the repayment is rounded toward the module's safe side
 *   (domain/delegation.ts); each call is simulated first, and a refused or
 *   reverted one is recorded with its decoded reason and retried on a later
 *   pass while the gas caps allow.
 */
import { createWalletClient, encodeFunctionData, http, publicActions, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { AAVE_POOL_ABI } from "../../../contracts-abi/aave-pool";
import { AAVE_MARKETS } from "../../../contracts-abi/chains";
import { ERC20_ABI } from "../../../contracts-abi/erc20";
import { PROTECTION_MODULE_ABI } from "../../../contracts-abi/protection-module";
import { ChainGateway, chainHealthScore } from "../chain/chain-gateway";
import { repaymentToPark } from "../domain/delegation";
import { feeFor } from "../domain/fees";
import { GAS_CAPS } from "../domain/policy";
import { ltvPct } from "../domain/position";
import { PRESETS } from "../domain/presets";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../services/context";
import { DelegationService } from "../services/delegation-service";
import { ExecutionRecorder } from "../services/execution-recorder";
import { formatDecimal } from "../domain/money";
import { BaseError, ContractFunctionRevertedError } from "viem";
import type { DelegationRecord } from "../store/delegation-store";

const ORACLE_ABI = [{ type: "function", name: "getAssetPrice", stateMutability: "view", inputs: [{ type: "address" }], outputs: [{ type: "uint256" }] }] as const;

export interface TickResult {
  treasuryId: string;
  outcome: "not_active" | "healthy" | "already_acted" | "executed" | "skipped" | "failed";
  detail?: string;
}

export class ProtectionEngine {
  private readonly chain: ChainGateway;
  private readonly delegations: DelegationService;
  private readonly recorder: ExecutionRecorder;
  private readonly automation;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "delegations" | "executions" | "fees" | "treasuries">,
    private readonly opts: {
      rpcUrls: { base?: string; arbitrum?: string };
      automationKey: Hex;
      gasCaps?: { perActionUsd: number; perMonthUsd: number };
      /** priority fee per gas (default 0.001 gwei, an L2 tip) */
      priorityFeeWei?: bigint;
    },
  ) {
    this.chain = new ChainGateway(opts.rpcUrls, 10_000);
    this.delegations = new DelegationService(ctx, this.chain);
    this.recorder = new ExecutionRecorder(ctx);
    this.automation = privateKeyToAccount(opts.automationKey);
  }

  get address(): `0x${string}` {
    return this.automation.address;
  }

  private caps() {
    return this.opts.gasCaps ?? { perActionUsd: GAS_CAPS.per_action_usd, perMonthUsd: GAS_CAPS.per_month_usd };
  }

  /** one pass over every delegation; returns what happened to each */
  async tick(): Promise<TickResult[]> {
    if (this.running) return [];
    this.running = true;
    try {
      const results: TickResult[] = [];
      for (const d of await this.ctx.stores.delegations.allProven()) {
        try {
          results.push(await this.protect(d));
        } catch (err) {
          results.push({ treasuryId: d.treasuryId, outcome: "failed", detail: err instanceof Error ? err.message.split("\n")[0] : String(err) });
        }
      }
      return results;
    } finally {
      this.running = false;
    }
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.tick(), intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async protect(d: DelegationRecord): Promise<TickResult> {
    const t = await this.ctx.stores.treasuries.get(d.treasuryId);
    if (!t || !this.chain.connected(t.chain)) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "no treasury or no RPC" };
    if (d.automation.toLowerCase() !== this.automation.address.toLowerCase()) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "another automation key" };
    const state = await this.delegations.state(t);
    if (state !== "active") return { treasuryId: d.treasuryId, outcome: "not_active", detail: state };

    const preset = PRESETS[t.preset];
    const threshold = d.protectBelowHealth ?? preset.protectBelowHealthScore;
    const position = await this.chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    if (health >= threshold) {
      if (!d.armed) await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
      return { treasuryId: d.treasuryId, outcome: "healthy", detail: `health ${health}` };
    }
    if (!d.armed) return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };

    const m = AAVE_MARKETS[t.chain];
    const park = BigInt(preset.parkTarget * 100);
    const client = this.chain.client(t.chain);
    const [usdcPrice, ethPrice] = await Promise.all(
      [m.usdc, m.weth].map((asset) => client.readContract({ address: m.oracle, abi: ORACLE_ABI, functionName: "getAssetPrice", args: [asset] })),
    );
    const base = { collateralBase: position.collateralBase, debtBase: position.debtBase, usdcPriceBase: usdcPrice!, parkTargetBps: park };
    const fromWallet = repaymentToPark({ ...base, fromCollateral: false });
    const fromCollateral = repaymentToPark({ ...base, fromCollateral: true });
    let calls: { to: `0x${string}`; data: Hex }[];
    let repay: bigint;
    if (fromWallet > 0n && position.holdings.walletUsdc >= fromWallet) {
      repay = fromWallet;
      calls = [
        { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, repay] }) },
        { to: m.pool, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repay", args: [m.usdc, repay, 2n, d.safe] }) },
      ];
    } else if (fromCollateral > 0n && position.holdings.aUsdc >= fromCollateral) {
      repay = fromCollateral;
      calls = [{ to: m.pool, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [m.usdc, repay, 2n] }) }];
    } else {
      return this.skip(d, health, ltvPct(position), `no repayment source: the Safe holds ${position.holdings.walletUsdc} USDC and ${position.holdings.aUsdc} aUSDC, ${fromWallet} needed`);
    }

    // the gas budget: the automation key pays, so the cost is checked before anything is sent
    const wallet = createWalletClient({ account: this.automation, transport: http(this.rpcUrl(t.chain)), pollingInterval: 50 }).extend(publicActions);
    // L2 fees: twice the current base fee plus a small tip (nodes often suggest a mainnet-sized 1 gwei tip)
    const block = await client.getBlock();
    const tip = this.opts.priorityFeeWei ?? 1_000_000n;
    const fees = { maxPriorityFeePerGas: tip, maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip };
    // approvals are estimated as they stand; the repayment after its approval is estimated generously
    let gas = 0n;
    for (const c of calls) {
      gas += c === calls[0] ? await client.estimateContractGas({ account: this.automation, address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [c.to, c.data] }).catch(() => 400_000n) : 400_000n;
    }
    const usd = (wei: bigint) => (Number(wei) / 1e18) * (Number(ethPrice) / 1e8);
    const costUsd = usd(gas * fees.maxFeePerGas);
    const caps = this.caps();
    if (costUsd > caps.perActionUsd) return this.skip(d, health, ltvPct(position), `gas ${costUsd.toFixed(4)} USD is above the ${caps.perActionUsd} USD per-action cap`);
    const month = await this.ctx.stores.delegations.monthGasUsd(d.safe, this.ctx.clock.now());
    if (month + costUsd > caps.perMonthUsd) return this.skip(d, health, ltvPct(position), `gas budget: ${month.toFixed(4)} USD spent this month, cap ${caps.perMonthUsd}`);

    // one trigger, one action: disarm before sending (a failure re-arms it, to retry within the caps)
    await this.ctx.stores.delegations.setArmed(d.treasuryId, false);
    const hashes: Hex[] = [];
    let gasUsedUsd = 0;
    const fail = async (reason: string): Promise<TickResult> => {
      await this.ctx.stores.delegations.recordAction({ id: newId("fee"), treasuryId: d.treasuryId, safe: d.safe, status: "failed", reason, healthBefore: health, ltvBefore: ltvPct(position), ltvAfter: null, repayMicro: repay, txHashes: hashes, gasUsd: gasUsedUsd, createdAt: this.ctx.clock.now().toISOString() });
      await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
      return { treasuryId: d.treasuryId, outcome: "failed", detail: reason };
    };
    for (const c of calls) {
      // simulate first: a refusal by the module (e.g. OvershotParkTarget) costs no gas and is recorded decoded
      try {
        await client.simulateContract({ account: this.automation, address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [c.to, c.data] });
      } catch (err) {
        return fail(`refused before sending: ${moduleRevertReason(err)}`);
      }
      const hash = await wallet.writeContract({ address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [c.to, c.data], chain: null, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas, gas: 1_000_000n });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      hashes.push(hash);
      gasUsedUsd += usd(receipt.gasUsed * receipt.effectiveGasPrice);
      if (receipt.status !== "success") return fail(`reverted: ${hash}`);
    }
    const after = await this.chain.position(t.chain, d.safe);
    // re-arm only once the action restored the position; an action that did not is not repeated for the same trigger
    if (chainHealthScore(after) >= threshold) await this.ctx.stores.delegations.setArmed(d.treasuryId, true);
    const now = this.ctx.clock.now();
    const id = newId("fee");
    await this.ctx.tx.transaction(async () => {
      await this.ctx.stores.delegations.recordAction({ id, treasuryId: d.treasuryId, safe: d.safe, status: "executed", reason: null, healthBefore: health, ltvBefore: ltvPct(position), ltvAfter: ltvPct(after), repayMicro: repay, txHashes: hashes, gasUsd: gasUsedUsd, createdAt: now.toISOString() });
      await this.recorder.record({ treasury: t, action: "protection", amountMicro: repay, fee: feeFor("protection", repay), origin: "protection", envelopeTxId: null, trigger: "protection", settled: true, executionId: id, at: now });
    });
    return { treasuryId: d.treasuryId, outcome: "executed", detail: `repaid ${formatDecimal(repay, 6)} USDC, LTV ${ltvPct(position)}% -> ${ltvPct(after)}%` };
  }

  private rpcUrl(chain: "base" | "arbitrum"): string {
    const url = this.opts.rpcUrls[chain];
    if (!url) throw new Error(`no RPC for ${chain}`);
    return url;
  }

  private async skip(d: DelegationRecord, health: number, ltv: number, reason: string): Promise<TickResult> {
    await this.ctx.stores.delegations.recordAction({ id: newId("fee"), treasuryId: d.treasuryId, safe: d.safe, status: "skipped", reason, healthBefore: health, ltvBefore: ltv, ltvAfter: null, repayMicro: null, txHashes: [], gasUsd: 0, createdAt: this.ctx.clock.now().toISOString() });
    return { treasuryId: d.treasuryId, outcome: "skipped", detail: reason };
  }
}

/** a module (or Aave) revert as `Name(args)`, decoded from the module's ABI */
export function moduleRevertReason(err: unknown): string {
  if (err instanceof BaseError) {
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    if (reverted?.data?.errorName) return `${reverted.data.errorName}(${(reverted.data.args ?? []).map(String).join(", ")})`;
    if (reverted?.reason) return reverted.reason;
    return err.shortMessage;
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}
