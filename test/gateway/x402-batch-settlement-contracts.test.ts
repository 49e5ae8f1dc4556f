/**
 * x402's `batch-settlement` scheme end to end on the local Base Sepolia (Anvil 84532, TestUSDC) with the
 * project's BatchSettlement and ERC3009DepositCollector at their canonical addresses: the official client scheme
 * (@x402/evm/batch-settlement/client) opens a channel with an EIP-3009 deposit and signs cumulative vouchers; the
 * project's facilitator module (the official facilitator scheme over the facilitator's key and the receiver
 * authorizer's key) verifies and settles the deposit, then the payloads the official server's channel manager
 * sends (claim, settle, enriched refund). This file plays the server's part: its bookkeeping of what each request
 * charged (updateChannelFromSettle, as the client does on a PAYMENT-RESPONSE) and the shape of its claim, settle
 * and refund payloads. Balances are checked to the token unit, on chain and in the contract's state.
 */
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, claimBatchTypes, refundTypes, toClientEvmSigner, voucherTypes } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClientScheme,
  InMemoryClientChannelStorage,
  computeChannelId,
  signVoucher,
  updateChannelFromSettle,
} from "@x402/evm/batch-settlement/client";
import { createPublicClient, createTestClient, hashTypedData, http, parseAbi, parseEther, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { placeBatchSettlementContracts } from "../../fixtures/x402-batch-contracts";
import {
  createBatchSettlementFacilitator,
  REFUND_SIGNATURE_REQUIRED,
  type BatchSettlementFacilitator,
} from "../../gateway/src/x402/facilitator/batch-settlement";

const NETWORK = "eip155:84532" as const;
const PRICE = 1_000n;
const PAYER_FUNDS = 10_000_000n;

const BATCH_ABI = parseAbi([
  "struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }",
  "struct Voucher { ChannelConfig channel; uint128 maxClaimableAmount; }",
  "struct VoucherClaim { Voucher voucher; bytes signature; uint128 totalClaimed; }",
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
  "function receivers(address, address) view returns (uint128 totalClaimed, uint128 totalSettled)",
  "function refundNonce(bytes32) view returns (uint256)",
  "function getChannelId(ChannelConfig config) view returns (bytes32)",
  "function getVoucherDigest(bytes32, uint128) view returns (bytes32)",
  "function getRefundDigest(bytes32, uint256, uint128) view returns (bytes32)",
  "function getClaimBatchDigest(VoucherClaim[] claims) view returns (bytes32)",
]);

type Config = ReturnType<BatchClientScheme["buildChannelConfig"]>;

let chain: BaseSepoliaNode;
let reader: ReturnType<typeof createPublicClient>;
let facilitator: BatchSettlementFacilitator;
let facilitatorKey: Hex;
let authorizerKey: Hex;
let requirements: PaymentRequirements;
const receiver = privateKeyToAccount(generatePrivateKey()).address;

beforeAll(async () => {
  chain = await startBaseSepolia();
  await placeBatchSettlementContracts(chain.rpcUrl);
  reader = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
  facilitatorKey = generatePrivateKey();
  authorizerKey = generatePrivateKey();
  await createTestClient({ mode: "anvil", transport: http(chain.rpcUrl) }).setBalance({
    address: privateKeyToAccount(facilitatorKey).address,
    value: parseEther("10"),
  });
  facilitator = createBatchSettlementFacilitator({ rpcUrl: chain.rpcUrl, privateKey: facilitatorKey, receiverAuthorizerKey: authorizerKey, signRefunds: true });
  requirements = {
    scheme: "batch-settlement",
    network: NETWORK,
    asset: chain.usdc,
    amount: PRICE.toString(),
    payTo: receiver,
    maxTimeoutSeconds: 300,
    extra: { name: "USDC", version: "2", receiverAuthorizer: facilitator.receiverAuthorizer, withdrawDelay: 900, assetTransferMethod: "eip3009" },
  };
}, 60_000);
afterAll(() => chain?.stop());

/** the requirements the server's channel manager sends with its claim, settle and refund payloads */
const operations = (): PaymentRequirements => ({
  scheme: "batch-settlement",
  network: NETWORK,
  asset: chain.usdc,
  amount: "0",
  payTo: receiver,
  maxTimeoutSeconds: 0,
  extra: {},
});
const envelope = (payload: unknown, accepted: PaymentRequirements = requirements): PaymentPayload => ({
  x402Version: 2,
  accepted,
  payload: payload as Record<string, unknown>,
});

const channelState = async (id: Hex) => reader.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: BATCH_ABI, functionName: "channels", args: [id] });
const receiverState = async () =>
  reader.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: BATCH_ABI, functionName: "receivers", args: [receiver, chain.usdc] });

/** a funded payer with the official client scheme, and the channel its first paid request opened (deposit settled) */
async function openChannel() {
  const payer = privateKeyToAccount(generatePrivateKey());
  await chain.fund(payer.address, PAYER_FUNDS);
  const signer = toClientEvmSigner(payer, reader as never);
  const storage = new InMemoryClientChannelStorage();
  const client = new BatchClientScheme(signer, { storage });
  const config: Config = client.buildChannelConfig(requirements);
  const channelId = computeChannelId(config, NETWORK);
  const first = envelope((await client.createPaymentPayload(2, requirements)).payload);
  const verified = await facilitator.verify(first, requirements);
  expect(verified).toMatchObject({ isValid: true, payer: payer.address });
  const settled = await facilitator.settle(first, requirements);
  expect(settled).toMatchObject({
    success: true,
    amount: "5000",
    extra: { channelState: { channelId, balance: "5000", totalClaimed: "0", refundNonce: "0" } },
  });
  /** the server's bookkeeping after a request it served and charged PRICE for */
  const charged = (depositAmount?: string) =>
    updateChannelFromSettle(storage, { server: { chargedAmount: PRICE.toString() }, local: { channelId, requestAmount: PRICE.toString(), depositAmount } });
  await charged("5000");
  return { payer, signer, client, config, channelId, first, charged };
}

describe("the contracts answer as the package computes", () => {
  it("channel id and the voucher, refund and claim-batch digests equal @x402/evm's EIP-712 hashes", async () => {
    const config: Config = new BatchClientScheme(privateKeyToAccount(generatePrivateKey())).buildChannelConfig(requirements);
    const id = computeChannelId(config, NETWORK);
    const domain = { ...BATCH_SETTLEMENT_DOMAIN, chainId: 84532, verifyingContract: BATCH_SETTLEMENT_ADDRESS } as const;
    const read = <F extends "getChannelId" | "getVoucherDigest" | "getRefundDigest" | "getClaimBatchDigest">(functionName: F, args: unknown[]) =>
      reader.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: BATCH_ABI, functionName, args } as never) as Promise<Hex>;
    expect(await read("getChannelId", [config])).toBe(id);
    expect(await read("getVoucherDigest", [id, 1234n])).toBe(
      hashTypedData({ domain, types: voucherTypes, primaryType: "Voucher", message: { channelId: id, maxClaimableAmount: 1234n } }),
    );
    expect(await read("getRefundDigest", [id, 3n, 55n])).toBe(
      hashTypedData({ domain, types: refundTypes, primaryType: "Refund", message: { channelId: id, nonce: 3n, amount: 55n } }),
    );
    const claims = [{ voucher: { channel: config, maxClaimableAmount: 10n }, signature: "0x" as Hex, totalClaimed: 9n }];
    expect(await read("getClaimBatchDigest", [claims])).toBe(
      hashTypedData({
        domain,
        types: claimBatchTypes,
        primaryType: "ClaimBatch",
        message: { claims: [{ channelId: id, maxClaimableAmount: 10n, totalClaimed: 9n }] },
      }),
    );
  });
});

describe("deposit, vouchers, claim, settle, refund", () => {
  it("moves every unit where the vouchers say: 5000 in, 3000 to the receiver, 2000 back to the payer", async () => {
    const { payer, client, config, channelId, first, charged } = await openChannel();
    expect(first.payload).toMatchObject({
      type: "deposit",
      channelConfig: config,
      voucher: { channelId, maxClaimableAmount: "1000" },
      deposit: { amount: "5000" },
    });
    expect(await chain.balanceOf(payer.address)).toBe(PAYER_FUNDS - 5_000n);
    expect(await chain.balanceOf(BATCH_SETTLEMENT_ADDRESS)).toBe(5_000n);
    expect(await channelState(channelId)).toEqual([5_000n, 0n]);

    // two more requests: cumulative vouchers the facilitator verifies against the channel, nothing on chain
    const second = envelope((await client.createPaymentPayload(2, requirements)).payload);
    expect(second.payload).toMatchObject({ type: "voucher", voucher: { channelId, maxClaimableAmount: "2000" } });
    expect(await facilitator.verify(second, requirements)).toMatchObject({ isValid: true, extra: { balance: "5000", totalClaimed: "0" } });
    await charged();
    const third = envelope((await client.createPaymentPayload(2, requirements)).payload);
    expect(third.payload).toMatchObject({ type: "voucher", voucher: { maxClaimableAmount: "3000" } });
    expect(await facilitator.verify(third, requirements)).toMatchObject({ isValid: true });
    const v2 = (second.payload as { voucher: { signature: Hex } }).voucher.signature;
    const v3 = (third.payload as { voucher: { signature: Hex } }).voucher.signature;

    // the channel manager claims the first two (the facilitator adds the receiver authorizer's signature)
    const claim = { voucher: { channel: config, maxClaimableAmount: "2000" }, signature: v2, totalClaimed: "2000" };
    expect(await facilitator.settle(envelope({ type: "claim", claims: [claim] }, operations()), operations())).toMatchObject({ success: true });
    expect(await channelState(channelId)).toEqual([5_000n, 2_000n]);
    expect(await receiverState()).toEqual([2_000n, 0n]);

    const payout = envelope({ type: "settle", receiver, token: chain.usdc }, operations());
    expect(await facilitator.settle(payout, operations())).toMatchObject({ success: true, amount: "2000" });
    expect(await chain.balanceOf(receiver)).toBe(2_000n);

    // the payer asks for its money back: the client's refund payload verifies; the server enriches it with the
    // last voucher's claim, the amount and the refund nonce; one multicall claims to 3000 and refunds 2000
    const refundVoucher = { channelId, maxClaimableAmount: "3000", signature: v3 };
    expect(await facilitator.verify(envelope({ type: "refund", channelConfig: config, voucher: refundVoucher }), requirements)).toMatchObject({
      isValid: true,
    });
    const lastClaim = { voucher: { channel: config, maxClaimableAmount: "3000" }, signature: v3, totalClaimed: "3000" };
    const refund = { type: "refund", channelConfig: config, voucher: refundVoucher, amount: "2000", refundNonce: "0", claims: [lastClaim] };
    expect(await facilitator.settle(envelope(refund, operations()), operations())).toMatchObject({
      success: true,
      amount: "2000",
      payer: payer.address,
      extra: { channelState: { channelId, balance: "3000", totalClaimed: "3000", refundNonce: "1" } },
    });
    expect(await chain.balanceOf(payer.address)).toBe(PAYER_FUNDS - 3_000n);
    expect(await channelState(channelId)).toEqual([3_000n, 3_000n]);
    expect(await reader.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: BATCH_ABI, functionName: "refundNonce", args: [channelId] })).toBe(1n);

    expect(await facilitator.settle(payout, operations())).toMatchObject({ success: true, amount: "1000" });
    expect(await chain.balanceOf(receiver)).toBe(3_000n);
    expect(await chain.balanceOf(BATCH_SETTLEMENT_ADDRESS)).toBe(0n);
    expect(await facilitator.settle(payout, operations())).toMatchObject({ success: false, errorReason: "invalid_batch_settlement_evm_nothing_to_settle" });
    // the same refund again: nothing is left to refund (and its nonce is used)
    expect(await facilitator.settle(envelope(refund, operations()), operations())).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_refund_no_balance",
    });
    expect(await chain.balanceOf(payer.address)).toBe(PAYER_FUNDS - 3_000n);
  });
});

describe("refusals", () => {
  it("a voucher above the deposit fails verify, and so does one the payer did not sign", async () => {
    const { signer, config, channelId } = await openChannel();
    const over = await signVoucher(signer, channelId, "5001", NETWORK);
    expect(await facilitator.verify(envelope({ type: "voucher", channelConfig: config, voucher: over }), requirements)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    });
    const forged = await signVoucher(privateKeyToAccount(generatePrivateKey()), channelId, "2000", NETWORK);
    expect(await facilitator.verify(envelope({ type: "voucher", channelConfig: config, voucher: forged }), requirements)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_voucher_signature",
    });
    // and a claim of the over-signed voucher does not get past the contract's balance check
    const claim = { voucher: { channel: config, maxClaimableAmount: "5001" }, signature: over.signature, totalClaimed: "5001" };
    expect(await facilitator.settle(envelope({ type: "claim", claims: [claim] }, operations()), operations())).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
    });
    expect(await channelState(channelId)).toEqual([5_000n, 0n]);
  });

  it("a facilitator that does not sign refunds refuses one without the authorizer's signature, before any transaction", async () => {
    const { payer, config, channelId, first } = await openChannel();
    const strict = createBatchSettlementFacilitator({ rpcUrl: chain.rpcUrl, privateKey: facilitatorKey, receiverAuthorizerKey: authorizerKey });
    const voucher = (first.payload as { voucher: unknown }).voucher;
    const refund = { type: "refund", channelConfig: config, voucher, amount: "5000", refundNonce: "0", claims: [] };
    expect(await strict.settle(envelope(refund, operations()), operations())).toMatchObject({ success: false, errorReason: REFUND_SIGNATURE_REQUIRED });
    expect(await chain.balanceOf(payer.address)).toBe(PAYER_FUNDS - 5_000n);
    expect(await channelState(channelId)).toEqual([5_000n, 0n]);
  });
});
