/**
 * Delegation of a managed treasury (spec 2.12 delegation, 3.3): the operator
 * registers the ProtectionModule it deployed for its Safe; the gateway checks
 * the module on chain (its Safe, Pool, automation key and park target) and
 * derives the lifecycle state from the chain on every read.
 *
 * Trust: a delegation is attached only with the Safe's own signature
 * (EIP-1271) over the AttachDelegation statement (packages/core/src/domain/statements.ts:
 * treasury id, module, protect threshold, park target). Thresholds come only
 * from that signed statement; one Safe has at most one delegation; the engine
 * acts only on proven delegations; the owner's view lists every protection
 * action taken on its Safe.
 */
import { encodeFunctionData, getAddress, zeroAddress } from "viem";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { safeTxFor, safeTxHash, safeTxTypedDataJson } from "../chain/safe-transaction";

/** the head of a Safe's module list */
const SENTINEL_MODULES = "0x0000000000000000000000000000000000000001" as const;
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { PROTECTION_MODULE_ABI, protectionModuleConfig, SAFE_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { delegationState } from "@treasury/core/domain/delegation";
import type { DelegationState } from "@treasury/core/domain/policy";
import { PRESETS } from "@treasury/core/domain/presets";
import { GAS_CAPS } from "@treasury/core/domain/policy";
import { usdcToNumber } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import { describeRevert, type ChainGateway } from "../chain/chain-gateway";
import { atOneBlock } from "../chain/one-block";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import { delegationStatement } from "@treasury/core/domain/statements";
import type { SignedProof, StatementVerifier } from "./statement-verifier";

export class DelegationService {
  constructor(
    private readonly ctx: ServiceContext<"delegations" | "events" | "instances" | "treasuries">,
    private readonly chain: ChainGateway,
    private readonly statements?: StatementVerifier,
  ) {}

  /** the service's automation address (the key itself lives with the protection engine) */
  get automation(): `0x${string}` | undefined {
    return this.ctx.config.automationAddress;
  }

  /** what the module attached to `t` must be: its constructor's configuration (@treasury/core/contracts/protection-module) */
  requirements(t: TreasuryRecord) {
    const { config, tokens } = protectionModuleConfig(t.chain, getAddress(t.walletAddress), this.automation ?? zeroAddress, PRESETS[t.preset].parkTarget * 100);
    return {
      safe: t.walletAddress,
      pool: config.pool,
      automation: this.automation ?? null,
      park_target_bps: Number(config.parkTargetBps),
      oracle: config.oracle,
      swap_router: config.router,
      pool_fee: config.poolFee,
      usdc: config.usdc,
      max_slippage_bps: Number(config.maxSlippageBps),
      listed_tokens: tokens,
    };
  }

  /** the typed data the Safe's owners sign to attach `module` to treasury `t` */
  statementFor(t: TreasuryRecord, module: `0x${string}`, protectBelowHealth: number, proof: { nonce: string; issued_at: string }) {
    const want = this.requirements(t);
    return delegationStatement({
      service: this.ctx.links.base,
      chain: t.chain,
      treasuryId: t.id,
      safe: getAddress(t.walletAddress),
      module: getAddress(module),
      protectBelowHealthCentis: Math.round(protectBelowHealth * 100),
      parkTargetBps: want.park_target_bps,
      maxSlippageBps: want.max_slippage_bps,
      nonce: proof.nonce,
      issuedAt: proof.issued_at,
    });
  }

  async register(t: TreasuryRecord, module: `0x${string}`, protectBelowHealth: number | undefined, proof: SignedProof) {
    if (t.executionMode !== "managed") throw new TreasuryError("not_managed", "delegation applies to managed treasuries only");
    if (!this.automation) throw new TreasuryError("automation_unconfigured", "the service has no automation address configured (AUTOMATION_ADDRESS)");
    if (!this.chain.connected(t.chain)) throw new TreasuryError("chain_unavailable", `no RPC configured for ${t.chain}`);
    const c = this.chain.client(t.chain);
    const want = this.requirements(t);
    // every field of the module's configuration, read from it (a module of another build or configuration is refused)
    const fields = ["safe", "pool", "automation", "parkTargetBps", "oracle", "router", "poolFee", "usdc", "maxSlippageBps"] as const;
    let got: Record<(typeof fields)[number], string>;
    try {
      const values = await Promise.all(fields.map((fn) => c.readContract({ address: module, abi: PROTECTION_MODULE_ABI, functionName: fn })));
      got = Object.fromEntries(fields.map((f, i) => [f, typeof values[i] === "string" ? getAddress(values[i] as string) : String(values[i])])) as typeof got;
    } catch {
      throw new TreasuryError(
        "invalid_module",
        `${module} is not a ProtectionModule of this build on ${t.chain} (it must answer safe, pool, automation, parkTargetBps, oracle, router, poolFee, usdc and maxSlippageBps)`,
      );
    }
    const mismatch = (field: string, expected: unknown, received: unknown) =>
      new TreasuryError("invalid_module", `the module's ${field} is ${String(received)}, expected ${String(expected)}`, { field, expected, received });
    const expected: Record<(typeof fields)[number], string> = {
      safe: getAddress(want.safe),
      pool: want.pool,
      automation: getAddress(this.automation),
      parkTargetBps: String(want.park_target_bps),
      oracle: want.oracle,
      router: want.swap_router,
      poolFee: String(want.pool_fee),
      usdc: want.usdc,
      maxSlippageBps: String(want.max_slippage_bps),
    };
    const names: Record<(typeof fields)[number], string> = {
      safe: "safe",
      pool: "pool",
      automation: "automation",
      parkTargetBps: "park target",
      oracle: "oracle",
      router: "swap router",
      poolFee: "pool fee",
      usdc: "usdc",
      maxSlippageBps: "max slippage bps",
    };
    for (const f of fields) if (got[f] !== expected[f]) throw mismatch(names[f], expected[f], got[f]);

    // the Safe itself must vouch for this treasury, module and thresholds (EIP-1271 through its owners)
    if (!this.statements) throw new Error("the delegation service needs the statement verifier");
    const threshold = protectBelowHealth ?? PRESETS[t.preset].protectBelowHealthScore;
    const statement = this.statementFor(t, module, threshold, proof);
    await this.statements.verify("invalid_safe_proof", { chain: t.chain, signer: getAddress(t.walletAddress), statement, proof, contractOnly: true });
    const at = this.ctx.clock.now().toISOString();
    const current = await this.ctx.stores.delegations.get(t.id);
    const upgrading =
      Boolean(current?.provenAt) &&
      getAddress(current!.module) !== getAddress(module) &&
      (await c.readContract({ address: getAddress(t.walletAddress), abi: SAFE_MODULE_ABI, functionName: "isModuleEnabled", args: [current!.module] }));
    await this.ctx.tx.transaction(async () => {
      if (!(await this.statements!.spendNonce(t.walletAddress, proof.nonce, "attach_delegation"))) {
        throw new TreasuryError("invalid_safe_proof", "this nonce was already used by this Safe; sign a statement with a fresh nonce");
      }
      const attached = {
        treasuryId: t.id,
        chain: t.chain,
        safe: getAddress(t.walletAddress),
        module: getAddress(module),
        automation: got.automation as `0x${string}`,
        protectBelowHealth: threshold,
        proof: { method: "eip1271", signature: proof.signature, nonce: proof.nonce, issued_at: proof.issued_at, verified_at: at },
        at,
      };
      // an upgrade: while the module in force is enabled it keeps protecting; the new one waits for the owners to enable it
      if (current && upgrading)
        await this.ctx.stores.delegations.stageUpgrade(t.id, {
          module: attached.module,
          automation: attached.automation,
          protectBelowHealth: threshold,
          proof: attached.proof,
          at,
        });
      else await this.ctx.stores.delegations.attachProven(attached);
      // the Safe named this treasury: it is proven to stand behind it
      await this.ctx.stores.treasuries.markProven(t.id);
      await this.ctx.stores.events.append(
        t.id,
        "delegation.changed",
        { change: current && upgrading ? "upgrade_staged" : "registered", safe: attached.safe, module: attached.module },
        { now: this.ctx.clock.now() },
      );
    });
    return this.view(t);
  }

  /**
   * What protection does for a treasury now: its delegation's state on chain, whether an engine holding the
   * delegation's automation key is taking its passes, and the trigger. `active` (the published
   * auto_repay_active and protection_status) needs both: an approved, funded delegation and an engine watching.
   */
  async protection(t: TreasuryRecord): Promise<{ state: DelegationState; engineWatching: boolean; active: boolean; protectBelowHealth: number | null }> {
    const d = await this.ctx.stores.delegations.get(t.id);
    if (!d?.provenAt) return { state: "not_granted", engineWatching: false, active: false, protectBelowHealth: null };
    const [state, engineWatching] = await Promise.all([this.state(t), this.ctx.stores.instances.engineWatching(d.automation, this.ctx.clock.now())]);
    return { state, engineWatching, active: state === "active" && engineWatching, protectBelowHealth: d.protectBelowHealth };
  }

  /**
   * The delegation's state from the chain, every read at one block number (gateway/src/chain/one-block.ts: a
   * read the node answered with an error, as Anvil's getUserAccountData does while it mines the next block, is
   * made once more at a settled block). 503 chain_unavailable when the node cannot be reached, or answered
   * both tries with an error.
   */
  async state(t: TreasuryRecord): Promise<DelegationState> {
    let d = await this.ctx.stores.delegations.get(t.id);
    if (!d || !d.provenAt || !this.chain.connected(t.chain)) return "not_granted";
    const c = this.chain.client(t.chain);
    const { safe, module, automation } = d;
    const upgrade = d.pendingUpgrade?.module;
    const enabledAt = (m: `0x${string}`, blockNumber: bigint) =>
      c.readContract({ address: safe, abi: SAFE_MODULE_ABI, functionName: "isModuleEnabled", args: [m], blockNumber });
    const [upgradeEnabled, moduleEnabled, account, pending, mined] = await atOneBlock(c, (blockNumber) =>
      Promise.all([
        upgrade ? enabledAt(upgrade, blockNumber) : false,
        enabledAt(module, blockNumber),
        c.readContract({ address: AAVE_MARKETS[t.chain].pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [safe], blockNumber }),
        // the automation key's transactions the node holds (pending has no block number) beyond those mined at the block
        c.getTransactionCount({ address: automation, blockTag: "pending" }),
        c.getTransactionCount({ address: automation, blockNumber }),
      ]),
    ).catch((err: unknown) => {
      throw new TreasuryError("chain_unavailable", `could not read the delegation's state on ${t.chain}: ${describeRevert(err)}`, {}, {}, { cause: err });
    });
    // a staged upgrade takes over once the Safe's owners enabled its module
    if (upgrade && upgradeEnabled) {
      await this.ctx.tx.transaction(async () => {
        await this.ctx.stores.delegations.promoteUpgrade(t.id, upgrade);
        await this.ctx.stores.events.append(t.id, "delegation.changed", { change: "upgraded", safe, module: upgrade }, { now: this.ctx.clock.now() });
      });
      d = (await this.ctx.stores.delegations.get(t.id))!;
    }
    const enabled = upgrade && upgradeEnabled ? true : moduleEnabled;
    // the first approval is written once, not on every read
    if (enabled && d.firstApprovedAt === null) await this.ctx.stores.delegations.markApproved(t.id, this.ctx.clock.now().toISOString());
    await this.recordApproval(t.id, enabled, enabled || d.firstApprovedAt !== null, safe, enabled && upgrade && upgradeEnabled ? upgrade : module);
    return delegationState({
      moduleEnabled: enabled,
      everApproved: enabled || d.firstApprovedAt !== null,
      hasFunds: account[0] > 0n,
      automationInFlight: pending > mined,
    });
  }

  /**
   * `delegation.changed` as the chain shows it: the module enabled on the Safe (approved), or disabled after it
   * was (revoked). Written when it differs from the last approval or revocation the log recorded (a read that
   * sees the same state again writes nothing), the check and the write in one transaction.
   */
  private async recordApproval(treasuryId: string, enabled: boolean, everApproved: boolean, safe: `0x${string}`, module: `0x${string}`): Promise<void> {
    if (!everApproved) return;
    const change = enabled ? "approved" : "revoked";
    if ((await this.ctx.stores.events.lastApproval(treasuryId)) === change) return; // the common read: nothing changed, no write
    await this.ctx.tx.transaction(async () => {
      const last = await this.ctx.stores.events.lastApproval(treasuryId);
      if (last === change) return;
      await this.ctx.stores.events.append(treasuryId, "delegation.changed", { change, safe, module }, { now: this.ctx.clock.now() });
    });
  }

  /**
   * Approve or revoke, prepared as the Safe transaction the owners sign and
   * an owner's wallet executes (the service never does): enableModule of the
   * attached module, or disableModule with the module before it in the Safe's
   * list, at the Safe's current nonce.
   */
  async changeTransaction(t: TreasuryRecord, change: "approve" | "revoke" | "upgrade") {
    const d = await this.ctx.stores.delegations.get(t.id);
    if (!d?.provenAt || !d.module)
      throw new TreasuryError(
        "invalid_transition",
        "no module is attached to this treasury yet: deploy the ProtectionModule and POST /api/v1/delegation with the Safe's proof first (signer-agent operator approve does both)",
      );
    if (change === "upgrade" && !d.pendingUpgrade)
      throw new TreasuryError(
        "invalid_transition",
        "no upgrade is staged: POST /api/v1/delegation with the new module and the Safe's proof first (signer-agent operator approve does both)",
      );
    if (!this.chain.connected(t.chain)) throw new TreasuryError("chain_unavailable", `no RPC for ${t.chain}`);
    const c = this.chain.client(t.chain);
    const safe = getAddress(t.walletAddress);
    const module = getAddress(d.module);
    const [nonce, page] = await Promise.all([
      this.chain.safeNonce(t.chain, safe),
      c.readContract({ address: safe, abi: SAFE_ABI, functionName: "getModulesPaginated", args: [SENTINEL_MODULES, 50n] }),
    ]).catch((err: unknown) => {
      throw new TreasuryError("chain_unavailable", `could not read the Safe ${safe}: ${(err as Error).message.split("\n")[0]}`);
    });
    const modules = page[0].map((m) => getAddress(m));
    const at = modules.indexOf(module);
    if (change === "approve" && at >= 0)
      throw new TreasuryError("invalid_transition", `the module ${module} is already enabled on the Safe: delegation is approved`);
    if (change === "revoke" && at < 0)
      throw new TreasuryError("invalid_transition", `the module ${module} is not enabled on the Safe: there is nothing to revoke`);
    const enable = (m: `0x${string}`) => ({
      to: safe,
      data: encodeFunctionData({ abi: SAFE_ABI, functionName: "enableModule", args: [m] }),
      value: "0" as const,
    });
    // disableModule names the module before it in the Safe's list (the sentinel for the first); enableModule puts a new one first
    const disable = (before: `0x${string}`) => ({
      to: safe,
      data: encodeFunctionData({ abi: SAFE_ABI, functionName: "disableModule", args: [before, module] }),
      value: "0" as const,
    });
    const calls =
      change === "approve"
        ? [enable(module)]
        : change === "revoke"
          ? [disable(at === 0 ? SENTINEL_MODULES : modules[at - 1]!)]
          : // the upgrade, one Safe transaction: the new module enabled (first in the list), the one in force disabled after it
            [enable(getAddress(d.pendingUpgrade!.module)), ...(at >= 0 ? [disable(at === 0 ? getAddress(d.pendingUpgrade!.module) : modules[at - 1]!)] : [])];
    const chainId = AAVE_MARKETS[t.chain].chainId;
    const safeTx = safeTxFor(chainId, calls, nonce);
    return {
      object: "delegation_change",
      change,
      treasury_id: t.id,
      safe,
      module: change === "upgrade" ? getAddress(d.pendingUpgrade!.module) : module,
      ...(change === "upgrade" ? { replaces: module } : {}),
      chain_id: chainId,
      safe_tx: safeTx,
      safe_tx_hash: safeTxHash(chainId, safe, safeTx),
      typed_data: safeTxTypedDataJson(chainId, safe, safeTx),
      execute: {
        to: safe,
        function:
          "execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures)",
        how: "the Safe's owners sign typed_data (eth_signTypedData_v4); an owner's wallet sends execTransaction with safe_tx's fields and the signatures (65 bytes each, ascending by owner). The service never sends it: approving or revoking is the operator's own transaction",
      },
    };
  }

  async view(t: TreasuryRecord) {
    // the state first: it promotes a staged upgrade the Safe has enabled
    const state = await this.state(t);
    const d = await this.ctx.stores.delegations.get(t.id);
    const proven = Boolean(d?.provenAt);
    const u = proven ? d!.pendingUpgrade : null;
    return {
      object: "delegation",
      treasury_id: t.id,
      state,
      module: proven ? d!.module : null,
      pending_upgrade: u
        ? {
            module: u.module,
            protect_below_health_score: u.protectBelowHealth,
            staged_at: u.at,
            enable_with: "GET /api/v1/delegation/safe-transaction?change=upgrade",
          }
        : null,
      proven_at: d?.provenAt ?? null,
      protect_below_health_score: d?.protectBelowHealth ?? PRESETS[t.preset].protectBelowHealthScore,
      requirements: this.requirements(t),
      // what the protection engine's gas caps allow, and what it spent on this Safe this calendar month (UTC)
      gas: { ...GAS_CAPS, spent_this_month_usd: proven ? await this.ctx.stores.delegations.monthGasUsd(t.walletAddress, this.ctx.clock.now()) : 0 },
      // every action taken on the Safe (only its proven owner sees them)
      protection_actions: (proven ? await this.ctx.stores.delegations.actionsOnSafe(t.walletAddress) : []).map((a) => ({
        id: a.id,
        status: a.status,
        reason: a.reason,
        health_before: a.healthBefore,
        ltv_before: a.ltvBefore,
        ltv_after: a.ltvAfter,
        repay_usdc: a.repayMicro === null ? null : usdcToNumber(a.repayMicro),
        tx_hashes: a.txHashes,
        gas_usd: a.gasUsd,
        created_at: a.createdAt,
      })),
    };
  }
}
