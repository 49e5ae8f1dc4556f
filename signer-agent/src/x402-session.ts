/**
 * x402 sessions for the signer agent (`--x402-scheme session`): the official @x402/core client with
 * @x402/evm's batch-settlement scheme. The first paid call deposits into a payment channel (one on-chain
 * transaction, sent by the facilitator from the wallet's EIP-3009 authorization); each later call carries a
 * voucher (an EIP-712 signature over the channel's cumulative amount) that the gateway checks alone, with no
 * transaction. The channel's client state is kept by the package's file storage under the agent's own
 * directory (<dir>/x402-sessions/client/<channelId>.json), so a restarted agent continues its channel.
 *
 * A deposit holds `depositCalls` times the route's price (the scheme's deposit multiplier: at most that many
 * calls of this price per deposit), never more than what is left of today's x402 budget, never less than the
 * call needs. The client's spend control caps each payment at the price the agent read and reserved against
 * its budget: a 402 asking more is not paid. Money is integers (token units) throughout.
 *
 * As for `exact` (gateway-access.ts), a route whose requirements a 402 already stated is paid up front; a 402
 * answer to that (the scheme's corrective 402, or changed requirements: nothing was charged) lets the client
 * resynchronise its channel and the request goes again the stock way (@x402/fetch's wrapFetchWithPayment).
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, type BatchSettlementDepositStrategyContext } from "@x402/evm/batch-settlement/client";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import { wrapFetchWithPayment } from "@x402/fetch";
import { createPublicClient } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { formatDecimal } from "@treasury/core/domain/money";
import type { AuditLog } from "./audit-log";
import { RefusedError } from "./errors";

/** the CAIP-2 network of x402 payments (Base Sepolia) */
export const SESSION_NETWORK = `eip155:${baseSepolia.id}` as const;
/** calls of a route's price one deposit holds, by default */
export const DEFAULT_DEPOSIT_CALLS = 20;

export interface SessionPayerOptions {
  account: PrivateKeyAccount;
  /** Base Sepolia: the channel's state is read there when the agent has none stored */
  rpcUrl?: string;
  /** the agent's directory of channel state */
  directory: string;
  audit: AuditLog;
  log: (line: string) => void;
  /** micro-USDC left of today's x402 budget (a deposit holds no more) */
  budgetLeft: () => bigint;
  depositCalls?: number;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** a payment the gateway answered as charged: the channel, the voucher's cumulative amount, the deposit if it made one */
interface Charged {
  channelId: string;
  cumulative: bigint;
  charged: bigint;
  deposit?: { amount: bigint; transaction: string };
}

export class SessionPayer {
  private readonly storage: FileClientChannelStorage;
  private readonly signer: ReturnType<typeof toClientEvmSigner>;
  /** each paid route's ("METHOD path") requirements as its last 402 stated them */
  readonly required = new Map<string, PaymentRequired>();

  constructor(private readonly opts: SessionPayerOptions) {
    this.storage = new FileClientChannelStorage({ directory: opts.directory });
    const publicClient = createPublicClient({ chain: baseSepolia, transport: rpcHttp(opts.rpcUrl) });
    this.signer = toClientEvmSigner(opts.account, publicClient);
  }

  /** the official client for one route: only sessions, each payment capped at `price` (token units) */
  private client(price: bigint): x402HTTPClient {
    const budgetLeft = this.opts.budgetLeft;
    const scheme = new BatchSettlementEvmScheme(this.signer, {
      storage: this.storage,
      depositPolicy: { depositMultiplier: this.opts.depositCalls ?? DEFAULT_DEPOSIT_CALLS },
      // never more than today's x402 budget has left, never less than this call needs
      depositStrategy: (c: BatchSettlementDepositStrategyContext) => {
        const planned = BigInt(c.depositAmount);
        const left = budgetLeft();
        const needed = BigInt(c.minimumDepositAmount);
        return (planned > left ? (left > needed ? left : needed) : planned).toString();
      },
    });
    const client = new x402Client().register(SESSION_NETWORK, scheme);
    client.setSpendControls({
      maxAmountPerPayment: false,
      allowedAssets: [{ network: SESSION_NETWORK, asset: "USDC", maxAmountPerPayment: price.toString() }],
    });
    return new x402HTTPClient(client);
  }

  /** a fetch that pays `route` (at `price`) with the session's voucher, depositing first when the channel needs it */
  fetchFor(route: string, price: bigint): typeof fetch {
    const http = this.client(price);
    // every request that goes out: a 402's requirements remembered, a charged payment recorded
    const watched = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const request = new Request(input, init);
      const proof = request.headers.get("payment-signature");
      const res = await fetch(request);
      // the route's own requirements: a 402 to a request without a proof (a refused proof's 402 carries a channel's state)
      const required = res.status === 402 && !proof ? res.headers.get("payment-required") : null;
      if (required) {
        const decoded = decodePaymentRequiredHeader(required);
        if (decoded.accepts.some((a) => a.scheme === "batch-settlement")) this.required.set(route, decoded);
      }
      const settled = proof && res.headers.get("payment-response");
      if (settled) this.record(route, proof, settled);
      return res;
    }) as typeof fetch;
    const stock = wrapFetchWithPayment(watched, http);

    return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const known = this.required.get(route);
      if (known) {
        const payload = await this.payload(http, known, route);
        const res = await watched(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...http.encodePaymentSignatureHeader(payload) } });
        await http.processPaymentResult(payload, (name) => res.headers.get(name), res.status);
        if (res.status !== 402) return res;
        this.required.delete(route);
      }
      try {
        return await stock(input, init);
      } catch (err) {
        throw new RefusedError("x402", `could not pay ${route} with an x402 session: ${(err as Error).message.split("\n")[0]}`, undefined, { cause: err });
      }
    }) as typeof fetch;
  }

  private async payload(http: x402HTTPClient, required: PaymentRequired, route: string) {
    try {
      return await http.createPaymentPayload(required);
    } catch (err) {
      throw new RefusedError("x402", `could not pay ${route} with an x402 session: ${(err as Error).message.split("\n")[0]}`, undefined, { cause: err });
    }
  }

  /** what a PAYMENT-SIGNATURE sent and its PAYMENT-RESPONSE say was charged, or undefined */
  private static charged(proof: string, response: string): Charged | undefined {
    const settle = decodePaymentResponseHeader(response);
    const sent = decodePaymentSignatureHeader(proof).payload as {
      type?: string;
      voucher?: { channelId: string; maxClaimableAmount: string };
      deposit?: { amount: string };
    };
    const chargedAmount = (settle.extra as { chargedAmount?: unknown } | undefined)?.chargedAmount;
    if (!settle.success || !sent.voucher || typeof chargedAmount !== "string" || !/^\d+$/.test(chargedAmount)) return undefined;
    const deposit =
      sent.type === "deposit" && sent.deposit && TX_HASH.test(settle.transaction)
        ? { amount: BigInt(sent.deposit.amount), transaction: settle.transaction }
        : undefined;
    return {
      channelId: sent.voucher.channelId,
      cumulative: BigInt(sent.voucher.maxClaimableAmount),
      charged: BigInt(chargedAmount),
      ...(deposit ? { deposit } : {}),
    };
  }

  /** the audit log's entries of a charged call: the deposit it made (not spent: the channel holds it), the voucher's charge */
  private record(route: string, proof: string, response: string): void {
    const c = SessionPayer.charged(proof, response);
    if (!c) return;
    if (c.deposit) {
      this.opts.audit.append({
        event: "x402_deposit",
        amount_micro: c.deposit.amount.toString(),
        tx_hash: c.deposit.transaction,
        channel_id: c.channelId,
        route,
      });
      this.opts.log(`deposited ${formatDecimal(c.deposit.amount, 6)} USDC into an x402 session (transaction ${c.deposit.transaction.slice(0, 12)}...)`);
    }
    this.opts.audit.append({
      event: "x402_payment",
      scheme: "batch-settlement",
      amount_micro: c.charged.toString(),
      channel_id: c.channelId,
      cumulative_micro: c.cumulative.toString(),
      route,
    });
    this.opts.log(
      `paid ${formatDecimal(c.charged, 6)} USDC with an x402 session voucher (channel ${c.channelId.slice(0, 12)}..., ${formatDecimal(c.cumulative, 6)} USDC in all)`,
    );
  }
}
