/**
 * x402 sessions (`batch-settlement`) against the gateway, paid by the OFFICIAL client (@x402/core's x402Client
 * with @x402/evm's batch-settlement scheme, through @x402/fetch): one deposit on chain, then vouchers checked
 * by the gateway alone (no transaction per call), redeemed on chain in a batch that pays the receiver exactly
 * what was charged. A replayed, stale, over-deposit or foreign voucher is refused with a typed error and
 * nothing is served or charged.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, createTestClient, createWalletClient, decodeFunctionData, getAddress, http, parseAbi, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf, setRow } from "../helpers/rows";
import { AUTHORIZER_KEY, newPayer, rateIdentity, startX402Suite, type X402Stack } from "../helpers/x402-stack";

const PRICE = 1_000n; // GET /api/v1/health

/** the event log of the treasuries a payer's wallet stands behind */
async function eventsOfPayer(payer: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const treasuries = await stack.gateway.ctx.db.all<{ id: string }>("SELECT id FROM treasuries WHERE lower(wallet_address) = ?", payer.toLowerCase());
  const all = await Promise.all(treasuries.map((t) => stack.gateway.ctx.stores.events.after(t.id, 0, 500)));
  return all.flat();
}
const PATH = "/api/v1/health";
const CHANNEL_CONFIG =
  "(address payer, address payerAuthorizer, address receiver, address receiverAuthorizer, address token, uint40 withdrawDelay, bytes32 salt)";
const WITHDRAW_ABI = parseAbi([`function initiateWithdraw(${CHANNEL_CONFIG} config, uint128 amount)`, `function finalizeWithdraw(${CHANNEL_CONFIG} config)`]);
const AUTHORIZER = privateKeyToAccount(AUTHORIZER_KEY).address;

let stack: X402Stack;
let base: string;

beforeAll(async () => {
  // redemption only when asked (the policy's count is out of reach; the time and amount far off)
  ({ stack, base } = await startX402Suite({
    X402_SESSION_RECEIVER_AUTHORIZER: AUTHORIZER,
    X402_SESSION_REDEEM_VOUCHERS: "100000",
    X402_SESSION_REDEEM_SECONDS: "300",
    X402_SESSION_REDEEM_AMOUNT: "1000000000",
  }));
}, 120_000);
afterAll(async () => stack?.close());

function sessionClient(account: PrivateKeyAccount) {
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
  const signer = toClientEvmSigner(account, publicClient);
  const scheme = new BatchSettlementEvmScheme(signer, { depositPolicy: { depositMultiplier: 20 } });
  const client = new x402Client();
  client.register("eip155:84532", scheme);
  return { fetch: wrapFetchWithPayment(fetch, client), scheme, publicClient };
}

const redeemer = () => stack.gateway.gateway.services.payments.redeemer!;
const blockNumber = () => createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) }).getBlockNumber();

describe("x402 sessions with the official batch-settlement client", () => {
  it("the 402 offers a session beside exact, with this service's channel terms", async () => {
    const r = await fetch(`${base}${PATH}`);
    expect(r.status).toBe(402);
    const required = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    const session = required.accepts.find((a) => a.scheme === "batch-settlement")!;
    expect(session).toMatchObject({ amount: PRICE.toString(), payTo: stack.payTo, network: "eip155:84532" });
    expect(session.extra).toMatchObject({ receiverAuthorizer: AUTHORIZER, withdrawDelay: 900, assetTransferMethod: "eip3009" });
  });

  it("deposits once, then pays each call with a voucher and no transaction; a batch redeems exactly what was charged", async () => {
    const payer = await newPayer(stack.chain);
    const { fetch: paid } = sessionClient(payer.account);
    const first = await paid(`${base}${PATH}`);
    expect(first.status, await first.clone().text()).toBe(200);
    const firstSettle = decodePaymentResponseHeader(first.headers.get("payment-response")!);
    expect(firstSettle.transaction).toMatch(/^0x[0-9a-f]{64}$/); // the deposit's transaction
    const depositBlock = await blockNumber();
    const payerAfterDeposit = await stack.chain.balanceOf(payer.account.address);
    expect(payerAfterDeposit).toBe(10_000_000n - 20n * PRICE);

    for (let i = 2; i <= 6; i++) {
      const r = await paid(`${base}${PATH}`);
      expect(r.status).toBe(200);
      const settle = decodePaymentResponseHeader(r.headers.get("payment-response")!);
      expect(settle.extra).toMatchObject({ chargedAmount: PRICE.toString(), channelState: { chargedCumulativeAmount: (BigInt(i) * PRICE).toString() } });
    }
    // five answered calls, no transaction: the chain did not move
    expect(await blockNumber()).toBe(depositBlock);
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(payerAfterDeposit);

    const receiverBefore = await stack.chain.balanceOf(stack.payTo);
    const r = await redeemer().redeem();
    expect(r).toMatchObject({ channels: 1, vouchers: 6, amount: 6n * PRICE });
    expect(r!.claimTx).toMatch(/^0x/);
    expect(r!.settleTx).toMatch(/^0x/);
    expect((await stack.chain.balanceOf(stack.payTo)) - receiverBefore).toBe(6n * PRICE);
    const [channel] = await rowsOf(stack.gateway.ctx.db, "x402_channels", { payer: payer.account.address.toLowerCase() });
    expect(channel).toMatchObject({ charged: (6n * PRICE).toString(), total_claimed: (6n * PRICE).toString(), vouchers_unredeemed: 0 });
    // nothing left to redeem: a second round sends nothing
    expect(await redeemer().redeem()).toBeUndefined();
    // the payer's treasury was told: each settled call, and the redemption with its transaction
    const log = await eventsOfPayer(payer.account.address);
    expect(log.filter((e) => e.type === "payment.settled").length).toBeGreaterThanOrEqual(1);
    expect(log.filter((e) => e.type === "session.redeemed").map((e) => e.data)).toEqual([
      { channel_id: channel!.channel_id, amount_usdc: "0.006", transaction: r!.claimTx },
    ]);
  });

  it("a replayed voucher is refused with the scheme's corrective 402 and serves nothing; a stale one too", async () => {
    const payer = await newPayer(stack.chain);
    const { scheme } = sessionClient(payer.account);
    const client = new x402Client();
    client.register("eip155:84532", scheme);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const deposit = await client.createPaymentPayload(required);
    const header = encodePaymentSignatureHeader(deposit);
    const ok = await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } });
    expect(ok.status).toBe(200);
    const charged = () => rowsOf(stack.gateway.ctx.db, "x402_channels", { payer: payer.account.address.toLowerCase() }).then((r) => r[0]!.charged);
    expect(await charged()).toBe(PRICE.toString());
    // the same proof again: already served
    const again = await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } });
    expect(again.status).toBe(402);
    const refusal = decodePaymentRequiredHeader(again.headers.get("payment-required")!);
    expect(refusal.error).toBe("invalid_batch_settlement_evm_cumulative_amount_mismatch");
    expect(refusal.accepts.find((a) => a.scheme === "batch-settlement")!.extra).toMatchObject({
      channelState: { chargedCumulativeAmount: PRICE.toString() },
      voucherState: { signedMaxClaimable: PRICE.toString() },
    });
    expect(await charged()).toBe(PRICE.toString());
    // a voucher for a cumulative amount that skips ahead (or falls behind) is not this call's
    const channelId = (deposit.payload as { voucher: { channelId: `0x${string}` } }).voucher.channelId;
    const signer = toClientEvmSigner(payer.account);
    for (const amount of [3n * PRICE, PRICE]) {
      const voucher = await signVoucher(signer, channelId, amount.toString(), "eip155:84532");
      const payload = { ...deposit, payload: { type: "voucher", channelConfig: (deposit.payload as { channelConfig: unknown }).channelConfig, voucher } };
      const r = await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payload as never) } });
      expect(r.status).toBe(402);
      expect(decodePaymentRequiredHeader(r.headers.get("payment-required")!).error).toBe("invalid_batch_settlement_evm_cumulative_amount_mismatch");
    }
    expect(await charged()).toBe(PRICE.toString());
  });

  it("a voucher above the deposit, or signed by another key, is refused with a typed error", async () => {
    const payer = await newPayer(stack.chain);
    const { scheme } = sessionClient(payer.account);
    const client = new x402Client();
    client.register("eip155:84532", scheme);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const deposit = await client.createPaymentPayload(required);
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(deposit) } })).status).toBe(200);
    const { channelConfig, voucher: first } = deposit.payload as { channelConfig: unknown; voucher: { channelId: `0x${string}` } };
    const send = async (signer: ReturnType<typeof toClientEvmSigner>, amount: bigint) => {
      const voucher = await signVoucher(signer, first.channelId, amount.toString(), "eip155:84532");
      return fetch(`${base}${PATH}`, {
        headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader({ ...deposit, payload: { type: "voucher", channelConfig, voucher } } as never) },
      });
    };
    // the deposit covers 20 calls: a voucher for a 21st call's cumulative amount is over it (the base matches only if 20 were made; here the base is 1)
    const stranger = toClientEvmSigner(privateKeyToAccount(generatePrivateKey()));
    const foreign = await send(stranger, 2n * PRICE);
    expect(foreign.status).toBe(402);
    expect(((await foreign.json()) as { error: string }).error).toBe("invalid_payment");
    const signer = toClientEvmSigner(payer.account);
    for (let i = 2n; i <= 20n; i++) expect((await send(signer, i * PRICE)).status).toBe(200);
    const over = await send(signer, 21n * PRICE);
    expect(over.status).toBe(402);
    expect(((await over.json()) as { error: string }).error).toBe("session_deposit_exceeded");
  });

  it("the rate limit's identity: a voucher proves its payer only on a channel this service holds, and only at the channel's next amount", async () => {
    const payer = await newPayer(stack.chain);
    const { scheme } = sessionClient(payer.account);
    const client = new x402Client();
    client.register("eip155:84532", scheme);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const deposit = await client.createPaymentPayload(required);
    const identity = (payload: unknown) => rateIdentity(stack.gateway, "GET", PATH, { "payment-signature": encodePaymentSignatureHeader(payload as never) });
    // before its deposit is settled here, the channel proves nothing; a malformed one neither (it is counted by address)
    expect(await identity(deposit)).toBeNull();
    expect(await identity({ ...deposit, payload: null })).toBeNull();
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(deposit) } })).status).toBe(200);
    // its voucher is charged: it names nobody any more; the next one does
    expect(await identity(deposit)).toBeNull();
    const { channelConfig, voucher: first } = deposit.payload as { channelConfig: Record<string, unknown>; voucher: { channelId: `0x${string}` } };
    const next = await signVoucher(toClientEvmSigner(payer.account), first.channelId, (2n * PRICE).toString(), "eip155:84532");
    const nextPayment = { ...deposit, payload: { type: "voucher", channelConfig, voucher: next } };
    expect(await identity(nextPayment)).toBe(payer.account.address.toLowerCase());
    // a voucher that skips an amount is not the channel's next one
    const skipping = await signVoucher(toClientEvmSigner(payer.account), first.channelId, (3n * PRICE).toString(), "eip155:84532");
    expect(await identity({ ...nextPayment, payload: { ...nextPayment.payload, voucher: skipping } })).toBeNull();
    // an attacker's channel naming the victim as payer, with the attacker as voucher signer: another channel id, none here
    const attacker = privateKeyToAccount(generatePrivateKey());
    const forgedConfig = { ...channelConfig, payerAuthorizer: attacker.address };
    const forgedId = computeChannelId(forgedConfig as never, "eip155:84532");
    const voucher = await signVoucher(toClientEvmSigner(attacker), forgedId, (2n * PRICE).toString(), "eip155:84532");
    expect(await identity({ ...deposit, payload: { type: "voucher", channelConfig: forgedConfig, voucher } })).toBeNull();
  });

  it("a paid MCP tool call pays with the session too: the official client's deposit, then its vouchers in _meta", async () => {
    const payer = await newPayer(stack.chain);
    const { scheme } = sessionClient(payer.account);
    const client = new x402Client();
    client.register("eip155:84532", scheme);
    const mcp = new Client({ name: "session-agent", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`)));
    try {
      const required = (await mcp.callTool({ name: "get_health", arguments: {} })).structuredContent as never;
      const blockBefore = await blockNumber();
      for (let call = 1n; call <= 3n; call++) {
        const payment = await client.createPaymentPayload(required);
        const paid = await mcp.callTool({ name: "get_health", arguments: {}, _meta: { "x402/payment": payment } });
        expect(paid.isError, JSON.stringify(paid.structuredContent)).toBeFalsy();
        const settled = paid._meta?.["x402/payment-response"] as { extra: { channelState: { chargedCumulativeAmount: string } } };
        expect(settled.extra.channelState.chargedCumulativeAmount).toBe((call * PRICE).toString());
        // the client learns what was charged from the settlement, as over HTTP
        await scheme.schemeHooks!.onPaymentResponse!({ settleResponse: settled, paymentPayload: payment, requirements: payment.accepted } as never);
      }
      // one transaction: the deposit
      expect(await blockNumber()).toBe(blockBefore + 1n);
    } finally {
      await mcp.close();
    }
  });

  // last: it moves the chain's clock past the withdrawal delay (authorizations signed by the wall clock expire on chain)
  it("the payer reclaims its unused deposit as the scheme allows (withdrawal after the delay); what was charged is claimed first", async () => {
    const payer = await newPayer(stack.chain);
    const { fetch: paid } = sessionClient(payer.account);
    for (let i = 0; i < 3; i++) expect((await paid(`${base}${PATH}`)).status).toBe(200);
    const [row] = await rowsOf<{ channel_id: string; config: string }>(stack.gateway.ctx.db, "x402_channels", { payer: payer.account.address.toLowerCase() });
    const config = JSON.parse(row!.config) as Record<string, unknown>;
    const transport = http(stack.chain.rpcUrl);
    const test = createTestClient({ mode: "anvil", chain: baseSepolia, transport });
    await test.setBalance({ address: payer.account.address, value: parseEther("1") });
    const wallet = createWalletClient({ account: payer.account, chain: baseSepolia, transport });
    const publicClient = createPublicClient({ chain: baseSepolia, transport });
    const send = async (functionName: "initiateWithdraw" | "finalizeWithdraw", args: readonly unknown[]) =>
      publicClient.waitForTransactionReceipt({
        hash: await wallet.writeContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: WITHDRAW_ABI, functionName, args: args as never }),
      });
    await send("initiateWithdraw", [config, 20n * PRICE]);
    // the gateway reads the channel again (its state is older than the sync interval): a payer leaving pays no more
    // calls, and its pending withdrawal makes a batch due at once
    await setRow(stack.gateway.ctx.db, "x402_channels", { channel_id: row!.channel_id }, { synced_at: "2000-01-01T00:00:00.000Z" });
    const leaving = await paid(`${base}${PATH}`);
    expect(leaving.status).toBe(402);
    expect(((await leaving.json()) as { error: string }).error).toBe("session_withdrawal_pending");
    const [seen] = await rowsOf<{ withdraw_requested_at: number }>(stack.gateway.ctx.db, "x402_channels", { channel_id: row!.channel_id });
    expect(seen!.withdraw_requested_at).toBeGreaterThan(0);
    // the payer's treasury is told once: the withdrawal, and when the deposit can be taken (after the 900 s delay)
    const started = (await eventsOfPayer(payer.account.address)).filter((e) => e.type === "session.withdrawal_started");
    expect(started.map((e) => e.data)).toEqual([
      { channel_id: row!.channel_id, withdrawable_at: new Date((seen!.withdraw_requested_at + 900) * 1000).toISOString() },
    ]);
    expect(await redeemer().due()).toBe(true);
    // the batch takes every channel with unredeemed vouchers (the earlier tests' too): this one's three are claimed
    expect((await redeemer().redeem())?.claimTx).toMatch(/^0x/);
    expect((await rowsOf(stack.gateway.ctx.db, "x402_channels", { channel_id: row!.channel_id }))[0]).toMatchObject({
      total_claimed: (3n * PRICE).toString(),
      vouchers_unredeemed: 0,
    });
    // the delay passes on chain; the payer takes back what no voucher was charged for, not a unit more
    await test.increaseTime({ seconds: 901 });
    await test.mine({ blocks: 1 });
    const before = await stack.chain.balanceOf(payer.account.address);
    await send("finalizeWithdraw", [config]);
    expect((await stack.chain.balanceOf(payer.account.address)) - before).toBe(17n * PRICE);
  });

  it("relies on no difference left from the contract on Base: every deposit went through the ERC-3009 collector, every signed claim's rows name this service's receiver authorizer", async () => {
    // docs/X402-CONTRACTS.md: the local contract accepts only that collector and checks the claim signature per row; the
    // official one is not at hand to match, so every transaction this run sent to the contract must not depend on either
    const CALLS = parseAbi([
      `function deposit(${CHANNEL_CONFIG} config, uint128 amount, address collector, bytes collectorData)`,
      `function claimWithSignature(((${CHANNEL_CONFIG} channel, uint128 maxClaimableAmount) voucher, bytes signature, uint128 totalClaimed)[] voucherClaims, bytes authorizerSignature)`,
      "function multicall(bytes[] data)",
    ]);
    const client = createPublicClient({ chain: baseSepolia, transport: http(stack.chain.rpcUrl) });
    const seen = { deposit: 0, claimWithSignature: 0 };
    const check = (data: `0x${string}`): void => {
      let call: ReturnType<typeof decodeFunctionData<typeof CALLS>>;
      try {
        call = decodeFunctionData({ abi: CALLS, data });
      } catch {
        return; // another function of the contract
      }
      if (call.functionName === "multicall") return (call.args[0] as readonly `0x${string}`[]).forEach(check);
      seen[call.functionName]++;
      if (call.functionName === "deposit") expect(getAddress(call.args[2] as string)).toBe(getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS));
      else for (const row of call.args[0]) expect(getAddress(row.voucher.channel.receiverAuthorizer)).toBe(getAddress(AUTHORIZER));
    };
    const latest = await client.getBlockNumber();
    for (let n = 0n; n <= latest; n++) {
      const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
      for (const tx of block.transactions) if (tx.to && getAddress(tx.to) === getAddress(BATCH_SETTLEMENT_ADDRESS)) check(tx.input);
    }
    expect(seen.deposit).toBeGreaterThan(0);
    expect(seen.claimWithSignature).toBeGreaterThan(0);
  });
});
