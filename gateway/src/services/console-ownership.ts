/**
 * A console session (sk_console_) stands for a Safe owner only while that
 * address is an owner of the Safe on chain. The sign-in checked it once; the
 * key lasts 8 hours. So each use of a console key checks again: every write
 * (any method but GET and HEAD) reads the Safe's `isOwner(owner)` first (one
 * eth_call), and a read does so when this process last confirmed that key
 * more than CONSOLE_OWNER_RECHECK_MS ago (60 s by default). An owner who is
 * gone has the key revoked in the store at once (revoked_reason
 * owner_removed): refused from then on, on every instance, with
 * `401 owner_removed`, even if the address is made an owner again (it signs
 * in again). When the chain cannot be read the request is refused with
 * `503 chain_unavailable` and the key is kept.
 */
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import type { ChainGateway } from "../chain/chain-gateway";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { ApiKeyRecord } from "../store/api-key-store";
import type { ServiceContext } from "./context";

/** how long a confirmation of a console key's owner serves reads (CONSOLE_OWNER_RECHECK_MS); writes always check */
export const CONSOLE_OWNER_RECHECK_MS = Number(process.env.CONSOLE_OWNER_RECHECK_MS ?? 60_000);

/** past this many remembered keys, the confirmations too old to serve a read are forgotten */
const MAX_REMEMBERED = 10_000;

const INVALID_TOKEN = { "WWW-Authenticate": 'Bearer realm="treasury", error="invalid_token"' };

/** the refusal of a console key whose owner left the Safe: at its revocation and on every use after it */
export function ownerRemoved(key: Pick<ApiKeyRecord, "ownerAddress" | "revokedAt">, safe?: string): TreasuryError {
  return new TreasuryError(
    "owner_removed",
    `console session revoked${key.revokedAt ? ` at ${key.revokedAt}` : ""}: ${key.ownerAddress} is no longer an owner of the Safe${safe ? ` ${safe}` : ""}; sign in again with the wallet of a current owner`,
    { owner: key.ownerAddress, ...(safe ? { safe } : {}), revoked_at: key.revokedAt },
    INVALID_TOKEN,
  );
}

export class ConsoleOwnership {
  /** key id -> when this process last confirmed its owner on chain (ms) */
  private readonly confirmed = new Map<string, number>();

  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "treasuries">,
    private readonly chain: ChainGateway,
    private readonly recheckMs = CONSOLE_OWNER_RECHECK_MS,
  ) {}

  /** passes, or throws owner_removed (the key is then revoked), unauthorized (a key without its owner) or chain_unavailable */
  async confirm(key: ApiKeyRecord, write: boolean): Promise<void> {
    if (key.kind !== "console") return;
    const now = this.ctx.clock.now();
    if (!key.ownerAddress || !key.treasuryId) {
      // issued before owners were recorded with their sessions: it cannot be checked, so it is not taken
      throw new TreasuryError("unauthorized", "invalid credential: a console session that names no owner; sign in again", {}, INVALID_TOKEN);
    }
    const last = this.confirmed.get(key.id);
    if (!write && last !== undefined && now.getTime() - last < this.recheckMs) return;
    const t = await this.ctx.stores.treasuries.get(key.treasuryId);
    if (!t) throw new TreasuryError("unauthorized", "invalid credential: the console session's treasury does not exist", {}, INVALID_TOKEN);
    let owner: boolean;
    try {
      owner = await this.chain
        .client(t.chain)
        .readContract({ address: t.walletAddress, abi: SAFE_ABI, functionName: "isOwner", args: [key.ownerAddress as `0x${string}`] });
    } catch (err) {
      throw new TreasuryError(
        "chain_unavailable",
        `could not confirm that ${key.ownerAddress} is still an owner of the Safe ${t.walletAddress} on ${t.chain}: ${(err as Error).message.split("\n")[0]}`,
      );
    }
    if (owner) {
      this.remember(key.id, now.getTime());
      return;
    }
    this.confirmed.delete(key.id);
    const at = now.toISOString();
    await this.ctx.stores.apiKeys.revoke(key.id, at, "owner_removed");
    throw ownerRemoved({ ownerAddress: key.ownerAddress, revokedAt: at }, t.walletAddress);
  }

  private remember(id: string, at: number): void {
    this.confirmed.set(id, at);
    if (this.confirmed.size <= MAX_REMEMBERED) return;
    for (const [k, when] of this.confirmed) if (at - when >= this.recheckMs) this.confirmed.delete(k);
  }
}
