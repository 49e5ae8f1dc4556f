/**
 * The operator's queue of Safe transactions (issue 15, a documented
 * extension): a managed action on a treasury whose wallet is a Safe is
 * proposed as one Safe transaction (action-service.ts) and waits here for the
 * Safe's owners' signatures, in the manner of the Safe Transaction Service's
 * queue: listed with its exact calls, its SafeTx hash and EIP-712 typed data;
 * an owner's signature is accepted only if it recovers to a current owner of
 * the Safe on chain. The service's executor (protection/safe-executor.ts)
 * executes it once the Safe's threshold is reached.
 *
 * The SafeTx hash covers the Safe, the calls and the nonce, not the treasury:
 * two registrations of one Safe proposing the same action get the same hash.
 * So only the Safe's own registration (the managed treasury the Safe itself
 * proved: store/treasury-store.ts `managedForWallet`, the one the console signs
 * owners in to) queues Safe transactions, takes signatures and is executed;
 * another registration's item is refused (403 ownership_not_proven).
 */
import { titleOf } from "@treasury/core/actions";
import type { ActionParams } from "@treasury/core/domain/sandbox-ledger";
import { getAddress, type Address, type Hex } from "viem";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import type { ChainGateway } from "../chain/chain-gateway";
import { safeSignatureOwner, safeTxTypedDataJson } from "../chain/safe-transaction";
import { usdcToNumber } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { SafeTransactionRecord, SafeTxStatus } from "../store/safe-transaction-store";
import type { TreasuryStore } from "../store/treasury-store";
import type { Links, ServiceContext } from "./context";

/** how long a proposed Safe transaction waits for its owners before the service stops executing it (SAFE_TX_TTL_MS) */
export const SAFE_TX_TTL_MS = Number(process.env.SAFE_TX_TTL_MS ?? 24 * 60 * 60 * 1000);

/** how a receipt names the Safe transaction that completes it */
export function safeTransactionRef(links: Links, id: string, safeTxHash: Hex, status: SafeTxStatus) {
  return { id, safe_tx_hash: safeTxHash, status, url: links.url(`/api/v1/safe-transactions/${id}`) };
}

/**
 * Is `treasuryId` the Safe's own registration: the newest managed treasury the
 * Safe itself proved (its EIP-1271 ownership proof, or its safe_proof of a
 * delegation), the same one the console opens for its owners? Only it may
 * queue the Safe's transactions, have them signed and executed.
 */
export async function isSafesOwnRegistration(treasuries: Pick<TreasuryStore, "managedForWallet">, treasuryId: string, safe: string): Promise<boolean> {
  return (await treasuries.managedForWallet(safe))?.id === treasuryId;
}

/** the refusal of anything Safe-transaction related from a registration the Safe did not prove */
export function notSafesRegistration(treasuryId: string, safe: string, what: string): TreasuryError {
  return new TreasuryError(
    "ownership_not_proven",
    `treasury ${treasuryId} is not the registration the Safe ${safe} itself proved: ${what}. Only the Safe's proven registration (POST /api/v1/treasuries with the Safe's ownership_proof, or POST /api/v1/delegation with its safe_proof) queues, signs and executes the Safe's transactions`,
    { safe },
  );
}

export interface SafeState {
  owners: Address[];
  threshold: number;
  nonce: bigint;
}

export class SafeTransactionService {
  constructor(
    private readonly ctx: ServiceContext<"safeTransactions" | "treasuries">,
    private readonly chain: ChainGateway,
  ) {}

  /** the Safe's owners, threshold and nonce on its chain, read now */
  async safeState(chain: TreasuryChain, safe: Address): Promise<SafeState> {
    const c = this.chain.client(chain);
    try {
      const [owners, threshold, nonce] = await Promise.all([
        c.readContract({ address: safe, abi: SAFE_ABI, functionName: "getOwners" }),
        c.readContract({ address: safe, abi: SAFE_ABI, functionName: "getThreshold" }),
        this.chain.safeNonce(chain, safe),
      ]);
      return { owners: owners.map((o) => getAddress(o)), threshold: Number(threshold), nonce };
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the Safe ${safe} on ${chain}: ${(err as Error).message.split("\n")[0]}`);
    }
  }

  async list(treasuryId: string, open: boolean): Promise<Record<string, unknown>[]> {
    const records = await this.ctx.stores.safeTransactions.list(treasuryId, { open });
    return records.map((r) => this.view(r));
  }

  async get(treasuryId: string, id: string): Promise<Record<string, unknown>> {
    return this.view(await this.own(treasuryId, id));
  }

  private async own(treasuryId: string, id: string): Promise<SafeTransactionRecord> {
    const r = await this.ctx.stores.safeTransactions.get(id);
    if (!r || r.treasuryId !== treasuryId) throw new TreasuryError("not_found", `no Safe transaction ${id} for this treasury`);
    return r;
  }

  /**
   * Add an owner's signature of the SafeTx hash. Refused: a transaction of a
   * registration that is not the Safe's own (the same hash may sit in another
   * registration's queue: the owner's signature counts only on the Safe's own
   * item), a signature that is not an owner's (recovered and checked against
   * the Safe's owners on chain now), and a transaction that is no longer
   * awaiting signatures.
   */
  async sign(treasuryId: string, id: string, signature: Hex): Promise<Record<string, unknown>> {
    const r = await this.own(treasuryId, id);
    if (!(await isSafesOwnRegistration(this.ctx.stores.treasuries, treasuryId, r.safe))) {
      throw notSafesRegistration(treasuryId, r.safe, `its Safe transaction ${id} takes no signatures and is never executed`);
    }
    const now = this.ctx.clock.now().toISOString();
    if (r.status !== "awaiting_signatures" || r.expiresAt <= now) {
      throw new TreasuryError(
        "safe_transaction_not_open",
        `Safe transaction ${id} is ${r.status === "awaiting_signatures" ? "expired" : r.status}: it takes no more signatures`,
        { status: r.status === "awaiting_signatures" ? "expired" : r.status },
      );
    }
    let owner: Address;
    try {
      owner = await safeSignatureOwner(r.safeTxHash, signature);
    } catch (err) {
      // its form is the schema's (v 27/28/31/32): one that recovers to no address is a wrong signature, not a malformed one
      throw new TreasuryError("not_an_owner", `the signature recovers to no address (${(err as Error).message}), so to no owner of the Safe ${r.safe}`);
    }
    const state = await this.safeState(r.chain, r.safe);
    if (!state.owners.includes(owner)) {
      throw new TreasuryError(
        "not_an_owner",
        `the signature recovers to ${owner}, which is not an owner of the Safe ${r.safe} (a signature of another hash recovers to an unrelated address)`,
        { recovered: owner },
      );
    }
    const added = await this.ctx.stores.safeTransactions.addSignature(id, { owner, signature, submitted_at: now }, now);
    if (added === "not_open") throw new TreasuryError("safe_transaction_not_open", `Safe transaction ${id} takes no more signatures`);
    const view = this.view((await this.ctx.stores.safeTransactions.get(id))!, state.threshold);
    return { ...view, signature: { owner, outcome: added } };
  }

  /** the API's view of one Safe transaction (the threshold when it was read) */
  view(r: SafeTransactionRecord, threshold?: number): Record<string, unknown> {
    const chainId = AAVE_MARKETS[r.chain].chainId;
    return {
      object: "safe_transaction",
      id: r.id,
      treasury_id: r.treasuryId,
      receipt_id: r.executionId,
      action: r.action,
      amount_usdc: usdcToNumber(r.amountMicro),
      title: titleOf(r.action, r.request.params as ActionParams, r.amountMicro),
      fee_usdc: usdcToNumber(r.feeMicro),
      chain: r.chain,
      chain_id: chainId,
      safe: r.safe,
      // past its time it is expired, whether or not an executor has marked it yet
      status: r.status === "awaiting_signatures" && r.expiresAt <= this.ctx.clock.now().toISOString() ? "expired" : r.status,
      safe_tx_hash: r.safeTxHash,
      safe_tx: r.safeTx,
      // what an owner's wallet signs with eth_signTypedData_v4
      typed_data: safeTxTypedDataJson(chainId, r.safe, r.safeTx),
      calls: r.calls,
      signatures: r.signatures.map((s) => ({ owner: s.owner, submitted_at: s.submitted_at })),
      ...(threshold === undefined ? {} : { confirmations_required: threshold }),
      tx_hash: r.txHash,
      failure: r.failure,
      gas_usd: r.gasUsd,
      created_at: r.createdAt,
      expires_at: r.expiresAt,
      updated_at: r.updatedAt,
      sign: {
        url: this.ctx.links.url(`/api/v1/safe-transactions/${r.id}/signatures`),
        how: "an owner of the Safe signs safe_tx_hash (typed_data with eth_signTypedData_v4, or the hash with eth_sign) and posts { signature }; the service executes the Safe transaction once the Safe's threshold of owners signed, re-checking the safety rail against the position at that moment",
      },
    };
  }
}
