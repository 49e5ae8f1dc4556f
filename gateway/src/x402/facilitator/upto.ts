/**
 * x402's `upto` scheme (version 2, EVM, Permit2) for the local facilitator: the official facilitator scheme of
 * `@x402/evm/upto/facilitator` (2.27) over a viem wallet on the facilitator's key, on the local Base Sepolia
 * (`eip155:84532`) where fixtures/x402-upto-contracts.ts placed Permit2 and the x402UptoPermit2Proxy.
 *
 * The payer signs once, for a maximum: a Permit2 `PermitWitnessTransferFrom` with `permitted.amount` = the
 * requirements' `amount`, spender = the proxy, and a witness `{to: payTo, facilitator, validAfter}` naming the
 * settling account (`extra.facilitatorAddress` of the requirements, which is `supportedKind().extra`). The payer
 * must have approved Permit2 on the token (or send a gas-sponsoring extension, which this facilitator does not
 * offer). Verify is asked with the requirements the payer accepted (`amount` = the maximum, equal to
 * `permitted.amount`); settle with the same requirements whose `amount` is what was used (at most the maximum;
 * "0" settles nothing and sends no transaction). That is what x402's resource server does with
 * `settlementOverrides.amount` (the `Settlement-Overrides` response header). The official scheme refuses a settle
 * above the maximum before it sends; the proxy refuses it on chain too.
 *
 * Around the official scheme: only version 2 on eip155:84532, and a payment's `accepted` must name the
 * requirements' payTo and asset. Settling is idempotent per authorization (payer, Permit2 nonce), with the chain as
 * the durable record, as `exact` is (local-facilitator.ts): one settlement of an authorization runs at a time (the
 * same settle again joins it; another amount waits for it, then is asked again), and a settle whose nonce is already
 * used on chain answers with the settlement that used it, found from what the official proxy leaves on chain (its
 * argument-less `Settled()` / `SettledWithPermit()` logs; Permit2 logs nothing naming the nonce): the transaction
 * of such a log whose call, decoded with the official ABI, settled this payer's authorization (owner, Permit2 nonce)
 * with this payment's witness (payTo = the requirements' payTo, facilitator = this account, so this account sent
 * it): success, that transaction, and the amount settled then (not the amount asked now), taken only when the
 * transaction succeeded and moved that amount of the requirements' asset from the payer to payTo (docs/X402-CONTRACTS.md).
 * A used nonce with no such settlement (cancelled by the payer with
 * `invalidateUnorderedNonces`, used by another spender or another facilitator) stays a refusal,
 * `permit2_invalid_nonce` instead of the scheme's `permit2_simulation_failed` (its diagnosis of a failed simulation
 * reads balance and allowance, not the nonce). The log is looked up from block 0: fine on the local chain, to be bounded (by the
 * authorization's deadline) on a long one. This module's transactions are sent one at a time, each at the pending
 * nonce viem reads before it.
 */
import { toFacilitatorEvmSigner, PERMIT2_ADDRESS, x402UptoPermit2ProxyABI, x402UptoPermit2ProxyAddress } from "@x402/evm";
import { UptoEvmScheme } from "@x402/evm/upto/facilitator";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { createWalletClient, decodeFunctionData, getAddress, isAddressEqual, parseEventLogs, publicActions, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { shortError } from "./authorization-call";
import { NETWORK_V2 } from "./payment-versions";
import { UPTO_SCHEME } from "../schemes/upto/permit";

export { UPTO_SCHEME };
/** the official scheme's reason when the settlement's simulation fails and its diagnosis finds no cause */
const SIMULATION_FAILED = "permit2_simulation_failed";

const NONCE_BITMAP_ABI = [
  {
    type: "function",
    name: "nonceBitmap",
    stateMutability: "view",
    inputs: [
      { name: "owner", type: "address" },
      { name: "wordPos", type: "uint256" },
    ],
    outputs: [{ type: "uint256" }],
  },
] as const;

/** the official proxy's two settlement events (no arguments: the settlement is read from the call) */
const SETTLED_EVENTS = x402UptoPermit2ProxyABI.filter((x) => x.type === "event");
/** the leading arguments of the proxy's settle call */
type SettleArgs = readonly [{ nonce: bigint }, bigint, Hex, { to: Hex; facilitator: Hex }];
/** the token's transfer a settlement made */
const TRANSFER_ABI = [
  {
    type: "event",
    name: "Transfer",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  },
] as const;

/** the `/supported` kind of the upto scheme: the client signs its witness for `extra.facilitatorAddress` */
export interface UptoKind {
  x402Version: 2;
  scheme: typeof UPTO_SCHEME;
  network: typeof NETWORK_V2;
  extra: { facilitatorAddress: `0x${string}` };
}

export interface UptoFacilitator {
  /** the settling account (the witness's `facilitator`) */
  readonly address: `0x${string}`;
  supportedKind(): UptoKind;
  /** verify against the accepted requirements (amount = the signed maximum) */
  verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  /** settle `requirements.amount` (what was used, at most the signed maximum) */
  settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
}

interface Permit2Authorization {
  from: string;
  nonce: string;
  witness?: { to?: unknown; facilitator?: unknown };
}
const authorizationOf = (payment: PaymentPayload): Permit2Authorization | undefined => {
  const auth = (payment.payload as { permit2Authorization?: Partial<Permit2Authorization> } | undefined)?.permit2Authorization;
  return typeof auth?.from === "string" && typeof auth.nonce === "string" ? (auth as Permit2Authorization) : undefined;
};

const same = (a: unknown, b: unknown) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

/** why the wrapper refuses before the official scheme is asked, or undefined */
function refusal(payment: PaymentPayload, requirements: PaymentRequirements): string | undefined {
  if (payment.x402Version !== 2) return "invalid_x402_version";
  if (requirements.scheme !== UPTO_SCHEME || payment.accepted?.scheme !== UPTO_SCHEME) return "unsupported_scheme";
  if (requirements.network !== NETWORK_V2 || payment.accepted.network !== NETWORK_V2) return "invalid_network";
  if (!same(payment.accepted.payTo, requirements.payTo) || !same(payment.accepted.asset, requirements.asset)) return "invalid_payment_requirements";
  if (!authorizationOf(payment)) return "invalid_payload";
  return undefined;
}

export function createUptoFacilitator(opts: { rpcUrl: string; privateKey: Hex }): UptoFacilitator {
  const account = privateKeyToAccount(opts.privateKey);
  const wallet = createWalletClient({ account, chain: baseSepolia, transport: rpcHttp(opts.rpcUrl, { retryCount: 0 }), pollingInterval: 50 }).extend(
    publicActions,
  );
  // this module's transactions go out one at a time (viem reads the pending nonce for each)
  let sending: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(send: () => Promise<T>): Promise<T> => {
    const sent = sending.then(send, send);
    sending = sent.catch(() => undefined);
    return sent;
  };
  // readContract and the simulations run from the wallet's account (the proxy lets only the witness's facilitator call)
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => wallet.readContract(args as never),
    verifyTypedData: (args) => wallet.verifyTypedData(args as never),
    writeContract: (args) => oneAtATime(() => wallet.writeContract(args as never)),
    sendTransaction: (args) => oneAtATime(() => wallet.sendTransaction(args)),
    waitForTransactionReceipt: (args) => wallet.waitForTransactionReceipt({ ...args, pollingInterval: 50 }),
    getCode: (args) => wallet.getCode(args),
  });
  const scheme = new UptoEvmScheme(signer);
  const inFlight = new Map<string, { amount: string; settled: Promise<SettleResponse> }>();

  const nonceUsed = async (auth: Permit2Authorization): Promise<boolean> => {
    const nonce = BigInt(auth.nonce);
    const word = await wallet.readContract({
      address: PERMIT2_ADDRESS,
      abi: NONCE_BITMAP_ABI,
      functionName: "nonceBitmap",
      args: [getAddress(auth.from), nonce >> 8n],
    });
    return (word >> (nonce & 0xffn)) & 1n ? true : false;
  };

  /** a failed simulation whose cause is the authorization's nonce, already used on chain */
  const whyNot = async (reason: string | undefined, auth: Permit2Authorization): Promise<boolean> =>
    reason === SIMULATION_FAILED && (await nonceUsed(auth).catch(() => false));

  /**
   * The settlement that used this authorization's nonce, as a settle answer: among the official proxy's
   * Settled/SettledWithPermit logs (newest first), a transaction this account sent whose settle call names the payer,
   * the nonce, the payment's payTo and this facilitator, which succeeded and moved the settled amount of the asset
   * from the payer to payTo. Undefined when the nonce is unused or no such settlement exists.
   */
  const settledBefore = async (requirements: PaymentRequirements, auth: Permit2Authorization): Promise<SettleResponse | undefined> => {
    const payTo = requirements.payTo;
    if (!same(auth.witness?.to, payTo) || !same(auth.witness?.facilitator, account.address) || !(await nonceUsed(auth))) return undefined;
    const payer = getAddress(auth.from);
    const nonce = BigInt(auth.nonce);
    const logs = await wallet.getLogs({ address: x402UptoPermit2ProxyAddress, events: SETTLED_EVENTS, fromBlock: 0n });
    for (const hash of [...new Set(logs.map((l) => l.transactionHash))].reverse()) {
      const tx = await wallet.getTransaction({ hash });
      if (!same(tx.from, account.address) || !tx.to || !isAddressEqual(tx.to, x402UptoPermit2ProxyAddress)) continue;
      const call = decodeFunctionData({ abi: x402UptoPermit2ProxyABI, data: tx.input });
      // settle(permit, amount, owner, witness, signature) or settleWithPermit(permit2612, permit, amount, owner, witness, signature)
      const [permit, amount, owner, witness] = (call.functionName === "settle" ? call.args : call.args.slice(1)) as unknown as SettleArgs;
      if (!same(owner, payer) || permit.nonce !== nonce || !same(witness.to, payTo) || !same(witness.facilitator, account.address)) continue;
      const receipt = await wallet.getTransactionReceipt({ hash });
      const moved = parseEventLogs({ abi: TRANSFER_ABI, eventName: "Transfer", logs: receipt.logs }).some(
        (t) => isAddressEqual(t.address, getAddress(requirements.asset)) && same(t.args.from, payer) && same(t.args.to, payTo) && t.args.value === amount,
      );
      if (receipt.status !== "success" || !moved) return undefined;
      return { success: true, transaction: hash, network: requirements.network, payer: auth.from, amount: amount.toString() };
    }
    return undefined;
  };

  /**
   * The official settle; a failure (or a throw: an RPC failure) with the authorization's nonce used on chain answers
   * with the settlement that used it, else stays a failure (the scheme's failed simulation of a used nonce named so).
   */
  const settleOnce = async (payment: PaymentPayload, requirements: PaymentRequirements, auth: Permit2Authorization): Promise<SettleResponse> => {
    const settled = await scheme.settle(payment, requirements).catch((err: unknown): SettleResponse => ({
      success: false,
      errorReason: `invalid_transaction_state: ${shortError(err)}`,
      transaction: "",
      network: requirements.network,
      payer: auth.from,
    }));
    if (settled.success) return settled;
    const before = await settledBefore(requirements, auth).catch(() => undefined);
    if (before) return before;
    return (await whyNot(settled.errorReason, auth)) ? { ...settled, errorReason: "permit2_invalid_nonce" } : settled;
  };

  const facilitator: UptoFacilitator = {
    address: account.address,
    supportedKind: () => ({ x402Version: 2, scheme: UPTO_SCHEME, network: NETWORK_V2, extra: { facilitatorAddress: account.address } }),

    async verify(payment, requirements) {
      const refused = refusal(payment, requirements);
      if (refused) return { isValid: false, invalidReason: refused, payer: authorizationOf(payment)?.from };
      const verified = await scheme.verify(payment, requirements).catch((err: unknown): VerifyResponse => ({
        isValid: false,
        invalidReason: `invalid_transaction_state: ${shortError(err)}`,
        payer: authorizationOf(payment)?.from,
      }));
      return !verified.isValid && (await whyNot(verified.invalidReason, authorizationOf(payment)!))
        ? { ...verified, invalidReason: "permit2_invalid_nonce" }
        : verified;
    },

    settle(payment, requirements) {
      const refused = refusal(payment, requirements);
      const auth = authorizationOf(payment);
      if (refused || !auth)
        return Promise.resolve({
          success: false,
          errorReason: refused ?? "invalid_payload",
          transaction: "",
          network: requirements.network,
          payer: auth?.from,
        });
      const key = `${auth.from.toLowerCase()}:${auth.nonce}`;
      const running = inFlight.get(key);
      // the same settle joins the running one; another amount is asked once it is done (then answered by the chain if it settled)
      if (running) return running.amount === requirements.amount ? running.settled : running.settled.then(() => facilitator.settle(payment, requirements));
      const settled = settleOnce(payment, requirements, auth);
      inFlight.set(key, { amount: requirements.amount, settled });
      void settled.finally(() => inFlight.delete(key)).catch(() => undefined);
      return settled;
    },
  };
  return facilitator;
}
