/**
 * x402's `batch-settlement` scheme (version 2, EVM) for the local facilitator: the official facilitator scheme of
 * `@x402/evm/batch-settlement/facilitator` (2.27) over a viem wallet on the facilitator's key, on the local Base
 * Sepolia (`eip155:84532`) where fixtures/x402-batch-contracts.ts placed BatchSettlement, its ERC-3009 deposit
 * collector and Multicall3 (the scheme reads channel state through it).
 *
 * A payer deposits once into a channel (payload `deposit`: an EIP-3009 ReceiveWithAuthorization to the collector
 * plus a first voucher); each later request carries a cumulative voucher (`voucher`), which verify checks against
 * the channel on chain and which is never sent anywhere; the receiver's side redeems them in batches (`claim`),
 * pays the receiver (`settle`), and gives back what is unclaimed (`refund`, enriched with amount, refundNonce and
 * claims). Verify takes `deposit`, `voucher` and `refund`; settle takes `deposit`, `claim`, `settle` and the
 * enriched `refund`.
 *
 * The receiver authorizer's key (a parameter) signs a claim batch a `claim` or `refund` payload lacks
 * (`claimAuthorizerSignature`): a claim only moves what the payer's vouchers allow to the receiver. A refund
 * without `refundAuthorizerSignature` is signed here only when `signRefunds` is set: the scheme signs any refund
 * it is asked for, so on an unauthenticated facilitator a payer could take back, before the receiver claims it,
 * what its vouchers promised. Set it when only the gateway can reach this facilitator.
 *
 * Around the official scheme: only version 2 on eip155:84532, and a payment's `accepted` must name the
 * requirements' scheme, payTo and asset. A throw (an RPC failure) becomes a typed failure. This module's
 * transactions go out one at a time (`serialize`, or a queue of its own), each at the pending nonce viem reads.
 */
import { toFacilitatorEvmSigner, BATCH_SETTLEMENT_SCHEME, type AuthorizerSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { createWalletClient, publicActions, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { shortError } from "./authorization-call";
import { NETWORK_V2 } from "./payment-versions";

export { BATCH_SETTLEMENT_SCHEME };

/** the refusal of a refund that carries no receiver-authorizer signature when this facilitator does not sign refunds */
export const REFUND_SIGNATURE_REQUIRED = "invalid_batch_settlement_evm_refund_authorizer_signature_required";

/** the `/supported` kind: clients put `extra.receiverAuthorizer` in their channel config */
export interface BatchSettlementKind {
  x402Version: 2;
  scheme: typeof BATCH_SETTLEMENT_SCHEME;
  network: typeof NETWORK_V2;
  extra: { receiverAuthorizer: `0x${string}` };
}

export interface BatchSettlementFacilitator {
  /** the account that sends deposits, claims, settlements and refunds */
  readonly address: `0x${string}`;
  /** the receiver authorizer whose signatures this facilitator adds */
  readonly receiverAuthorizer: `0x${string}`;
  supportedKind(): BatchSettlementKind;
  /** verify a `deposit`, `voucher` or `refund` payload */
  verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  /** settle a `deposit`, `claim`, `settle` or enriched `refund` payload */
  settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
}

export interface BatchSettlementFacilitatorOptions {
  rpcUrl: string;
  /** the facilitator's key: it sends the transactions and pays their gas */
  privateKey: Hex;
  /** the receiver authorizer's key (the channels' `receiverAuthorizer`) */
  receiverAuthorizerKey: Hex;
  /** sign refunds that lack the authorizer's signature (see the file's comment); default false */
  signRefunds?: boolean;
  /** run one send after the others of this key (share it with other senders of the same key); default: a queue of this module's own */
  serialize?: <T>(send: () => Promise<T>) => Promise<T>;
}

const same = (a: unknown, b: unknown) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

/** the payer a payload names (deposit, voucher and refund payloads carry the channel config) */
const payerOf = (payment: PaymentPayload): `0x${string}` | undefined =>
  (payment.payload as { channelConfig?: { payer?: `0x${string}` } } | undefined)?.channelConfig?.payer;

/** why the wrapper refuses before the official scheme is asked, or undefined */
function refusal(payment: PaymentPayload, requirements: PaymentRequirements): string | undefined {
  if (payment.x402Version !== 2) return "invalid_x402_version";
  if (requirements.scheme !== BATCH_SETTLEMENT_SCHEME || payment.accepted?.scheme !== BATCH_SETTLEMENT_SCHEME) return "unsupported_scheme";
  if (requirements.network !== NETWORK_V2 || payment.accepted.network !== NETWORK_V2) return "invalid_network";
  if (!same(payment.accepted.payTo, requirements.payTo) || !same(payment.accepted.asset, requirements.asset)) return "invalid_payment_requirements";
  const payload = payment.payload as { type?: unknown } | undefined;
  if (typeof payload?.type !== "string") return "invalid_payload";
  return undefined;
}

/** a refund settle that would need this facilitator's refund signature when it does not give one */
const unsignedRefund = (payment: PaymentPayload, signRefunds: boolean) => {
  const payload = payment.payload as { type?: unknown; refundAuthorizerSignature?: unknown };
  return !signRefunds && payload.type === "refund" && payload.refundAuthorizerSignature === undefined;
};

export function createBatchSettlementFacilitator(opts: BatchSettlementFacilitatorOptions): BatchSettlementFacilitator {
  const account = privateKeyToAccount(opts.privateKey);
  const authorizer = privateKeyToAccount(opts.receiverAuthorizerKey);
  const signRefunds = opts.signRefunds ?? false;
  const wallet = createWalletClient({ account, chain: baseSepolia, transport: rpcHttp(opts.rpcUrl, { retryCount: 0 }), pollingInterval: 50 }).extend(
    publicActions,
  );
  let sending: Promise<unknown> = Promise.resolve();
  const ownQueue = <T>(send: () => Promise<T>): Promise<T> => {
    const sent = sending.then(send, send);
    sending = sent.catch(() => undefined);
    return sent;
  };
  const oneAtATime = opts.serialize ?? ownQueue;
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => wallet.readContract(args as never),
    verifyTypedData: (args) => wallet.verifyTypedData(args as never),
    writeContract: (args) => oneAtATime(() => wallet.writeContract(args as never)),
    sendTransaction: (args) => oneAtATime(() => wallet.sendTransaction(args)),
    waitForTransactionReceipt: (args) => wallet.waitForTransactionReceipt({ ...args, pollingInterval: 50 }),
    getCode: (args) => wallet.getCode(args),
  });
  const authorizerSigner: AuthorizerSigner = {
    address: authorizer.address,
    signTypedData: (params) => authorizer.signTypedData(params as never),
  };
  const scheme = new BatchSettlementEvmScheme(signer, authorizerSigner);

  return {
    address: account.address,
    receiverAuthorizer: authorizer.address,
    supportedKind: () => ({ x402Version: 2, scheme: BATCH_SETTLEMENT_SCHEME, network: NETWORK_V2, extra: { receiverAuthorizer: authorizer.address } }),

    async verify(payment, requirements) {
      const refused = refusal(payment, requirements);
      if (refused) return { isValid: false, invalidReason: refused, payer: payerOf(payment) };
      return scheme
        .verify(payment, requirements)
        .catch((err: unknown): VerifyResponse => ({ isValid: false, invalidReason: `invalid_transaction_state: ${shortError(err)}`, payer: payerOf(payment) }));
    },

    async settle(payment, requirements) {
      const refused = refusal(payment, requirements) ?? (unsignedRefund(payment, signRefunds) ? REFUND_SIGNATURE_REQUIRED : undefined);
      if (refused) return { success: false, errorReason: refused, transaction: "", network: requirements.network, payer: payerOf(payment) };
      return scheme.settle(payment, requirements).catch((err: unknown): SettleResponse => ({
        success: false,
        errorReason: `invalid_transaction_state: ${shortError(err)}`,
        transaction: "",
        network: requirements.network,
        payer: payerOf(payment),
      }));
    },
  };
}
