/**
 * Verifies a signed statement (packages/core/src/domain/statements.ts) against the wallet it
 * claims to come from, and spends its nonce.
 *
 * - an externally owned account: ECDSA recovery of the EIP-712 hash;
 * - a contract wallet (code at the address on the treasury's chain, e.g. a
 *   Safe): EIP-1271 `isValidSignature(hash, signature)` must answer 0x1626ba7e.
 *
 * Every failure is a typed 400 with the reason; nothing is written until the
 * caller spends the nonce inside its own transaction (`spendNonce`).
 */
import { getAddress, isAddressEqual, type Hex } from "viem";
import { recoverHashSigner } from "../lib/recover-signer";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { EIP1271_ABI, EIP1271_MAGIC_VALUE } from "@treasury/core/contracts/protection-module";
import { statementHash, statementTimeProblem, STATEMENT_NONCE_PATTERN, type Statement } from "@treasury/core/domain/statements";
import { TreasuryError, type ErrorCode } from "@treasury/core/lib/errors";
import type { ChainGateway } from "../chain/chain-gateway";
import type { ServiceContext } from "./context";

export interface SignedProof {
  signature: string;
  nonce: string;
  issued_at: string;
}

export type ProofMethod = "eip712_ecdsa" | "eip1271";

const invalid = (code: StatementErrorCode, reason: string) => new TreasuryError(code, reason, { reason });

/** the refusal a failed proof answers with: of a treasury's owner, or of a Safe's */
export type StatementErrorCode = Extract<ErrorCode, "invalid_ownership_proof" | "invalid_safe_proof">;

export class StatementVerifier {
  constructor(
    private readonly ctx: ServiceContext<"signedNonces">,
    private readonly chain: ChainGateway,
  ) {}

  /** checks time, nonce shape and freshness, and the signature; throws a typed 400 (code `code`) */
  async verify(
    code: StatementErrorCode,
    o: { chain: TreasuryChain; signer: `0x${string}`; statement: Statement; proof: SignedProof; contractOnly?: boolean },
  ): Promise<ProofMethod> {
    const time = statementTimeProblem(o.proof.issued_at, this.ctx.clock.now());
    if (time) throw invalid(code, time);
    if (!STATEMENT_NONCE_PATTERN.test(o.proof.nonce)) throw invalid(code, "nonce must be 16 to 128 characters of [A-Za-z0-9._:-]");
    if (await this.nonceUsed(o.signer, o.proof.nonce)) throw invalid(code, "this nonce was already used by this wallet; sign a statement with a fresh nonce");
    const hash = statementHash(o.statement);
    if (!o.contractOnly) {
      const recovered = await recoverHashSigner(hash, o.proof.signature as Hex).catch(() => undefined);
      if (recovered && isAddressEqual(recovered, o.signer)) return "eip712_ecdsa";
    }
    // not the EOA's signature: a contract wallet may still vouch for it (EIP-1271)
    if (!this.chain.connected(o.chain)) {
      throw invalid(
        code,
        `the signature does not recover to ${o.signer}, and contract-wallet (EIP-1271) signatures need an RPC for ${o.chain}, which this service does not have`,
      );
    }
    const client = this.chain.client(o.chain);
    const code_ = await client.getCode({ address: o.signer }).catch(() => {
      throw new TreasuryError("chain_unavailable", `could not read ${o.signer} on ${o.chain}`);
    });
    if (!code_ || code_ === "0x") throw invalid(code, `the signature does not recover to ${o.signer} (and ${o.signer} is not a contract wallet on ${o.chain})`);
    const answer = await client
      .readContract({ address: o.signer, abi: EIP1271_ABI, functionName: "isValidSignature", args: [hash, o.proof.signature as Hex] })
      .catch(() => undefined);
    if (answer !== EIP1271_MAGIC_VALUE) throw invalid(code, `the contract wallet ${o.signer} did not accept the signature (EIP-1271 isValidSignature)`);
    return "eip1271";
  }

  nonceUsed(signer: string, nonce: string): Promise<boolean> {
    return this.ctx.stores.signedNonces.used(signer, nonce);
  }

  /** spend a verified statement's nonce; call inside the transaction that acts on it (false: spent meanwhile) */
  spendNonce(signer: string, nonce: string, purpose: string): Promise<boolean> {
    return this.ctx.stores.signedNonces.spend(getAddress(signer), nonce, purpose, this.ctx.clock.now().toISOString());
  }
}
