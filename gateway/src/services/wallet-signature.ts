/**
 * The wallet's own signature as a credential, for the routes a wallet must
 * never be kept from by money: the downward legs (repay, withdraw, sell, exit). A
 * wallet-sovereign agent without an API key and without USDC to pay x402 signs
 * in with x402's sign-in-with-x extension instead (header `SIGN-IN-WITH-X`:
 * an EIP-4361 message signed by the wallet, EIP-1271 for a Safe), checked by
 * x402/sign-in-with-x.ts: this service's domain, this route's URL, a treasury
 * chain, a fresh issuedAt, and `resources` naming a digest of this exact
 * request (method, path, Idempotency-Key, body), so a signature cannot be
 * replayed on another request. Its nonce is spent once per signer before the
 * request runs. The treasury is the one the wallet stands behind (its proven
 * registration, else the one its payments created); a registration of its
 * address without proof is never chosen.
 */
import type { Request, Response } from "express";
import { CHAINS, TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import type { ChainGateway } from "../chain/chain-gateway";
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import { requestDigest, SIWX_HEADER, signInWithXExtension, verifySignInWithX } from "../x402/sign-in-with-x";
import type { ServiceContext } from "./context";

/** how old a sign-in may be when it arrives */
export const WALLET_SIGNATURE_MAX_AGE_SECONDS = 300;

const CHAIN_IDS = TREASURY_CHAINS.map((c) => CHAINS[c].chainId);

export const hasWalletSignature = (req: Request): boolean => typeof req.header(SIWX_HEADER) === "string";

export class WalletSignatureAuth {
  constructor(
    private readonly ctx: ServiceContext<"treasuries" | "signedNonces">,
    private readonly chain: ChainGateway,
  ) {}

  /** the digest a sign-in for this request must name in its resources */
  digestOf(req: Request): string {
    return requestDigest(req.method, req.originalUrl, req.header("idempotency-key"), req.body);
  }

  /** what a caller signs in with for this request (the 402's and 401's `extensions["sign-in-with-x"]`) */
  challenge(req: Request) {
    return this.challengeFor(req.path, this.digestOf(req));
  }

  /** the same for a request not yet made: an MCP tool call's REST twin (POST `path` with this Idempotency-Key and body) */
  challengeForCall(path: string, idempotencyKey: string | undefined, body: unknown) {
    return this.challengeFor(path, requestDigest("POST", path, idempotencyKey, body));
  }

  private challengeFor(path: string, digest: string) {
    return signInWithXExtension({
      publicBaseUrl: this.ctx.links.base,
      resourceUrl: this.ctx.links.url(path),
      chainIds: CHAIN_IDS,
      now: this.ctx.clock.now(),
      statement: "Sign in to act on your own treasury (a downward leg: free, never paid for).",
      requestDigest: digest,
    });
  }

  /** the 401 of a request with no credential on a route that takes a sign-in (x402 off): how to sign in */
  unauthorized(req: Request): TreasuryError {
    return new TreasuryError(
      "unauthorized",
      'a bearer key, or the wallet\'s own signature (sign-in-with-x: extensions["sign-in-with-x"]) is required',
      { extensions: { "sign-in-with-x": this.challenge(req) } },
      { "WWW-Authenticate": 'Bearer realm="treasury", SIWX realm="treasury"' },
    );
  }

  /** sets res.locals.credential for the wallet that signed this request, or throws the typed 401 */
  async authenticate(req: Request, res: Response): Promise<void> {
    const refuse = (why: string): never => {
      throw new TreasuryError(
        "unauthorized",
        `sign-in-with-x refused: ${why}`,
        { extensions: { "sign-in-with-x": this.challenge(req) } },
        { "WWW-Authenticate": 'Bearer realm="treasury", SIWX realm="treasury"' },
      );
    };
    const verified = await verifySignInWithX(req.header(SIWX_HEADER), {
      publicBaseUrl: this.ctx.links.base,
      resourceUrl: this.ctx.links.url(req.path),
      chainIds: CHAIN_IDS,
      now: this.ctx.clock.now(),
      maxAgeSeconds: WALLET_SIGNATURE_MAX_AGE_SECONDS,
      requestDigest: this.digestOf(req),
      verifyContractSignature: async (address, message, signature, chainId) => {
        const chain = TREASURY_CHAINS.find((c) => CHAINS[c].chainId === chainId);
        if (!chain || !this.chain.connected(chain)) return false;
        return this.chain.client(chain).verifyMessage({ address, message, signature });
      },
    });
    if (!verified.ok) return refuse(`${verified.reason}: ${verified.message}`);
    // the treasury the wallet stands behind on the chain it signed in for
    const chain = TREASURY_CHAINS.find((c) => CHAINS[c].chainId === verified.chainId)!;
    const treasury = await this.ctx.stores.treasuries.findOwnedByWallet(verified.address, chain);
    if (!treasury) return refuse(`no treasury on ${chain} stands behind ${verified.address} (register it with its ownership proof, or pay once with x402)`);
    if (!(await this.ctx.stores.signedNonces.spend(verified.address, verified.nonce, "sign_in_with_x", this.ctx.clock.now().toISOString()))) {
      return refuse("its nonce was used already: sign in again");
    }
    const credential: Credential = {
      kind: "wallet_signature",
      scope: `wallet:${verified.address.toLowerCase()}`,
      treasuryId: treasury.id,
      subject: verified.address,
    };
    res.locals.credential = credential;
    res.setHeader("X-Treasury-Id", treasury.id);
  }
}
