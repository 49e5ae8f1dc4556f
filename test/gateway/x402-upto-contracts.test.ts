/**
 * x402's `upto` scheme end to end on the local Base Sepolia (Anvil 84532, TestUSDC) with the project's Permit2 and
 * x402UptoPermit2Proxy at their canonical addresses: the official server scheme builds the requirements, the
 * official client (@x402/core's x402Client with @x402/evm's upto client) signs a maximum, and the project's
 * facilitator module (the official upto facilitator scheme over the facilitator's key) verifies it and settles
 * what was used. Balances are checked to the atomic unit; every refusal leaves them as they were. Settling is
 * idempotent per authorization: a settled one is answered with its settlement on chain (read from the official proxy's Settled log and its settle call),
 * also by a facilitator that did not send it (a restart), and never moves funds twice.
 */
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { PERMIT2_ADDRESS, toClientEvmSigner, uptoPermit2WitnessTypes, x402UptoPermit2ProxyAddress } from "@x402/evm";
import { createPermit2ApprovalTx, UptoEvmScheme as UptoClientScheme } from "@x402/evm/upto/client";
import { UptoEvmScheme as UptoServerScheme } from "@x402/evm/upto/server";
import { createPublicClient, createTestClient, createWalletClient, http, parseAbi, parseEther, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { placeUptoContracts } from "../../fixtures/x402-upto-contracts";
import { createUptoFacilitator, type UptoFacilitator } from "../../gateway/src/x402/facilitator/upto";

const NETWORK = "eip155:84532" as const;
const MAX = 5_000n;

let chain: BaseSepoliaNode;
let facilitatorKey: Hex;
let facilitator: UptoFacilitator;
let requirements: PaymentRequirements;
const payTo = privateKeyToAccount(generatePrivateKey()).address;

beforeAll(async () => {
  chain = await startBaseSepolia();
  await placeUptoContracts(chain.rpcUrl);
  facilitatorKey = generatePrivateKey();
  await createTestClient({ mode: "anvil", transport: http(chain.rpcUrl) }).setBalance({
    address: privateKeyToAccount(facilitatorKey).address,
    value: parseEther("10"),
  });
  facilitator = createUptoFacilitator({ rpcUrl: chain.rpcUrl, privateKey: facilitatorKey });
  // the requirements as x402's upto server scheme builds them from a price and the facilitator's /supported kind
  const server = new UptoServerScheme();
  const price = await server.parsePrice({ amount: MAX.toString(), asset: chain.usdc, extra: { name: "USDC", version: "2" } }, NETWORK);
  const base = { scheme: "upto", network: NETWORK, asset: price.asset, amount: price.amount, payTo, maxTimeoutSeconds: 300, extra: price.extra ?? {} };
  requirements = await server.enhancePaymentRequirements(base, facilitator.supportedKind(), []);
}, 60_000);
afterAll(() => chain?.stop());

/** a payer with 10 000 units and gas; approves Permit2 on the token (the official approval transaction) unless told not to */
async function newPayer(approve = true, key: Hex = generatePrivateKey()): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(key);
  await chain.fund(account.address, 10_000n);
  await createTestClient({ mode: "anvil", transport: http(chain.rpcUrl) }).setBalance({ address: account.address, value: parseEther("1") });
  if (approve) {
    const wallet = createWalletClient({ account, chain: baseSepolia, transport: http(chain.rpcUrl) });
    const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl), pollingInterval: 50 });
    const hash = await wallet.sendTransaction(createPermit2ApprovalTx(chain.usdc));
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
  }
  return account;
}

/** the payment the official upto client makes for `accepted` */
async function pay(payer: PrivateKeyAccount, accepted: PaymentRequirements = requirements): Promise<PaymentPayload> {
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
  const client = new x402Client().register(NETWORK, new UptoClientScheme(toClientEvmSigner(payer, publicClient)));
  return client.createPaymentPayload({ x402Version: 2, resource: { url: "https://gateway.invalid/metered" }, accepts: [accepted] });
}

const permit2AuthorizationOf = (payment: PaymentPayload) =>
  (payment.payload as { permit2Authorization: { from: `0x${string}`; nonce: string; witness: Record<string, string> } }).permit2Authorization;

const used = (amount: bigint): PaymentRequirements => ({ ...requirements, amount: amount.toString() });
const balances = async (payer: `0x${string}`) => ({ payer: await chain.balanceOf(payer), payTo: await chain.balanceOf(payTo) });

describe("upto with the official client, server and facilitator scheme", () => {
  it("the server scheme's requirements name Permit2 and this facilitator", () => {
    expect(facilitator.supportedKind()).toEqual({ x402Version: 2, scheme: "upto", network: NETWORK, extra: { facilitatorAddress: facilitator.address } });
    expect(requirements).toEqual({
      scheme: "upto",
      network: NETWORK,
      asset: chain.usdc,
      amount: "5000",
      payTo,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2", assetTransferMethod: "permit2", facilitatorAddress: facilitator.address },
    });
  });

  it("signs a maximum of 5000, verifies, settles 1234: the payer loses exactly 1234 and payTo gets it", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const auth = (payment.payload as { permit2Authorization: Record<string, unknown> }).permit2Authorization;
    expect(payment).toMatchObject({ x402Version: 2, accepted: requirements, payload: { signature: expect.stringMatching(/^0x[0-9a-f]{130}$/) } });
    expect(auth).toMatchObject({
      from: payer.address,
      permitted: { token: chain.usdc, amount: "5000" },
      spender: x402UptoPermit2ProxyAddress,
      witness: { to: payTo, facilitator: facilitator.address, validAfter: "0" },
    });
    expect(payment.extensions).toBeUndefined(); // approved beforehand: no gas-sponsoring extension
    expect(await facilitator.verify(payment, requirements)).toMatchObject({ isValid: true, payer: payer.address });

    const before = await balances(payer.address);
    const settled = await facilitator.settle(payment, used(1_234n));
    expect(settled).toMatchObject({
      success: true,
      network: NETWORK,
      payer: payer.address,
      amount: "1234",
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await balances(payer.address)).toEqual({ payer: before.payer - 1_234n, payTo: before.payTo + 1_234n });
  });

  it("a second settle of a settled authorization answers the first settlement (its transaction and amount) and moves nothing", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const first = await facilitator.settle(payment, used(1_000n));
    expect(first).toMatchObject({ success: true, amount: "1000", transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const after = await balances(payer.address);
    // the same amount, the unused rest, and nothing: each answered with what the chain settled
    for (const amount of [1_000n, MAX - 1_000n, 0n])
      expect(await facilitator.settle(payment, used(amount))).toEqual({
        success: true,
        transaction: first.transaction,
        network: NETWORK,
        payer: payer.address,
        amount: "1000",
      });
    expect(await facilitator.verify(payment, requirements)).toMatchObject({ isValid: false, invalidReason: "permit2_invalid_nonce" });
    expect(await balances(payer.address)).toEqual(after);
  });

  it("a facilitator restarted after the settlement (nothing in memory) answers the retry with it", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const first = await facilitator.settle(payment, used(2_500n));
    const after = await balances(payer.address);
    const restarted = createUptoFacilitator({ rpcUrl: chain.rpcUrl, privateKey: facilitatorKey });
    expect(await restarted.settle(payment, used(3_000n))).toEqual({ ...first, amount: "2500" });
    expect(first).toMatchObject({ success: true, amount: "2500" });
    expect(await balances(payer.address)).toEqual(after);
  });

  it("refuses an authorization whose nonce the payer cancelled (used on chain, never settled)", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const nonce = BigInt(permit2AuthorizationOf(payment).nonce);
    const wallet = createWalletClient({ account: payer, chain: baseSepolia, transport: http(chain.rpcUrl) });
    const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl), pollingInterval: 50 });
    const hash = await wallet.writeContract({
      address: PERMIT2_ADDRESS,
      abi: parseAbi(["function invalidateUnorderedNonces(uint256 wordPos, uint256 mask)"]),
      functionName: "invalidateUnorderedNonces",
      args: [nonce >> 8n, 1n << (nonce & 0xffn)],
    });
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    const before = await balances(payer.address);
    for (const amount of [1_000n, 0n])
      expect(await facilitator.settle(payment, used(amount))).toMatchObject({ success: false, errorReason: "permit2_invalid_nonce", transaction: "" });
    expect(await balances(payer.address)).toEqual(before);
  });

  it("refuses an authorization whose nonce another facilitator settled (the payer itself, to the same payTo)", async () => {
    const key = generatePrivateKey();
    const payer = await newPayer(true, key);
    const payment = await pay(payer);
    // the payer signs its own authorization with the same nonce, naming itself the facilitator, and settles 1 unit
    const auth = permit2AuthorizationOf(payment);
    const own = { ...requirements, extra: { ...requirements.extra, facilitatorAddress: payer.address } };
    const ownAuth = { ...auth, witness: { ...auth.witness, facilitator: payer.address } };
    const signature = await payer.signTypedData({
      domain: { name: "Permit2", chainId: baseSepolia.id, verifyingContract: PERMIT2_ADDRESS },
      types: uptoPermit2WitnessTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: {
        permitted: { token: chain.usdc, amount: MAX },
        spender: x402UptoPermit2ProxyAddress,
        nonce: BigInt(auth.nonce),
        deadline: BigInt((payment.payload as { permit2Authorization: { deadline: string } }).permit2Authorization.deadline),
        witness: { to: payTo, facilitator: payer.address, validAfter: 0n },
      },
    });
    const ownPayment = { ...payment, accepted: own, payload: { signature, permit2Authorization: ownAuth } };
    const self = createUptoFacilitator({ rpcUrl: chain.rpcUrl, privateKey: key });
    expect(await self.settle(ownPayment, { ...own, amount: "1" })).toMatchObject({ success: true, amount: "1" });
    const before = await balances(payer.address);
    expect(await facilitator.settle(payment, used(1_000n))).toMatchObject({ success: false, errorReason: "permit2_invalid_nonce", transaction: "" });
    expect(await balances(payer.address)).toEqual(before);
  });

  it("one settlement per authorization at a time: the same settle joins it, another amount is answered with it once done", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const before = await balances(payer.address);
    const [first, again, other] = await Promise.all([
      facilitator.settle(payment, used(700n)),
      facilitator.settle(payment, used(700n)),
      facilitator.settle(payment, used(2_000n)),
    ]);
    expect(first).toMatchObject({ success: true, amount: "700" });
    expect(again).toBe(first);
    expect(other).toEqual({ ...first, amount: "700" });
    expect(await balances(payer.address)).toEqual({ payer: before.payer - 700n, payTo: before.payTo + 700n });
  });

  it("refuses to settle above the maximum, and the authorization stays good for the maximum itself", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const before = await balances(payer.address);
    expect(await facilitator.settle(payment, used(MAX + 1n))).toMatchObject({
      success: false,
      errorReason: "invalid_upto_evm_payload_settlement_exceeds_amount",
      transaction: "",
    });
    expect(await balances(payer.address)).toEqual(before);
    expect(await facilitator.settle(payment, used(MAX))).toMatchObject({ success: true, amount: "5000" });
    expect(await balances(payer.address)).toEqual({ payer: before.payer - MAX, payTo: before.payTo + MAX });
  });

  it("settles nothing for 0 used (no transaction), and the payment's requirements must be the ones accepted", async () => {
    const payer = await newPayer();
    const payment = await pay(payer);
    const before = await balances(payer.address);
    expect(await facilitator.settle(payment, used(0n))).toMatchObject({ success: true, transaction: "", amount: "0" });
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address;
    expect(await facilitator.verify(payment, { ...requirements, payTo: elsewhere })).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payment_requirements",
    });
    // a payment that claims to accept the other payTo still carries the witness the payer signed
    const relabelled = { ...payment, accepted: { ...payment.accepted, payTo: elsewhere } };
    expect(await facilitator.settle(relabelled, { ...used(10n), payTo: elsewhere })).toMatchObject({
      success: false,
      errorReason: "invalid_permit2_recipient_mismatch",
    });
    expect(await balances(payer.address)).toEqual(before);
  });

  it("refuses a payment signed for another facilitator, and one without a Permit2 approval", async () => {
    const other = privateKeyToAccount(generatePrivateKey()).address;
    const forOther = await pay(await newPayer(), { ...requirements, extra: { ...requirements.extra, facilitatorAddress: other } });
    expect(await facilitator.verify(forOther, forOther.accepted)).toMatchObject({ isValid: false, invalidReason: "upto_facilitator_mismatch" });

    const unapproved = await newPayer(false);
    const payment = await pay(unapproved);
    // the scheme's diagnosis of the failed simulation (through Multicall3, which the local chain has) names the missing approval
    expect(await facilitator.verify(payment, requirements)).toMatchObject({ isValid: false, invalidReason: "permit2_allowance_required" });
    expect(await facilitator.settle(payment, used(100n))).toMatchObject({ success: false, errorReason: "permit2_allowance_required" });
    expect(await chain.balanceOf(unapproved.address)).toBe(10_000n);
  });
});
