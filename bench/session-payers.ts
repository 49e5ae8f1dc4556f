/**
 * The bench's session payers: each a funded wallet with the OFFICIAL client (@x402/core's x402Client with
 * @x402/evm's batch-settlement scheme, its in-memory channel storage) and a channel of its own. Its first call
 * goes through @x402/fetch's wrapFetchWithPayment (the deposit, before any load); then batches of vouchers are
 * signed ahead by the same client, as `exact`'s proofs are, and sent in order by one closed loop: a voucher's
 * cumulative amount is the last one charged plus the price. What a batch left unsent is signed again next time
 * from the last voucher sent.
 */
import { x402Client } from "@x402/core/client";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, InMemoryClientChannelStorage, updateChannelFromSettle } from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import type { BaseSepoliaNode } from "../fixtures/base-sepolia";

/** vouchers signed ahead, sent one after the other */
export interface VoucherBatch {
  vouchers: { headers: Record<string, string>; cumulative: bigint }[];
  sent: number;
}

export interface SessionPayer {
  address: `0x${string}`;
  /** the first paid call, through @x402/fetch: the deposit (one transaction) and the first voucher */
  deposit(url: string): Promise<void>;
  /** sign `n` vouchers of this route, from the last one sent */
  sign(required: PaymentRequired, n: number): Promise<VoucherBatch>;
  /** the next voucher of a batch (throws when it has none left: the request counts as failed) */
  next(batch: VoucherBatch): Record<string, string>;
}

/** `n` payers, each funded on the chain; each one's deposit of `deposit` (token units) is made by its first paid call */
export async function sessionPayers(chain: BaseSepoliaNode, required: PaymentRequired, n: number, deposit: bigint): Promise<SessionPayer[]> {
  const offer = required.accepts.find((a) => a.scheme === "batch-settlement")!;
  const price = BigInt(offer.amount);
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
  const payers: SessionPayer[] = [];
  for (let i = 0; i < n; i++) {
    const account = privateKeyToAccount(generatePrivateKey());
    await chain.fund(account.address, deposit + 10_000_000n);
    const storage = new InMemoryClientChannelStorage();
    const depositMultiplier = Math.max(3, Number(deposit / price));
    const client = new x402Client().register(
      "eip155:84532",
      new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient), { storage, depositPolicy: { depositMultiplier } }),
    );
    client.setSpendControls({ maxAmountPerPayment: false, allowedAssets: [{ network: "eip155:84532", asset: "USDC", maxAmountPerPayment: price.toString() }] });
    let channelId: `0x${string}` | undefined;
    let charged = price;
    payers.push({
      address: account.address,
      deposit: async (url) => {
        const first = await wrapFetchWithPayment(fetch, client)(url);
        if (first.status !== 200) throw new Error(`a session payer's deposit was answered ${first.status}: ${await first.text()}`);
        await first.arrayBuffer();
      },
      sign: async (req, count) => {
        if (channelId)
          await storage.set(channelId.toLowerCase(), { ...(await storage.get(channelId.toLowerCase())), chargedCumulativeAmount: charged.toString() });
        const vouchers: VoucherBatch["vouchers"] = [];
        for (let k = 0; k < count; k++) {
          const payload = await client.createPaymentPayload(req);
          const voucher = (payload.payload as { voucher: { channelId: `0x${string}`; maxClaimableAmount: string } }).voucher;
          channelId = voucher.channelId;
          vouchers.push({ headers: { "payment-signature": encodePaymentSignatureHeader(payload) }, cumulative: BigInt(voucher.maxClaimableAmount) });
          // as if answered: the client's base moves one price up
          await updateChannelFromSettle(storage, { server: { chargedAmount: price.toString() }, local: { channelId, requestAmount: price.toString() } });
        }
        return { vouchers, sent: 0 };
      },
      next: (batch) => {
        const v = batch.vouchers[batch.sent++];
        if (!v) throw new Error("no voucher left in the batch");
        charged = v.cumulative;
        return v.headers;
      },
    });
  }
  return payers;
}
