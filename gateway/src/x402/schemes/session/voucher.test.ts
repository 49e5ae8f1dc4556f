/** voucher.ts: a session payment decoded, matched to this service's terms, its voucher's signature checked. */
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { getAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { X402_CHAIN_ID, X402_NETWORK_V2, type PaymentPayloadV2 } from "../../payment-match";
import {
  BATCH_SETTLEMENT_SCHEME,
  channelIdOf,
  decodeSessionPayment,
  isSessionPayment,
  sessionMismatch,
  sessionRequirements,
  voucherSigned,
  type ChannelConfig,
  type SessionPayment,
  type SessionTerms,
} from "./voucher";

const payer = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const stranger = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const TOKEN = getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e");
const PAY_TO = getAddress("0x2222222222222222222222222222222222222222");
const RECEIVER_AUTHORIZER = getAddress("0x3333333333333333333333333333333333333333");
const TERMS: SessionTerms = { payTo: PAY_TO, receiverAuthorizer: RECEIVER_AUTHORIZER, asset: TOKEN, withdrawDelaySeconds: 900 };
const SALT = `0x${"ab".repeat(32)}` as Hex;

const config = (over: Partial<ChannelConfig> = {}): ChannelConfig => ({
  payer: payer.address,
  payerAuthorizer: payer.address,
  receiver: PAY_TO,
  receiverAuthorizer: RECEIVER_AUTHORIZER,
  token: TOKEN,
  withdrawDelay: 900,
  salt: SALT,
  ...over,
});

const signVoucher = (channelId: Hex, amount: bigint, by = payer) =>
  by.signTypedData({
    domain: { ...BATCH_SETTLEMENT_DOMAIN, chainId: X402_CHAIN_ID, verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS) },
    types: voucherTypes,
    primaryType: "Voucher",
    message: { channelId, maxClaimableAmount: amount },
  });

/** a session proof as the official client sends it: a voucher alone, or (deposit) with its deposit */
async function proof(opts: { amount?: bigint; price?: string; cfg?: ChannelConfig; signer?: typeof payer; signature?: Hex; deposit?: string } = {}) {
  const cfg = opts.cfg ?? config();
  const channelId = computeChannelId(cfg, X402_NETWORK_V2) as Hex;
  const amount = opts.amount ?? 1000n;
  const signature = opts.signature ?? (await signVoucher(channelId, amount, opts.signer));
  const channelConfig = { ...cfg };
  const voucher = { channelId, maxClaimableAmount: amount.toString(), signature };
  const payload =
    opts.deposit === undefined
      ? { type: "voucher", channelConfig, voucher }
      : { type: "deposit", channelConfig, voucher, deposit: { amount: opts.deposit, authorization: { erc3009Authorization: { salt: "7" } } } };
  return {
    x402Version: 2,
    accepted: {
      scheme: BATCH_SETTLEMENT_SCHEME,
      network: X402_NETWORK_V2,
      amount: opts.price ?? "1000",
      asset: TOKEN,
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      extra: {},
    },
    payload,
  } as unknown as PaymentPayloadV2;
}

const decoded = async (opts: Parameters<typeof proof>[0] = {}) => decodeSessionPayment(await proof(opts))!;

describe("voucher: decoding", () => {
  it("a voucher alone: its channel, its lower-case channel id, its cumulative amount and signature", async () => {
    const p = await proof({ amount: 2500n });
    const s = decodeSessionPayment(p)!;
    const channelId = (computeChannelId(config(), X402_NETWORK_V2) as string).toLowerCase();
    expect(s.type).toBe("voucher");
    expect(s.config).toEqual(config());
    expect(s.voucher).toEqual({ channelId, maxClaimableAmount: 2500n, signature: (p.payload as { voucher: { signature: string } }).voucher.signature });
    expect(s.payload).toBe(p);
  });

  it("a deposit: its amount and its authorization's salt as text", async () => {
    const s = (await decoded({ deposit: "5000000" })) as Extract<SessionPayment, { type: "deposit" }>;
    expect([s.type, s.deposit]).toEqual(["deposit", { amount: 5_000_000n, salt: "7" }]);
  });

  it("refuses a malformed voucher: its channel id, amount or signature out of shape, a high s", async () => {
    const p = await proof();
    const voucher = (p.payload as { voucher: Record<string, unknown> }).voucher;
    const variant = (over: Record<string, unknown>) => ({ ...p, payload: { ...p.payload, voucher: { ...voucher, ...over } } }) as PaymentPayloadV2;
    expect(decodeSessionPayment(variant({ channelId: "0x12" }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ channelId: 7 }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ maxClaimableAmount: "-1" }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ maxClaimableAmount: 10 }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ maxClaimableAmount: "1".repeat(40) }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ signature: `${voucher.signature as string}00` }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ signature: 5 }))).toBeUndefined();
    // the malleable twin: s above half the order
    const highS = `0x${"11".repeat(32)}${"ff".repeat(32)}1b`;
    expect(decodeSessionPayment(variant({ signature: highS }))).toBeUndefined();
    // exactly half the order is low
    const halfOrder = `0x${"11".repeat(32)}7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a01b`;
    expect(decodeSessionPayment(variant({ signature: halfOrder }))?.voucher.signature).toBe(halfOrder);
    expect(decodeSessionPayment({ ...p, payload: { ...p.payload, voucher: "x" } } as PaymentPayloadV2)).toBeUndefined();
    // a field that is no string, even one whose text would pass
    expect(decodeSessionPayment(variant({ channelId: [voucher.channelId] }))).toBeUndefined();
    expect(decodeSessionPayment(variant({ signature: [voucher.signature] }))).toBeUndefined();
    expect(decodeSessionPayment({ ...p, payload: { ...p.payload, type: "refund" } } as PaymentPayloadV2)).toBeUndefined();
  });

  it("is a session payment: version 2 with the batch-settlement scheme, whatever its content", async () => {
    const p = await proof();
    expect(isSessionPayment(p)).toBe(true);
    expect(isSessionPayment({ x402Version: 2, accepted: { scheme: BATCH_SETTLEMENT_SCHEME } })).toBe(true);
    expect(isSessionPayment({ ...p, x402Version: 1 })).toBe(false);
    expect(isSessionPayment({ ...p, accepted: { ...p.accepted, scheme: "exact" } })).toBe(false);
    expect(isSessionPayment({ x402Version: 2 })).toBe(false);
    expect(isSessionPayment(null)).toBe(false);
    expect(isSessionPayment("batch-settlement")).toBe(false);
  });
});

describe("voucher: matching this service's terms", () => {
  const route = { priceAtomic: 1000n, terms: TERMS };

  it("a voucher on this service's terms for this price matches", async () => {
    expect(sessionMismatch(await decoded(), route)).toBeNull();
  });

  it("each term out of line is its own refusal", async () => {
    const s = await decoded();
    const accepted = (over: Record<string, unknown>) => ({ ...s, payload: { ...s.payload, accepted: { ...s.payload.accepted, ...over } } }) as SessionPayment;
    expect(sessionMismatch(accepted({ network: "eip155:8453" }), route)).toEqual({ error: "unsupported_scheme_or_network" });
    expect(sessionMismatch(accepted({ amount: "999" }), route)).toEqual({
      error: "payment_does_not_match_route",
      extra: { expected_amount: "1000", received_amount: "999" },
    });
    expect(sessionMismatch(accepted({ payTo: RECEIVER_AUTHORIZER }), route)).toEqual({ error: "payment_recipient_mismatch" });
    expect(sessionMismatch(accepted({ payTo: "nope" }), route)).toEqual({ error: "payment_recipient_mismatch" });
    expect(sessionMismatch(accepted({ payTo: [PAY_TO] }), route)).toEqual({ error: "payment_recipient_mismatch" });
    expect(sessionMismatch(accepted({ asset: PAY_TO }), route)).toEqual({ error: "payment_asset_mismatch" });
    // the same addresses in another case are the same
    expect(sessionMismatch(accepted({ payTo: PAY_TO.toLowerCase(), asset: TOKEN.toLowerCase() }), route)).toBeNull();
  });

  it("the channel's own receiver, token, authorizer, delay and id must be this service's", async () => {
    const refused = async (cfg: ChannelConfig) => sessionMismatch(await decoded({ cfg }), route);
    expect(await refused(config({ receiver: RECEIVER_AUTHORIZER }))).toEqual({ error: "payment_recipient_mismatch" });
    expect(await refused(config({ token: PAY_TO }))).toEqual({ error: "payment_asset_mismatch" });
    const terms = { receiver_authorizer: RECEIVER_AUTHORIZER, withdraw_delay: 900 };
    expect(await refused(config({ receiverAuthorizer: PAY_TO }))).toEqual({ error: "session_terms_mismatch", extra: terms });
    expect(await refused(config({ withdrawDelay: 901 }))).toEqual({ error: "session_terms_mismatch", extra: terms });
    expect(await refused(config({ payerAuthorizer: "0x0000000000000000000000000000000000000000" }))).toEqual({
      error: "session_terms_mismatch",
      extra: { reason: "payer_authorizer_required" },
    });
    // a voucher whose channel id is not its configuration's
    const s = await decoded();
    const other = { ...s, voucher: { ...s.voucher, channelId: `0x${"00".repeat(32)}` as Hex } };
    expect(sessionMismatch(other, route)).toEqual({ error: "invalid_payment", extra: { reason: "channel_id_mismatch" } });
  });

  it("the channel id is the configuration's EIP-712 hash on this chain, lower-case, the same each time", () => {
    const id = channelIdOf(config());
    expect(id).toBe((computeChannelId(config(), X402_NETWORK_V2) as string).toLowerCase());
    expect(channelIdOf(config())).toBe(id);
    expect(channelIdOf(config({ salt: `0x${"cd".repeat(32)}` }))).not.toBe(id);
  });
});

describe("voucher: its signature", () => {
  it("signed by the channel's payer authorizer: true, the same answer again", async () => {
    const s = await decoded();
    expect(await voucherSigned(s)).toBe(true);
    expect(await voucherSigned(s)).toBe(true);
  });

  it("signed by another key, or for another amount: false", async () => {
    expect(await voucherSigned(await decoded({ signer: stranger }))).toBe(false);
    const s = await decoded({ amount: 1000n });
    expect(await voucherSigned({ ...s, voucher: { ...s.voucher, maxClaimableAmount: 2000n } })).toBe(false);
    expect(await voucherSigned({ ...s, config: { ...s.config, payerAuthorizer: stranger.address } })).toBe(false);
  });

  it("v must be 27 or 28, as the contract on Base takes it (0/1 is never claimable)", async () => {
    const s = await decoded();
    const low = `${s.voucher.signature.slice(0, 130)}${s.voucher.signature.endsWith("1b") ? "00" : "01"}` as Hex;
    expect(await voucherSigned({ ...s, voucher: { ...s.voucher, signature: low } })).toBe(false);
  });

  it("a signature that recovers nothing is false, not an error", async () => {
    const s = await decoded();
    expect(await voucherSigned({ ...s, voucher: { ...s.voucher, signature: `0x${"00".repeat(64)}1b` } })).toBe(false);
  });
});

describe("voucher: the session's offer", () => {
  it("the price of a call, this service's channel terms, in the scheme's shape", () => {
    const asset = { address: TOKEN, name: "USDC", version: "2" };
    expect(sessionRequirements({ priceAtomic: 1234n, maxTimeoutSeconds: 60, asset }, TERMS)).toEqual({
      scheme: "batch-settlement",
      network: "eip155:84532",
      amount: "1234",
      asset: TOKEN,
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { name: "USDC", version: "2", receiverAuthorizer: RECEIVER_AUTHORIZER, withdrawDelay: 900, assetTransferMethod: "eip3009" },
    });
  });
});
