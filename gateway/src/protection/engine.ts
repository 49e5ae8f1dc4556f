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
 *   and fee 0 (downward legs are free).
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
import type { AppContext } from "../services/context";
import { DelegationService } from "../services/delegation-service";
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
  private readonly automation;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly ctx: AppContext,
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
      for (const d of this.ctx.stores.delegations.all()) {
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
    const t = this.ctx.stores.treasuries.get(d.treasuryId);
    if (!t || !this.chain.connected(t.chain)) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "no treasury or no RPC" };
    if (d.automation.toLowerCase() !== this.automation.address.toLowerCase()) return { treasuryId: d.treasuryId, outcome: "not_active", detail: "another automation key" };
    const state = await this.delegations.state(t);
    if (state !== "active") return { treasuryId: d.treasuryId, outcome: "not_active", detail: state };

    const preset = PRESETS[t.preset];
    const threshold = d.protectBelowHealth ?? preset.protectBelowHealthScore;
    const position = await this.chain.position(t.chain, d.safe);
    const health = chainHealthScore(position);
    if (health >= threshold) {
      if (!d.armed) this.ctx.stores.delegations.setArmed(d.treasuryId, true);
      return { treasuryId: d.treasuryId, outcome: "healthy", detail: `health ${health}` };
    }
    if (!d.armed) return { treasuryId: d.treasuryId, outcome: "already_acted", detail: `health ${health}; waiting for recovery above ${threshold}` };

    const m = AAVE_MARKETS[t.chain];
    const park = BigInt(preset.parkTarget * 100);
    const fromWallet = repaymentToPark(position, park, false);
    const fromCollateral = repaymentToPark(position, park, true);
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
    const client = this.chain.client(t.chain);
    const wallet = createWalletClient({ account: this.automation, transport: http(this.rpcUrl(t.chain)), pollingInterval: 50 }).extend(publicActions);
    // L2 fees: twice the current base fee plus a small tip (nodes often suggest a mainnet-sized 1 gwei tip)
    const [block, ethPrice] = await Promise.all([client.getBlock(), client.readContract({ address: m.oracle, abi: ORACLE_ABI, functionName: "getAssetPrice", args: [m.weth] })]);
    const tip = this.opts.priorityFeeWei ?? 1_000_000n;
    const fees = { maxPriorityFeePerGas: tip, maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip };
    let gas = 0n;
    for (const c of calls) {
      // approvals are estimated as they stand; the repayment after its approval is estimated generously
      gas += c === calls[0] ? await client.estimateContractGas({ account: this.automation, address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [c.to, c.data] }) : 400_000n;
    }
    const costUsd = (Number(gas * fees.maxFeePerGas) / 1e18) * (Number(ethPrice) / 1e8);
    const caps = this.caps();
    if (costUsd > caps.perActionUsd) return this.skip(d, health, ltvPct(position), `gas ${costUsd.toFixed(4)} USD is above the ${caps.perActionUsd} USD per-action cap`);
    const month = this.ctx.stores.delegations.monthGasUsd(d.treasuryId, this.ctx.clock.now());
    if (month + costUsd > caps.perMonthUsd) return this.skip(d, health, ltvPct(position), `gas budget: ${month.toFixed(4)} USD spent this month, cap ${caps.perMonthUsd}`);

    // one trigger, one action: disarm before sending
    this.ctx.stores.delegations.setArmed(d.treasuryId, false);
    const hashes: Hex[] = [];
    let gasUsedUsd = 0;
    for (const c of calls) {
      const hash = await wallet.writeContract({ address: d.module, abi: PROTECTION_MODULE_ABI, functionName: "execute", args: [c.to, c.data], chain: null, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas, gas: 1_000_000n });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      hashes.push(hash);
      gasUsedUsd += (Number(receipt.gasUsed * receipt.effectiveGasPrice) / 1e18) * (Number(ethPrice) / 1e8);
      if (receipt.status !== "success") {
        this.ctx.stores.delegations.recordAction({ id: newId("fee"), treasuryId: d.treasuryId, status: "failed", reason: `reverted: ${hash}`, healthBefore: health, ltvBefore: ltvPct(position), ltvAfter: null, repayMicro: repay, txHashes: hashes, gasUsd: gasUsedUsd, createdAt: this.ctx.clock.now().toISOString() });
        return { treasuryId: d.treasuryId, outcome: "failed", detail: `reverted ${hash}` };
      }
    }
    const after = await this.chain.position(t.chain, d.safe);
    // re-arm only once the action restored the position; an action that did not is not repeated for the same trigger
    if (chainHealthScore(after) >= threshold) this.ctx.stores.delegations.setArmed(d.treasuryId, true);
    const now = this.ctx.clock.now().toISOString();
    const id = newId("fee");
    this.ctx.db.transaction(() => {
      this.ctx.stores.delegations.recordAction({ id, treasuryId: d.treasuryId, status: "executed", reason: null, healthBefore: health, ltvBefore: ltvPct(position), ltvAfter: ltvPct(after), repayMicro: repay, txHashes: hashes, gasUsd: gasUsedUsd, createdAt: now });
      const fee = feeFor("protection", repay);
      this.ctx.stores.fees.record({
        id: newId("fee"),
        treasuryId: d.treasuryId,
        action: "protection",
        amountMicro: repay,
        feeMicro: fee.feeMicro,
        feeBps: Number(fee.feeBps),
        feeBasis: fee.basis,
        trigger: "protection",
        executionRef: id,
        createdAt: now,
      });
    })();
    return { treasuryId: d.treasuryId, outcome: "executed", detail: `repaid ${Number(repay) / 1e6} USDC, LTV ${ltvPct(position)}% -> ${ltvPct(after)}%` };
  }

  private rpcUrl(chain: "base" | "arbitrum"): string {
    const url = this.opts.rpcUrls[chain];
    if (!url) throw new Error(`no RPC for ${chain}`);
    return url;
  }

  private skip(d: DelegationRecord, health: number, ltv: number, reason: string): TickResult {
    this.ctx.stores.delegations.recordAction({ id: newId("fee"), treasuryId: d.treasuryId, status: "skipped", reason, healthBefore: health, ltvBefore: ltv, ltvAfter: null, repayMicro: null, txHashes: [], gasUsd: 0, createdAt: this.ctx.clock.now().toISOString() });
    return { treasuryId: d.treasuryId, outcome: "skipped", detail: reason };
  }
}
