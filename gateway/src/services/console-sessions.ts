/**
 * Operator sign-in to the console (issue 15): a Safe owner signs an EIP-4361
 * message (packages/core/src/domain/sign-in.ts) with personal_sign; the service checks the
 * signature, that the signer is an owner of the Safe on chain now, that a
 * managed treasury is registered for the Safe, and spends the nonce, then
 * issues a console session: a short-lived key (sk_console_, hashed at rest,
 * shown once) bound to that treasury, used as a bearer key by the console.
 */
import { getAddress, hashMessage, isAddressEqual, type Hex } from "viem";
import { AAVE_MARKETS, type TreasuryChain } from "@treasury/core/contracts/chains";
import { signInMessage } from "@treasury/core/domain/sign-in";
import { STATEMENT_MAX_AGE_SECONDS, STATEMENT_NONCE_PATTERN, statementTimeProblem } from "@treasury/core/domain/statements";
import { TreasuryError } from "@treasury/core/lib/errors";
import { recoverHashSigner } from "../lib/recover-signer";
import { randomBytes } from "node:crypto";
import { issueApiKey } from "./api-keys";
import type { ServiceContext } from "./context";
import type { SafeTransactionService } from "./safe-transaction-service";

export interface SignInRequest {
  owner: `0x${string}`;
  safe: `0x${string}`;
  nonce: string;
  issued_at: string;
  signature: Hex;
}

/** how long a console session lasts (CONSOLE_SESSION_MS) */
export const CONSOLE_SESSION_MS = Number(process.env.CONSOLE_SESSION_MS ?? 8 * 60 * 60 * 1000);

const refuse = (reason: string) => new TreasuryError("unauthorized", `sign-in refused: ${reason}`, { reason });

export class ConsoleSessionService {
  constructor(
    private readonly ctx: ServiceContext<"apiKeys" | "signedNonces" | "treasuries">,
    private readonly safes: SafeTransactionService,
  ) {}

  private async treasuryOf(safe: `0x${string}`) {
    const t = await this.ctx.stores.treasuries.managedForWallet(safe);
    if (!t)
      throw new TreasuryError(
        "treasury_not_found",
        `no managed treasury is registered for the Safe ${safe} with the Safe's own ownership proof (signer-agent operator register gives one)`,
      );
    return t;
  }

  private message(owner: `0x${string}`, safe: `0x${string}`, chain: TreasuryChain, nonce: string, issuedAt: string): string {
    const base = new URL(this.ctx.links.base);
    return signInMessage({
      domain: base.host,
      uri: this.ctx.links.url("/console"),
      owner,
      safe,
      chainId: AAVE_MARKETS[chain].chainId,
      nonce,
      issuedAt,
      expiresAt: new Date(Date.parse(issuedAt) + STATEMENT_MAX_AGE_SECONDS * 1000).toISOString(),
    });
  }

  /** the message to sign: fresh nonce and time, for this owner and Safe */
  async statement(owner: `0x${string}`, safe: `0x${string}`): Promise<Record<string, unknown>> {
    const t = await this.treasuryOf(safe);
    const nonce = randomBytes(16).toString("hex");
    const issuedAt = this.ctx.clock.now().toISOString();
    return {
      object: "console_sign_in",
      owner: getAddress(owner),
      safe: getAddress(safe),
      chain: t.chain,
      nonce,
      issued_at: issuedAt,
      message: this.message(owner, safe, t.chain, nonce, issuedAt),
      sign_with: "personal_sign (EIP-191) of `message` by the owner's wallet",
    };
  }

  async signIn(r: SignInRequest): Promise<Record<string, unknown>> {
    const now = this.ctx.clock.now();
    const time = statementTimeProblem(r.issued_at, now);
    if (time) throw refuse(time);
    if (!STATEMENT_NONCE_PATTERN.test(r.nonce)) throw refuse("nonce must be 16 to 128 characters of [A-Za-z0-9._:-]");
    const t = await this.treasuryOf(r.safe);
    const message = this.message(r.owner, r.safe, t.chain, r.nonce, r.issued_at);
    const signer = await recoverHashSigner(hashMessage(message), r.signature).catch(() => undefined);
    if (!signer || !isAddressEqual(signer, r.owner)) throw refuse(`the signature of the sign-in message does not recover to ${r.owner}`);
    const state = await this.safes.safeState(t.chain, r.safe);
    if (!state.owners.some((o) => isAddressEqual(o, r.owner)))
      throw new TreasuryError("not_an_owner", `${r.owner} is not an owner of the Safe ${r.safe} on ${t.chain}`, { recovered: signer });
    return this.ctx.tx.transaction(async () => {
      if (!(await this.ctx.stores.signedNonces.spend(getAddress(r.owner), r.nonce, "console_sign_in", now.toISOString())))
        throw refuse("this nonce was already used; ask for a fresh sign-in message");
      // the owner goes with the key: each use checks again that it is still an owner (console-ownership.ts)
      const key = await issueApiKey(this.ctx.stores.apiKeys, {
        kind: "console",
        treasuryId: t.id,
        ownerAddress: getAddress(r.owner),
        now,
        ttlMs: CONSOLE_SESSION_MS,
      });
      return {
        object: "console_session",
        session_key: key.key,
        expires_at: key.expiresAt,
        treasury_id: t.id,
        safe: getAddress(r.safe),
        owner: getAddress(r.owner),
        chain: t.chain,
        owners: state.owners,
        threshold: state.threshold,
      };
    });
  }
}
