/**
 * Delegation of a managed treasury (spec 2.12 delegation, 3.3): the operator
 * registers the ProtectionModule it deployed for its Safe; the gateway checks
 * the module on chain (its Safe, Pool, automation key and park target) and
 * derives the lifecycle state from the chain on every read.
 */
import { getAddress } from "viem";
import { AAVE_MARKETS } from "../../../contracts-abi/chains";
import { AAVE_POOL_ABI } from "../../../contracts-abi/aave-pool";
import { PROTECTION_MODULE_ABI, SAFE_MODULE_ABI } from "../../../contracts-abi/protection-module";
import { delegationState } from "../domain/delegation";
import type { DelegationState } from "../domain/policy";
import { PRESETS } from "../domain/presets";
import { ApiError } from "../http/errors";
import type { ChainGateway } from "../chain/chain-gateway";
import type { TreasuryRecord } from "../store/treasury-store";
import type { AppContext } from "./context";


export class DelegationService {
  constructor(
    private readonly ctx: AppContext,
    private readonly chain: ChainGateway,
  ) {}

  /** the service's automation address (the key itself lives with the protection engine) */
  get automation(): `0x${string}` | undefined {
    return this.ctx.config.automationAddress;
  }

  requirements(t: TreasuryRecord) {
    const m = AAVE_MARKETS[t.chain];
    return {
      safe: t.walletAddress,
      pool: m.pool,
      automation: this.automation ?? null,
      park_target_bps: PRESETS[t.preset].parkTarget * 100,
      listed_tokens: [m.usdc, m.weth, m.btc],
    };
  }

  async register(t: TreasuryRecord, module: `0x${string}`, protectBelowHealth: number | undefined) {
    if (t.executionMode !== "managed") throw new ApiError(409, "not_managed", "delegation applies to managed treasuries only");
    if (!this.automation) throw new ApiError(503, "automation_unconfigured", "the service has no automation address configured (AUTOMATION_ADDRESS)");
    if (!this.chain.connected(t.chain)) throw new ApiError(503, "chain_unavailable", `no RPC configured for ${t.chain}`);
    const c = this.chain.client(t.chain);
    const want = this.requirements(t);
    let got;
    try {
      const [safe, pool, automation, park] = await Promise.all(
        (["safe", "pool", "automation", "parkTargetBps"] as const).map((fn) => c.readContract({ address: module, abi: PROTECTION_MODULE_ABI, functionName: fn })),
      );
      got = { safe: getAddress(safe as string), pool: getAddress(pool as string), automation: getAddress(automation as string), park: Number(park) };
    } catch {
      throw new ApiError(400, "invalid_module", `${module} is not a ProtectionModule on ${t.chain}`);
    }
    const mismatch = (field: string, expected: unknown, received: unknown) =>
      new ApiError(400, "invalid_module", `the module's ${field} is ${String(received)}, expected ${String(expected)}`, { field, expected, received });
    if (got.safe !== getAddress(want.safe)) throw mismatch("safe", want.safe, got.safe);
    if (got.pool !== want.pool) throw mismatch("pool", want.pool, got.pool);
    if (got.automation !== getAddress(this.automation)) throw mismatch("automation", this.automation, got.automation);
    if (got.park !== want.park_target_bps) throw mismatch("park target", want.park_target_bps, got.park);
    this.ctx.stores.delegations.upsert({
      treasuryId: t.id,
      safe: t.walletAddress,
      module,
      automation: got.automation,
      registeredAt: this.ctx.clock.now().toISOString(),
      protectBelowHealth: protectBelowHealth ?? null,
    });
    return this.view(t);
  }

  async state(t: TreasuryRecord): Promise<DelegationState> {
    const d = this.ctx.stores.delegations.get(t.id);
    if (!d || !this.chain.connected(t.chain)) return "not_granted";
    const c = this.chain.client(t.chain);
    const [enabled, account, pending, latest] = await Promise.all([
      c.readContract({ address: d.safe, abi: SAFE_MODULE_ABI, functionName: "isModuleEnabled", args: [d.module] }),
      c.readContract({ address: AAVE_MARKETS[t.chain].pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [d.safe] }),
      c.getTransactionCount({ address: d.automation, blockTag: "pending" }),
      c.getTransactionCount({ address: d.automation, blockTag: "latest" }),
    ]);
    if (enabled) this.ctx.stores.delegations.markApproved(t.id, this.ctx.clock.now().toISOString());
    return delegationState({
      moduleEnabled: enabled,
      everApproved: enabled || this.ctx.stores.delegations.get(t.id)!.firstApprovedAt !== null,
      hasFunds: account[0] > 0n,
      automationInFlight: pending > latest,
    });
  }

  async view(t: TreasuryRecord) {
    const d = this.ctx.stores.delegations.get(t.id);
    return {
      object: "delegation",
      treasury_id: t.id,
      state: await this.state(t),
      module: d?.module ?? null,
      protect_below_health_score: d?.protectBelowHealth ?? PRESETS[t.preset].protectBelowHealthScore,
      requirements: this.requirements(t),
      protection_actions: (d ? this.ctx.stores.delegations.actions(t.id) : []).map((a) => ({
        id: a.id,
        status: a.status,
        reason: a.reason,
        health_before: a.healthBefore,
        ltv_before: a.ltvBefore,
        ltv_after: a.ltvAfter,
        repay_usdc: a.repayMicro === null ? null : Number(a.repayMicro) / 1e6,
        tx_hashes: a.txHashes,
        gas_usd: a.gasUsd,
        created_at: a.createdAt,
      })),
    };
  }
}
