/**
 * x402 sessions (`batch-settlement`) built by hand for attack tests: a route's session offer, a channel of this
 * service's terms, deposits (EIP-3009 ReceiveWithAuthorization to the deposit collector, valid by the CHAIN's
 * clock, so they still settle after a test moved the chain's time forward) and vouchers (optionally re-encoded
 * with the high-s twin of their signature, which viem accepts and the contract refuses), and the payer's own
 * on-chain exit (initiate and finalize a withdrawal). The official client is in test/gateway/x402-sessions.test.ts.
 */
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, toClientEvmSigner } from "@x402/evm";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  getAddress,
  hexToBigInt,
  http,
  keccak256,
  pad,
  parseAbi,
  parseEther,
  toHex,
  type Hex,
} from "viem";
import { generatePrivateKey } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import type { BaseSepoliaNode } from "../../fixtures/base-sepolia";
import type { Payer } from "./x402-stack";
import type { ChannelConfig } from "../../gateway/src/x402/schemes/session/voucher";

export type { ChannelConfig };

export const NETWORK = "eip155:84532";
const CONFIG_TUPLE =
  "(address payer, address payerAuthorizer, address receiver, address receiverAuthorizer, address token, uint40 withdrawDelay, bytes32 salt)";
const CHANNEL_ABI = parseAbi([
  `function initiateWithdraw(${CONFIG_TUPLE} config, uint128 amount)`,
  `function finalizeWithdraw(${CONFIG_TUPLE} config)`,
  "function channels(bytes32 channelId) view returns (uint128 balance, uint128 totalClaimed)",
]);
const RECEIVE_TYPES = {
  ReceiveWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;
/** secp256k1's group order: (r, n - s, v ^ 1) is the same signature's high-s twin */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** a route's session offer, as its 402 states it (the `accepted` a session payment names) */
export type SessionOffer = {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
};

export async function sessionOffer(base: string, path: string): Promise<SessionOffer> {
  const required = decodePaymentRequiredHeader((await fetch(`${base}${path}`)).headers.get("payment-required")!);
  return required.accepts.find((a) => a.scheme === "batch-settlement") as unknown as SessionOffer;
}

/** a channel on this service's terms, the payer signing its own vouchers (a fresh salt: a fresh channel) */
export function channelOf(payer: Payer, offer: SessionOffer, edit: Partial<ChannelConfig> = {}): ChannelConfig {
  return {
    payer: payer.account.address,
    payerAuthorizer: payer.account.address,
    receiver: getAddress(offer.payTo),
    receiverAuthorizer: getAddress(offer.extra.receiverAuthorizer as string),
    token: getAddress(offer.asset),
    withdrawDelay: offer.extra.withdrawDelay as number,
    salt: generatePrivateKey(),
    ...edit,
  };
}

export const channelIdOf = (config: ChannelConfig) => computeChannelId(config, NETWORK).toLowerCase() as Hex;

const header = (offer: SessionOffer, payload: Record<string, unknown>) => encodePaymentSignatureHeader({ x402Version: 2, accepted: offer, payload } as never);

/** the high-s twin of a 65-byte signature: the same signer for viem, an invalid signature for the contract */
export function highS(signature: Hex): Hex {
  const s = hexToBigInt(`0x${signature.slice(66, 130)}`);
  const v = parseInt(signature.slice(130, 132), 16);
  return `${signature.slice(0, 66)}${pad(toHex(SECP256K1_N - s)).slice(2)}${v === 27 || v === 0 ? "1c" : "1b"}` as Hex;
}

/** the same signature with v written as 0/1 (the recovery bit) instead of 27/28 */
export const vZeroOne = (signature: Hex): Hex =>
  `${signature.slice(0, 130)}${(parseInt(signature.slice(130, 132), 16) - 27).toString(16).padStart(2, "0")}` as Hex;

export interface VoucherOptions {
  /** who signs the voucher (default: the payer) */
  signer?: Payer;
  /** send the signature's high-s twin */
  malleate?: boolean;
  /** write the signature's v as 0/1 instead of 27/28 (the same signer for viem, refused by OpenZeppelin's ECDSA) */
  vZeroOne?: boolean;
  /** the `accepted` amount to name (default: the offer's) */
  amount?: bigint;
}

async function voucherOf(payer: Payer, config: ChannelConfig, cumulative: bigint, opts: VoucherOptions, channelId = channelIdOf(config)) {
  const voucher = await signVoucher(toClientEvmSigner((opts.signer ?? payer).account), channelId, cumulative.toString(), NETWORK);
  const signature = opts.malleate ? highS(voucher.signature as Hex) : (voucher.signature as Hex);
  return { ...voucher, signature: opts.vZeroOne ? vZeroOne(signature) : signature };
}

const accepted = (offer: SessionOffer, opts: VoucherOptions) => (opts.amount === undefined ? offer : { ...offer, amount: opts.amount.toString() });

/** a voucher payment: cumulative `cumulative` on the channel */
export async function voucherHeader(payer: Payer, offer: SessionOffer, config: ChannelConfig, cumulative: bigint, opts: VoucherOptions = {}): Promise<string> {
  return header(accepted(offer, opts), { type: "voucher", channelConfig: config, voucher: await voucherOf(payer, config, cumulative, opts) });
}

export const chainNow = async (chain: BaseSepoliaNode) =>
  (await createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) }).getBlock()).timestamp;

/** a deposit of `amount` into the channel with its first voucher (cumulative `cumulative`); `voucherChannel`: the voucher names another channel */
export async function depositHeader(
  chain: BaseSepoliaNode,
  payer: Payer,
  offer: SessionOffer,
  config: ChannelConfig,
  amount: bigint,
  cumulative: bigint,
  opts: VoucherOptions & { voucherChannel?: ChannelConfig } = {},
): Promise<string> {
  const channelId = channelIdOf(opts.voucherChannel ?? config);
  const salt = generatePrivateKey();
  const validBefore = (await chainNow(chain)) + 3_600n;
  const nonce = keccak256(encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [channelId, hexToBigInt(salt)]));
  const signature = await payer.account.signTypedData({
    domain: { name: offer.extra.name as string, version: offer.extra.version as string, chainId: baseSepolia.id, verifyingContract: getAddress(offer.asset) },
    types: RECEIVE_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: { from: payer.account.address, to: getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS), value: amount, validAfter: 0n, validBefore, nonce },
  });
  return header(accepted(offer, opts), {
    type: "deposit",
    channelConfig: config,
    voucher: await voucherOf(payer, config, cumulative, opts, channelId),
    deposit: { amount: amount.toString(), authorization: { erc3009Authorization: { validAfter: "0", validBefore: validBefore.toString(), salt, signature } } },
  });
}

/** the channel as the contract holds it */
export async function channelOnChain(chain: BaseSepoliaNode, config: ChannelConfig): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const client = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
  const [balance, totalClaimed] = await client.readContract({
    address: BATCH_SETTLEMENT_ADDRESS,
    abi: CHANNEL_ABI,
    functionName: "channels",
    args: [channelIdOf(config)],
  });
  return { balance, totalClaimed };
}

/** the payer's own exit, as the contract allows it: announce a withdrawal, and finalize it once the delay passed */
export async function payerExit(chain: BaseSepoliaNode, payer: Payer, config: ChannelConfig) {
  const transport = http(chain.rpcUrl);
  const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport });
  const client = createPublicClient({ chain: baseSepolia, transport });
  const wallet = createWalletClient({ account: payer.account, chain: baseSepolia, transport });
  await test.setBalance({ address: payer.account.address, value: parseEther("1") });
  const send = async (functionName: "initiateWithdraw" | "finalizeWithdraw", args: readonly unknown[]) => {
    const hash = await wallet.writeContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: CHANNEL_ABI, functionName, args: args as never });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
  };
  return {
    initiate: (amount: bigint) => send("initiateWithdraw", [config, amount]),
    /** the chain's clock moves past the withdrawal delay */
    waitDelay: async () => {
      await test.increaseTime({ seconds: config.withdrawDelay + 1 });
      await test.mine({ blocks: 1 });
    },
    finalize: () => send("finalizeWithdraw", [config]),
  };
}
