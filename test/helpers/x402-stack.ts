/**
 * A local x402 stack for tests: Base Sepolia on Anvil (chain 84532, TestUSDC),
 * the project's facilitator as its own server, and a gateway that pays into a
 * dev account through it; payers funded on it, the proofs they make (version 1
 * X-PAYMENT, version 2 PAYMENT-SIGNATURE) and what the gateway recorded of them.
 */
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createWalletClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { createPaymentHeader } from "x402/client";
import type { PaymentRequirements } from "x402/types";
import { devAccount, startBaseSepolia, type BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { startFacilitator } from "../../gateway/src/x402/facilitator/main";
import { call, startTestGateway, type TestGateway } from "./gateway";
import { ResponseValidator } from "./openapi";
import { ageRow, rowCount } from "./rows";

/** Anvil's dev account 1's key: the local facilitator's settlement account (public test key) */
export const FACILITATOR_KEY: Hex = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/** Anvil's dev accounts 6 and 7: sessions' sending account and their receiver authorizer; 8: `upto`'s settlement account (public test keys) */
export const SESSION_KEY: Hex = "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e";
export const AUTHORIZER_KEY: Hex = "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356";
export const UPTO_KEY: Hex = "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97";
/** the stack's facilitator answers its gateway only: this bearer token (FACILITATOR_API_KEY) */
export const FACILITATOR_API_KEY = "test-facilitator-api-key";
/** the headers a test sends to call the stack's facilitator itself */
export const FACILITATOR_AUTH = { authorization: `Bearer ${FACILITATOR_API_KEY}` };
/** the facilitator's keys of every scheme it settles */
export const FACILITATOR_KEYS = { privateKey: FACILITATOR_KEY, session: { privateKey: SESSION_KEY, authorizerKey: AUTHORIZER_KEY }, uptoKey: UPTO_KEY };
/** the gateway's configuration of sessions and upto with this facilitator */
export const SCHEME_ENV = {
  X402_SESSION_RECEIVER_AUTHORIZER: privateKeyToAccount(AUTHORIZER_KEY).address,
  X402_UPTO_FACILITATOR: privateKeyToAccount(UPTO_KEY).address,
};

export interface X402Stack {
  chain: BaseSepoliaNode;
  facilitator: Awaited<ReturnType<typeof startFacilitator>>;
  gateway: TestGateway;
  payTo: `0x${string}`;
  close(): Promise<void>;
}

export async function startX402Stack(env: Record<string, string> = {}): Promise<X402Stack> {
  const chain = await startBaseSepolia();
  const facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, ...FACILITATOR_KEYS, apiKey: FACILITATOR_API_KEY, port: 0 });
  const payTo = devAccount(2).address;
  const gateway = await startTestGateway({
    X402_FACILITATOR: "local",
    X402_FACILITATOR_URL: facilitator.url,
    X402_FACILITATOR_API_KEY: FACILITATOR_API_KEY,
    X402_PAY_TO: payTo,
    ...env,
  });
  return {
    chain,
    facilitator,
    gateway,
    payTo,
    close: async () => {
      await gateway.close();
      await facilitator.close();
      await chain.stop();
    },
  };
}

/** a file's stack, its gateway's URL and a validator of the gateway's own OpenAPI document (start it in beforeAll, close `stack` in afterAll) */
export async function startX402Suite(env: Record<string, string> = {}): Promise<{ stack: X402Stack; base: string; v: ResponseValidator }> {
  const stack = await startX402Stack(env);
  const base = stack.gateway.url;
  return { stack, base, v: new ResponseValidator((await call(base, "GET", "/openapi.json")).body) };
}

export type Payer = Awaited<ReturnType<typeof newPayer>>;

export async function newPayer(chain: BaseSepoliaNode, usdcAtomic = 10_000_000n) {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.fund(account.address, usdcAtomic);
  const wallet = createWalletClient({ account, chain: baseSepolia, transport: http(chain.rpcUrl) });
  return { account, wallet };
}

/** the requirements of a route's 402 challenge */
export async function challengeFor(base: string, method: string, path: string, body?: unknown): Promise<PaymentRequirements> {
  const r = await call(base, method, path, { ...(body === undefined ? {} : { body }), headers: { "idempotency-key": "challenge-only" } });
  if (r.status !== 402) throw new Error(`expected a 402 challenge, got ${r.status}: ${r.text}`);
  return r.body.accepts[0];
}

export async function paymentHeader(wallet: ReturnType<typeof createWalletClient>, requirements: PaymentRequirements): Promise<string> {
  return createPaymentHeader(wallet as never, 1, requirements);
}

/** a fresh X-PAYMENT proof (x402 version 1) for a route's own requirements, as its 402 states them */
export async function paymentFor(wallet: Payer["wallet"], base: string, method: string, path: string, body?: unknown): Promise<string> {
  return paymentHeader(wallet, await challengeFor(base, method, path, body));
}

/**
 * What the second of two concurrent requests carrying one proof may get: 409 while the first runs (a 402
 * would make a conforming client pay again), the spent proof's 402 after it, or the facilitator's refusal
 * of the spent nonce.
 */
export const ONE_PROOF_LOSER: [number, string][] = [
  [409, "payment_in_progress"],
  [402, "payment_already_used"],
  [402, "invalid_exact_evm_payload_authorization_nonce_used"],
];

/** the envelopes a gateway made (a treasury's, when named): a paid action's handler makes one each time it runs */
export const envelopeCount = (gateway: TestGateway, treasuryId?: string): Promise<number> =>
  rowCount(gateway.ctx.db, "envelopes", treasuryId === undefined ? {} : { treasury_id: treasuryId });

/** let a treasury's pending envelope expire, so a new action is not refused as a conflict */
export const expireEnvelopes = (gateway: TestGateway, treasuryId: string): Promise<number> => ageRow(gateway.ctx.db, "envelopes", { treasury_id: treasuryId });

/** the payments a gateway recorded as settled for a payer */
export const settledPaymentCount = (gateway: TestGateway, payer: string): Promise<number> =>
  rowCount(gateway.ctx.db, "x402_payments", { payer: payer.toLowerCase(), state: "settled" });

/**
 * The rate limit's identity of a request with these headers (lower-case names), as the gateway decides it
 * (PaymentGate.provenPayer): the payer, null (an unproven payer, counted by client address), undefined (no price)
 */
export const rateIdentity = (gateway: TestGateway, method: string, path: string, headers: Record<string, string>) => {
  const payments = gateway.gateway.services.payments;
  return payments.provenPayer(
    payments.read((n: string) => headers[n.toLowerCase()]),
    { method, path },
  );
};

/** x402 version 2's PaymentRequired of a route's 402 (its PAYMENT-REQUIRED header, decoded) */
export async function paymentRequiredFor(base: string, method: string, path: string, body?: unknown): Promise<PaymentRequiredV2> {
  const r = await call(base, method, path, { ...(body === undefined ? {} : { body }), headers: { "idempotency-key": "challenge-only" } });
  const header = r.headers.get("payment-required");
  if (r.status !== 402 || !header) throw new Error(`expected a 402 with PAYMENT-REQUIRED, got ${r.status}: ${r.text}`);
  return decodePaymentRequiredHeader(header) as PaymentRequiredV2;
}

/** a PAYMENT-SIGNATURE header made by the real v2 client (@x402/core with @x402/evm's exact scheme) */
export async function paymentSignature(account: PrivateKeyAccount, required: PaymentRequiredV2, edit?: (payload: PaymentPayloadV2) => void): Promise<string> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const payload = (await client.createPaymentPayload(required)) as PaymentPayloadV2;
  edit?.(payload);
  return encodePaymentSignatureHeader(payload as never);
}

export type PaymentRequiredV2 = Awaited<ReturnType<typeof decodePaymentRequiredHeader>>;
export type PaymentPayloadV2 = Awaited<ReturnType<typeof decodePaymentSignatureHeader>>;
