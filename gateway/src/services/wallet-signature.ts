/**
 * The wallet's own signature as a credential, for the routes a wallet must never be kept from by money:
 * the downward legs (repay, withdraw, sell, exit), and the reads of its own treasury (state, health,
 * policy state, fee audit trail, a receipt by its id), so an agent that paid once never pays again to see
 * what it paid for. A wallet-sovereign agent without an API key and without USDC to pay x402 signs in with
 * x402's sign-in-with-x extension instead (header `SIGN-IN-WITH-X`: an EIP-4361 message signed by the
 * wallet, EIP-1271 for a Safe), checked by x402/sign-in-with-x.ts: this service's domain, this route's URL,
 * a treasury chain, a fresh issuedAt, and `resources` naming a digest of this exact request (method, path
 * and query, Idempotency-Key, body; a GET has none), so a signature cannot be replayed on another route or
 * request. Its nonce is spent once per signer before the request runs.
 *
 * Trust, as the x402 gate's for a payer (x402/payer-treasury.ts): the signature proves an address, and the
 * address reaches only the treasury it stands behind on the chain it signed for: one registered with its
 * signed ownership proof, else the one its own paid call created. A bare registration of its address is
 * never chosen; a wallet that stands behind none is refused (401, the typed error body with a fresh
 * challenge). Every read then answers for that treasury only: another treasury's receipt is not found.
 *
 * Rate limits, as for a payer (http/rate-limit.ts, app.ts): a sign-in whose EOA signature verifies for this
 * URL, with its nonce unspent, from a wallet a treasury stands behind, is counted in the bucket of that
 * address (the bucket its x402 payments are counted in); any other sign-in is an unproven identity,
 * counted by client address in the write window.
 */
import type { AnswerView as Response, RequestView as Request } from "./request-view";
import { isErc6492Signature, type Address, type Hex } from "viem";
import { CHAINS, TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import type { ChainGateway } from "../chain/chain-gateway";
import type { Credential } from "@treasury/core/domain/credential";
import { TreasuryError } from "@treasury/core/lib/errors";
import { requestDigest, SIWX_HEADER, signInWithXExtension, verifySignInWithX } from "../x402/sign-in-with-x";
import type { ServiceContext } from "./context";

/** how old a sign-in may be when it arrives */
export const WALLET_SIGNATURE_MAX_AGE_SECONDS = 300;

const CHAIN_IDS = TREASURY_CHAINS.map((c) => CHAINS[c].chainId);
const BODILESS = new Set(["GET", "HEAD"]);
/** the treasury chain of a chain id a sign-in was accepted on (one of CHAIN_IDS) */
const chainOf = (chainId: number) => TREASURY_CHAINS.find((c) => CHAINS[c].chainId === chainId)!;

export const hasWalletSignature = (req: Request): boolean => typeof req.header(SIWX_HEADER) === "string";

export class WalletSignatureAuth {
  constructor(
    private readonly ctx: ServiceContext<"treasuries" | "signedNonces">,
    private readonly chain: ChainGateway,
  ) {}

  /** the digest a sign-in for this request must name in its resources (a GET or HEAD has no body: null) */
  digestOf(req: Request): string {
    return requestDigest(req.method, req.originalUrl, req.header("idempotency-key"), BODILESS.has(req.method) ? undefined : req.body);
  }

  /** what a caller signs in with for this request (the 402's and 401's `extensions["sign-in-with-x"]`) */
  challenge(req: Request) {
    return this.challengeFor(req.path, this.digestOf(req));
  }

  /**
   * The same for a request not yet made: an MCP tool call's REST twin, POST `path` with this Idempotency-Key
   * and body, or GET `path` (a read tool with a sign-in takes no arguments: its twin's URL is the path).
   */
  challengeForCall(path: string, idempotencyKey: string | undefined, body: unknown, method: "GET" | "POST" = "POST") {
    return this.challengeFor(path, requestDigest(method, path, idempotencyKey, method === "GET" ? undefined : body));
  }

  private challengeFor(path: string, digest: string) {
    return signInWithXExtension({
      publicBaseUrl: this.ctx.links.base,
      resourceUrl: this.ctx.links.url(path),
      chainIds: CHAIN_IDS,
      now: this.ctx.clock.now(),
      statement: "Sign in to your own treasury: its downward legs and its reads are free with the wallet's signature.",
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

  /**
   * The rate limiter's identity of a request that signs in (app.ts), chosen as a payer's: the signer's address,
   * lower case (the bucket its x402 payments are counted in), when its EOA signature verifies for this URL, its
   * nonce is unspent and a treasury stands behind it on the chain it signed for; else null, an unproven
   * identity. Nothing here asks a chain (a Safe's EIP-1271 sign-in is unproven to the limiter) or spends the
   * nonce, and the request's digest is not checked (its body is not read yet): the route checks it all again.
   */
  async provenSigner(req: Request): Promise<string | null> {
    const verified = await verifySignInWithX(req.header(SIWX_HEADER), {
      publicBaseUrl: this.ctx.links.base,
      resourceUrl: this.ctx.links.url(req.path),
      chainIds: CHAIN_IDS,
      now: this.ctx.clock.now(),
      maxAgeSeconds: WALLET_SIGNATURE_MAX_AGE_SECONDS,
    });
    if (!verified.ok) return null;
    if (!(await this.ctx.stores.treasuries.findOwnedByWallet(verified.address, chainOf(verified.chainId)))) return null;
    if (await this.ctx.stores.signedNonces.used(verified.address, verified.nonce)) return null;
    return verified.address.toLowerCase();
  }

  /**
   * Is this a contract wallet's own signature (EIP-1271)? Asked of the chain only for a wallet a treasury stands
   * behind on that chain, with code there: a sign-in for any other address costs no chain call. An ERC-6492
   * wrapper (a factory call of the signer's choosing, run by the node to deploy the wallet first) is refused.
   */
  private async contractSigned(address: Address, message: string, signature: Hex, chainId: number): Promise<boolean> {
    const chain = TREASURY_CHAINS.find((c) => CHAINS[c].chainId === chainId);
    if (!chain || !this.chain.connected(chain) || isErc6492Signature(signature)) return false;
    if (!(await this.ctx.stores.treasuries.findOwnedByWallet(address, chain))) return false;
    const client = this.chain.client(chain);
    const code = await client.getCode({ address });
    if (code === undefined || code === "0x") return false;
    return client.verifyMessage({ address, message, signature });
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
      verifyContractSignature: (address, message, signature, chainId) => this.contractSigned(address, message, signature, chainId),
    });
    if (!verified.ok) return refuse(`${verified.reason}: ${verified.message}`);
    // the treasury the wallet stands behind on the chain it signed in for
    const chain = chainOf(verified.chainId);
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
