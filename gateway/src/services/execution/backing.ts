/**
 * What backs a treasury's actions, asked before any of them runs: the chain
 * (its Aave position, read from the chain), the sandbox's local fork (funded,
 * impersonated, steps provided), or a ledger in the store.
 *
 *   ledger only   a sandbox key's managed treasury: nothing outside the store
 *   own ledger    a managed registration that did not prove its wallet
 *   chain backed  every other treasury whose chain has an RPC
 *   sandboxed     chain backed, proven, not an operator's, on a local Anvil, an account (no code)
 *
 * The answers that cannot change (origin, execution mode) are kept per
 * treasury; "a contract" is kept per address (a Safe deployed later is seen).
 */
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { declarationOf, type TreasuryAction } from "@treasury/core/actions";
import type { Micro } from "@treasury/core/domain/money";
import { TreasuryError } from "@treasury/core/lib/errors";
import type { ChainGateway, ChainPosition } from "../../chain/chain-gateway";
import type { SandboxChain } from "../../chain/sandbox-chain";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";
import { isSafesOwnRegistration, notSafesRegistration } from "../safe-transaction-service";

/**
 * Did this registration prove its wallet? `proven`: a signed ownership
 * statement (EIP-712, or the Safe's EIP-1271), or the Safe's own safe_proof of
 * a delegation; `paid`: created by the wallet's own x402 payment, whose
 * EIP-3009 authorization the wallet signed (invariant 1 lets it stand for the
 * wallet the same way). An `unproven` registration is anyone's claim on an
 * address: nothing the service does on a chain may follow from it.
 */
export const provedWallet = (t: TreasuryRecord): boolean => t.ownership === "proven" || t.ownership === "paid";

/** a sandbox key's managed treasury: a simulated ledger in the store, never chain-backed, never an x402 payer's */
export const onLedgerOnly = (t: TreasuryRecord): boolean => t.origin === "sandbox_key" && t.executionMode === "managed";

/** a managed registration without proof: its actions apply to a sandbox ledger of its own, never to the wallet's chain state */
export const ownLedger = (t: TreasuryRecord): boolean => t.executionMode === "managed" && t.origin !== "sandbox_key" && !provedWallet(t);

/** how many treasuries' storeOnly answers are kept (oldest forgotten first) */
const LEDGER_ONLY_MEMORY = 10_000;

export class TreasuryBacking {
  /** what storeOnly answered per treasury: a treasury's origin and execution mode never change after it is created */
  private readonly ledgerOnly = new Map<string, boolean>();
  /** a contract wallet (a Safe): run by its owners, never funded or impersonated by the sandbox */
  private readonly contracts = new Map<string, Promise<boolean>>();

  constructor(
    private readonly ctx: ServiceContext<"treasuries">,
    readonly chain: ChainGateway,
    readonly sandbox: SandboxChain,
  ) {}

  async treasury(id: string): Promise<TreasuryRecord> {
    const t = await this.ctx.stores.treasuries.get(id);
    if (!t) throw new TreasuryError("treasury_not_found", `treasury ${id} does not exist`);
    return t;
  }

  /**
   * A treasury whose chain has an RPC reads its position from the chain, not
   * the sandbox ledger: wallet-mode treasuries (nothing moves without the
   * wallet's own signatures) and managed ones that proved their wallet (the
   * operator's Safe, a proven sandbox wallet). Demo treasuries of sandbox keys
   * and unproven managed registrations keep a ledger of their own.
   */
  chainBacked(t: TreasuryRecord): boolean {
    return this.chain.connected(t.chain) && t.origin !== "sandbox_key" && !ownLedger(t);
  }

  async chainPosition(t: TreasuryRecord): Promise<ChainPosition | null> {
    return this.chainBacked(t) ? this.chain.position(t.chain, t.walletAddress) : null;
  }

  /** the treasury's actions change nothing but the store (a sandbox key's ledger): one transaction can hold a whole request */
  async storeOnly(treasuryId: string): Promise<boolean> {
    let known = this.ledgerOnly.get(treasuryId);
    if (known === undefined) {
      known = onLedgerOnly(await this.treasury(treasuryId));
      if (this.ledgerOnly.size >= LEDGER_ONLY_MEMORY) this.ledgerOnly.delete(this.ledgerOnly.keys().next().value!);
      this.ledgerOnly.set(treasuryId, known);
    }
    return known;
  }

  /**
   * Does the sandbox provide for this treasury (chain/sandbox-chain.ts:
   * funding, impersonated managed runs, steps provided without a signature)?
   * Only for a registration that proved its wallet (proven, or paid by the
   * wallet's own x402 payment), chain-backed on a local Anvil, whose wallet is
   * an account (no code); never for an unproven registration (anyone can name
   * anyone's address) nor for an operator's Safe (funded and run by its owners).
   */
  async sandboxed(t: TreasuryRecord): Promise<boolean> {
    return provedWallet(t) && (await this.sandboxWallet(t));
  }

  /**
   * A wallet-mode registration that proved nothing, on the sandbox's chain: its envelope is made without touching
   * the chain (nothing funded or prepared ahead; its balance check is the funded one, `asFundedOnSignature`), and
   * a relayed transaction the registered wallet signed is the proof that its sender holds the key: only then is
   * the wallet funded, on top of what it holds (`fundOnSignature`), and the envelope's other steps provided.
   */
  async fundableOnSignature(t: TreasuryRecord): Promise<boolean> {
    return t.executionMode === "wallet" && t.origin !== "sandbox_key" && !provedWallet(t) && (await this.sandboxWallet(t));
  }

  /** chain backed, not an operator's, on a local Anvil, an account (no code) */
  private async sandboxWallet(t: TreasuryRecord): Promise<boolean> {
    return this.chainBacked(t) && t.origin !== "operator" && (await this.sandbox.active(t.chain)) && !(await this.isContract(t));
  }

  /** the position an envelope of a registration fundable on signature is checked against: the wallet's USDC with what its signature will bring */
  async asFundedOnSignature(
    t: TreasuryRecord,
    request: { action: TreasuryAction; amountMicro: Micro },
    chain: ChainPosition | null,
  ): Promise<ChainPosition | null> {
    if (!chain || !(await this.fundableOnSignature(t))) return chain;
    const add = declarationOf(request.action).sandboxUsdcMicro(request.amountMicro);
    return { ...chain, holdings: { ...chain.holdings, walletUsdc: chain.holdings.walletUsdc + add } };
  }

  isContract(t: TreasuryRecord): Promise<boolean> {
    const id = `${t.chain}:${t.walletAddress.toLowerCase()}`;
    let known = this.contracts.get(id);
    if (!known) {
      known = this.chain
        .client(t.chain)
        .getCode({ address: t.walletAddress })
        .then((code) => code !== undefined && code !== "0x");
      this.contracts.set(id, known);
      // only "a contract" is kept: an address without code may be a Safe deployed later
      known.then(
        (yes) => yes || this.contracts.delete(id),
        () => this.contracts.delete(id),
      );
    }
    return known;
  }

  /** on the sandbox's chain: gas ETH and the USDC the action takes, so any new wallet can try every action; true when it changed a balance */
  async fundForAction(t: TreasuryRecord, request: { action: TreasuryAction; amountMicro: Micro }): Promise<boolean> {
    if (!(await this.sandboxed(t))) return false;
    return this.fund(t, request, false);
  }

  /**
   * A transaction signed by the wallet of a registration fundable on signature was relayed (the caller checked its
   * signer): gas and the action's USDC added on top of what the wallet holds, so no step the wallet did not sign
   * spends anything it held. Once per envelope (the caller's claim).
   */
  async fundOnSignature(t: TreasuryRecord, request: { action: TreasuryAction; amountMicro: Micro }): Promise<boolean> {
    if (!(await this.fundableOnSignature(t))) return false;
    return this.fund(t, request, true);
  }

  private async fund(t: TreasuryRecord, request: { action: TreasuryAction; amountMicro: Micro }, onTop: boolean): Promise<boolean> {
    const usdcNeeded = declarationOf(request.action).sandboxUsdcMicro(request.amountMicro);
    try {
      const funded = await this.sandbox.fund(t.chain, AAVE_MARKETS[t.chain].usdc, t.walletAddress, usdcNeeded, onTop);
      return funded.gas_eth_set || funded.usdc_added_micro > 0n;
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `the sandbox could not fund ${t.walletAddress} on ${t.chain}: ${(err as Error).message}`);
    }
  }

  /**
   * A managed action on a Safe is queued only for the Safe's own registration
   * (the managed treasury the Safe itself proved): the SafeTx hash does not
   * name the treasury, so another registration's item would take the owners'
   * signatures meant for the Safe's own. Refused before anything is written.
   */
  async refuseForeignSafe(t: TreasuryRecord): Promise<void> {
    if (t.executionMode !== "managed" || t.origin === "sandbox_key" || !this.chain.connected(t.chain)) return;
    let contract: boolean;
    try {
      contract = await this.isContract(t);
    } catch (err) {
      throw new TreasuryError("chain_unavailable", `could not read the code at ${t.walletAddress} on ${t.chain}: ${(err as Error).message.split("\n")[0]}`);
    }
    if (contract) await this.refuseUnlessSafesOwn(t);
  }

  /** the Safe's own registration, as it is now (checked again with the proposal, in its transaction) */
  async refuseUnlessSafesOwn(t: TreasuryRecord): Promise<void> {
    if (!(await isSafesOwnRegistration(this.ctx.stores.treasuries, t.id, t.walletAddress))) {
      throw notSafesRegistration(t.id, t.walletAddress, "a managed action on the Safe is not queued for it (nothing was stored)");
    }
  }
}
