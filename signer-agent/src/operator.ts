/**
 * The operator's side of a managed treasury: a Safe 1.4.1 the operator owns
 * (created and driven with @safe-global/protocol-kit), funded on the fork,
 * registered with the gateway, and the delegation approved (the operator's
 * Safe transaction enableModule of the ProtectionModule) or revoked
 * (disableModule). The service's automation key is never an owner.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Safe from "@safe-global/protocol-kit";
import {
  createPublicClient,
  createWalletClient,
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  hexToBigInt,
  parseAbi,
  publicActions,
  sliceHex,
  type Hex,
} from "viem";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { MULTI_SEND_ABI, SAFE_ABI, safeTxArgs } from "@treasury/core/contracts/safe";
import { multiSendCallOnly } from "@treasury/core/contracts/safe-deployments";
import { PROTECTION_MODULE_ABI, protectionModuleConfig, DELEVERAGE_MAX_SLIPPAGE_BPS } from "@treasury/core/contracts/protection-module";
import { swapRouter02 } from "@treasury/core/contracts/uniswap";
import { randomBytes } from "node:crypto";
import { delegationStatement, registrationStatement, safeMessageFor, statementHash, type Statement } from "@treasury/core/domain/statements";
import { SignerAgentError } from "./errors";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WETH_ABI = parseAbi(["function deposit() payable"]);

export function protectionModuleArtifact(): { abi: readonly unknown[]; bytecode: { object: Hex } } {
  const file = path.join(ROOT, "out", "ProtectionModule.sol", "ProtectionModule.json");
  if (!fs.existsSync(file)) throw new SignerAgentError("contracts_not_built", "ProtectionModule is not built: run npm run build:contracts");
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

export { PROTECTION_MODULE_ABI };

/** a Safe transaction as the gateway's queue lists it (the fields the operator checks and signs) */
export interface QueuedSafeTransaction {
  id: string;
  safe: `0x${string}`;
  safe_tx_hash: Hex;
  safe_tx: {
    to: `0x${string}`;
    value: string;
    data: Hex;
    operation: 0 | 1;
    safeTxGas: string;
    baseGas: string;
    gasPrice: string;
    gasToken: `0x${string}`;
    refundReceiver: `0x${string}`;
    nonce: string;
  };
  calls: { to: `0x${string}`; value: string; data: Hex }[];
}

/** the calls a Safe transaction makes: the one call, or MultiSendCallOnly's packed batch (delegatecall) */
export function decodeBatch(t: QueuedSafeTransaction["safe_tx"]): { to: `0x${string}`; value: bigint; data: Hex }[] {
  if (t.operation === 0) return [{ to: t.to, value: BigInt(t.value), data: t.data }];
  if (getAddress(t.to) !== multiSendCallOnly(base.id))
    throw new SignerAgentError("safe_check_failed", `a delegatecall to ${t.to}, not Safe's MultiSendCallOnly`);
  const { args } = decodeFunctionData({ abi: MULTI_SEND_ABI, data: t.data });
  const packed = args[0];
  const calls: { to: `0x${string}`; value: bigint; data: Hex }[] = [];
  // each: operation (1 byte), to (20), value (32), data length (32), data
  for (let at = 0; at < (packed.length - 2) / 2;) {
    const operation = Number(hexToBigInt(sliceHex(packed, at, at + 1)));
    if (operation !== 0) throw new SignerAgentError("safe_check_failed", "a delegatecall inside the batch");
    const to = getAddress(sliceHex(packed, at + 1, at + 21));
    const value = hexToBigInt(sliceHex(packed, at + 21, at + 53));
    const length = Number(hexToBigInt(sliceHex(packed, at + 53, at + 85)));
    const data = length === 0 ? "0x" : sliceHex(packed, at + 85, at + 85 + length);
    calls.push({ to, value, data });
    at += 85 + length;
  }
  return calls;
}

/** gas limit of the operator's Safe transactions (supply, borrow, module set-up: well under 1.5M on Base) */
const SAFE_TX_GAS_LIMIT = 3_000_000n;

export class Operator {
  readonly account;
  private readonly wallet;
  readonly publicClient;
  private safeKit: Safe | undefined;
  safeAddress: `0x${string}` | undefined;

  /** a line per step of a long operation (the command line prints them on stderr) */
  private readonly step: (line: string) => void;

  constructor(private readonly opts: { privateKey: Hex; rpcUrl: string; progress?: (line: string) => void }) {
    this.step = opts.progress ?? (() => undefined);
    this.account = privateKeyToAccount(opts.privateKey);
    this.wallet = createWalletClient({ account: this.account, chain: base, transport: rpcHttp(opts.rpcUrl), pollingInterval: 50 }).extend(publicActions);
    this.publicClient = createPublicClient({ chain: base, transport: rpcHttp(opts.rpcUrl), pollingInterval: 50 });
  }

  /** create (deploy) a Safe owned by the operator alone, threshold 1 */
  async createSafe(saltNonce = String(Date.now())): Promise<`0x${string}`> {
    const predicted = await Safe.init({
      provider: this.opts.rpcUrl,
      signer: this.opts.privateKey,
      predictedSafe: { safeAccountConfig: { owners: [this.account.address], threshold: 1 }, safeDeploymentConfig: { saltNonce } },
    });
    const address = (await predicted.getAddress()) as `0x${string}`;
    this.step(`deploying the Safe at ${address} (one transaction from ${this.account.address})`);
    const deployment = await predicted.createSafeDeploymentTransaction();
    const hash = await this.wallet.sendTransaction({
      to: deployment.to as `0x${string}`,
      data: deployment.data as Hex,
      value: BigInt(deployment.value),
      chain: base,
    });
    this.step(`waiting for the deployment's receipt (${hash})`);
    const receipt = await this.wallet.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new SignerAgentError("safe_transaction_reverted", "Safe deployment reverted");
    return this.connect(address);
  }

  async connect(safeAddress: `0x${string}`): Promise<`0x${string}`> {
    this.safeKit = await Safe.init({ provider: this.opts.rpcUrl, signer: this.opts.privateKey, safeAddress });
    this.safeAddress = safeAddress;
    return safeAddress;
  }

  private kit(): Safe {
    if (!this.safeKit) throw new SignerAgentError("no_safe", "no Safe: create or connect one first");
    return this.safeKit;
  }

  /** execute calls as a Safe transaction signed by the operator (threshold 1), waiting for the receipt */
  async execSafe(calls: { to: `0x${string}`; data: Hex; value?: bigint }[]): Promise<Hex> {
    const kit = this.kit();
    const nonce = await kit.getNonce();
    const tx = await kit.createTransaction({ transactions: calls.map((c) => ({ to: c.to, data: c.data, value: String(c.value ?? 0n) })), options: { nonce } });
    // an explicit limit with headroom: the estimate is made one block earlier, and Aave's index updates cost more gas
    // when the next block lands later (seen as reverted supply/borrow under load); unused gas is not charged
    const result = await kit.executeTransaction(tx, { gasLimit: SAFE_TX_GAS_LIMIT.toString() });
    const hash = result.hash as Hex;
    const receipt = await this.publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new SignerAgentError("safe_transaction_reverted", `Safe transaction ${hash} reverted`);
    return hash;
  }

  /** fund the Safe on the fork with WETH (wrapped from the operator's ETH) */
  async fundWeth(amountWei: bigint): Promise<void> {
    const m = AAVE_MARKETS.base;
    const safe = this.safeAddress!;
    this.step("wrapping the operator's ETH into WETH");
    const wrap = await this.wallet.writeContract({ address: m.weth, abi: WETH_ABI, functionName: "deposit", value: amountWei, chain: base });
    await this.wallet.waitForTransactionReceipt({ hash: wrap });
    this.step(`sending the WETH to the Safe ${safe}`);
    const send = await this.wallet.writeContract({ address: m.weth, abi: ERC20_ABI, functionName: "transfer", args: [safe, amountWei], chain: base });
    await this.wallet.waitForTransactionReceipt({ hash: send });
  }

  /** supply WETH and borrow USDC through the Safe (the operator's own signature) */
  async supplyAndBorrow(wethWei: bigint, borrowUsdcMicro: bigint): Promise<void> {
    const m = AAVE_MARKETS.base;
    const safe = this.safeAddress!;
    this.step("supplying the WETH to Aave through the Safe (approve and supply, one Safe transaction)");
    await this.execSafe([
      { to: m.weth, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [m.pool, wethWei] }) },
      { to: m.pool, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "supply", args: [m.weth, wethWei, safe, 0] }) },
    ]);
    if (borrowUsdcMicro > 0n) {
      this.step("borrowing the USDC through the Safe (one Safe transaction)");
      await this.execSafe([
        { to: m.pool, data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "borrow", args: [m.usdc, borrowUsdcMicro, 2n, 0, safe] }) },
      ]);
    }
  }

  /** deploy the ProtectionModule for this Safe (the service's automation address, the preset's park target, the swap bound) */
  async deployModule(automation: `0x${string}`, parkTargetBps: number): Promise<`0x${string}`> {
    this.step(`deploying the ProtectionModule for the Safe (automation ${automation})`);
    const { config, tokens } = protectionModuleConfig("base", this.safeAddress!, automation, parkTargetBps);
    const hash = await this.wallet.deployContract({
      abi: PROTECTION_MODULE_ABI,
      bytecode: protectionModuleArtifact().bytecode.object,
      args: [config, tokens],
      chain: base,
    });
    const receipt = await this.wallet.waitForTransactionReceipt({ hash });
    return receipt.contractAddress!;
  }

  /** approve delegation: the operator's Safe transaction enableModule */
  async approveDelegation(module: `0x${string}`): Promise<Hex> {
    this.step(`enabling the module ${module} on the Safe (one Safe transaction)`);
    const tx = await this.kit().createEnableModuleTx(module, { nonce: await this.kit().getNonce() });
    const result = await this.kit().executeTransaction(tx);
    await this.publicClient.waitForTransactionReceipt({ hash: result.hash as Hex });
    return result.hash as Hex;
  }

  /**
   * Execute the delegation upgrade the gateway prepared (GET /api/v1/delegation/safe-transaction?change=upgrade),
   * after checking it independently: the hash is the Safe's own for these fields, and the batch is exactly
   * enableModule(`module`) and disableModule of the module it replaces, both calls to this Safe, no refund.
   * Signed and sent by the owner (threshold 1).
   */
  async executeUpgrade(
    p: { safe: `0x${string}`; module: `0x${string}`; replaces?: `0x${string}`; safe_tx_hash: Hex; safe_tx: QueuedSafeTransaction["safe_tx"] },
    module: `0x${string}`,
  ): Promise<Hex> {
    const safe = this.safeAddress!;
    const t = p.safe_tx;
    if (getAddress(p.safe) !== getAddress(safe))
      throw new SignerAgentError("safe_check_failed", `the upgrade is for ${p.safe}, not this operator's Safe ${safe}`);
    const onChain = await this.publicClient.readContract({
      address: safe,
      abi: SAFE_ABI,
      functionName: "getTransactionHash",
      args: [...safeTxArgs(t), BigInt(t.nonce)],
    });
    if (onChain.toLowerCase() !== p.safe_tx_hash.toLowerCase())
      throw new SignerAgentError("safe_check_failed", `the listed hash ${p.safe_tx_hash} is not the Safe's own ${onChain} for these fields`);
    if (BigInt(t.gasPrice) !== 0n || BigInt(t.baseGas) !== 0n)
      throw new SignerAgentError("safe_check_failed", "the Safe transaction would refund gas from the Safe");
    const calls = decodeBatch(t);
    const decoded = calls.map((c) => {
      if (getAddress(c.to) !== getAddress(safe) || c.value !== 0n)
        throw new SignerAgentError("safe_check_failed", `a call of the upgrade goes to ${c.to}, not to the Safe itself`);
      return decodeFunctionData({ abi: SAFE_ABI, data: c.data });
    });
    const [enable, disable] = decoded;
    if (enable?.functionName !== "enableModule" || getAddress(enable.args[0] as string) !== getAddress(module))
      throw new SignerAgentError("safe_check_failed", `the upgrade does not enable ${module}`);
    if (
      decoded.length > 2 ||
      (disable && (disable.functionName !== "disableModule" || !p.replaces || getAddress(disable.args[1] as string) !== getAddress(p.replaces)))
    )
      throw new SignerAgentError("safe_check_failed", "the upgrade does more than enable the new module and disable the one it replaces");
    const signature = await this.account.sign({ hash: p.safe_tx_hash });
    const hash = await this.wallet.writeContract({
      address: safe,
      abi: SAFE_ABI,
      functionName: "execTransaction",
      args: [...safeTxArgs(t), signature],
      chain: base,
    });
    const receipt = await this.wallet.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new SignerAgentError("safe_transaction_reverted", `the Safe transaction ${p.safe_tx_hash} reverted (${hash})`);
    return hash;
  }

  /** revoke delegation: disableModule; transactions the service already submitted may still settle */
  async revokeDelegation(module: `0x${string}`): Promise<Hex> {
    this.step(`disabling the module ${module} on the Safe (one Safe transaction)`);
    const tx = await this.kit().createDisableModuleTx(module, { nonce: await this.kit().getNonce() });
    const result = await this.kit().executeTransaction(tx);
    return result.hash as Hex;
  }

  /**
   * The Safe's EIP-1271 signature of a statement: the owner signs the
   * statement's hash as a SafeMessage in the Safe's own domain, which the
   * Safe's CompatibilityFallbackHandler checks in isValidSignature (threshold
   * 1: the operator's signature alone).
   */
  async signAsSafe(statement: Statement): Promise<Hex> {
    const safe = this.safeAddress!;
    return this.account.signTypedData(safeMessageFor(safe, base.id, statementHash(statement)));
  }

  /** a fresh proof (signature, nonce, issued_at) that the Safe registers a treasury with `service` */
  async ownershipProof(service: string, executionMode: "wallet" | "managed") {
    const nonce = `op_${randomBytes(16).toString("hex")}`;
    const issued_at = new Date().toISOString();
    const signature = await this.signAsSafe(
      registrationStatement({ service, wallet: this.safeAddress!, chain: "base", executionMode, nonce, issuedAt: issued_at }),
    );
    return { signature, nonce, issued_at };
  }

  /** a fresh proof that the Safe attaches `module` to `treasuryId` with these thresholds (POST /api/v1/delegation safe_proof) */
  async delegationProof(o: {
    service: string;
    treasuryId: string;
    module: `0x${string}`;
    protectBelowHealth: number;
    parkTargetBps: number;
    maxSlippageBps?: number;
  }) {
    const nonce = `op_${randomBytes(16).toString("hex")}`;
    const issued_at = new Date().toISOString();
    const signature = await this.signAsSafe(
      delegationStatement({
        service: o.service,
        chain: "base",
        treasuryId: o.treasuryId,
        safe: this.safeAddress!,
        module: o.module,
        protectBelowHealthCentis: Math.round(o.protectBelowHealth * 100),
        parkTargetBps: o.parkTargetBps,
        maxSlippageBps: o.maxSlippageBps ?? DELEVERAGE_MAX_SLIPPAGE_BPS,
        nonce,
        issuedAt: issued_at,
      }),
    );
    return { signature, nonce, issued_at };
  }

  /**
   * Sign one Safe transaction of the gateway's queue (GET
   * /api/v1/safe-transactions) as an owner, after checking it independently:
   * the hash is the one the Safe itself computes (getTransactionHash on
   * chain) from the listed fields, the batch decodes to exactly the listed
   * calls, and every call goes to a contract of the Aave market (its tokens,
   * its Pool) or the swap router, from this Safe. Returns the signature of the
   * hash (ECDSA, v 27/28: what eth_signTypedData_v4 of the SafeTx gives).
   */
  async signQueued(q: QueuedSafeTransaction): Promise<Hex> {
    const safe = this.safeAddress!;
    if (getAddress(q.safe) !== getAddress(safe))
      throw new SignerAgentError("safe_check_failed", `the Safe transaction is for ${q.safe}, not this operator's Safe ${safe}`);
    const t = q.safe_tx;
    const onChain = await this.publicClient.readContract({
      address: safe,
      abi: SAFE_ABI,
      functionName: "getTransactionHash",
      args: [...safeTxArgs(t), BigInt(t.nonce)],
    });
    if (onChain.toLowerCase() !== q.safe_tx_hash.toLowerCase())
      throw new SignerAgentError("safe_check_failed", `the listed hash ${q.safe_tx_hash} is not the Safe's own ${onChain} for these fields`);
    const decoded = decodeBatch(t);
    if (
      decoded.length !== q.calls.length ||
      decoded.some(
        (c, i) =>
          getAddress(c.to) !== getAddress(q.calls[i]!.to) || c.data.toLowerCase() !== q.calls[i]!.data.toLowerCase() || c.value !== BigInt(q.calls[i]!.value),
      )
    ) {
      throw new SignerAgentError("safe_check_failed", "the Safe transaction's batch is not the calls it lists");
    }
    const m = AAVE_MARKETS.base;
    const known = new Set([m.pool, m.usdc, m.weth, m.btc, swapRouter02(m.chainId)].map((a) => getAddress(a)));
    for (const c of decoded)
      if (!known.has(getAddress(c.to)))
        throw new SignerAgentError("safe_check_failed", `a call goes to ${c.to}, not a contract of the Aave market or the swap router`);
    if (BigInt(t.gasPrice) !== 0n || BigInt(t.baseGas) !== 0n)
      throw new SignerAgentError("safe_check_failed", "the Safe transaction would refund gas from the Safe");
    return this.account.sign({ hash: q.safe_tx_hash });
  }

  async moduleEnabled(module: `0x${string}`): Promise<boolean> {
    return this.kit().isModuleEnabled(module);
  }
}
