/**
 * The project's own x402 facilitator (scheme `exact`, versions 1 and 2) for a
 * local Base Sepolia chain. A version 2 proof carries the same EIP-3009
 * authorization as a version 1 one: it is checked against its `accepted`
 * requirements, then verified and settled by the same code, and answered with
 * the CAIP-2 network (`eip155:84532`). Beyond x402's stock verifier it checks on chain that the
 * authorization nonce is unused (`authorizationState`), that the asset's
 * EIP-712 domain (name, version, chain id) is what the requirements claim, and
 * simulates the transfer before it settles. What does not change is read once: the chain's id, and a
 * token's code, name and version for TOKEN_FACTS_TTL_MS; an EOA's signature is checked by native recovery
 * (`withNativeEoaCheck`), a contract wallet's as viem checks it. Settlements are concurrent, not
 * one lane: their transactions are sent one at a time, each at the chain's pending nonce read just
 * before it (so a restarted facilitator continues after what is in the mempool), and their receipts are
 * awaited together. A transaction that could not be sent takes no nonce: viem's nonce manager, used
 * before, had handed the next ones out already, and every settlement after the gap waited in the
 * mempool until its receipt wait gave up (180 s; test/scale/settlement.test.ts). A reverted
 * settlement is a typed failure.
 *
 * A settle verifies again, except a payment this facilitator found valid within VERIFIED_REUSE_MS (the
 * exact payment and requirements, once): what verify checked off chain is a function of them, and what it
 * checked on chain (funds, the nonce unused, the signature, the validity window) the settlement's gas
 * estimate checks again, since it runs the transfer at the chain's state now. When that estimate fails, the
 * full verification runs and its reason is the answer. The second verification was 7-12 ms of a settle on
 * the local chain (bench/README.md, item 40).
 *
 * Settling is idempotent per authorization (payer, nonce), with the chain as
 * the durable record: a second settle of an authorization joins the one in
 * flight in this process, and an authorization already used on chain (settled
 * before a crash of the gateway or of this facilitator) answers with the
 * transaction that used it (the token's AuthorizationUsed event) instead of
 * failing. So a gateway that takes over a dead request's payment settles it
 * once and never charges twice.
 */
import { createPublicClient, createWalletClient, getAddress, publicActions, type Hex } from "viem";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { verify as x402Verify } from "x402/facilitator";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "x402/types";
import { nonceTaken, shortError, TOKEN_ABI, transferCall, type ExactEvmPayload } from "./authorization-call";
import type { BatchSettlementFacilitator } from "./batch-settlement";
import { withNativeEoaCheck } from "./native-eoa-check";
import type { UptoFacilitator } from "./upto";

/** the schemes beside `exact` this facilitator settles, when their keys are given */
export interface OtherSchemes {
  batch?: BatchSettlementFacilitator;
  upto?: UptoFacilitator;
}
import { asVersion1, NETWORK, NETWORK_V2, type AnyPayment, type AnyRequirements } from "./payment-versions";

/** how long a payment found valid by verify is taken as verified by its settle (see the file's comment) */
export const VERIFIED_REUSE_MS = 5_000;
/** at most this many verified payments are remembered (the oldest are forgotten first) */
const VERIFIED_KEPT = 10_000;

/** how long what a token says of itself (its code, EIP-712 name and version) is taken as known */
export const TOKEN_FACTS_TTL_MS = 60_000;

export class LocalFacilitator {
  private readonly publicClient;
  private readonly wallet;
  /** settlements in flight, by authorization: a second settle of one joins the first */
  private readonly inFlight = new Map<string, Promise<SettleResponse>>();
  /** the chain's id (an RPC's chain does not change under it) */
  private chainId?: Promise<number>;
  /** per token: has code, its EIP-712 name and version, read at most once per TOKEN_FACTS_TTL_MS */
  private readonly tokenFacts = new Map<string, { at: number; facts: Promise<{ code: boolean; name: string; version: string }> }>();

  /** payments found valid, by the text of the payment and its requirements, with when: oldest first */
  private readonly verified = new Map<string, number>();
  private readonly verifiedReuseMs: number;

  /** the other schemes, each settled by the official @x402/evm scheme with a key of its own (batch-settlement.ts, upto.ts) */
  private readonly others: ReadonlyMap<string, BatchSettlementFacilitator | UptoFacilitator>;

  constructor(opts: { rpcUrl: string; privateKey: Hex; verifiedReuseMs?: number; schemes?: OtherSchemes }) {
    this.verifiedReuseMs = opts.verifiedReuseMs ?? VERIFIED_REUSE_MS;
    // by the scheme name each settles (a version 2 payment's `accepted.scheme`)
    this.others = new Map(Object.values(opts.schemes ?? {}).map((s: BatchSettlementFacilitator | UptoFacilitator) => [s.supportedKind().scheme, s]));
    const transport = rpcHttp(opts.rpcUrl, { retryCount: 0 });
    this.publicClient = withNativeEoaCheck(createPublicClient({ chain: baseSepolia, transport, pollingInterval: 50 }));
    this.wallet = withNativeEoaCheck(
      createWalletClient({ account: privateKeyToAccount(opts.privateKey), chain: baseSepolia, transport, pollingInterval: 50 }).extend(publicActions),
    );
  }

  /** the tail of the settlement transactions being sent (one at a time; their receipts are awaited together) */
  private sending: Promise<unknown> = Promise.resolve();
  /**
   * The nonce of the next settlement: the chain's pending count, read when unknown, then counted here while
   * this facilitator's sends succeed. Any failed send forgets it (read again next time): a transaction that
   * never reached the node leaves no gap behind it.
   */
  private nextNonce?: number;

  /**
   * Gas and fees of a settlement (settlements estimate together, outside the turn of sending); a quarter more gas
   * than estimated, as a margin for the state moving between the estimate and the block (only the gas used is paid).
   */
  private async estimateSettlement(asset: `0x${string}`, p: ExactEvmPayload) {
    const call = transferCall(asset, p);
    const [gas, fees] = await Promise.all([
      this.publicClient.estimateContractGas({ ...call, account: this.wallet.account }),
      this.publicClient.estimateFeesPerGas(),
    ]);
    return { ...call, gas: (gas * 5n) / 4n, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  }

  /**
   * Send one estimated settlement transaction, after the one before it was sent, at the next nonce. A transaction
   * that fails before it reaches the node (its gas estimate reverted: the payer spent the funds meanwhile) is never
   * sent, so it takes no nonce and nothing queues behind a gap. A nonce the node calls used (another sender of
   * this account: a second facilitator with the same key) is read again from the chain and the send made once more.
   */
  private sendSettlement(tx: Awaited<ReturnType<LocalFacilitator["estimateSettlement"]>>): Promise<Hex> {
    const send = async (): Promise<Hex> => {
      for (let attempt = 0; ; attempt++) {
        const nonce = this.nextNonce ?? (await this.publicClient.getTransactionCount({ address: this.wallet.account.address, blockTag: "pending" }));
        try {
          const hash = await this.wallet.writeContract({ ...tx, nonce });
          this.nextNonce = nonce + 1;
          return hash;
        } catch (err) {
          this.nextNonce = undefined;
          if (attempt > 0 || !nonceTaken(err)) throw err;
        }
      }
    };
    const sent = this.sending.then(send, send);
    this.sending = sent.catch(() => undefined);
    return sent;
  }

  /** what the token says of itself, kept TOKEN_FACTS_TTL_MS (each verify read it four times: code, name, version, and the chain id) */
  private token(asset: `0x${string}`): Promise<{ code: boolean; name: string; version: string }> {
    const now = Date.now();
    const known = this.tokenFacts.get(asset);
    if (known && now - known.at < TOKEN_FACTS_TTL_MS) return known.facts;
    const facts = (async () => {
      const code = await this.publicClient.getCode({ address: asset });
      if (!code || code === "0x") return { code: false, name: "", version: "" };
      const [name, version] = await Promise.all([
        this.publicClient.readContract({ address: asset, abi: TOKEN_ABI, functionName: "name" }),
        this.publicClient.readContract({ address: asset, abi: TOKEN_ABI, functionName: "version" }),
      ]);
      return { code: true, name, version };
    })();
    this.tokenFacts.set(asset, { at: now, facts });
    facts.catch(() => this.tokenFacts.delete(asset)); // a failed read is asked again next time
    return facts;
  }

  /** settlements in flight now */
  get settling(): number {
    return this.inFlight.size;
  }

  get address(): `0x${string}` {
    return this.wallet.account.address;
  }

  /** the scheme other than `exact` a version 2 payment is made in, when this facilitator settles it */
  private otherScheme(payment: AnyPayment): BatchSettlementFacilitator | UptoFacilitator | undefined {
    const scheme = (payment as { accepted?: { scheme?: unknown } }).accepted?.scheme;
    return payment.x402Version === 2 && typeof scheme === "string" ? this.others.get(scheme) : undefined;
  }

  /** x402 version 2's /supported: each version's kind, the extensions, and the settling account per network family */
  supported() {
    return {
      kinds: [
        { x402Version: 2, scheme: "exact", network: NETWORK_V2 },
        { x402Version: 1, scheme: "exact", network: NETWORK },
        ...[...this.others.values()].map((s) => s.supportedKind()),
      ],
      extensions: [],
      signers: { "eip155:*": [this.address] },
    };
  }

  /** verify a payment of either version */
  async verify(payment: AnyPayment, requirements: AnyRequirements): Promise<VerifyResponse> {
    const other = this.otherScheme(payment);
    if (other) return (await other.verify(payment as never, requirements as never)) as unknown as VerifyResponse;
    const v1 = asVersion1(payment, requirements);
    const payer = (payment.payload as unknown as ExactEvmPayload | undefined)?.authorization?.from;
    if ("invalid" in v1) return { isValid: false, invalidReason: v1.invalid as VerifyResponse["invalidReason"], payer };
    return this.verifyV1(v1.payment, v1.requirements);
  }

  /** `remember`: a valid payment is remembered for its settle (not when settle itself verifies) */
  private async verifyV1(payment: PaymentPayload, requirements: PaymentRequirements, remember = true): Promise<VerifyResponse> {
    const p = payment.payload as unknown as ExactEvmPayload;
    const payer = p?.authorization?.from;
    const invalid = (invalidReason: string): VerifyResponse => ({ isValid: false, invalidReason: invalidReason as VerifyResponse["invalidReason"], payer });
    if (payment.x402Version !== 1) return invalid("invalid_x402_version");
    if (payment.scheme !== "exact" || requirements.scheme !== "exact") return invalid("unsupported_scheme");
    if (payment.network !== NETWORK || requirements.network !== NETWORK) return invalid("invalid_network");
    if (!p?.authorization || !p.signature) return invalid("invalid_payload");
    try {
      this.chainId ??= this.publicClient.getChainId().catch((err: unknown) => {
        this.chainId = undefined;
        throw err;
      });
      if ((await this.chainId) !== baseSepolia.id) return invalid("invalid_network");
      const asset = getAddress(requirements.asset);
      const token = await this.token(asset);
      if (!token.code) return invalid("invalid_payment_requirements");
      // the EIP-712 domain the signature was made for must be the token's own
      const extra = (requirements.extra ?? {}) as { name?: string; version?: string };
      if (extra.name !== token.name || extra.version !== token.version) return invalid("invalid_payment_requirements");

      // the stock verification, the nonce's state and the simulation are reads of one state: asked together,
      // judged in this order (they were three rounds to the chain one after the other)
      const [stock, used, simulated] = await Promise.allSettled([
        x402Verify(this.publicClient as never, payment, requirements),
        this.publicClient.readContract({
          address: asset,
          abi: TOKEN_ABI,
          functionName: "authorizationState",
          args: [p.authorization.from, p.authorization.nonce],
        }),
        this.simulateTransfer(asset, p),
      ]);
      if (stock.status === "rejected") throw stock.reason;
      if (!stock.value.isValid) return stock.value;
      if (used.status === "rejected") throw used.reason;
      if (used.value) return invalid("invalid_exact_evm_payload_authorization_nonce_used");
      if (simulated.status === "rejected") throw simulated.reason;
      if (remember) this.rememberVerified(payment, requirements);
      return { isValid: true, invalidReason: undefined, payer };
    } catch (err) {
      // settled by a concurrent request between the nonce check and the simulation: say so, not "reverted"
      const usedMeanwhile = await this.publicClient
        .readContract({
          address: getAddress(requirements.asset),
          abi: TOKEN_ABI,
          functionName: "authorizationState",
          args: [p.authorization.from, p.authorization.nonce],
        })
        .catch(() => false);
      if (usedMeanwhile) return invalid("invalid_exact_evm_payload_authorization_nonce_used");
      return invalid(`invalid_transaction_state: ${shortError(err)}`);
    }
  }

  private rememberVerified(payment: PaymentPayload, requirements: PaymentRequirements): void {
    const now = Date.now();
    for (const [key, at] of this.verified) {
      if (now - at < this.verifiedReuseMs && this.verified.size < VERIFIED_KEPT) break;
      this.verified.delete(key);
    }
    const key = JSON.stringify([payment, requirements]);
    this.verified.delete(key);
    this.verified.set(key, now);
  }

  /** was this exact payment, with these exact requirements, found valid here within the reuse window? (once: the entry is taken) */
  private takeVerified(payment: PaymentPayload, requirements: PaymentRequirements): boolean {
    const key = JSON.stringify([payment, requirements]);
    const at = this.verified.get(key);
    this.verified.delete(key);
    return at !== undefined && Date.now() - at < this.verifiedReuseMs;
  }

  /** the settlement's call, simulated from the settling account (a revert rejects) */
  private async simulateTransfer(asset: `0x${string}`, p: ExactEvmPayload) {
    return this.publicClient.simulateContract({ ...transferCall(asset, p), account: this.wallet.account });
  }

  /**
   * The transaction that used this authorization on chain, if it was used and
   * that transaction succeeded (the settlement already happened).
   */
  async usedBy(asset: `0x${string}`, from: `0x${string}`, nonce: Hex): Promise<`0x${string}` | undefined> {
    const used = await this.publicClient.readContract({ address: asset, abi: TOKEN_ABI, functionName: "authorizationState", args: [from, nonce] });
    if (!used) return undefined;
    const logs = await this.publicClient.getContractEvents({
      address: asset,
      abi: TOKEN_ABI,
      eventName: "AuthorizationUsed",
      args: { authorizer: from, nonce },
      fromBlock: 0n,
    });
    return logs.at(-1)?.transactionHash ?? undefined;
  }

  /** verify again (or, just verified here, run the transfer's estimate: see the file's comment), then settle (either version, answered in its version); concurrent across authorizations, idempotent per authorization */
  async settle(anyPayment: AnyPayment, anyRequirements: AnyRequirements): Promise<SettleResponse> {
    const other = this.otherScheme(anyPayment);
    if (other) return (await other.settle(anyPayment as never, anyRequirements as never)) as unknown as SettleResponse;
    const v1 = asVersion1(anyPayment, anyRequirements);
    if ("invalid" in v1) {
      const payer = (anyPayment.payload as unknown as ExactEvmPayload | undefined)?.authorization?.from;
      return {
        success: false,
        errorReason: v1.invalid as SettleResponse["errorReason"],
        transaction: "",
        network: anyPayment.x402Version === 2 ? (NETWORK_V2 as never) : NETWORK,
        payer,
      };
    }
    const settled = await this.settleV1(v1.payment, v1.requirements);
    return v1.version === 2 ? { ...settled, network: NETWORK_V2 as never } : settled;
  }

  private settleV1(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const auth = (payment.payload as unknown as ExactEvmPayload)?.authorization;
    const key = auth ? `${auth.from.toLowerCase()}:${auth.nonce.toLowerCase()}` : "";
    const joined = key ? this.inFlight.get(key) : undefined;
    if (joined) return joined;
    const run = async (): Promise<SettleResponse> => {
      const payer = auth?.from;
      const settledBefore = async () => {
        if (!auth) return undefined;
        const tx = await this.usedBy(getAddress(requirements.asset), auth.from, auth.nonce).catch(() => undefined);
        return tx ? ({ success: true, transaction: tx, network: NETWORK, payer } as SettleResponse) : undefined;
      };
      // the settlement's gas and fees are estimated while it is verified (reads of one state; an invalid proof's
      // estimate is dropped)
      const estimated = (async () => this.estimateSettlement(getAddress(requirements.asset), payment.payload as unknown as ExactEvmPayload))();
      estimated.catch(() => undefined);
      // an authorization already used on chain fails verification (its nonce's state), and is then answered with
      // the transaction that used it: no look of its own first. A payment verified here just now is not verified
      // again when the estimate (the transfer run at the chain's state now) succeeds; when it fails, verify says why.
      const fresh =
        this.takeVerified(payment, requirements) &&
        (await estimated.then(
          () => true,
          () => false,
        ));
      const check = fresh ? { isValid: true as const, invalidReason: undefined } : await this.verifyV1(payment, requirements, false);
      if (!check.isValid)
        return (
          (await settledBefore()) ?? {
            success: false,
            errorReason: check.invalidReason as SettleResponse["errorReason"],
            transaction: "",
            network: NETWORK,
            payer,
          }
        );
      try {
        // verified just now (x402's stock checks included); x402's settle would verify again, then send with viem's nonce manager
        const hash = await this.sendSettlement(await estimated);
        // a node that mines on receipt (the local chain) has it at once: one look, then the wait
        const receipt = (await this.wallet.getTransactionReceipt({ hash }).catch(() => undefined)) ?? (await this.wallet.waitForTransactionReceipt({ hash }));
        const settled: SettleResponse =
          receipt.status === "success"
            ? { success: true, transaction: hash, network: NETWORK, payer }
            : { success: false, errorReason: "invalid_transaction_state", transaction: hash, network: NETWORK, payer };
        return settled.success ? settled : ((await settledBefore()) ?? settled);
      } catch (err) {
        return (
          (await settledBefore()) ?? {
            success: false,
            errorReason: `settlement_reverted: ${shortError(err)}` as SettleResponse["errorReason"],
            transaction: "",
            network: NETWORK,
            payer,
          }
        );
      }
    };
    const next = run();
    if (key) {
      this.inFlight.set(key, next);
      void next.finally(() => this.inFlight.delete(key));
    }
    return next;
  }
}
