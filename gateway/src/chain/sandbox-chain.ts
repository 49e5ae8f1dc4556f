/**
 * The sandbox on a local test chain. The spec promises that anyone can
 * register a sandbox treasury for a wallet address and try every action; on a
 * chain-backed stack that needs gas ETH, test USDC and, for a client that
 * signs only the envelope's one `unsigned_transaction`, the steps around it.
 * This module provides them with the chain's own test methods, and only on a
 * local Anvil (a loopback RPC whose client version says `anvil`): never on a
 * chain that is not the sandbox's. Which wallets it may act on is decided by
 * its caller (services/action-service.ts `sandboxed`): only the wallet of a
 * registration that proved it (an ownership proof, or the wallet's own x402
 * payment), never an unproven registration's (anyone can name any address)
 * nor a contract wallet.
 *
 *   gas ETH        anvil_setBalance (1 ETH when the wallet holds less than 0.01)
 *   ERC-20 units   anvil_setStorageAt on the token's balance / allowance
 *                  mapping; the mapping's slot is found by probing (write a
 *                  sentinel, read it back through balanceOf / allowance,
 *                  restore), so it works for TestUSDC, WETH9 and FiatToken alike
 *   a step         provided without a signature: a transfer moves balances
 *                  (the fee reaches the fee recipient from the wallet), an
 *                  approval sets the allowance, a swap moves the wallet's USDC
 *                  into the pool and the quoted minimum out of it
 *   managed runs   anvil_impersonateAccount: the step is sent from the wallet
 *
 * Storage writes never touch the wallet's nonce, so a client that fills its
 * next nonce from the chain signs the main call exactly as it would anyway.
 */
import { V3_CORE_FACTORY_ADDRESSES } from "@uniswap/sdk-core";
import { decodeFunctionData, encodeAbiParameters, getAddress, keccak256, pad, parseAbi, toHex, type Hex } from "viem";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { SWAP_ROUTER_02_ABI } from "@treasury/core/contracts/uniswap";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { ChainGateway } from "./chain-gateway";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
const MIN_GAS_WEI = 10n ** 16n;
const GAS_TOPUP_WEI = 10n ** 18n;
const PROBE_SLOTS = 32;
const FACTORY_ABI = parseAbi(["function getPool(address tokenA, address tokenB, uint24 fee) view returns (address)"]);

export type SandboxMode = "auto" | "off";

/** how a step was carried out in the sandbox, kept on the step's receipt */
export interface ProvidedStep {
  object: "provided_step";
  provided_by: "sandbox";
  method: "anvil_setStorageAt";
  effect: string;
}

export class SandboxChain {
  private readonly local = new Map<TreasuryChain, Promise<boolean>>();
  private readonly balanceSlots = new Map<string, Promise<bigint>>();
  private readonly allowanceSlots = new Map<string, Promise<bigint>>();

  constructor(
    private readonly chains: ChainGateway,
    private readonly mode: SandboxMode,
    /** chains whose RPC is a production network (config LIVE_CHAINS): never the sandbox's */
    private readonly live: readonly TreasuryChain[],
  ) {}

  /** does this chain take the sandbox's test methods (a local Anvil, and the sandbox not switched off)? */
  active(chain: TreasuryChain): Promise<boolean> {
    if (this.mode === "off" || this.live.includes(chain) || !this.chains.connected(chain)) return Promise.resolve(false);
    let known = this.local.get(chain);
    if (!known) {
      known = this.detect(chain);
      this.local.set(chain, known);
      // the node's answer is kept, Anvil or not (a loopback node that is not Anvil was asked again on every
      // status and every action); a node that did not answer is asked again next time
      known.catch(() => this.local.delete(chain));
    }
    return known.catch(() => false);
  }

  private async detect(chain: TreasuryChain): Promise<boolean> {
    const url = this.chains.rpcUrl(chain);
    if (!url) return false;
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      return false;
    }
    if (!LOOPBACK.has(host)) return false;
    const version = await this.rpc<string>(chain, "web3_clientVersion", []);
    return typeof version === "string" && version.toLowerCase().startsWith("anvil");
  }

  /**
   * What the wallet needs for an action: gas ETH, and `usdcMicro` of USDC in the wallet (topped up, never taken
   * away). `onTop`: the USDC added over what the wallet holds, and gas added over its ETH, so what it held
   * pays for nothing (the funding of a wallet proven only by the transaction it signed, execution/backing.ts)
   */
  async fund(
    chain: TreasuryChain,
    usdc: `0x${string}`,
    wallet: `0x${string}`,
    usdcMicro: bigint,
    onTop = false,
  ): Promise<{ gas_eth_set: boolean; usdc_added_micro: bigint }> {
    const c = this.chains.client(chain);
    let gas = false;
    // both balances in one round
    const [eth, held] = await Promise.all([c.getBalance({ address: wallet }), this.balanceOf(chain, usdc, wallet)]);
    if (onTop || eth < MIN_GAS_WEI) {
      await this.rpc(chain, "anvil_setBalance", [wallet, toHex((onTop ? eth : 0n) + GAS_TOPUP_WEI)]);
      gas = true;
    }
    const target = onTop ? held + usdcMicro : usdcMicro;
    if (held >= target) return { gas_eth_set: gas, usdc_added_micro: 0n };
    await this.setBalance(chain, usdc, wallet, target);
    return { gas_eth_set: gas, usdc_added_micro: target - held };
  }

  /** move token units between two holders by storage (the total supply is unchanged) */
  async move(chain: TreasuryChain, token: `0x${string}`, from: `0x${string}`, to: `0x${string}`, units: bigint): Promise<void> {
    if (units === 0n) return;
    const [a, b] = await Promise.all([this.balanceOf(chain, token, from), this.balanceOf(chain, token, to)]);
    if (a < units) throw new Error(`${from} holds ${a} of ${token}, fewer than the ${units} to move`);
    await this.setBalance(chain, token, from, a - units);
    await this.setBalance(chain, token, to, b + units);
  }

  /**
   * Carry out a step without the wallet's signature: an ERC-20 transfer or
   * approval, or a SwapRouter02 exactInputSingle (at the quoted minimum out).
   */
  async provide(
    chain: TreasuryChain,
    wallet: `0x${string}`,
    step: { to: `0x${string}`; data: Hex },
    opts: { outputDelivered?: boolean } = {},
  ): Promise<ProvidedStep> {
    const provided = (effect: string): ProvidedStep => ({ object: "provided_step", provided_by: "sandbox", method: "anvil_setStorageAt", effect });
    try {
      const call = decodeFunctionData({ abi: ERC20_ABI, data: step.data });
      if (call.functionName === "transfer") {
        const [to, amount] = call.args as [`0x${string}`, bigint];
        await this.move(chain, step.to, wallet, to, amount);
        return provided(`moved ${amount} units of ${step.to} from ${wallet} to ${to}`);
      }
      if (call.functionName === "approve") {
        const [spender, amount] = call.args as [`0x${string}`, bigint];
        await this.setAllowance(chain, step.to, wallet, spender, amount);
        return provided(`set ${wallet}'s allowance of ${step.to} for ${spender} to ${amount}`);
      }
    } catch (err) {
      if (!(err instanceof Error) || !/signature|not found on ABI/i.test(err.message)) throw err;
    }
    const { p, pool } = await this.swapOf(chain, step.data);
    await this.move(chain, p.tokenIn, wallet, pool, p.amountIn);
    if (!opts.outputDelivered) await this.move(chain, p.tokenOut, pool, p.recipient, p.amountOutMinimum);
    return provided(
      `swapped ${p.amountIn} units of ${p.tokenIn} for ${p.amountOutMinimum} units of ${p.tokenOut} against the pool ${pool}'s balances, at the quoted minimum`,
    );
  }

  /**
   * Make an envelope's main call estimable before its prerequisites are
   * signed (a client filling gas by eth_estimateGas): approvals are set as the
   * approval steps would set them (the same value again when a steps-aware
   * client relays them), and a swap's quoted output is delivered ahead from
   * the pool (its input follows at the relay; `takeBack` undoes the delivery
   * when the wallet swaps for real instead).
   */
  async prepare(
    chain: TreasuryChain,
    wallet: `0x${string}`,
    step: { kind: string; to: `0x${string}`; data: Hex },
  ): Promise<"approval_set" | "output_delivered" | null> {
    if (step.kind === "approval") {
      await this.provide(chain, wallet, step);
      return "approval_set";
    }
    if (step.kind === "swap") {
      const { p, pool } = await this.swapOf(chain, step.data);
      await this.move(chain, p.tokenOut, pool, p.recipient, p.amountOutMinimum);
      return "output_delivered";
    }
    return null;
  }

  /** undo `prepare`'s delivery of a swap's output (the wallet swapped for real) */
  async takeBack(chain: TreasuryChain, step: { data: Hex }): Promise<void> {
    const { p, pool } = await this.swapOf(chain, step.data);
    await this.move(chain, p.tokenOut, p.recipient, pool, p.amountOutMinimum);
  }

  private async swapOf(chain: TreasuryChain, data: Hex) {
    const p = decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data }).args[0];
    const chainId = await this.chains.client(chain).getChainId();
    const factory = V3_CORE_FACTORY_ADDRESSES[chainId];
    if (!factory) throw new Error(`no Uniswap V3 factory known for chain ${chainId}`);
    const pool = await this.chains
      .client(chain)
      .readContract({ address: getAddress(factory), abi: FACTORY_ABI, functionName: "getPool", args: [p.tokenIn, p.tokenOut, p.fee] });
    return { p, pool };
  }

  /** send a call from the wallet itself (anvil_impersonateAccount); resolves with the mined receipt */
  async sendAs(
    chain: TreasuryChain,
    from: `0x${string}`,
    call: { to: `0x${string}`; data: Hex },
  ): Promise<{ hash: Hex; blockNumber: bigint; gasUsed: bigint; status: "success" | "reverted" }> {
    const c = this.chains.client(chain);
    await this.rpc(chain, "anvil_impersonateAccount", [from]);
    const hash = await this.rpc<Hex>(chain, "eth_sendTransaction", [{ from, to: call.to, data: call.data, gas: toHex(1_000_000n) }]);
    const r = await c.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 60_000 });
    return { hash, blockNumber: r.blockNumber, gasUsed: r.gasUsed, status: r.status };
  }

  /** would the call succeed from the wallet now? */
  async wouldSucceed(chain: TreasuryChain, from: `0x${string}`, call: { to: `0x${string}`; data: Hex }): Promise<boolean> {
    return (await this.revertOf(chain, from, call)) === undefined;
  }

  /** the error of the call from the wallet now (its revert, to decode), or undefined when it succeeds */
  async revertOf(chain: TreasuryChain, from: `0x${string}`, call: { to: `0x${string}`; data: Hex }): Promise<unknown> {
    try {
      await this.chains.client(chain).call({ account: from, to: call.to, data: call.data });
      return undefined;
    } catch (err) {
      return err;
    }
  }

  private balanceOf(chain: TreasuryChain, token: `0x${string}`, owner: `0x${string}`): Promise<bigint> {
    return this.chains.client(chain).readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [owner] });
  }

  private async setBalance(chain: TreasuryChain, token: `0x${string}`, owner: `0x${string}`, units: bigint): Promise<void> {
    const slot = await this.slotOf(
      this.balanceSlots,
      chain,
      token,
      (s, probe) => balanceKey(probe, s),
      (probe) => this.balanceOf(chain, token, probe),
    );
    await this.write(chain, token, balanceKey(owner, slot), units);
    if ((await this.balanceOf(chain, token, owner)) !== units) throw new Error(`writing ${owner}'s balance of ${token} did not take`);
  }

  private async setAllowance(chain: TreasuryChain, token: `0x${string}`, owner: `0x${string}`, spender: `0x${string}`, units: bigint): Promise<void> {
    const spenderProbe = "0x00000000000000000000000000000000005a4d42" as const;
    const read = (probe: `0x${string}`) =>
      this.chains.client(chain).readContract({ address: token, abi: ERC20_ABI, functionName: "allowance", args: [probe, spenderProbe] });
    const slot = await this.slotOf(this.allowanceSlots, chain, token, (s, probe) => allowanceKey(probe, spenderProbe, s), read);
    await this.write(chain, token, allowanceKey(owner, spender, slot), units);
  }

  /** find the storage slot of a token's mapping: write a sentinel for a probe address at each candidate, read it back, restore */
  private slotOf(
    cache: Map<string, Promise<bigint>>,
    chain: TreasuryChain,
    token: `0x${string}`,
    key: (slot: bigint, probe: `0x${string}`) => Hex,
    read: (probe: `0x${string}`) => Promise<bigint>,
  ): Promise<bigint> {
    const id = `${chain}:${token.toLowerCase()}`;
    let found = cache.get(id);
    if (!found) {
      found = (async () => {
        const probe = "0x00000000000000000000000000000000005a4d41" as const;
        const sentinel = 0x5a4d_5a4d_5a4dn;
        for (let s = 0n; s < BigInt(PROBE_SLOTS); s++) {
          const k = key(s, probe);
          const before = await this.rpc<Hex>(chain, "eth_getStorageAt", [token, k, "latest"]);
          await this.write(chain, token, k, sentinel);
          const seen = await read(probe).catch(() => -1n);
          await this.rpc(chain, "anvil_setStorageAt", [token, k, pad(before)]);
          if (seen === sentinel) return s;
        }
        throw new Error(`no standard mapping slot found for ${token} on ${chain}`);
      })();
      cache.set(id, found);
      found.catch(() => cache.delete(id));
    }
    return found;
  }

  private write(chain: TreasuryChain, address: `0x${string}`, key: Hex, value: bigint): Promise<unknown> {
    return this.rpc(chain, "anvil_setStorageAt", [address, key, pad(toHex(value))]);
  }

  private rpc<T = unknown>(chain: TreasuryChain, method: string, params: unknown[]): Promise<T> {
    return this.chains.client(chain).request({ method: method as never, params: params as never }) as Promise<T>;
  }
}

function balanceKey(owner: `0x${string}`, slot: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [owner, slot]));
}

function allowanceKey(owner: `0x${string}`, spender: `0x${string}`, slot: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: "address" }, { type: "bytes32" }], [spender, balanceKey(owner, slot)]));
}
