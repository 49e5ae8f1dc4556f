/**
 * x402 `upto` on a metered route, paid by the OFFICIAL client (@x402/core's x402Client with @x402/evm's upto
 * scheme, through @x402/fetch): the payer signs the route's price as a maximum (Permit2), the gateway
 * settles what the answer used (GET /api/v1/audit: 300 + 2 per entry returned), exactly once.
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../helpers/rows";
import { approvedUptoPayer, uptoClient } from "../helpers/upto";
import { rateIdentity, SCHEME_ENV, startX402Suite, UPTO_KEY, type Payer, type X402Stack } from "../helpers/x402-stack";

const PATH = "/api/v1/audit";
const MAX = 1_300n;
const BASE_PRICE = 300n; // a page of no entries

let stack: X402Stack;
let base: string;

beforeAll(async () => {
  ({ stack, base } = await startX402Suite(SCHEME_ENV));
}, 120_000);
afterAll(async () => stack?.close());

const approvedPayer = () => approvedUptoPayer(stack.chain);
function payingWith(payer: Payer) {
  const client = uptoClient(stack.chain, payer);
  return { client, fetch: wrapFetchWithPayment(fetch, client) };
}

describe("x402 upto with the official client", () => {
  it("a metered route offers upto: the route's price as the maximum, this facilitator in the witness", async () => {
    const r = await fetch(`${base}${PATH}`);
    expect(r.status).toBe(402);
    const required = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    const upto = required.accepts.find((a) => a.scheme === "upto")!;
    expect(upto).toMatchObject({ amount: MAX.toString(), payTo: stack.payTo });
    expect(upto.extra).toMatchObject({ assetTransferMethod: "permit2", facilitatorAddress: privateKeyToAccount(UPTO_KEY).address });
    // a route that is not metered offers no upto
    const health = decodePaymentRequiredHeader((await fetch(`${base}/api/v1/health`)).headers.get("payment-required")!);
    expect(health.accepts.map((a) => a.scheme)).not.toContain("upto");
  });

  it("signs the maximum, is charged what the answer used, once", async () => {
    const payer = await approvedPayer();
    const { fetch: paid } = payingWith(payer);
    const before = await stack.chain.balanceOf(payer.account.address);
    const receiverBefore = await stack.chain.balanceOf(stack.payTo);
    const r = await paid(`${base}${PATH}`);
    expect(r.status, await r.clone().text()).toBe(200);
    const body = (await r.json()) as { data: unknown[] };
    expect(body.data).toHaveLength(0);
    const settle = decodePaymentResponseHeader(r.headers.get("payment-response")!);
    expect(settle).toMatchObject({ success: true, amount: BASE_PRICE.toString() });
    expect(before - (await stack.chain.balanceOf(payer.account.address))).toBe(BASE_PRICE);
    expect((await stack.chain.balanceOf(stack.payTo)) - receiverBefore).toBe(BASE_PRICE);
    const [row] = await rowsOf(stack.gateway.ctx.db, "x402_payments", { payer: payer.account.address.toLowerCase(), state: "settled" });
    expect(row).toMatchObject({ amount_atomic: BASE_PRICE.toString(), transaction_hash: settle.transaction });
  });

  it("the same authorization again is refused and charges nothing; a maximum signed for another route does not pay this one", async () => {
    const payer = await approvedPayer();
    const { client } = payingWith(payer);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const header = encodePaymentSignatureHeader(await client.createPaymentPayload(required));
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } })).status).toBe(200);
    const after = await stack.chain.balanceOf(payer.account.address);
    const again = await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": header } });
    expect(again.status).toBe(402);
    expect(((await again.json()) as { error: string }).error).toBe("payment_already_used");
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(after);

    // the audit's upto requirements, sent to the health route (another price): refused before anything is signed off
    const misrouted = await fetch(`${base}/api/v1/health`, {
      headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(await client.createPaymentPayload(required)) },
    });
    expect(misrouted.status).toBe(402);
    expect(["payment_does_not_match_route", "unsupported_scheme_or_network"]).toContain(((await misrouted.json()) as { error: string }).error);
    expect(await stack.chain.balanceOf(payer.account.address)).toBe(after);
  });

  it("the rate limit's identity: an upto authorization valid now proves its Permit2 signer once it has paid; a spent or edited one proves no one", async () => {
    const payer = await approvedPayer();
    const { client } = payingWith(payer);
    const required = decodePaymentRequiredHeader((await fetch(`${base}${PATH}`)).headers.get("payment-required")!);
    const identity = (payload: unknown) => rateIdentity(stack.gateway, "GET", PATH, { "payment-signature": encodePaymentSignatureHeader(payload as never) });
    const first = await client.createPaymentPayload(required);
    // before its first payment is settled here, a signature proves nothing
    expect(await identity(first)).toBeNull();
    expect((await fetch(`${base}${PATH}`, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(first) } })).status).toBe(200);
    // settled: its nonce is spent, so it names nobody any more
    expect(await identity(first)).toBeNull();
    const payload = await client.createPaymentPayload(required);
    expect(await identity(payload)).toBe(payer.account.address.toLowerCase());
    const a = (payload.payload as { permit2Authorization: { witness: { to: string } } }).permit2Authorization;
    const edited = { ...payload, payload: { ...payload.payload, permit2Authorization: { ...a, witness: { ...a.witness, to: payer.account.address } } } };
    expect(await identity(edited)).toBeNull();
  });
});
