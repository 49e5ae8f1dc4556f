/**
 * How a treasury comes to be, with its sandbox key (shown once):
 *
 *   registration  POST /api/v1/treasuries: a wallet's treasury, `proven` with a valid ownership proof (the
 *                 statement of `ownershipStatement`, signed, its nonce spent once), `unproven` without
 *   sandbox key   POST /api/v1/sandbox/keys: a fresh demo treasury (managed, the demo portfolio, a random
 *                 wallet nobody signs for), within the sandbox's key capacity
 */
import { randomBytes } from "node:crypto";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { getAddress } from "viem";
import { DEMO_HOLDINGS, EMPTY_HOLDINGS, type Holdings } from "@treasury/core/domain/portfolio";
import type { PresetName } from "@treasury/core/domain/presets";
import { registrationStatement, STATEMENT_MAX_AGE_SECONDS } from "@treasury/core/domain/statements";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import type { ExecutionMode, Ownership, TreasuryOrigin, TreasuryRecord } from "../../store/treasury-store";
import { issueApiKey } from "../api-keys";
import type { ServiceContext } from "../context";
import type { SignedProof, StatementVerifier } from "../statement-verifier";

const DAY_MS = 86_400_000;

export interface CreateTreasuryInput {
  wallet_address: string;
  chain: TreasuryChain;
  preset: PresetName;
  execution_mode: ExecutionMode;
  ownership_proof?: SignedProof;
}

export class TreasuryRegistration {
  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "treasuries">,
    private readonly statements?: StatementVerifier,
  ) {}

  private get ttlMs() {
    return this.ctx.config.sandboxKeyTtlDays * DAY_MS;
  }

  /** the exact typed data a wallet signs to prove it controls `wallet` at registration */
  ownershipStatement(wallet: string, chain: TreasuryChain, executionMode: ExecutionMode) {
    const now = this.ctx.clock.now();
    const nonce = `own_${randomBytes(16).toString("hex")}`;
    const issuedAt = now.toISOString();
    const typed = registrationStatement({ service: this.ctx.links.base, wallet: getAddress(wallet), chain, executionMode, nonce, issuedAt });
    return {
      object: "ownership_statement" as const,
      typed_data: typed,
      nonce,
      issued_at: issuedAt,
      expires_at: new Date(now.getTime() + STATEMENT_MAX_AGE_SECONDS * 1000).toISOString(),
      how: "Sign typed_data with the wallet (eth_signTypedData_v4; a Safe signs it through EIP-1271), then POST /api/v1/treasuries with the same wallet_address, chain and execution_mode and ownership_proof {signature, nonce, issued_at}. Any fresh nonce of your own works too.",
    };
  }

  /**
   * POST /api/v1/treasuries: a sandbox treasury and its sandbox key. With a
   * valid ownership proof it is `proven`; without, `unproven`.
   */
  async register(input: CreateTreasuryInput) {
    const now = this.ctx.clock.now();
    const wallet = getAddress(input.wallet_address);
    let ownership: Ownership = "unproven";
    let proofRecord: Record<string, unknown> | null = null;
    if (input.ownership_proof) {
      if (!this.statements) throw new Error("the treasury service needs the statement verifier");
      const proof = input.ownership_proof;
      const statement = registrationStatement({
        service: this.ctx.links.base,
        wallet,
        chain: input.chain,
        executionMode: input.execution_mode,
        nonce: proof.nonce,
        issuedAt: proof.issued_at,
      });
      const method = await this.statements.verify("invalid_ownership_proof", { chain: input.chain, signer: wallet, statement, proof: proof as SignedProof });
      ownership = "proven";
      proofRecord = { method, nonce: proof.nonce, issued_at: proof.issued_at, signature: proof.signature, verified_at: now.toISOString() };
    }
    return await this.ctx.tx.transaction(async () => {
      if (proofRecord && !(await this.statements!.spendNonce(wallet, String(proofRecord.nonce), "register_treasury"))) {
        throw new TreasuryError("invalid_ownership_proof", "this nonce was already used by this wallet; sign a statement with a fresh nonce");
      }
      const treasury = await this.insertTreasury({
        walletAddress: wallet,
        chain: input.chain,
        preset: input.preset,
        executionMode: input.execution_mode,
        origin: "registration",
        ownership,
        proof: proofRecord,
        holdings: EMPTY_HOLDINGS,
        now,
      });
      const key = await issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return { treasury, key };
    });
  }

  /**
   * POST /api/v1/sandbox/keys: a key bound to a fresh demo sandbox treasury
   * (managed mode, seeded with the demo portfolio) so an evaluator can act at once.
   */
  async createSandboxKey() {
    const now = this.ctx.clock.now();
    const active = await this.ctx.stores.apiKeys.countActiveSandbox(now.toISOString());
    if (active >= this.ctx.config.sandboxKeyCapacity) {
      throw new TreasuryError("sandbox_unavailable", "sandbox key capacity is exhausted; retry later", {}, { "Retry-After": "3600" });
    }
    return await this.ctx.tx.transaction(async () => {
      const treasury = await this.insertTreasury({
        // a random address with no known key: the demo treasury is simulated, never signed for
        walletAddress: getAddress(`0x${randomBytes(20).toString("hex")}`),
        chain: "base",
        preset: "balanced",
        executionMode: "managed",
        origin: "sandbox_key",
        ownership: "unproven",
        holdings: DEMO_HOLDINGS,
        now,
      });
      const key = await issueApiKey(this.ctx.stores.apiKeys, { kind: "sandbox", treasuryId: treasury.id, now, ttlMs: this.ttlMs });
      return {
        sandbox: true as const,
        key: key.key,
        expires_at: key.expiresAt!,
        docs: this.ctx.links.url("/docs"),
        treasury_id: treasury.id,
      };
    });
  }

  private async insertTreasury(o: {
    walletAddress: `0x${string}`;
    chain: TreasuryChain;
    preset: PresetName;
    executionMode: ExecutionMode;
    origin: TreasuryOrigin;
    ownership: Ownership;
    proof?: Record<string, unknown> | null;
    holdings: Holdings;
    now: Date;
  }): Promise<TreasuryRecord> {
    const record: TreasuryRecord = {
      id: newId("trs"),
      walletAddress: o.walletAddress,
      chain: o.chain,
      preset: o.preset,
      executionMode: o.executionMode,
      status: "active",
      origin: o.origin,
      ownership: o.ownership,
      holdings: o.holdings,
      createdAt: o.now.toISOString(),
      updatedAt: o.now.toISOString(),
    };
    await this.ctx.stores.treasuries.insert(record, o.proof ?? null);
    return record;
  }
}
